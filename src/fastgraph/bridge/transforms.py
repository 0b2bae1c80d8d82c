"""Functional transforms in the HIPS-autograd / JAX style: ``grad value_and_grad elementwise_grad
jacobian hessian hessian_vector_product hvp``, on eager values and on graph Nodes alike.

A transformed function takes and returns NumPy values, so it plugs straight into SciPy::

    scipy.optimize.minimize(fg.value_and_grad(loss), x0, jac=True)

This module is the switch between the two engines' halves: arguments holding a graph ``Node``
are differentiated symbolically (``fastgraph.static.transforms``), everything else on the tape
(``fastgraph.eager.transforms``) -- except inside an ``fg.function`` trace, where a closure may
reach the trace's Nodes: the eager half runs, and a function that mixes the two kinds is
differentiated symbolically instead.  autograd's keyword ``argnum=`` is accepted for
``argnums=``.  They compose (``fg.grad(fg.grad(f))``, ``fg.function(fg.grad(f))``).
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from .. import ops as F
from .._core.errors import MixedKindsError
from .._core.tree import find_leaf
from ..eager import transforms as _eager
from ..eager.tensor import Tensor
from ..static import transforms as _symbolic
from ..static.node import NODE_TYPES
from .function import tracing_graph

__all__ = ["grad", "value_and_grad", "elementwise_grad", "jacobian", "hessian",
           "hessian_vector_product", "hvp"]


def _argnums_kw(argnums, argnum):
    """autograd spells ``argnums`` ``argnum``; either may be given, not both."""
    if argnum is None:
        return argnums
    if argnums != 0:
        raise TypeError("give argnums or argnum (autograd's name), not both")
    return argnum


def _argnums(argnums, n_args: int) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    ok = single or (isinstance(argnums, (tuple, list)) and argnums and all(
        isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums))
    if not ok:
        raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    nums = (int(argnums),) if single else tuple(int(a) for a in argnums)
    for a in nums:
        if not -n_args <= a < n_args:
            raise ValueError(f"argnums {a} is out of range for a function called with "
                             f"{n_args} positional arguments")
    return tuple(a % n_args for a in nums), single


def _has_node(args) -> bool:
    """Whether any argument is (or a list, tuple or dict argument holds) a static graph ``Node``
    (the transforms then differentiate symbolically with ``fg.gradients``)."""
    return find_leaf(lambda v: type(v) in NODE_TYPES, args) is not None


def _transformed(fun, argnums, eager, symbolic):
    """``fun`` transformed by ``eager(fun, args, kwargs, nums, single)`` on eager values and
    ``symbolic(..., graph)`` on graph Nodes (see the module docstring)."""
    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        nums, single = _argnums(argnums, len(args))
        if _has_node(args):  # inside a static graph (fg.function): symbolic
            return symbolic(fun, args, kwargs, nums, single, None)
        graph = tracing_graph()
        if graph is not None and not _eager.inside_transform():
            # plain arguments inside an fg.function trace: eager unless the body reaches a
            # Node through a closure (then symbolic, so that path is differentiated too)
            try:
                return eager(fun, args, kwargs, nums, single)
            except MixedKindsError:
                return symbolic(fun, args, kwargs, nums, single, graph)
        return eager(fun, args, kwargs, nums, single)

    return wrapper


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, *,
                   argnum=None) -> Callable:
    """``f -> (x -> (f(x), df/dx))`` for scalar-valued ``f``; ``has_aux`` gives
    ``((value, aux), grad)`` as JAX does; a tuple ``argnums`` gives a tuple of gradients.
    A list, tuple or dict argument gets a gradient of the same structure.

        >>> fg.value_and_grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
        (np.float64(5.0), array([2., 4.]))
    """
    return _transformed(
        fun, _argnums_kw(argnums, argnum),
        lambda f, a, k, nums, single: _eager.value_and_grad(f, a, k, nums, single, has_aux),
        lambda f, a, k, nums, single, graph: _symbolic.value_and_grad(f, a, k, nums, single,
                                                                      has_aux, graph))


def grad(fun: Callable, argnums=0, *, argnum=None) -> Callable:
    """``f -> df/dx`` for scalar-valued ``f`` (NumPy in, NumPy out; composable).

        >>> fg.grad(fg.grad(lambda x: x ** 3))(2.0)
        np.float64(12.0)
    """
    vg = value_and_grad(fun, _argnums_kw(argnums, argnum))

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    return wrapper


def elementwise_grad(fun: Callable, argnums=0, *, argnum=None) -> Callable:
    """autograd's ``elementwise_grad``: the gradient of ``sum(f(x))`` (the vector-Jacobian product
    with ones), which for an elementwise ``f`` is each output's derivative at its own input.

        >>> fg.elementwise_grad(fg.tanh)(np.array([0.0, 1.0]))
        array([1.        , 0.41997434])
    """
    @functools.wraps(fun)
    def summed(*args, **kwargs):
        out = fun(*args, **kwargs)
        # a list, tuple, dict or None stays as it is, for grad's TypeError
        return out if out is None or isinstance(out, (list, tuple, dict, str)) else F.sum(out)

    return functools.wraps(fun)(grad(summed, _argnums_kw(argnums, argnum)))


def jacobian(fun: Callable, argnums=0, *, argnum=None) -> Callable:
    """``f -> J`` with ``J.shape == f(x).shape + x.shape`` (a tuple of them for tuple ``argnums``;
    for a list, tuple or dict argument, that structure holding one such array per array in it).

        >>> fg.jacobian(lambda x: x * x)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
    """
    return _transformed(fun, _argnums_kw(argnums, argnum), _eager.jacobian, _symbolic.jacobian)


def hessian(fun: Callable, argnums: int = 0, *, argnum=None) -> Callable:
    """``f -> H``, the Jacobian of the gradient of scalar-valued ``f``.

        >>> fg.hessian(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    argnums = _argnums_kw(argnums, argnum)
    return jacobian(grad(fun, argnums), argnums)


def hessian_vector_product(fun: Callable, argnums: int = 0, *, argnum=None) -> Callable:
    """autograd's ``hessian_vector_product``: ``f -> ((*args, v) -> H(args) @ v)`` for
    scalar-valued ``f``, the vector ``v`` (shaped like the argument) passed last; ``H`` is not
    formed.  (``fg.hvp(f, x, v)`` is the same product, called at once.)

        >>> fg.hessian_vector_product(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]),
        ...                                                     np.array([1.0, 0.0]))
        array([6., 0.])
    """
    argnums = _argnums_kw(argnums, argnum)
    if not isinstance(argnums, (int, np.integer)) or isinstance(argnums, bool):
        raise TypeError(f"hessian_vector_product differentiates one argument: argnums must be an "
                        f"int, got {argnums!r}")
    fun_grad = grad(fun, argnums)

    @functools.wraps(fun)
    def vector_dot_grad(*args, **kwargs):
        *args, vector = args
        return F.sum(fun_grad(*args, **kwargs) * vector)

    return functools.wraps(fun)(grad(vector_dot_grad, argnums))


def hvp(fun: Callable, x, v):
    """Hessian-vector product ``H(x) @ v`` of scalar-valued ``f`` without forming ``H``.

        >>> fg.hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        array([6., 0.])
    """
    v_value = v.data if isinstance(v, Tensor) else np.asarray(v)
    return grad(lambda x_: F.sum(grad(fun)(x_) * v_value))(x)
