/*
 * What a successful LayerNorm or RMSNorm call must have written, from
 * src/unifuse/norm.h and docs/api.md ("LayerNorm and RMSNorm"), against
 * float64 values recomputed from the inputs as the kernel sees them (h = x +
 * residual rounded to the arithmetic type; the statistics in fp32, or fp64
 * for f64).
 *
 * The error bounds follow the kernel's arithmetic loosely (sum_err below;
 * the mean's error from the spread around the row's first element, the
 * pivot the kernel sums from). Rows where the variance's bound is not small
 * against var + eps, or where a value exceeds NORM_TAME, are only checked
 * for NaN propagation and the exact rules.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_norm.h"
#include "fuzz_values.h"

/* Inputs beyond this may overflow the fp32 sums of squares. */
#define NORM_TAME 0x1p40

static double arith(uf_dtype d, double v)
{
    return d == UF_F64 ? v : (double)(float)v;
}

static double arith_eps(uf_dtype d)
{
    return d == UF_F64 ? 0x1p-53 : 0x1p-24;
}

/* Absolute rounding of a product or square that underflows. */
static double arith_tiny(uf_dtype d)
{
    return d == UF_F64 ? 0x1p-1074 : 0x1p-149;
}

/* Relative error of a sum of n terms, against the sum of their magnitudes.
 * Sums are formed in per-thread runs combined in a fixed order (api.md,
 * "Numbers"), so the error grows with the longest chain of additions, not
 * with n: at most 32 or n / 256 + 8 for a row, 256 + n / 256 + the chunk
 * count for a column. 8 sqrt(n) + 64, with the factor of 4 the column checks
 * add, covers both for n up to FZ_CAP. */
static double sum_err(int64_t n, uf_dtype d)
{
    return (8 * sqrt((double)n) + 64) * arith_eps(d);
}

static double arith_limit(uf_dtype d)
{
    return 0.25 * fz_dtype_max(d == UF_F64 ? UF_F64 : UF_F32);
}

static int tame(double v)
{
    return isfinite(v) && fabs(v) <= NORM_TAME;
}

static int same_value(double a, double b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    FZ_REQUIRE(p, "out of host memory");
    return p;
}

/* h of one row as the kernel forms it, and the same rounded to the dtype
 * (what h_out must hold). */
static void row_h(const fz_norm_io *c, int64_t row, double *h, double *stored)
{
    const uf_norm_desc *d = c->d;
    const double *x = c->x + row * d->cols;
    const double *r = c->residual ? c->residual + row * d->cols : NULL;
    for (int64_t j = 0; j < d->cols; ++j)
        h[j] = r ? arith(d->dtype, x[j] + r[j]) : x[j];
    /* Rounding to the dtype through an aligned buffer. */
    void *tmp = xcalloc((size_t)d->cols, fz_esize(d->dtype));
    FZ_REQUIRE(uf_convert_host(tmp, d->dtype, h, UF_F64, (size_t)d->cols) == UF_OK, "convert");
    fz_widen(d->dtype, tmp, (size_t)d->cols, stored);
    free(tmp);
}

void fz_check_norm_forward(const fz_norm_io *c, const char *what)
{
    const uf_norm_desc *d = c->d;
    const int64_t n = d->cols;
    const int layer = d->kind == UF_NORM_LAYER;
    const double u = arith_eps(d->dtype), big = arith_limit(d->dtype);
    const double out_limit = 0.5 * fz_dtype_max(d->dtype), eps = arith(d->dtype, d->eps);
    const double k = sum_err(n, d->dtype), tiny = arith_tiny(d->dtype);
    double *h = (double *)xcalloc((size_t)n, sizeof *h);
    double *stored = (double *)xcalloc((size_t)n, sizeof *stored);
    for (int64_t row = 0; row < d->rows; ++row) {
        const double *y = c->y + row * n;
        row_h(c, row, h, stored);
        int nan = 0, inf = 0, constant = 1, wild = 0;
        for (int64_t j = 0; j < n; ++j) {
            nan |= isnan(h[j]);
            inf |= isinf(h[j]);
            wild |= !tame(h[j]);
            constant &= h[j] == h[0];
            if (c->h_out)
                FZ_REQUIRE(same_value(c->h_out[row * n + j], stored[j]),
                           "%s: h_out[%lld] = %a, x + residual is %a", what,
                           (long long)(row * n + j), c->h_out[row * n + j], stored[j]);
        }
        const double got_mean = c->mean ? c->mean[row] : 0, got_rstd = c->rstd ? c->rstd[row] : 0;
        if (nan) {
            for (int64_t j = 0; j < n; ++j)
                FZ_REQUIRE(isnan(y[j]), "%s: row %lld holds a NaN, y[%lld] = %a", what,
                           (long long)row, (long long)(row * n + j), y[j]);
            FZ_REQUIRE(!c->mean || isnan(got_mean), "%s: row %lld holds a NaN, mean = %a", what,
                       (long long)row, got_mean);
            FZ_REQUIRE(!c->rstd || isnan(got_rstd), "%s: row %lld holds a NaN, rstd = %a", what,
                       (long long)row, got_rstd);
            continue;
        }
        if (inf)
            continue;
        if (layer && constant && eps > 0) {
            /* h - mean is exactly 0: y is the bias, bit for bit. */
            for (int64_t j = 0; j < n; ++j) {
                const double w = c->weight ? c->weight[j] : 1, b = c->bias ? c->bias[j] : 0;
                if (isfinite(w))
                    FZ_REQUIRE(y[j] == b || (isnan(b) && isnan(y[j])),
                               "%s: row %lld is constant (%a), y[%lld] = %a, bias %a", what,
                               (long long)row, h[0], (long long)(row * n + j), y[j], b);
            }
            FZ_REQUIRE(!c->mean || got_mean == h[0], "%s: row %lld is constant (%a), mean = %a",
                       what, (long long)row, h[0], got_mean);
            continue;
        }
        if (wild)
            continue;
        /* float64 statistics; `spread` bounds the terms the kernel sums. */
        const double pivot = layer ? h[0] : 0;
        double s = 0, spread = 0;
        for (int64_t j = 0; j < n; ++j) {
            s += layer ? h[j] - pivot : h[j] * h[j];
            spread = fmax(spread, fabs(h[j] - pivot));
        }
        const double mean = layer ? pivot + s / (double)n : 0;
        double q = 0;
        for (int64_t j = 0; j < n; ++j)
            q += layer ? (h[j] - mean) * (h[j] - mean) : 0;
        const double var = (layer ? q : s) / (double)n, v = var + eps;
        /* The sum of squares has non-negative terms; LayerNorm's also carry
         * the rounding of h - pivot and the mean's error (squared, since the
         * deviations sum to 0). */
        const double err_v = 2 * k * var + 4 * u * v + 8 * (double)(n + 2) * tiny +
                             (layer ? 4 * u * spread * sqrt(var) + 4 * k * k * spread * spread : 0);
        /* The mean's error; subnormal sums and products also lose up to
         * `tiny` each, however small the row. */
        const double err_m = layer ? 2 * k * spread + 2 * u * fabs(mean) + 4 * tiny : 0;
        if (c->mean)
            FZ_REQUIRE(fabs(got_mean - mean) <= 4 * err_m + 2 * u * fabs(mean) + tiny,
                       "%s: mean[%lld] = %.9g, float64 %.9g", what, (long long)row, got_mean, mean);
        if (isinf(eps)) {
            /* An eps finite in double but beyond fp32 (accepted: "finite")
             * is +inf in fp32 arithmetic: rstd 0, y the bias exactly. */
            FZ_REQUIRE(!c->rstd || got_rstd == 0, "%s: eps %a is inf in fp32, rstd[%lld] = %a",
                       what, d->eps, (long long)row, got_rstd);
            for (int64_t j = 0; j < n; ++j) {
                const double w = c->weight ? c->weight[j] : 1, b = c->bias ? c->bias[j] : 0;
                if (isfinite(w))
                    FZ_REQUIRE(y[j] == b || (isnan(b) && isnan(y[j])),
                               "%s: eps %a is inf in fp32, y[%lld] = %a, bias %a", what, d->eps,
                               (long long)(row * n + j), y[j], b);
            }
            continue;
        }
        if (!(v > 0) || !(err_v <= 0.05 * v))
            continue;
        const double rstd = 1 / sqrt(v), rel = 0.5 * err_v / v + 4 * u;
        if (!(rstd <= big))
            continue;
        if (c->rstd)
            FZ_REQUIRE(fabs(got_rstd - rstd) <= 4 * rel * rstd,
                       "%s: rstd[%lld] = %.9g, float64 %.9g", what, (long long)row, got_rstd, rstd);
        for (int64_t j = 0; j < n; ++j) {
            const double w = c->weight ? c->weight[j] : 1, b = c->bias ? c->bias[j] : 0;
            if (isnan(w) || isnan(b)) {
                FZ_REQUIRE(isnan(y[j]), "%s: y[%lld] = %a with weight %a, bias %a", what,
                           (long long)(row * n + j), y[j], w, b);
                continue;
            }
            if (!tame(w) || !tame(b))
                continue;
            const double cj = h[j] - mean, mag = fabs(cj) * rstd * fabs(w);
            if (!(mag <= big))
                continue;
            const double want = cj * rstd * w + b;
            const double tol = fabs(w) * rstd * (fabs(cj) * (rel + 4 * u) + err_m) +
                               4 * u * (mag + fabs(b)) + 4 * fabs(w) * tiny;
            const double total =
                4 * tol + fz_dtype_eps(d->dtype) * fabs(want) + fz_dtype_tiny(d->dtype);
            if (!(fabs(want) + total <= out_limit))
                continue;
            FZ_REQUIRE(isfinite(y[j]) && fabs(y[j] - want) <= total,
                       "%s: y[%lld] = %.9g, float64 reference %.9g (bound %.3g; h %a, mean %.9g, "
                       "rstd %.9g)",
                       what, (long long)(row * n + j), y[j], want, total, h[j], mean, rstd);
        }
    }
    free(stored);
    free(h);
}

/* Per row of the backward: whether its values are judged, and what the
 * column sums need. */
typedef struct norm_row {
    int judged;
    int nan_h;     /* the row's h (LayerNorm: any element) makes hhat NaN */
    double delta;  /* the row's mean minus the given one */
    double e_hhat; /* error bound of hhat */
} norm_row;

void fz_check_norm_backward(const fz_norm_io *c, const char *what)
{
    const uf_norm_desc *d = c->d;
    const int64_t n = d->cols;
    const int layer = d->kind == UF_NORM_LAYER;
    const double u = arith_eps(d->dtype), big = arith_limit(d->dtype);
    const double out_limit = 0.5 * fz_dtype_max(d->dtype), tiny = arith_tiny(d->dtype);
    const double k = sum_err(n, d->dtype);
    norm_row *rows = (norm_row *)xcalloc((size_t)d->rows, sizeof *rows);
    double *g = (double *)xcalloc((size_t)n, sizeof *g);
    double *hhat = (double *)xcalloc((size_t)n, sizeof *hhat);
    int w_nan = 0, w_wild = 0;
    for (int64_t j = 0; j < n && c->weight; ++j) {
        w_nan |= isnan(c->weight[j]);
        w_wild |= !tame(c->weight[j]);
    }
    for (int64_t row = 0; row < d->rows; ++row) {
        const double *h = c->h + row * n, *dy = c->dy + row * n, *dx = c->dx + row * n;
        const double *extra = c->dh_extra ? c->dh_extra + row * n : NULL;
        const double mean = layer ? c->mean[row] : 0, rstd = c->rstd[row];
        norm_row *rr = &rows[row];
        int nan = w_nan || isnan(rstd) || isnan(mean), wild = w_wild || !tame(rstd) || !tame(mean);
        for (int64_t j = 0; j < n; ++j) {
            rr->nan_h |= isnan(h[j]);
            nan |= isnan(h[j]) || isnan(dy[j]);
            wild |= !tame(h[j]) || !tame(dy[j]) || (extra && !tame(extra[j]));
        }
        if (!layer)
            rr->nan_h = 0; /* RMSNorm's hhat is per element */
        if (nan) {
            for (int64_t j = 0; j < n; ++j)
                FZ_REQUIRE(isnan(dx[j]), "%s: row %lld has a NaN input, dx[%lld] = %a", what,
                           (long long)row, (long long)(row * n + j), dx[j]);
            continue;
        }
        if (extra)
            for (int64_t j = 0; j < n; ++j)
                if (isnan(extra[j]))
                    FZ_REQUIRE(isnan(dx[j]), "%s: dh_extra[%lld] is NaN, dx = %a", what,
                               (long long)(row * n + j), dx[j]);
        if (wild)
            continue;
        /* The gradient formula of norm.h in float64, with the given mean
         * corrected by the row's own average of h - mean. */
        double delta = 0, hc_max = 0, g_max = 0, mean_g = 0, mean_ghat = 0;
        for (int64_t j = 0; j < n; ++j) {
            const double hc = layer ? h[j] - mean : h[j];
            delta += layer ? hc : 0;
            hc_max = fmax(hc_max, fabs(hc));
        }
        delta /= (double)n;
        const double r = fabs(rstd);
        for (int64_t j = 0; j < n; ++j) {
            const double hc = layer ? h[j] - mean : h[j];
            hhat[j] = (hc - delta) * rstd;
            g[j] = (c->weight ? c->weight[j] : 1) * dy[j];
            g_max = fmax(g_max, fabs(g[j]));
            mean_g += layer ? g[j] : 0;
            mean_ghat += g[j] * hhat[j];
        }
        mean_g /= (double)n;
        mean_ghat /= (double)n;
        const double hh = 2 * r * hc_max; /* bounds |hhat| */
        if (!((double)n * g_max * hc_max * (1 + r) <= big) || !(r * g_max * (1 + hh * hh) <= big))
            continue;
        rr->judged = 1;
        rr->delta = delta;
        rr->e_hhat = 2 * r * k * hc_max + 4 * r * tiny;
        const double e_mgh = 3 * r * k * g_max * hc_max + 4 * r * (double)(n + 2) * tiny;
        const double under = 8 * (double)(n + 2) * tiny * (1 + r) * (1 + r * hc_max);
        for (int64_t j = 0; j < n; ++j) {
            const double ex = extra ? extra[j] : 0;
            const double want = rstd * (g[j] - mean_g - hhat[j] * mean_ghat) + ex;
            const double e_h = rr->e_hhat + u * fabs(hhat[j]);
            /* hhat * mean_ghat with both off: the product of their errors
             * too, which rules where rstd does not fit the row (hhat exactly
             * 0 for a constant row, both computed values far from 0) */
            const double tol =
                r * (8 * u * fabs(g[j]) + k * g_max + 4 * tiny + e_h * (fabs(mean_ghat) + e_mgh) +
                     fabs(hhat[j]) * e_mgh + 4 * u * (fabs(mean_g) + fabs(hhat[j] * mean_ghat))) +
                4 * u * (fabs(want) + fabs(ex));
            const double total =
                8 * tol + under + fz_dtype_eps(d->dtype) * fabs(want) + fz_dtype_tiny(d->dtype);
            if (!(fabs(want) + total <= out_limit))
                continue;
            FZ_REQUIRE(isfinite(dx[j]) && fabs(dx[j] - want) <= total,
                       "%s: dx[%lld] = %.9g, float64 reference %.9g (bound %.3g; h %a, dy %a, mean "
                       "%a, rstd %a)",
                       what, (long long)(row * n + j), dx[j], want, total, h[j], dy[j], mean, rstd);
        }
    }
    /* dweight = sum over rows of dy * hhat, dbias = sum of dy. */
    for (int64_t j = 0; j < n && (c->dweight || c->dbias); ++j) {
        int nan_w = 0, nan_b = 0, judged = 1;
        double w_want = 0, w_size = 0, w_tol = 0, b_want = 0, b_size = 0;
        for (int64_t row = 0; row < d->rows; ++row) {
            const double hv = c->h[row * n + j], dy = c->dy[row * n + j];
            const double mean = layer ? c->mean[row] : 0, rstd = c->rstd[row];
            nan_b |= isnan(dy);
            nan_w |= isnan(dy) || isnan(rstd) || isnan(mean) || isnan(hv) || rows[row].nan_h;
            judged &= rows[row].judged;
            if (!rows[row].judged)
                continue;
            const double hh = ((layer ? hv - mean : hv) - rows[row].delta) * rstd;
            w_want += dy * hh;
            w_size += fabs(dy * hh);
            w_tol += fabs(dy) * (rows[row].e_hhat + 2 * u * fabs(hh));
            b_want += dy;
            b_size += fabs(dy);
        }
        const double sum_k = sum_err(d->rows, d->dtype);
        if (c->dweight && nan_w) {
            FZ_REQUIRE(isnan(c->dweight[j]), "%s: dweight[%lld] = %a, but a term is NaN", what,
                       (long long)j, c->dweight[j]);
        } else if (c->dweight && judged && w_size <= big) {
            const double tol = 4 * (w_tol + sum_k * w_size) +
                               fz_dtype_eps(d->dtype) * fabs(w_want) + fz_dtype_tiny(d->dtype) +
                               8 * (double)(d->rows + 2) * tiny;
            if (fabs(w_want) + tol <= out_limit)
                FZ_REQUIRE(isfinite(c->dweight[j]) && fabs(c->dweight[j] - w_want) <= tol,
                           "%s: dweight[%lld] = %.9g, float64 sum over rows %.9g (bound %.3g)",
                           what, (long long)j, c->dweight[j], w_want, tol);
        }
        if (c->dbias && nan_b) {
            FZ_REQUIRE(isnan(c->dbias[j]), "%s: dbias[%lld] = %a, but a dy is NaN", what,
                       (long long)j, c->dbias[j]);
        } else if (c->dbias && judged && b_size <= big) {
            const double tol = 4 * sum_k * b_size + fz_dtype_eps(d->dtype) * fabs(b_want) +
                               fz_dtype_tiny(d->dtype);
            if (fabs(b_want) + tol <= out_limit)
                FZ_REQUIRE(isfinite(c->dbias[j]) && fabs(c->dbias[j] - b_want) <= tol,
                           "%s: dbias[%lld] = %.9g, float64 sum over rows %.9g (bound %.3g)", what,
                           (long long)j, c->dbias[j], b_want, tol);
        }
    }
    free(hhat);
    free(g);
    free(rows);
}
