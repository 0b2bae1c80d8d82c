"""autograd's ``fixed_point`` (``autograd.misc.fixed_points``): iterate ``x <- f(a)(x)`` from
``x0`` until ``distance(x, x_prev) <= tol``, with the gradient in ``a`` by the implicit function
theorem rather than through the iterations.

At the fixed point ``x* = f(a)(x*)``, the cotangent ``g`` of ``x*`` gives ``a`` the cotangent
``(d f / d a)^T x_bar`` where ``x_bar`` is itself a fixed point: ``x_bar = g + (d f / d x)^T
x_bar``, found by iterating from zeros with the same ``distance`` and ``tol`` (autograd's
reverse iteration).  That backward pass is written with fastgraph's transforms and with
``fixed_point`` itself, so it differentiates again (``fg.grad(fg.grad(...))``).  ``a`` may be an
array, a number or a list, tuple or dict of them; ``x0`` gets no gradient (the fixed point does
not depend on it).  ``f`` and ``distance`` run on plain values while iterating.

    >>> from fastgraph.misc.fixed_points import fixed_point
    >>> sqrt = lambda a: fixed_point(lambda a: lambda x: 0.5 * (x + a / x), a, 1.0,
    ...                              lambda x, y: abs(x - y), 1e-10)
    >>> float(fg.grad(sqrt)(4.0))
    0.25
"""
from __future__ import annotations

from .._core.tree import flatten as _tree_flatten
from ..bridge.transforms import grad as _grad
from ..eager.tensor import Tensor
from ..ops import custom as _custom
from .. import numpy as np

__all__ = ["fixed_point"]


def _plain(v):
    return v._ndarray if isinstance(v, Tensor) else v


def _iterate(*leaves, f, rebuild, x0, distance, tol):
    # the iterates as plain values: a transform called inside f (the backward's reverse
    # iteration takes VJPs) gives Tensors while an outer transform is recording
    _f = f(rebuild(leaves))
    x, x_prev = _plain(_f(x0)), x0
    while distance(x, x_prev) > tol:
        x, x_prev = _plain(_f(x)), x
    return x


def _backward(g, ans, args, kwargs, positions):
    f, rebuild = kwargs["f"], kwargs["rebuild"]
    distance, tol = kwargs["distance"], kwargs["tol"]
    leaves = list(args)

    def rev_iter(params):
        a_leaves, x_star, x_star_bar = params
        a = rebuild(a_leaves)

        def step(x_bar):      # x_bar -> (d f / d x)^T x_bar + g, at x*
            return _grad(lambda x: np.sum(f(a)(x) * x_bar))(x_star) + x_star_bar
        return step

    x_bar = fixed_point(rev_iter, (leaves, ans, g), np.zeros(np.shape(ans)), distance, tol)

    def pulled(*ls):
        return np.sum(f(rebuild(list(ls)))(ans) * x_bar)

    grads = _grad(pulled, argnums=tuple(positions))(*leaves)
    if not isinstance(g, Tensor) and not hasattr(g, "graph"):
        # a first-order eager backward wants arrays; the transforms give Tensors while the
        # outer one is recording
        return [_plain(v) for v in grads]
    return list(grads)


_FIXED_POINT = _custom.custom_op("fixed_point", _iterate, _backward)


def fixed_point(f, a, x0, distance, tol):
    """The fixed point of ``f(a)`` found by iterating from ``x0`` until ``distance(x, x_prev)
    <= tol`` (autograd's signature), differentiable in ``a`` (see the module)."""
    leaves: list = []
    rebuild = _tree_flatten(a, leaves)
    return _FIXED_POINT.call(tuple(leaves), {"f": f, "rebuild": rebuild, "x0": _plain(x0),
                                             "distance": distance, "tol": tol})
