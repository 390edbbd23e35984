/*
 * The epilogue's backward kernel (see epilogue.h), included once for each
 * kind of call, so that a kernel's registers are allocated for its own
 * paths only. UF_EPI_BWD_ROW_SCALE 1: any call (a row scale's dscale needs
 * act(z) beside act'(z)); 0: a scale that is a scalar or absent (one value,
 * no dscale), with UF_EPI_BWD_ACT 1 for an activation other than the
 * identity (x is read) or 0 for the identity (dy alone is read); and
 * UF_EPI_BWD_KIND, the activation as a constant or -1 for any. The
 * includer names the kernel (UF_EPI_BWD_KERNEL), its resident blocks
 * (UF_EPI_BWD_KBLOCKS) and the rows a thread loads at once where rows are
 * whole units (UF_EPI_BWD_KROWS) and whether it loads the next rows
 * before working on those it holds (UF_EPI_BWD_KPIPE).
 */
UF_KERNEL_RESIDENT(UF_EPI_BWD_KERNEL, uf_epilogue_args, a, UF_COLSUM_THREADS, UF_EPI_BWD_KBLOCKS)
{
    const int need_act = UF_EPI_BWD_ROW_SCALE && a.scale_kind == UF_OPERAND_ROW && a.partial;
    /* z = x + bias feeds act' and, for dscale, act: the identity's
     * derivative needs neither, so x and a full bias are not read. A
     * constant in the kernels built for one kind of call. */
    const int kind = UF_EPI_BWD_ACT ? UF_EPI_BWD_KIND : UF_ACT_IDENTITY;
    const int needs_z = UF_EPI_BWD_ROW_SCALE
                            ? (kind >= 0 ? kind : a.kind) != UF_ACT_IDENTITY || need_act
                            : UF_EPI_BWD_ACT;
    UF_BLOCKS (blk) {
        /* Per-thread column sums, [which][thread][e]: 0 dbias, 1 dscale. */
        UF_SHARED(UF_ACC, sums, 2 * UF_COLSUM_THREADS * UF_ACT_UNIT);
        const int64_t chunk = blk / a.col_tiles, tile = blk % a.col_tiles;
        UF_THREADS (t) {
            const int64_t c0 = (tile * a.tpr + t % a.tpr) * UF_ACT_UNIT;
            const int64_t r_end =
                (chunk + 1) * a.chunk_rows < a.rows ? (chunk + 1) * a.chunk_rows : a.rows;
            const int64_t r0 = chunk * a.chunk_rows + t / a.tpr, step = UF_NTHREADS / a.tpr;
            UF_ACC bias[UF_ACT_UNIT], scale[UF_ACT_UNIT], db[UF_ACT_UNIT], ds[UF_ACT_UNIT];
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) db[e] = ds[e] = 0;
            UF_VNAME(uf_epi_row_operands)
            (&a, UF_EPI_BWD_ROW_SCALE, c0 < a.cols ? c0 : 0, bias, scale);
            if (c0 >= a.cols) {
                /* a thread past the last column tile adds zeros */
            } else if (UF_VEC > 1 && a.whole) {
                UF_VNAME(uf_epi_bwd_rows_whole)
                (&a, need_act, needs_z, kind, UF_EPI_BWD_KROWS, UF_EPI_BWD_KPIPE, r0, r_end, step,
                 c0, bias, scale, db, ds);
            } else {
                UF_VNAME(uf_epi_bwd_rows)
                (&a, need_act, needs_z, kind, r0, r_end, step, c0, bias, scale, db, ds);
            }
            UF_VNAME(uf_colsum_publish)(sums, t, db, ds);
        }
        UF_BARRIER();
        UF_THREADS (t) {
            const int64_t c0 = (tile * a.tpr + t) * UF_ACT_UNIT;
            if (a.partial && t < a.tpr && c0 < a.cols)
                UF_VNAME(uf_colsum_combine)
            (sums, a.tpr, UF_NTHREADS, t, c0, a.cols, (UF_ACC *)a.partial + chunk * 2 * a.cols);
        }
        UF_BARRIER();
    }
}
