/*
 * Matrix fragments on GPUs. Where the vendor header provides a matrix
 * instruction for a type (UF_VENDOR_MMA_F16 / _BF16: CUDA's mma.sync on
 * sm_80 and later) it is used; otherwise the product is formed with
 * shuffles within the 32-lane fragment group, in the layout of
 * portable/fragment_layout.h: each lane fetches, from the four lanes of
 * its quad, the A pairs of its two rows and the B pairs of its two columns.
 */
#ifndef UF_GPU_FRAGMENTS_H
#define UF_GPU_FRAGMENTS_H

#include "portable/fragment_layout.h"
#include "portable/fragment_loads.h"

/* B fragment loads of 16-bit tiles in shared memory (rows 16-byte aligned,
 * ld a multiple of 8): one matrix load per lane where the vendor has it
 * (CUDA ldmatrix: lanes 0-15 give the addresses of the eight rows of each
 * 8x8 half), lane by lane otherwise. */
UF_FN void uf_frag_b_rows16(uint32_t *bf, const uint16_t *tile, int ld, int lane)
{
#ifdef UF_VENDOR_LDSM_X2
    UF_VENDOR_LDSM_X2(bf, tile + lane % 8 * ld + lane / 8 % 2 * 8);
#else
    uf_frag_b_rows16_lanes(bf, tile, ld, lane);
#endif
}
UF_FN void uf_frag_b_cols16(uint32_t *bf, const uint16_t *tile, int ld, int lane)
{
#ifdef UF_VENDOR_LDSM_X2_TRANS
    UF_VENDOR_LDSM_X2_TRANS(bf, tile + lane % 16 * ld);
#else
    uf_frag_b_cols16_lanes(bf, tile, ld, lane);
#endif
}
/* Two neighbouring B fragments (fragment_loads.h): four 8x8 matrices in one
 * load where the vendor has it, the lanes of the third and fourth quarter
 * addressing the second block. */
UF_FN void uf_frag_b2_rows16(uint32_t *bf, const uint16_t *tile, int ld, int lane)
{
#ifdef UF_VENDOR_LDSM_X4
    UF_VENDOR_LDSM_X4(bf, tile + (lane % 8 + lane / 16 * 8) * ld + lane / 8 % 2 * 8);
#else
    uf_frag_b2_rows16_lanes(bf, tile, ld, lane);
#endif
}
UF_FN void uf_frag_b2_cols16(uint32_t *bf, const uint16_t *tile, int ld, int lane)
{
#ifdef UF_VENDOR_LDSM_X4_TRANS
    UF_VENDOR_LDSM_X4_TRANS(bf, tile + lane % 16 * ld + lane / 16 * 8);
#else
    uf_frag_b2_cols16_lanes(bf, tile, ld, lane);
#endif
}

UF_FN void uf_gpu_unpack_f16(uint32_t w, float *out)
{
    uf_f16x2_to_f32x2(w, out);
}
UF_FN void uf_gpu_unpack_bf16(uint32_t w, float *out)
{
    uf_bf16x2_to_f32x2(w, out);
}
UF_FN void uf_gpu_unpack_f32(uf_f32x2 w, float *out)
{
    out[0] = w.v[0];
    out[1] = w.v[1];
}
UF_FN uint32_t uf_gpu_shfl_pair(uint32_t w, int lane)
{
    return UF_SHFL(w, lane);
}
UF_FN uf_f32x2 uf_gpu_shfl_pair(uf_f32x2 w, int lane)
{
    uf_f32x2 r;
    r.v[0] = UF_SHFL(w.v[0], lane);
    r.v[1] = UF_SHFL(w.v[1], lane);
    return r;
}

/* Lane l (quad g, position q) owns C rows g and g + 8, columns 2q and
 * 2q + 1. Step s brings row g's and row g + 8's A pairs for k = 2s, 2s + 1,
 * 2s + 8, 2s + 9 from lane 4g + s, and the B pairs of columns 2q, 2q + 1 for
 * the same k from lanes 8q + s and 8q + 4 + s. */
#define UF_GPU_DEFINE_MMA_EMULATED(name, P, UNPACK)                                                \
    UF_FN void name(float *c, const P *a, const P *b)                                              \
    {                                                                                              \
        const int l = (int)threadIdx.x % UF_FRAG_LANES, g = l / 4, q = l % 4;                      \
        UF_UNROLL for (int s = 0; s < 4; ++s)                                                      \
        {                                                                                          \
            float ar[4][2], b0[2][2], b1[2][2];                                                    \
            UF_UNROLL for (int p = 0; p < 4; ++p)                                                  \
                UNPACK(uf_gpu_shfl_pair(a[p], 4 * g + s), ar[p]);                                  \
            UF_UNROLL for (int p = 0; p < 2; ++p)                                                  \
            {                                                                                      \
                UNPACK(uf_gpu_shfl_pair(b[p], 8 * q + s), b0[p]);                                  \
                UNPACK(uf_gpu_shfl_pair(b[p], 8 * q + 4 + s), b1[p]);                              \
            }                                                                                      \
            UF_UNROLL for (int p = 0; p < 2; ++p) UF_UNROLL for (int e = 0; e < 2; ++e)            \
            {                                                                                      \
                const float top = ar[2 * p][e], bottom = ar[2 * p + 1][e];                         \
                c[0] += top * b0[p][e];                                                            \
                c[1] += top * b1[p][e];                                                            \
                c[2] += bottom * b0[p][e];                                                         \
                c[3] += bottom * b1[p][e];                                                         \
            }                                                                                      \
        }                                                                                          \
    }

#ifdef UF_VENDOR_MMA_F16
#define uf_mma_f16(c, a, b) UF_VENDOR_MMA_F16((c), (a), (b))
#else
UF_GPU_DEFINE_MMA_EMULATED(uf_mma_f16, uint32_t, uf_gpu_unpack_f16)
#endif
#ifdef UF_VENDOR_MMA_BF16
#define uf_mma_bf16(c, a, b) UF_VENDOR_MMA_BF16((c), (a), (b))
#else
UF_GPU_DEFINE_MMA_EMULATED(uf_mma_bf16, uint32_t, uf_gpu_unpack_bf16)
#endif
UF_GPU_DEFINE_MMA_EMULATED(uf_mma_f32, uf_f32x2, uf_gpu_unpack_f32)

#endif
