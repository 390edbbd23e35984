/* Output properties of successful activation and dropout calls
 * (fuzz_activation_check.c). */
#ifndef UF_FUZZ_ACTIVATION_H
#define UF_FUZZ_ACTIVATION_H

#include "unifuse.h"

/* One call's scalars, after its checks passed; act NULL and dropout alone
 * are the identity, drop NULL is p = 0. */
typedef struct fz_act_call {
    uf_activation kind;
    double a, b; /* param[0], param[1] */
    double p;
    uint64_t seed, offset;
    uf_dtype dtype;
    int64_t count;
} fz_act_call;

/* y (and keep_bits, NULL if not asked for) of uf_activation_forward: the
 * dropout rule of activation.h bit for bit, NaN kept, zeros where dropped,
 * finite and close to a float64 reference where the value fits the dtype. */
void fz_check_activation_forward(const fz_act_call *c, const double *x, const double *y,
                                 const unsigned char *keep_bits, const char *what);

/* dx of uf_activation_backward, the same way; x is NULL when not read. */
void fz_check_activation_backward(const fz_act_call *c, const double *x, const double *dy,
                                  const double *dx, const char *what);

#endif
