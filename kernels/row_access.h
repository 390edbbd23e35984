/*
 * Access to UF_ACT_UNIT consecutive elements of a row, for kernels that walk
 * [rows, cols] by units (epilogue, norms). Part of a kernel template: include
 * it after dtype_bind.h; it defines UF_VNAME(uf_row_load) and
 * UF_VNAME(uf_row_store) for the current instantiation.
 */
/* Elements c0 .. c0 + 7 of a row (zeros past cols); 16-byte accesses when
 * the launcher found rows aligned and the unit is whole. */
UF_FN void UF_VNAME(uf_row_load)(const void *row, int64_t c0, int64_t cols, int vec, UF_ACC *v)
{
    const UF_T *p = (const UF_T *)row;
    if (UF_VEC > 1 && vec && c0 + UF_ACT_UNIT <= cols) {
        UF_UNROLL for (int q = 0; q < UF_ACT_UNIT; q += UF_VEC) UF_LOADV(&v[q], p, c0 + q);
    } else {
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] =
            c0 + e < cols ? UF_TO_ACC(p[c0 + e]) : (UF_ACC)0;
    }
}

UF_FN void UF_VNAME(uf_row_store)(void *row, int64_t c0, int64_t cols, int vec, UF_ACC *v)
{
    UF_T *p = (UF_T *)row;
    if (UF_VEC > 1 && vec && c0 + UF_ACT_UNIT <= cols) {
        UF_UNROLL for (int q = 0; q < UF_ACT_UNIT; q += UF_VEC) UF_STOREV(p, c0 + q, &v[q]);
    } else {
        for (int e = 0; e < UF_ACT_UNIT && c0 + e < cols; ++e)
            p[c0 + e] = UF_FROM_ACC(v[e]);
    }
}
