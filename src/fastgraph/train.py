"""``fg.train``: optimizers for static graphs (see :mod:`fastgraph.static.train`)."""
from .static.train import AdamOptimizer, GradientDescentOptimizer, MomentumOptimizer, Optimizer
from .static.saver import (CheckpointState, Saver, checkpoint_exists, get_checkpoint_state,
                           latest_checkpoint)

__all__ = ["GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "Optimizer",
           "Saver", "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists",
           "CheckpointState"]
