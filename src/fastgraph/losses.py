"""``fg.losses``: TensorFlow 1's ``tf.losses`` (``mean_squared_error``, ``huber_loss``,
``softmax_cross_entropy``...), each reducing its weighted losses as TensorFlow does by default
(``Reduction.SUM_BY_NONZERO_WEIGHTS``: the mean over the elements whose weight is not zero).

    >>> loss = fg.losses.mean_squared_error(labels=y, predictions=pred)
"""
from ._core import LOSSES as _LOSSES
from ._core import namespace as _namespace
from .ops.tf1 import Reduction

globals().update(_namespace(_LOSSES))
__all__ = sorted(_namespace(_LOSSES)) + ["Reduction"]
