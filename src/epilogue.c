/*
 * uf_epilogue_forward / _backward: argument checks, the tiling of [rows,
 * cols] from the device's size, the backward's reduction scratch, and the
 * launches.
 */
#include <math.h>

#include "activation_checks.h"
#include "checks.h"
#include "column_sums.h"
#include "kernels/activation_args.h"
#include "kernels/epilogue_args.h"

typedef uf_status (*uf_epi_launcher)(const uf_launch *, const uf_epilogue_args *);

enum {
    PASS_FWD,
    PASS_BWD,
    PASS_FWD_PLAIN,
    PASS_FWD_IDENTITY,
    PASS_FWD_GELU,
    PASS_BWD_SCALAR,
    PASS_BWD_DY,
    PASS_BWD_GELU,
    PASS_BWD_SCALAR_GELU
};

/* Indexed [pass][dtype - 1][vectorised]. Kernels built for one kind of call
 * hold fewer registers than those for any call: the forward without
 * dropout, the forward with dropout and the identity or the GELU; the
 * backward without a row scale, that with the identity, and both passes
 * with the GELU. */
#define UF_EPI_ROW(pass, dt, vec)                                                                  \
    {                                                                                              \
        uf_epi_##pass##_##dt##_v1_launch, uf_epi_##pass##_##dt##_v##vec##_launch                   \
    }
#define UF_EPI_PASS(pass)                                                                          \
    {                                                                                              \
        UF_EPI_ROW(pass, f32, 4), UF_EPI_ROW(pass, f16, 8), UF_EPI_ROW(pass, bf16, 8),             \
            UF_EPI_ROW(pass, f64, 2)                                                               \
    }
static const uf_epi_launcher launchers[9][4][2] = {
    UF_EPI_PASS(fwd),          UF_EPI_PASS(bwd),      UF_EPI_PASS(fwd_plain),
    UF_EPI_PASS(fwd_identity), UF_EPI_PASS(fwd_gelu), UF_EPI_PASS(bwd_scalar),
    UF_EPI_PASS(bwd_dy),       UF_EPI_PASS(bwd_gelu), UF_EPI_PASS(bwd_scalar_gelu)};

static int is_float_dtype(uf_dtype d)
{
    return d == UF_F32 || d == UF_F16 || d == UF_BF16 || d == UF_F64;
}

/* Everything both passes check before looking at pointers. */
static uf_status check_desc(const uf_epilogue_desc *d, const uf_dropout_desc *drop,
                            uf_epilogue_args *a, size_t *bytes, size_t *vec_bytes)
{
    if (!d)
        return UF_ERR_NULL_POINTER;
    if (!is_float_dtype(d->dtype))
        return UF_ERR_BAD_DTYPE;
    if (d->rows < 0 || d->cols < 0)
        return UF_ERR_BAD_SHAPE;
    if ((d->bias != UF_OPERAND_NONE && d->bias != UF_OPERAND_ROW && d->bias != UF_OPERAND_FULL) ||
        (d->scale != UF_OPERAND_NONE && d->scale != UF_OPERAND_SCALAR &&
         d->scale != UF_OPERAND_ROW) ||
        (d->residual != UF_OPERAND_NONE && d->residual != UF_OPERAND_FULL))
        return UF_ERR_BAD_ARGUMENT;
    uf_status st = uf_check_activation(&d->act, &a->kind, a->param);
    if (st == UF_OK)
        st = uf_check_dropout(drop, &a->threshold, &a->keep_scale, &a->seed, &a->offset);
    if (st != UF_OK)
        return st;
    if (d->scale == UF_OPERAND_SCALAR &&
        !(d->dtype == UF_F64 ? isfinite(d->scale_value) : uf_finite_f32(d->scale_value)))
        return UF_ERR_BAD_VALUE;
    const int64_t shape[2] = {d->rows, d->cols};
    int64_t count = 0;
    st = uf_shape_count(shape, 2, &count);
    if (st == UF_OK)
        st = uf_byte_count(count, uf_dtype_size(d->dtype), bytes);
    if (st == UF_OK)
        st = uf_byte_count(d->cols, uf_dtype_size(d->dtype), vec_bytes);
    a->rows = d->rows;
    a->cols = d->cols;
    a->bias_kind = d->bias;
    a->scale_kind = d->scale;
    a->residual_kind = d->residual;
    a->scale_value = d->scale_value;
    return st;
}

/* 16-byte accesses need every tensor and vector 16-byte aligned and rows a
 * whole number of 16-byte words. */
static int vec_ok(const uf_epilogue_desc *d, const void *const *ptrs, int n)
{
    if ((d->cols * (int64_t)uf_dtype_size(d->dtype)) % 16 != 0)
        return 0;
    for (int i = 0; i < n; ++i)
        if (!uf_aligned16(ptrs[i]))
            return 0;
    return 1;
}

/* 0 keeps both passes on the tested per-unit loads (for A/B runs). */
#ifndef UF_EPI_WHOLE
#define UF_EPI_WHOLE 1
#endif

/* uf_epilogue_args.whole: 16-byte aligned rows (a->vec) of whole units. */
static int whole_units(const uf_epilogue_args *a)
{
    return UF_EPI_WHOLE && a->vec && a->cols % UF_ACT_UNIT == 0;
}

/* The forward's launch, on the current device (the stream's). */
static uf_status queue_forward(const uf_epilogue_desc *desc, uf_epilogue_args *a, uf_stream stream)
{
    uf_launch l = {0, 0, stream, 0, 0};
    const uf_status st = uf_colsum_plan(a->rows, a->cols, 0, &a->tpr, &a->col_tiles, &a->chunk_rows,
                                        &a->nchunks, &l);
    const int pass = a->threshold == 0            ? PASS_FWD_PLAIN
                     : a->kind == UF_ACT_IDENTITY ? PASS_FWD_IDENTITY
                     : a->kind == UF_ACT_GELU     ? PASS_FWD_GELU
                                                  : PASS_FWD;
    return st != UF_OK ? st : launchers[pass][desc->dtype - 1][a->vec](&l, a);
}

/* The backward's scratch, launch and column sums (a ROW bias's `db`, a ROW
 * scale's `ds`), on the current device (the stream's). */
static uf_status queue_backward(const uf_epilogue_desc *desc, uf_epilogue_args *a, void *db,
                                void *ds, uf_stream stream)
{
    uf_launch l = {0, 0, stream, 0, 0};
    uf_status st = uf_colsum_plan(a->rows, a->cols, 1, &a->tpr, &a->col_tiles, &a->chunk_rows,
                                  &a->nchunks, &l);
    if (st != UF_OK)
        return st;
    uf_colsum_args sums = {NULL, {db, ds}, a->cols, a->nchunks};
    const int reduce = db || ds;
    if (reduce) {
        st = uf_colsum_begin(&sums, desc->dtype, stream);
        if (st != UF_OK)
            return st;
        a->partial = (void *)sums.partial;
    }
    /* The identity without a row scale reads dy alone: its own kernel
     * measured faster with 16-bit elements (63 against 56% of copy on the
     * H200) and slower with fp32 (54 against 73), which the kernel for any
     * call keeps. */
    /* The GELU's own kernels: 16-bit 61-62 -> 72-73% of copy on an H100
     * (row scale), but fp32 85.6 -> 83.5, so wider elements keep the
     * kernels for any call. */
    const int gelu = a->kind == UF_ACT_GELU && uf_dtype_size(desc->dtype) < 4;
    const int pass = a->scale_kind == UF_OPERAND_ROW ? (gelu ? PASS_BWD_GELU : PASS_BWD)
                     : a->kind != UF_ACT_IDENTITY ? (gelu ? PASS_BWD_SCALAR_GELU : PASS_BWD_SCALAR)
                     : uf_dtype_size(desc->dtype) < 4 ? PASS_BWD_DY
                                                      : PASS_BWD;
    st = launchers[pass][desc->dtype - 1][a->vec](&l, a);
    if (reduce)
        st = uf_colsum_finish(&sums, desc->dtype, st, stream);
    return st;
}

uf_status uf_epilogue_forward(const uf_epilogue_desc *desc, const uf_dropout_desc *drop,
                              const void *x, const void *bias, const void *scale,
                              const void *residual, void *y, uf_stream stream)
{
    uf_epilogue_args a = {0};
    size_t bytes = 0, vbytes = 0;
    uf_status st = check_desc(desc, drop, &a, &bytes, &vbytes);
    if (st != UF_OK || bytes == 0)
        return st;
    a.x = x;
    a.bias = desc->bias != UF_OPERAND_NONE ? bias : NULL;
    a.scale = desc->scale == UF_OPERAND_ROW ? scale : NULL;
    a.residual = desc->residual == UF_OPERAND_FULL ? residual : NULL;
    a.out = y;
    if (!x || !y || (desc->bias != UF_OPERAND_NONE && !a.bias) ||
        (desc->scale == UF_OPERAND_ROW && !a.scale) ||
        (desc->residual == UF_OPERAND_FULL && !a.residual))
        return UF_ERR_NULL_POINTER;
    /* y may replace x, a full bias or the residual element for element;
     * vectors are read by every row, so y must not touch them. */
    const size_t bias_bytes = desc->bias == UF_OPERAND_FULL ? bytes : vbytes;
    if (!uf_same_or_disjoint(x, y, bytes) ||
        (a.residual && !uf_same_or_disjoint(a.residual, y, bytes)) ||
        (a.bias &&
         (desc->bias == UF_OPERAND_FULL ? !uf_same_or_disjoint(a.bias, y, bytes)
                                        : uf_ranges_overlap(a.bias, bias_bytes, y, bytes))) ||
        (a.scale && uf_ranges_overlap(a.scale, vbytes, y, bytes)))
        return UF_ERR_ALIAS;
    const void *ptrs[] = {x, y, a.bias, a.scale, a.residual};
    a.vec = vec_ok(desc, ptrs, 5);
    a.whole = whole_units(&a);
    uf_device_scope scope;
    st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = queue_forward(desc, &a, stream);
    return ufb_scope_leave(&scope, st);
}

uf_status uf_epilogue_backward(const uf_epilogue_desc *desc, const uf_dropout_desc *drop,
                               const void *x, const void *bias, const void *scale, const void *dy,
                               void *dx, void *dbias, void *dscale, void *dresidual,
                               uf_stream stream)
{
    uf_epilogue_args a = {0};
    size_t bytes = 0, vbytes = 0;
    uf_status st = check_desc(desc, drop, &a, &bytes, &vbytes);
    if (st != UF_OK || bytes == 0)
        return st;
    a.x = x;
    a.bias = desc->bias != UF_OPERAND_NONE ? bias : NULL;
    a.scale = desc->scale == UF_OPERAND_ROW ? scale : NULL;
    a.dy = dy;
    a.out = dx;
    if (!x || !dy || !dx || (desc->bias != UF_OPERAND_NONE && !a.bias) ||
        (desc->scale == UF_OPERAND_ROW && !a.scale))
        return UF_ERR_NULL_POINTER;
    void *db = desc->bias != UF_OPERAND_NONE ? dbias : NULL;
    void *ds = desc->scale == UF_OPERAND_ROW ? dscale : NULL;
    void *dr = desc->residual == UF_OPERAND_FULL ? dresidual : NULL;
    /* Outputs: dx may replace dy or x; every other output touches nothing. */
    const size_t db_bytes = desc->bias == UF_OPERAND_FULL ? bytes : vbytes;
    const size_t bias_bytes = db_bytes;
    struct {
        const void *p;
        size_t n;
    } ins[] = {{x, bytes}, {dy, bytes}, {a.bias, bias_bytes}, {a.scale, vbytes}},
      outs[] = {{dx, bytes}, {db, db_bytes}, {ds, vbytes}, {dr, bytes}};
    for (int o = 0; o < 4; ++o) {
        if (!outs[o].p)
            continue;
        for (int i = 0; i < 4; ++i) {
            if (!ins[i].p)
                continue;
            const int allowed_same = o == 0 && i < 2; /* dx == x or dx == dy */
            if (allowed_same ? !uf_same_or_disjoint(ins[i].p, outs[o].p, bytes)
                             : uf_ranges_overlap(ins[i].p, ins[i].n, outs[o].p, outs[o].n))
                return UF_ERR_ALIAS;
        }
        for (int k = o + 1; k < 4; ++k)
            if (outs[k].p && uf_ranges_overlap(outs[o].p, outs[o].n, outs[k].p, outs[k].n))
                return UF_ERR_ALIAS;
    }
    a.dbias = desc->bias == UF_OPERAND_FULL ? db : NULL;
    a.dresidual = dr;
    const void *ptrs[] = {x, dy, dx, a.bias, a.scale, a.dbias, dr};
    a.vec = vec_ok(desc, ptrs, 7);
    a.whole = whole_units(&a);
    uf_device_scope scope;
    st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = queue_backward(desc, &a, desc->bias == UF_OPERAND_ROW ? db : NULL, ds, stream);
    return ufb_scope_leave(&scope, st);
}
