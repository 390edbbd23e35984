/*
 * Backward attention, dq (and the bias gradient), one instantiation per
 * (UF_DT, UF_ATT_DP); included by attention_backward.h,
 * which binds the instantiation. A block owns UF_ATT_ROWS
 * query rows of one (batch, head), as the forward pass does, and walks the
 * same key tiles: P = exp(S - lse) is rebuilt from the saved log-sum-exp,
 * dP = dO V^T (times the dropout's keep / (1 - p)), dS = P (dP - delta),
 * and dq = scale * dS K. Each block writes its own rows: no atomics.
 * Exponents in log2 units, as in the forward. UF_ATT_FULL = 0 leaves the
 * bias, mask, dropout and bias-gradient code out (attention_backward.h).
 */

#define UF_NKT (UF_ATT_DP / 16)
#define UF_NDT (UF_ATT_DP / 8)
/* Keys per tile; two buffers of K and V where they fit in 40 KiB, so that
 * the next tile's copies overlap this tile's products. */
#define UF_QKEYS UF_ATT_BWD_KEYS(UF_ATT_DP, (int)sizeof(UF_T))
#define UF_QBN (UF_QKEYS < UF_ATT_BN ? UF_QKEYS : UF_ATT_BN)
#define UF_QNBUF (4 * UF_QBN * UF_ATT_LD * (int)sizeof(UF_T) <= 40960 ? 2 : 1)
#define UF_NST (UF_QBN / 8)
#define UF_NPT (UF_QBN / 16)

/* Starts the copies of the K and V rows [j0, j0 + UF_QBN) into kdst, vdst. */
UF_FN void UF_ATT_BWD_NAME(uf_att_bwd_q_load)(UF_T *kdst, UF_T *vdst, const UF_T *kh,
                                              const UF_T *vh, const uf_attention_args *a,
                                              int64_t j0, int t, int n)
{
    UF_ANAME(uf_att_load_tile)
    (kdst, kh + j0 * a->ks[2], a->ks[2], UF_QBN, a->sk - j0, a->d, a->vec, t, n);
    UF_ANAME(uf_att_load_tile)
    (vdst, vh + j0 * a->vs[2], a->vs[2], UF_QBN, a->sk - j0, a->d, a->vec, t, n);
}

UF_KERNEL_RESIDENT(UF_ATT_BWD_NAME(uf_att_bwd_q), uf_attention_args, a, UF_ATT_THREADS,
                   UF_ATT_BWD_RESIDENT(UF_ATT_DP, (int)sizeof(UF_T)))
{
    UF_BLOCKS (blk) {
        UF_SHARED(UF_T, kbuf, UF_QNBUF * UF_QBN * UF_ATT_LD);
        UF_SHARED(UF_T, vbuf, UF_QNBUF * UF_QBN * UF_ATT_LD);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, qa, 4 * UF_NKT);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, ga, 4 * UF_NKT); /* dO rows */
        UF_EXCLUSIVE_ARRAY(float, acc, 4 * UF_NDT);
        UF_EXCLUSIVE_ARRAY(float, s, 4 * UF_NST);
        UF_EXCLUSIVE_ARRAY(float, dp, 4 * UF_NST);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, dsa, 4 * UF_NPT);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, bf, 4);
        /* rows g and g + 8, log2 units; +inf for a row that sees nothing */
        UF_EXCLUSIVE_ARRAY(float, lse, 2);
        UF_EXCLUSIVE_ARRAY(float, delta, 2);
        const int64_t qb = blk % a.nblocks, bh = blk / a.nblocks;
        const int64_t h = bh % a.heads_q, b = bh / a.heads_q;
        const int64_t hk = h / (a.heads_q / a.heads_kv);
        const int64_t i0 = qb * UF_ATT_ROWS;
        const UF_T *q = (const UF_T *)a.q + b * a.qs[0] + h * a.qs[1];
        const UF_T *g = (const UF_T *)a.dout + b * a.os[0] + h * a.os[1];
        const UF_T *kh = (const UF_T *)a.k + b * a.ks[0] + hk * a.ks[1];
        const UF_T *vh = (const UF_T *)a.v + b * a.vs[0] + hk * a.vs[1];
        const int64_t row0 = (b * a.heads_q + h) * a.sq;
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
                const int in = i < a.sq && col < a.d;
                UF_X(qa)
                [4 * kt + p] = in ? UF_PAIR_AT(q + i * a.qs[2] + col) : UF_PAIR_OF(0.0f, 0.0f);
                UF_X(ga)
                [4 * kt + p] = in ? UF_PAIR_AT(g + i * a.os[2] + col) : UF_PAIR_OF(0.0f, 0.0f);
            }
            UF_UNROLL_REGS for (int r = 0; r < 2; ++r)
            {
                const int64_t i = rows + UF_FRAG_C_ROW(lane, 2 * r);
                const float l = i < a.sq ? a.lse_in[row0 + i] : INFINITY;
                UF_X(lse)[r] = l == -INFINITY ? INFINITY : l * 1.4426950408889634f;
                UF_X(delta)[r] = i < a.sq ? a.delta[row0 + i] : 0.0f;
            }
            UF_UNROLL_REGS for (int e = 0; e < 4 * UF_NDT; ++e) UF_X(acc)[e] = 0.0f;
        }
        if (jlo < jhi)
            UF_THREADS (t) {
                UF_ATT_BWD_NAME(uf_att_bwd_q_load)(kbuf, vbuf, kh, vh, &a, jlo, t, UF_NTHREADS);
            }
        for (int64_t j0 = jlo; j0 < jhi; j0 += UF_QBN) {
            const int64_t cur = (j0 - jlo) / UF_QBN % UF_QNBUF * UF_QBN * UF_ATT_LD;
            const UF_T *ktile = kbuf + cur, *vtile = vbuf + cur;
            UF_THREADS (t) {
                UF_UNROLL_REGS for (int e = 0; e < 4 * UF_NST; ++e) UF_X(s)[e] = UF_X(dp)[e] = 0.0f;
                UF_ASYNC_WAIT();
            }
            UF_BARRIER(); /* this tile is in; every group is done with the other buffer */
            if (UF_QNBUF == 2 && j0 + UF_QBN < jhi)
                UF_THREADS (t) {
                    const int64_t next = UF_QBN * UF_ATT_LD - cur;
                    UF_ATT_BWD_NAME(uf_att_bwd_q_load)
                    (kbuf + next, vbuf + next, kh, vh, &a, j0 + UF_QBN, t, UF_NTHREADS);
                }
            /* S = Q K^T and dP = dO V^T: K and V rows are B's columns. */
            /* k outer: consecutive products feed different accumulators, so
             * none waits for the one before. */
            UF_UNROLL_REGS for (int kt = 0; kt < UF_NKT; ++kt)
                UF_UNROLL_REGS for (int nt = 0; nt < UF_NST; nt += 2)
            {
                UF_THREADS (t) {
                    UF_FRAG_B2_ROWS(UF_X(bf), ktile + 8 * nt * UF_ATT_LD + 16 * kt, UF_ATT_LD,
                                    t % 32);
                }
                UF_MMA(s, 4 * nt, qa, 4 * kt, bf, 0);
                UF_MMA(s, 4 * nt + 4, qa, 4 * kt, bf, 2);
                UF_THREADS (t) {
                    UF_FRAG_B2_ROWS(UF_X(bf), vtile + 8 * nt * UF_ATT_LD + 16 * kt, UF_ATT_LD,
                                    t % 32);
                }
                UF_MMA(dp, 4 * nt, ga, 4 * kt, bf, 0);
                UF_MMA(dp, 4 * nt + 4, ga, 4 * kt, bf, 2);
            }
            const int open = uf_att_tile_open(&a, i0, i0 + UF_ATT_ROWS, j0, j0 + UF_QBN);
            UF_THREADS (t) {
                const int lane = t % 32;
                const int64_t rows = i0 + t / 32 * 16;
                UF_UNROLL_REGS for (int nt = 0; nt < UF_NST; ++nt)
                    UF_UNROLL_REGS for (int e = 0; e < 4; ++e)
                {
                    const int64_t i = rows + UF_FRAG_C_ROW(lane, e);
                    const int64_t j = j0 + 8 * nt + UF_FRAG_C_COL(lane, e);
                    const int seen = open || uf_att_visible(&a, i, j);
                    const float v = uf_att_logit2(&a, UF_X(s)[4 * nt + e], seen, b, h, i, j, UF_DT,
                                                  UF_ATT_FULL);
                    const float p = UF_EXP2F(v - UF_X(lse)[e / 2]);
                    float dpe = UF_X(dp)[4 * nt + e];
                    if (UF_ATT_FULL && a.threshold != 0 && seen) {
                        const int64_t index = (row0 + i) * a.sk + j;
                        dpe = uf_att_kept(&a, index) ? dpe * a.keep_scale : 0.0f;
                    }
                    const float ds = p * (dpe - UF_X(delta)[e / 2]);
                    if (UF_ATT_FULL && a.dbias_full != NULL && seen)
                        a.dbias_full[(row0 + i) * a.sk + j] = ds;
                    UF_X(s)[4 * nt + e] = ds;
                }
                UF_UNROLL_REGS for (int kk = 0; kk < UF_NPT; ++kk)
                    UF_UNROLL_REGS for (int p = 0; p < 4; ++p)
                {
                    const float *c = &UF_X(s)[4 * (2 * kk + p / 2) + 2 * (p % 2)];
                    UF_X(dsa)[4 * kk + p] = UF_PAIR_OF(c[0], c[1]);
                }
            }
            /* dq += dS K: K's rows are B's k. */
            UF_ATT_PRODUCT_COLS(acc, dsa, ktile, UF_NPT, UF_NDT, bf);
            if (UF_QNBUF == 1) {
                UF_BARRIER(); /* every group is done with the tile */
                if (j0 + UF_QBN < jhi)
                    UF_THREADS (t) {
                        UF_ATT_BWD_NAME(uf_att_bwd_q_load)
                        (kbuf, vbuf, kh, vh, &a, j0 + UF_QBN, t, UF_NTHREADS);
                    }
            }
        }
        UF_THREADS (t) {
            const int lane = t % 32;
            const int64_t rows = i0 + t / 32 * 16;
            UF_T *dq = (UF_T *)a.dq + b * a.qs[0] + h * a.qs[1];
            UF_UNROLL_REGS for (int r = 0; r < 2; ++r)
            {
                const int64_t i = rows + UF_FRAG_C_ROW(lane, 2 * r);
                if (i >= a.sq)
                    continue;
                UF_UNROLL_REGS for (int dt = 0; dt < UF_NDT; ++dt)
                {
                    const int col = 8 * dt + UF_FRAG_C_COL(lane, 2 * r);
                    if (col >= a.d)
                        continue;
                    UF_T *dst = dq + i * a.qs[2] + col;
                    dst[0] = UF_FROM_ACC(UF_X(acc)[4 * dt + 2 * r] * a.scale);
                    dst[1] = UF_FROM_ACC(UF_X(acc)[4 * dt + 2 * r + 1] * a.scale);
                }
            }
        }
    }
}

#undef UF_QKEYS
#undef UF_QBN
#undef UF_QNBUF
#undef UF_NKT
#undef UF_NDT
#undef UF_NST
#undef UF_NPT
