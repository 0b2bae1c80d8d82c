"""``fastgraph.scipy``: differentiable counterparts of SciPy functions."""
from . import linalg, signal, special, stats

__all__ = ["linalg", "signal", "special", "stats"]
