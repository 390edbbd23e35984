/*
 * The fused norm backward for rows of whole, aligned units
 * (uf_norm_args.whole), a template that norm.h includes once per count of
 * units per thread: define UF_NORM_HELD_UNITS and UF_NORM_HELD_KERNEL (the
 * kernel's name) first.
 *
 * The arithmetic of uf_norm_bwd_fused, but each thread holds its units of h
 * and dy as stored from the first thread loop to the second instead of
 * reading them again, loads the row's mean and rstd together with them, and
 * LayerNorm's three row sums share one pair of barriers. A unit past the
 * row's end is read as in uf_norm_fwd_held and left unused. Fewer units per
 * thread mean more threads per row and fewer registers for the column sums;
 * src/norm.c takes 4 for 16-bit rows that a warp holds so (a warp a row,
 * no barrier), else 2 where the row fits UF_NORM_FUSED_THREADS threads so
 * (faster on the H200: f16 [16384, 4096] 40 -> 52% of copy), else 4 for
 * 16-bit rows (fp32 rows that long take uf_norm_bwd_fused: 4 held fp32
 * units spill).
 */
/* Whether a thread keeps its weight units across rows: 8 registers for 2
 * 16-bit units; more spilled. */
#define UF_NORM_HELD_KEEP_W (UF_NORM_HELD_UNITS * UF_UNIT_WORDS <= 8)
/* Whether a block asks L2 for the row it takes next (UF_NORM_PREFETCH_STEPS
 * of its row steps ahead): 16-bit rows of 2 units a thread only, and of
 * at least UF_NORM_PREFETCH_GROUP threads (tested at run time). H200, f16
 * and bf16 [rows, 4096] and [rows, 8192]: 52-55 -> 59-62% of copy; H100,
 * rows of 3072-8192: +4 to +12 points. The 4-unit kernel spilled more with
 * it and lost 3-8 points (asked once per block step, without more spills,
 * still 4-9 at N = 768 and 1024 on an H100: its blocks of eight warp-rows
 * already have their loads in flight), fp32 rows 2-10 but at N = 768
 * (H200), rows of 128 threads gained at some lengths and lost at others
 * (H100: 1280 values +10, 2048 values -1 to -4). */
#define UF_NORM_HELD_PREFETCH                                                                      \
    (UF_NORM_PREFETCH_STEPS > 0 && UF_NORM_HELD_UNITS == 2 && sizeof(UF_T) == 2)
/* Whether a thread loads its next row (h, dy, mean, rstd) into a second
 * set of registers before it writes dx of the row it holds, so that the
 * loads are in flight through the row's dx pass and the next row's sums
 * need not wait for memory: a block of these kernels is alone on its
 * multiprocessor (128 registers a thread), and nothing else hides the
 * latency. Rows of at most UF_NORM_HELD_PIPE_WORDS words a thread and
 * tensor (kernels/norm_args.h). */
#define UF_NORM_HELD_PIPE (UF_NORM_HELD_UNITS * UF_UNIT_WORDS <= UF_NORM_HELD_PIPE_WORDS)

UF_KERNEL_BOUNDED(UF_NORM_HELD_KERNEL, uf_norm_args, a, UF_NORM_FUSED_THREADS)
{
    const int layer = a.kind == UF_NORM_LAYER;
    const int slots = UF_NTHREADS / a.group;
    UF_BLOCKS (chunk) {
        UF_NORM_FUSED_STATE(UF_NORM_HELD_UNITS);
        UF_EXCLUSIVE_ARRAY(uint32_t, hw, UF_NORM_HELD_UNITS * UF_UNIT_WORDS);
        UF_EXCLUSIVE_ARRAY(uint32_t, yw, UF_NORM_HELD_UNITS * UF_UNIT_WORDS);
        UF_EXCLUSIVE(UF_ACC, mean);
        UF_EXCLUSIVE(UF_ACC, rstd);
        /* The next row's, where UF_NORM_HELD_PIPE. */
        UF_EXCLUSIVE_ARRAY(uint32_t, hn,
                           UF_NORM_HELD_PIPE ? UF_NORM_HELD_UNITS * UF_UNIT_WORDS : 1);
        UF_EXCLUSIVE_ARRAY(uint32_t, yn,
                           UF_NORM_HELD_PIPE ? UF_NORM_HELD_UNITS * UF_UNIT_WORDS : 1);
        UF_EXCLUSIVE(UF_ACC, mean_n);
        UF_EXCLUSIVE(UF_ACC, rstd_n);
        UF_EXCLUSIVE_ARRAY(uint32_t, ww,
                           UF_NORM_HELD_KEEP_W ? UF_NORM_HELD_UNITS * UF_UNIT_WORDS : 1);
        UF_THREADS (t) {
            UF_UNROLL for (int k = 0; UF_NORM_HELD_KEEP_W && k < UF_NORM_HELD_UNITS; ++k)
                UF_VNAME(uf_norm_held_weight)(&a, t % a.group, k, &UF_X(ww)[k * UF_UNIT_WORDS]);
            const int64_t row = r_begin + t / a.group;
            if (UF_NORM_HELD_PIPE && row < r_end)
                UF_VNAME(uf_norm_held_row)
            (&a, row, t % a.group, UF_NORM_HELD_UNITS, UF_X(hw), UF_X(yw), &UF_X(mean),
             &UF_X(rstd));
        }
        for (int64_t r0 = r_begin; r0 < r_end; r0 += slots) {
            UF_THREADS (t) {
                const int64_t row = r0 + t / a.group;
                const int lane = t % a.group;
                UF_ACC sh = 0, sg = 0, sgh = 0;
                const int64_t ahead = row + (int64_t)UF_NORM_PREFETCH_STEPS * slots;
                if (UF_NORM_HELD_PREFETCH && a.group >= UF_NORM_PREFETCH_GROUP && lane == 0 &&
                    ahead < r_end)
                    UF_VNAME(uf_norm_bwd_prefetch)(&a, ahead);
                if (row < r_end) {
                    if (!UF_NORM_HELD_PIPE)
                        UF_VNAME(uf_norm_held_row)
                    (&a, row, lane, UF_NORM_HELD_UNITS, UF_X(hw), UF_X(yw), &UF_X(mean),
                     &UF_X(rstd));
                    UF_UNROLL for (int k = 0; k < UF_NORM_HELD_UNITS; ++k)
                    {
                        const int64_t c0 = UF_NORM_HELD_COL(&a, k, lane);
                        if (c0 >= a.cols)
                            continue;
                        UF_ACC hc[UF_ACT_UNIT], dy[UF_ACT_UNIT], g[UF_ACT_UNIT];
                        uint32_t wk[UF_UNIT_WORDS];
                        UF_VNAME(uf_norm_bwd_held_unit)
                        (UF_X(mean), &UF_X(hw)[k * UF_UNIT_WORDS], &UF_X(yw)[k * UF_UNIT_WORDS],
                         UF_NORM_HELD_KEEP_W ? &UF_X(ww)[k * UF_UNIT_WORDS]
                                             : UF_VNAME(uf_norm_held_weight)(&a, lane, k, wk),
                         hc, dy, g);
                        UF_VNAME(uf_norm_bwd_sums)(layer, hc, g, UF_ACT_UNIT, &sh, &sg, &sgh);
                    }
                }
                UF_X(s_h) = sh;
                UF_X(s_g) = sg;
                UF_X(s_gh) = sgh;
            }
            UF_NORM_REDUCE_BWD_SUMS();
            UF_THREADS (t) {
                const int64_t row = r0 + t / a.group;
                const int lane = t % a.group;
                if (UF_NORM_HELD_PIPE && row + slots < r_end)
                    UF_VNAME(uf_norm_held_row)
                (&a, row + slots, lane, UF_NORM_HELD_UNITS, UF_X(hn), UF_X(yn), &UF_X(mean_n),
                 &UF_X(rstd_n));
                if (row >= r_end)
                    continue;
                const int64_t base = row * a.cols;
                const UF_VNAME(uf_norm_grad_row) r = UF_VNAME(uf_norm_grad_row_of)(
                    &a, UF_X(mean), UF_X(rstd), UF_X(s_h), UF_X(s_g), UF_X(s_gh));
                const uint32_t *kept_w = UF_NORM_HELD_KEEP_W ? UF_X(ww) : NULL;
                if (a.dh_extra) {
                    UF_VNAME(uf_norm_held_dx)
                    (&a, &r, base, lane, UF_NORM_HELD_UNITS, UF_X(hw), UF_X(yw), kept_w, UF_X(dw),
                     UF_X(db), 1);
                } else {
                    UF_VNAME(uf_norm_held_dx)
                    (&a, &r, base, lane, UF_NORM_HELD_UNITS, UF_X(hw), UF_X(yw), kept_w, UF_X(dw),
                     UF_X(db), 0);
                }
                if (UF_NORM_HELD_PIPE && row + slots < r_end) {
                    UF_UNROLL for (int i = 0; i < UF_NORM_HELD_UNITS * UF_UNIT_WORDS; ++i)
                    {
                        UF_X(hw)[i] = UF_X(hn)[i];
                        UF_X(yw)[i] = UF_X(yn)[i];
                    }
                    UF_X(mean) = UF_X(mean_n);
                    UF_X(rstd) = UF_X(rstd_n);
                }
            }
        }
        UF_NORM_FUSED_COLUMNS(UF_NORM_HELD_UNITS);
    }
}

#undef UF_NORM_HELD_PIPE
#undef UF_NORM_HELD_PREFETCH
#undef UF_NORM_HELD_KEEP_W
#undef UF_NORM_HELD_KERNEL
#undef UF_NORM_HELD_UNITS
