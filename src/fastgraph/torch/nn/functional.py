"""``nn.functional``: PyTorch's ``torch.nn.functional`` -- the registry's deep-learning ops
(``fastgraph.nn_ops``: convolutions, pooling, normalisation, dropout, embeddings, losses,
activations) under their PyTorch names, plus the element-wise activations fastgraph exports at
the top level (``relu``, ``sigmoid``, ``tanh``, ``softmax(dim=)``...) with PyTorch's argument
names.  The functions are the registry's own: ``F.conv2d is fastgraph.nn_ops.conv2d``.

    >>> import fastgraph.torch.nn.functional as F
    >>> F.relu(fg.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""
from __future__ import annotations

from ... import ops as _ops
from ..._core import namespace as _namespace

globals().update(_namespace("nn_ops"))

sigmoid = _ops.sigmoid
tanh = _ops.tanh


def relu(input, inplace: bool = False):  # noqa: A002
    """``max(input, 0)`` (``inplace`` is accepted; the result is a new Tensor)."""
    return _ops.relu(input)


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """``exp(x) / sum(exp(x))`` along ``dim`` (fastgraph's ``softmax`` with PyTorch's names)."""
    if dtype is not None:
        input = _ops.astype(input, dtype)
    return _ops.softmax(input, axis=-1 if dim is None else dim)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """``log(softmax(x))`` along ``dim``, computed stably."""
    if dtype is not None:
        input = _ops.astype(input, dtype)
    return _ops.log_softmax(input, axis=-1 if dim is None else dim)


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """``softmax(-x)`` along ``dim``."""
    return softmax(_ops.negative(input), dim, dtype=dtype)


def threshold(input, threshold: float, value: float, inplace: bool = False):  # noqa: A002
    """``input`` where it is greater than ``threshold``, else ``value``."""
    return _ops.where(input > threshold, input, value)


def _names() -> list:
    return sorted(set(_namespace("nn_ops")) | {"relu", "sigmoid", "tanh", "softmax",
                                                "log_softmax", "softmin", "threshold"})


__all__ = _names()
