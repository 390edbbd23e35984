/*
 * The memory a fuzzed call sees: one allocation holding every tensor of the
 * call where the input places it (apart, adjacent, identical to another,
 * overlapping another by some bytes) or NULL, with guard bytes everywhere
 * else. Guards hold a known pattern and, under AddressSanitizer, are also
 * poisoned, so a stray read or write is reported where it happens. After
 * the call: guards must be intact; on an error status nothing may have
 * changed; on success only output bytes may have changed.
 */
#ifndef UF_FUZZ_ARENA_H
#define UF_FUZZ_ARENA_H

#include "fuzz_bytes.h"

#define FZ_MAX_TENSORS 10

typedef struct fz_tensor {
    const char *name;
    size_t bytes;
    size_t align;
    int64_t off; /* from the arena's base */
    int null;    /* passed as NULL */
    int output;
} fz_tensor;

typedef struct fz_arena {
    fz_tensor t[FZ_MAX_TENSORS];
    int n;
    int64_t lo, hi; /* placement bounds before the arena exists */
    unsigned char *base, *before, *role;
    size_t size;
} fz_arena;

/* Places the next tensor as the input decides; `nullable`: whether NULL is
 * one of the choices. Returns its index. */
int fz_place(fz_arena *a, fz_bytes *b, const char *name, size_t bytes, size_t align, int output,
             int nullable);

/* Adds a tensor passed as NULL without reading the input (an optional
 * output the caller skips). Returns its index. */
int fz_place_null(fz_arena *a, const char *name, int output);

/* Allocates the arena and writes the guard pattern. */
void fz_arena_build(fz_arena *a);

/* The tensor's pointer (NULL when placed so). */
void *fz_ptr(const fz_arena *a, int i);

/* Whether two tensors (neither NULL) share a byte; whether they start at the
 * same byte. */
int fz_overlap(const fz_arena *a, int i, int j);
int fz_same(const fz_arena *a, int i, int j);

/* After the inputs are written: fills output bytes that no input shares
 * with 0xff (NaN in every float dtype, so an element left unwritten shows),
 * keeps a copy of everything, and poisons the guards. */
void fz_arena_seal(fz_arena *a);

/* The checks after the call (see above); `what` names the call. */
void fz_arena_check(const fz_arena *a, uf_status st, const char *what);

/* A tensor's contents before the call. */
const void *fz_before(const fz_arena *a, int i);

void fz_arena_free(fz_arena *a);

#endif
