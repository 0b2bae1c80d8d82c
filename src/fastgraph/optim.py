"""``fg.optim``: optimizers for eager parameters, with PyTorch's update formulas, parameter
groups and state dicts."""
from .eager.optim import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Optimizer"]
