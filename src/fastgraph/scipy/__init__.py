"""``fastgraph.scipy``: differentiable counterparts of SciPy functions."""
from . import linalg, special

__all__ = ["linalg", "special"]
