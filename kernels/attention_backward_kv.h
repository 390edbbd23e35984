/*
 * Backward attention, dk and dv, one instantiation per (UF_DT, UF_ATT_DP);
 * included by attention_backward.h,
 * which binds the instantiation. A block owns UF_ATT_ROWS key rows of one
 * (batch, key/value head), 16 per fragment group, and walks the query tiles
 * (of every query head that reads this key/value head, in order) that can
 * see them, in the transposed view: S^T = K Q^T, P^T = exp(S^T - lse),
 * dv += P^T dO (dropout applied), dP^T = V dO^T, dS^T = P^T (dP^T - delta),
 * dk += scale * dS^T Q. Each block writes its own rows: no atomics, and
 * the grouped heads are summed in a fixed order. Exponents in log2 units,
 * as in the forward; UF_ATT_FULL = 0 leaves the bias, mask and dropout code
 * out (attention_backward.h).
 */

/* Query rows per shared-memory tile: at most half the key tile of
 * attention_bind.h (Q and dO tiles share the space K and V have there), at
 * least one fragment k; two buffers where they fit in 40 KiB, so that the
 * next tile's copies overlap this tile's products. */
#define UF_KBQ_ (UF_ATT_BN / 2 >= 16 ? UF_ATT_BN / 2 : 16)
#define UF_KQ UF_ATT_BWD_QUERIES(UF_ATT_DP, (int)sizeof(UF_T))
#define UF_ATT_BQ (UF_KQ < UF_KBQ_ ? UF_KQ : UF_KBQ_)
#define UF_KNBUF (4 * UF_ATT_BQ * UF_ATT_LD * (int)sizeof(UF_T) <= 40960 ? 2 : 1)
#define UF_NKT (UF_ATT_DP / 16)
#define UF_NDT (UF_ATT_DP / 8)
#define UF_NQT (UF_ATT_BQ / 8)  /* n-tiles of S^T */
#define UF_NPT (UF_ATT_BQ / 16) /* k-tiles of P^T dO and dS^T Q */

/* Starts the copies of query rows [i0, i0 + UF_ATT_BQ) of head h (Q and dO)
 * and stores their log-sum-exp (log2 units) and delta. */
UF_FN void UF_ATT_BWD_NAME(uf_att_bwd_kv_load)(UF_T *qdst, UF_T *gdst, float *lse_dst,
                                               float *delta_dst, const uf_attention_args *a,
                                               int64_t b, int64_t h, int64_t i0, int t, int n)
{
    const UF_T *q = (const UF_T *)a->q + b * a->qs[0] + h * a->qs[1];
    const UF_T *g = (const UF_T *)a->dout + b * a->os[0] + h * a->os[1];
    const int64_t row0 = (b * a->heads_q + h) * a->sq, avail = a->sq - i0;
    UF_ANAME(uf_att_load_tile)
    (qdst, q + i0 * a->qs[2], a->qs[2], UF_ATT_BQ, avail, a->d, a->vec, t, n);
    UF_ANAME(uf_att_load_tile)
    (gdst, g + i0 * a->os[2], a->os[2], UF_ATT_BQ, avail, a->d, a->vec, t, n);
    if (t < UF_ATT_BQ) {
        const float l = t < avail ? a->lse_in[row0 + i0 + t] : INFINITY;
        /* +inf: a row that sees nothing */
        lse_dst[t] = l == -INFINITY ? INFINITY : l * 1.4426950408889634f;
        delta_dst[t] = t < avail ? a->delta[row0 + i0 + t] : 0.0f;
    }
}

UF_KERNEL_RESIDENT(UF_ATT_BWD_NAME(uf_att_bwd_kv), uf_attention_args, a, UF_ATT_THREADS,
                   UF_ATT_BWD_RESIDENT(UF_ATT_DP, (int)sizeof(UF_T)))
{
    UF_BLOCKS (blk) {
        UF_SHARED(UF_T, qbuf, UF_KNBUF * UF_ATT_BQ * UF_ATT_LD);
        UF_SHARED(UF_T, gbuf, UF_KNBUF * UF_ATT_BQ * UF_ATT_LD); /* dO */
        UF_SHARED(float, lse_buf, UF_KNBUF *UF_ATT_BQ);          /* log2 units */
        UF_SHARED(float, delta_buf, UF_KNBUF *UF_ATT_BQ);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, ka, 4 * UF_NKT);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, va, 4 * UF_NKT);
        UF_EXCLUSIVE_ARRAY(float, dk, 4 * UF_NDT);
        UF_EXCLUSIVE_ARRAY(float, dv, 4 * UF_NDT);
        UF_EXCLUSIVE_ARRAY(float, st, 4 * UF_NQT);
        UF_EXCLUSIVE_ARRAY(float, dpt, 4 * UF_NQT);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, pa, 4 * UF_NPT);
        UF_EXCLUSIVE_ARRAY(UF_PAIR, bf, 4);
        const int64_t nkb = (a.sk + UF_ATT_ROWS - 1) / UF_ATT_ROWS;
        const int64_t kb = blk % nkb, bh = blk / nkb;
        const int64_t hk = bh % a.heads_kv, b = bh / a.heads_kv;
        const int64_t group = a.heads_q / a.heads_kv;
        const int64_t j0 = kb * UF_ATT_ROWS;
        const UF_T *kh = (const UF_T *)a.k + b * a.ks[0] + hk * a.ks[1];
        const UF_T *vh = (const UF_T *)a.v + b * a.vs[0] + hk * a.vs[1];
        int64_t ilo, ihi;
        uf_att_query_range(&a, j0, j0 + UF_ATT_ROWS < a.sk ? j0 + UF_ATT_ROWS : a.sk, &ilo, &ihi);

        UF_THREADS (t) {
            const int lane = t % 32;
            const int64_t keys = j0 + t / 32 * 16;
            UF_UNROLL_REGS for (int kt = 0; kt < UF_NKT; ++kt)
                UF_UNROLL_REGS for (int p = 0; p < 4; ++p)
            {
                const int64_t j = keys + UF_FRAG_A_ROW(lane, p);
                const int col = 16 * kt + UF_FRAG_A_COL(lane, p);
                const int in = j < a.sk && col < a.d;
                UF_X(ka)
                [4 * kt + p] = in ? UF_PAIR_AT(kh + j * a.ks[2] + col) : UF_PAIR_OF(0.0f, 0.0f);
                UF_X(va)
                [4 * kt + p] = in ? UF_PAIR_AT(vh + j * a.vs[2] + col) : UF_PAIR_OF(0.0f, 0.0f);
            }
            UF_UNROLL_REGS for (int e = 0; e < 4 * UF_NDT; ++e) UF_X(dk)[e] = UF_X(dv)[e] = 0.0f;
        }
        /* Step k: query tile k % ntiles of head hk * group + k / ntiles. */
        const int64_t ntiles = (ihi - ilo + UF_ATT_BQ - 1) / UF_ATT_BQ, steps = group * ntiles;
        if (steps > 0)
            UF_THREADS (t) {
                UF_ATT_BWD_NAME(uf_att_bwd_kv_load)
                (qbuf, gbuf, lse_buf, delta_buf, &a, b, hk * group, ilo, t, UF_NTHREADS);
            }
        for (int64_t k = 0; k < steps; ++k) {
            const int64_t h = hk * group + k / ntiles, i0 = ilo + k % ntiles * UF_ATT_BQ;
            const int64_t row0 = (b * a.heads_q + h) * a.sq;
            const int cur = (int)(k % UF_KNBUF);
            const UF_T *qtile = qbuf + cur * UF_ATT_BQ * UF_ATT_LD;
            const UF_T *gtile = gbuf + cur * UF_ATT_BQ * UF_ATT_LD;
            const float *lse_t = lse_buf + cur * UF_ATT_BQ;
            const float *delta_t = delta_buf + cur * UF_ATT_BQ;
            UF_THREADS (t) {
                UF_UNROLL_REGS for (int e = 0; e < 4 * UF_NQT; ++e) UF_X(st)[e] = UF_X(dpt)[e] =
                    0.0f;
                UF_ASYNC_WAIT();
            }
            UF_BARRIER(); /* this tile is in; every group is done with the other buffer */
            if (UF_KNBUF == 2 && k + 1 < steps)
                UF_THREADS (t) {
                    const int nb = 1 - cur;
                    UF_ATT_BWD_NAME(uf_att_bwd_kv_load)
                    (qbuf + nb * UF_ATT_BQ * UF_ATT_LD, gbuf + nb * UF_ATT_BQ * UF_ATT_LD,
                     lse_buf + nb * UF_ATT_BQ, delta_buf + nb * UF_ATT_BQ, &a, b,
                     hk * group + (k + 1) / ntiles, ilo + (k + 1) % ntiles * UF_ATT_BQ, t,
                     UF_NTHREADS);
                }
            /* S^T = K Q^T and dP^T = V dO^T: Q and dO rows are B's columns. */
            /* k outer: consecutive products feed different accumulators. */
            UF_UNROLL_REGS for (int kt = 0; kt < UF_NKT; ++kt)
                UF_UNROLL_REGS for (int nt = 0; nt < UF_NQT; nt += 2)
            {
                UF_THREADS (t) {
                    UF_FRAG_B2_ROWS(UF_X(bf), qtile + 8 * nt * UF_ATT_LD + 16 * kt, UF_ATT_LD,
                                    t % 32);
                }
                UF_MMA(st, 4 * nt, ka, 4 * kt, bf, 0);
                UF_MMA(st, 4 * nt + 4, ka, 4 * kt, bf, 2);
                UF_THREADS (t) {
                    UF_FRAG_B2_ROWS(UF_X(bf), gtile + 8 * nt * UF_ATT_LD + 16 * kt, UF_ATT_LD,
                                    t % 32);
                }
                UF_MMA(dpt, 4 * nt, va, 4 * kt, bf, 0);
                UF_MMA(dpt, 4 * nt + 4, va, 4 * kt, bf, 2);
            }
            const int open = uf_att_tile_open(&a, i0, i0 + UF_ATT_BQ, j0, j0 + UF_ATT_ROWS);
            UF_THREADS (t) {
                const int lane = t % 32;
                const int64_t keys = j0 + t / 32 * 16;
                UF_UNROLL_REGS for (int nt = 0; nt < UF_NQT; ++nt)
                    UF_UNROLL_REGS for (int e = 0; e < 4; ++e)
                {
                    const int iq = 8 * nt + UF_FRAG_C_COL(lane, e);
                    const int64_t i = i0 + iq, j = keys + UF_FRAG_C_ROW(lane, e);
                    const int seen = open || uf_att_visible(&a, i, j);
                    const float v = uf_att_logit2(&a, UF_X(st)[4 * nt + e], seen, b, h, i, j, UF_DT,
                                                  UF_ATT_FULL);
                    const float p = UF_EXP2F(v - lse_t[iq]);
                    float keep = 1.0f;
                    if (UF_ATT_FULL && a.threshold != 0 && seen)
                        keep = uf_att_kept(&a, (row0 + i) * a.sk + j) ? a.keep_scale : 0.0f;
                    UF_X(st)[4 * nt + e] = p * keep; /* P^T after dropout, for dv */
                    UF_X(dpt)[4 * nt + e] = p * (UF_X(dpt)[4 * nt + e] * keep - delta_t[iq]);
                }
                UF_UNROLL_REGS for (int kk = 0; kk < UF_NPT; ++kk)
                    UF_UNROLL_REGS for (int p = 0; p < 4; ++p)
                {
                    const float *c = &UF_X(st)[4 * (2 * kk + p / 2) + 2 * (p % 2)];
                    UF_X(pa)[4 * kk + p] = UF_PAIR_OF(c[0], c[1]);
                }
            }
            /* dv += P^T dO, then dk += dS^T Q: dO and Q rows are B's k. */
            UF_ATT_PRODUCT_COLS(dv, pa, gtile, UF_NPT, UF_NDT, bf);
            UF_THREADS (t) {
                UF_UNROLL_REGS for (int kk = 0; kk < UF_NPT; ++kk)
                    UF_UNROLL_REGS for (int p = 0; p < 4; ++p)
                {
                    const float *c = &UF_X(dpt)[4 * (2 * kk + p / 2) + 2 * (p % 2)];
                    UF_X(pa)[4 * kk + p] = UF_PAIR_OF(c[0], c[1]);
                }
            }
            UF_ATT_PRODUCT_COLS(dk, pa, qtile, UF_NPT, UF_NDT, bf);
            if (UF_KNBUF == 1) {
                UF_BARRIER(); /* every group is done with the tile */
                if (k + 1 < steps)
                    UF_THREADS (t) {
                        UF_ATT_BWD_NAME(uf_att_bwd_kv_load)
                        (qbuf, gbuf, lse_buf, delta_buf, &a, b, hk * group + (k + 1) / ntiles,
                         ilo + (k + 1) % ntiles * UF_ATT_BQ, t, UF_NTHREADS);
                    }
            }
        }
        UF_THREADS (t) {
            const int lane = t % 32;
            const int64_t keys = j0 + t / 32 * 16;
            UF_T *dkh = (UF_T *)a.dk + b * a.ks[0] + hk * a.ks[1];
            UF_T *dvh = (UF_T *)a.dv + b * a.vs[0] + hk * a.vs[1];
            UF_UNROLL_REGS for (int r = 0; r < 2; ++r)
            {
                const int64_t j = keys + UF_FRAG_C_ROW(lane, 2 * r);
                if (j >= a.sk)
                    continue;
                UF_UNROLL_REGS for (int dt = 0; dt < UF_NDT; ++dt)
                {
                    const int col = 8 * dt + UF_FRAG_C_COL(lane, 2 * r);
                    if (col >= a.d)
                        continue;
                    UF_T *k_out = dkh + j * a.ks[2] + col;
                    UF_T *v_out = dvh + j * a.vs[2] + col;
                    k_out[0] = UF_FROM_ACC(UF_X(dk)[4 * dt + 2 * r] * a.scale);
                    k_out[1] = UF_FROM_ACC(UF_X(dk)[4 * dt + 2 * r + 1] * a.scale);
                    v_out[0] = UF_FROM_ACC(UF_X(dv)[4 * dt + 2 * r]);
                    v_out[1] = UF_FROM_ACC(UF_X(dv)[4 * dt + 2 * r + 1]);
                }
            }
        }
    }
}

#undef UF_ATT_BQ
#undef UF_KBQ_
#undef UF_KQ
#undef UF_KNBUF
#undef UF_NKT
#undef UF_NDT
#undef UF_NQT
#undef UF_NPT
