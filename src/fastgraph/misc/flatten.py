"""autograd's ``flatten``: nested lists, tuples and dicts of arrays (and numbers, Tensors,
graph Nodes) to one vector, and back.

The order is autograd's: lists and tuples in order, dicts by sorted key; leaves are raveled and
concatenated, so the vector has their promoted dtype.  Both directions are fastgraph operations
when a leaf (or the vector given back) is a Tensor or Node, so a gradient flows through them
(autograd's examples take an L2 norm of the flattened parameters inside the loss); on plain
values they are NumPy's.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp

__all__ = ["flatten", "flatten_func"]


def _leaves(value, out: list):
    """The leaves of ``value`` in autograd's order, and a function of the leaves' values (a
    list, consumed in order) rebuilding the structure.  Only exact lists, tuples and dicts are
    containers, as in autograd (it tests ``type(value) in (list, tuple)``)."""
    t = type(value)
    if t in (list, tuple):
        subs = [_leaves(v, out) for v in value]
        return lambda it: t(s(it) for s in subs)
    if t is dict:
        keys = sorted(value)
        subs = [_leaves(value[k], out) for k in keys]

        def rebuild(it):       # the values in sorted order, the dict in its own order
            by_key = {k: s(it) for k, s in zip(keys, subs)}
            return {k: by_key[k] for k in value}
        return rebuild
    out.append(value)
    return lambda it: next(it)


def flatten(value):
    """``(vector, unflatten)``: the leaves of ``value`` raveled into one 1-d vector, and the
    function that puts a vector of that length back into ``value``'s structure (each leaf an
    array of its shape; a number leaf a 0-d array, as autograd gives it).

        >>> from fastgraph.misc import flatten
        >>> v, unflatten = flatten({"W": np.ones((2, 2)), "b": [np.zeros(2), 3.0]})
        >>> v                                   # "W" sorts before "b"
        array([1., 1., 1., 1., 0., 0., 3.])
        >>> unflatten(v * 2)["b"]
        [array([0., 0.]), array(6.)]
    """
    leaves: list = []
    rebuild = _leaves(value, leaves)
    shapes = [np.shape(v) for v in leaves]
    sizes = [int(np.prod(s)) for s in shapes]
    if leaves:
        vector = fnp.concatenate([fnp.ravel(v) for v in leaves])
    else:
        vector = np.array([])
    n = sum(sizes)

    def unflatten(vector):
        if np.shape(vector) != (n,):
            raise ValueError(f"unflatten: the vector has shape {np.shape(vector)}; this "
                             f"structure flattens to shape ({n},)")
        parts, start = [], 0
        for shape, size in zip(shapes, sizes):
            parts.append(fnp.reshape(vector[start:start + size], shape))
            start += size
        return rebuild(iter(parts))

    return vector, unflatten


def flatten_func(func, example):
    """autograd's ``flatten_func``: ``func`` of a structure like ``example`` as a function of
    the flat vector, ``(flat_func, unflatten, flat_example)``.

        >>> f, unflatten, x0 = flatten_func(lambda p: p["a"] * 2.0, {"a": np.ones(2)})
        >>> f(x0)
        array([2., 2.])
    """
    _ex, unflatten = flatten(example)

    def _func(_x, *args):
        return flatten(func(unflatten(_x), *args))[0]

    return _func, unflatten, _ex
