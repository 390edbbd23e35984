/*
 * Tensor contents for the fuzzer: filling a buffer of any dtype from input
 * decisions, and reading one back as doubles.
 */
#ifndef UF_FUZZ_VALUES_H
#define UF_FUZZ_VALUES_H

#include "fuzz_bytes.h"

/* Whether the calls accept `d` as a tensor dtype. */
int fz_is_float(uf_dtype d);

/* Bytes per element; 4 for a value outside the enum, so that a buffer can
 * still be made for a call that must reject it. */
size_t fz_esize(uf_dtype d);

/* Largest finite value of a float dtype. */
double fz_dtype_max(uf_dtype d);

/* Relative rounding error of storing in a float dtype (half an ulp). */
double fz_dtype_eps(uf_dtype d);

/* Absolute error allowed near 0 on top of a relative one: the subnormal
 * spacing of the dtype, or for fp32 and bf16 the CPU exp's flush of results
 * below about 2^-125. */
double fz_dtype_tiny(uf_dtype d);

/* Fills n elements of dtype `d` at dst (any alignment): uniform values of a
 * chosen range, the same with specials sprinkled in, raw input bytes, or
 * one value repeated. UF_BOOL gets bytes that are 0 or any nonzero value. */
void fz_fill(fz_bytes *b, uf_dtype d, void *dst, size_t n);

/* n elements of float dtype `d` (or UF_BOOL, read as 0/1) as doubles. */
void fz_widen(uf_dtype d, const void *src, size_t n, double *out);

/* The same into a new array (free it). */
double *fz_widen_new(uf_dtype d, const void *src, int64_t n);

#endif
