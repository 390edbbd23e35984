/*
 * The forward's register path (see softmax_forward.h), included once per
 * row share: UF_REG_N elements per thread, its functions named after
 * UF_REG_AS (the kernel uf_softmax_fwd_<as>, uf_softmax_<as>_logits,
 * _share, _write; both undefined at the end). The row's
 * `group` threads read it once into registers, reduce its maximum and sum
 * over the group, and write it once. With UF_REG_SPAN 1 a row spans
 * `nchunks` blocks (the span path): each block reduces its chunk, the
 * blocks of a row exchange their (max, sum) through `partial` while they
 * all hold their chunks, and each writes its chunk rescaled to the row's.
 * A span block's chunk is a.shares + 1 shares of UF_REG_N elements a
 * thread: the first a.shares (at most UF_REG_SHARED) wait in shared memory
 * as logits, then as exps, while the last is in registers (none off the
 * span path). UF_REG_BOUNDED 1 compiles the kernel for span blocks only
 * (UF_SOFTMAX_SPAN_THREADS threads, UF_SOFTMAX_SPAN_BLOCKS a
 * multiprocessor).
 */
#define UF_REG_NV (UF_REG_N / UF_VEC) /* accesses per thread */
#define UF_REG_PASTE_(a, b) a##b
#define UF_REG_PASTE(a, b) UF_REG_PASTE_(a, b)
#define UF_REG_KERNEL UF_VNAME(UF_REG_PASTE(uf_softmax_fwd_, UF_REG_AS))
#define UF_REG_LOGITS UF_VNAME(UF_REG_PASTE(UF_REG_PASTE(uf_softmax_, UF_REG_AS), _logits))
#define UF_REG_SHARE UF_VNAME(UF_REG_PASTE(UF_REG_PASTE(uf_softmax_, UF_REG_AS), _share))
#define UF_REG_WRITE UF_VNAME(UF_REG_PASTE(UF_REG_PASTE(uf_softmax_, UF_REG_AS), _write))
#if UF_VECTORISED_LOOPS && UF_GROUP_ITEMS_INTERLEAVED
#error "UF_REG_LOGITS's vectorised loops take a thread's keys as consecutive"
#endif
/* whether blocks take rows in order_rows' order (softmax_args.h) */
#define UF_REG_ORDER UF_SOFTMAX_ORDER_ROWS((int)sizeof(UF_T))

/* The thread's UF_REG_N logits of its row, every load issued before any
 * arithmetic so that they are in flight together (a test per access would
 * keep one at a time). An access past key `last` (the row's end, or
 * last_key where the caller skips the keys the causal rule hides) reads the
 * row's first keys instead, which the row's first access brings into
 * cache; its logits come out -inf as long as last >= last_key. */
UF_FN void UF_REG_LOGITS(int kind, int keywise, const UF_VNAME(uf_softmax_row) * r, int64_t last,
                         int group, int lane, int64_t first, UF_ACC *v, int *shown)
{
    *shown = UF_REG_N;
    if (UF_VECTORISED_LOOPS && UF_VEC > 1) {
        /* x as stored, converted in one run over the thread's keys (a
         * vector loop, or F16C), then the mask; the thread's share a few
         * turns later asked for meanwhile (UF_PREFETCH_AHEAD). Each pass
         * over the share in memory stores it again: the loops stored each
         * key seven times where three do now (a copy in, the scaling, the
         * product with the sum's inverse and a copy out went), a fifth
         * less time for the 16-bit forward (2-core machine). Where loops
         * vectorise a thread's keys are consecutive (thread_work.h), so
         * the keys the row shows are its first n: a test per access, of
         * 64-bit key indices, took a quarter of the 16-bit forward's time
         * (perf, 2-core machine). */
        const int64_t j = first + UF_GROUP_ITEM(UF_REG_NV, 0, lane, group) * UF_VEC;
        UF_PREFETCH_AHEAD(&r->x[j], sizeof(UF_T) * UF_REG_N, 0);
        /* A share wholly inside the row is converted where it lies; one at
         * the row's end is gathered first (see the backward's
         * UF_REG_LOAD). One conversion after both: with a conversion in
         * each branch, gcc 12's x86-64-v4 copy of the 8-byte f16 kernel
         * converted the gathered keys wrongly (test_softmax_forward, rows
         * of 300 keys). */
        const int whole = j + UF_REG_N - 1 <= last;
        UF_T x[UF_REG_N];
        const UF_T *keys = &r->x[j];
        if (!whole) {
            for (int k = 0; k < UF_REG_NV; ++k) {
                const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
                UF_LOADVEC(&x[k * UF_VEC], &r->x[j0 <= last ? j0 : 0]);
            }
            keys = x;
        }
        /* The scale in the conversion's pass where no mask follows; a
         * mask's pass takes it in one multiply-add with the mask (applied
         * in the conversion, bf16 rows of 4096 keys with their mask took
         * a tenth more time). */
        const UF_ACC later = kind == UF_MASK_NONE ? (UF_ACC)1 : r->scale;
        UF_RUN_TO_ACC_TIMES(v, keys, UF_REG_N, kind == UF_MASK_NONE ? r->scale : (UF_ACC)1);
        UF_ACC converted[UF_REG_N];
        const UF_ACC *same = NULL;
        if (kind == UF_MASK_ADD_SAME) {
            /* A mask of x's type: in fp32 and f64 copied into x's array,
             * which the conversion above has done with (read where it
             * lies, slower); a 16-bit one converted in one run too, from
             * where it lies (converted key by key in the mask's pass, it
             * took the masked forward a third more time than the unmasked
             * one in cache, 2-core machine). A share at the row's end is
             * gathered into x's array first. */
            const int as_is = sizeof(UF_T) == sizeof(UF_ACC);
            const UF_T *mask = (const UF_T *)r->mask;
            UF_PREFETCH_AHEAD(&mask[j], sizeof(UF_T) * UF_REG_N, 0);
            const UF_T *keys_m = &mask[j];
            if (!whole) {
                for (int k = 0; k < UF_REG_NV; ++k) {
                    const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
                    UF_LOADVEC(&x[k * UF_VEC], &mask[j0 <= last ? j0 : 0]);
                }
                keys_m = x;
            } else if (as_is) {
                memcpy(x, keys_m, sizeof x);
                keys_m = x;
            }
            if (as_is) {
                same = (const UF_ACC *)(const void *)keys_m;
            } else {
                UF_RUN_TO_ACC(converted, keys_m, UF_REG_N);
                same = converted;
            }
        }
        const int64_t ahead = r->last_key - j + 1;
        const int n = ahead <= 0 ? 0 : ahead < UF_REG_N ? (int)ahead : UF_REG_N;
        UF_VNAME(uf_softmax_mask_run)(r, kind, j, same, n, UF_REG_N, later, v);
        *shown = n;
        return;
    }
    UF_VNAME(uf_softmax_held) h[UF_REG_NV];
    /* Scalar accesses (UF_VEC 1), and accesses read key by key
     * (`keywise`), go one at a time: UF_REG_N clamped addresses would not
     * fit in registers beside the held values. A shifted row's
     * (UF_REG_SHIFTED) first access starts -first keys before the row, and
     * its clamped accesses read that one. */
    const int at_once = UF_VEC > 1 && !keywise;
    const int64_t home = UF_REG_SHIFTED ? first : 0;
    UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
    {
        const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
        if (at_once) {
            UF_VNAME(uf_softmax_hold)(r, kind, j0 <= last ? j0 : home, &h[k], UF_REG_SHIFTED, 0);
        } else if (j0 <= last) {
            UF_VNAME(uf_softmax_hold)(r, kind, j0, &h[k], UF_REG_SHIFTED, keywise);
            UF_VNAME(uf_softmax_logits)(r, kind, j0, &h[k], &v[k * UF_VEC]);
        } else {
            UF_UNROLL for (int e = 0; e < UF_VEC; ++e) v[k * UF_VEC + e] = (UF_ACC)-INFINITY;
        }
    }
    if (at_once)
        UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
        {
            const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
            UF_VNAME(uf_softmax_logits)(r, kind, j0, &h[k], &v[k * UF_VEC]);
        }
    /* The previous row's keys in a shifted row's first access (item 0:
     * lane 0's first access in every layout). */
    if (UF_REG_SHIFTED && first < 0 && lane == 0)
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) v[e] = e < -first ? (UF_ACC)-INFINITY : v[e];
}

/* The thread's UF_REG_N logits of its row from key `first` on (see
 * UF_REG_LOGITS); -inf past the last row, where it loads nothing: with y
 * over x another block may be writing any row (ThreadSanitizer saw such a
 * thread read row 0 while row 0's block wrote it). Returns 0 where every
 * logit is -inf by the causal rule or lies past the row or the rows (the
 * CPU's loops count this), else a positive count. */
UF_FN int UF_REG_SHARE(const uf_softmax_args *a, int64_t row, int lane, int64_t first, UF_ACC *v)
{
    int shown = 0;
    if (row < a->rows) {
        const UF_VNAME(uf_softmax_row) r = UF_VNAME(uf_softmax_row_at)(a, row);
        /* In a ragged tensor (UF_REG_SHIFTED 2) the rows whose last access
         * would pass the tensor's end read their keys one by one, in code
         * of its own. */
        const int keywise = UF_REG_SHIFTED == 2 && UF_SOFTMAX_PAST_END(*a, row);
        /* A causal row without a mask reads only the keys it shows, in a
         * copy of its own: the bound in a register cost the 16-bit wide
         * kernel spills and 3 points of copy bandwidth on every other row.
         * Scalar accesses keep one copy (a second spilled 1.3 KiB). */
        if (UF_VEC > 1 && a->causal && a->mask_kind == UF_MASK_NONE) {
            if (keywise)
                UF_REG_LOGITS(UF_MASK_NONE, 1, &r, r.last_key, a->group, lane, first, v, &shown);
            else
                UF_REG_LOGITS(UF_MASK_NONE, 0, &r, r.last_key, a->group, lane, first, v, &shown);
        } else if (keywise) {
            UF_SOFTMAX_BY_KIND(a->mask_kind, UF_REG_LOGITS, 1, &r, a->sk - 1, a->group, lane, first,
                               v, &shown)
        } else {
            UF_SOFTMAX_BY_KIND(a->mask_kind, UF_REG_LOGITS, 0, &r, a->sk - 1, a->group, lane, first,
                               v, &shown)
        }
    } else {
        UF_UNROLL for (int i = 0; i < UF_REG_N; ++i) v[i] = (UF_ACC)-INFINITY;
    }
    return shown;
}

/* Writes the thread's UF_REG_N values v (exps) times inv as y from key
 * `first` on. */
UF_FN void UF_REG_WRITE(const uf_softmax_args *a, UF_T *y, int lane, int64_t first, UF_ACC inv,
                        UF_ACC *v)
{
    const int group = a->group;
    if (UF_VECTORISED_LOOPS) {
        /* Scaled and converted to the stored type in one run over the
         * thread's values (converted access by access, a 16-bit conversion
         * stays scalar code: 2-core machine, S = 2048, bf16 forward 16 ->
         * 33% of copy), into y itself where the share is inside the row;
         * a share at the row's end is stored access by access. */
        const int64_t js = first + UF_GROUP_ITEM(UF_REG_NV, 0, lane, group) * UF_VEC;
        UF_PREFETCH_AHEAD(&y[js], sizeof(UF_T) * UF_REG_N, 1);
        if (js + UF_REG_N <= a->sk) {
            UF_RUN_FROM_ACC_TIMES(&y[js], v, UF_REG_N, inv);
            return;
        }
        UF_T out[UF_REG_N];
        UF_RUN_FROM_ACC_TIMES(out, v, UF_REG_N, inv);
        for (int k = 0; k < UF_REG_NV; ++k) {
            const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
            if (j0 >= a->sk)
                break;
            UF_STOREVEC(&y[j0], &out[k * UF_VEC]);
        }
    } else {
        UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
        {
            const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
            if (j0 >= a->sk)
                break;
            UF_ACC *p = &v[k * UF_VEC];
            UF_UNROLL for (int e = 0; e < UF_VEC; ++e) p[e] *= inv;
            if (UF_REG_SHIFTED && (j0 < 0 || j0 + UF_VEC > a->sk)) {
                /* A shifted row's access across its start or end: its
                 * own keys only, one at a time. */
                UF_UNROLL for (int e = 0; e < UF_VEC; ++e) if (j0 + e >= 0 && j0 + e < a->sk)
                    y[j0 + e] = UF_FROM_ACC(p[e]);
            } else {
                UF_STOREV(y, j0, p);
            }
        }
    }
}

/* a.shares (at most UF_REG_SHARED) shares of the thread's part of the
 * chunk wait in `kept` before the one in registers (span path): share j at
 * kept[(j * UF_REG_N + i) * threads + t], where a warp's accesses fall on
 * distinct banks. */
#define UF_REG_KEPT(j, i, t) (((j)*UF_REG_N + (i)) * UF_NTHREADS + (t))

#if UF_REG_BOUNDED
UF_KERNEL_RESIDENT(UF_REG_KERNEL, uf_softmax_args, a, UF_SOFTMAX_SPAN_THREADS,
                   UF_SOFTMAX_SPAN_BLOCKS((int)sizeof(UF_T)))
#else
UF_KERNEL(UF_REG_KERNEL, uf_softmax_args, a)
#endif
{
    const int group = a.group;
    const int rows_per_block = UF_NTHREADS / group;
    UF_BLOCKS (b) {
        UF_EXCLUSIVE_ARRAY(UF_ACC, v, UF_REG_N);
        UF_EXCLUSIVE(UF_ACC, m);
        UF_EXCLUSIVE(UF_ACC, s);
        UF_EXCLUSIVE(UF_ACC, own); /* UF_SOFTMAX_BLOCK_PAIRS */
        UF_EXCLUSIVE(int, hidden); /* the share in registers all -inf (CPU loops) */
        UF_SHARED(UF_ACC, kept,
                  UF_REG_SHARED ? UF_REG_SHARED * UF_REG_N * UF_SOFTMAX_SPAN_THREADS : 1);
        UF_THREADS (t) {
            int64_t first;
            const int64_t row =
                uf_softmax_reg_row(&a, UF_REG_SPAN, UF_REG_ORDER, b, t, rows_per_block, &first);
            first += UF_SOFTMAX_SHIFT(UF_REG_SHIFTED, a, row);
            const int lane = t % group;
            const int shares = UF_REG_SHARED ? a.shares : 0;
            UF_ACC kept_max = (UF_ACC)-INFINITY;
            for (int j = 0; j < shares; ++j) {
                UF_REG_SHARE(&a, row, lane, first + (int64_t)j * group * UF_REG_N, UF_X(v));
                UF_ACC share_max;
                UF_THREAD_MAX(share_max, UF_X(v), UF_REG_N);
                kept_max = share_max > kept_max ? share_max : kept_max;
                UF_UNROLL for (int i = 0; i < UF_REG_N; ++i) kept[UF_REG_KEPT(j, i, t)] =
                    UF_X(v)[i];
            }
            const int shown =
                UF_REG_SHARE(&a, row, lane, first + (int64_t)shares * group * UF_REG_N, UF_X(v));
            /* Where loops vectorise, a share the causal rule hides whole
             * (half of a long causal row's) takes no maximum and no exps:
             * its exps are 0 whatever the row's maximum. */
            UF_X(hidden) = UF_VECTORISED_LOOPS && shown == 0;
            if (UF_X(hidden))
                UF_X(m) = (UF_ACC)-INFINITY;
            else
                UF_THREAD_MAX(UF_X(m), UF_X(v), UF_REG_N);
            if (shares && kept_max > UF_X(m))
                UF_X(m) = kept_max;
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
            if (UF_X(hidden)) {
                for (int i = 0; i < UF_REG_N; ++i)
                    UF_X(v)[i] = (UF_ACC)0;
                UF_X(s) = (UF_ACC)0;
            } else {
                UF_UNROLL for (int i = 0; i < UF_REG_N; ++i) UF_X(v)[i] =
                    UF_EXP_ACC(UF_X(v)[i] - ref);
                UF_THREAD_SUM(UF_X(s), UF_X(v), UF_REG_N);
            }
            for (int j = 0; j < (UF_REG_SHARED ? a.shares : 0); ++j)
                UF_UNROLL for (int i = 0; i < UF_REG_N; ++i)
                {
                    const UF_ACC e = UF_EXP_ACC(kept[UF_REG_KEPT(j, i, t)] - ref);
                    kept[UF_REG_KEPT(j, i, t)] = e;
                    UF_X(s) += e;
                }
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
            const int64_t row =
                uf_softmax_reg_row(&a, UF_REG_SPAN, UF_REG_ORDER, b, t, rows_per_block, &first);
            first += UF_SOFTMAX_SHIFT(UF_REG_SHIFTED, a, row);
            const int lane = t % group;
            if (row >= a.rows)
                continue;
            const UF_ACC inv = (group <= UF_WARP || !UF_SOFTMAX_PAIRS ? (UF_ACC)1 : UF_X(own)) *
                               UF_VNAME(uf_softmax_inverse)(UF_X(m), UF_X(s));
            UF_T *y = (UF_T *)a.out + row * a.sk;
            /* The share in registers first: its registers then take the
             * kept shares in turn. */
            const int shares = UF_REG_SHARED ? a.shares : 0;
            UF_REG_WRITE(&a, y, lane, first + (int64_t)shares * group * UF_REG_N, inv, UF_X(v));
            for (int j = 0; j < shares; ++j) {
                UF_UNROLL for (int i = 0; i < UF_REG_N; ++i) UF_X(v)[i] =
                    kept[UF_REG_KEPT(j, i, t)];
                UF_REG_WRITE(&a, y, lane, first + (int64_t)j * group * UF_REG_N, inv, UF_X(v));
            }
        }
    }
}

#undef UF_REG_KEPT
#undef UF_REG_NV
#undef UF_REG_ORDER
#undef UF_REG_KERNEL
#undef UF_REG_LOGITS
#undef UF_REG_SHARE
#undef UF_REG_WRITE
#undef UF_REG_PASTE
#undef UF_REG_PASTE_
#undef UF_REG_AS
#undef UF_REG_N
