"""Custom gradients: the one mechanism behind autograd's ``primitive``/``defvjp``
(``fastgraph.extend``), JAX's ``fg.custom_vjp`` and PyTorch's ``fastgraph.autograd.Function``.

:func:`custom_op` makes an :class:`OpDef` like any declaration's: its forward runs on plain
NumPy values, its VJP is the user's rule.  The rule receives the op's inputs as the engine has
them (arrays in a first-order eager backward, Tensors when the backward is itself recorded,
graph Nodes in a static graph), so a rule written with fastgraph operations works eagerly, in
static graphs, inside ``fg.function`` and to any order.

Arguments that are not array values (ints, strings, None, tuples, callables) are not inputs of
the op: they are passed to the forward and to the rule at their positions, unchanged.
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from .._core import ZERO, apply, defop, holds_graph_value, is_tensor

_SERIAL = itertools.count()


def _is_array_value(v) -> bool:
    """An input of the op (may carry a gradient): arrays, floats, Tensors and Nodes."""
    return holds_graph_value((v,)) or isinstance(v, (np.ndarray, np.floating, float, complex))


class _Statics:
    """The positions and values of the arguments that are not inputs (compared by identity,
    so graphs never merge two calls with different ones)."""
    __slots__ = ("n", "values", "kwargs")

    def __init__(self, n, values, kwargs):
        self.n, self.values, self.kwargs = n, values, kwargs

    def full_args(self, inputs):
        args = [None] * self.n
        for pos, v in self.values:
            args[pos] = v
        it = iter(inputs)
        for pos in range(self.n):
            if not any(p == pos for p, _ in self.values):
                args[pos] = next(it)
        return args


class CustomOp:
    """A user-defined operation: ``forward(*args, **kwargs)`` on NumPy values and
    ``backward(g, ans, args, kwargs, positions)`` returning one gradient per position in
    ``positions`` (the inputs' positions among ``args``; None: no gradient).  Call it like the
    function it wraps.

        >>> op = CustomOp("twice", lambda x: 2 * x,
        ...               lambda g, ans, args, kw, pos: [2 * g for _ in pos])  # doctest: +SKIP
    """

    def __init__(self, name: str, forward: Callable, backward: Callable):
        self.name = name
        self.forward = forward
        self.backward = backward
        def function(*args, **kwargs):
            return self.call(args, kwargs)
        function.__name__ = function.__qualname__ = name
        self.function = defop(f"custom:{name}#{next(_SERIAL)}", self._run_forward,
                              vjp_for=self._vjp_for, function=function, variadic=True)
        self.op = self.function.op

    def _run_forward(self, *xs, statics):
        out = self.forward(*statics.full_args(xs), **statics.kwargs)
        if isinstance(out, (tuple, list)):
            raise TypeError(f"{self.name}: a custom operation returns one array, got a "
                            f"{type(out).__name__} (return one array, or make one operation "
                            f"per result)")
        return np.asarray(out)

    def _vjp_for(self, i):
        def vjp(g, ans, *xs, statics):
            args = statics.full_args(xs)
            positions = [p for p in range(statics.n)
                         if not any(q == p for q, _ in statics.values)]
            grads = self.backward(g, ans, args, statics.kwargs, positions)
            if len(grads) != len(positions):
                raise ValueError(f"{self.name}: the backward rule gave {len(grads)} gradients "
                                 f"for {len(positions)} array inputs")
            grad = grads[i]
            if grad is None:     # no gradient for this input: nothing in a graph, else zeros
                x = xs[i]
                if holds_graph_value((x,)) and not is_tensor(x):
                    return ZERO
                return np.zeros(tuple(getattr(x, "shape", np.shape(x))),
                                dtype=np.result_type(getattr(g, "dtype", np.float64)))
            return grad
        return vjp

    def call(self, args, kwargs, static=()):
        """Apply the operation to ``args`` (those at the ``static`` positions, and every
        argument that is not an array value, are passed through, never differentiated)."""
        values = tuple((p, a) for p, a in enumerate(args)
                       if p in static or not _is_array_value(a))
        inputs = tuple(a for p, a in enumerate(args) if p not in static and _is_array_value(a))
        if not holds_graph_value(inputs):
            return self.forward(*args, **kwargs)
        return apply(self.op, inputs, {"statics": _Statics(len(args), values, kwargs)})

    def __call__(self, *args, **kwargs):
        return self.call(args, kwargs)


def custom_op(name: str, forward: Callable, backward: Callable) -> CustomOp:
    """A :class:`CustomOp` (see there): the building block of the three custom-gradient faces,
    and of front-ends that add their own (``fastgraph.torch.autograd.Function``)."""
    return CustomOp(name, forward, backward)
