/*
 * The backward's register path (see softmax_backward.h), included once per
 * row share: UF_REG_N elements per thread, its functions named after
 * UF_REG_AS (the kernel uf_softmax_bwd_<as>, uf_softmax_bwd_<as>_load and
 * _write; both undefined at the end). The row's
 * `group` threads read y and dy once and keep them as the layer holds
 * waiting values (on GPUs as loaded, 16-bit data two to a register; see
 * UF_HOLDV in dtype_bind.h), reduce sum(y * dy) over the group, then write
 * dx. With UF_REG_SPAN 1 a row spans `nchunks` blocks, which add up their
 * chunks' sums through `partial` while they hold their chunks; as in the
 * forward (softmax_forward_reg.h), a.shares shares of a span block's chunk
 * may wait in shared memory (UF_REG_SHARED, UF_REG_BOUNDED). With
 * UF_REG_SHIFTED 1 a row's accesses are aligned to the tensor, not to the
 * row (as the forward's shifted rows): its first and last accesses hold
 * keys of the rows beside it, which add nothing to the sum and are not
 * written; 2 the same in a ragged tensor (UF_SOFTMAX_PAST_END).
 */
#define UF_REG_NV (UF_REG_N / UF_VEC) /* accesses per thread */
#define UF_REG_PASTE_(a, b) a##b
#define UF_REG_PASTE(a, b) UF_REG_PASTE_(a, b)
#define UF_REG_KERNEL UF_VNAME(UF_REG_PASTE(uf_softmax_bwd_, UF_REG_AS))
#define UF_REG_LOAD UF_VNAME(UF_REG_PASTE(UF_REG_PASTE(uf_softmax_bwd_, UF_REG_AS), _load))
#define UF_REG_WRITE UF_VNAME(UF_REG_PASTE(UF_REG_PASTE(uf_softmax_bwd_, UF_REG_AS), _write))

/* The products y * dy of one held access. */
#define UF_HELD_PRODUCTS(p, yh, dyh)                                                               \
    do {                                                                                           \
        UF_ACC yv_[UF_VEC], dyv_[UF_VEC];                                                          \
        UF_HELD_TO_ACC(yv_, (yh));                                                                 \
        UF_HELD_TO_ACC(dyv_, (dyh));                                                               \
        for (int e_ = 0; e_ < UF_VEC; ++e_)                                                        \
            (p)[e_] = yv_[e_] * dyv_[e_];                                                          \
    } while (0)

/* Whether the access from key j0 of a shifted row (UF_REG_SHIFTED) holds
 * keys of another row; whether key j is the row's (0 <= j < sk, one
 * unsigned comparison). */
#define UF_REG_STRADDLES(j0, sk) (UF_REG_SHIFTED && ((j0) < 0 || (j0) + UF_VEC > (sk)))
#define UF_REG_INSIDE(j, sk) ((uint64_t)(j) < (uint64_t)(sk))

/* Loads the thread's UF_REG_N elements of y and dy of its row from key
 * `first` on into y and dy, held as the layer holds waiting values (zeros
 * past the row or past the last row; a shifted row's keys of other rows
 * as loaded, left out of the sum); returns their sum of y * dy. Where
 * `keywise` (a constant; UF_SOFTMAX_PAST_END) the accesses across the
 * row's ends are read key by key. */
UF_FN UF_ACC UF_REG_LOAD(const uf_softmax_args *a, int64_t row, int keywise, int lane,
                         int64_t first, UF_HELD *y, UF_HELD *dy)
{
    const int group = a->group;
    const int64_t base = (row < a->rows ? row : 0) * a->sk;
    const UF_T *yr = (const UF_T *)a->x + base, *dyr = (const UF_T *)a->x2 + base;
    if (UF_VECTORISED_LOOPS) {
        /* Loaded as stored, converted in one loop over the thread's values,
         * the dot a tree of products: each step vector code (see the
         * forward's write step). */
        const int64_t j = first + UF_GROUP_ITEM(UF_REG_NV, 0, lane, group) * UF_VEC;
        UF_PREFETCH_AHEAD(&yr[j], sizeof(UF_T) * UF_REG_N, 0);
        UF_PREFETCH_AHEAD(&dyr[j], sizeof(UF_T) * UF_REG_N, 0);
        UF_T ys[UF_REG_N], dys[UF_REG_N];
        /* A share wholly inside the row in one copy each: copied access by
         * access, the wider loads of x86-64-v4 code that read the copies
         * back wait for the stores to retire (no store forwarding): fp32
         * rows of 64 keys took twice the time. */
        const int whole = row < a->rows && j + UF_REG_N <= a->sk;
        if (whole) {
            memcpy(ys, &yr[j], sizeof ys);
            memcpy(dys, &dyr[j], sizeof dys);
        } else
            for (int k = 0; k < UF_REG_NV; ++k) {
                const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
                if (row < a->rows && j0 < a->sk) {
                    UF_LOADVEC(&ys[k * UF_VEC], &yr[j0]);
                    UF_LOADVEC(&dys[k * UF_VEC], &dyr[j0]);
                } else {
                    for (int e = 0; e < UF_VEC; ++e)
                        ys[k * UF_VEC + e] = dys[k * UF_VEC + e] = UF_FROM_ACC((UF_ACC)0);
                }
            }
        UF_HOLD_RUN(y, ys, UF_REG_N);
        UF_HOLD_RUN(dy, dys, UF_REG_N);
        UF_ACC prod[UF_REG_N], dot;
        for (int k = 0; k < UF_REG_NV; ++k)
            UF_HELD_PRODUCTS(&prod[k * UF_VEC], &y[k * UF_HELD_N], &dy[k * UF_HELD_N]);
        UF_THREAD_SUM(dot, prod, UF_REG_N);
        return dot;
    }
    UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
    {
        const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
        UF_HELD *yk = &y[k * UF_HELD_N], *dyk = &dy[k * UF_HELD_N];
        if (keywise && UF_REG_STRADDLES(j0, a->sk) && j0 < a->sk) {
            /* This access may pass the tensor's end: key by key, each
             * index inside the row. */
            UF_SOFTMAX_HOLD_KEYS(yk, yr, j0, a->sk);
            UF_SOFTMAX_HOLD_KEYS(dyk, dyr, j0, a->sk);
        } else if (row < a->rows && j0 < a->sk) {
            UF_HOLDV(yk, yr, j0);
            UF_HOLDV(dyk, dyr, j0);
        } else {
            UF_UNROLL for (int e = 0; e < UF_HELD_N; ++e) yk[e] = dyk[e] = 0;
        }
    }
    UF_ACC acc = 0;
    UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
    {
        UF_ACC yv[UF_VEC], dyv[UF_VEC];
        UF_HELD_TO_ACC(yv, &y[k * UF_HELD_N]);
        UF_HELD_TO_ACC(dyv, &dy[k * UF_HELD_N]);
        const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
        if (UF_REG_STRADDLES(j0, a->sk)) {
            /* The product, not y, left out: another row's y * dy may be
             * inf * 0. */
            UF_UNROLL for (int e = 0; e < UF_VEC; ++e) acc +=
                UF_REG_INSIDE(j0 + e, a->sk) ? yv[e] * dyv[e] : (UF_ACC)0;
        } else {
            UF_UNROLL for (int e = 0; e < UF_VEC; ++e) acc += yv[e] * dyv[e];
        }
    }
    return acc;
}

/* Writes dx = scale * y * (dy - d) of the thread's held y and dy from key
 * `first` on (row < rows). */
UF_FN void UF_REG_WRITE(const uf_softmax_args *a, int64_t row, int lane, int64_t first, UF_ACC d,
                        const UF_HELD *y, const UF_HELD *dy)
{
    const int group = a->group;
    const UF_ACC scale = (UF_ACC)a->scale;
    UF_T *dx = (UF_T *)a->out + row * a->sk;
    if (UF_VECTORISED_LOOPS) {
        UF_ACC g[UF_REG_N];
        for (int k = 0; k < UF_REG_NV; ++k) {
            UF_ACC yv[UF_VEC], dyv[UF_VEC];
            UF_HELD_TO_ACC(yv, &y[k * UF_HELD_N]);
            UF_HELD_TO_ACC(dyv, &dy[k * UF_HELD_N]);
            for (int e = 0; e < UF_VEC; ++e)
                g[k * UF_VEC + e] = scale * yv[e] * (dyv[e] - d);
        }
        UF_T out[UF_REG_N];
        UF_RUN_FROM_ACC(out, g, UF_REG_N);
        UF_PREFETCH_AHEAD(&dx[first + UF_GROUP_ITEM(UF_REG_NV, 0, lane, group) * UF_VEC],
                          sizeof(UF_T) * UF_REG_N, 1);
        for (int k = 0; k < UF_REG_NV; ++k) {
            const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
            if (j0 >= a->sk)
                break;
            UF_STOREVEC(&dx[j0], &out[k * UF_VEC]);
        }
        return;
    }
    UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
    {
        const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
        if (j0 >= a->sk)
            break;
        UF_ACC yv[UF_VEC], dyv[UF_VEC];
        UF_HELD_TO_ACC(yv, &y[k * UF_HELD_N]);
        UF_HELD_TO_ACC(dyv, &dy[k * UF_HELD_N]);
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) yv[e] = scale * yv[e] * (dyv[e] - d);
        if (UF_REG_STRADDLES(j0, a->sk)) {
            /* The row's own keys only, one at a time. */
            UF_UNROLL for (int e = 0; e < UF_VEC; ++e) if (UF_REG_INSIDE(j0 + e, a->sk))
                dx[j0 + e] = UF_FROM_ACC(yv[e]);
        } else {
            UF_STOREV(dx, j0, yv);
        }
    }
}

/* Values a thread holds of each of y and dy for one share. */
#define UF_REG_HELD (UF_REG_NV * UF_HELD_N)
/* a.shares (at most UF_REG_SHARED) shares of the thread's y and dy wait in
 * `kept` before the one in registers (span path), held as in registers:
 * share j's value i of y at kept[((2 j) * UF_REG_HELD + i) * threads + t],
 * of dy at kept[((2 j + 1) * UF_REG_HELD + i) * threads + t]. */
#define UF_REG_KEPT(j, i, t) (((j)*UF_REG_HELD + (i)) * UF_NTHREADS + (t))

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
        UF_EXCLUSIVE_ARRAY(UF_HELD, y, UF_REG_HELD);
        UF_EXCLUSIVE_ARRAY(UF_HELD, dy, UF_REG_HELD);
        UF_EXCLUSIVE(UF_ACC, dot);
        UF_SHARED(UF_HELD, kept,
                  UF_REG_SHARED ? 2 * UF_REG_SHARED * UF_REG_HELD * UF_SOFTMAX_SPAN_THREADS : 1);
        UF_THREADS (t) {
            int64_t first;
            const int64_t row =
                uf_softmax_reg_row(&a, UF_REG_SPAN, 0, b, t, rows_per_block, &first);
            first += UF_SOFTMAX_SHIFT(UF_REG_SHIFTED, a, row);
            const int lane = t % group;
            const int shares = UF_REG_SHARED ? a.shares : 0;
            UF_ACC kept_dot = 0;
            for (int j = 0; j < shares; ++j) {
                kept_dot += UF_REG_LOAD(&a, row, 0, lane, first + (int64_t)j * group * UF_REG_N,
                                        UF_X(y), UF_X(dy));
                UF_UNROLL for (int i = 0; i < UF_REG_HELD; ++i)
                {
                    kept[UF_REG_KEPT(2 * j, i, t)] = UF_X(y)[i];
                    kept[UF_REG_KEPT(2 * j + 1, i, t)] = UF_X(dy)[i];
                }
            }
            /* In a ragged tensor (UF_REG_SHIFTED 2), in code of its own
             * (rows past the last read nothing). */
            const int64_t from = first + (int64_t)shares * group * UF_REG_N;
            if (UF_REG_SHIFTED == 2 && row < a.rows && UF_SOFTMAX_PAST_END(a, row))
                UF_X(dot) = UF_REG_LOAD(&a, row, 1, lane, from, UF_X(y), UF_X(dy));
            else
                UF_X(dot) = UF_REG_LOAD(&a, row, 0, lane, from, UF_X(y), UF_X(dy));
            if (shares)
                UF_X(dot) += kept_dot;
        }
        if (group <= UF_WARP)
            UF_WARP_SUM(dot, group);
        else
            UF_BLOCK_SUM(dot);
#if UF_REG_SPAN
        UF_SOFTMAX_SPAN_DOT(a, b, dot);
#endif
        UF_THREADS (t) {
            int64_t first;
            const int64_t row =
                uf_softmax_reg_row(&a, UF_REG_SPAN, 0, b, t, rows_per_block, &first);
            first += UF_SOFTMAX_SHIFT(UF_REG_SHIFTED, a, row);
            const int lane = t % group;
            if (row >= a.rows)
                continue;
            /* The share in registers first: its registers then take the
             * kept shares in turn. */
            const int shares = UF_REG_SHARED ? a.shares : 0;
            UF_REG_WRITE(&a, row, lane, first + (int64_t)shares * group * UF_REG_N, UF_X(dot),
                         UF_X(y), UF_X(dy));
            for (int j = 0; j < shares; ++j) {
                UF_UNROLL for (int i = 0; i < UF_REG_HELD; ++i)
                {
                    UF_X(y)[i] = kept[UF_REG_KEPT(2 * j, i, t)];
                    UF_X(dy)[i] = kept[UF_REG_KEPT(2 * j + 1, i, t)];
                }
                UF_REG_WRITE(&a, row, lane, first + (int64_t)j * group * UF_REG_N, UF_X(dot),
                             UF_X(y), UF_X(dy));
            }
        }
    }
}

#undef UF_REG_KEPT
#undef UF_REG_HELD
#undef UF_HELD_PRODUCTS
#undef UF_REG_STRADDLES
#undef UF_REG_INSIDE
#undef UF_REG_NV
#undef UF_REG_KERNEL
#undef UF_REG_LOAD
#undef UF_REG_WRITE
#undef UF_REG_PASTE
#undef UF_REG_PASTE_
#undef UF_REG_AS
#undef UF_REG_N
