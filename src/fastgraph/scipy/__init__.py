"""``fastgraph.scipy``: differentiable counterparts of SciPy functions."""
from . import linalg, special, stats

__all__ = ["linalg", "special", "stats"]
