/* Argument-check helpers shared by the API entry points in src/. */
#ifndef UF_CHECKS_H
#define UF_CHECKS_H

#include <stdint.h>

#include "unifuse.h"

/* Product of extents into *count; UF_ERR_BAD_SHAPE for a negative extent,
 * UF_ERR_OVERFLOW when the product exceeds INT64_MAX. */
uf_status uf_shape_count(const int64_t *shape, int ndim, int64_t *count);

/* Bytes of `count` elements of `size` bytes into *bytes, or UF_ERR_OVERFLOW
 * when they exceed what size_t or int64 indexing can address. */
uf_status uf_byte_count(int64_t count, size_t size, size_t *bytes);

/* Whether two byte ranges share a byte. */
int uf_ranges_overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes);

/* Allowed: identical start with equal length, or no overlap at all. */
int uf_same_or_disjoint(const void *a, const void *b, size_t bytes);

/* Whether a device pointer allows 16-byte vector access (NULL does). */
int uf_aligned16(const void *p);

/* The largest power of two up to 16 that divides a device pointer's
 * address: the widest access it allows (16 for NULL). */
int uf_alignment16(const void *p);

#endif
