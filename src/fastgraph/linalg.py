"""``fg.linalg``: differentiable ``inv solve det slogdet`` (batched, NumPy semantics)."""
from .ops.linalg import det, inv, slogdet, solve

__all__ = ["inv", "solve", "det", "slogdet"]


def __getattr__(name: str):
    # norm, eigh, ... are NumPy's own (not differentiable), so drop-in scripts keep working
    import numpy.linalg
    return getattr(numpy.linalg, name)
