"""``fg.nn``: TensorFlow 1's ``tf.nn`` (activations, softmax, cross-entropies, dropout,
moments...), over the same ops as the rest of fastgraph.

Its names are the declarations exported to ``"nn"`` (generated from the registry); the table
is in the guide's "Coming from TensorFlow 1" page.

    >>> h = fg.nn.relu(fg.matmul(x, w) + b)
    >>> loss = fg.reduce_mean(fg.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
    ...                                                                      logits=h))
"""
from ._core import NN as _NN
from ._core import namespace as _namespace
from .static import random as _random  # noqa: F401  (declares dropout)

globals().update(_namespace(_NN))
__all__ = sorted(_namespace(_NN))
