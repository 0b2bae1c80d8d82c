"""``@fg.function`` -- the bridge: trace an eager-style function into a static graph once per
signature (argument shapes and dtypes), compile it with the full pass pipeline, run the plan.

    >>> @fg.function
    ... def f(x, y):
    ...     return fg.tanh(x * y).sum()
    >>> f(np.ones(3), np.ones(3))        # traces, compiles, runs
    >>> f(np.zeros(3), np.ones(3))       # runs the cached plan

Composes with the transforms: ``fg.function(fg.grad(f))`` traces ``fg.grad(f)`` with placeholder
arguments, and the transforms, given Nodes, differentiate symbolically (:func:`static_value_and_grad`).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import ops as F
from .gradients import gradients
from .graph import Graph
from .node import NODE_TYPES, as_node
from .session import Session, _flatten
from .variables import placeholder

__all__ = ["function", "static_value_and_grad"]


def _arg_value(a):
    if hasattr(a, "grad_fn") and hasattr(a, "data"):   # an eager Tensor: its data
        a = a.data
    if type(a) is float:
        return np.float64(a)
    if type(a) is int:
        return np.int64(a)
    if type(a) is bool:
        return np.bool_(a)
    if isinstance(a, (np.ndarray, np.generic)):
        return a
    return np.asarray(a)


class _Traced:
    __slots__ = ("plan", "rebuild", "store", "graph", "n_args")


class Function:
    """A traced function: ``__call__`` runs the cached plan of the arguments' signature."""

    def __init__(self, fun, disable=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.disable = tuple(disable)
        self._cache: dict = {}
        self.trace_count = 0

    def _signature(self, vals, kwargs):
        sig = tuple((v.shape, v.dtype) for v in vals)
        if kwargs:
            sig += (tuple(sorted(kwargs.items())),)
        return sig

    def trace(self, vals, kwargs) -> _Traced:
        self.trace_count += 1
        g = Graph()
        with g.as_default():
            phs = [placeholder(v.dtype, v.shape, name=f"arg{i}") for i, v in enumerate(vals)]
            out = self.fun(*phs, **kwargs)
            leaves: list = []
            rebuild = _flatten_outputs(out, leaves, g)
            sess = Session(g, disable=self.disable)
            t = _Traced()
            t.plan = sess._compile(leaves, phs, [v[()] if v.ndim == 0 else v for v in vals])
            t.rebuild = rebuild
            t.store = sess._store
            t.graph = g
            t.n_args = len(vals)
        return t

    def __call__(self, *args, **kwargs):
        vals = [_arg_value(a) for a in args]
        try:
            sig = self._signature(vals, kwargs)
            t = self._cache.get(sig)
        except TypeError:  # unhashable keyword arguments: trace every time
            sig, t = None, None
        if t is None:
            t = self.trace(vals, kwargs)
            if sig is not None:
                self._cache[sig] = t
        feeds = [v[()] if type(v) is np.ndarray and v.ndim == 0 else v for v in vals]
        return t.rebuild(t.plan.run(feeds, t.store))

    def explain(self, *args, **kwargs) -> str:
        vals = [_arg_value(a) for a in args]
        return self.trace(vals, kwargs).plan.explain()

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)


def _flatten_outputs(out, leaves, graph):
    """Like the Session's fetch flattening, with non-Node leaves turned into constants."""
    if type(out) in NODE_TYPES or out is None:
        return _flatten(out, leaves, graph)
    if isinstance(out, (list, tuple, dict)):
        if isinstance(out, dict):
            return _flatten({k: _leafify(v, graph) for k, v in out.items()}, leaves, graph)
        items = [_leafify(v, graph) for v in out]
        if isinstance(out, tuple) and hasattr(out, "_fields"):
            return _flatten(type(out)(*items), leaves, graph)
        return _flatten(type(out)(items) if type(out) in (list, tuple) else items, leaves, graph)
    return _flatten(as_node(out, graph), leaves, graph)


def _leafify(v, graph):
    if type(v) in NODE_TYPES or isinstance(v, (list, tuple, dict)) or v is None:
        return v
    return as_node(v, graph)


def function(fun=None, *, disable=()):
    """Trace ``fun`` into a static graph per argument signature and run the compiled plan.

    Usable as ``@fg.function`` or ``@fg.function(disable=("fold",))``.
    """
    if fun is None:
        return lambda f: Function(f, disable)
    return Function(fun, disable)


def static_value_and_grad(fun, args, kwargs, nums, single, has_aux):
    """``value_and_grad`` on Node arguments: symbolic gradients (used while tracing)."""
    graph = next(a.graph for a in args if type(a) in NODE_TYPES)
    args = list(args)
    for i in nums:
        a = args[i]
        if type(a) not in NODE_TYPES:
            args[i] = as_node(np.asarray(a, dtype=np.float64) if np.asarray(a).dtype.kind != "f"
                              else np.asarray(a), graph)
        elif a.dtype.kind != "f":
            args[i] = F.astype(a, np.float64)
    out = fun(*args, **kwargs)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("has_aux=True requires the function to return a pair (value, aux)")
        out, aux = out
    out = as_node(out, graph)
    if out.shape is not None and None not in out.shape and int(np.prod(out.shape)) != 1:
        raise TypeError(f"grad requires a scalar-output function; got an output of shape "
                        f"{out.shape}")
    xs = [args[i] for i in nums]
    gs = gradients(out, xs)
    gs = tuple(F.broadcast_like(as_node(np.zeros((), x.dtype), graph), x) if g is None else g
               for x, g in zip(xs, gs))
    result = gs[0] if single else gs
    return ((out, aux) if has_aux else out), result
