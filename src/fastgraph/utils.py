"""``fg.utils``: graph utilities backed by the compiled topological sort."""
from __future__ import annotations

import numpy as np

from ._core.toposort import toposort

__all__ = ["toposort", "random_dag"]


def random_dag(n: int, m: int, seed=0) -> tuple[np.ndarray, np.ndarray]:
    """About ``m`` random edges (self-loops dropped) over ``n`` nodes, acyclic, with node ids
    relabelled by a random permutation so no order is given away; for tests and benchmarks.

        >>> src, dst = fg.utils.random_dag(1000, 3000, seed=1)
        >>> order = fg.utils.toposort(1000, src, dst)
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    a = rng.integers(0, n, m)
    b = rng.integers(0, n, m)
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    perm = rng.permutation(n)
    return perm[lo], perm[hi]
