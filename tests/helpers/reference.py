"""Definitions computed plainly (numpy), for the tests that hold the package's computations against them."""

import numpy as np


def reference_entmax(z: np.ndarray, alpha: float) -> np.ndarray:
    """alpha-entmax by its definition, p_i = [(alpha - 1) z_i - tau]_+ ^ (1 / (alpha - 1)), tau found by bisection
    so that p sums to 1 (sparsemax: alpha = 2)."""
    z = (alpha - 1) * z
    lo, hi = z.max() - 1, z.max()
    for _ in range(200):
        tau = (lo + hi) / 2
        total = (np.clip(z - tau, 0, None) ** (1 / (alpha - 1))).sum()
        lo, hi = (tau, hi) if total > 1 else (lo, tau)
    return np.clip(z - tau, 0, None) ** (1 / (alpha - 1))
