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

UF_BITS_FN float uf_f16_bits_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) /* inf or NaN */
        return uf_f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp != 0)
        return uf_f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0)
        return uf_f32_from_bits(sign);
    /* Subnormal half: normalise into an fp32 normal. */
    uint32_t e = 113u;
    while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --e;
    }
    return uf_f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

UF_BITS_FN uint16_t uf_f32_to_f16_bits(float f)
{
    const uint32_t u = uf_bits_from_f32(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* rounds to or beyond 65520: infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {   /* below the smallest normal half (2^-14) */
        if (a < 0x33000000u) /* below half the smallest subnormal (2^-25): zero */
            return sign;
        const uint32_t e = a >> 23;
        const uint32_t m = (a & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e; /* 14..24 */
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u)))
            ++r;
        return (uint16_t)(sign | r);
    }
    /* Normal: rebias the exponent and round the 13 discarded mantissa bits. */
    uint32_t r = a - 0x38000000u; /* exponent 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

#endif
