/*
 * The binary16 runs through F16C (vcvtph2ps / vcvtps2ph), defined once for
 * the two places that compile them: f16c_runs.c, functions built for F16C
 * that the baseline code calls where ufb_cpu_level() >= 3, and layer.h in
 * the x86-64-v3/v4 kernel copies, inline (F16C is part of both levels).
 * Inline, the copies neither call nor test the level per run, and their
 * wider loads do not read back values that narrower stores left in memory
 * (a load spanning two stores waits for both to retire): the 16-bit softmax
 * backward's rows of 64 keys took 16% more time in the v4 copy through the
 * calls than the baseline code did.
 *
 * UF_DEFINE_F16C_RUNS(qualifiers, to_f32, from_f32) defines
 *   qualifiers void to_f32(float *dst, const uint16_t *src, int n, float s);
 *   qualifiers void from_f32(uint16_t *dst, const float *src, int n, float s);
 * (the factor s as in portable/conversion_runs.h),
 * sixteen values a step where AVX-512F is enabled, else eight, the tail
 * through portable/f16_bits.h (uf_f16_bits_run_to_f32 and
 * uf_f32_run_to_f16_bits, which must be declared first). Results equal
 * f16_bits.h's bit for bit (round to nearest even, subnormals and
 * infinities exact) but for NaNs: both keep a NaN's sign and top payload
 * bits and set its quiet bit when narrowing, but widening a signalling
 * binary16 NaN sets the quiet bit here and keeps it clear there. MXCSR's
 * DAZ does not change these results: fp32 subnormals narrow to a binary16
 * zero either way, and binary16 subnormals widen to normal fp32 values.
 */
#ifndef UF_OPENMP_F16C_LOOPS_H
#define UF_OPENMP_F16C_LOOPS_H

#include <immintrin.h>

#if defined(__AVX512F__)
#define UF_F16C_WIDE_TO(dst, src, i, n, s)                                                         \
    for (; (i) + 16 <= (n); (i) += 16)                                                             \
        _mm512_storeu_ps(                                                                          \
            (dst) + (i),                                                                           \
            _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((src) + (i)))),     \
                          _mm512_set1_ps(s)));
#define UF_F16C_WIDE_FROM(dst, src, i, n, s)                                                       \
    for (; (i) + 16 <= (n); (i) += 16)                                                             \
        _mm256_storeu_si256(                                                                       \
            (__m256i *)((dst) + (i)),                                                              \
            _mm512_cvtps_ph(_mm512_mul_ps(_mm512_loadu_ps((src) + (i)), _mm512_set1_ps(s)),        \
                            _MM_FROUND_TO_NEAREST_INT));
#else
#define UF_F16C_WIDE_TO(dst, src, i, n, s)
#define UF_F16C_WIDE_FROM(dst, src, i, n, s)
#endif

#define UF_DEFINE_F16C_RUNS(qualifiers, to_f32, from_f32)                                          \
    qualifiers void to_f32(float *restrict dst, const uint16_t *restrict src, int n, float s)      \
    {                                                                                              \
        int i = 0;                                                                                 \
        UF_F16C_WIDE_TO(dst, src, i, n, s)                                                         \
        for (; i + 8 <= n; i += 8)                                                                 \
            _mm256_storeu_ps(                                                                      \
                dst + i,                                                                           \
                _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))),        \
                              _mm256_set1_ps(s)));                                                 \
        uf_f16_bits_run_to_f32(dst + i, src + i, n - i, s);                                        \
    }                                                                                              \
    qualifiers void from_f32(uint16_t *restrict dst, const float *restrict src, int n, float s)    \
    {                                                                                              \
        int i = 0;                                                                                 \
        UF_F16C_WIDE_FROM(dst, src, i, n, s)                                                       \
        for (; i + 8 <= n; i += 8)                                                                 \
            _mm_storeu_si128(                                                                      \
                (__m128i *)(dst + i),                                                              \
                _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(src + i), _mm256_set1_ps(s)),        \
                                _MM_FROUND_TO_NEAREST_INT));                                       \
        uf_f32_run_to_f16_bits(dst + i, src + i, n - i, s);                                        \
    }

#endif
