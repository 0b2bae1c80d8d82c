"""``fastgraph.scipy``: differentiable counterparts of SciPy functions."""
from . import special

__all__ = ["special"]
