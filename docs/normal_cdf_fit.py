#!/usr/bin/env python3
"""Refits the coefficients of kernels/normal_cdf.h (numpy and scipy).

Phi(-z) = exp(-z^2/2) * t * P(t), t = 1 / (1 + a z). P of degree 7 is
fitted by least squares weighted towards the relative error of Phi(-z),
the weights updated from the error so that the fit approaches minimax
(Lawson's iteration), on z in [0, 13.2]; a is scanned. Prints a, the
largest relative error before fp32 rounding, and the coefficients from
t^0 up, rounded to fp32.
"""
import numpy as np
from scipy.special import erfcx


def fit(a, terms, iters=80):
    z = np.linspace(0.0, 13.2, 40000)
    t = 1.0 / (1.0 + a * z)
    target = 0.5 * erfcx(z / np.sqrt(2.0)) / t  # Phi(-z) exp(z^2/2) / t
    basis = np.vstack([t**k for k in range(terms)]).T
    weight = np.ones_like(z)
    for _ in range(iters):
        w = np.sqrt(weight) / target
        c, *_ = np.linalg.lstsq(basis * w[:, None], target * w, rcond=None)
        err = np.abs(basis @ c - target) / target
        weight = weight * err / err.max() + 1e-12
        weight /= weight.sum()
    return c, (np.abs(basis @ c - target) / target).max()


best = min((fit(a, 8) + (a,) for a in np.linspace(0.28, 0.33, 51)), key=lambda r: r[1])
coeffs, err, a = best
print("a = %.9g, largest relative error %.3g" % (np.float32(a), err))
for c in coeffs:
    print("%.9e" % np.float32(c))
