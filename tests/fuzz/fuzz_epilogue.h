/* Output properties of successful fused epilogue calls
 * (fuzz_epilogue_check.c). */
#ifndef UF_FUZZ_EPILOGUE_H
#define UF_FUZZ_EPILOGUE_H

#include "unifuse.h"

/* One call whose checks passed, with its tensors as doubles: inputs as they
 * were before the call, outputs after it. Absent operands and outputs not
 * asked for are NULL. bias and dbias hold cols elements for a ROW bias,
 * rows * cols for a FULL one; scale and dscale cols elements. */
typedef struct fz_epi_io {
    const uf_epilogue_desc *d;
    double p; /* 0 without dropout */
    uint64_t seed, offset;
    const double *x, *bias, *scale, *residual, *dy;
    const double *y, *dx, *dbias, *dscale, *dresidual;
} fz_epi_io;

/* y of uf_epilogue_forward: NaN where x + bias, the scale or the residual
 * is NaN; the residual alone where dropped; finite and close to a float64
 * reference where the value fits the dtype; x itself when every operand is
 * absent. */
void fz_check_epilogue_forward(const fz_epi_io *c, const char *what);

/* dx, dbias, dscale, dresidual of uf_epilogue_backward, the same way; the
 * sums over rows against float64 sums; dresidual equal to dy, a FULL dbias
 * equal to dx. */
void fz_check_epilogue_backward(const fz_epi_io *c, const char *what);

#endif
