"""``fastgraph.scipy``: differentiable counterparts of SciPy functions."""
from . import integrate, linalg, signal, special, stats

__all__ = ["integrate", "linalg", "signal", "special", "stats"]
