"""The topological sort of the compiled ``kernels.toposort``, with its argument checks: the
static planner orders plans with it, and it is public as ``fg.utils.toposort``."""
from __future__ import annotations

import numpy as np

from ..kernels import toposort as _toposort
from .config import get_num_threads

__all__ = ["toposort"]


def _as_index_array(a: object, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.size == 0 and arr.dtype.kind not in "iu":
        arr = arr.astype(np.int64)  # np.asarray([]) is float64; an empty edge list is fine
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} holds ids too large for int64")
    # No copy when the caller already passes contiguous int64, the common case.
    return np.ascontiguousarray(arr, dtype=np.int64)


def toposort(num_nodes: int, src, dst) -> np.ndarray:
    """Topological order of nodes ``0 .. num_nodes-1`` under the edges ``src[i] -> dst[i]``.

    Each edge puts ``src[i]`` before ``dst[i]``. Returns an ``int64`` array holding every node once.
    Iterative (Kahn's algorithm, compiled, without the GIL), so depth is no concern.

    Raises ``ValueError`` if the graph has a cycle (the message names a node on it, also available
    as ``err.node``), if ``src`` and ``dst`` differ in length, or if an id is outside
    ``[0, num_nodes)``; raises ``TypeError`` for non-integer ids.

    >>> from fastgraph.utils import toposort
    >>> toposort(4, [3, 0, 1], [0, 1, 2])
    array([3, 0, 1, 2])
    """
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)):
        raise TypeError(f"num_nodes must be an integer, got {type(num_nodes).__name__}")
    if num_nodes < 0:
        raise ValueError(f"num_nodes must be >= 0, got {num_nodes}")
    src_a = _as_index_array(src, "src")
    dst_a = _as_index_array(dst, "dst")
    if src_a.shape != dst_a.shape:
        raise ValueError(f"src and dst differ in length: {src_a.shape[0]} != {dst_a.shape[0]}")
    # Range checks happen inside the first native pass (it reads every id anyway) and raise
    # ValueError before anything is written out of bounds.  Threads only speed up building the
    # CSR (Kahn's pass is sequential); the order is the same for any thread count.
    return _toposort.toposort_edges(int(num_nodes), src_a, dst_a, get_num_threads())
