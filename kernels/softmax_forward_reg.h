/*
 * The forward's register path (see softmax_forward.h), included once per
 * row share: UF_REG_N elements per thread, kernel UF_REG_KERNEL. The row's
 * `group` threads read it once into registers, reduce its maximum and sum
 * over the group, and write it once. With UF_REG_SPAN 1 a row spans
 * `nchunks` blocks (the span path): each block reduces its chunk, the
 * blocks of a row exchange their (max, sum) through `partial` while they
 * all hold their chunks, and each writes its chunk rescaled to the row's.
 */
#define UF_REG_NV (UF_REG_N / UF_VEC) /* accesses per thread */

/* The thread's UF_REG_N logits of its row, every load issued before any
 * arithmetic so that they are in flight together (a test per access would
 * keep one at a time). An access past the row's end reads the row's first
 * keys instead; it is past last_key, so its logits come out -inf. */
UF_FN void UF_REG_LOGITS(int kind, const UF_VNAME(uf_softmax_row) * r, int64_t sk, int group,
                         int lane, int64_t first, UF_ACC *v)
{
    UF_VNAME(uf_softmax_held) h[UF_REG_NV];
    /* Scalar accesses (UF_VEC 1) go one at a time: UF_REG_N clamped
     * addresses would not fit in registers beside the held values. */
    const int at_once = UF_VEC > 1;
    UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
    {
        const int64_t j0 = first + ((int64_t)k * group + lane) * UF_VEC;
        if (at_once) {
            UF_VNAME(uf_softmax_hold)(r, kind, j0 < sk ? j0 : 0, &h[k]);
        } else if (j0 < sk) {
            UF_VNAME(uf_softmax_hold)(r, kind, j0, &h[k]);
            UF_VNAME(uf_softmax_logits)(r, kind, j0, &h[k], &v[k * UF_VEC]);
        } else {
            UF_UNROLL for (int e = 0; e < UF_VEC; ++e) v[k * UF_VEC + e] = (UF_ACC)-INFINITY;
        }
    }
    if (at_once)
        UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
        {
            const int64_t j0 = first + ((int64_t)k * group + lane) * UF_VEC;
            UF_VNAME(uf_softmax_logits)(r, kind, j0, &h[k], &v[k * UF_VEC]);
        }
}

UF_KERNEL(UF_REG_KERNEL, uf_softmax_args, a)
{
    const int group = a.group;
    const int rows_per_block = UF_NTHREADS / group;
    UF_BLOCKS (b) {
        UF_EXCLUSIVE_ARRAY(UF_ACC, v, UF_REG_N);
        UF_EXCLUSIVE(UF_ACC, m);
        UF_EXCLUSIVE(UF_ACC, s);
        UF_EXCLUSIVE(UF_ACC, own); /* UF_SOFTMAX_BLOCK_PAIRS */
        UF_THREADS (t) {
            int64_t first;
            const int64_t row = uf_softmax_reg_row(&a, UF_REG_SPAN, b, t, rows_per_block, &first);
            const int lane = t % group;
            const UF_VNAME(uf_softmax_row) r =
                UF_VNAME(uf_softmax_row_at)(&a, row < a.rows ? row : 0);
            UF_SOFTMAX_BY_KIND(a.mask_kind, UF_REG_LOGITS, &r, a.sk, group, lane, first, UF_X(v))
            UF_ACC mt = (UF_ACC)-INFINITY;
            UF_UNROLL for (int i = 0; i < UF_REG_N; ++i) mt = UF_X(v)[i] > mt ? UF_X(v)[i] : mt;
            UF_X(m) = mt;
        }
        /* A row of a warp or less (and a 16-bit row) reduces its maximum
         * first and takes its exps against it; a longer row takes each
         * thread's exps against the thread's own maximum and reduces
         * maximum and sum together (UF_SOFTMAX_PAIRS). */
        if (group <= UF_WARP)
            UF_WARP_MAX(m, group);
        else if (!UF_SOFTMAX_PAIRS)
            UF_BLOCK_MAX(m);
        UF_THREADS (t) {
            const UF_ACC ref = UF_MAX_REF(UF_X(m));
            UF_ACC st = 0;
            UF_UNROLL for (int i = 0; i < UF_REG_N; ++i)
            {
                UF_X(v)[i] = UF_EXP_ACC(UF_X(v)[i] - ref);
                st += UF_X(v)[i];
            }
            UF_X(s) = st;
        }
        if (group <= UF_WARP) {
            UF_WARP_SUM(s, group);
        } else if (!UF_SOFTMAX_PAIRS) {
            UF_BLOCK_SUM(s);
        } else {
            UF_SOFTMAX_BLOCK_PAIRS(m, s, own);
        }
#if UF_REG_SPAN
        UF_SOFTMAX_SPAN_EXCHANGE(a, b, m, s);
#endif
        UF_THREADS (t) {
            int64_t first;
            const int64_t row = uf_softmax_reg_row(&a, UF_REG_SPAN, b, t, rows_per_block, &first);
            const int lane = t % group;
            if (row >= a.rows)
                continue;
            const UF_ACC inv = (group <= UF_WARP || !UF_SOFTMAX_PAIRS ? (UF_ACC)1 : UF_X(own)) *
                               UF_VNAME(uf_softmax_inverse)(UF_X(m), UF_X(s));
            UF_T *y = (UF_T *)a.out + row * a.sk;
            UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
            {
                const int64_t j0 = first + ((int64_t)k * group + lane) * UF_VEC;
                if (j0 >= a.sk)
                    break;
                UF_ACC *p = &UF_X(v)[k * UF_VEC];
                UF_UNROLL for (int e = 0; e < UF_VEC; ++e) p[e] *= inv;
                UF_STOREV(y, j0, p);
            }
        }
    }
}

#undef UF_REG_NV
