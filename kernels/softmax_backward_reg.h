/*
 * The backward's register path (see softmax_backward.h), included once per
 * row share: UF_REG_N elements per thread, kernel UF_REG_KERNEL. The row's
 * `group` threads read y and dy once and keep them as the layer holds
 * waiting values (on GPUs as loaded, 16-bit data two to a register; see
 * UF_HOLDV in dtype_bind.h), reduce sum(y * dy) over the group, then write
 * dx. With UF_REG_SPAN 1 a row spans `nchunks` blocks, which add up their
 * chunks' sums through `partial` while they hold their chunks.
 */
#define UF_REG_NV (UF_REG_N / UF_VEC) /* accesses per thread */

/* The products y * dy of one held access. */
#define UF_HELD_PRODUCTS(p, yh, dyh)                                                               \
    do {                                                                                           \
        UF_ACC yv_[UF_VEC], dyv_[UF_VEC];                                                          \
        UF_HELD_TO_ACC(yv_, (yh));                                                                 \
        UF_HELD_TO_ACC(dyv_, (dyh));                                                               \
        for (int e_ = 0; e_ < UF_VEC; ++e_)                                                        \
            (p)[e_] = yv_[e_] * dyv_[e_];                                                          \
    } while (0)

UF_KERNEL(UF_REG_KERNEL, uf_softmax_args, a)
{
    const int group = a.group;
    const int rows_per_block = UF_NTHREADS / group;
    UF_BLOCKS (b) {
        UF_EXCLUSIVE_ARRAY(UF_HELD, y, UF_REG_NV * UF_HELD_N);
        UF_EXCLUSIVE_ARRAY(UF_HELD, dy, UF_REG_NV * UF_HELD_N);
        UF_EXCLUSIVE(UF_ACC, dot);
        UF_THREADS (t) {
            int64_t first;
            const int64_t row = uf_softmax_reg_row(&a, UF_REG_SPAN, b, t, rows_per_block, &first);
            const int lane = t % group;
            const int64_t base = (row < a.rows ? row : 0) * a.sk;
            const UF_T *yr = (const UF_T *)a.x + base, *dyr = (const UF_T *)a.x2 + base;
            if (UF_VECTORISED_LOOPS) {
                /* Loaded as stored, converted in one loop over the
                 * thread's values, the dot a tree of products: each step
                 * vector code (see the forward's write step). */
                UF_T ys[UF_REG_N], dys[UF_REG_N];
                for (int k = 0; k < UF_REG_NV; ++k) {
                    const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
                    if (row < a.rows && j0 < a.sk) {
                        UF_SOFTMAX_ACCESS(UF_LOAD16, &ys[k * UF_VEC], &yr[j0]);
                        UF_SOFTMAX_ACCESS(UF_LOAD16, &dys[k * UF_VEC], &dyr[j0]);
                    } else {
                        for (int e = 0; e < UF_VEC; ++e)
                            ys[k * UF_VEC + e] = dys[k * UF_VEC + e] = UF_FROM_ACC((UF_ACC)0);
                    }
                }
                UF_HOLD_RUN(UF_X(y), ys, UF_REG_N);
                UF_HOLD_RUN(UF_X(dy), dys, UF_REG_N);
                UF_ACC prod[UF_REG_N];
                for (int k = 0; k < UF_REG_NV; ++k)
                    UF_HELD_PRODUCTS(&prod[k * UF_VEC], &UF_X(y)[k * UF_HELD_N],
                                     &UF_X(dy)[k * UF_HELD_N]);
                UF_THREAD_SUM(UF_X(dot), prod, UF_REG_N);
                continue;
            }
            UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
            {
                const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
                UF_HELD *yk = &UF_X(y)[k * UF_HELD_N], *dyk = &UF_X(dy)[k * UF_HELD_N];
                if (row < a.rows && j0 < a.sk) {
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
                UF_HELD_TO_ACC(yv, &UF_X(y)[k * UF_HELD_N]);
                UF_HELD_TO_ACC(dyv, &UF_X(dy)[k * UF_HELD_N]);
                UF_UNROLL for (int e = 0; e < UF_VEC; ++e) acc += yv[e] * dyv[e];
            }
            UF_X(dot) = acc;
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
            const int64_t row = uf_softmax_reg_row(&a, UF_REG_SPAN, b, t, rows_per_block, &first);
            const int lane = t % group;
            if (row >= a.rows)
                continue;
            const UF_ACC scale = (UF_ACC)a.scale, d = UF_X(dot);
            UF_T *dx = (UF_T *)a.out + row * a.sk;
            if (UF_VECTORISED_LOOPS) {
                UF_ACC g[UF_REG_N];
                for (int k = 0; k < UF_REG_NV; ++k) {
                    UF_ACC yv[UF_VEC], dyv[UF_VEC];
                    UF_HELD_TO_ACC(yv, &UF_X(y)[k * UF_HELD_N]);
                    UF_HELD_TO_ACC(dyv, &UF_X(dy)[k * UF_HELD_N]);
                    for (int e = 0; e < UF_VEC; ++e)
                        g[k * UF_VEC + e] = scale * yv[e] * (dyv[e] - d);
                }
                UF_T out[UF_REG_N];
                UF_RUN_FROM_ACC(out, g, UF_REG_N);
                for (int k = 0; k < UF_REG_NV; ++k) {
                    const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
                    if (j0 >= a.sk)
                        break;
                    UF_SOFTMAX_ACCESS(UF_STORE16, &dx[j0], &out[k * UF_VEC]);
                }
                continue;
            }
            UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
            {
                const int64_t j0 = first + UF_GROUP_ITEM(UF_REG_NV, k, lane, group) * UF_VEC;
                if (j0 >= a.sk)
                    break;
                UF_ACC yv[UF_VEC], dyv[UF_VEC];
                UF_HELD_TO_ACC(yv, &UF_X(y)[k * UF_HELD_N]);
                UF_HELD_TO_ACC(dyv, &UF_X(dy)[k * UF_HELD_N]);
                UF_UNROLL for (int e = 0; e < UF_VEC; ++e) yv[e] = scale * yv[e] * (dyv[e] - d);
                UF_STOREV(dx, j0, yv);
            }
        }
    }
}

#undef UF_HELD_PRODUCTS
#undef UF_REG_NV
