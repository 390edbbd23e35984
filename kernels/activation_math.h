/*
 * The activations as small pure functions, each with its derivative beside
 * it, in one compute type. Instantiated three times by activation_funcs.h:
 * for float (UF_AM_T float, math functions with the f suffix, UF_AM_RCP the
 * layer's reciprocal, UF_AM_EXP the layer's exp that vectorises on CPUs),
 * for float whose results are rounded to 16 bits (the same, but for the
 * GELU's Phi, UF_AM_GELU_CDF and UF_AM_CDF_GAUSS, and a faster UF_AM_EXP)
 * and for double. UF_AM_CDF_GAUSS(x, &gauss) gives Phi(x) and
 * exp(-x^2 / 2) for the GELU's derivative. UF_AM_ABOVE0(x), UF_AM_BELOW0(x)
 * and UF_AM_IS_ZERO(x) test x against 0 as the float64 reference does,
 * subnormals included (kernels/sign_exact.h): the derivatives that jump at
 * a breakpoint of 0 take them.
 * Definitions follow torch.nn.functional; the derivative at a breakpoint is
 * the one PyTorch's autograd uses (noted where it matters). Inputs a and b
 * are the parameters of uf_activation_desc.
 */
#define T UF_AM_T
#define F(name) UF_AM_NAME(uf_##name)

/* Clamp that lets NaN through (both comparisons are false). */
UF_FN T F(clamp)(T x, T lo, T hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}
/* The reciprocal within an ulp in fp32 (UF_AM_RCP): a division's IEEE
 * rounding cost silu's f16 forward more than its exp. UF_AM_EXP: libm's
 * expf kept every activation built on the sigmoid scalar on CPUs. */
UF_FN T F(sigmoid_of)(T x)
{
    return UF_AM_RCP((T)1 + UF_AM_EXP(-x));
}

UF_FN T F(sigmoid)(T x)
{
    return F(sigmoid_of)(x);
}
UF_FN T F(d_sigmoid)(T x)
{
    const T s = F(sigmoid_of)(x);
    return s * ((T)1 - s);
}

/* log(sigmoid(x)) without overflow: min(x, 0) - log1p(exp(-|x|)). */
UF_FN T F(logsigmoid)(T x)
{
    return (x < (T)0 ? x : (T)0) - UF_AM(log1p)(UF_AM(exp)(-UF_AM(fabs)(x)));
}
UF_FN T F(d_logsigmoid)(T x)
{
    return F(sigmoid_of)(-x);
}

UF_FN T F(tanh)(T x)
{
    return UF_AM(tanh)(x);
}
UF_FN T F(d_tanh)(T x)
{
    const T t = UF_AM(tanh)(x);
    return (T)1 - t * t;
}

UF_FN T F(relu)(T x)
{
    return x < (T)0 ? (T)0 : x;
}
UF_FN T F(d_relu)(T x) /* 0 at x = 0 */
{
    return UF_AM_ABOVE0(x) ? (T)1 : (T)0;
}

/* Exact GELU: x * Phi(x), Phi the standard normal distribution function
 * (kernels/normal_cdf.h: in fp32 without erf, more accurate than
 * PyTorch's 0.5 * (1 + erf(x / sqrt 2)) for negative x; for 16-bit
 * results a cheaper form, UF_AM_GELU_CDF and UF_AM_CDF_GAUSS). */
UF_FN T F(gelu)(T x)
{
    return x * UF_AM_GELU_CDF(x);
}
UF_FN T F(d_gelu)(T x)
{
    T gauss;
    const T cdf = UF_AM_CDF_GAUSS(x, &gauss);
    return cdf + x * ((T)0.39894228040143267794 * gauss);
}

/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
UF_FN T F(gelu_tanh)(T x)
{
    const T inner = (T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x);
    return (T)0.5 * x * ((T)1 + UF_AM(tanh)(inner));
}
UF_FN T F(d_gelu_tanh)(T x)
{
    const T x2 = x * x;
    const T t = UF_AM(tanh)((T)0.79788456080286535588 * (x + (T)0.044715 * x2 * x));
    const T sech2 = (T)1 - t * t;
    /* Where tanh has saturated the second term is exactly 0; computing it
     * would give 0 * inf for huge |x|. */
    const T right = sech2 == (T)0 ? (T)0
                                  : (T)0.5 * x * sech2 * (T)0.79788456080286535588 *
                                        ((T)1 + (T)(3 * 0.044715) * x2);
    return (T)0.5 * ((T)1 + t) + right;
}

UF_FN T F(silu)(T x)
{
    return x * F(sigmoid_of)(x);
}
UF_FN T F(d_silu)(T x)
{
    const T s = F(sigmoid_of)(x);
    return s * ((T)1 + x * ((T)1 - s));
}

UF_FN T F(relu6)(T x)
{
    return F(clamp)(x, (T)0, (T)6);
}
UF_FN T F(d_relu6)(T x) /* PyTorch's relu6 is hardtanh(0, 6): 0 at both ends */
{
    return UF_AM_ABOVE0(x) && x < (T)6 ? (T)1 : (T)0;
}

/* The hard kinds multiply by 1/6 and 1/3 where PyTorch divides: within
 * an ulp of its values, and a correctly rounded division by a constant
 * cost hardswish 60% of its rate in 16-bit on the H200. */
#define UF_AM_SIXTH ((T)0.16666666666666666667)
#define UF_AM_THIRD ((T)0.33333333333333333333)
UF_FN T F(hardsigmoid)(T x)
{
    return F(clamp)(x + (T)3, (T)0, (T)6) * UF_AM_SIXTH;
}
UF_FN T F(d_hardsigmoid)(T x) /* 0 at +-3 */
{
    return x > (T)-3 && x < (T)3 ? UF_AM_SIXTH : (T)0;
}

UF_FN T F(hardtanh)(T x, T lo, T hi)
{
    return F(clamp)(x, lo, hi);
}
UF_FN T F(d_hardtanh)(T x, T lo, T hi) /* 0 at both ends */
{
    const int above = lo == (T)0 ? UF_AM_ABOVE0(x) : x > lo;
    const int below = hi == (T)0 ? UF_AM_BELOW0(x) : x < hi;
    return above && below ? (T)1 : (T)0;
}

UF_FN T F(hardswish)(T x)
{
    /* The factor first: x * 6 would overflow for |x| within 6 times of
     * the largest float. */
    return x * (F(clamp)(x + (T)3, (T)0, (T)6) * UF_AM_SIXTH);
}
UF_FN T F(d_hardswish)(T x) /* 0 at -3 and 1 at +3, as PyTorch 2.x */
{
    return x <= (T)-3 ? (T)0 : (x < (T)3 ? x * UF_AM_THIRD + (T)0.5 : (T)1);
}

#define UF_SELU_ALPHA 1.6732632423543772848170429916717
#define UF_SELU_SCALE 1.0507009873554804934193349852946
UF_FN T F(selu)(T x)
{
    return x > (T)0 ? (T)UF_SELU_SCALE * x : (T)(UF_SELU_SCALE * UF_SELU_ALPHA) * UF_AM(expm1)(x);
}
UF_FN T F(d_selu)(T x) /* at 0: the negative side's scale * alpha */
{
    return UF_AM_ABOVE0(x) ? (T)UF_SELU_SCALE : (T)(UF_SELU_SCALE * UF_SELU_ALPHA) * UF_AM(exp)(x);
}

/* x * tanh(softplus(x)). */
UF_FN T F(mish)(T x)
{
    return x * UF_AM(tanh)(UF_AM(log1p)(UF_AM(exp)(x)));
}
UF_FN T F(d_mish)(T x)
{
    const T t = UF_AM(tanh)(UF_AM(log1p)(UF_AM(exp)(x)));
    return t + x * F(sigmoid_of)(x) * ((T)1 - t * t);
}

/* log1p(exp(beta x)) / beta, and x itself where beta x > threshold. */
UF_FN T F(softplus)(T x, T beta, T threshold)
{
    const T bx = x * beta;
    return bx > threshold ? x : UF_AM(log1p)(UF_AM(exp)(bx)) / beta;
}
UF_FN T F(d_softplus)(T x, T beta, T threshold)
{
    /* sigmoid(beta x), which PyTorch writes z / (z + 1) with z = exp(beta x);
     * that form gives inf / inf once z overflows below the threshold. */
    const T bx = x * beta;
    return bx > threshold ? (T)1 : F(sigmoid_of)(bx);
}

UF_FN T F(softsign)(T x)
{
    return x / ((T)1 + UF_AM(fabs)(x));
}
UF_FN T F(d_softsign)(T x)
{
    const T d = (T)1 + UF_AM(fabs)(x);
    return (T)1 / (d * d);
}

UF_FN T F(tanhshrink)(T x)
{
    return x - UF_AM(tanh)(x);
}
UF_FN T F(d_tanhshrink)(T x)
{
    const T t = UF_AM(tanh)(x);
    return t * t;
}

UF_FN T F(leaky_relu)(T x, T slope)
{
    return x > (T)0 ? x : x * slope;
}
UF_FN T F(d_leaky_relu)(T x, T slope) /* the slope at 0 */
{
    return UF_AM_ABOVE0(x) ? (T)1 : slope;
}

UF_FN T F(elu)(T x, T alpha)
{
    return x > (T)0 ? x : alpha * UF_AM(expm1)(x);
}
UF_FN T F(d_elu)(T x, T alpha) /* alpha at 0 */
{
    return UF_AM_ABOVE0(x) ? (T)1 : alpha * UF_AM(exp)(x);
}

UF_FN T F(celu)(T x, T alpha)
{
    return x > (T)0 ? x : alpha * UF_AM(expm1)(x / alpha);
}
UF_FN T F(d_celu)(T x, T alpha) /* 1 at 0 (exp(0)) */
{
    return UF_AM_ABOVE0(x) ? (T)1 : UF_AM(exp)(x / alpha);
}

UF_FN T F(hardshrink)(T x, T lambda)
{
    return x >= -lambda && x <= lambda ? (T)0 : x;
}
/* Both shrinks: 0 inside the closed band [-lambda, lambda]. */
UF_FN T F(d_shrink)(T x, T lambda)
{
    if (lambda == (T)0)
        return UF_AM_IS_ZERO(x) ? (T)0 : (T)1;
    return x >= -lambda && x <= lambda ? (T)0 : (T)1;
}

UF_FN T F(softshrink)(T x, T lambda)
{
    return x > lambda ? x - lambda : (x < -lambda ? x + lambda : (T)0);
}

/* The activations' table: UF_ACT_CASE(kind, forward, derivative) with the
 * input named UF_ACT_X, for act_apply and act_apply_run to expand. */
#define UF_ACT_CASES                                                                               \
    UF_ACT_CASE(UF_ACT_IDENTITY, UF_ACT_X, (T)1)                                                   \
    UF_ACT_CASE(UF_ACT_SIGMOID, F(sigmoid)(UF_ACT_X), F(d_sigmoid)(UF_ACT_X))                      \
    UF_ACT_CASE(UF_ACT_LOGSIGMOID, F(logsigmoid)(UF_ACT_X), F(d_logsigmoid)(UF_ACT_X))             \
    UF_ACT_CASE(UF_ACT_TANH, F(tanh)(UF_ACT_X), F(d_tanh)(UF_ACT_X))                               \
    UF_ACT_CASE(UF_ACT_RELU, F(relu)(UF_ACT_X), F(d_relu)(UF_ACT_X))                               \
    UF_ACT_CASE(UF_ACT_GELU, F(gelu)(UF_ACT_X), F(d_gelu)(UF_ACT_X))                               \
    UF_ACT_CASE(UF_ACT_GELU_TANH, F(gelu_tanh)(UF_ACT_X), F(d_gelu_tanh)(UF_ACT_X))                \
    UF_ACT_CASE(UF_ACT_SILU, F(silu)(UF_ACT_X), F(d_silu)(UF_ACT_X))                               \
    UF_ACT_CASE(UF_ACT_RELU6, F(relu6)(UF_ACT_X), F(d_relu6)(UF_ACT_X))                            \
    UF_ACT_CASE(UF_ACT_HARDSIGMOID, F(hardsigmoid)(UF_ACT_X), F(d_hardsigmoid)(UF_ACT_X))          \
    UF_ACT_CASE(UF_ACT_HARDTANH, F(hardtanh)(UF_ACT_X, a, b), F(d_hardtanh)(UF_ACT_X, a, b))       \
    UF_ACT_CASE(UF_ACT_HARDSWISH, F(hardswish)(UF_ACT_X), F(d_hardswish)(UF_ACT_X))                \
    UF_ACT_CASE(UF_ACT_SELU, F(selu)(UF_ACT_X), F(d_selu)(UF_ACT_X))                               \
    UF_ACT_CASE(UF_ACT_MISH, F(mish)(UF_ACT_X), F(d_mish)(UF_ACT_X))                               \
    UF_ACT_CASE(UF_ACT_SOFTPLUS, F(softplus)(UF_ACT_X, a, b), F(d_softplus)(UF_ACT_X, a, b))       \
    UF_ACT_CASE(UF_ACT_SOFTSIGN, F(softsign)(UF_ACT_X), F(d_softsign)(UF_ACT_X))                   \
    UF_ACT_CASE(UF_ACT_TANHSHRINK, F(tanhshrink)(UF_ACT_X), F(d_tanhshrink)(UF_ACT_X))             \
    UF_ACT_CASE(UF_ACT_LEAKY_RELU, F(leaky_relu)(UF_ACT_X, a), F(d_leaky_relu)(UF_ACT_X, a))       \
    UF_ACT_CASE(UF_ACT_ELU, F(elu)(UF_ACT_X, a), F(d_elu)(UF_ACT_X, a))                            \
    UF_ACT_CASE(UF_ACT_CELU, F(celu)(UF_ACT_X, a), F(d_celu)(UF_ACT_X, a))                         \
    UF_ACT_CASE(UF_ACT_HARDSHRINK, F(hardshrink)(UF_ACT_X, a), F(d_shrink)(UF_ACT_X, a))           \
    UF_ACT_CASE(UF_ACT_SOFTSHRINK, F(softshrink)(UF_ACT_X, a), F(d_shrink)(UF_ACT_X, a))

/* Whether an activation's forward and derivative carry a NaN input to
 * their result by their own arithmetic (every step of gelu's and silu's
 * does), so that the test below may be left out: a comparison an element,
 * of the 34 instructions an element of the f16 gelu forward with dropout
 * on an H100. Guarded: this header is included once per compute type. */
#ifndef UF_ACT_CARRIES_NAN
#define UF_ACT_CARRIES_NAN(kind) ((kind) == UF_ACT_GELU || (kind) == UF_ACT_SILU)
#endif

/* One activation (forward, or derivative when `grad`) over the
 * UF_ACT_UNIT values of v, in place; the switch runs once per unit, not per
 * element. NaN inputs give NaN whatever the function's branches do. */
UF_FN void F(act_apply)(int kind, int grad, T a, T b, T *v)
{
    enum { n = UF_ACT_UNIT };
    T x[n];
    UF_UNROLL for (int e = 0; e < n; ++e) x[e] = v[e];
#define UF_ACT_X x[e]
#define UF_ACT_CASE(KIND, FWD, BWD)                                                                \
    case KIND:                                                                                     \
        if (grad)                                                                                  \
            UF_UNROLL for (int e = 0; e < n; ++e) v[e] = BWD;                                      \
        else                                                                                       \
            UF_UNROLL for (int e = 0; e < n; ++e) v[e] = FWD;                                      \
        break;
    switch (kind) {
        UF_ACT_CASES
    default:
        break;
    }
#undef UF_ACT_CASE
#undef UF_ACT_X
    if (!UF_ACT_CARRIES_NAN(kind))
        UF_UNROLL for (int e = 0; e < n; ++e) v[e] = x[e] != x[e] ? x[e] : v[e];
}

/* The same over n consecutive values, one loop over all of them: where
 * loops are vectorised, a run converted from 16-bit storage in one call
 * then fills whole vectors (a unit at a time took every eighth value). */
UF_FN void F(act_apply_run)(int kind, int grad, T a, T b, T *v, int n)
{
#define UF_ACT_X xe
#define UF_ACT_RUN_LOOP(KIND, EXPR)                                                                \
    for (int e = 0; e < n; ++e) {                                                                  \
        const T xe = v[e];                                                                         \
        v[e] = !UF_ACT_CARRIES_NAN(KIND) && xe != xe ? xe : (EXPR);                                \
    }
#define UF_ACT_CASE(KIND, FWD, BWD)                                                                \
    case KIND:                                                                                     \
        if (grad) {                                                                                \
            UF_ACT_RUN_LOOP(KIND, BWD)                                                             \
        } else {                                                                                   \
            UF_ACT_RUN_LOOP(KIND, FWD)                                                             \
        }                                                                                          \
        break;
    switch (kind) {
        UF_ACT_CASES
    default:
        break;
    }
#undef UF_ACT_CASE
#undef UF_ACT_RUN_LOOP
#undef UF_ACT_X
}

#undef UF_ACT_CASES
#undef UF_AM_SIXTH
#undef UF_AM_THIRD
#undef T
#undef F
