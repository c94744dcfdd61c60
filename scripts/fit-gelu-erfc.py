#!/usr/bin/env python3
"""fit-gelu-erfc.py: the polynomial of vmath::gelu_erf (runtime/kernels/util/vector_math.h).

gelu_erf computes Phi(x) = erfc(-x / sqrt 2) / 2 through one form for every x:
erfc(a) = t * Q(t - 1/2) * e^(-a^2), a = |x| / sqrt 2, t = 2 / (2 + |x|) in (0, 1].
Q approximates f(t) = erfcx(a) / t = erfc(a) e^(a^2) / t over t in [TMIN, 1] (x from 0 to
-13.4, below which GELU flushes to 0). This fits Q of DEGREE in powers of (t - 1/2) for least
relative error (Lawson-weighted least squares against mpmath), rounding the coefficients to
float32 one at a time from the highest degree down and refitting the rest after each, and prints
the float32 coefficients, highest degree first, with the fit's largest relative error.

Usage: .venv/bin/python scripts/fit-gelu-erfc.py [DEGREE [TMIN]]   (defaults 10, 0.13)
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
DEGREE = int(sys.argv[1]) if len(sys.argv) > 1 else 10
TMIN = float(sys.argv[2]) if len(sys.argv) > 2 else 0.13
SHIFT = 0.5
N = 3000


def f(t):
    t = mp.mpf(t)
    a = mp.sqrt(2) * (1 / t - 1)
    return mp.erfc(a) * mp.exp(a * a) / t


k = np.arange(N)  # Chebyshev points of [TMIN, 1], rounded to float32 as the kernel sees them
ts = 0.5 * (TMIN + 1) + 0.5 * (1 - TMIN) * np.cos(np.pi * (k + 0.5) / N)
ts = ts.astype(np.float32).astype(np.float64)
fs = np.array([float(f(t)) for t in ts])
V = np.vander(ts - SHIFT, DEGREE + 1, increasing=True)


def fit(fixed):
    """Relative minimax-like fit of the coefficients not in `fixed` (degree -> value)."""
    free = [i for i in range(DEGREE + 1) if i not in fixed]
    rest = fs - sum(V[:, i] * c for i, c in fixed.items())
    w = np.ones(N)
    for _ in range(40):  # Lawson: weights grow where the error is largest
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(V[:, free] / fs[:, None] * sw[:, None], rest / fs * sw,
                                rcond=None)
        full = np.zeros(DEGREE + 1)
        for i, v in fixed.items():
            full[i] = v
        full[free] = c
        err = np.abs(V @ full / fs - 1)
        w = w * (err + 1e-30)
        w /= w.sum()
    return full, err.max()


fixed = {}
for i in range(DEGREE, -1, -1):
    full, worst = fit(fixed)
    fixed[i] = float(np.float32(full[i]))
print("degree %d over t in [%g, 1], powers of (t - %g): largest relative error %.3g"
      % (DEGREE, TMIN, SHIFT, worst))
for i in range(DEGREE, -1, -1):
    print("%.9e" % fixed[i])
