/*
 * Matrix fragments on the CPU: the multiply-accumulate of a fragment group
 * gathers A and B from the lanes' exclusive arrays by the layout of
 * portable/fragment_layout.h, multiplies in fp32 and scatters D back. A
 * kernel that loads a fragment into the wrong lane or pair therefore gets a
 * wrong product here as it would on a GPU.
 */
#ifndef UF_OPENMP_FRAGMENTS_H
#define UF_OPENMP_FRAGMENTS_H

#include "portable/fragment_layout.h"
#include "portable/fragment_loads.h"

/* B fragment loads: lane by lane (fragment_loads.h). */
#define uf_frag_b_rows16 uf_frag_b_rows16_lanes
#define uf_frag_b_cols16 uf_frag_b_cols16_lanes
#define uf_frag_b2_rows16 uf_frag_b2_rows16_lanes
#define uf_frag_b2_cols16 uf_frag_b2_cols16_lanes

UF_FN void uf_cpu_unpack_f16(uint32_t w, float *out)
{
    uf_f16x2_to_f32x2(w, out);
}
UF_FN void uf_cpu_unpack_bf16(uint32_t w, float *out)
{
    uf_bf16x2_to_f32x2(w, out);
}
UF_FN void uf_cpu_unpack_f32(uf_f32x2 w, float *out)
{
    out[0] = w.v[0];
    out[1] = w.v[1];
}

/* c, a, b: lane 0's first element of the fragment in an exclusive array
 * whose rows (one per lane) are cs, as, bs elements long. */
#define UF_CPU_DEFINE_MMA(name, P, UNPACK)                                                         \
    static inline void name(int nthreads, float *c, size_t cs, const P *a, size_t as, const P *b,  \
                            size_t bs)                                                             \
    {                                                                                              \
        for (int g0 = 0; g0 + UF_FRAG_LANES <= nthreads; g0 += UF_FRAG_LANES) {                    \
            float am[UF_FRAG_M][UF_FRAG_K], bm[UF_FRAG_K][UF_FRAG_N];                              \
            for (int l = 0; l < UF_FRAG_LANES; ++l) {                                              \
                for (int p = 0; p < 4; ++p) {                                                      \
                    float e[2];                                                                    \
                    UNPACK(a[(size_t)(g0 + l) * as + p], e);                                       \
                    am[UF_FRAG_A_ROW(l, p)][UF_FRAG_A_COL(l, p)] = e[0];                           \
                    am[UF_FRAG_A_ROW(l, p)][UF_FRAG_A_COL(l, p) + 1] = e[1];                       \
                }                                                                                  \
                for (int p = 0; p < 2; ++p) {                                                      \
                    float e[2];                                                                    \
                    UNPACK(b[(size_t)(g0 + l) * bs + p], e);                                       \
                    bm[UF_FRAG_B_ROW(l, p)][UF_FRAG_B_COL(l, p)] = e[0];                           \
                    bm[UF_FRAG_B_ROW(l, p) + 1][UF_FRAG_B_COL(l, p)] = e[1];                       \
                }                                                                                  \
            }                                                                                      \
            for (int l = 0; l < UF_FRAG_LANES; ++l)                                                \
                for (int i = 0; i < 4; ++i) {                                                      \
                    float *d = &c[(size_t)(g0 + l) * cs + i];                                      \
                    const float *ar = am[UF_FRAG_C_ROW(l, i)];                                     \
                    const int n = UF_FRAG_C_COL(l, i);                                             \
                    float s = *d;                                                                  \
                    for (int k = 0; k < UF_FRAG_K; ++k)                                            \
                        s += ar[k] * bm[k][n];                                                     \
                    *d = s;                                                                        \
                }                                                                                  \
        }                                                                                          \
    }
UF_CPU_DEFINE_MMA(uf_cpu_mma_f16, uint32_t, uf_cpu_unpack_f16)
UF_CPU_DEFINE_MMA(uf_cpu_mma_bf16, uint32_t, uf_cpu_unpack_bf16)
UF_CPU_DEFINE_MMA(uf_cpu_mma_f32, uf_f32x2, uf_cpu_unpack_f32)

/* Elements per lane of an exclusive array. */
#define UF_CPU_XLEN(x) (sizeof((x)[0]) / sizeof((x)[0][0]))
#define UF_CPU_MMA(kind, c, coff, a, aoff, b, boff)                                                \
    uf_cpu_mma_##kind(UF_NTHREADS, &(c)[0][coff], UF_CPU_XLEN(c), &(a)[0][aoff], UF_CPU_XLEN(a),   \
                      &(b)[0][boff], UF_CPU_XLEN(b))

#endif
