"""``fg.linalg``: differentiable ``inv solve det slogdet norm`` (batched, NumPy semantics)."""
from .ops.linalg import det, inv, norm, slogdet, solve

__all__ = ["inv", "solve", "det", "slogdet", "norm"]


def __getattr__(name: str):
    # eigh, svd, ... are NumPy's own (not differentiable), so drop-in scripts keep working
    import numpy.linalg
    return getattr(numpy.linalg, name)
