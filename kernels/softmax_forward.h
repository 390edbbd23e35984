/*
 * Forward scaled masked softmax, one instantiation per (UF_DT, UF_VEC); see
 * softmax_forward.c. Two paths, both one logical block per row group:
 *
 *  reg:    the row lives in registers (UF_SOFTMAX_REG_BYTES per thread);
 *          `group` threads share a row: read once, write once.
 *  stream: rows too long for registers; one block per row keeps a running
 *          (max, sum) per thread in one read, then reads again to write.
 *
 * Special values: hidden keys are -inf; the row maximum is taken as 0 when
 * every key is hidden so that exp(-inf - max) is 0 rather than NaN, and a
 * zero sum gives zeros. NaN spreads through the sum; +inf makes the sum NaN.
 */
#include "kernels/dtype_bind.h"

#define UF_REG_N (UF_SOFTMAX_REG_BYTES / (int)sizeof(UF_ACC)) /* elements per thread */
#define UF_REG_NV (UF_REG_N / UF_VEC)                          /* accesses per thread */

/* x * scale + mask for key j, or -inf when the key is hidden. */
UF_FN UF_ACC UF_VNAME(uf_softmax_logit)(const uf_softmax_args *a, UF_T xv, int64_t mask_row,
                                        int64_t j, int64_t last_key)
{
    if (j > last_key)
        return (UF_ACC)-INFINITY;
    UF_ACC z = UF_TO_ACC(xv) * (UF_ACC)a->scale;
    switch (a->mask_kind) {
    case UF_MASK_ADD_SAME:
        z += UF_TO_ACC(((const UF_T *)a->x2)[mask_row + j]);
        break;
    case UF_MASK_ADD_F32:
        z += (UF_ACC)((const float *)a->x2)[mask_row + j];
        break;
    case UF_MASK_BOOL:
        if (((const unsigned char *)a->x2)[mask_row + j])
            z = (UF_ACC)-INFINITY;
        break;
    default:
        break;
    }
    return z;
}

/* Where a row's keys come from: its x, its mask row and its last visible
 * key; computed once per row because the mask offset costs divisions. */
typedef struct UF_VNAME(uf_softmax_row) {
    const UF_T *x;
    int64_t mask_row;
    int64_t last_key;
} UF_VNAME(uf_softmax_row);

UF_FN UF_VNAME(uf_softmax_row) UF_VNAME(uf_softmax_row_at)(const uf_softmax_args *a, int64_t row)
{
    UF_VNAME(uf_softmax_row) r;
    r.x = (const UF_T *)a->x + row * a->sk;
    r.mask_row = a->mask_kind ? uf_softmax_mask_offset(a, row) : 0;
    r.last_key = uf_softmax_last_key(a, row);
    return r;
}

/* Loads UF_VEC keys starting at j0 (all inside the row) as logits. */
UF_FN void UF_VNAME(uf_softmax_load_logits)(const uf_softmax_args *a,
                                            const UF_VNAME(uf_softmax_row) *r, int64_t j0,
                                            UF_ACC *z)
{
    UF_T raw[UF_VEC];
#if UF_VEC == 1
    raw[0] = r->x[j0];
#else
    UF_LOAD16(raw, r->x + j0);
#endif
    UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] =
        UF_VNAME(uf_softmax_logit)(a, raw[e], r->mask_row, j0 + e, r->last_key);
}

/* The subtrahend that keeps exp finite-or-zero when every key is hidden. */
#define UF_MAX_REF(m) ((m) == (UF_ACC)-INFINITY ? (UF_ACC)0 : (m))

/* 1/sum, with an empty row (sum 0) giving zeros and a +inf maximum NaN. */
UF_FN UF_ACC UF_VNAME(uf_softmax_inverse)(UF_ACC row_max, UF_ACC sum)
{
    if (row_max == (UF_ACC)INFINITY)
        return (UF_ACC)NAN;
    return sum == (UF_ACC)0 ? (UF_ACC)0 : (UF_ACC)1 / sum;
}

UF_KERNEL(UF_VNAME(uf_softmax_fwd_reg), uf_softmax_args, a)
{
    const int group = a.group;
    const int rows_per_block = UF_NTHREADS / group;
    UF_BLOCKS(b)
    {
        UF_EXCLUSIVE_ARRAY(UF_ACC, v, UF_REG_N);
        UF_EXCLUSIVE(UF_ACC, m);
        UF_EXCLUSIVE(UF_ACC, s);
        UF_THREADS(t)
        {
            const int64_t row = b * rows_per_block + t / group;
            const int lane = t % group;
            const UF_VNAME(uf_softmax_row) r = UF_VNAME(uf_softmax_row_at)(&a, row < a.rows ? row : 0);
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
        UF_THREADS(t)
        {
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
        UF_THREADS(t)
        {
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

UF_KERNEL(UF_VNAME(uf_softmax_fwd_stream), uf_softmax_args, a)
{
    const int64_t step = (int64_t)UF_NTHREADS * UF_VEC;
    UF_BLOCKS(row)
    {
        const UF_VNAME(uf_softmax_row) r = UF_VNAME(uf_softmax_row_at)(&a, row);
        UF_EXCLUSIVE(UF_ACC, m);
        UF_EXCLUSIVE(UF_ACC, s);
        UF_EXCLUSIVE(UF_ACC, row_max);
        UF_THREADS(t)
        {
            UF_ACC mt = (UF_ACC)-INFINITY, st = 0;
            for (int64_t j0 = (int64_t)t * UF_VEC; j0 < a.sk; j0 += step) {
                UF_ACC z[UF_VEC];
                UF_VNAME(uf_softmax_load_logits)(&a, &r, j0, z);
                UF_ACC cm = mt;
                UF_UNROLL for (int e = 0; e < UF_VEC; ++e) cm = z[e] > cm ? z[e] : cm;
                const UF_ACC ref = UF_MAX_REF(cm);
                if (cm > mt) /* rescale the running sum to the new maximum */
                    st *= UF_EXP_ACC(mt - ref);
                UF_UNROLL for (int e = 0; e < UF_VEC; ++e) st += UF_EXP_ACC(z[e] - ref);
                mt = cm;
            }
            UF_X(m) = mt;
            UF_X(s) = st;
            UF_X(row_max) = mt;
        }
        UF_BLOCK_MAX(row_max);
        UF_THREADS(t)
        {
            UF_X(s) *= UF_EXP_ACC(UF_X(m) - UF_MAX_REF(UF_X(row_max)));
        }
        UF_BLOCK_SUM(s);
        UF_THREADS(t)
        {
            const UF_ACC ref = UF_MAX_REF(UF_X(row_max));
            const UF_ACC inv = UF_VNAME(uf_softmax_inverse)(UF_X(row_max), UF_X(s));
            UF_T *y = (UF_T *)a.out + row * a.sk;
            for (int64_t j0 = (int64_t)t * UF_VEC; j0 < a.sk; j0 += step) {
                UF_ACC z[UF_VEC];
                UF_VNAME(uf_softmax_load_logits)(&a, &r, j0, z);
                UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] = UF_EXP_ACC(z[e] - ref) * inv;
                UF_STOREV(y, j0, z);
            }
        }
    }
}

#undef UF_REG_N
#undef UF_REG_NV
#undef UF_MAX_REF
#include "kernels/dtype_unbind.h"
