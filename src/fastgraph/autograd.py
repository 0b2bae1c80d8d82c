"""``fg.autograd``: PyTorch-style functional access to the eager engine."""
from .eager.autograd import backward, grad

__all__ = ["backward", "grad"]
