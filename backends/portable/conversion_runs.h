/*
 * Definers of run conversions: n 16-bit values as stored at src to fp32 at
 * dst, and back (src and dst do not overlap). A layer instantiates them
 * with its scalar conversions and a 16-bit element type for its
 * uf_f16_run_to_f32 / uf_f32_run_to_f16 / uf_bf16_run_to_f32 /
 * uf_f32_run_to_bf16 operations (dtype_bind.h's UF_RUN_TO_ACC and
 * UF_RUN_FROM_ACC); a CPU layer's element type may alias any storage
 * (kernels keep 16-bit data in 32-bit words). Plain typed loops with
 * UF_RESTRICT pointers: with n known where they are inlined, gcc vectorises
 * them at -O2 (a byte-wise memcpy per element, or pointers that may
 * overlap, kept them scalar).
 */
#ifndef UF_CONVERSION_RUNS_H
#define UF_CONVERSION_RUNS_H

#define UF_DEFINE_RUN_TO_F32(qualifiers, name, convert, elem)                                      \
    qualifiers void name(float *UF_RESTRICT dst, const void *UF_RESTRICT src, int n)               \
    {                                                                                              \
        const elem *s = (const elem *)src;                                                         \
        for (int i = 0; i < n; ++i)                                                                \
            dst[i] = convert(s[i]);                                                                \
    }

#define UF_DEFINE_RUN_FROM_F32(qualifiers, name, convert, elem)                                    \
    qualifiers void name(void *UF_RESTRICT dst, const float *UF_RESTRICT src, int n)               \
    {                                                                                              \
        elem *d = (elem *)dst;                                                                     \
        for (int i = 0; i < n; ++i)                                                                \
            d[i] = convert(src[i]);                                                                \
    }

#endif
