"""autograd's stochastic optimizers (``autograd.misc.optimizers``): ``sgd``, ``rmsprop`` and
``adam`` with autograd's signatures, defaults and update formulas, so a program written for
autograd gives the same iterates.

Each takes ``grad(x, i)`` (the gradient at ``x`` on iteration ``i``, e.g. ``fg.grad(objective)``
of an ``objective(params, i)``), the starting point ``x0`` -- an array or any nesting of lists,
tuples and dicts of arrays, flattened with :func:`fastgraph.misc.flatten` and given back in its
structure -- and an optional ``callback(x, i, g)`` called before each step.  The updates are
written with ``fastgraph.numpy``, so on plain values they are NumPy's arithmetic, and on Tensors
a gradient flows through them (to differentiate through an optimizer run).

    >>> from fastgraph.misc.optimizers import adam
    >>> x = adam(lambda x, i: 2 * x, np.array([1.0, -2.0]), num_iters=200, step_size=0.1)
    >>> bool(np.all(np.abs(x) < 1e-3))         # the minimum of sum(x ** 2)
    True
"""
from __future__ import annotations

import functools

from .. import numpy as np
from .flatten import flatten

__all__ = ["unflatten_optimizer", "sgd", "rmsprop", "adam"]


def unflatten_optimizer(optimize):
    """An optimizer of flat 1-d vectors made one of nested lists, tuples and dicts of arrays:
    ``x0``, the gradients and the callback's arguments are flattened and unflattened around it
    (autograd's decorator)."""
    @functools.wraps(optimize)
    def _optimize(grad, x0, callback=None, *args, **kwargs):
        _x0, unflatten = flatten(x0)

        def _grad(x, i):
            return flatten(grad(unflatten(x), i))[0]

        if callback:
            def _callback(x, i, g):
                return callback(unflatten(x), i, unflatten(g))
        else:
            _callback = None
        return unflatten(optimize(_grad, _x0, _callback, *args, **kwargs))

    return _optimize


@unflatten_optimizer
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Stochastic gradient descent with momentum ``mass`` (autograd's form: the velocity is an
    exponential average of the negative gradients)."""
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@unflatten_optimizer
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=10**-8):
    """RMSProp: steps scaled by a running root mean square of the gradients (started at ones,
    as autograd's)."""
    avg_sq_grad = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g**2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(avg_sq_grad) + eps)
    return x


@unflatten_optimizer
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """Adam (Kingma and Ba): bias-corrected running averages of the gradient and its square."""
    m = np.zeros(len(x))
    v = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * (g**2) + b2 * v
        mhat = m / (1 - b1 ** (i + 1))
        vhat = v / (1 - b2 ** (i + 1))
        x = x - step_size * mhat / (np.sqrt(vhat) + eps)
    return x
