/*
 * Binds one attention instantiation: the includer defines UF_DT (1 f32,
 * 2 f16, 3 bf16) and UF_ATT_DP (head dimension tile: 32, 64, 128, 256).
 * Defines, besides dtype_bind.h's names:
 *   UF_ANAME(base)   base_<dtype>_d<dp>
 *   UF_PAIR          a fragment pair (32-bit word of two 16-bit values, or
 *                    uf_f32x2), UF_PAIR_OF(lo, hi) from two floats,
 *                    UF_PAIR_AT(p) from two adjacent stored elements,
 *                    UF_PAIR_OF2(e0, e1) from two stored elements
 *   UF_MMA           the layer's fragment product for the dtype
 *   UF_FRAG_B_ROWS / UF_FRAG_B_COLS  the layer's B fragment loads (B2: two
 *                    neighbouring fragments at once)
 *   UF_ATT_BN        keys (rows of K and V) per shared-memory tile
 *   UF_ATT_LD        shared-memory row stride in elements
 *   UF_ATT_CHUNK     elements per 16-byte access
 * attention_unbind.h removes them.
 */
#define UF_VEC 1
#include "kernels/dtype_bind.h"

#define UF_ACAT_(a, b, c) a##_##b##_d##c
#define UF_ACAT(a, b, c) UF_ACAT_(a, b, c)
#define UF_ANAME(base) UF_ACAT(base, UF_SFX, UF_ATT_DP)

#if UF_DT == 1
#define UF_PAIR uf_f32x2
#define UF_MMA UF_MMA_F32
UF_FN uf_f32x2 UF_ANAME(uf_att_pair_of)(float lo, float hi)
{
    uf_f32x2 r;
    r.v[0] = lo;
    r.v[1] = hi;
    return r;
}
#define UF_PAIR_OF(lo, hi) UF_ANAME(uf_att_pair_of)((lo), (hi))
#define UF_FRAG_B_ROWS(bf, tile, ld, lane) uf_frag_b_rows32((bf), (tile), (ld), (lane))
#define UF_FRAG_B_COLS(bf, tile, ld, lane) uf_frag_b_cols32((bf), (tile), (ld), (lane))
#define UF_FRAG_B2_ROWS(bf, tile, ld, lane) uf_frag_b2_rows32((bf), (tile), (ld), (lane))
#define UF_FRAG_B2_COLS(bf, tile, ld, lane) uf_frag_b2_cols32((bf), (tile), (ld), (lane))
#define UF_PAIR_OF2(e0, e1) UF_PAIR_OF((e0), (e1))
#define UF_PAIR_AT(p) UF_PAIR_OF((p)[0], (p)[1])
#define UF_PAIR_LO(w) ((w).v[0])
#define UF_PAIR_HI(w) ((w).v[1])
#else
#define UF_PAIR uint32_t
#if UF_DT == 2
#define UF_MMA UF_MMA_F16
#define UF_PAIR_LO(w) uf_f16_to_f32((uf_f16)((w)&0xffffu))
#define UF_PAIR_HI(w) uf_f16_to_f32((uf_f16)((w) >> 16))
#else
#define UF_MMA UF_MMA_BF16
#define UF_PAIR_LO(w) uf_bf16_to_f32((uf_bf16)((w)&0xffffu))
#define UF_PAIR_HI(w) uf_bf16_to_f32((uf_bf16)((w) >> 16))
#endif
#define UF_PAIR_OF(lo, hi) UF_PAIR_FROM_ACC((lo), (hi))
#define UF_PAIR_OF2(e0, e1) ((uint32_t)(e0) | (uint32_t)(e1) << 16)
#define UF_PAIR_AT(p) UF_PAIR_OF2((p)[0], (p)[1])
#define UF_FRAG_B_ROWS(bf, tile, ld, lane) uf_frag_b_rows16((bf), (tile), (ld), (lane))
#define UF_FRAG_B_COLS(bf, tile, ld, lane) uf_frag_b_cols16((bf), (tile), (ld), (lane))
#define UF_FRAG_B2_ROWS(bf, tile, ld, lane) uf_frag_b2_rows16((bf), (tile), (ld), (lane))
#define UF_FRAG_B2_COLS(bf, tile, ld, lane) uf_frag_b2_cols16((bf), (tile), (ld), (lane))
#endif

/* acc += a b over npt k-tiles of 16 and ndt n-tiles of 8 (ndt even): a's
 * pairs in the exclusive array `a` (4 per k-tile), b the rows of `tile` in
 * shared memory (b[k][n] = tile[k * UF_ATT_LD + n]); `bf` an exclusive of
 * four pairs. Two n-tiles per fragment load. Between thread loops. */
#define UF_ATT_PRODUCT_COLS(acc, a, tile, npt, ndt, bf)                                            \
    UF_UNROLL_REGS for (int uf_kk_ = 0; uf_kk_ < (npt); ++uf_kk_)                                  \
        UF_UNROLL_REGS for (int uf_dt_ = 0; uf_dt_ < (ndt); uf_dt_ += 2)                           \
    {                                                                                              \
        UF_THREADS (t) {                                                                           \
            UF_FRAG_B2_COLS(UF_X(bf), (tile) + 16 * uf_kk_ * UF_ATT_LD + 8 * uf_dt_, UF_ATT_LD,    \
                            t % 32);                                                               \
        }                                                                                          \
        UF_MMA(acc, 4 * uf_dt_, a, 4 * uf_kk_, bf, 0);                                             \
        UF_MMA(acc, 4 * uf_dt_ + 4, a, 4 * uf_kk_, bf, 2);                                         \
    }

/* Two tiles of K and V rows in at most ~32 KiB of shared memory, at most 64
 * keys, a multiple of 16 (the fragment's k). */
#define UF_ATT_BN_(bytes) ((bytes) >= 64 ? 64 : (bytes) >= 32 ? 32 : 16)
#define UF_ATT_BN UF_ATT_BN_(16384 / (UF_ATT_DP * (int)sizeof(UF_T)))
/* Rows padded by 16 bytes so that the 8 rows one fragment load touches
 * start in different banks. */
#define UF_ATT_LD (UF_ATT_DP + 16 / (int)sizeof(UF_T))
#define UF_ATT_CHUNK (16 / (int)sizeof(UF_T))

/* Copies `rows` rows of `d` elements (row r at src + r * stride, rows from
 * `avail` on absent) into a [rows][UF_ATT_LD] tile, zero beyond d and avail,
 * as thread t of n; 16-byte accesses when `vec`. The copies may still be in
 * flight on return: UF_ASYNC_WAIT() and a barrier before the tile is read. */
UF_FN void UF_ANAME(uf_att_load_tile)(UF_T *dst, const UF_T *src, int64_t stride, int rows,
                                      int64_t avail, int64_t d, int vec, int t, int n)
{
    const int per_row = UF_ATT_DP / UF_ATT_CHUNK;
    if (vec && avail >= rows && d == UF_ATT_DP && n == UF_ATT_THREADS &&
        rows * per_row % UF_ATT_THREADS == 0) {
        /* The common case: asynchronous copies, all in flight together (a
         * loop of load-then-store would wait for each load). */
        enum { ITERS = UF_ATT_BN * (UF_ATT_DP / UF_ATT_CHUNK) / UF_ATT_THREADS };
        const int iters = rows * per_row / UF_ATT_THREADS;
        UF_UNROLL for (int it = 0; it < ITERS; ++it) if (it < iters)
        {
            const int c = t + it * UF_ATT_THREADS;
            UF_COPY16_ASYNC(dst + c / per_row * UF_ATT_LD + c % per_row * UF_ATT_CHUNK,
                            src + c / per_row * stride + c % per_row * UF_ATT_CHUNK);
        }
        return;
    }
    for (int c = t; c < rows * per_row; c += n) {
        const int r = c / per_row, col = c % per_row * UF_ATT_CHUNK;
        UF_T *out = dst + r * UF_ATT_LD + col;
        if (r < avail && col < d && vec) {
            UF_LOAD16(out, src + r * stride + col);
        } else if (r < avail) {
            const UF_T *in = src + r * stride + col;
            UF_UNROLL for (int e = 0; e < UF_ATT_CHUNK; ++e) out[e] = col + e < d ? in[e] : (UF_T)0;
        } else {
            UF_UNROLL for (int e = 0; e < UF_ATT_CHUNK; ++e) out[e] = (UF_T)0;
        }
    }
}
