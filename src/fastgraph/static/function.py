"""``@fg.function`` -- the bridge: trace an eager-style function into a static graph once per
signature (argument shapes and dtypes), compile it with the full pass pipeline, run the plan.

    >>> @fg.function
    ... def f(x, y):
    ...     return fg.tanh(x * y).sum()
    >>> f(np.ones(3), np.ones(3))        # traces, compiles, runs
    >>> f(np.zeros(3), np.ones(3))       # runs the cached plan

Composes with the transforms: ``fg.function(fg.grad(f))`` traces ``fg.grad(f)`` with placeholder
arguments, and the transforms, given Nodes, differentiate symbolically (:func:`static_value_and_grad`).

``donate_argnums`` (JAX's name and meaning): the caller hands those arguments' arrays over, and an
output of the same shape and dtype may be written into one instead of a new array.  A training step
returning its updated parameters then updates them in place::

    >>> step = fg.function(train_step, donate_argnums=(0, 1))   # train_step(w, b, x, y)
    >>> loss, (w, b) = step(w, b, x, y)          # w, b: the same arrays, now updated

Outputs are paired with donated arguments in order: each output takes the first unpaired donated
argument with its shape and dtype.  A donated argument is traced as a variable whose value for the
call is the caller's array, and its paired output as an assignment to it, so the ``inplace`` pass
decides what is written in place (elementwise updates are; anything else is a new array, returned
as the output).  A donated argument that is not a writeable, aligned, C-contiguous ndarray of the
traced dtype, or that may share memory with another argument (the same array, or views of one
array: their ``.base`` owners are compared), is copied first.  Donated arrays hold
unspecified values after an error -- in practice their old ones: in-place writes come last.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import ops as F
from .gradients import gradients
from .graph import Graph
from .node import NODE_TYPES, as_node
from .session import Session, _flatten
from .variables import Variable, _make_assign, placeholder

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


def _feed(v):
    """How an argument is fed: 0-d arrays as NumPy scalars (the plan's scalar fast paths)."""
    return v[()] if type(v) is np.ndarray and v.ndim == 0 else v


class _Traced:
    __slots__ = ("plan", "rebuild", "store", "graph", "n_args", "feed_pos", "donated", "paired")


def _memory_owner(v):
    """The object whose memory ``v`` uses (following ``.base``): arrays with different owners
    cannot overlap.  (Cheap, and conservative: two views of one array count as sharing.)"""
    if type(v) is not np.ndarray:
        return None
    while True:
        b = v.base
        if b is None:
            return v
        if not isinstance(b, np.ndarray):
            return b
        v = b


def _distinct_owners(vals) -> bool:
    """Whether every argument is an array owning its memory, no two of them the same object
    (then no two can overlap)."""
    for v in vals:
        if type(v) is not np.ndarray or v.base is not None:
            return False
    return len({id(v) for v in vals}) == len(vals)


def _donatable(v, dtype, shared: bool) -> np.ndarray:
    """``v`` itself when its memory may be written by the plan, else a private copy."""
    if not shared and type(v) is np.ndarray and v.dtype == dtype:
        flags = v.flags
        if flags.c_contiguous and flags.writeable and flags.aligned:
            return v
    return np.array(v, dtype=dtype, order="C")


class Function:
    """A traced function: ``__call__`` runs the cached plan of the arguments' signature."""

    def __init__(self, fun, disable=(), donate_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.disable = tuple(disable)
        if isinstance(donate_argnums, int):
            donate_argnums = (donate_argnums,)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in donate_argnums):
            raise TypeError(f"fg.function: donate_argnums must be ints, got {donate_argnums!r}")
        self.donate_argnums = tuple(donate_argnums)
        self._cache: dict = {}
        self.trace_count = 0

    def _donated_positions(self, n_args: int) -> list[int]:
        pos = []
        for i in self.donate_argnums:
            if not -n_args <= i < n_args:
                raise ValueError(f"fg.function({self.fun.__name__}): donate_argnums entry {i} is "
                                 f"out of range for {n_args} positional argument(s)")
            if i % n_args not in pos:
                pos.append(i % n_args)
        return sorted(pos)

    def _signature(self, vals, kwargs):
        sig = tuple([(v.shape, v.dtype) for v in vals])
        if kwargs:
            sig += (tuple(sorted(kwargs.items())),)
        return sig

    def trace(self, vals, kwargs) -> _Traced:
        self.trace_count += 1
        donated = self._donated_positions(len(vals)) if self.donate_argnums else []
        g = Graph()
        with g.as_default():
            args, phs, feed_pos = [], [], []
            for i, v in enumerate(vals):
                if i in donated:   # its value is the caller's array, set per call
                    zero = as_node(np.zeros((), v.dtype), g)
                    args.append(Variable(F.broadcast_to(zero, v.shape), name=f"arg{i}"))
                else:
                    args.append(placeholder(v.dtype, v.shape, name=f"arg{i}"))
                    phs.append(args[-1])
                    feed_pos.append(i)
            out = self.fun(*args, **kwargs)
            leaves: list = []
            rebuild = _flatten_outputs(out, leaves, g)
            paired = _pair_donations(leaves, [args[i] for i in donated])
            fetches = list(leaves)
            for k, var in paired:   # the output becomes "var = value"; its value is read back
                fetches[k] = _make_assign(var, leaves[k], f"{var.name}/donated", operation=True)
            sess = Session(g, disable=self.disable)
            t = _Traced()
            t.plan = sess._compile(fetches, phs, [_feed(vals[i]) for i in feed_pos])
            t.rebuild = rebuild
            t.store = sess._store
            t.graph = g
            t.n_args = len(vals)
            t.feed_pos = feed_pos if donated else None
            t.donated = [(i, args[i].var_index, args[i].dtype) for i in donated]
            t.paired = [(k, var.var_index) for k, var in paired]
        return t

    def __call__(self, *args, **kwargs):
        vals = [a if type(a) is np.ndarray else _arg_value(a) for a in args]
        try:
            sig = self._signature(vals, kwargs)
            t = self._cache.get(sig)
        except TypeError:  # unhashable keyword arguments: trace every time
            sig, t = None, None
        if t is None:
            t = self.trace(vals, kwargs)
            if sig is not None:
                self._cache[sig] = t
        if t.feed_pos is None:
            return t.rebuild(t.plan.run([_feed(v) for v in vals], t.store))
        return self._call_donating(t, vals)

    def _call_donating(self, t: _Traced, vals: list):
        feeds = [_feed(vals[i]) for i in t.feed_pos]
        # a store of this call's own: concurrent calls do not share it, and the plan keeps no
        # reference to the caller's arrays afterwards
        store = t.store[:]
        if _distinct_owners(vals):    # the usual case: no argument can overlap another
            for i, idx, dtype in t.donated:
                store[idx] = _donatable(vals[i], dtype, False)
        else:
            owners = [id(_memory_owner(v)) for v in vals]
            for i, idx, dtype in t.donated:
                shared = owners.count(owners[i]) > 1 and _memory_owner(vals[i]) is not None
                store[idx] = _donatable(vals[i], dtype, shared)
        res = t.plan.run(feeds, store)
        for k, idx in t.paired:
            res[k] = store[idx]
        return t.rebuild(res)

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


def _pair_donations(leaves, donated) -> list:
    """(output index, donated variable) pairs: each output takes the first unpaired donated
    argument of its shape and dtype (an output that *is* the argument stays unpaired)."""
    free = list(donated)     # (identity tests only: == on nodes builds an "equal" node)
    pairs = []
    for k, leaf in enumerate(leaves):
        if leaf is None or leaf.is_operation or leaf.shape is None or \
                any(leaf is d for d in donated):
            continue
        for j, var in enumerate(free):
            if tuple(var.shape) == tuple(leaf.shape) and var.dtype == leaf.dtype:
                pairs.append((k, var))
                del free[j]
                break
    return pairs


def _leafify(v, graph):
    if type(v) in NODE_TYPES or isinstance(v, (list, tuple, dict)) or v is None:
        return v
    return as_node(v, graph)


def function(fun=None, *, disable=(), donate_argnums=()):
    """Trace ``fun`` into a static graph per argument signature and run the compiled plan.

    Usable as ``@fg.function``, ``@fg.function(disable=("fold",))`` or
    ``fg.function(step, donate_argnums=(0, 1))`` (outputs may be written into those arguments'
    arrays; see the module docstring).
    """
    if fun is None:
        return lambda f: Function(f, disable, donate_argnums)
    return Function(fun, disable, donate_argnums)


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
