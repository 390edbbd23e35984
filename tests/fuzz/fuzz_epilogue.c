/*
 * Fused epilogue calls: a descriptor from the input (dtype, rows, cols,
 * operand kinds valid or not, activation and its parameters, scale_value),
 * a dropout descriptor, tensors placed by fuzz_arena, and the status that
 * the checking order of src/epilogue.c gives (docs/api.md, "Fused
 * epilogue", lists the statuses; the order is the code's, the same as the
 * activations'). Then the output checks of fuzz_epilogue_check.c.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_activation.h"
#include "fuzz_arena.h"
#include "fuzz_check.h"
#include "fuzz_epilogue.h"
#include "fuzz_expect.h"
#include "fuzz_ops.h"
#include "fuzz_trace.h"
#include "fuzz_values.h"

/* Mostly a kind the slot allows; sometimes any of the four (SCALAR is only
 * allowed for the scale, ROW not for the residual), or no kind at all. */
static uf_operand decode_operand(fz_bytes *b, const uf_operand *allowed, int n)
{
    static const int64_t invalid[] = {-1, 4, 5, 255, INT32_MIN, INT32_MAX, 0x10000, 100};
    const uint8_t v = fz_u8(b);
    if (v < 200)
        return allowed[v % n];
    if (v < 232)
        return (uf_operand)(v % 4);
    return (uf_operand)invalid[v % 8];
}

static int operands_ok(const uf_epilogue_desc *d)
{
    return (d->bias == UF_OPERAND_NONE || d->bias == UF_OPERAND_ROW ||
            d->bias == UF_OPERAND_FULL) &&
           (d->scale == UF_OPERAND_NONE || d->scale == UF_OPERAND_SCALAR ||
            d->scale == UF_OPERAND_ROW) &&
           (d->residual == UF_OPERAND_NONE || d->residual == UF_OPERAND_FULL);
}

typedef struct epi_plan {
    fz_expect e;
    int64_t count;
    size_t bytes, vbytes; /* x and a [cols] vector */
    int sized;            /* every check before the pointers passed (or only may fail) */
} epi_plan;

/* The checks src/epilogue.c makes before looking at a pointer, in its
 * order: descriptor, dtype, extents, operand kinds, activation kind and
 * parameters, dropout p, scale_value, element and byte counts. */
static epi_plan check_desc(const uf_epilogue_desc *d, int desc_null, const uf_dropout_desc *drop)
{
    epi_plan p;
    memset(&p, 0, sizeof p);
    if (desc_null) {
        fz_first(&p.e, UF_ERR_NULL_POINTER);
        return p;
    }
    if (!fz_is_float(d->dtype)) {
        fz_first(&p.e, UF_ERR_BAD_DTYPE);
        return p;
    }
    if (d->rows < 0 || d->cols < 0) {
        fz_first(&p.e, UF_ERR_BAD_SHAPE);
        return p;
    }
    if (!operands_ok(d) || !((int)d->act.kind >= 0 && d->act.kind < UF_ACT_COUNT)) {
        fz_first(&p.e, UF_ERR_BAD_ARGUMENT);
        return p;
    }
    const int wide = fz_act_params_ok(d->act.kind, d->act.param, 0),
              narrow = fz_act_params_ok(d->act.kind, d->act.param, 1);
    if (!wide && !narrow) {
        fz_first(&p.e, UF_ERR_BAD_VALUE);
        return p;
    }
    if (wide != narrow)
        p.e.may |= FZ_BIT(UF_ERR_BAD_VALUE); /* "finite in fp32" read either way */
    if (drop && !(drop->p >= 0 && drop->p <= 1)) {
        fz_first(&p.e, UF_ERR_BAD_VALUE);
        return p;
    }
    if (d->scale == UF_OPERAND_SCALAR) {
        const double v = d->scale_value;
        const int fits = isfinite(v) && fabs(v) <= FLT_MAX, rounds = isfinite((float)v);
        if (d->dtype == UF_F64 ? !isfinite(v) : !fits && !rounds) {
            fz_first(&p.e, UF_ERR_BAD_VALUE);
            return p;
        }
        /* "Finite in fp32" as given or once rounded; for f64 the header asks
         * for fp32 while the arithmetic is fp64, so either answer goes. */
        if (!fits)
            p.e.may |= FZ_BIT(UF_ERR_BAD_VALUE);
    }
    const size_t es = fz_esize(d->dtype);
    if (d->rows > 0 && d->cols > 0 && d->rows > INT64_MAX / d->cols) {
        fz_first(&p.e, UF_ERR_OVERFLOW);
        return p;
    }
    p.count = d->rows * d->cols;
    if ((uint64_t)p.count > (uint64_t)INT64_MAX / es) {
        fz_first(&p.e, UF_ERR_OVERFLOW);
        return p;
    }
    p.bytes = (size_t)p.count * es;
    if ((uint64_t)d->cols > (uint64_t)INT64_MAX / es) {
        /* Only possible with rows = 0: "rows * cols = 0 is a no-op", yet a
         * [cols] vector's byte count overflows; the code says overflow. */
        p.e.may |= FZ_BIT(UF_ERR_OVERFLOW);
    } else {
        p.vbytes = (size_t)d->cols * es;
    }
    p.sized = 1;
    return p;
}

static void describe(char *s, size_t n, const char *fn, const uf_epilogue_desc *d, int desc_null,
                     const uf_dropout_desc *drop)
{
    int k = snprintf(s, n,
                     "%s(%sdtype=%d rows=%lld cols=%lld bias=%d act=%d(%a,%a) scale=%d(%a) "
                     "residual=%d ",
                     fn, desc_null ? "desc=NULL " : "", (int)d->dtype, (long long)d->rows,
                     (long long)d->cols, (int)d->bias, (int)d->act.kind, d->act.param[0],
                     d->act.param[1], (int)d->scale, d->scale_value, (int)d->residual);
    if (k > 0 && (size_t)k < n && drop)
        snprintf(s + k, n - (size_t)k, "p=%a seed=%llu offset=%llu)", drop->p,
                 (unsigned long long)drop->seed, (unsigned long long)drop->offset);
    else if (k > 0 && (size_t)k < n)
        snprintf(s + k, n - (size_t)k, "drop=NULL)");
}

/* Tensors of one call, by role (forward: the first four and Y). */
enum { T_X, T_BIAS, T_SCALE, T_RES, T_DY, T_Y, T_DBIAS, T_DSCALE, T_DRES, T_N };

/* A tensor's contents as doubles: before the call for inputs, after it for
 * outputs; NULL when absent. */
static double *widen(const fz_arena *a, const int *t, int r, uf_dtype dt, int64_t n, int after)
{
    if (t[r] < 0 || a->t[t[r]].null)
        return NULL;
    return fz_widen_new(dt, after ? fz_ptr(a, t[r]) : fz_before(a, t[r]), n);
}

/* Both are tensors the call uses and they overlap without starting at the
 * same byte. */
static int partly(const fz_arena *a, int i, int j)
{
    return fz_overlap(a, i, j) && !fz_same(a, i, j);
}

void fz_epilogue(fz_bytes *b, int backward, uf_stream stream)
{
    static const uf_operand bias_kinds[] = {UF_OPERAND_NONE, UF_OPERAND_ROW, UF_OPERAND_FULL};
    static const uf_operand scale_kinds[] = {UF_OPERAND_NONE, UF_OPERAND_SCALAR, UF_OPERAND_ROW};
    static const uf_operand residual_kinds[] = {UF_OPERAND_NONE, UF_OPERAND_FULL};
    uf_epilogue_desc d;
    memset(&d, 0, sizeof d);
    const int desc_null = fz_u8(b) == 0xff;
    d.dtype = fz_dtype(b);
    d.rows = fz_dim(b);
    d.cols = fz_dim(b);
    fz_fit_rows(&d.rows, d.cols, FZ_CAP);
    d.bias = decode_operand(b, bias_kinds, 3);
    d.act.kind = fz_decode_act_kind(b);
    const uf_activation_desc dflt = uf_activation_default(d.act.kind);
    for (int i = 0; i < 2; ++i)
        d.act.param[i] = fz_u8(b) < 128 ? dflt.param[i] : fz_real(b);
    d.scale = decode_operand(b, scale_kinds, 3);
    d.scale_value = fz_real(b);
    d.residual = decode_operand(b, residual_kinds, 2);
    uf_dropout_desc drop;
    const int drop_null = fz_u8(b) < 48;
    drop.p = fz_decode_p(b);
    drop.seed = fz_decode_u64(b);
    drop.offset = fz_decode_u64(b);
    const uf_dropout_desc *dp = drop_null ? NULL : &drop;

    epi_plan p = check_desc(&d, desc_null, dp);
    const size_t es = fz_esize(d.dtype);
    /* A valid call beyond FZ_CAP elements is only made when a NULL pointer
     * must stop it before any memory is touched. */
    const int huge = !p.e.must && p.count > FZ_CAP;
    const int have_data = !p.e.must && p.count > 0 && !huge;
    const int bias_on = p.sized && d.bias != UF_OPERAND_NONE;
    const int scale_on = p.sized && d.scale == UF_OPERAND_ROW;
    const int res_on = p.sized && d.residual == UF_OPERAND_FULL;
    const size_t tb = have_data ? p.bytes : 64, vb = have_data ? p.vbytes : 64;
    const size_t bias_b = d.bias == UF_OPERAND_FULL ? tb : vb;

    fz_arena a;
    memset(&a, 0, sizeof a);
    int t[T_N];
    for (int i = 0; i < T_N; ++i)
        t[i] = -1;
    /* Absent operands are still placed: the call must ignore them (their
     * pointers are neither checked nor used), so they are not outputs. */
    t[T_X] = fz_place(&a, b, "x", tb, es, 0, 1);
    t[T_BIAS] = fz_place(&a, b, "bias", bias_on ? bias_b : 64, es, 0, 1);
    t[T_SCALE] = fz_place(&a, b, "scale", scale_on ? vb : 64, es, 0, 1);
    if (!backward) {
        t[T_RES] = fz_place(&a, b, "residual", res_on ? tb : 64, es, 0, 1);
        t[T_Y] = fz_place(&a, b, "y", tb, es, 1, 1);
    } else {
        t[T_DY] = fz_place(&a, b, "dy", tb, es, 0, 1);
        t[T_Y] = fz_place(&a, b, "dx", tb, es, 1, 1);
        /* Optional gradients: NULL often, since skipping one is a use case. */
        static const char *const names[] = {"dbias", "dscale", "dresidual"};
        const size_t sizes[] = {bias_on ? bias_b : 64, scale_on ? vb : 64, res_on ? tb : 64};
        const int used[] = {bias_on || !p.sized, scale_on || !p.sized, res_on || !p.sized};
        for (int k = 0; k < 3; ++k)
            t[T_DBIAS + k] = fz_u8(b) < 64 ? fz_place_null(&a, names[k], used[k])
                                           : fz_place(&a, b, names[k], sizes[k], es, used[k], 1);
    }
    fz_arena_build(&a);
    if (have_data) {
        const int used[] = {1, bias_on, scale_on, res_on, backward};
        for (int r = T_X; r <= T_DY; ++r)
            if (used[r] && t[r] >= 0 && !a.t[t[r]].null)
                fz_fill(b, d.dtype, fz_ptr(&a, t[r]), a.t[t[r]].bytes / es);
    }
    fz_arena_seal(&a);

    /* NULL pointers, then overlaps, for non-empty calls. */
    if (!p.e.must && p.count > 0) {
        const int x = t[T_X], bias = t[T_BIAS], scale = t[T_SCALE], out = t[T_Y];
        int null = a.t[x].null || a.t[out].null || (bias_on && a.t[bias].null) ||
                   (scale_on && a.t[scale].null);
        if (!backward)
            null |= res_on && a.t[t[T_RES]].null;
        else
            null |= a.t[t[T_DY]].null;
        if (null) {
            fz_first(&p.e, UF_ERR_NULL_POINTER);
        } else if (huge) {
            fz_arena_free(&a);
            return;
        }
        int alias = 0;
        if (!null && !backward) {
            /* y may replace x, a FULL bias or the residual; it must not touch
             * a ROW vector, which every row reads. */
            const int res = t[T_RES];
            alias = partly(&a, x, out) || (res_on && partly(&a, res, out)) ||
                    (bias_on && (d.bias == UF_OPERAND_FULL ? partly(&a, bias, out)
                                                           : fz_overlap(&a, bias, out))) ||
                    (scale_on && fz_overlap(&a, scale, out));
        } else if (!null) {
            /* dx may replace x or dy; every other output is apart from every
             * tensor and from the other outputs. */
            const int ins[] = {x, t[T_DY], bias_on ? bias : -1, scale_on ? scale : -1};
            const int outs[] = {out, bias_on ? t[T_DBIAS] : -1, scale_on ? t[T_DSCALE] : -1,
                                res_on ? t[T_DRES] : -1};
            for (int o = 0; o < 4; ++o) {
                if (outs[o] < 0 || a.t[outs[o]].null)
                    continue;
                for (int i = 0; i < 4; ++i)
                    if (ins[i] >= 0)
                        alias |= o == 0 && i < 2 ? partly(&a, ins[i], outs[o])
                                                 : fz_overlap(&a, ins[i], outs[o]);
                for (int k = o + 1; k < 4; ++k)
                    if (outs[k] >= 0 && !a.t[outs[k]].null)
                        alias |= fz_overlap(&a, outs[o], outs[k]);
            }
        }
        if (alias)
            fz_first(&p.e, UF_ERR_ALIAS);
    }

    char what[400];
    describe(what, sizeof what, backward ? "epilogue_backward" : "epilogue_forward", &d, desc_null,
             dp);
    fz_trace_call(what, &a);
    const uf_epilogue_desc *desc = desc_null ? NULL : &d;
    uf_status st;
    if (!backward)
        st = uf_epilogue_forward(desc, dp, fz_ptr(&a, t[T_X]), fz_ptr(&a, t[T_BIAS]),
                                 fz_ptr(&a, t[T_SCALE]), fz_ptr(&a, t[T_RES]), fz_ptr(&a, t[T_Y]),
                                 stream);
    else
        st = uf_epilogue_backward(desc, dp, fz_ptr(&a, t[T_X]), fz_ptr(&a, t[T_BIAS]),
                                  fz_ptr(&a, t[T_SCALE]), fz_ptr(&a, t[T_DY]), fz_ptr(&a, t[T_Y]),
                                  fz_ptr(&a, t[T_DBIAS]), fz_ptr(&a, t[T_DSCALE]),
                                  fz_ptr(&a, t[T_DRES]), stream);
    fz_arena_check(&a, st, what);
    fz_expect_status(&p.e, st, what);

    if (st == UF_OK && have_data && !p.e.may) {
        const int64_t n = p.count, nb = d.bias == UF_OPERAND_FULL ? n : d.cols;
        fz_epi_io c;
        memset(&c, 0, sizeof c);
        c.d = &d;
        c.p = drop_null ? 0 : drop.p;
        c.seed = drop.seed;
        c.offset = drop.offset;
        double *v[T_N];
        memset(v, 0, sizeof v);
        v[T_X] = widen(&a, t, T_X, d.dtype, n, 0);
        v[T_BIAS] = bias_on ? widen(&a, t, T_BIAS, d.dtype, nb, 0) : NULL;
        v[T_SCALE] = scale_on ? widen(&a, t, T_SCALE, d.dtype, d.cols, 0) : NULL;
        v[T_Y] = widen(&a, t, T_Y, d.dtype, n, 1);
        c.x = v[T_X];
        c.bias = v[T_BIAS];
        c.scale = v[T_SCALE];
        if (!backward) {
            v[T_RES] = res_on ? widen(&a, t, T_RES, d.dtype, n, 0) : NULL;
            c.residual = v[T_RES];
            c.y = v[T_Y];
            fz_check_epilogue_forward(&c, what);
        } else {
            v[T_DY] = widen(&a, t, T_DY, d.dtype, n, 0);
            v[T_DBIAS] = bias_on ? widen(&a, t, T_DBIAS, d.dtype, nb, 1) : NULL;
            v[T_DSCALE] = scale_on ? widen(&a, t, T_DSCALE, d.dtype, d.cols, 1) : NULL;
            v[T_DRES] = res_on ? widen(&a, t, T_DRES, d.dtype, n, 1) : NULL;
            c.dy = v[T_DY];
            c.dx = v[T_Y];
            c.dbias = v[T_DBIAS];
            c.dscale = v[T_DSCALE];
            c.dresidual = v[T_DRES];
            fz_check_epilogue_backward(&c, what);
        }
        for (int i = 0; i < T_N; ++i)
            free(v[i]);
    }
    fz_arena_free(&a);
}
