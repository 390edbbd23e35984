#!/usr/bin/env python3
"""Refits the coefficients of uf_normal_cdf_logistic_f32 and
uf_normal_cdf_logistic6_f32 (kernels/normal_cdf.h; numpy only).

Phi(x) ~ 1 / (1 + exp(-x Q(x^2))): Q(u) of degree 4 is fitted to the
log-odds of Phi divided by x, log(Phi(x) / (1 - Phi(x))) / x, on x in
(0, 6] (both are even in x, so one side serves both). The error in the
log-odds is weighted by the smaller of two budgets at -x: what a GELU
result rounded to f16 may carry (2e-4 plus 0.3 of the tolerance's
absolute term, 1e-5, over |x Phi(-x)|), and what keeps Phi within 4e-6
absolute (4e-6 over Phi(x) Phi(-x)), which the derivative Phi(x) + x phi(x)
needs where it crosses 0. Least squares iterated towards minimax (Lawson).
The coefficients are then multiplied by -log2(e), for exp2, and rounded to
fp32.

The second fit, Q of degree 6, is for 16-bit results that a sum follows
(the epilogue adds the residual after the activation, so an error in the
GELU is not hidden by rounding where the sum cancels): its log-odds error
is weighted so that Phi stays within 4e-7 absolute, about as close as the
fp32 form of uf_normal_cdf_gauss_f32 (3.8e-7). Its check: Phi's and the
GELU's absolute errors over [-30, 30] in fp32.

The check simulates the kernel's fp32 arithmetic over every finite f16 and
bf16 input, rounds x Phi(x), and the derivative times dy for dy = 1 and
+-4/3 (dropout's largest factor in the tests), to the dtype and compares
with the float64 values under tests/harness.c's tolerances for those
dtypes.
"""
import math

import numpy as np

F32 = np.float32


def log_odds(x):
    lower = 0.5 * math.erfc(x / math.sqrt(2.0))  # Phi(-x)
    upper = 0.5 * math.erfc(-x / math.sqrt(2.0))  # Phi(x)
    return math.log(upper) - math.log(lower)


def budget(x):
    lower = 0.5 * math.erfc(x / math.sqrt(2.0))  # Phi(-x)
    forward = 2e-4 + 0.3e-5 / max(x * lower, 1e-300)
    derivative = 4e-6 / max(lower * (1.0 - lower), 1e-300)
    return min(forward, derivative)


def budget_abs(x):
    lower = 0.5 * math.erfc(x / math.sqrt(2.0))  # Phi(-x)
    return 4e-7 / max(lower * (1.0 - lower), 1e-300)


def fit(terms=5, end=6.0, iters=300, weight_of=budget):
    x = np.linspace(1e-4, end, 20000)
    target = np.array([log_odds(v) / v for v in x])
    scale = x / np.array([weight_of(v) for v in x])
    basis = np.vstack([(x * x) ** k for k in range(terms)]).T
    weight = np.ones_like(x)
    for _ in range(iters):
        w = np.sqrt(weight) * scale
        c, *_ = np.linalg.lstsq(basis * w[:, None], target * w, rcond=None)
        err = np.abs(basis @ c - target) * scale
        weight = weight * err / err.max() + 1e-14
        weight /= weight.sum()
    dl = np.abs(basis @ c - target) * x
    return c, err.max(), x, dl


def cdf32(x, q):
    u = x * x
    p = q[-1]
    for k in range(len(q) - 2, -1, -1):
        p = (p * u + q[k]).astype(F32)
    e = np.exp2((x * p).astype(F32)).astype(F32)
    return (F32(1) / (F32(1) + e)).astype(F32)


def to_bf16(y):
    b = y.astype(F32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(F32).astype(np.float64)


def rising(c):
    grid = np.linspace(0, 2000, 2000001)
    qq = sum(v * (grid * grid) ** k for k, v in enumerate(c))
    return "Q > 0: %s, x Q(x^2) rising: %s" % (qq.min() > 0, bool(np.all(np.diff(grid * qq) > 0)))


def main_abs():
    c, worst, x, dl = fit(terms=7, iters=400, weight_of=budget_abs)
    q = [F32(-math.log2(math.e) * v) for v in c]
    print("degree 6: worst log-odds error / budget %.3f" % worst)
    print(rising(c))
    xs = np.linspace(-30.0, 30.0, 1200001).astype(F32)
    exact = np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in xs.astype(np.float64)])
    err = np.abs(cdf32(xs, q) - exact)
    print("absolute error of Phi on [-30, 30]: %.2g; of x Phi(x): %.2g"
          % (err.max(), (np.abs(xs.astype(np.float64)) * err).max()))
    print("coefficients of 2^(x q(x^2)), from u^6 down:")
    for v in reversed(q):
        print("  %.9e" % v)


def main():
    c, worst, x, dl = fit()
    q = [F32(-math.log2(math.e) * v) for v in c]
    print("degree 4: worst log-odds error / budget %.3f" % worst)
    for lo, hi in ((0, 1), (1, 2), (2, 3), (3, 4), (4, 6)):
        m = (x > lo) & (x <= hi)
        print("  |x| in (%g, %g]: log-odds error at most %.2g" % (lo, hi, dl[m].max()))
    print(rising(c))
    np.seterr(all="ignore")  # exp2 overflows far out, and NaN and inf bit patterns below
    near = np.linspace(-8.0, 0.0, 80001).astype(F32)
    exact = np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in near.astype(np.float64)])
    print("absolute error of Phi on [-8, 0]: %.2g" % np.abs(cdf32(near, q) - exact).max())
    all16 = np.arange(65536, dtype=np.uint32)
    cases = (
        ("f16", all16.astype(np.uint16).view(np.float16).astype(np.float64), 1e-3,
         lambda y: y.astype(np.float16).astype(np.float64)),
        ("bf16", (all16 << 16).view(F32).astype(np.float64), 1.6e-2, to_bf16),
    )
    for name, xs, rtol, rnd in cases:
        xs = xs[np.isfinite(xs)]
        x32 = xs.astype(F32)
        cdf = cdf32(x32, q)
        exact = np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in xs])
        got = rnd((x32 * cdf).astype(F32))
        ratio = np.abs(got - xs * exact) / (1e-5 + rtol * np.abs(xs * exact))
        print("%s: %d inputs, GELU worst error / tolerance %.3f at x = %g"
              % (name, xs.size, ratio.max(), xs[np.argmax(ratio)]))
        # the derivative as the kernels form it, exp(-x^2 / 2) in fp32
        gauss = np.exp((F32(-0.5) * x32 * x32).astype(F32)).astype(F32)
        d32 = (cdf + x32 * (F32(0.3989422804014327) * gauss)).astype(F32)
        dexact = exact + xs * np.exp(-0.5 * xs * xs) / math.sqrt(2.0 * math.pi)
        worst = 0.0
        for dy in (1.0, 4.0 / 3.0, -4.0 / 3.0):
            got = rnd((F32(dy) * d32).astype(F32))
            r = np.abs(got - dy * dexact) / (1e-5 + rtol * np.abs(dy * dexact))
            worst = max(worst, r.max())
        print("%s: derivative times dy, worst error / tolerance %.3f" % (name, worst))
    print("coefficients of 2^(x q(x^2)), from u^4 down:")
    for v in reversed(q):
        print("  %.9e" % v)
    main_abs()


if __name__ == "__main__":
    main()
