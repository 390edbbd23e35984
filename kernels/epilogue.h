/*
 * The epilogue y = dropout(act(x + bias) * scale) + residual, forward and
 * backward (whose column sums finish in column_sums.c); one instantiation per
 * (UF_DT, UF_VEC), see epilogue.c and epilogue_args.h for the tiling.
 * Logical block b covers row chunk b / col_tiles and column tile
 * b % col_tiles; thread t owns columns c0 .. c0 + 7 of row slot t / tpr.
 */
#include "kernels/dtype_bind.h"

/* 16-bit results take activations of fp32's absolute accuracy: the
 * residual is added after the activation, so its error is not only
 * rounding's to 16 bits (a GELU of 16-bit accuracy failed the f16
 * tolerance where the sum cancels). */
#if UF_DT == 4
#define UF_ACT_APPLY uf_act_apply_f64
#elif UF_DT == 1
#define UF_ACT_APPLY uf_act_apply_f32
#else
#define UF_ACT_APPLY uf_act_apply_f32to16_sum
#endif

#include "kernels/column_sums.h"
#include "kernels/row_access.h"

#define UF_EPI_ROWS UF_EPI_ROWS_OF((int)sizeof(UF_T))
/* The most rows any forward kernel loads at once (the arrays' size). */
#define UF_EPI_ROWS_MAX UF_EPI_ROWS
#define UF_EPI_BWD_ROWS UF_EPI_BWD_ROWS_OF((int)sizeof(UF_T))
#define UF_EPI_BWD_DY_ROWS UF_EPI_BWD_DY_ROWS_OF((int)sizeof(UF_T))
#define UF_EPI_BWD_ROWS_MAX                                                                        \
    (UF_EPI_BWD_ROWS > UF_EPI_BWD_DY_ROWS ? UF_EPI_BWD_ROWS : UF_EPI_BWD_DY_ROWS)

/* The row-independent operands of a unit: bias and scale vectors (ROW), or
 * the constants standing in for them. `row_scale` 0 (a constant at the
 * call) promises a scale that is not a row: one value, one register. */
UF_FN void UF_VNAME(uf_epi_row_operands)(const uf_epilogue_args *a, int row_scale, int64_t c0,
                                         UF_ACC *b, UF_ACC *s)
{
    if (a->bias_kind == UF_OPERAND_ROW)
        UF_VNAME(uf_row_load)(a->bias, c0, a->cols, a->vec, b);
    else
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) b[e] = 0;
    if (row_scale && a->scale_kind == UF_OPERAND_ROW)
        UF_VNAME(uf_row_load)(a->scale, c0, a->cols, a->vec, s);
    else
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) s[e] =
            a->scale_kind == UF_OPERAND_SCALAR ? (UF_ACC)a->scale_value : (UF_ACC)1;
}

/* Multiplies v by the dropout factor of elements r * cols + c0 ... Where
 * rows are whole units (`whole`, a constant at each call) the unit is one
 * Philox group: one call, no shift. */
UF_FN void UF_VNAME(uf_epi_drop)(const uf_epilogue_args *a, int whole, int64_t r, int64_t c0,
                                 UF_ACC *v)
{
    if (a->threshold == 0)
        return;
    const int64_t i0 = r * a->cols + c0;
    const unsigned bits = whole ? uf_dropout_byte(a->seed, a->offset, uf_dropout_cut(a->threshold),
                                                  (uint64_t)i0 / UF_PHILOX_GROUP)
                                : uf_dropout_bits_at(a->seed, a->offset, a->threshold, i0);
    const UF_ACC keep = (UF_ACC)a->keep_scale;
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] *= (bits >> e & 1u) ? keep : (UF_ACC)0;
}

/* The forward of one thread's rows r, r + step, ... below r_end at columns
 * c0 .. c0 + 7. `drop` is a constant at each call: the loop without
 * dropout then holds none of the Philox state in its registers (with one
 * loop for both, the forward without dropout spilled and ran 2-4 points of
 * copy slower on the H200). `kind`: the activation as a constant, or -1 to
 * read it from `a`. */
UF_FN void UF_VNAME(uf_epi_fwd_rows)(int kind, const uf_epilogue_args *a, int drop, int64_t r,
                                     int64_t r_end, int64_t step, int64_t c0, const UF_ACC *bias,
                                     const UF_ACC *scale)
{
    const UF_ACC p0 = (UF_ACC)a->param[0], p1 = (UF_ACC)a->param[1];
    for (; r < r_end; r += step) {
        const int64_t base = r * a->cols;
        UF_ACC v[UF_ACT_UNIT], res[UF_ACT_UNIT];
        UF_VNAME(uf_row_load)((const UF_T *)a->x + base, c0, a->cols, a->vec, v);
        if (a->bias_kind == UF_OPERAND_FULL) {
            UF_VNAME(uf_row_load)((const UF_T *)a->bias + base, c0, a->cols, a->vec, res);
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] += res[e];
        } else {
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] += bias[e];
        }
        UF_ACT_APPLY(kind >= 0 ? kind : a->kind, 0, p0, p1, v);
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] *= scale[e];
        if (drop)
            UF_VNAME(uf_epi_drop)(a, 0, r, c0, v);
        if (a->residual_kind == UF_OPERAND_FULL) {
            UF_VNAME(uf_row_load)((const UF_T *)a->residual + base, c0, a->cols, a->vec, res);
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] += res[e];
        }
        UF_VNAME(uf_row_store)((UF_T *)a->out + base, c0, a->cols, a->vec, v);
    }
}

/* uf_epi_fwd_rows for rows of whole, aligned units (uf_epilogue_args.whole):
 * `rows` rows at a time (a constant at each call, at most UF_EPI_ROWS_MAX),
 * every load of them issued first and without a test (a row past r_end
 * reads the current row again and is not stored), units waiting as
 * stored. `kind`: the activation as a constant (UF_ACT_SWITCH), or -1 to
 * read it from `a` at each row, which holds no register for it across the
 * loop. */
UF_FN void UF_VNAME(uf_epi_fwd_rows_whole)(int kind, int rows, const uf_epilogue_args *a, int drop,
                                           int64_t r, int64_t r_end, int64_t step, int64_t c0,
                                           const UF_ACC *bias, const UF_ACC *scale)
{
    const UF_ACC p0 = (UF_ACC)a->param[0], p1 = (UF_ACC)a->param[1];
    const int full_bias = a->bias_kind == UF_OPERAND_FULL;
    const int full_res = a->residual_kind == UF_OPERAND_FULL;
    for (; r < r_end; r += rows * step) {
        uint32_t xw[UF_EPI_ROWS_MAX][UF_UNIT_WORDS], bw[UF_EPI_ROWS_MAX][UF_UNIT_WORDS],
            rw[UF_EPI_ROWS_MAX][UF_UNIT_WORDS];
        UF_UNROLL for (int i = 0; i < rows; ++i)
        {
            const int64_t ri = r + i * step < r_end ? r + i * step : r;
            UF_VNAME(uf_unit_load_whole)((const UF_T *)a->x + ri * a->cols, c0, xw[i]);
            if (full_bias)
                UF_VNAME(uf_unit_load_whole)((const UF_T *)a->bias + ri * a->cols, c0, bw[i]);
            if (full_res)
                UF_VNAME(uf_unit_load_whole)((const UF_T *)a->residual + ri * a->cols, c0, rw[i]);
        }
        UF_UNROLL for (int i = 0; i < rows; ++i)
        {
            /* A row past r_end is computed from the row it read and not
             * stored: no branch out of the unrolled loop. */
            const int64_t ri = r + i * step;
            UF_ACC v[UF_ACT_UNIT], t[UF_ACT_UNIT];
            UF_VNAME(uf_unit_unpack)(xw[i], v);
            if (full_bias)
                UF_VNAME(uf_unit_unpack)(bw[i], t);
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] += full_bias ? t[e] : bias[e];
            UF_ACT_APPLY(kind >= 0 ? kind : a->kind, 0, p0, p1, v);
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] *= scale[e];
            if (drop)
                UF_VNAME(uf_epi_drop)(a, 1, ri, c0, v);
            if (full_res) {
                UF_VNAME(uf_unit_unpack)(rw[i], t);
                UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] += t[e];
            }
            UF_VNAME(uf_unit_pack)(v, xw[i]);
            if (ri < r_end)
                UF_VNAME(uf_unit_store_whole)((UF_T *)a->out + ri * a->cols, c0, xw[i]);
        }
    }
}

/* Both forward kernels begin a thread so: its columns c0 .. c0 + 7 and
 * their operands, its first row r0, the chunk's end r_end and the row step;
 * a thread past the last column goes on to the next. */
#define UF_EPI_FWD_THREAD(blk, t)                                                                  \
    const int64_t chunk = (blk) / a.col_tiles, tile = (blk) % a.col_tiles;                         \
    const int64_t c0 = (tile * a.tpr + (t) % a.tpr) * UF_ACT_UNIT;                                 \
    const int64_t r0 = chunk * a.chunk_rows + (t) / a.tpr;                                         \
    const int64_t r_end =                                                                          \
        (chunk + 1) * a.chunk_rows < a.rows ? (chunk + 1) * a.chunk_rows : a.rows;                 \
    if (c0 >= a.cols)                                                                              \
        continue;                                                                                  \
    UF_ACC bias[UF_ACT_UNIT], scale[UF_ACT_UNIT];                                                  \
    UF_VNAME(uf_epi_row_operands)(&a, 1, c0, bias, scale);                                         \
    const int64_t step = UF_NTHREADS / a.tpr

/* The forward for every call (src/epilogue.c launches it where p > 0). */
UF_KERNEL_RESIDENT(UF_VNAME(uf_epi_fwd), uf_epilogue_args, a, UF_COLSUM_THREADS, UF_EPI_FWD_BLOCKS)
{
    UF_BLOCKS (blk) {
        UF_THREADS (t) {
            UF_EPI_FWD_THREAD(blk, t);
            if (UF_VEC > 1 && a.whole && a.threshold != 0) {
                UF_VNAME(uf_epi_fwd_rows_whole)
                (-1, UF_EPI_ROWS, &a, 1, r0, r_end, step, c0, bias, scale);
            } else if (UF_VEC > 1 && a.whole) {
                UF_VNAME(uf_epi_fwd_rows_whole)
                (-1, UF_EPI_ROWS, &a, 0, r0, r_end, step, c0, bias, scale);
            } else if (a.threshold != 0) {
                UF_VNAME(uf_epi_fwd_rows)(-1, &a, 1, r0, r_end, step, c0, bias, scale);
            } else {
                UF_VNAME(uf_epi_fwd_rows)(-1, &a, 0, r0, r_end, step, c0, bias, scale);
            }
        }
    }
}

/* The forward without dropout: a kernel's registers are allocated for the
 * worst path it holds, and this one holds neither the Philox state nor, in
 * its rows of whole units, any activation but the call's (a loop written
 * out for each, UF_ACT_SWITCH). */
UF_KERNEL_RESIDENT(UF_VNAME(uf_epi_fwd_plain), uf_epilogue_args, a, UF_COLSUM_THREADS,
                   UF_EPI_FWD_BLOCKS)
{
    UF_BLOCKS (blk) {
        UF_THREADS (t) {
            UF_EPI_FWD_THREAD(blk, t);
            if (UF_VEC > 1 && a.whole)
                UF_ACT_SWITCH(a.kind, UF_VNAME(uf_epi_fwd_rows_whole), UF_EPI_ROWS, &a, 0, r0,
                              r_end, step, c0, bias, scale)
            else
                UF_VNAME(uf_epi_fwd_rows)(-1, &a, 0, r0, r_end, step, c0, bias, scale);
        }
    }
}

/* A forward with dropout for one activation `kind` (a constant): no
 * switch over the others in its loops, and registers allocated for this
 * one alone. */
#define UF_EPI_FWD_FIXED(name, kind, resident, rows)                                               \
    UF_KERNEL_RESIDENT(UF_VNAME(name), uf_epilogue_args, a, UF_COLSUM_THREADS, resident)           \
    {                                                                                              \
        UF_BLOCKS (blk) {                                                                          \
            UF_THREADS (t) {                                                                       \
                UF_EPI_FWD_THREAD(blk, t);                                                         \
                const int whole = UF_VEC > 1 && a.whole;                                           \
                if (whole) {                                                                       \
                    UF_VNAME(uf_epi_fwd_rows_whole)                                                \
                    (kind, rows, &a, 1, r0, r_end, step, c0, bias, scale);                         \
                } else {                                                                           \
                    UF_VNAME(uf_epi_fwd_rows)(kind, &a, 1, r0, r_end, step, c0, bias, scale);      \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* bias + dropout + residual, and the transformer's GELU with dropout. */
UF_EPI_FWD_FIXED(uf_epi_fwd_identity, UF_ACT_IDENTITY, UF_EPI_FWD_IDENTITY_BLOCKS, UF_EPI_ROWS)
UF_EPI_FWD_FIXED(uf_epi_fwd_gelu, UF_ACT_GELU, UF_EPI_FWD_GELU_BLOCKS_OF(UF_DT),
                 UF_EPI_FWD_GELU_ROWS_OF(UF_DT, UF_EPI_ROWS))

/* Writes a unit of one of the backward's outputs: without tests where
 * rows are whole aligned units (`whole`, a constant at each call). */
UF_FN void UF_VNAME(uf_epi_bwd_store)(const uf_epilogue_args *a, void *out, int64_t r, int64_t c0,
                                      int whole, UF_ACC *v)
{
    UF_T *row = (UF_T *)out + r * a->cols;
    if (whole) {
        uint32_t w[UF_UNIT_WORDS];
        UF_VNAME(uf_unit_pack)(v, w);
        UF_VNAME(uf_unit_store_whole)(row, c0, w);
    } else {
        UF_VNAME(uf_row_store)(row, c0, a->cols, a->vec, v);
    }
}

/* The backward of row r's unit at c0 from z = x + bias (needed only by a
 * non-identity act' and by dscale) and g = dy: writes dresidual, dx and a
 * full dbias, and adds to the thread's column sums db and ds. `kind`: the
 * activation as a constant, or -1 to read it from `a`. */
UF_FN void UF_VNAME(uf_epi_bwd_unit)(const uf_epilogue_args *a, int need_act, int kind, int whole,
                                     int64_t r, int64_t c0, const UF_ACC *scale, UF_ACC *z,
                                     UF_ACC *g, UF_ACC *db, UF_ACC *ds)
{
    const UF_ACC p0 = (UF_ACC)a->param[0], p1 = (UF_ACC)a->param[1];
    const int act = kind >= 0 ? kind : a->kind;
    if (a->dresidual)
        UF_VNAME(uf_epi_bwd_store)(a, a->dresidual, r, c0, whole, g);
    UF_VNAME(uf_epi_drop)(a, whole, r, c0, g);
    if (need_act) {
        UF_ACC t[UF_ACT_UNIT];
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) t[e] = z[e];
        UF_ACT_APPLY(act, 0, p0, p1, t);
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) ds[e] += g[e] * t[e];
    }
    /* The identity's derivative is 1 even where z is NaN (z is loaded only
     * when dscale is asked for; dx must not depend on that). */
    if (act == UF_ACT_IDENTITY) {
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) z[e] = 1;
    } else {
        UF_ACT_APPLY(act, 1, p0, p1, z);
    }
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
    {
        g[e] *= scale[e] * z[e];
        db[e] += g[e];
    }
    UF_VNAME(uf_epi_bwd_store)(a, a->out, r, c0, whole, g);
    if (a->dbias)
        UF_VNAME(uf_epi_bwd_store)(a, a->dbias, r, c0, whole, g);
}

/* The backward over one thread's rows r, r + step, ... below r_end at
 * columns c0 .. c0 + 7, each access tested (tails, unaligned rows). */
UF_FN void UF_VNAME(uf_epi_bwd_rows)(const uf_epilogue_args *a, int need_act, int needs_z, int kind,
                                     int64_t r, int64_t r_end, int64_t step, int64_t c0,
                                     const UF_ACC *bias, const UF_ACC *scale, UF_ACC *db,
                                     UF_ACC *ds)
{
    for (; r < r_end; r += step) {
        const int64_t base = r * a->cols;
        UF_ACC z[UF_ACT_UNIT], g[UF_ACT_UNIT], t[UF_ACT_UNIT];
        if (needs_z)
            UF_VNAME(uf_row_load)((const UF_T *)a->x + base, c0, a->cols, a->vec, z);
        else
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) z[e] = 0;
        if (!needs_z) {
            /* identity without a row scale: z is not needed */
        } else if (a->bias_kind == UF_OPERAND_FULL) {
            UF_VNAME(uf_row_load)((const UF_T *)a->bias + base, c0, a->cols, a->vec, t);
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) z[e] += t[e];
        } else {
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) z[e] += bias[e];
        }
        UF_VNAME(uf_row_load)((const UF_T *)a->dy + base, c0, a->cols, a->vec, g);
        UF_VNAME(uf_epi_bwd_unit)(a, need_act, kind, 0, r, c0, scale, z, g, db, ds);
    }
}

/* The words of one group of whole-unit rows r, r + step, ... (`nrows`
 * of them) that the backward reads: x where z is needed, a full bias,
 * dy. Loads without a test: a row at or past r_end reads row `valid`
 * instead (its words are loaded but not used). */
typedef struct UF_VNAME(uf_epi_bwd_group) {
    uint32_t x[UF_EPI_BWD_ROWS_MAX][UF_UNIT_WORDS], b[UF_EPI_BWD_ROWS_MAX][UF_UNIT_WORDS],
        g[UF_EPI_BWD_ROWS_MAX][UF_UNIT_WORDS];
} UF_VNAME(uf_epi_bwd_group);

UF_FN void UF_VNAME(uf_epi_bwd_group_load)(const uf_epilogue_args *a, int needs_z, int full_bias,
                                           int nrows, int64_t r, int64_t r_end, int64_t valid,
                                           int64_t step, int64_t c0, UF_VNAME(uf_epi_bwd_group) * w)
{
    UF_UNROLL for (int i = 0; i < nrows; ++i)
    {
        const int64_t base = (r + i * step < r_end ? r + i * step : valid) * a->cols;
        if (needs_z)
            UF_VNAME(uf_unit_load_whole)((const UF_T *)a->x + base, c0, w->x[i]);
        if (full_bias)
            UF_VNAME(uf_unit_load_whole)((const UF_T *)a->bias + base, c0, w->b[i]);
        UF_VNAME(uf_unit_load_whole)((const UF_T *)a->dy + base, c0, w->g[i]);
    }
}

/* The backward of a loaded group's rows below r_end. */
UF_FN void UF_VNAME(uf_epi_bwd_group_work)(const uf_epilogue_args *a, int need_act, int needs_z,
                                           int full_bias, int kind, int nrows, int64_t r,
                                           int64_t r_end, int64_t step, int64_t c0,
                                           const UF_ACC *bias, const UF_ACC *scale,
                                           const UF_VNAME(uf_epi_bwd_group) * w, UF_ACC *db,
                                           UF_ACC *ds)
{
    UF_UNROLL for (int i = 0; i < nrows; ++i)
    {
        const int64_t ri = r + i * step;
        if (ri >= r_end)
            continue;
        UF_ACC z[UF_ACT_UNIT], g[UF_ACT_UNIT], t[UF_ACT_UNIT];
        if (needs_z)
            UF_VNAME(uf_unit_unpack)(w->x[i], z);
        else
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) z[e] = 0;
        if (full_bias)
            UF_VNAME(uf_unit_unpack)(w->b[i], t);
        if (needs_z)
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) z[e] += full_bias ? t[e] : bias[e];
        UF_VNAME(uf_unit_unpack)(w->g[i], g);
        UF_VNAME(uf_epi_bwd_unit)(a, need_act, kind, 1, ri, c0, scale, z, g, db, ds);
    }
}

/* The backward over one thread's rows r, r + step, ... below r_end where
 * rows are whole aligned units: `nrows` rows at a time (a constant at each
 * call, at most UF_EPI_BWD_ROWS_MAX), every load of a group issued before
 * its work. `piped` (a constant): the next group's loads are issued before
 * this group's work, in a second set of registers, so that memory is busy
 * while the thread computes and stores; the loop body is written out for
 * both sets, which keeps each in registers (an index that alternates would
 * put them in local memory). */
UF_FN void UF_VNAME(uf_epi_bwd_rows_whole)(const uf_epilogue_args *a, int need_act, int needs_z,
                                           int kind, int nrows, int piped, int64_t r, int64_t r_end,
                                           int64_t step, int64_t c0, const UF_ACC *bias,
                                           const UF_ACC *scale, UF_ACC *db, UF_ACC *ds)
{
    const int full_bias = needs_z && a->bias_kind == UF_OPERAND_FULL;
    const int64_t span = nrows * step;
    UF_VNAME(uf_epi_bwd_group) w0, w1;
    if (!piped) {
        for (; r < r_end; r += span) {
            UF_VNAME(uf_epi_bwd_group_load)
            (a, needs_z, full_bias, nrows, r, r_end, r, step, c0, &w0);
            UF_VNAME(uf_epi_bwd_group_work)
            (a, need_act, needs_z, full_bias, kind, nrows, r, r_end, step, c0, bias, scale, &w0, db,
             ds);
        }
        return;
    }
    if (r < r_end)
        UF_VNAME(uf_epi_bwd_group_load)(a, needs_z, full_bias, nrows, r, r_end, r, step, c0, &w0);
    for (; r < r_end; r += 2 * span) {
        UF_VNAME(uf_epi_bwd_group_load)
        (a, needs_z, full_bias, nrows, r + span, r_end, r, step, c0, &w1);
        UF_VNAME(uf_epi_bwd_group_work)
        (a, need_act, needs_z, full_bias, kind, nrows, r, r_end, step, c0, bias, scale, &w0, db,
         ds);
        if (r + span >= r_end)
            break;
        UF_VNAME(uf_epi_bwd_group_load)
        (a, needs_z, full_bias, nrows, r + 2 * span, r_end, r, step, c0, &w0);
        UF_VNAME(uf_epi_bwd_group_work)
        (a, need_act, needs_z, full_bias, kind, nrows, r + span, r_end, step, c0, bias, scale, &w1,
         db, ds);
    }
}

/* The backward kernel, five times: for any call (uf_epi_bwd), for calls
 * whose scale is not a row with an activation (uf_epi_bwd_scalar) and
 * with the identity (uf_epi_bwd_dy), and the first two built for the GELU
 * alone (uf_epi_bwd_gelu, uf_epi_bwd_scalar_gelu); src/epilogue.c
 * chooses. */
#define UF_EPI_BWD_KIND -1
#define UF_EPI_BWD_ROW_SCALE 1
#define UF_EPI_BWD_ACT 1
#define UF_EPI_BWD_KERNEL UF_VNAME(uf_epi_bwd)
#define UF_EPI_BWD_KBLOCKS UF_EPI_BWD_BLOCKS
#define UF_EPI_BWD_KROWS UF_EPI_BWD_ROWS
#define UF_EPI_BWD_KPIPE UF_EPI_BWD_PIPE
#include "kernels/epilogue_backward_kernel.h"
#undef UF_EPI_BWD_KERNEL
#define UF_EPI_BWD_KERNEL UF_VNAME(uf_epi_bwd_gelu)
#undef UF_EPI_BWD_KIND
#define UF_EPI_BWD_KIND UF_ACT_GELU
#include "kernels/epilogue_backward_kernel.h"
#undef UF_EPI_BWD_ROW_SCALE
#undef UF_EPI_BWD_KERNEL
#undef UF_EPI_BWD_KBLOCKS
#define UF_EPI_BWD_ROW_SCALE 0
#define UF_EPI_BWD_KERNEL UF_VNAME(uf_epi_bwd_scalar_gelu)
#define UF_EPI_BWD_KBLOCKS UF_EPI_BWD_SCALAR_BLOCKS
#include "kernels/epilogue_backward_kernel.h"
#undef UF_EPI_BWD_KERNEL
#undef UF_EPI_BWD_KIND
#define UF_EPI_BWD_KIND -1
#define UF_EPI_BWD_KERNEL UF_VNAME(uf_epi_bwd_scalar)
#include "kernels/epilogue_backward_kernel.h"
#undef UF_EPI_BWD_ACT
#undef UF_EPI_BWD_KERNEL
#undef UF_EPI_BWD_KBLOCKS
#undef UF_EPI_BWD_KROWS
#undef UF_EPI_BWD_KPIPE
#define UF_EPI_BWD_ACT 0
#define UF_EPI_BWD_KERNEL UF_VNAME(uf_epi_bwd_dy)
#define UF_EPI_BWD_KBLOCKS UF_EPI_BWD_DY_BLOCKS
#define UF_EPI_BWD_KROWS UF_EPI_BWD_DY_ROWS
#define UF_EPI_BWD_KPIPE UF_EPI_BWD_DY_PIPE
#include "kernels/epilogue_backward_kernel.h"
#undef UF_EPI_BWD_KIND
#undef UF_EPI_BWD_ROW_SCALE
#undef UF_EPI_BWD_ACT
#undef UF_EPI_BWD_KERNEL
#undef UF_EPI_BWD_KBLOCKS
#undef UF_EPI_BWD_KROWS
#undef UF_EPI_BWD_KPIPE

#undef UF_EPI_FWD_THREAD
#undef UF_ACT_APPLY
#undef UF_EPI_ROWS
#undef UF_EPI_ROWS_MAX
#undef UF_EPI_BWD_ROWS
#undef UF_EPI_BWD_DY_ROWS
#undef UF_EPI_BWD_ROWS_MAX
#include "kernels/dtype_unbind.h"
