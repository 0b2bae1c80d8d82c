"""Synthetic, seeded data sets for the demo and the benchmarks (generated in code, no download).

    >>> X, y = two_moons(200, seed=0)
    >>> X.shape, y.shape, sorted(set(y.tolist()))
    ((200, 2), (200,), [0, 1])
"""
from __future__ import annotations

import numpy as np

__all__ = ["two_moons", "spirals", "init_mlp"]


def two_moons(n: int = 512, noise: float = 0.15, seed: int = 0,
              dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaving half circles (like scikit-learn's ``make_moons``), standardised.

    Returns ``X`` of shape ``(n, 2)`` and integer labels ``y`` (``int64``) of shape ``(n,)``.
    """
    rng = np.random.default_rng(seed)
    n0 = n // 2
    n1 = n - n0
    t0 = np.linspace(0.0, np.pi, n0)
    t1 = np.linspace(0.0, np.pi, n1)
    upper = np.stack([np.cos(t0), np.sin(t0)], axis=1)
    lower = np.stack([1.0 - np.cos(t1), 0.5 - np.sin(t1)], axis=1)
    X = np.concatenate([upper, lower]) + rng.normal(scale=noise, size=(n, 2))
    y = np.concatenate([np.zeros(n0, np.int64), np.ones(n1, np.int64)])
    perm = rng.permutation(n)
    X, y = X[perm], y[perm]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X.astype(dtype), y


def spirals(n: int = 512, classes: int = 3, noise: float = 0.2, seed: int = 0,
            dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """``classes`` interleaved spiral arms (the CS231n toy set); ``X`` is ``(n, 2)``."""
    rng = np.random.default_rng(seed)
    per = n // classes
    Xs, ys = [], []
    for k in range(classes):
        r = np.linspace(0.0, 1.0, per)
        t = np.linspace(k * 4.0, (k + 1) * 4.0, per) + rng.normal(scale=noise, size=per)
        Xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(per, k, np.int64))
    X, y = np.concatenate(Xs), np.concatenate(ys)
    perm = rng.permutation(len(y))
    return X[perm].astype(dtype), y[perm]


def init_mlp(sizes: tuple[int, ...], seed: int = 0, dtype=np.float64) -> list[np.ndarray]:
    """He-initialised weights ``[W1, b1, W2, b2, ...]`` for an MLP with layer ``sizes``.

    ``W_i`` has shape ``(sizes[i], sizes[i+1])`` (inputs are rows: ``h = x @ W + b``).
    """
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        params.append(w.astype(dtype))
        params.append(np.zeros(fan_out, dtype=dtype))
    return params
