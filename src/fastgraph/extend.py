"""Custom gradients, autograd's way and JAX's: ``from fastgraph.extend import primitive, defvjp``
(a drop-in for ``autograd.extend``) and :class:`custom_vjp` (``fg.custom_vjp``, JAX's).

Both make one fastgraph operation (``fastgraph.ops.custom``), like any declared op: it works
eagerly, in static graphs, inside ``fg.function``, and to higher order when the gradient rule is
written with fastgraph operations (``fastgraph.numpy`` functions on the values it is given).

    >>> import fastgraph.numpy as np
    >>> from fastgraph.extend import primitive, defvjp
    >>> @primitive
    ... def logsumexp(x):
    ...     m = np.max(x)
    ...     return m + np.log(np.sum(np.exp(x - m)))
    >>> defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))
"""
from __future__ import annotations

import functools
from typing import Callable

from .ops.custom import custom_op

__all__ = ["primitive", "defvjp", "defvjp_argnum", "custom_vjp"]

_MISSING = object()


class _Primitive:
    """A function whose gradient is given by :func:`defvjp` (autograd's ``primitive``)."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vjpmakers: dict[int, Callable | None] = {}
        self.vjp_argnum: Callable | None = None
        self._op = custom_op(getattr(fun, "__name__", "primitive"), fun, self._backward)

    def __call__(self, *args, **kwargs):
        return self._op.call(args, kwargs)

    def _backward(self, g, ans, args, kwargs, positions):
        out = []
        for pos in positions:
            if self.vjp_argnum is not None:
                out.append(self.vjp_argnum(pos, ans, tuple(args), kwargs)(g))
                continue
            maker = self.vjpmakers.get(pos, _MISSING)
            if maker is _MISSING:
                raise NotImplementedError(f"VJP of {self.__name__} with respect to argument "
                                          f"{pos} is not defined (fastgraph.extend.defvjp)")
            out.append(None if maker is None else maker(ans, *args, **kwargs)(g))
        return out

    def __repr__(self) -> str:
        return f"<fastgraph primitive {self.__name__}>"


def primitive(fun: Callable) -> _Primitive:
    """Make ``fun`` (written with NumPy, on plain values) an operation whose gradient
    :func:`defvjp` gives; called without Tensors or Nodes it is ``fun`` itself.

        >>> @primitive
        ... def cube(x):
        ...     return x ** 3
    """
    return _Primitive(fun)


def defvjp(fun: _Primitive, *vjpmakers, argnums=None) -> None:
    """Give ``fun``'s vector-Jacobian products, one maker per positional argument (autograd's
    signature): ``vjpmaker(ans, *args, **kwargs)`` returns ``g -> gradient``; None for an
    argument that gets no gradient.

        >>> defvjp(cube, lambda ans, x: lambda g: g * 3 * x ** 2)
    """
    if not isinstance(fun, _Primitive):
        raise TypeError(f"defvjp: {fun!r} is not a fastgraph.extend.primitive")
    argnums = range(len(vjpmakers)) if argnums is None else argnums
    for n, maker in zip(argnums, vjpmakers):
        fun.vjpmakers[n] = maker


def defvjp_argnum(fun: _Primitive, vjpmaker: Callable) -> None:
    """autograd's ``defvjp_argnum``: one maker for every argument,
    ``vjpmaker(argnum, ans, args, kwargs)`` returning ``g -> gradient``."""
    if not isinstance(fun, _Primitive):
        raise TypeError(f"defvjp_argnum: {fun!r} is not a fastgraph.extend.primitive")
    fun.vjp_argnum = vjpmaker


class custom_vjp:
    """JAX's ``custom_vjp``: ``f`` with the gradient rule ``f.defvjp(fwd, bwd)`` gives.

    ``fwd(*args) -> (out, residuals)`` and ``bwd(*nondiff_args, residuals, g) -> one gradient
    per differentiated argument`` (a tuple; None for none).  ``fwd`` runs again on the values
    the gradient is taken at (it is pure, as JAX requires), so the residuals are whatever the
    engine differentiates: arrays, Tensors or graph Nodes.

        >>> @fg.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> clip_gradient.defvjp(lambda x: (x, None),
        ...                      lambda res, g: (fg.clip(g, -1.0, 1.0),))
    """

    def __init__(self, fun: Callable, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        self._op = custom_op(getattr(fun, "__name__", "custom_vjp"), fun, self._backward)

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the forward pass keeping residuals and the backward rule (see the class)."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        return self._op.call(args, {}, static=self.nondiff_argnums)

    def _backward(self, g, ans, args, kwargs, positions):
        if self.bwd is None:
            raise TypeError(f"{self.__name__}: no gradient rule: call "
                            f"{self.__name__}.defvjp(fwd, bwd) first")
        _, residuals = self.fwd(*args)
        nondiff = [args[i] for i in self.nondiff_argnums]
        grads = self.bwd(*nondiff, residuals, g)
        if not isinstance(grads, (tuple, list)):
            raise TypeError(f"{self.__name__}: bwd must return a tuple of gradients, one per "
                            f"differentiated argument, got {type(grads).__name__}")
        diff_positions = [p for p in range(len(args)) if p not in self.nondiff_argnums]
        if len(grads) != len(diff_positions):
            raise ValueError(f"{self.__name__}: bwd returned {len(grads)} gradients for "
                             f"{len(diff_positions)} differentiated arguments")
        by_position = dict(zip(diff_positions, grads))
        return [by_position[p] for p in positions]
