/*
 * LayerNorm and RMSNorm calls: a descriptor from the input (kind, dtype,
 * rows, cols, eps, the flags, valid or not), tensors placed by fuzz_arena
 * (optional outputs often NULL), and the status that the checking order of
 * src/norm.c gives (docs/api.md, "LayerNorm and RMSNorm", lists the
 * statuses; the order is the code's). Then the output checks of
 * fuzz_norm_check.c.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_arena.h"
#include "fuzz_check.h"
#include "fuzz_expect.h"
#include "fuzz_norm.h"
#include "fuzz_ops.h"
#include "fuzz_trace.h"
#include "fuzz_values.h"

static uf_norm_kind decode_kind(fz_bytes *b)
{
    static const int64_t invalid[] = {0, 3, -1, 255, INT32_MIN, INT32_MAX, 4, 0x101};
    const uint8_t v = fz_u8(b);
    return (uf_norm_kind)(v < 232 ? 1 + v % 2 : invalid[v % 8]);
}

/* Mostly the usual values; sometimes 0, -0, tiny, or any double (negative,
 * NaN, infinite, subnormal). */
static double decode_eps(fz_bytes *b)
{
    static const double common[] = {1e-5, 1e-6, 0.0, 1e-12, 0.1, 1.0, -0.0, 1e-30};
    const uint8_t t = fz_u8(b);
    return t < 160 ? common[t % 8] : fz_real(b);
}

/* A flag: 0, 1, or another true value (any nonzero int counts). `likely`
 * is what the middle range gives, so that RMSNorm is seldom given a bias. */
static int decode_flag(fz_bytes *b, int likely)
{
    static const int odd[] = {2, -1, INT_MIN, INT_MAX, 256, 3, -2, 0x7f};
    const uint8_t v = fz_u8(b);
    if (v < 96)
        return 0;
    if (v < 208)
        return likely;
    if (v < 224)
        return 1;
    return odd[v % 8];
}

typedef struct norm_plan {
    fz_expect e;
    int64_t count;
    size_t tensor, vector, stats; /* bytes */
    int sized;                    /* every check before the pointers passed (or only may fail) */
} norm_plan;

/* Product overflowing int64 (both >= 0). */
static int mul_over(uint64_t n, uint64_t size)
{
    return size && n > (uint64_t)INT64_MAX / size;
}

/* The checks src/norm.c makes before looking at a pointer, in its order:
 * descriptor, dtype, extents, kind and bias, eps, element and byte counts
 * (x, a [cols] vector, the [rows] statistics). */
static norm_plan check_desc(const uf_norm_desc *d, int desc_null)
{
    norm_plan p;
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
    if ((d->kind != UF_NORM_LAYER && d->kind != UF_NORM_RMS) ||
        (d->kind == UF_NORM_RMS && d->has_bias)) {
        fz_first(&p.e, UF_ERR_BAD_ARGUMENT);
        return p;
    }
    if (!(d->eps >= 0) || !isfinite(d->eps)) {
        fz_first(&p.e, UF_ERR_BAD_VALUE);
        return p;
    }
    const size_t es = fz_esize(d->dtype), ss = d->dtype == UF_F64 ? 8 : 4;
    if (d->rows > 0 && d->cols > 0 && d->rows > INT64_MAX / d->cols) {
        fz_first(&p.e, UF_ERR_OVERFLOW);
        return p;
    }
    p.count = d->rows * d->cols;
    if (mul_over((uint64_t)p.count, es)) {
        fz_first(&p.e, UF_ERR_OVERFLOW);
        return p;
    }
    p.tensor = (size_t)p.count * es;
    const int vec_over = mul_over((uint64_t)d->cols, es),
              stats_over = mul_over((uint64_t)d->rows, ss);
    if (vec_over || stats_over) {
        /* With rows * cols > 0 the statistics are real tensors (f16, one
         * column, 2^61 + 1 rows: x fits, the fp32 statistics do not). An
         * empty call is documented as a no-op, yet the code says overflow
         * when a vector or the statistics would not fit. */
        if (p.count > 0) {
            fz_first(&p.e, UF_ERR_OVERFLOW);
            return p;
        }
        p.e.may |= FZ_BIT(UF_ERR_OVERFLOW);
    }
    p.vector = vec_over ? 0 : (size_t)d->cols * es;
    p.stats = stats_over ? 0 : (size_t)d->rows * ss;
    p.sized = 1;
    return p;
}

static void describe(char *s, size_t n, const char *fn, const uf_norm_desc *d, int desc_null)
{
    snprintf(s, n,
             "%s(%skind=%d dtype=%d rows=%lld cols=%lld eps=%a has_weight=%d has_bias=%d "
             "add_residual=%d)",
             fn, desc_null ? "desc=NULL " : "", (int)d->kind, (int)d->dtype, (long long)d->rows,
             (long long)d->cols, d->eps, d->has_weight, d->has_bias, d->add_residual);
}

/* Tensors of the forward and of the backward, by role. */
enum { F_X, F_RES, F_W, F_B, F_Y, F_HOUT, F_MEAN, F_RSTD, F_N };
enum { B_H, B_W, B_MEAN, B_RSTD, B_DY, B_EXTRA, B_DX, B_DW, B_DB, B_N };

static int partly(const fz_arena *a, int i, int j)
{
    return fz_overlap(a, i, j) && !fz_same(a, i, j);
}

static int is_null(const fz_arena *a, int i)
{
    return i < 0 || a->t[i].null;
}

/* Places an optional output, NULL about one time in four (skipping it is
 * a use case, not a fault). */
static int place_optional(fz_arena *a, fz_bytes *b, const char *name, size_t bytes, size_t align,
                          int output)
{
    return fz_u8(b) < 64 ? fz_place_null(a, name, output)
                         : fz_place(a, b, name, bytes, align, output, 1);
}

static double *widen(const fz_arena *a, int i, uf_dtype dt, int64_t n, int after)
{
    if (is_null(a, i))
        return NULL;
    return fz_widen_new(dt, after ? fz_ptr(a, i) : fz_before(a, i), n);
}

/* The statistics of each row of h in float64 (mean; rstd from the biased
 * variance, or the mean square for RMSNorm), written in the stats dtype:
 * inputs a backward call sees when it follows a forward. */
static void consistent_stats(const uf_norm_desc *d, const double *h, void *mean, void *rstd)
{
    const uf_dtype sd = d->dtype == UF_F64 ? UF_F64 : UF_F32;
    const size_t ss = fz_esize(sd);
    double *m = (double *)malloc((size_t)d->rows * sizeof *m);
    double *r = (double *)malloc((size_t)d->rows * sizeof *r);
    void *tmp = malloc((size_t)d->rows * ss);
    FZ_REQUIRE(m && r && tmp, "out of host memory");
    for (int64_t row = 0; row < d->rows; ++row) {
        const double *v = h + row * d->cols;
        double s = 0, q = 0;
        for (int64_t j = 0; j < d->cols; ++j)
            s += v[j];
        m[row] = s / (double)d->cols;
        for (int64_t j = 0; j < d->cols; ++j) {
            const double c = d->kind == UF_NORM_LAYER ? v[j] - m[row] : v[j];
            q += c * c;
        }
        r[row] = 1 / sqrt(q / (double)d->cols + d->eps);
    }
    /* Converted in aligned buffers: the statistics may lie anywhere. */
    FZ_REQUIRE(uf_convert_host(tmp, sd, m, UF_F64, (size_t)d->rows) == UF_OK, "convert");
    if (mean)
        memcpy(mean, tmp, (size_t)d->rows * ss);
    FZ_REQUIRE(uf_convert_host(tmp, sd, r, UF_F64, (size_t)d->rows) == UF_OK, "convert");
    if (rstd)
        memcpy(rstd, tmp, (size_t)d->rows * ss);
    free(tmp);
    free(r);
    free(m);
}

void fz_norm(fz_bytes *b, int backward, uf_stream stream)
{
    uf_norm_desc d;
    memset(&d, 0, sizeof d);
    const int desc_null = fz_u8(b) == 0xff;
    d.kind = decode_kind(b);
    d.dtype = fz_dtype(b);
    d.rows = fz_dim(b);
    d.cols = fz_dim(b);
    fz_fit_rows(&d.rows, d.cols, FZ_CAP);
    d.eps = decode_eps(b);
    d.has_weight = decode_flag(b, 1);
    d.has_bias = decode_flag(b, d.kind == UF_NORM_LAYER);
    d.add_residual = decode_flag(b, 1);

    norm_plan p = check_desc(&d, desc_null);
    const uf_dtype sd = d.dtype == UF_F64 ? UF_F64 : UF_F32;
    const size_t es = fz_esize(d.dtype), ss = fz_esize(sd);
    /* A valid call beyond FZ_CAP elements is only made when a NULL pointer
     * must stop it before any memory is touched. */
    const int huge = !p.e.must && p.count > FZ_CAP;
    const int have_data = !p.e.must && p.count > 0 && !huge;
    const int layer = d.kind == UF_NORM_LAYER;
    /* Operands the call reads and outputs it writes; the rest it ignores. */
    const int w_on = p.sized && d.has_weight, b_on = p.sized && d.has_bias;
    const int res_on = p.sized && d.add_residual, mean_on = !p.sized || layer;
    const size_t tb = have_data ? p.tensor : 64, vb = have_data ? p.vector : 64;
    const size_t sb = have_data ? p.stats : 64;

    fz_arena a;
    memset(&a, 0, sizeof a);
    int t[B_N];
    for (int i = 0; i < B_N; ++i)
        t[i] = -1;
    if (!backward) {
        t[F_X] = fz_place(&a, b, "x", tb, es, 0, 1);
        t[F_RES] = fz_place(&a, b, "residual", res_on ? tb : 64, es, 0, 1);
        t[F_W] = fz_place(&a, b, "weight", w_on ? vb : 64, es, 0, 1);
        t[F_B] = fz_place(&a, b, "bias", b_on ? vb : 64, es, 0, 1);
        t[F_Y] = fz_place(&a, b, "y", tb, es, 1, 1);
        t[F_HOUT] = place_optional(&a, b, "h_out", tb, es, 1);
        t[F_MEAN] = place_optional(&a, b, "mean", mean_on ? sb : 64, ss, mean_on);
        t[F_RSTD] = place_optional(&a, b, "rstd", sb, ss, 1);
    } else {
        t[B_H] = fz_place(&a, b, "h", tb, es, 0, 1);
        t[B_W] = fz_place(&a, b, "weight", w_on ? vb : 64, es, 0, 1);
        t[B_MEAN] = fz_place(&a, b, "mean", mean_on ? sb : 64, ss, 0, 1);
        t[B_RSTD] = fz_place(&a, b, "rstd", sb, ss, 0, 1);
        t[B_DY] = fz_place(&a, b, "dy", tb, es, 0, 1);
        t[B_EXTRA] = place_optional(&a, b, "dh_extra", tb, es, 0);
        t[B_DX] = fz_place(&a, b, "dx", tb, es, 1, 1);
        t[B_DW] = place_optional(&a, b, "dweight", w_on ? vb : 64, es, w_on || !p.sized);
        t[B_DB] = place_optional(&a, b, "dbias", b_on ? vb : 64, es, b_on || !p.sized);
    }
    fz_arena_build(&a);
    if (have_data) {
        if (!backward) {
            const int used[] = {1, res_on, w_on, b_on};
            for (int r = F_X; r <= F_B; ++r)
                if (used[r] && !is_null(&a, t[r]))
                    fz_fill(b, d.dtype, fz_ptr(&a, t[r]), a.t[t[r]].bytes / es);
        } else {
            const int used[] = {1, w_on, 0, 0, 1, 1};
            for (int r = B_H; r <= B_EXTRA; ++r)
                if (used[r] && !is_null(&a, t[r]))
                    fz_fill(b, d.dtype, fz_ptr(&a, t[r]), a.t[t[r]].bytes / es);
            /* The statistics: those of h, or any values. */
            const int ms[] = {B_MEAN, B_RSTD};
            if (fz_u8(b) < 128 && !is_null(&a, t[B_H])) {
                double *h = widen(&a, t[B_H], d.dtype, p.count, 1);
                consistent_stats(&d, h,
                                 mean_on && !is_null(&a, t[B_MEAN]) ? fz_ptr(&a, t[B_MEAN]) : NULL,
                                 is_null(&a, t[B_RSTD]) ? NULL : fz_ptr(&a, t[B_RSTD]));
                free(h);
            } else {
                for (int k = 0; k < 2; ++k)
                    if ((k || mean_on) && !is_null(&a, t[ms[k]]))
                        fz_fill(b, sd, fz_ptr(&a, t[ms[k]]), (size_t)d.rows);
            }
        }
    }
    fz_arena_seal(&a);

    /* NULL pointers, then overlaps, for non-empty calls. */
    if (!p.e.must && p.count > 0) {
        int null, alias = 0;
        if (!backward)
            null = is_null(&a, t[F_X]) || is_null(&a, t[F_Y]) ||
                   (res_on && is_null(&a, t[F_RES])) || (w_on && is_null(&a, t[F_W])) ||
                   (b_on && is_null(&a, t[F_B]));
        else
            null = is_null(&a, t[B_H]) || is_null(&a, t[B_DY]) || is_null(&a, t[B_DX]) ||
                   is_null(&a, t[B_RSTD]) || (layer && is_null(&a, t[B_MEAN])) ||
                   (w_on && is_null(&a, t[B_W]));
        if (null) {
            fz_first(&p.e, UF_ERR_NULL_POINTER);
        } else if (huge) {
            fz_arena_free(&a);
            return;
        } else if (!backward) {
            /* y and h_out may each replace x or the residual, not each other;
             * the statistics and the vectors are apart from every output. */
            const int x = t[F_X], res = res_on ? t[F_RES] : -1;
            const int vecs[] = {w_on ? t[F_W] : -1, b_on ? t[F_B] : -1};
            const int outs[] = {t[F_Y], t[F_HOUT], layer ? t[F_MEAN] : -1, t[F_RSTD]};
            for (int o = 0; o < 4; ++o) {
                if (is_null(&a, outs[o]))
                    continue;
                if (o < 2)
                    alias |= partly(&a, x, outs[o]) || (res >= 0 && partly(&a, res, outs[o]));
                else
                    alias |=
                        fz_overlap(&a, x, outs[o]) || (res >= 0 && fz_overlap(&a, res, outs[o]));
                for (int v = 0; v < 2; ++v)
                    alias |= vecs[v] >= 0 && fz_overlap(&a, vecs[v], outs[o]);
                for (int k = o + 1; k < 4; ++k)
                    alias |= !is_null(&a, outs[k]) && fz_overlap(&a, outs[o], outs[k]);
            }
        } else {
            /* dx may replace dh_extra, or dy when no column sum reads dy after
             * dx is written; any other overlap of an output is refused. */
            const int columns = (w_on && !is_null(&a, t[B_DW])) || (b_on && !is_null(&a, t[B_DB]));
            const int ins[] = {
                t[B_H], t[B_DY], t[B_EXTRA], w_on ? t[B_W] : -1, layer ? t[B_MEAN] : -1, t[B_RSTD]};
            const int outs[] = {t[B_DX], w_on ? t[B_DW] : -1, b_on ? t[B_DB] : -1};
            for (int o = 0; o < 3; ++o) {
                if (is_null(&a, outs[o]))
                    continue;
                for (int i = 0; i < 6; ++i) {
                    if (is_null(&a, ins[i]))
                        continue;
                    const int may_equal = o == 0 && (i == 2 || (i == 1 && !columns));
                    alias |=
                        may_equal ? partly(&a, ins[i], outs[o]) : fz_overlap(&a, ins[i], outs[o]);
                }
                for (int k = o + 1; k < 3; ++k)
                    alias |= !is_null(&a, outs[k]) && fz_overlap(&a, outs[o], outs[k]);
            }
        }
        if (alias)
            fz_first(&p.e, UF_ERR_ALIAS);
    }

    char what[256];
    describe(what, sizeof what, backward ? "norm_backward" : "norm_forward", &d, desc_null);
    fz_trace_call(what, &a);
    const uf_norm_desc *desc = desc_null ? NULL : &d;
    uf_status st;
    if (!backward)
        st = uf_norm_forward(desc, fz_ptr(&a, t[F_X]), fz_ptr(&a, t[F_RES]), fz_ptr(&a, t[F_W]),
                             fz_ptr(&a, t[F_B]), fz_ptr(&a, t[F_Y]), fz_ptr(&a, t[F_HOUT]),
                             fz_ptr(&a, t[F_MEAN]), fz_ptr(&a, t[F_RSTD]), stream);
    else
        st =
            uf_norm_backward(desc, fz_ptr(&a, t[B_H]), fz_ptr(&a, t[B_W]), fz_ptr(&a, t[B_MEAN]),
                             fz_ptr(&a, t[B_RSTD]), fz_ptr(&a, t[B_DY]), fz_ptr(&a, t[B_EXTRA]),
                             fz_ptr(&a, t[B_DX]), fz_ptr(&a, t[B_DW]), fz_ptr(&a, t[B_DB]), stream);
    fz_arena_check(&a, st, what);
    fz_expect_status(&p.e, st, what);

    if (st == UF_OK && have_data && !p.e.may) {
        const int64_t n = p.count;
        fz_norm_io c;
        memset(&c, 0, sizeof c);
        c.d = &d;
        double *v[B_N];
        memset(v, 0, sizeof v);
        if (!backward) {
            v[F_X] = widen(&a, t[F_X], d.dtype, n, 0);
            v[F_RES] = res_on ? widen(&a, t[F_RES], d.dtype, n, 0) : NULL;
            v[F_W] = w_on ? widen(&a, t[F_W], d.dtype, d.cols, 0) : NULL;
            v[F_B] = b_on ? widen(&a, t[F_B], d.dtype, d.cols, 0) : NULL;
            v[F_Y] = widen(&a, t[F_Y], d.dtype, n, 1);
            v[F_HOUT] = widen(&a, t[F_HOUT], d.dtype, n, 1);
            v[F_MEAN] = layer ? widen(&a, t[F_MEAN], sd, d.rows, 1) : NULL;
            v[F_RSTD] = widen(&a, t[F_RSTD], sd, d.rows, 1);
            c.x = v[F_X];
            c.residual = v[F_RES];
            c.weight = v[F_W];
            c.bias = v[F_B];
            c.y = v[F_Y];
            c.h_out = v[F_HOUT];
            c.mean = v[F_MEAN];
            c.rstd = v[F_RSTD];
            fz_check_norm_forward(&c, what);
        } else {
            v[B_H] = widen(&a, t[B_H], d.dtype, n, 0);
            v[B_W] = w_on ? widen(&a, t[B_W], d.dtype, d.cols, 0) : NULL;
            v[B_MEAN] = layer ? widen(&a, t[B_MEAN], sd, d.rows, 0) : NULL;
            v[B_RSTD] = widen(&a, t[B_RSTD], sd, d.rows, 0);
            v[B_DY] = widen(&a, t[B_DY], d.dtype, n, 0);
            v[B_EXTRA] = widen(&a, t[B_EXTRA], d.dtype, n, 0);
            v[B_DX] = widen(&a, t[B_DX], d.dtype, n, 1);
            v[B_DW] = w_on ? widen(&a, t[B_DW], d.dtype, d.cols, 1) : NULL;
            v[B_DB] = b_on ? widen(&a, t[B_DB], d.dtype, d.cols, 1) : NULL;
            c.h = v[B_H];
            c.weight = v[B_W];
            c.mean = v[B_MEAN];
            c.rstd = v[B_RSTD];
            c.dy = v[B_DY];
            c.dh_extra = v[B_EXTRA];
            c.dx = v[B_DX];
            c.dweight = v[B_DW];
            c.dbias = v[B_DB];
            fz_check_norm_backward(&c, what);
        }
        for (int i = 0; i < B_N; ++i)
            free(v[i]);
    }
    fz_arena_free(&a);
}
