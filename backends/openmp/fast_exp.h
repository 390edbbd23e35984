/*
 * exp for the CPU layer, written so that gcc vectorises loops that call it:
 * no calls, no branches, no float-to-int conversion (the integer part of
 * x*log2(e) is read from the mantissa of a float after adding 1.5*2^23), and
 * no selects beyond the two clamps (which are single min/max instructions).
 * The range ends need no select of their own: clamped at the low end, the
 * exponent field becomes 0 and the result exactly 0; at the high end the
 * result overflows to +inf. Relative error at most 2.6e-7 (measured over all
 * fp32 inputs in range); results below about 2^-125.5 flush to 0, above
 * FLT_MAX give +inf, NaN stays NaN.
 */
#ifndef UF_OPENMP_FAST_EXP_H
#define UF_OPENMP_FAST_EXP_H

#include <stdint.h>
#include <string.h>

/* p * 2^(n - 1), where t = n + 1.5 * 2^23 holds the integer n in [-126,
 * 128] in its low mantissa bits (as n + 2^22): the exponent field n - 1 +
 * 127 is built from them, 0 (a zero scale) for n = -126. */
static inline float uf_cpu_times_pow2(float p, float t)
{
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    const uint32_t eb = (tb - (0x4b400000u - 126u)) << 23;
    float scale;
    memcpy(&scale, &eb, sizeof scale);
    return p * scale;
}

static inline float uf_cpu_expf(float x)
{
    /* n = round(x log2 e) stays in [-126, 128]. Written `a > b ? a : b` so
     * that each clamp is one maxps/minps, through which NaN passes. */
    const float lo = -87.5f, hi = 89.0f;
    float xc = lo > x ? lo : x;
    xc = xc > hi ? hi : xc;
    const float shifter = 12582912.0f; /* 1.5 * 2^23 */
    const float t = xc * 1.44269504088896341f + shifter;
    const float n = t - shifter; /* round(x * log2 e) */
    /* r = x - n ln2 in two steps (Cody-Waite) so r keeps full precision. */
    const float r = (xc - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
    /* 2 exp(r): the Taylor coefficients doubled (exactly), so that the
     * scale below is 2^(n-1) and n = 128 stays finite in the exponent. */
    float p = 2.0f / 720.0f;
    p = p * r + 2.0f / 120.0f;
    p = p * r + 2.0f / 24.0f;
    p = p * r + 2.0f / 6.0f;
    p = p * r + 1.0f;
    p = p * r + 2.0f;
    p = p * r + 2.0f;
    return uf_cpu_times_pow2(p, t);
}

/* 2^x the same way: n = round(x) exactly, r = x - n exact in [-0.5, 0.5],
 * 2 * 2^r by its Taylor series in r ln 2 (degree 8: truncation below 1e-10
 * relative), scaled by 2^(n-1). Same clamps, flushes and NaN rule as
 * uf_cpu_expf. */
static inline float uf_cpu_exp2f(float x)
{
    float xc = -126.0f > x ? -126.0f : x;
    xc = xc > 128.0f ? 128.0f : xc;
    const float shifter = 12582912.0f; /* 1.5 * 2^23 */
    const float t = xc + shifter;
    const float r = xc - (t - shifter);
    /* 2 (ln 2)^k / k! */
    float p = 2.6430973580288614e-06f;
    p = p * r + 3.0505467608119675e-05f;
    p = p * r + 3.0807060786763212e-04f;
    p = p * r + 2.6667116292856882e-03f;
    p = p * r + 1.9236258215256954e-02f;
    p = p * r + 1.1100821732964315e-01f;
    p = p * r + 4.8045301391820140e-01f;
    p = p * r + 1.3862943611198906f;
    p = p * r + 2.0f;
    return uf_cpu_times_pow2(p, t);
}

#endif
