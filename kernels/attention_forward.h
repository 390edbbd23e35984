/*
 * Forward attention, one instantiation per (UF_DT, UF_ATT_DP, UF_ATT_FULL);
 * see attention_forward.c and attention_forward_plain.c. UF_ATT_FULL = 0
 * builds the kernel for calls without bias, mask or dropout: their code is
 * left out, which keeps the loop body small enough for the instruction
 * cache. A block owns UF_ATT_FWD_ROWS query rows of one (batch, head): each
 * fragment group UF_ATT_FWD_MT tiles of 16 rows. It walks the key tiles
 * those rows can see: K and V tiles go through shared memory, S = Q K^T and
 * O += P V are fragment products, and the softmax is online: each row keeps
 * its running maximum m and sum l, and O and l are rescaled by
 * 2^(m_old - m_new) when a tile raises the maximum. Logits are kept in
 * log2 units (times log2 e), so that each probability is one 2^x. l is the
 * sum before dropout; dropped probabilities are zero in P, kept ones scaled
 * by 1 / (1 - p).
 */
#include "kernels/attention_bind.h"

#define UF_MT UF_ATT_FWD_MT(UF_ATT_DP)
#define UF_FKEYS UF_ATT_FWD_KEYS(UF_ATT_DP, (int)sizeof(UF_T))
#define UF_FBN (UF_FKEYS < UF_ATT_BN ? UF_FKEYS : UF_ATT_BN)
#define UF_NKT (UF_ATT_DP / 16) /* k-tiles of Q K^T */
#define UF_NDT (UF_ATT_DP / 8)  /* n-tiles of O */
#define UF_NST (UF_FBN / 8)     /* n-tiles of S */
#define UF_NPT (UF_FBN / 16)    /* k-tiles of P V */
/* Fragment offsets: tile mt's k-tile kt of Q, n-tile of S or O, k-tile of P. */
#define UF_QF(mt, kt) (4 * ((mt)*UF_NKT + (kt)))
#define UF_SF(mt, nt) (4 * ((mt)*UF_NST + (nt)))
#define UF_OF(mt, dt) (4 * ((mt)*UF_NDT + (dt)))
#define UF_PF(mt, kk) (4 * ((mt)*UF_NPT + (kk)))
#if UF_ATT_FULL
#define UF_FWD_KERNEL UF_ANAME(uf_att_fwd)
#else
#define UF_FWD_KERNEL UF_ANAME(uf_att_fwd_plain)
#endif

UF_KERNEL_RESIDENT(UF_FWD_KERNEL, uf_attention_args, a, UF_ATT_THREADS,
                   UF_ATT_FWD_RESIDENT(UF_ATT_DP, (int)sizeof(UF_T)))
{
    UF_BLOCKS (blk) {
        UF_SHARED(UF_T, ktile, UF_FBN * UF_ATT_LD);
        UF_SHARED(UF_T, vtile, UF_FBN * UF_ATT_LD);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, qa, UF_MT * 4 * UF_NKT);
        UF_EXCLUSIVE_ARRAY(float, acc, UF_MT * 4 * UF_NDT);
        UF_EXCLUSIVE_ARRAY(float, s, UF_MT * 4 * UF_NST);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, pa, UF_MT * 4 * UF_NPT);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, bf, 4);
        /* Per row r = 2 mt + (0 for row g, 1 for row g + 8) of the lane:
         * running maximum (log2 units) and this lane's part of the sum. */
        UF_EXCLUSIVE_ARRAY(float, m, 2 * UF_MT);
        UF_EXCLUSIVE_ARRAY(float, l, 2 * UF_MT);
        /* The tile's reference (the new maximum, 0 for a row that has seen
         * nothing) and the factor O and l are rescaled by. */
        UF_EXCLUSIVE_ARRAY(float, ref, 2 * UF_MT);
        UF_EXCLUSIVE_ARRAY(float, alpha, 2 * UF_MT);
        /* Row maxima of a tile and the row sums, reduced over the quad; x0 also
         * carries whether a maximum grew, reduced over the group. */
        UF_EXCLUSIVE(float, x0);
        UF_EXCLUSIVE(float, x1);
        UF_EXCLUSIVE(float, x2);
        UF_EXCLUSIVE(float, x3);
        const int64_t rows_per_block = UF_ATT_FWD_ROWS(UF_ATT_DP);
        const int64_t nqb = (a.sq + rows_per_block - 1) / rows_per_block;
        /* Last row blocks first: under a causal mask they see the most keys,
         * and the short ones then fill the tail of the grid. */
        const int64_t qb = nqb - 1 - blk % nqb, bh = blk / nqb;
        const int64_t h = bh % a.heads_q, b = bh / a.heads_q;
        const int64_t hk = h / (a.heads_q / a.heads_kv);
        const int64_t i0 = qb * rows_per_block;
        const int64_t i1 = i0 + rows_per_block < a.sq ? i0 + rows_per_block : a.sq;
        const UF_T *q = (const UF_T *)a.q + b * a.qs[0] + h * a.qs[1];
        const UF_T *kh = (const UF_T *)a.k + b * a.ks[0] + hk * a.ks[1];
        const UF_T *vh = (const UF_T *)a.v + b * a.vs[0] + hk * a.vs[1];
        /* What turns a logit of s below into log2 units: plain kernels keep
         * the bare product q . k (src/attention.c sends them only positive
         * scales); full ones the biased logit, already in log2 units. */
        const float to_log2 = UF_ATT_FULL ? 1.0f : a.scale * 1.4426950408889634f;
        int64_t jlo, jhi;
        uf_att_key_range(&a, i0, i1, &jlo, &jhi);

        UF_THREADS (t) {
            const int lane = t % 32;
            const int64_t rows = i0 + t / 32 * 16 * UF_MT;
            UF_UNROLL_REGS for (int mt = 0; mt < UF_MT; ++mt)
                UF_UNROLL_REGS for (int kt = 0; kt < UF_NKT; ++kt)
                    UF_UNROLL_REGS for (int p = 0; p < 4; ++p)
            {
                const int64_t i = rows + 16 * mt + UF_FRAG_A_ROW(lane, p);
                const int col = 16 * kt + UF_FRAG_A_COL(lane, p);
                UF_X(qa)
                [UF_QF(mt, kt) + p] = i < a.sq && col < a.d ? UF_PAIR_AT(q + i * a.qs[2] + col)
                                                            : UF_PAIR_OF(0.0f, 0.0f);
            }
            UF_UNROLL_REGS for (int e = 0; e < UF_MT * 4 * UF_NDT; ++e) UF_X(acc)[e] = 0.0f;
            UF_UNROLL_REGS for (int r = 0; r < 2 * UF_MT; ++r)
            {
                UF_X(m)[r] = -INFINITY;
                UF_X(l)[r] = 0.0f;
            }
        }
        /* Copies overlap work: V's tile lands while S = Q K^T is formed,
         * the next K tile while O += P V is. */
        if (jlo < jhi)
            UF_THREADS (t) {
                UF_ANAME(uf_att_load_tile)
                (ktile, kh + jlo * a.ks[2], a.ks[2], UF_FBN, a.sk - jlo, a.d, a.vec, t,
                 UF_NTHREADS);
            }
        for (int64_t j0 = jlo; j0 < jhi; j0 += UF_FBN) {
            UF_THREADS (t) {
                UF_ASYNC_WAIT();
            }
            UF_BARRIER(); /* K is in; every group is done with the last V */
            UF_THREADS (t) {
                UF_ANAME(uf_att_load_tile)
                (vtile, vh + j0 * a.vs[2], a.vs[2], UF_FBN, a.sk - j0, a.d, a.vec, t, UF_NTHREADS);
                UF_UNROLL_REGS for (int e = 0; e < UF_MT * 4 * UF_NST; ++e) UF_X(s)[e] = 0.0f;
            }
            /* k outer: consecutive products feed different accumulators, so
             * none waits for the one before; each loaded K fragment pair
             * feeds every row tile. */
            UF_UNROLL_REGS for (int kt = 0; kt < UF_NKT; ++kt)
                UF_UNROLL_REGS for (int nt = 0; nt < UF_NST; nt += 2)
            {
                UF_THREADS (t) {
                    UF_FRAG_B2_ROWS(UF_X(bf), ktile + 8 * nt * UF_ATT_LD + 16 * kt, UF_ATT_LD,
                                    t % 32);
                }
                UF_UNROLL_REGS for (int mt = 0; mt < UF_MT; ++mt)
                {
                    UF_MMA(s, UF_SF(mt, nt), qa, UF_QF(mt, kt), bf, 0);
                    UF_MMA(s, UF_SF(mt, nt + 1), qa, UF_QF(mt, kt), bf, 2);
                }
            }
            const int open = uf_att_tile_open(&a, i0, i0 + rows_per_block, j0, j0 + UF_FBN);
            UF_THREADS (t) {
                const int lane = t % 32;
                const int64_t rows = i0 + t / 32 * 16 * UF_MT;
                float mx[2 * UF_MT];
                UF_UNROLL_REGS for (int r = 0; r < 2 * UF_MT; ++r) mx[r] = -INFINITY;
                UF_UNROLL_REGS for (int mt = 0; mt < UF_MT; ++mt)
                    UF_UNROLL_REGS for (int nt = 0; nt < UF_NST; ++nt)
                        UF_UNROLL_REGS for (int e = 0; e < 4; ++e)
                {
                    /* Plain kernels keep the product (times to_log2: log2 units)
                     * and only hide keys on the tiles that need it. */
                    float v = UF_X(s)[UF_SF(mt, nt) + e];
                    if (!open || UF_ATT_FULL) {
                        const int64_t i = rows + 16 * mt + UF_FRAG_C_ROW(lane, e);
                        const int64_t j = j0 + 8 * nt + UF_FRAG_C_COL(lane, e);
                        const int seen = open || uf_att_visible(&a, i, j);
                        v = UF_ATT_FULL ? uf_att_logit2(&a, v, seen, b, h, i, j, UF_DT, 1)
                            : seen      ? v
                                        : -INFINITY;
                    }
                    UF_X(s)[UF_SF(mt, nt) + e] = v;
                    mx[2 * mt + e / 2] = fmaxf(mx[2 * mt + e / 2], v);
                }
                UF_X(x0) = mx[0];
                UF_X(x1) = mx[1];
                UF_X(x2) = mx[2 * UF_MT - 2];
                UF_X(x3) = mx[2 * UF_MT - 1];
            }
            UF_WARP_MAX(x0, 4);
            UF_WARP_MAX(x1, 4);
            if (UF_MT > 1) {
                UF_WARP_MAX(x2, 4);
                UF_WARP_MAX(x3, 4);
            }
            UF_THREADS (t) {
                const float tmax[4] = {UF_X(x0), UF_X(x1), UF_X(x2), UF_X(x3)};
                int grew = 0;
                UF_UNROLL_REGS for (int r = 0; r < 2 * UF_MT; ++r)
                {
                    /* to_log2 > 0 keeps the order of the values, so the maximum
                     * in log2 units is the scaled maximum. */
                    const float mn = fmaxf(UF_X(m)[r], tmax[r] * to_log2);
                    /* 2^(-inf - -inf) would be NaN: a row that has seen no
                     * key yet subtracts 0 instead (its terms are all 0). */
                    const float base = mn == -INFINITY ? 0.0f : mn;
                    UF_X(alpha)[r] = UF_EXP2F(UF_X(m)[r] - base);
                    grew |= mn != UF_X(m)[r];
                    UF_X(m)[r] = mn;
                    UF_X(ref)[r] = base;
                }
                UF_X(x0) = (float)grew;
            }
            /* O needs rescaling only where some row's maximum grew (alpha is
             * exactly 1 elsewhere): asked once for the whole group. */
            UF_WARP_MAX(x0, 32);
            UF_THREADS (t) {
                const int lane = t % 32;
                const int64_t rows = i0 + t / 32 * 16 * UF_MT;
                float sum[2 * UF_MT];
                UF_UNROLL_REGS for (int r = 0; r < 2 * UF_MT; ++r) sum[r] = 0.0f;
                UF_UNROLL_REGS for (int mt = 0; mt < UF_MT; ++mt)
                    UF_UNROLL_REGS for (int nt = 0; nt < UF_NST; ++nt)
                        UF_UNROLL_REGS for (int e = 0; e < 4; ++e)
                {
                    const int r = 2 * mt + e / 2;
                    float p = UF_EXP2F(fmaf(UF_X(s)[UF_SF(mt, nt) + e], to_log2, -UF_X(ref)[r]));
                    sum[r] += p;
                    if (UF_ATT_FULL && a.threshold != 0) {
                        const int64_t i = rows + 16 * mt + UF_FRAG_C_ROW(lane, e);
                        const int64_t j = j0 + 8 * nt + UF_FRAG_C_COL(lane, e);
                        const int64_t index = ((b * a.heads_q + h) * a.sq + i) * a.sk + j;
                        p = i < a.sq && j < a.sk && uf_att_kept(&a, index) ? p * a.keep_scale
                                                                           : 0.0f;
                    }
                    UF_X(s)[UF_SF(mt, nt) + e] = p;
                }
                UF_UNROLL_REGS for (int r = 0; r < 2 * UF_MT; ++r) UF_X(l)[r] =
                    UF_X(l)[r] * UF_X(alpha)[r] + sum[r];
                if (UF_X(x0) != 0.0f)
                    UF_UNROLL_REGS for (int mt = 0; mt < UF_MT; ++mt)
                        UF_UNROLL_REGS for (int e = 0; e < 4 * UF_NDT; ++e)
                            UF_X(acc)[UF_OF(mt, 0) + e] *= UF_X(alpha)[2 * mt + e % 4 / 2];
                /* S's accumulator layout is P's operand layout: n-tiles 2kk
                 * and 2kk + 1 make k-tile kk. */
                UF_UNROLL_REGS for (int mt = 0; mt < UF_MT; ++mt)
                    UF_UNROLL_REGS for (int kk = 0; kk < UF_NPT; ++kk)
                        UF_UNROLL_REGS for (int p = 0; p < 4; ++p)
                {
                    const float *c = &UF_X(s)[UF_SF(mt, 2 * kk + p / 2) + 2 * (p % 2)];
                    UF_X(pa)[UF_PF(mt, kk) + p] = UF_PAIR_OF(c[0], c[1]);
                }
            }
            UF_THREADS (t) {
                UF_ASYNC_WAIT();
            }
            UF_BARRIER(); /* V is in; every group is done with this K */
            if (j0 + UF_FBN < jhi)
                UF_THREADS (t) {
                    UF_ANAME(uf_att_load_tile)
                    (ktile, kh + (j0 + UF_FBN) * a.ks[2], a.ks[2], UF_FBN, a.sk - j0 - UF_FBN, a.d,
                     a.vec, t, UF_NTHREADS);
                }
            UF_UNROLL_REGS for (int kk = 0; kk < UF_NPT; ++kk)
                UF_UNROLL_REGS for (int dt = 0; dt < UF_NDT; dt += 2)
            {
                UF_THREADS (t) {
                    UF_FRAG_B2_COLS(UF_X(bf), vtile + 16 * kk * UF_ATT_LD + 8 * dt, UF_ATT_LD,
                                    t % 32);
                }
                UF_UNROLL_REGS for (int mt = 0; mt < UF_MT; ++mt)
                {
                    UF_MMA(acc, UF_OF(mt, dt), pa, UF_PF(mt, kk), bf, 0);
                    UF_MMA(acc, UF_OF(mt, dt + 1), pa, UF_PF(mt, kk), bf, 2);
                }
            }
        }
        UF_THREADS (t) {
            UF_X(x0) = UF_X(l)[0];
            UF_X(x1) = UF_X(l)[1];
            UF_X(x2) = UF_X(l)[2 * UF_MT - 2];
            UF_X(x3) = UF_X(l)[2 * UF_MT - 1];
        }
        UF_WARP_SUM(x0, 4);
        UF_WARP_SUM(x1, 4);
        if (UF_MT > 1) {
            UF_WARP_SUM(x2, 4);
            UF_WARP_SUM(x3, 4);
        }
        UF_THREADS (t) {
            const int lane = t % 32;
            const int64_t rows = i0 + t / 32 * 16 * UF_MT;
            UF_T *o = (UF_T *)a.o + b * a.os[0] + h * a.os[1];
            const float lsum[4] = {UF_X(x0), UF_X(x1), UF_X(x2), UF_X(x3)};
            UF_UNROLL_REGS for (int r = 0; r < 2 * UF_MT; ++r)
            {
                const int mt = r / 2;
                const int64_t i = rows + 16 * mt + UF_FRAG_C_ROW(lane, 2 * (r % 2));
                if (i >= a.sq)
                    continue;
                /* A row that saw no key has l = 0: zeros, not NaN. */
                const float inv = lsum[r] == 0.0f ? 0.0f : 1.0f / lsum[r];
                UF_UNROLL_REGS for (int dt = 0; dt < UF_NDT; ++dt)
                {
                    const int col = 8 * dt + UF_FRAG_C_COL(lane, 2 * (r % 2));
                    if (col >= a.d)
                        continue;
                    const float *c = &UF_X(acc)[UF_OF(mt, dt) + 2 * (r % 2)];
                    UF_T *dst = o + i * a.os[2] + col;
                    dst[0] = UF_FROM_ACC(c[0] * inv);
                    dst[1] = UF_FROM_ACC(c[1] * inv);
                }
                /* m is in log2 units; the saved log-sum-exp in natural ones. */
                const float mr = UF_X(m)[r] == -INFINITY ? 0.0f : UF_X(m)[r];
                if (a.lse != NULL && lane % 4 == 0)
                    a.lse[(b * a.heads_q + h) * a.sq + i] =
                        lsum[r] == 0.0f ? -INFINITY : mr * 0.69314718055994531f + logf(lsum[r]);
            }
        }
    }
}

#undef UF_MT
#undef UF_FBN
#undef UF_FKEYS
#undef UF_NKT
#undef UF_NDT
#undef UF_NST
#undef UF_NPT
#undef UF_QF
#undef UF_SF
#undef UF_OF
#undef UF_PF
#undef UF_FWD_KERNEL
#include "kernels/attention_unbind.h"
