/*
 * uf_norm_forward / uf_norm_backward: argument checks, threads per row from
 * the row length and the device, the backward's scratch (mean corrections
 * and column partial sums), and the launches.
 */
#include <math.h>

#include "checks.h"
#include "column_sums.h"
#include "kernels/activation_args.h"
#include "kernels/norm_args.h"

typedef uf_status (*uf_norm_launcher)(const uf_launch *, const uf_norm_args *);

enum {
    PASS_FWD,
    PASS_FWD_HELD,
    PASS_FWD_HELD_PLAIN,
    PASS_BWD,
    PASS_BWD_FUSED,
    PASS_BWD_HELD2,
    PASS_BWD_HELD4,
    PASS_COLS
};

/* Indexed [pass][dtype - 1][vectorised]. */
#define UF_NORM_ROW(pass, dt, vec)                                                                 \
    {                                                                                              \
        uf_norm_##pass##_##dt##_v1_launch, uf_norm_##pass##_##dt##_v##vec##_launch                 \
    }
#define UF_NORM_PASS(pass)                                                                         \
    {                                                                                              \
        UF_NORM_ROW(pass, f32, 4), UF_NORM_ROW(pass, f16, 8), UF_NORM_ROW(pass, bf16, 8),          \
            UF_NORM_ROW(pass, f64, 2)                                                              \
    }
static const uf_norm_launcher launchers[8][4][2] = {
    UF_NORM_PASS(fwd),       UF_NORM_PASS(fwd_held),  UF_NORM_PASS(fwd_held_plain),
    UF_NORM_PASS(bwd),       UF_NORM_PASS(bwd_fused), UF_NORM_PASS(bwd_held2),
    UF_NORM_PASS(bwd_held4), UF_NORM_PASS(cols)};

/* Byte sizes of one call's operands. */
typedef struct sizes {
    size_t tensor, vector, stats;
} sizes;

static uf_status check_desc(const uf_norm_desc *d, uf_norm_args *a, sizes *z)
{
    if (!d)
        return UF_ERR_NULL_POINTER;
    if (d->dtype != UF_F32 && d->dtype != UF_F16 && d->dtype != UF_BF16 && d->dtype != UF_F64)
        return UF_ERR_BAD_DTYPE;
    if (d->rows < 0 || d->cols < 0)
        return UF_ERR_BAD_SHAPE;
    if ((d->kind != UF_NORM_LAYER && d->kind != UF_NORM_RMS) ||
        (d->kind == UF_NORM_RMS && d->has_bias))
        return UF_ERR_BAD_ARGUMENT;
    if (!(d->eps >= 0) || !isfinite(d->eps))
        return UF_ERR_BAD_VALUE;
    const int64_t shape[2] = {d->rows, d->cols};
    int64_t count = 0;
    uf_status st = uf_shape_count(shape, 2, &count);
    const size_t es = uf_dtype_size(d->dtype);
    if (st == UF_OK)
        st = uf_byte_count(count, es, &z->tensor);
    if (st == UF_OK)
        st = uf_byte_count(d->cols, es, &z->vector);
    if (st == UF_OK)
        st = uf_byte_count(d->rows, d->dtype == UF_F64 ? 8 : 4, &z->stats);
    a->rows = d->rows;
    a->cols = d->cols;
    a->inv_cols = d->cols > 0 ? 1.0 / (double)d->cols : 0.0;
    a->kind = d->kind;
    a->has_weight = d->has_weight != 0;
    a->has_bias = d->has_bias != 0;
    a->eps = d->eps;
    return st;
}

/* Threads per row (enough for `per_thread` units each, a power of two) and
 * block shape: up to a warp per row with several rows per block, or one row
 * per block of up to the largest block. */
static uf_status plan_rows(uf_norm_args *a, uf_launch *l, int per_thread)
{
    uf_device_limits lim;
    const uf_status st = ufb_device_limits(&lim);
    if (st != UF_OK)
        return st;
    const int warp = lim.warp_size;
    const int max_threads = lim.max_threads_per_block < UF_BLOCK_LIMIT
                                ? lim.max_threads_per_block / warp * warp
                                : UF_BLOCK_LIMIT;
    const int64_t units = (a->cols + UF_ACT_UNIT - 1) / UF_ACT_UNIT;
    const int64_t wanted = (units + per_thread - 1) / per_thread;
    int group = 1;
    while (group < wanted && group < max_threads)
        group *= 2;
    a->group = group;
    l->threads = group <= warp ? (4 * warp <= max_threads ? 4 * warp : warp) : group;
    const int64_t rows_per_block = l->threads / group;
    l->blocks = (a->rows + rows_per_block - 1) / rows_per_block;
    return UF_OK;
}

static int vec_ok(const uf_norm_desc *d, const void *const *ptrs, int n)
{
    if ((d->cols * (int64_t)uf_dtype_size(d->dtype)) % 16 != 0)
        return 0;
    for (int i = 0; i < n; ++i)
        if (!uf_aligned16(ptrs[i]))
            return 0;
    return 1;
}

/* Element sizes up to which the forward holds rows that fit in registers
 * (uf_norm_fwd_held) rather than reading them twice (0: never; for
 * measuring one against the other). */
#ifndef UF_NORM_HELD_BYTES
#define UF_NORM_HELD_BYTES 4
#endif

/* Element sizes up to which the fused backward holds rows of whole units
 * in registers between its passes (kernels/norm_backward_held.h) rather
 * than reading them again (0: never; for measuring one against the other). */
#ifndef UF_NORM_BWD_HELD_BYTES
#define UF_NORM_BWD_HELD_BYTES 4
#endif

/* The forward's launch, on the current device (the stream's). */
static uf_status queue_forward(const uf_norm_desc *desc, uf_norm_args *a, uf_stream stream)
{
    uf_launch l = {0, 0, stream, 0, 0};
    const size_t es = uf_dtype_size(desc->dtype);
    const int units = UF_NORM_FWD_UNITS((int)es);
    const uf_status st = plan_rows(a, &l, units);
    if (st != UF_OK)
        return st;
    /* fp32 rows that hold a block of more than 256 threads without a
     * residual: the kernel that reads twice, at half the registers, keeps
     * two blocks per multiprocessor and was faster on the H200 (also than
     * the held kernel without a residual: [4096, 16384] 64-69 against
     * 69-74% of copy). */
    const int held = a->whole && es <= UF_NORM_HELD_BYTES &&
                     (int64_t)a->group * units * UF_ACT_UNIT >= a->cols &&
                     l.threads <= UF_NORM_HELD_THREADS &&
                     (es <= 2 || a->residual || l.threads <= UF_NORM_HELD_THREADS / 2);
    /* Without a residual or h_out the held kernel of its own keeps no
     * registers for them: 89 instead of 128 in 16 bits, 80 in fp32 (H200:
     * plain forward 16-bit 61-73 -> 72-84% of copy, fp32 at N = 768-8192
     * 79-91 -> 88-94%). */
    const int plain = !a->residual && !a->h_out;
    const int pass = !held ? PASS_FWD : plain ? PASS_FWD_HELD_PLAIN : PASS_FWD_HELD;
    return launchers[pass][desc->dtype - 1][a->vec](&l, a);
}

/* The fused backward's shape, for rows of at most UF_NORM_FUSED_THREADS
 * threads' `per_thread` units, or a warp's where `warp_rows` (*fused = 0
 * when the row is longer): rows of up to a warp go UF_COLSUM_THREADS
 * threads to a block, several rows at a time; a longer row has a block of
 * its own, as many threads as it needs.
 * The rows are cut into about as many chunks as the device holds blocks at
 * once (a chunk's column sums are written once, then added by
 * uf_colsum_reduce). */
static uf_status plan_fused(uf_norm_args *a, uf_launch *l, int per_thread, int warp_rows,
                            int *fused)
{
    uf_device_limits lim;
    const uf_status st = ufb_device_limits(&lim);
    *fused = 0;
    if (st != UF_OK)
        return st;
    const int64_t units = (a->cols + UF_ACT_UNIT - 1) / UF_ACT_UNIT;
    const int64_t wanted = (units + per_thread - 1) / per_thread;
    int group = 1;
    while (group < wanted)
        group *= 2;
    const int threads = group > lim.warp_size ? group : UF_COLSUM_THREADS;
    if (group > UF_NORM_FUSED_THREADS || threads > lim.max_threads_per_block ||
        (warp_rows && group > lim.warp_size))
        return UF_OK;
    const int64_t slots = threads / group;
    const int64_t per_mp = UF_NORM_FUSED_THREADS / threads;
    const int64_t target = (int64_t)lim.multiprocessors * (per_mp > 0 ? per_mp : 1);
    const int64_t row_steps = (a->rows + slots - 1) / slots;
    const int64_t steps = (row_steps + target - 1) / target;
    a->group = group;
    a->chunk_rows = steps * slots;
    a->nchunks = (a->rows + a->chunk_rows - 1) / a->chunk_rows;
    l->threads = threads;
    l->blocks = a->nchunks;
    *fused = 1;
    return UF_OK;
}

/* The fused backward (`pass`): one kernel for dx and the chunks' column
 * sums, then their reduction. */
static uf_status queue_fused(const uf_norm_desc *desc, uf_norm_args *a, const uf_launch *l,
                             int pass, void *dw, void *db, uf_stream stream)
{
    uf_colsum_args sums = {NULL, {dw, db}, a->cols, a->nchunks};
    uf_status st = UF_OK;
    if (dw || db) {
        st = uf_colsum_begin(&sums, desc->dtype, stream);
        if (st != UF_OK)
            return st;
        a->partial = (void *)sums.partial;
    }
    st = launchers[pass][desc->dtype - 1][a->vec](l, a);
    return dw || db ? uf_colsum_finish(&sums, desc->dtype, st, stream) : st;
}

/* The backward's scratch, launches and column sums (`dw`, `db` where asked
 * for; `stats_bytes` per statistic), on the current device (the stream's):
 * fused where the row fits, else a row kernel and a column kernel. */
static uf_status queue_backward(const uf_norm_desc *desc, uf_norm_args *a, void *dw, void *db,
                                size_t stats_bytes, uf_stream stream)
{
    uf_launch l = {0, 0, stream, 0, 0};
    int fused = 0, pass = PASS_BWD_FUSED;
    uf_status st = UF_OK;
    const size_t es = uf_dtype_size(desc->dtype);
    if (a->whole && es <= UF_NORM_BWD_HELD_BYTES) {
        /* 16-bit rows that a warp holds at 4 units per thread: a warp
         * per row, whose sums need no barrier (H200, [rows, 768] and
         * [rows, 1024]: 44-47 -> 52-60% of copy, against 2 units and a
         * block of 64 or 128 threads a row). Else 2 units per thread where
         * the row fits a block so; else 4, but only for 16-bit rows (fp32's
         * 4 held units spill, and the fused kernel was as fast there). */
        const int quads = es <= 2;
        if (quads) {
            st = plan_fused(a, &l, 4, 1, &fused);
            pass = PASS_BWD_HELD4;
        }
        if (st == UF_OK && !fused) {
            st = plan_fused(a, &l, 2, 0, &fused);
            pass = PASS_BWD_HELD2;
        }
        if (st == UF_OK && !fused && quads) {
            st = plan_fused(a, &l, 4, 0, &fused);
            pass = PASS_BWD_HELD4;
        }
    }
    if (st == UF_OK && !fused) {
        st = plan_fused(a, &l, UF_NORM_UNITS, 0, &fused);
        pass = PASS_BWD_FUSED;
    }
    if (st != UF_OK || fused)
        return st != UF_OK ? st : queue_fused(desc, a, &l, pass, dw, db, stream);
    st = plan_rows(a, &l, UF_NORM_UNITS);
    if (st != UF_OK)
        return st;
    const int columns = dw || db;
    uf_colsum_args sums = {NULL, {dw, db}, a->cols, 0};
    uf_launch lc = {0, 0, stream, 0, 0};
    if (columns) {
        st = uf_colsum_plan(a->rows, a->cols, 1, &a->tpr, &a->col_tiles, &a->chunk_rows,
                            &a->nchunks, &lc);
        sums.nchunks = a->nchunks;
        if (st == UF_OK && desc->kind == UF_NORM_LAYER)
            st = ufb_malloc_async(&a->shift, stats_bytes, stream);
        if (st != UF_OK)
            return st;
        st = uf_colsum_begin(&sums, desc->dtype, stream);
        if (st != UF_OK) {
            ufb_free_async(a->shift, stream);
            return st;
        }
        a->partial = (void *)sums.partial;
    }
    st = launchers[PASS_BWD][desc->dtype - 1][a->vec](&l, a);
    if (columns) {
        if (st == UF_OK)
            st = launchers[PASS_COLS][desc->dtype - 1][a->vec](&lc, a);
        st = uf_colsum_finish(&sums, desc->dtype, st, stream);
        const uf_status freed = a->shift ? ufb_free_async(a->shift, stream) : UF_OK;
        st = st != UF_OK ? st : freed;
    }
    return st;
}

uf_status uf_norm_forward(const uf_norm_desc *desc, const void *x, const void *residual,
                          const void *weight, const void *bias, void *y, void *h_out, void *mean,
                          void *rstd, uf_stream stream)
{
    uf_norm_args a = {0};
    sizes z = {0, 0, 0};
    uf_status st = check_desc(desc, &a, &z);
    if (st != UF_OK || z.tensor == 0)
        return st;
    a.x = x;
    a.residual = desc->add_residual ? residual : NULL;
    a.weight = a.has_weight ? weight : NULL;
    a.bias = a.has_bias ? bias : NULL;
    a.y = y;
    a.h_out = h_out;
    a.mean = desc->kind == UF_NORM_LAYER ? mean : NULL;
    a.rstd = rstd;
    if (!x || !y || (desc->add_residual && !a.residual) || (a.has_weight && !a.weight) ||
        (a.has_bias && !a.bias))
        return UF_ERR_NULL_POINTER;
    /* y and h_out may replace x or the residual element for element; the
     * vectors and statistics must be apart from every output. */
    const struct {
        const void *p;
        size_t n;
    } outs[] = {{y, z.tensor}, {h_out, z.tensor}, {a.mean, z.stats}, {a.rstd, z.stats}},
      vecs[] = {{a.weight, z.vector}, {a.bias, z.vector}};
    for (int o = 0; o < 4; ++o) {
        if (!outs[o].p)
            continue;
        const int full = o < 2;
        if ((full && !(uf_same_or_disjoint(x, outs[o].p, z.tensor) &&
                       (!a.residual || uf_same_or_disjoint(a.residual, outs[o].p, z.tensor)))) ||
            (!full &&
             (uf_ranges_overlap(x, z.tensor, outs[o].p, outs[o].n) ||
              (a.residual && uf_ranges_overlap(a.residual, z.tensor, outs[o].p, outs[o].n)))))
            return UF_ERR_ALIAS;
        for (int v = 0; v < 2; ++v)
            if (vecs[v].p && uf_ranges_overlap(vecs[v].p, vecs[v].n, outs[o].p, outs[o].n))
                return UF_ERR_ALIAS;
        for (int k = o + 1; k < 4; ++k)
            if (outs[k].p && uf_ranges_overlap(outs[o].p, outs[o].n, outs[k].p, outs[k].n))
                return UF_ERR_ALIAS;
    }
    const void *ptrs[] = {x, a.residual, a.weight, a.bias, y, h_out};
    a.vec = vec_ok(desc, ptrs, 6);
    /* rows of whole units, 16-byte access allowed: no per-unit tests */
    a.whole = a.vec && desc->cols % UF_ACT_UNIT == 0;
    uf_device_scope scope;
    st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = queue_forward(desc, &a, stream);
    return ufb_scope_leave(&scope, st);
}

uf_status uf_norm_backward(const uf_norm_desc *desc, const void *h, const void *weight,
                           const void *mean, const void *rstd, const void *dy, const void *dh_extra,
                           void *dx, void *dweight, void *dbias, uf_stream stream)
{
    uf_norm_args a = {0};
    sizes z = {0, 0, 0};
    uf_status st = check_desc(desc, &a, &z);
    if (st != UF_OK || z.tensor == 0)
        return st;
    const int layer = desc->kind == UF_NORM_LAYER;
    void *dw = a.has_weight ? dweight : NULL, *db = a.has_bias ? dbias : NULL;
    a.x = h;
    a.weight = a.has_weight ? weight : NULL;
    a.mean_in = layer ? mean : NULL;
    a.rstd_in = rstd;
    a.dy = dy;
    a.dh_extra = dh_extra;
    a.y = dx;
    if (!h || !dy || !dx || !rstd || (layer && !mean) || (a.has_weight && !a.weight))
        return UF_ERR_NULL_POINTER;
    /* dx may replace dy or dh_extra, unless the column sums still need dy
     * after dx is written. */
    const int columns = dw || db;
    const struct {
        const void *p;
        size_t n;
    } ins[] = {{h, z.tensor},        {dy, z.tensor},       {dh_extra, z.tensor},
               {a.weight, z.vector}, {a.mean_in, z.stats}, {rstd, z.stats}},
      outs[] = {{dx, z.tensor}, {dw, z.vector}, {db, z.vector}};
    for (int o = 0; o < 3; ++o) {
        if (!outs[o].p)
            continue;
        for (int i = 0; i < 6; ++i) {
            if (!ins[i].p)
                continue;
            const int may_equal = o == 0 && (i == 2 || (i == 1 && !columns));
            if (may_equal ? !uf_same_or_disjoint(ins[i].p, outs[o].p, z.tensor)
                          : uf_ranges_overlap(ins[i].p, ins[i].n, outs[o].p, outs[o].n))
                return UF_ERR_ALIAS;
        }
        for (int k = o + 1; k < 3; ++k)
            if (outs[k].p && uf_ranges_overlap(outs[o].p, outs[o].n, outs[k].p, outs[k].n))
                return UF_ERR_ALIAS;
    }
    const void *ptrs[] = {h, a.weight, dy, dh_extra, dx};
    a.vec = vec_ok(desc, ptrs, 5);
    a.whole = a.vec && desc->cols % UF_ACT_UNIT == 0;
    uf_device_scope scope;
    st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = queue_backward(desc, &a, dw, db, z.stats, stream);
    return ufb_scope_leave(&scope, st);
}
