/*
 * Bit-exact conversions between fp32 and the 16-bit formats (IEEE binary16
 * and bfloat16), round to nearest even, NaN and infinities preserved. Plain
 * C, vendor-neutral: the OpenMP layer uses them on the "device", src/ uses
 * them for uf_convert_host, and GPU layers use them where the vendor gives
 * no instruction. The includer may define UF_BITS_FN (qualifiers) first.
 */
#ifndef UF_F16_BITS_H
#define UF_F16_BITS_H

#include <stdint.h>
#include <string.h>

#ifndef UF_BITS_FN
#define UF_BITS_FN static inline
#endif

UF_BITS_FN uint32_t uf_bits_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

UF_BITS_FN float uf_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* bfloat16 is the top half of an fp32: widening is a shift. */
UF_BITS_FN float uf_bf16_bits_to_f32(uint16_t h)
{
    return uf_f32_from_bits((uint32_t)h << 16);
}

UF_BITS_FN uint16_t uf_f32_to_bf16_bits(float f)
{
    uint32_t u = uf_bits_from_f32(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign, force a quiet mantissa bit */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Round to nearest even on the 16 discarded bits. */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Both binary16 conversions are branch-free (selects only), so that CPU
 * loops over them vectorise. */
UF_BITS_FN float uf_f16_bits_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t em = h & 0x7fffu; /* exponent and mantissa */
    /* Normal: rebias the exponent by 127 - 15; inf and NaN by 112 more. */
    const uint32_t normal = (em << 13) + 0x38000000u + (em >= 0x7c00u ? 0x38000000u : 0u);
    /* Subnormal or zero: exactly em * 2^-24. */
    const float sub = (float)em * 0x1p-24f;
    const uint32_t mag = em < 0x0400u ? uf_bits_from_f32(sub) : normal;
    return uf_f32_from_bits(sign | mag);
}

UF_BITS_FN uint16_t uf_f32_to_f16_bits(float f)
{
    const uint32_t u = uf_bits_from_f32(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    /* Normal range: rebias, then round the 13 dropped bits to nearest even
     * (a carry may reach the exponent, and 65520 and above reach inf). */
    const uint32_t rebased = a - 0x38000000u;
    const uint32_t normal = (rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13;
    /* Below 2^-14: adding 0.5 makes the FPU round to a multiple of 2^-24,
     * which is the subnormal's mantissa (0x400 when it rounds up to 2^-14). */
    const uint32_t sub = uf_bits_from_f32(uf_f32_from_bits(a) + 0.5f) - 0x3f000000u;
    uint32_t mag = a < 0x38800000u ? sub : normal;
    mag = a >= 0x47800000u ? 0x7c00u : mag;                   /* 65536 and up: inf */
    mag = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : mag; /* NaN stays NaN */
    return (uint16_t)(sign | mag);
}

#endif
