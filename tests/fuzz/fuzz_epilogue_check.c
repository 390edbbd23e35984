/*
 * What a successful fused epilogue call must have written, from
 * src/unifuse/epilogue.h and docs/api.md ("Fused epilogue"), against
 * float64 values recomputed from the inputs as the kernel sees them (x +
 * bias rounded to the arithmetic type): the activation from
 * tests/activation_ref.c, the keep mask from tests/philox_ref.c.
 *
 * As for the activations, values are only compared on tame inputs
 * (|v| <= FZ_TAME, parameters of ordinary size) and where no intermediate
 * comes near the arithmetic type's limit; elsewhere only NaN propagation,
 * the exact rules (dropped elements, copies) and the guards are checked.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../activation_ref.h"
#include "../philox_ref.h"
#include "fuzz_activation.h"
#include "fuzz_check.h"
#include "fuzz_epilogue.h"
#include "fuzz_values.h"

static double arith(uf_dtype d, double v)
{
    return d == UF_F64 ? v : (double)(float)v;
}

static double arith_eps(uf_dtype d)
{
    return d == UF_F64 ? 0x1p-53 : 0x1p-24;
}

/* Absolute rounding of a product that underflows: a relative bound does
 * not hold for it, and the factors applied after it magnify it. */
static double arith_tiny(uf_dtype d)
{
    return d == UF_F64 ? 0x1p-1074 : 0x1p-149;
}

/* Intermediates beyond this may overflow, depending on the kernel's order
 * of operations. */
static double arith_limit(uf_dtype d)
{
    return 0.25 * fz_dtype_max(d == UF_F64 ? UF_F64 : UF_F32);
}

static int tame(double v)
{
    return isfinite(v) && fabs(v) <= FZ_TAME;
}

/* Both NaN, or equal with the same sign: what a copy must give. */
static int same_value(double a, double b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static fz_act_call act_call(const fz_epi_io *c)
{
    const fz_act_call ac = {
        c->d->act.kind, c->d->act.param[0], c->d->act.param[1], c->p,
        c->seed,        c->offset,          c->d->dtype,        c->d->rows * c->d->cols};
    return ac;
}

/* Keep bits of elements 0 .. n-1 by their linear index (all kept without
 * dropout). */
static unsigned char *keep_bits(const fz_epi_io *c, int64_t n)
{
    const size_t nb = (size_t)(n + 7) / 8;
    unsigned char *bits = (unsigned char *)malloc(nb);
    FZ_REQUIRE(bits, "out of host memory");
    if (c->p > 0)
        pr_keep_bits(c->p, c->seed, c->offset, (uint64_t)n, bits);
    else
        memset(bits, 0xff, nb);
    return bits;
}

/* What the kernel computes element i from, in float64. */
typedef struct epi_elem {
    double h;    /* x + bias, rounded to the arithmetic type */
    double s;    /* the scale */
    double keep; /* 1 / (1 - p) in the arithmetic type where kept, 0 where dropped */
    int kept;
} epi_elem;

static void element(const fz_epi_io *c, const unsigned char *bits, int64_t i, epi_elem *e)
{
    const uf_epilogue_desc *d = c->d;
    const int64_t col = i % d->cols;
    const double b = d->bias == UF_OPERAND_ROW    ? c->bias[col]
                     : d->bias == UF_OPERAND_FULL ? c->bias[i]
                                                  : 0;
    e->h = arith(d->dtype, c->x[i] + b);
    e->s = d->scale == UF_OPERAND_ROW      ? c->scale[col]
           : d->scale == UF_OPERAND_SCALAR ? arith(d->dtype, d->scale_value)
                                           : 1;
    e->kept = bits[i / 8] >> (i % 8) & 1;
    e->keep = !e->kept ? 0 : c->p > 0 ? arith(d->dtype, 1 / (1 - c->p)) : 1;
}

void fz_check_epilogue_forward(const fz_epi_io *c, const char *what)
{
    const uf_epilogue_desc *d = c->d;
    const int64_t n = d->rows * d->cols;
    unsigned char *bits = keep_bits(c, n);
    const fz_act_call ac = act_call(c);
    const int params = fz_act_tame_params(&ac);
    const double u = arith_eps(d->dtype), big = arith_limit(d->dtype);
    const double out_limit = 0.5 * fz_dtype_max(d->dtype);
    /* Nothing to add, scale, activate or drop: y is x. */
    const int plain = d->act.kind == UF_ACT_IDENTITY && c->p == 0 && d->bias == UF_OPERAND_NONE &&
                      d->scale == UF_OPERAND_NONE && d->residual == UF_OPERAND_NONE;
    for (int64_t i = 0; i < n; ++i) {
        epi_elem e;
        element(c, bits, i, &e);
        const double r = c->residual ? c->residual[i] : 0, got = c->y[i];
        if (isnan(e.h) || isnan(e.s) || isnan(r)) {
            FZ_REQUIRE(isnan(got), "%s: y[%lld] = %a, but x + bias = %a, scale %a, residual %a",
                       what, (long long)i, got, e.h, e.s, r);
            continue;
        }
        if (plain) {
            FZ_REQUIRE(got == c->x[i], "%s: y[%lld] = %a, x = %a (no operand, no dropout)", what,
                       (long long)i, got, c->x[i]);
            continue;
        }
        if (!tame(e.h) || !tame(e.s) || !tame(r) || !params)
            continue;
        const double act = ar_forward(d->act.kind, d->act.param[0], d->act.param[1], e.h);
        const double m = act * e.s;
        if (!(fabs(act) <= big) || !(fabs(m) <= big))
            continue;
        if (!e.kept) {
            FZ_REQUIRE(got == r, "%s: element %lld dropped, y = %a, residual %a", what,
                       (long long)i, got, r);
            continue;
        }
        const double mk = m * e.keep, want = mk + r;
        if (!(fabs(mk) <= big))
            continue;
        /* act, act * scale: either may round on the subnormal grid before
         * the later factors magnify it. */
        const double tol = (FZ_ACT_RTOL * fabs(act) + FZ_ACT_ATOL) * fabs(e.s) * e.keep +
                           4 * u * (fabs(mk) + fabs(r)) + fz_dtype_eps(d->dtype) * fabs(want) +
                           fz_dtype_tiny(d->dtype) +
                           arith_tiny(d->dtype) * (fabs(e.s) + 1) * (e.keep + 1);
        if (!(fabs(want) + tol <= out_limit))
            continue;
        FZ_REQUIRE(isfinite(got), "%s: y[%lld] = %a for x + bias = %a, exact value %.9g", what,
                   (long long)i, got, e.h, want);
        if (!fz_act_near_breakpoint(&ac, e.h))
            FZ_REQUIRE(fabs(got - want) <= tol,
                       "%s: y[%lld] = %.9g for x + bias = %a, scale %a, residual %a; float64 "
                       "reference %.9g",
                       what, (long long)i, got, e.h, e.s, r, want);
    }
    free(bits);
}

/* One term of a sum over rows: its float64 value and error bound, or not
 * judged. */
typedef struct epi_term {
    double want, tol;
    int judged;
} epi_term;

/* A column's sum over rows against the float64 sum of its terms: NaN
 * where a term is, otherwise close where every term was judged. */
static void check_column_sum(const fz_epi_io *c, const epi_term *terms, const unsigned char *nan,
                             const double *got, const char *name, const char *what)
{
    const uf_epilogue_desc *d = c->d;
    const double u = arith_eps(d->dtype), big = arith_limit(d->dtype);
    const double out_limit = 0.5 * fz_dtype_max(d->dtype);
    for (int64_t col = 0; col < d->cols; ++col) {
        if (nan[col]) {
            FZ_REQUIRE(isnan(got[col]), "%s: %s[%lld] = %a, but a term is NaN", what, name,
                       (long long)col, got[col]);
            continue;
        }
        double want = 0, size = 0, tol = 0;
        int judged = 1;
        for (int64_t r = 0; r < d->rows && judged; ++r) {
            const epi_term *t = &terms[r * d->cols + col];
            judged = t->judged;
            want += t->want;
            size += fabs(t->want);
            tol += t->tol;
        }
        if (!judged || !(size <= big))
            continue;
        tol += (double)(d->rows + 64) * u * size + fz_dtype_eps(d->dtype) * fabs(want) +
               fz_dtype_tiny(d->dtype);
        if (!(fabs(want) + tol <= out_limit))
            continue;
        FZ_REQUIRE(isfinite(got[col]) && fabs(got[col] - want) <= tol,
                   "%s: %s[%lld] = %.9g, float64 sum over rows %.9g (bound %.3g)", what, name,
                   (long long)col, got[col], want, tol);
    }
}

void fz_check_epilogue_backward(const fz_epi_io *c, const char *what)
{
    const uf_epilogue_desc *d = c->d;
    const int64_t n = d->rows * d->cols;
    unsigned char *bits = keep_bits(c, n);
    const fz_act_call ac = act_call(c);
    const int params = fz_act_tame_params(&ac);
    const int identity = d->act.kind == UF_ACT_IDENTITY;
    const double u = arith_eps(d->dtype), big = arith_limit(d->dtype);
    const double out_limit = 0.5 * fz_dtype_max(d->dtype);
    epi_term *dxs = (epi_term *)calloc((size_t)n, sizeof *dxs);
    epi_term *dss = (epi_term *)calloc((size_t)n, sizeof *dss);
    unsigned char *nan_db = (unsigned char *)calloc((size_t)d->cols, 1);
    unsigned char *nan_ds = (unsigned char *)calloc((size_t)d->cols, 1);
    FZ_REQUIRE(dxs && dss && nan_db && nan_ds, "out of host memory");
    for (int64_t i = 0; i < n; ++i) {
        const int64_t col = i % d->cols;
        epi_elem e;
        element(c, bits, i, &e);
        const double g0 = c->dy[i], got = c->dx[i];
        if (c->dresidual)
            FZ_REQUIRE(same_value(c->dresidual[i], g0), "%s: dresidual[%lld] = %a, dy = %a", what,
                       (long long)i, c->dresidual[i], g0);
        if (c->dbias && d->bias == UF_OPERAND_FULL)
            FZ_REQUIRE(same_value(c->dbias[i], got), "%s: dbias[%lld] = %a, dx = %a (FULL bias)",
                       what, (long long)i, c->dbias[i], got);
        nan_db[col] |= isnan(got);
        /* dscale's term dy * keep * act(x + bias). */
        nan_ds[col] |= isnan(g0) || isnan(e.h);
        if (tame(g0) && tame(e.h) && params && !fz_act_near_breakpoint(&ac, e.h)) {
            const double act = ar_forward(d->act.kind, d->act.param[0], d->act.param[1], e.h);
            const double gk = g0 * e.keep, term = gk * act;
            if (fabs(act) <= big && fabs(term) <= big) {
                dss[i].want = term;
                dss[i].tol = arith_tiny(d->dtype) * (fabs(act) + 1) +
                             fabs(gk) * (FZ_ACT_RTOL * fabs(act) + FZ_ACT_ATOL) +
                             4 * u * fabs(term);
                dss[i].judged = 1;
            }
        }
        /* The identity's derivative is 1 whatever x + bias is. */
        if (isnan(g0) || isnan(e.s) || (!identity && isnan(e.h))) {
            FZ_REQUIRE(isnan(got), "%s: dx[%lld] = %a, but dy = %a, scale %a, x + bias = %a", what,
                       (long long)i, got, g0, e.s, e.h);
            continue;
        }
        if (!tame(g0) || !tame(e.s) || (!identity && (!tame(e.h) || !params)))
            continue;
        const double der =
            identity ? 1 : ar_derivative(d->act.kind, d->act.param[0], d->act.param[1], e.h);
        const double gs = g0 * e.keep * e.s, want = gs * der;
        if (!(fabs(der) <= big) || !(fabs(gs) <= big) || !(fabs(want) <= big))
            continue;
        if (!e.kept) {
            FZ_REQUIRE(got == 0, "%s: element %lld dropped, dx = %a (dy = %a)", what, (long long)i,
                       got, g0);
            dxs[i].judged = 1;
            continue;
        }
        const int near = !identity && fz_act_near_breakpoint(&ac, e.h);
        /* dy * keep, then times scale * act': either product may round on
         * the subnormal grid before the other factor magnifies it. */
        const double tol = fabs(gs) * (FZ_ACT_RTOL * fabs(der) + FZ_ACT_ATOL) + 4 * u * fabs(want) +
                           arith_tiny(d->dtype) * (fabs(e.s * der) + fabs(g0 * e.keep) + 1);
        const double stored = tol + fz_dtype_eps(d->dtype) * fabs(want) + fz_dtype_tiny(d->dtype);
        dxs[i].want = want;
        dxs[i].tol = tol;
        dxs[i].judged = !near;
        if (!(fabs(want) + stored <= out_limit))
            continue;
        FZ_REQUIRE(isfinite(got), "%s: dx[%lld] = %a for dy = %a, x + bias = %a, exact value %.9g",
                   what, (long long)i, got, g0, e.h, want);
        if (!near)
            FZ_REQUIRE(fabs(got - want) <= stored,
                       "%s: dx[%lld] = %.9g for dy = %a, scale %a, x + bias = %a; float64 "
                       "reference %.9g",
                       what, (long long)i, got, g0, e.s, e.h, want);
    }
    if (c->dbias && d->bias == UF_OPERAND_ROW)
        check_column_sum(c, dxs, nan_db, c->dbias, "dbias", what);
    if (c->dscale)
        check_column_sum(c, dss, nan_ds, c->dscale, "dscale", what);
    free(dxs);
    free(dss);
    free(nan_db);
    free(nan_ds);
    free(bits);
}
