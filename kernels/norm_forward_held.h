/*
 * The forward for rows held in registers (see norm.h), included once per
 * value of UF_NORM_HELD_RES: 1 for any call, 0 for calls with neither a
 * residual nor h_out, where no register waits for them.
 * The includer names the kernel (UF_NORM_HELD_KERNEL) and its output step
 * (UF_NORM_HELD_OUT).
 */

/* Whether a call adds a residual: a constant 0 in the second instance. */
#define UF_NORM_HELD_ADDS(a_) (UF_NORM_HELD_RES && (a_)->residual)

/* y (and h_out) of `lane`'s held units. A call with a weight and a bias,
 * or a weight alone (RMSNorm), takes a copy of the output loop of its own,
 * without a select an element for an absent vector or a load standing in
 * for it; except in the fp32 and fp64 kernels with a residual, where the
 * copies cost more than they saved (fp32 3-6 points slower on the H100,
 * more fp64 spills), which keep one loop for all. */
UF_FN void UF_NORM_HELD_OUT(const uf_norm_args *a, int64_t base, int lane, const uint32_t *xw,
                            const uint32_t *rw, UF_ACC p, UF_ACC dm, UF_ACC rstd)
{
    const int adds = UF_NORM_HELD_ADDS(a), h_out = UF_NORM_HELD_RES && a->h_out;
    const int split = !UF_NORM_HELD_RES || sizeof(UF_T) < 4;
    if (split && a->weight && a->bias)
        UF_VNAME(uf_norm_held_out_as)(a, base, lane, xw, rw, p, dm, rstd, adds, h_out, 1, 1);
    else if (split && a->weight)
        UF_VNAME(uf_norm_held_out_as)(a, base, lane, xw, rw, p, dm, rstd, adds, h_out, 1, 0);
    else
        UF_VNAME(uf_norm_held_out_as)
    (a, base, lane, xw, rw, p, dm, rstd, adds, h_out, a->weight != 0, a->bias != 0);
}

UF_KERNEL_BOUNDED(UF_NORM_HELD_KERNEL, uf_norm_args, a, UF_NORM_HELD_THREADS)
{
    const int layer = a.kind == UF_NORM_LAYER;
    const int rows_per_block = UF_NTHREADS / a.group;
    const UF_ACC inv_n = (UF_ACC)1 / (UF_ACC)a.cols;
    UF_BLOCKS (b) {
        UF_NORM_FWD_EXCLUSIVES();
        UF_EXCLUSIVE_ARRAY(uint32_t, xw, UF_NORM_FWD_HELD_UNITS * UF_UNIT_WORDS);
        UF_EXCLUSIVE_ARRAY(uint32_t, rw, UF_NORM_FWD_HELD_UNITS * UF_UNIT_WORDS);
        UF_THREADS (t) {
            const int64_t row = b * rows_per_block + t / a.group;
            const int lane = t % a.group;
            UF_ACC p = 0, lp = 0, s1 = 0, s2 = 0, n = 0;
            if (row < a.rows) {
                const int64_t base = row * a.cols;
                UF_VNAME(uf_norm_held_read)(&a, a.x, base, lane, UF_NORM_FWD_HELD_UNITS, UF_X(xw));
                if (UF_NORM_HELD_ADDS(&a))
                    UF_VNAME(uf_norm_held_read)
                (&a, a.residual, base, lane, UF_NORM_FWD_HELD_UNITS, UF_X(rw));
                if (layer)
                    p = UF_VNAME(uf_norm_pivot)(&a, base);
                UF_UNROLL for (int k = 0; k < UF_NORM_FWD_HELD_UNITS; ++k)
                {
                    if (UF_NORM_HELD_COL(&a, k, lane) >= a.cols)
                        continue;
                    UF_ACC h[UF_ACT_UNIT];
                    UF_VNAME(uf_norm_held_h)
                    (UF_NORM_HELD_ADDS(&a), &UF_X(xw)[k * UF_UNIT_WORDS],
                     &UF_X(rw)[k * UF_UNIT_WORDS], h);
                    if (layer && k == 0)
                        lp = h[0];
                    UF_VNAME(uf_norm_moments)(h, UF_ACT_UNIT, lp, &s1, &s2, &n);
                }
                if (layer && n == 0)
                    lp = p;
            }
            UF_NORM_FWD_STATS(p, lp, s1, s2, n);
        }
        UF_NORM_FWD_REDUCE();
        UF_THREADS (t) {
            const int64_t row = b * rows_per_block + t / a.group;
            if (row >= a.rows)
                continue;
            UF_NORM_FWD_ROW_STATS(row, dm, rstd)
            UF_NORM_HELD_OUT(&a, row * a.cols, t % a.group, UF_X(xw), UF_X(rw), UF_X(pivot), dm,
                             rstd);
        }
    }
}

#undef UF_NORM_HELD_ADDS
