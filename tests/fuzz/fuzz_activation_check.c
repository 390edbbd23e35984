/*
 * What a successful activation or dropout call must have written, from
 * src/unifuse/activation.h: the keep mask of the Philox rule (checked with
 * tests/philox_ref.c), NaN in where x is NaN, zeros where dropped, and
 * values close to tests/activation_ref.c wherever they fit the dtype.
 *
 * Values are only compared on "tame" inputs: |x| and |dy| up to 2^60 and
 * parameters of ordinary size. Beyond that a result may overflow in fp32
 * arithmetic although the exact one fits (x * 6 in hardswish, exp of x /
 * alpha in celu), as it does in PyTorch; such elements are still checked
 * for crashes, guards and NaN, not for values.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../activation_ref.h"
#include "../philox_ref.h"
#include "fuzz_activation.h"
#include "fuzz_check.h"
#include "fuzz_values.h"

static int tame(double v)
{
    return isfinite(v) && fabs(v) <= FZ_TAME;
}

static int tame_param(double v)
{
    return v == 0 || (fabs(v) >= 0x1p-20 && fabs(v) <= 0x1p20);
}

int fz_act_tame_params(const fz_act_call *c)
{
    switch (c->kind) {
    case UF_ACT_HARDTANH:
        return tame_param(c->a) && tame_param(c->b);
    case UF_ACT_SOFTPLUS: /* exp(beta x) must fit fp32 below the threshold */
        return tame_param(c->a) && tame_param(c->b) && c->b <= 80;
    case UF_ACT_CELU: /* a negative alpha makes exp(x / alpha) grow without bound */
        return tame_param(c->a) && c->a > 0;
    case UF_ACT_LEAKY_RELU:
    case UF_ACT_ELU:
    case UF_ACT_HARDSHRINK:
    case UF_ACT_SOFTSHRINK:
        return tame_param(c->a);
    default:
        return 1;
    }
}

int fz_act_near_breakpoint(const fz_act_call *c, double x)
{
    double pts[4];
    const int n = ar_breakpoints(c->kind, c->a, c->b, pts);
    for (int i = 0; i < n; ++i)
        if (fabs(x - pts[i]) <= 1e-4 * fabs(pts[i]) + 1e-20)
            return 1;
    return 0;
}

static double arith_limit(uf_dtype d)
{
    return 0.25 * fz_dtype_max(d == UF_F64 ? UF_F64 : UF_F32);
}

/* The keep bits of the call, from the reference implementation of the rule
 * (all ones without dropout). */
static unsigned char *expected_bits(const fz_act_call *c)
{
    const size_t nb = (size_t)(c->count + 7) / 8;
    unsigned char *bits = (unsigned char *)malloc(nb);
    FZ_REQUIRE(bits, "out of host memory");
    if (c->p > 0) {
        pr_keep_bits(c->p, c->seed, c->offset, (uint64_t)c->count, bits);
    } else { /* every draw is >= 0: skip the generator */
        memset(bits, 0xff, nb);
        if (c->count % 8)
            bits[nb - 1] = (unsigned char)((1u << (c->count % 8)) - 1);
    }
    return bits;
}

static int bit(const unsigned char *bits, int64_t i)
{
    return bits[i / 8] >> (i % 8) & 1;
}

void fz_check_activation_forward(const fz_act_call *c, const double *x, const double *y,
                                 const unsigned char *keep_bits, const char *what)
{
    unsigned char *want_bits = expected_bits(c);
    if (keep_bits) {
        for (int64_t i = 0; i < (c->count + 7) / 8 * 8; ++i)
            FZ_REQUIRE(bit(keep_bits, i) == (i < c->count && bit(want_bits, i)),
                       "%s: keep bit %lld is %d", what, (long long)i, bit(keep_bits, i));
    }
    const double scale = c->p < 1 ? 1 / (1 - c->p) : 0;
    const double out_limit = 0.5 * fz_dtype_max(c->dtype), arith = arith_limit(c->dtype);
    const int params = fz_act_tame_params(c);
    for (int64_t i = 0; i < c->count; ++i) {
        const double xi = x[i], yi = y[i];
        const int kept = bit(want_bits, i);
        if (isnan(xi)) {
            FZ_REQUIRE(isnan(yi), "%s: x[%lld] is NaN, y = %a", what, (long long)i, yi);
            continue;
        }
        if (c->kind == UF_ACT_IDENTITY && c->p == 0) {
            FZ_REQUIRE(yi == xi && signbit(yi) == signbit(xi),
                       "%s: y[%lld] = %a, x = %a (p = 0 keeps everything unchanged)", what,
                       (long long)i, yi, xi);
            continue;
        }
        if (!tame(xi) || !params)
            continue;
        const double act = ar_forward(c->kind, c->a, c->b, xi);
        if (!(fabs(act) <= arith))
            continue;
        if (!kept) {
            FZ_REQUIRE(yi == 0, "%s: element %lld dropped, y = %a for x = %a", what, (long long)i,
                       yi, xi);
            continue;
        }
        const double want = act * scale;
        if (!(fabs(want) <= out_limit))
            continue;
        FZ_REQUIRE(isfinite(yi), "%s: y[%lld] = %a for x = %a, exact value %.9g", what,
                   (long long)i, yi, xi, want);
        if (!fz_act_near_breakpoint(c, xi))
            FZ_REQUIRE(fabs(yi - want) <=
                           FZ_ACT_RTOL * fabs(want) + FZ_ACT_ATOL * scale + fz_dtype_tiny(c->dtype),
                       "%s: y[%lld] = %.9g for x = %a, float64 reference %.9g", what, (long long)i,
                       yi, xi, want);
    }
    free(want_bits);
}

void fz_check_activation_backward(const fz_act_call *c, const double *x, const double *dy,
                                  const double *dx, const char *what)
{
    unsigned char *want_bits = expected_bits(c);
    const double scale = c->p < 1 ? 1 / (1 - c->p) : 0;
    const double out_limit = 0.5 * fz_dtype_max(c->dtype), arith = arith_limit(c->dtype);
    const int params = fz_act_tame_params(c);
    for (int64_t i = 0; i < c->count; ++i) {
        const double xi = x ? x[i] : 0, g = dy[i], got = dx[i];
        const int kept = bit(want_bits, i);
        if (x && isnan(xi)) {
            FZ_REQUIRE(isnan(got), "%s: x[%lld] is NaN, dx = %a", what, (long long)i, got);
            continue;
        }
        if (c->kind == UF_ACT_IDENTITY && c->p == 0 && !isnan(g)) {
            FZ_REQUIRE(got == g && signbit(got) == signbit(g),
                       "%s: dx[%lld] = %a, dy = %a (p = 0 passes the gradient unchanged)", what,
                       (long long)i, got, g);
            continue;
        }
        if (!tame(g) || !tame(xi) || !params)
            continue;
        const double d = ar_derivative(c->kind, c->a, c->b, xi);
        if (!(fabs(d) <= arith))
            continue;
        if (!kept) {
            FZ_REQUIRE(got == 0, "%s: element %lld dropped, dx = %a (dy = %a, x = %a)", what,
                       (long long)i, got, g, xi);
            continue;
        }
        const double want = g * scale * d;
        if (!(fabs(want) <= out_limit))
            continue;
        FZ_REQUIRE(isfinite(got), "%s: dx[%lld] = %a for dy = %a, x = %a, exact value %.9g", what,
                   (long long)i, got, g, xi, want);
        if (!fz_act_near_breakpoint(c, xi))
            FZ_REQUIRE(fabs(got - want) <= FZ_ACT_RTOL * fabs(want) +
                                               FZ_ACT_ATOL * fabs(g) * scale +
                                               fz_dtype_tiny(c->dtype),
                       "%s: dx[%lld] = %.9g for dy = %a, x = %a, float64 reference %.9g", what,
                       (long long)i, got, g, xi, want);
    }
    free(want_bits);
}
