/*
 * The activation functions of activation_math.h for fp32 (uf_<name>_f32,
 * used for the f32 dtype), fp32 whose results are rounded to 16 bits as
 * they stand (uf_<name>_f32to16: the f16 and bf16 activation kernels;
 * they differ in the GELU's Phi, forward and derivative, and the
 * sigmoid's exp, which need only 16-bit accuracy there), the same with a
 * Phi of fp32's absolute accuracy for 16-bit results that a sum follows
 * (uf_<name>_f32to16_sum: the f16 and bf16 epilogue) and fp64
 * (uf_<name>_f64).
 */
#ifndef UF_ACTIVATION_FUNCS_H
#define UF_ACTIVATION_FUNCS_H

#include "layer.h"
#include "kernels/activation_args.h"
#include "kernels/normal_cdf.h"
#include "kernels/sign_exact.h"

#define UF_AM_T float
#define UF_AM(fn) fn##f
#define UF_AM_RCP(x) UF_RCPF(x)
#define UF_AM_ABOVE0(x) uf_f32_above_zero(x)
#define UF_AM_BELOW0(x) uf_f32_below_zero(x)
#define UF_AM_IS_ZERO(x) uf_f32_is_zero(x)
#define UF_AM_CDF_GAUSS(x, gauss) uf_normal_cdf_gauss_f32((x), (gauss))
#define UF_AM_NAME(name) name##_f32
#define UF_AM_EXP(x) UF_EXPF_ACCURATE(x)
#define UF_AM_GELU_CDF(x) uf_normal_cdf_f32(x)
#include "kernels/activation_math.h"
#undef UF_AM_CDF_GAUSS
#undef UF_AM_NAME
#undef UF_AM_EXP
#undef UF_AM_GELU_CDF
/* For 16-bit results the sigmoid takes the layer's fast exp: on GPUs an
 * exp2 of x log2(e), within 2 + 1.2 |x| ulp of fp32 (about 1e-5 relative
 * at the ends of fp32's normal range, against 4.9e-4 for rounding to f16)
 * in two instructions instead of about eight; on CPUs the same function
 * as UF_EXPF_ACCURATE. */
#define UF_AM_NAME(name) name##_f32to16
#define UF_AM_EXP(x) UF_EXPF(x)
#define UF_AM_GELU_CDF(x) uf_normal_cdf_logistic_f32(x)
#define UF_AM_CDF_GAUSS(x, gauss) uf_normal_cdf_logistic_gauss_f32((x), (gauss))
#include "kernels/activation_math.h"
#undef UF_AM_NAME
#undef UF_AM_GELU_CDF
#undef UF_AM_CDF_GAUSS
/* For 16-bit results that a sum follows (the epilogue's residual, where
 * the sum may cancel and rounding no longer hides an activation's error):
 * the fast exp as above, and the GELU's Phi within 4e-7 absolute. */
#define UF_AM_NAME(name) name##_f32to16_sum
#define UF_AM_GELU_CDF(x) uf_normal_cdf_logistic6_f32(x)
#define UF_AM_CDF_GAUSS(x, gauss) uf_normal_cdf_logistic6_gauss_f32((x), (gauss))
#include "kernels/activation_math.h"
#undef UF_AM_NAME
#undef UF_AM_EXP
#undef UF_AM_GELU_CDF
#undef UF_AM_T
#undef UF_AM
#undef UF_AM_RCP
#undef UF_AM_CDF_GAUSS
#undef UF_AM_ABOVE0
#undef UF_AM_BELOW0
#undef UF_AM_IS_ZERO

#define UF_AM_T double
#define UF_AM(fn) fn
#define UF_AM_NAME(name) name##_f64
#define UF_AM_RCP(x) (1.0 / (x))
#define UF_AM_ABOVE0(x) ((x) > 0.0)
#define UF_AM_BELOW0(x) ((x) < 0.0)
#define UF_AM_IS_ZERO(x) ((x) == 0.0)
#define UF_AM_EXP(x) exp(x)
#define UF_AM_CDF_GAUSS(x, gauss) uf_normal_cdf_gauss_f64((x), (gauss))
#define UF_AM_GELU_CDF(x) uf_normal_cdf_f64(x)
#include "kernels/activation_math.h"
#undef UF_AM_T
#undef UF_AM
#undef UF_AM_NAME
#undef UF_AM_RCP
#undef UF_AM_EXP
#undef UF_AM_CDF_GAUSS
#undef UF_AM_GELU_CDF
#undef UF_AM_ABOVE0
#undef UF_AM_BELOW0
#undef UF_AM_IS_ZERO

/* switch (kind) with a case per activation, each calling fn(K, ...) with K
 * that case's constant. fn is force-inlined, so the switch on the kind
 * inside it (act_apply's) folds away: one branch per call instead of one
 * per unit, and straight-line code over all the units fn handles. */
#define UF_ACT_CASE_CALL(K, fn, ...)                                                               \
    case K:                                                                                        \
        fn(K, __VA_ARGS__);                                                                        \
        break;
#define UF_ACT_SWITCH(kind, fn, ...)                                                               \
    switch (kind) {                                                                                \
        UF_ACT_CASE_CALL(UF_ACT_IDENTITY, fn, __VA_ARGS__)                                         \
        UF_ACT_CASE_CALL(UF_ACT_SIGMOID, fn, __VA_ARGS__)                                          \
        UF_ACT_CASE_CALL(UF_ACT_LOGSIGMOID, fn, __VA_ARGS__)                                       \
        UF_ACT_CASE_CALL(UF_ACT_TANH, fn, __VA_ARGS__)                                             \
        UF_ACT_CASE_CALL(UF_ACT_RELU, fn, __VA_ARGS__)                                             \
        UF_ACT_CASE_CALL(UF_ACT_GELU, fn, __VA_ARGS__)                                             \
        UF_ACT_CASE_CALL(UF_ACT_GELU_TANH, fn, __VA_ARGS__)                                        \
        UF_ACT_CASE_CALL(UF_ACT_SILU, fn, __VA_ARGS__)                                             \
        UF_ACT_CASE_CALL(UF_ACT_RELU6, fn, __VA_ARGS__)                                            \
        UF_ACT_CASE_CALL(UF_ACT_HARDSIGMOID, fn, __VA_ARGS__)                                      \
        UF_ACT_CASE_CALL(UF_ACT_HARDTANH, fn, __VA_ARGS__)                                         \
        UF_ACT_CASE_CALL(UF_ACT_HARDSWISH, fn, __VA_ARGS__)                                        \
        UF_ACT_CASE_CALL(UF_ACT_SELU, fn, __VA_ARGS__)                                             \
        UF_ACT_CASE_CALL(UF_ACT_MISH, fn, __VA_ARGS__)                                             \
        UF_ACT_CASE_CALL(UF_ACT_SOFTPLUS, fn, __VA_ARGS__)                                         \
        UF_ACT_CASE_CALL(UF_ACT_SOFTSIGN, fn, __VA_ARGS__)                                         \
        UF_ACT_CASE_CALL(UF_ACT_TANHSHRINK, fn, __VA_ARGS__)                                       \
        UF_ACT_CASE_CALL(UF_ACT_LEAKY_RELU, fn, __VA_ARGS__)                                       \
        UF_ACT_CASE_CALL(UF_ACT_ELU, fn, __VA_ARGS__)                                              \
        UF_ACT_CASE_CALL(UF_ACT_CELU, fn, __VA_ARGS__)                                             \
        UF_ACT_CASE_CALL(UF_ACT_HARDSHRINK, fn, __VA_ARGS__)                                       \
        UF_ACT_CASE_CALL(UF_ACT_SOFTSHRINK, fn, __VA_ARGS__)                                       \
    default:                                                                                       \
        break;                                                                                     \
    }
/* Every kind above, once: a new activation must be added there too. */
typedef char uf_act_switch_covers_every_kind[UF_ACT_COUNT == 22 ? 1 : -1];

#endif
