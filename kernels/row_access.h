/*
 * Access to UF_ACT_UNIT consecutive elements of a row, for kernels that walk
 * [rows, cols] by units (epilogue, norms) or a flat tensor (activations: one
 * row of `count` elements). Part of a kernel template: include it after
 * dtype_bind.h; it defines, for the current instantiation,
 * UF_VNAME(uf_row_load) / _store (the unit as UF_ACC values) and
 * UF_VNAME(uf_unit_load) / _store / _unpack / _pack (the unit as stored).
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

/* A unit as it is stored: UF_ACT_UNIT elements packed in UF_UNIT_WORDS
 * 32-bit words (16-bit types two to a word). Units that wait for their
 * loads in this form and become UF_ACC values one at a time hold half the
 * registers that floats would for 16-bit data. */
#ifndef UF_UNIT_WORDS
#define UF_UNIT_WORDS (UF_ACT_UNIT * (int)sizeof(UF_T) / 4)
#endif

/* Elements c0 .. c0 + 7 of a row as stored (zeros past cols). */
UF_FN void UF_VNAME(uf_unit_load)(const void *row, int64_t c0, int64_t cols, int vec, uint32_t *w)
{
    const UF_T *src = (const UF_T *)row + c0;
    if (UF_VEC > 1 && vec && c0 + UF_ACT_UNIT <= cols) {
        UF_UNROLL for (int q = 0; q < UF_UNIT_WORDS; q += 4)
            UF_LOAD16(&w[q], src + q * 4 / (int)sizeof(UF_T));
    } else {
        UF_T e[UF_ACT_UNIT];
        UF_UNROLL for (int j = 0; j < UF_ACT_UNIT; ++j) e[j] = c0 + j < cols ? src[j] : (UF_T)0;
        memcpy(w, e, sizeof e);
    }
}

UF_FN void UF_VNAME(uf_unit_store)(void *row, int64_t c0, int64_t cols, int vec, const uint32_t *w)
{
    UF_T *dst = (UF_T *)row + c0;
    if (UF_VEC > 1 && vec && c0 + UF_ACT_UNIT <= cols) {
        UF_UNROLL for (int q = 0; q < UF_UNIT_WORDS; q += 4)
            UF_STORE16(dst + q * 4 / (int)sizeof(UF_T), &w[q]);
    } else {
        UF_T e[UF_ACT_UNIT];
        memcpy(e, w, sizeof e);
        for (int j = 0; j < UF_ACT_UNIT && c0 + j < cols; ++j)
            dst[j] = e[j];
    }
}

/* A unit known to be whole and 16-byte aligned (the launcher checked every
 * row): accesses without tests, so that several are in flight together. */
UF_FN void UF_VNAME(uf_unit_load_whole)(const void *row, int64_t c0, uint32_t *w)
{
    const UF_T *src = (const UF_T *)row + c0;
    UF_UNROLL for (int q = 0; q < UF_UNIT_WORDS; q += 4)
        UF_LOAD16(&w[q], src + q * 4 / (int)sizeof(UF_T));
}

UF_FN void UF_VNAME(uf_unit_store_whole)(void *row, int64_t c0, const uint32_t *w)
{
    UF_T *dst = (UF_T *)row + c0;
    UF_UNROLL for (int q = 0; q < UF_UNIT_WORDS; q += 4)
        UF_STORE16(dst + q * 4 / (int)sizeof(UF_T), &w[q]);
}

/* Stored words <-> compute values of one unit. Unpaired types are copied
 * one element at a time: a copy of the whole unit stays a call to memcpy in
 * gcc's view, which keeps the loops around it from vectorising. */
UF_FN void UF_VNAME(uf_unit_unpack)(const uint32_t *w, UF_ACC *v)
{
#if UF_PAIRED
    UF_UNROLL for (int q = 0; q < UF_UNIT_WORDS; ++q) UF_PAIR_TO_ACC(w[q], &v[2 * q]);
#else
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
        memcpy(&v[e], &w[e * UF_UNIT_WORDS / UF_ACT_UNIT], sizeof(UF_ACC));
#endif
}
UF_FN void UF_VNAME(uf_unit_pack)(const UF_ACC *v, uint32_t *w)
{
#if UF_PAIRED
    UF_UNROLL for (int q = 0; q < UF_UNIT_WORDS; ++q) w[q] =
        UF_PAIR_FROM_ACC(v[2 * q], v[2 * q + 1]);
#else
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
        memcpy(&w[e * UF_UNIT_WORDS / UF_ACT_UNIT], &v[e], sizeof(UF_ACC));
#endif
}
