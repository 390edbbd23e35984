/* Output properties of successful LayerNorm and RMSNorm calls
 * (fuzz_norm_check.c). */
#ifndef UF_FUZZ_NORM_H
#define UF_FUZZ_NORM_H

#include "unifuse.h"

/* One call whose checks passed, with its tensors as doubles: inputs as they
 * were before the call, outputs after it; NULL when absent or not asked
 * for. Statistics hold rows elements, weight, bias and their gradients
 * cols elements. */
typedef struct fz_norm_io {
    const uf_norm_desc *d;
    /* forward */
    const double *x, *residual, *weight, *bias;
    const double *y, *h_out, *mean, *rstd;
    /* backward (weight as above; mean and rstd are inputs there) */
    const double *h, *dy, *dh_extra;
    const double *dx, *dweight, *dbias;
} fz_norm_io;

/* y, h_out, mean and rstd of uf_norm_forward: h_out exactly x + residual
 * in the dtype; a row holding a NaN all NaN; a constant row exactly the
 * bias (LayerNorm, eps > 0); elsewhere finite and close to a float64
 * reference, with a bound from the row's spread where cancellation can
 * cost precision. */
void fz_check_norm_forward(const fz_norm_io *c, const char *what);

/* dx, dweight and dbias of uf_norm_backward against the gradient formula
 * of norm.h evaluated in float64 with the given mean and rstd (the mean
 * corrected to the row's own, as the kernel does); a NaN among a row's
 * inputs makes the row's dx NaN. */
void fz_check_norm_backward(const fz_norm_io *c, const char *what);

#endif
