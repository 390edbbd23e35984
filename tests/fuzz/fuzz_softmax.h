/* Output properties of a successful softmax call (fuzz_softmax_check.c). */
#ifndef UF_FUZZ_SOFTMAX_H
#define UF_FUZZ_SOFTMAX_H

#include "unifuse.h"

/* Index into the mask of x's element i (right-aligned broadcast). */
int64_t fz_mask_index(const uf_softmax_desc *d, int64_t i);

/* y of uf_softmax_forward against the rules of docs/api.md: NaN rows, zero
 * rows, hidden keys at 0, values in [0, 1] close to a float64 reference,
 * rows summing to 1. mask is NULL without one. */
void fz_check_softmax_forward(const uf_softmax_desc *d, int64_t count, const double *x,
                              const double *mask, const double *y, const char *what);

/* dx of uf_softmax_backward: finite where it cannot overflow, 0 where y is,
 * and close to a float64 reference relative to the terms' size. */
void fz_check_softmax_backward(const uf_softmax_desc *d, int64_t count, const double *y,
                               const double *dy, const double *dx, const char *what);

#endif
