/*
 * Definers of run conversions: n 16-bit values (raw uint16_t bits) at src
 * to fp32 at dst, each times s, and back (each fp32 value times s, then
 * narrowed); src and dst do not overlap. The factor lets a caller fold a
 * scale into the pass that converts (the CPU softmax: each pass over a
 * row's share in memory costs its stores); where s is the constant 1 and
 * the run is inlined, the compiler drops the product. A layer
 * instantiates them with its scalar conversions for its uf_f16_run_to_f32 /
 * uf_f32_run_to_f16 / uf_bf16_run_to_f32 / uf_f32_run_to_bf16 operations
 * (dtype_bind.h's UF_RUN_TO_ACC and UF_RUN_FROM_ACC). Plain typed loops:
 * with n known where they are inlined, gcc vectorises them (read through a
 * type that may alias the float side, they stayed scalar at -O2).
 */
#ifndef UF_CONVERSION_RUNS_H
#define UF_CONVERSION_RUNS_H

#include <stdint.h>

#define UF_DEFINE_RUN_TO_F32(qualifiers, name, convert)                                            \
    qualifiers void name(float *UF_RESTRICT dst, const uint16_t *UF_RESTRICT src, int n, float s)  \
    {                                                                                              \
        for (int i = 0; i < n; ++i)                                                                \
            dst[i] = convert(src[i]) * s;                                                          \
    }

#define UF_DEFINE_RUN_FROM_F32(qualifiers, name, convert)                                          \
    qualifiers void name(uint16_t *UF_RESTRICT dst, const float *UF_RESTRICT src, int n, float s)  \
    {                                                                                              \
        for (int i = 0; i < n; ++i)                                                                \
            dst[i] = convert(src[i] * s);                                                          \
    }

#endif
