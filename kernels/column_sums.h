/*
 * The chunk-level half of the deterministic column sums (see
 * column_sums_args.h), part of a kernel template (after dtype_bind.h). A
 * block's threads hold the sums of UF_ACT_UNIT columns each for their row
 * slot, in `sums` [2][UF_COLSUM_THREADS][UF_ACT_UNIT]; after a barrier, the
 * threads of the first slot (t < tpr) add the slots in slot order and write
 * the chunk's partial sums.
 */
UF_FN void UF_VNAME(uf_colsum_combine)(const UF_ACC *sums, int tpr, int nthreads, int t, int64_t c0,
                                       int64_t cols, UF_ACC *chunk_partial)
{
    for (int which = 0; which < 2; ++which) {
        for (int e = 0; e < UF_ACT_UNIT && c0 + e < cols; ++e) {
            UF_ACC acc = 0;
            for (int s = 0; s < nthreads / tpr; ++s)
                acc += sums[(which * UF_COLSUM_THREADS + s * tpr + t) * UF_ACT_UNIT + e];
            chunk_partial[which * cols + c0 + e] = acc;
        }
    }
}

/* A thread's sums of its columns into the block's `sums`. */
UF_FN void UF_VNAME(uf_colsum_publish)(UF_ACC *sums, int t, const UF_ACC *s0, const UF_ACC *s1)
{
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
    {
        sums[t * UF_ACT_UNIT + e] = s0[e];
        sums[(UF_COLSUM_THREADS + t) * UF_ACT_UNIT + e] = s1[e];
    }
}
