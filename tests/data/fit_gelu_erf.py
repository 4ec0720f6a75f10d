"""Fits the two polynomials of core/layers/gelu.cpp's float32 erf, and reports their error.

erf(a) = a * P(a^2) on [0, 1]; erf(a) = 1 - exp(-a^2) * R(a - 2.5) on [1, 4], where
R ~ erfc(a) exp(a^2). Least squares at Chebyshev nodes against math.erf and math.erfc in
double; the coefficients are printed as float32 literals, highest degree last.

    python3 tests/data/fit_gelu_erf.py
"""

import math

import numpy as np


def chebyshev_nodes(low, high, count):
    k = np.arange(count)
    return (low + high) / 2 + (high - low) / 2 * np.cos(np.pi * (k + 0.5) / count)


def horner32(coefficients, x):
    value = np.float32(coefficients[-1])
    for c in coefficients[-2::-1]:
        value = (value * x + np.float32(c)).astype(np.float32)
    return value


def main():
    a = chebyshev_nodes(0.0, 1.0, 400)
    small = np.polynomial.polynomial.polyfit(a * a, [math.erf(x) / x for x in a], 5)
    a = chebyshev_nodes(1.0, 4.0, 600)
    large = np.polynomial.polynomial.polyfit(
        a - 2.5, [math.erfc(x) * math.exp(x * x) for x in a], 11)
    for name, c in (("P", small), ("R", large)):
        print(name, ", ".join("%.9ef" % np.float32(x) for x in c))

    # the error of erf in float32 as gelu.cpp evaluates it (exp in double here)
    grid = np.linspace(1e-4, 4.5, 400001).astype(np.float32)
    t = (grid * grid).astype(np.float32)
    p = (grid * horner32(small, t)).astype(np.float32)
    s = (np.minimum(grid, np.float32(4)) - np.float32(2.5)).astype(np.float32)
    e = np.exp(-t.astype(np.float64)).astype(np.float32)
    q = (np.float32(1) - e * horner32(large, s)).astype(np.float32)
    value = np.where(grid < 1, p, q)
    exact = np.array([math.erf(float(x)) for x in grid])
    print("largest error of erf on [0, 4.5]: %.2e" % np.max(np.abs(value - exact)))


if __name__ == "__main__":
    main()
