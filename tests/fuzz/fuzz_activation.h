/* Activation and dropout calls: the decoders the epilogue shares
 * (fuzz_activation.c) and the output properties of successful calls
 * (fuzz_activation_check.c). */
#ifndef UF_FUZZ_ACTIVATION_H
#define UF_FUZZ_ACTIVATION_H

#include "fuzz_bytes.h"

/* Inputs whose values are compared: |v| up to FZ_TAME. Loose tolerances:
 * they catch wrong elements, parameters and masks; the exact ones are the
 * unit tests' business. */
#define FZ_TAME 0x1p60
#define FZ_ACT_RTOL 0.02
#define FZ_ACT_ATOL 1e-3

/* Decoders shared by every call that takes an activation or a dropout
 * descriptor (activation, epilogue). */
uf_activation fz_decode_act_kind(fz_bytes *b);
double fz_decode_p(fz_bytes *b);
uint64_t fz_decode_u64(fz_bytes *b);

/* The documented parameter rule ("finite in fp32" plus each activation's
 * domain), judged on the values as given (narrow 0) or as fp32 (narrow 1). */
int fz_act_params_ok(uf_activation k, const double *prm, int narrow);

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

/* Whether the parameters are of a size for which values are compared
 * (the result may overflow fp32 arithmetic otherwise). */
int fz_act_tame_params(const fz_act_call *c);

/* Whether x is so near a breakpoint that fp32 and float64 may take
 * different branches. */
int fz_act_near_breakpoint(const fz_act_call *c, double x);

/* y (and keep_bits, NULL if not asked for) of uf_activation_forward: the
 * dropout rule of activation.h bit for bit, NaN kept, zeros where dropped,
 * finite and close to a float64 reference where the value fits the dtype. */
void fz_check_activation_forward(const fz_act_call *c, const double *x, const double *y,
                                 const unsigned char *keep_bits, const char *what);

/* dx of uf_activation_backward, the same way; x is NULL when not read. */
void fz_check_activation_backward(const fz_act_call *c, const double *x, const double *dy,
                                  const double *dx, const char *what);

#endif
