"""``fg.train``: optimizers for static graphs (see :mod:`fastgraph.static.train`)."""
from .static.train import AdamOptimizer, GradientDescentOptimizer, MomentumOptimizer, Optimizer

__all__ = ["GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "Optimizer"]
