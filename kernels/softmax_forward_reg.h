/*
 * The forward's register path (see softmax_forward.h), included once per
 * row share: UF_REG_N elements per thread, kernel UF_REG_KERNEL. The row's
 * `group` threads read it once into registers, reduce its maximum and sum
 * over the group, and write it once.
 */
#define UF_REG_NV (UF_REG_N / UF_VEC) /* accesses per thread */

UF_KERNEL(UF_REG_KERNEL, uf_softmax_args, a)
{
    const int group = a.group;
    const int rows_per_block = UF_NTHREADS / group;
    UF_BLOCKS (b) {
        UF_EXCLUSIVE_ARRAY(UF_ACC, v, UF_REG_N);
        UF_EXCLUSIVE(UF_ACC, m);
        UF_EXCLUSIVE(UF_ACC, s);
        UF_THREADS (t) {
            const int64_t row = b * rows_per_block + t / group;
            const int lane = t % group;
            const UF_VNAME(uf_softmax_row) r =
                UF_VNAME(uf_softmax_row_at)(&a, row < a.rows ? row : 0);
            UF_ACC mt = (UF_ACC)-INFINITY;
            UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
            {
                UF_ACC *z = &UF_X(v)[k * UF_VEC];
                const int64_t j0 = ((int64_t)k * group + lane) * UF_VEC;
                if (row < a.rows && j0 < a.sk)
                    UF_VNAME(uf_softmax_load_logits)(&a, &r, j0, z);
                else
                    UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] = (UF_ACC)-INFINITY;
                UF_UNROLL for (int e = 0; e < UF_VEC; ++e) mt = z[e] > mt ? z[e] : mt;
            }
            UF_X(m) = mt;
        }
        if (group <= UF_WARP)
            UF_WARP_MAX(m, group);
        else
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
        if (group <= UF_WARP)
            UF_WARP_SUM(s, group);
        else
            UF_BLOCK_SUM(s);
        UF_THREADS (t) {
            const int64_t row = b * rows_per_block + t / group;
            const int lane = t % group;
            if (row >= a.rows)
                continue;
            const UF_ACC inv = UF_VNAME(uf_softmax_inverse)(UF_X(m), UF_X(s));
            UF_T *y = (UF_T *)a.out + row * a.sk;
            UF_UNROLL for (int k = 0; k < UF_REG_NV; ++k)
            {
                const int64_t j0 = ((int64_t)k * group + lane) * UF_VEC;
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
