/*
 * The fuzzer's input read as a stream of decisions. Past the end every read
 * gives 0, and 0 always decodes to a small valid choice, so any input (even
 * an empty one) becomes some call.
 */
#ifndef UF_FUZZ_BYTES_H
#define UF_FUZZ_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "unifuse.h"

typedef struct fz_bytes {
    const uint8_t *data;
    size_t size, pos;
} fz_bytes;

uint8_t fz_u8(fz_bytes *b);
uint16_t fz_u16(fz_bytes *b);
uint32_t fz_u32(fz_bytes *b);
uint64_t fz_u64(fz_bytes *b);

/* Special doubles (NaN, infinities, the fp32 and fp16 limits, subnormals,
 * values next to 1 for dropout probabilities); `i` wraps. */
double fz_special(unsigned i);

/* 1.0 for a 0 byte; otherwise a multiple of 1/256 in [-128, 128), a
 * special, or any 64-bit pattern. */
double fz_real(fz_bytes *b);

/* Mostly a float dtype (0 gives UF_F32); sometimes UF_DTYPE_NONE, UF_BOOL or
 * a value outside the enum. */
uf_dtype fz_dtype(fz_bytes *b);

/* A tensor extent: mostly 1..8 or up to 16384; sometimes 0, negative, or
 * large enough for the byte count to overflow. */
int64_t fz_extent(fz_bytes *b);

/* rows or cols of a [rows, cols] view: mostly 1..16 or up to 4096, at times
 * up to 32768; sometimes 0, negative, or large enough for a count or a byte
 * count to overflow (2^31 + 1, 2^32, 2^61 + 1, ...). */
int64_t fz_dim(fz_bytes *b);

/* Lowers ordinary rows (both extents in 0..cap) so that rows * cols <= cap;
 * an extent that is negative or huge is left for the checks to reject. */
void fz_fit_rows(int64_t *rows, int64_t cols, int64_t cap);

#endif
