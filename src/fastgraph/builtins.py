"""HIPS autograd's ``autograd.builtins`` for fastgraph: ``tuple list dict isinstance type``.

autograd boxes every traced value, so it needs container types that gradients flow through and
``isinstance``/``type`` that look inside a box.  fastgraph's traced values are Tensors (and graph
Nodes) held in ordinary Python containers, and every transform walks lists, tuples and dicts,
so ``tuple``, ``list`` and ``dict`` here *are* Python's (``isinstance(x, tuple)`` holds for the
same values in both libraries, and gradients flow through them as through any container).
``isinstance`` and ``type`` answer for the value a Tensor or Node stands for, as autograd's do for
a box: a Tensor is an ``np.ndarray`` (a 0-d one also a NumPy scalar of its dtype).

    >>> from fastgraph.builtins import isinstance, tuple
    >>> import fastgraph as fg, numpy as np
    >>> fg.grad(lambda x: x[0] * x[1] if isinstance(x, tuple) else x)(tuple((2.0, 3.0)))
    (np.float64(3.0), np.float64(2.0))
    >>> fg.grad(lambda x: fg.sum(x * 2.0) if isinstance(x, np.ndarray) else x)(np.ones(2))
    array([2., 2.])
"""
from __future__ import annotations

import builtins as _py

import numpy as np

from .eager.tensor import Tensor
from .static.node import NODE_TYPES

__all__ = ["tuple", "list", "dict", "isinstance", "type"]

tuple = _py.tuple
list = _py.list
dict = _py.dict


def _value_types(obj):
    """The types ``obj`` answers to: its own, and for a Tensor or Node the array (and, 0-d, the
    NumPy scalar) it stands for."""
    if _py.isinstance(obj, Tensor):
        data = obj._ndarray
        return (_py.type(obj), _py.type(data)) + ((_py.type(data[()]),) if data.ndim == 0 else ())
    if _py.type(obj) in NODE_TYPES:
        return (_py.type(obj), np.ndarray)
    return (_py.type(obj),)


def isinstance(obj, classinfo) -> bool:
    """Python's ``isinstance``, answering for a Tensor or Node also as the array it stands for
    (autograd's looks inside its boxes the same way).

        >>> isinstance(fg.tensor([1.0]), np.ndarray)
        True
    """
    if _py.isinstance(obj, classinfo):
        return True
    return _py.any(_py.issubclass(t, classinfo) for t in _value_types(obj)[1:])


def type(obj):
    """Python's ``type``, giving the array type for a Tensor or Node (as autograd's gives the
    type of the boxed value).

        >>> type(fg.tensor([1.0])) is np.ndarray
        True
    """
    types = _value_types(obj)
    return types[1] if _py.len(types) > 1 else types[0]
