"""``fg.optim``: optimizers for eager parameters."""
from .eager.optim import SGD, Adam, Optimizer

__all__ = ["SGD", "Adam", "Optimizer"]
