/*
 * The OpenMP layer's binary16 runs through F16C (vcvtph2ps / vcvtps2ph,
 * eight values an instruction; the rest through portable/f16_bits.h),
 * compiled for F16C function by function so that the rest of the library
 * stays baseline x86-64. uf_f16_run_to_f32 and uf_f32_run_to_f16
 * (layer.h) call them where ufb_cpu_level() >= 3.
 *
 * Results equal portable/f16_bits.h's bit for bit (round to nearest even,
 * subnormals and infinities exact) but for NaNs: both keep a NaN's sign
 * and top payload bits and set its quiet bit when narrowing, but widening
 * a signalling binary16 NaN sets the quiet bit here and keeps it clear
 * there. MXCSR's DAZ does not change these results: fp32 subnormals narrow
 * to a binary16 zero either way, and binary16 subnormals widen to normal
 * fp32 values.
 */
#include "layer.h"

#if UF_CPU_F16C_RUNS
#include <immintrin.h>

#define UF_F16C __attribute__((target("avx,f16c")))

UF_F16C void ufb_f16c_run_to_f32(float *restrict dst, const uint16_t *restrict src, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    uf_f16_bits_run_to_f32(dst + i, src + i, n - i);
}

UF_F16C void ufb_f16c_run_from_f32(uint16_t *restrict dst, const float *restrict src, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    uf_f32_run_to_f16_bits(dst + i, src + i, n - i);
}
#endif
