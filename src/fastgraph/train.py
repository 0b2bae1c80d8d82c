"""``fg.train``: optimizers for static graphs (see :mod:`fastgraph.static.train`)."""
from .static.train import (AdadeltaOptimizer, AdagradOptimizer, AdamOptimizer,
                           GradientDescentOptimizer, MomentumOptimizer, Optimizer,
                           RMSPropOptimizer, create_global_step, exponential_decay,
                           get_global_step, get_or_create_global_step)
from .static.saver import (CheckpointState, Saver, checkpoint_exists, get_checkpoint_state,
                           latest_checkpoint)

__all__ = ["GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "Optimizer",
           "RMSPropOptimizer", "AdagradOptimizer", "AdadeltaOptimizer",
           "get_or_create_global_step", "get_global_step", "create_global_step",
           "exponential_decay",
           "Saver", "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists",
           "CheckpointState"]
