/*
 * The standard normal distribution function Phi(x) together with
 * exp(-x^2 / 2), for the exact GELU and its derivative
 * (kernels/activation_math.h), in fp32 and fp64.
 *
 * fp32 does without erff. With z = |x| and t = 1 / (1 + a z),
 *   Phi(-z) = exp(-z^2 / 2) * t * P(t),
 * P a polynomial of degree 7 fitted (weighted least squares iterated
 * towards minimax, float64, on z in [0, 13.2] where Phi(-z) is a normal
 * fp32 number) to the relative error of Phi(-z): at most 8.4e-8 before
 * rounding (docs/normal_cdf_fit.py refits them). Phi(x) is then Phi(-z)
 * for x <= 0 and 1 - Phi(-z) for x > 0.
 * This costs one exp, one reciprocal and eight multiply-adds, where
 * 0.5 * (1 + erff(x / sqrt 2)) costs erff's two polynomials and the selects
 * between them (27 instructions per element on the H200, most of the f16
 * GELU); the exponential is shared with the derivative's density. The
 * result is also more accurate for negative x, where 1 + erf(x / sqrt 2)
 * cancels (relative error 4% at x = -5): simulated in fp32 over
 * [-15, 15], absolute error at most 3.8e-7, relative error at most 14 ulp
 * where Phi > 1e-3 (largest near x = 0, from the exp and the rounding of
 * 1 - Phi(-z)).
 *
 * fp64 keeps the library's erfc, which has no cancellation.
 */
#ifndef UF_NORMAL_CDF_H
#define UF_NORMAL_CDF_H

#include <math.h>

#include "layer.h"

/* Phi(x), and exp(-x^2 / 2) in *gauss. */
UF_FN float uf_normal_cdf_gauss_f32(float x, float *gauss)
{
    const float z = fabsf(x);
    const float e = UF_EXPF(-0.5f * x * x);
    const float t = UF_RCPF(1.0f + 0.304f * z);
    float p = 3.686342388e-02f;
    p = p * t - 1.553189605e-01f;
    p = p * t + 1.922226250e-01f;
    p = p * t - 4.316041246e-02f;
    p = p * t + 1.235694438e-01f;
    p = p * t + 1.024177819e-01f;
    p = p * t + 1.221715063e-01f;
    p = p * t + 1.212346330e-01f;
    const float lower = e * t * p; /* Phi(-z) */
    *gauss = e;
    return x > 0.0f ? 1.0f - lower : lower;
}

UF_FN float uf_normal_cdf_f32(float x)
{
    float gauss;
    return uf_normal_cdf_gauss_f32(x, &gauss);
}

/* Phi(x) for results rounded to 16 bits (the f16 and bf16 GELU, forward
 * and derivative): the logistic of an odd polynomial,
 *   Phi(x) ~ 1 / (1 + 2^(x Q(x^2))),  Q of degree 4,
 * fitted (docs/normal_cdf_logistic_fit.py) to the log-odds of Phi under
 * two bounds: the f16 tolerance of x Phi(x), and an absolute error of Phi
 * within 4e-6, which the derivative Phi(x) + x phi(x) needs where it
 * crosses 0 (near x = -0.75; the tolerance's absolute term is 1e-5 and
 * dy reaches 4/3 with dropout). Simulated in fp32 over every finite f16
 * and bf16 input, the GELU rounded to the dtype is within 0.48 of the f16
 * tolerance (0.24 of bf16's) of the float64 value, its derivative times
 * dy = 1 or +-4/3 within 0.49 (0.25), and Phi within 3.4e-6 absolute on
 * [-8, 0]. One exp2, one reciprocal and five multiply-adds: about half the
 * instructions of the form above, which bound the 16-bit GELU with
 * dropout on an H200. Q > 0 and x Q(x^2) rises over all x, so Phi
 * saturates to 0 and 1 (the exp2 overflows to inf) instead of turning
 * back. */
UF_FN float uf_normal_cdf_logistic_f32(float x)
{
    const float u = x * x;
    float q = -3.111958222e-06f;
    q = q * u + 8.728200191e-05f;
    q = q * u + 3.507676010e-04f;
    q = q * u - 1.051587537e-01f;
    q = q * u - 2.302114010e+00f;
    return UF_RCPF(1.0f + UF_EXP2F(x * q));
}

/* The same Phi, and exp(-x^2 / 2) in *gauss (the derivative's density). */
UF_FN float uf_normal_cdf_logistic_gauss_f32(float x, float *gauss)
{
    *gauss = UF_EXPF(-0.5f * x * x);
    return uf_normal_cdf_logistic_f32(x);
}

/* Phi(x) in the same form with Q of degree 6, fitted (the same script) so
 * that Phi stays within 4e-7 absolute: simulated in fp32 over [-30, 30],
 * Phi within 1.2e-7 and x Phi(x) within 4.1e-7 absolute, closer than
 * uf_normal_cdf_gauss_f32 (3.8e-7 for Phi) in two fewer multiply-adds,
 * no select and an exp2 for the exp; for 16-bit results that a sum
 * follows (the epilogue's residual), where rounding does not hide the
 * GELU's error. Its relative error where Phi is tiny (x below about -4)
 * is larger than uf_normal_cdf_gauss_f32's. */
UF_FN float uf_normal_cdf_logistic6_f32(float x)
{
    const float u = x * x;
    float q = -5.067237296e-09f;
    q = q * u + 3.816313097e-07f;
    q = q * u - 1.143983445e-05f;
    q = q * u + 1.595799404e-04f;
    q = q * u + 9.404921730e-05f;
    q = q * u - 1.048351228e-01f;
    q = q * u - 2.302209377e+00f;
    return UF_RCPF(1.0f + UF_EXP2F(x * q));
}

UF_FN float uf_normal_cdf_logistic6_gauss_f32(float x, float *gauss)
{
    *gauss = UF_EXPF(-0.5f * x * x);
    return uf_normal_cdf_logistic6_f32(x);
}

UF_FN double uf_normal_cdf_f64(double x)
{
    return 0.5 * erfc(-x * 0.70710678118654752440);
}
UF_FN double uf_normal_cdf_gauss_f64(double x, double *gauss)
{
    *gauss = exp(-0.5 * x * x);
    return uf_normal_cdf_f64(x);
}

#endif
