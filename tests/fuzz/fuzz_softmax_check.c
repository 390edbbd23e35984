/*
 * What a successful softmax call must have written, from docs/api.md
 * ("Special values", "Numbers"), checked against values recomputed in
 * float64 from the inputs as the kernel sees them.
 */
#include <math.h>
#include <stdlib.h>

#include "fuzz_check.h"
#include "fuzz_softmax.h"
#include "fuzz_values.h"

/* |x * scale| beyond this may overflow depending on how a kernel orders
 * its arithmetic, so rows that reach it are not checked for values. */
#define FZ_SOFTMAX_TAME_F32 1e30
#define FZ_SOFTMAX_TAME_F64 1e300

int64_t fz_mask_index(const uf_softmax_desc *d, int64_t i)
{
    int64_t mi = 0, stride = 1;
    for (int k = d->ndim - 1, m = d->mask_ndim - 1; m >= 0; --k, --m) {
        const int64_t idx = i % d->shape[k];
        i /= d->shape[k];
        if (d->mask_shape[m] != 1)
            mi += idx * stride;
        stride *= d->mask_shape[m];
    }
    return mi;
}

typedef struct sm_row {
    int64_t sk, sq;
    double sf; /* the scale in the arithmetic type */
} sm_row;

/* x * scale + mask for one key as the arithmetic type computes it; sets
 * *xs to the product. */
static double logit(const uf_softmax_desc *d, const sm_row *r, double x, double add, double *xs)
{
    if (d->dtype == UF_F64) {
        *xs = x * r->sf;
        return *xs + add;
    }
    const float p = (float)x * (float)r->sf;
    *xs = p;
    return (double)(p + (float)add);
}

static void check_row(const uf_softmax_desc *d, const sm_row *r, int64_t row, const double *x,
                      const double *mask, const double *y, double *v, const char *what)
{
    const double tame = d->dtype == UF_F64 ? FZ_SOFTMAX_TAME_F64 : FZ_SOFTMAX_TAME_F32;
    const int64_t q = row % r->sq, base = row * r->sk;
    int nan_row = 0, wild = 0;
    int64_t visible = 0;
    double m = -INFINITY;
    for (int64_t j = 0; j < r->sk; ++j) {
        const int64_t i = base + j;
        const double mv = mask ? mask[fz_mask_index(d, i)] : 0;
        v[j] = -INFINITY; /* hidden */
        if ((d->causal && j > q + r->sk - r->sq) || (d->mask_dtype == UF_BOOL && mv != 0))
            continue;
        double xs;
        const double add = d->mask_dtype == UF_BOOL || !mask ? 0 : mv;
        const double t = logit(d, r, x[i], add, &xs);
        /* A finite x whose product is large, or finite operands that
         * overflow, give a row whose outcome depends on evaluation order. */
        if ((isfinite(x[i]) && fabs(xs) > tame) || (isfinite(x[i]) && isfinite(add) && t > tame)) {
            wild = 1;
        } else if (isnan(t) || t == INFINITY) {
            nan_row = 1;
        } else if (t != -INFINITY) {
            v[j] = t;
            m = t > m ? t : m;
            ++visible;
        }
    }
    if (wild)
        return;
    if (nan_row) {
        for (int64_t j = 0; j < r->sk; ++j)
            FZ_REQUIRE(isnan(y[base + j]), "%s: row %lld has a NaN or +inf logit, but y[%lld] = %a",
                       what, (long long)row, (long long)(base + j), y[base + j]);
        return;
    }
    if (!visible) {
        for (int64_t j = 0; j < r->sk; ++j)
            FZ_REQUIRE(y[base + j] == 0 && !signbit(y[base + j]),
                       "%s: row %lld is fully hidden, but y[%lld] = %a (want +0)", what,
                       (long long)row, (long long)(base + j), y[base + j]);
        return;
    }
    double s = 0, sum_y = 0;
    for (int64_t j = 0; j < r->sk; ++j)
        s += v[j] == -INFINITY ? 0 : exp(v[j] - m);
    /* Relative error of the fp32 pipeline: exp of a rounded difference
     * (|v - m| <= 88 where it matters), sums over the row. */
    const double rel = fz_dtype_eps(d->dtype) +
                       (d->dtype == UF_F64 ? 1e-12 : 2e-5 + (double)(64 + r->sk) * 0x1p-24);
    const double slack = fz_dtype_tiny(d->dtype);
    for (int64_t j = 0; j < r->sk; ++j) {
        const double got = y[base + j];
        if (v[j] == -INFINITY) {
            FZ_REQUIRE(got == 0, "%s: y[%lld] = %a at a hidden key (want 0)", what,
                       (long long)(base + j), got);
            continue;
        }
        const double want = exp(v[j] - m) / s;
        FZ_REQUIRE(got >= 0 && got <= 1 + 2 * fz_dtype_eps(d->dtype),
                   "%s: y[%lld] = %a outside [0, 1]", what, (long long)(base + j), got);
        FZ_REQUIRE(fabs(got - want) <= want * rel + slack,
                   "%s: y[%lld] = %.9g, float64 reference %.9g", what, (long long)(base + j), got,
                   want);
        sum_y += got;
    }
    FZ_REQUIRE(fabs(sum_y - 1) <= 2 * rel + (double)r->sk * slack, "%s: row %lld sums to %.9g",
               what, (long long)row, sum_y);
}

void fz_check_softmax_forward(const uf_softmax_desc *d, int64_t count, const double *x,
                              const double *mask, const double *y, const char *what)
{
    sm_row r;
    r.sk = d->shape[d->ndim - 1];
    r.sq = d->ndim >= 2 ? d->shape[d->ndim - 2] : 1;
    r.sf = d->dtype == UF_F64 ? d->scale : (double)(float)d->scale;
    double *v = (double *)malloc((size_t)r.sk * sizeof *v);
    FZ_REQUIRE(v, "out of host memory");
    for (int64_t row = 0; row < count / r.sk; ++row)
        check_row(d, &r, row, x, mask, y, v, what);
    free(v);
}

void fz_check_softmax_backward(const uf_softmax_desc *d, int64_t count, const double *y,
                               const double *dy, const double *dx, const char *what)
{
    const int64_t sk = d->shape[d->ndim - 1];
    const int f64 = d->dtype == UF_F64;
    const double sf = f64 ? d->scale : (double)(float)d->scale;
    const double out_limit = 0.25 * fz_dtype_max(d->dtype);
    const double arith_limit = 0.25 * (f64 ? fz_dtype_max(UF_F64) : fz_dtype_max(UF_F32));
    const double rel = f64 ? (double)(64 + sk) * 0x1p-52 : (double)(64 + sk) * 0x1p-23;
    for (int64_t base = 0; base < count; base += sk) {
        double s = 0, s_abs = 0, y_max = 0, dy_max = 0;
        int finite = 1;
        for (int64_t j = 0; j < sk; ++j) {
            const double a = y[base + j], g = dy[base + j];
            finite &= isfinite(a) && isfinite(g);
            s += a * g;
            s_abs += fabs(a * g);
            y_max = fmax(y_max, fabs(a));
            dy_max = fmax(dy_max, fabs(g));
        }
        /* Rows where some evaluation order could overflow are not checked. */
        const double big = fabs(sf) * y_max * (dy_max + s_abs);
        if (!finite || !(big <= out_limit) || !(big <= arith_limit) || !(s_abs <= arith_limit) ||
            !(dy_max <= arith_limit) || !(y_max * dy_max <= arith_limit) ||
            !(fabs(sf) * y_max <= arith_limit))
            continue;
        for (int64_t j = 0; j < sk; ++j) {
            const int64_t i = base + j;
            const double want = sf * y[i] * (dy[i] - s);
            const double size = fabs(sf * y[i]) * (fabs(dy[i]) + s_abs);
            /* Products y * dy that underflow lose up to half the smallest
             * subnormal each; scale * y may magnify that. A first product
             * that underflows (scale * y, or y times the difference) loses
             * as much, magnified by the factor applied after it. */
            const double sub = f64 ? 0x1p-1074 : 0x1p-149;
            const double underflow =
                (fabs(sf * y[i]) * (double)(sk + 2) + fabs(dy[i] - s) + fabs(sf)) * sub;
            FZ_REQUIRE(isfinite(dx[i]), "%s: dx[%lld] = %a for finite inputs", what, (long long)i,
                       dx[i]);
            if (y[i] == 0)
                FZ_REQUIRE(dx[i] == 0, "%s: dx[%lld] = %a where y = 0", what, (long long)i, dx[i]);
            FZ_REQUIRE(fabs(dx[i] - want) <= fz_dtype_eps(d->dtype) * fabs(want) + rel * size +
                                                 underflow + fz_dtype_tiny(d->dtype),
                       "%s: dx[%lld] = %.9g, float64 reference %.9g", what, (long long)i, dx[i],
                       want);
        }
    }
}
