/*
 * binary16 runs converted by F16C's instructions, eight values each, for
 * the OpenMP layer's uf_f16_run_to_f32 / uf_f32_run_to_f16 on CPUs that
 * have them (the layer asks ufb_cpu_level() >= 3; x86-64-v3 includes
 * F16C). Compiled for those instructions function by function, so the
 * rest of the library stays baseline x86-64.
 *
 * Results equal portable/f16_bits.h's bit for bit (round to nearest even,
 * subnormals and infinities exact) but for NaNs: both keep a NaN's sign
 * and top payload bits and set its quiet bit, except that widening a
 * signalling binary16 NaN sets the quiet bit here and keeps it clear there.
 * MXCSR's DAZ does not change these results: fp32 subnormals narrow to a
 * binary16 zero either way, and binary16 subnormals widen to normal fp32.
 */
#include "layer.h"

#if UF_CPU_F16C_RUNS
#include <immintrin.h>

#define UF_F16C __attribute__((target("avx,f16c")))

UF_F16C void ufb_f16c_run_to_f32(float *restrict dst, const void *restrict src, int n)
{
    const unsigned char *s = src;
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 2 * i))));
    uf_f16_bits_run_to_f32(dst + i, s + 2 * i, n - i);
}

UF_F16C void ufb_f16c_run_from_f32(void *restrict dst, const float *restrict src, int n)
{
    unsigned char *d = dst;
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    uf_f32_run_to_f16_bits(d + 2 * i, src + i, n - i);
}
#endif
