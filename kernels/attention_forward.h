/*
 * Forward attention, one instantiation per (UF_DT, UF_ATT_DP); see
 * attention_forward.c. A block owns UF_ATT_ROWS query rows of one (batch,
 * head), 16 per fragment group, and walks the key tiles those rows can see:
 * K and V tiles go through shared memory, S = Q K^T and O += P V are
 * fragment products, and the softmax is online: each row keeps its running
 * maximum m and sum l, and O and l are rescaled by exp(m_old - m_new) when
 * a tile raises the maximum. l is the sum before dropout; dropped
 * probabilities are zero in P, kept ones scaled by 1 / (1 - p).
 */
#include "kernels/attention_bind.h"

#define UF_NKT (UF_ATT_DP / 16) /* k-tiles of Q K^T */
#define UF_NDT (UF_ATT_DP / 8)  /* n-tiles of O */
#define UF_NST (UF_ATT_BN / 8)  /* n-tiles of S */
#define UF_NPT (UF_ATT_BN / 16) /* k-tiles of P V */

UF_KERNEL_BOUNDED(UF_ANAME(uf_att_fwd), uf_attention_args, a, UF_ATT_THREADS)
{
    UF_BLOCKS (blk) {
        UF_SHARED(UF_T, ktile, UF_ATT_BN * UF_ATT_LD);
        UF_SHARED(UF_T, vtile, UF_ATT_BN * UF_ATT_LD);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, qa, 4 * UF_NKT);
        UF_EXCLUSIVE_ARRAY(float, acc, 4 * UF_NDT);
        UF_EXCLUSIVE_ARRAY(float, s, 4 * UF_NST);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, pa, 4 * UF_NPT);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, bf, 2);
        UF_EXCLUSIVE(float, m0); /* running maximum of rows g and g + 8 */
        UF_EXCLUSIVE(float, m1);
        UF_EXCLUSIVE(float, l0); /* this lane's part of their running sums */
        UF_EXCLUSIVE(float, l1);
        UF_EXCLUSIVE(float, x0); /* the tile's row maxima */
        UF_EXCLUSIVE(float, x1);
        const int64_t qb = blk % a.nblocks, bh = blk / a.nblocks;
        const int64_t h = bh % a.heads_q, b = bh / a.heads_q;
        const int64_t hk = h / (a.heads_q / a.heads_kv);
        const int64_t i0 = qb * UF_ATT_ROWS;
        const UF_T *q = (const UF_T *)a.q + b * a.qs[0] + h * a.qs[1];
        const UF_T *kh = (const UF_T *)a.k + b * a.ks[0] + hk * a.ks[1];
        const UF_T *vh = (const UF_T *)a.v + b * a.vs[0] + hk * a.vs[1];
        int64_t jlo, jhi;
        uf_att_key_range(&a, i0, i0 + UF_ATT_ROWS < a.sq ? i0 + UF_ATT_ROWS : a.sq, &jlo, &jhi);

        UF_THREADS (t) {
            const int lane = t % 32;
            const int64_t rows = i0 + t / 32 * 16;
            UF_UNROLL_REGS for (int kt = 0; kt < UF_NKT; ++kt)
                UF_UNROLL_REGS for (int p = 0; p < 4; ++p)
            {
                const int64_t i = rows + UF_FRAG_A_ROW(lane, p);
                const int col = 16 * kt + UF_FRAG_A_COL(lane, p);
                UF_X(qa)
                [4 * kt + p] = i < a.sq && col < a.d ? UF_PAIR_AT(q + i * a.qs[2] + col)
                                                     : UF_PAIR_OF(0.0f, 0.0f);
            }
            UF_UNROLL_REGS for (int e = 0; e < 4 * UF_NDT; ++e) UF_X(acc)[e] = 0.0f;
            UF_X(m0) = UF_X(m1) = -INFINITY;
            UF_X(l0) = UF_X(l1) = 0.0f;
        }
        /* Copies overlap work: V's tile lands while S = Q K^T is formed,
         * the next K tile while O += P V is. */
        if (jlo < jhi)
            UF_THREADS (t) {
                UF_ANAME(uf_att_load_tile)
                (ktile, kh + jlo * a.ks[2], a.ks[2], UF_ATT_BN, a.sk - jlo, a.d, a.vec, t,
                 UF_NTHREADS);
            }
        for (int64_t j0 = jlo; j0 < jhi; j0 += UF_ATT_BN) {
            UF_THREADS (t) {
                UF_ASYNC_WAIT();
            }
            UF_BARRIER(); /* K is in; every group is done with the last V */
            UF_THREADS (t) {
                UF_ANAME(uf_att_load_tile)
                (vtile, vh + j0 * a.vs[2], a.vs[2], UF_ATT_BN, a.sk - j0, a.d, a.vec, t,
                 UF_NTHREADS);
                UF_UNROLL_REGS for (int e = 0; e < 4 * UF_NST; ++e) UF_X(s)[e] = 0.0f;
            }
            /* k outer: consecutive products feed different accumulators, so
             * none waits for the one before. */
            UF_UNROLL_REGS for (int kt = 0; kt < UF_NKT; ++kt)
                UF_UNROLL_REGS for (int nt = 0; nt < UF_NST; ++nt)
            {
                UF_THREADS (t) {
                    UF_FRAG_B_ROWS(UF_X(bf), ktile + 8 * nt * UF_ATT_LD + 16 * kt, UF_ATT_LD,
                                   t % 32);
                }
                UF_MMA(s, 4 * nt, qa, 4 * kt, bf, 0);
            }
            const int open = uf_att_tile_open(&a, i0, i0 + UF_ATT_ROWS, j0, j0 + UF_ATT_BN);
            UF_THREADS (t) {
                const int lane = t % 32;
                const int64_t rows = i0 + t / 32 * 16;
                float mx[2] = {-INFINITY, -INFINITY};
                UF_UNROLL_REGS for (int nt = 0; nt < UF_NST; ++nt)
                    UF_UNROLL_REGS for (int e = 0; e < 4; ++e)
                {
                    const int64_t i = rows + UF_FRAG_C_ROW(lane, e);
                    const int64_t j = j0 + 8 * nt + UF_FRAG_C_COL(lane, e);
                    float v = UF_X(s)[4 * nt + e] * a.scale;
                    if (!open && !uf_att_visible(&a, i, j))
                        v = -INFINITY;
                    else if (a.bias_kind != UF_ATT_BIAS_NONE)
                        v = uf_att_bias(&a, b, h, i, j, v, UF_DT);
                    UF_X(s)[4 * nt + e] = v;
                    mx[e / 2] = fmaxf(mx[e / 2], v);
                }
                UF_X(x0) = mx[0];
                UF_X(x1) = mx[1];
            }
            UF_WARP_MAX(x0, 4);
            UF_WARP_MAX(x1, 4);
            UF_THREADS (t) {
                const int lane = t % 32;
                const int64_t rows = i0 + t / 32 * 16;
                const float mn[2] = {fmaxf(UF_X(m0), UF_X(x0)), fmaxf(UF_X(m1), UF_X(x1))};
                /* exp(-inf - -inf) would be NaN: a row that has seen no key
                 * yet subtracts 0 instead (its terms are all 0 anyway). */
                const float ref[2] = {mn[0] == -INFINITY ? 0.0f : mn[0],
                                      mn[1] == -INFINITY ? 0.0f : mn[1]};
                const float alpha[2] = {UF_EXPF(UF_X(m0) - ref[0]), UF_EXPF(UF_X(m1) - ref[1])};
                float sum[2] = {0.0f, 0.0f};
                UF_UNROLL_REGS for (int nt = 0; nt < UF_NST; ++nt)
                    UF_UNROLL_REGS for (int e = 0; e < 4; ++e)
                {
                    float p = UF_EXPF(UF_X(s)[4 * nt + e] - ref[e / 2]);
                    sum[e / 2] += p;
                    if (a.threshold != 0) {
                        const int64_t i = rows + UF_FRAG_C_ROW(lane, e);
                        const int64_t j = j0 + 8 * nt + UF_FRAG_C_COL(lane, e);
                        const int64_t index = ((b * a.heads_q + h) * a.sq + i) * a.sk + j;
                        p = i < a.sq && j < a.sk && uf_att_kept(&a, index) ? p * a.keep_scale
                                                                           : 0.0f;
                    }
                    UF_X(s)[4 * nt + e] = p;
                }
                UF_X(m0) = mn[0];
                UF_X(m1) = mn[1];
                UF_X(l0) = UF_X(l0) * alpha[0] + sum[0];
                UF_X(l1) = UF_X(l1) * alpha[1] + sum[1];
                UF_UNROLL_REGS for (int e = 0; e < 4 * UF_NDT; ++e) UF_X(acc)[e] *=
                    alpha[e % 4 / 2];
                /* S's accumulator layout is P's operand layout: n-tiles 2kk
                 * and 2kk + 1 make k-tile kk. */
                UF_UNROLL_REGS for (int kk = 0; kk < UF_NPT; ++kk)
                    UF_UNROLL_REGS for (int p = 0; p < 4; ++p)
                {
                    const float *c = &UF_X(s)[4 * (2 * kk + p / 2) + 2 * (p % 2)];
                    UF_X(pa)[4 * kk + p] = UF_PAIR_OF(c[0], c[1]);
                }
            }
            UF_THREADS (t) {
                UF_ASYNC_WAIT();
            }
            UF_BARRIER(); /* V is in; every group is done with this K */
            if (j0 + UF_ATT_BN < jhi)
                UF_THREADS (t) {
                    UF_ANAME(uf_att_load_tile)
                    (ktile, kh + (j0 + UF_ATT_BN) * a.ks[2], a.ks[2], UF_ATT_BN,
                     a.sk - j0 - UF_ATT_BN, a.d, a.vec, t, UF_NTHREADS);
                }
            UF_UNROLL_REGS for (int kk = 0; kk < UF_NPT; ++kk)
                UF_UNROLL_REGS for (int dt = 0; dt < UF_NDT; ++dt)
            {
                UF_THREADS (t) {
                    UF_FRAG_B_COLS(UF_X(bf), vtile + 16 * kk * UF_ATT_LD + 8 * dt, UF_ATT_LD,
                                   t % 32);
                }
                UF_MMA(acc, 4 * dt, pa, 4 * kk, bf, 0);
            }
        }
        UF_WARP_SUM(l0, 4);
        UF_WARP_SUM(l1, 4);
        UF_THREADS (t) {
            const int lane = t % 32;
            const int64_t rows = i0 + t / 32 * 16;
            UF_T *o = (UF_T *)a.o + b * a.os[0] + h * a.os[1];
            const float l[2] = {UF_X(l0), UF_X(l1)}, m[2] = {UF_X(m0), UF_X(m1)};
            UF_UNROLL_REGS for (int r = 0; r < 2; ++r)
            {
                const int64_t i = rows + UF_FRAG_C_ROW(lane, 2 * r);
                if (i >= a.sq)
                    continue;
                /* A row that saw no key has l = 0: zeros, not NaN. */
                const float inv = l[r] == 0.0f ? 0.0f : 1.0f / l[r];
                UF_UNROLL_REGS for (int dt = 0; dt < UF_NDT; ++dt)
                {
                    const int col = 8 * dt + UF_FRAG_C_COL(lane, 2 * r);
                    if (col >= a.d)
                        continue;
                    UF_T *dst = o + i * a.os[2] + col;
                    dst[0] = UF_FROM_ACC(UF_X(acc)[4 * dt + 2 * r] * inv);
                    dst[1] = UF_FROM_ACC(UF_X(acc)[4 * dt + 2 * r + 1] * inv);
                }
                if (a.lse != NULL && lane % 4 == 0)
                    a.lse[(b * a.heads_q + h) * a.sq + i] =
                        l[r] == 0.0f ? -INFINITY : (m[r] == -INFINITY ? 0.0f : m[r]) + logf(l[r]);
            }
        }
    }
}

#undef UF_NKT
#undef UF_NDT
#undef UF_NST
#undef UF_NPT
#include "kernels/attention_unbind.h"
