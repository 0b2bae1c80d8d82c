"""``fastgraph.scipy.integrate``: ``odeint`` with SciPy's signature, differentiable in the
initial state ``y0``, the time points ``t`` and the parameters passed in ``args``.

    >>> from fastgraph.scipy.integrate import odeint
    >>> ys = odeint(lambda y, t, k: -k * y, fg.tensor([1.0], requires_grad=True),
    ...             np.linspace(0, 1, 5), (fg.tensor(0.5, requires_grad=True),))  # doctest: +SKIP

The forward is SciPy's ``odeint`` (``func`` is called on NumPy values, so it is written with
``fastgraph.numpy``/NumPy operations as for SciPy).  The gradient is the adjoint method: the
augmented system (state, adjoint state, time and parameter sensitivities) solved backwards
between the time points by SciPy's ``odeint``, with the VJPs of ``func`` from fastgraph's own
reverse mode; it is first order (asking for a second derivative raises).  Keyword arguments go
to SciPy's ``odeint`` in both directions (tolerances apply to the adjoint solve too).  Any other
name is SciPy's own.
"""
from __future__ import annotations

import numpy as np
import scipy.integrate as _si

from .._core import apply, defop
from .. import ops as _ops  # noqa: F401  (the declarations)

__all__ = ["odeint"]


def _np_func(func, args):
    def f(y, t):
        return np.asarray(func(y, t, *args), dtype=np.float64)
    return f


def _odeint_forward(y0, t, *args, func, options):
    out = _si.odeint(_np_func(func, args), np.asarray(y0, np.float64), np.asarray(t, np.float64),
                     **dict(options))
    # (SciPy integrates in float64; float32 states stay float32, as every fastgraph op keeps them)
    return out.astype(np.float32) if np.asarray(y0).dtype == np.float32 else out


def _func_vjp(func, y, t, args, cot):
    """``(f(y, t, *args), cot^T df/dy, cot^T df/dt, [cot^T df/darg])`` by fastgraph's reverse
    mode (imported here: the front-end may use the eager engine)."""
    import fastgraph as fg
    with fg.enable_grad():      # (a backward pass runs its rules with grad mode off)
        return _func_vjp_recorded(fg, func, y, t, args, cot)


def _func_vjp_recorded(fg, func, y, t, args, cot):
    yt = fg.tensor(y, requires_grad=True)
    tt = fg.tensor(np.float64(t), requires_grad=True)
    at = [fg.tensor(np.asarray(a, np.float64), requires_grad=True) for a in args]
    out = func(yt, tt, *at)
    out = out if isinstance(out, fg.Tensor) else fg.stack(list(out)) \
        if isinstance(out, (list, tuple)) else fg.tensor(np.asarray(out, np.float64))
    value = np.asarray(out.data, np.float64)
    if not out.requires_grad:
        return value, np.zeros_like(y), 0.0, [np.zeros(np.shape(a)) for a in args]
    grads = fg.autograd.grad(out, [yt, tt, *at], grad_outputs=fg.tensor(cot),
                             allow_unused=True)
    z = [np.zeros(np.shape(x.data)) if gr is None else np.asarray(gr.data, np.float64)
         for gr, x in zip(grads, [yt, tt, *at])]
    return value, z[0], float(z[1]), z[2:]


def _adjoint(g, yt, y0, t, args, func, options):
    """Every input's gradient: ``(dy0, dt, [dargs])``."""
    g = np.asarray(g, np.float64)
    yt = np.asarray(yt, np.float64)
    t = np.asarray(t, np.float64)
    args = [np.asarray(a, np.float64) for a in args]
    T, D = yt.shape
    shapes = [a.shape for a in args]
    sizes = [a.size for a in args]
    P = int(sum(sizes))

    def split(flat):
        out, i = [], 0
        for s, n in zip(shapes, sizes):
            out.append(flat[i:i + n].reshape(s))
            i += n
        return out

    def augmented(state, s):
        y, a = state[:D], state[D:2 * D]
        value, vy, vt, va = _func_vjp(func, y, s, args, -a)
        flat = np.concatenate([np.ravel(v) for v in va]) if P else np.zeros(0)
        return np.concatenate([value, vy, [vt], flat])

    adj_y = g[-1].copy()
    adj_t0 = 0.0
    adj_args = np.zeros(P)
    dt = np.zeros(T)
    for i in range(T - 1, 0, -1):
        f_i = _np_func(func, args)(yt[i], t[i])
        dt[i] = float(np.dot(f_i, g[i]))
        adj_t0 -= dt[i]
        state = np.concatenate([yt[i], adj_y, [adj_t0], adj_args])
        back = _si.odeint(augmented, state, np.array([t[i], t[i - 1]]), **dict(options))[1]
        adj_y = back[D:2 * D] + g[i - 1]
        adj_t0 = back[2 * D]
        adj_args = back[2 * D + 1:]
    dt[0] = adj_t0
    return adj_y, dt, split(adj_args)


_CACHE: dict = {}


def _grad_forward(g, yt, y0, t, *args, func, options, which):
    # the gradients of all inputs come from one backwards solve: keep the last one's result
    # for the other inputs of the same call (held by identity, so no stale reuse)
    key = _CACHE.get("key")
    if key is None or len(key) != len(args) + 4 or not all(
            a is b for a, b in zip(key, (g, yt, y0, t) + args)):
        _CACHE["key"] = (g, yt, y0, t) + args
        _CACHE["value"] = _adjoint(g, yt, y0, t, args, func, options)
    dy0, dt, dargs = _CACHE["value"]
    out = dy0 if which == 0 else dt if which == 1 else dargs[which - 2]
    return np.reshape(np.asarray(out, np.float64), np.shape(((y0, t) + args)[which]))


def _no_second_order(i):
    def rule(*_, **__):
        raise NotImplementedError("odeint: the adjoint gradient is first order; a second "
                                  "derivative through odeint is not available")
    return rule


_odeint_grad = defop("odeint_grad", _grad_forward, vjp_for=_no_second_order, variadic=True,
                     shape=lambda shapes, which, **_: tuple(shapes[2 + which]))


def _odeint_vjp_for(i):
    def rule(g, ans, y0, t, *args, func, options):
        return apply(_odeint_grad.op, (g, ans, y0, t) + tuple(args),
                     {"func": func, "options": options, "which": i})
    return rule


def _odeint_shape(shapes, **_):
    y0, t = tuple(shapes[0]), tuple(shapes[1])
    if len(y0) != 1 or len(t) != 1:
        raise ValueError(f"odeint: y0 and t must be 1-D, got shapes {y0} and {t}")
    return (t[0], y0[0])


def odeint(func, y0, t, args=(), **kwargs):
    """SciPy's ``odeint(func, y0, t, args=())``: the state at each time of ``t`` (a
    ``(len(t), len(y0))`` array), differentiable in ``y0``, ``t`` and every entry of ``args``
    (adjoint method).  ``func(y, t, *args)`` returns ``dy/dt``; ``kwargs`` (``rtol``, ``atol``,
    ``mxstep``, ...) are SciPy's.  ``full_output=True`` is SciPy's own, not differentiable.

        >>> odeint(lambda y, t, k: -k * y, fg.tensor([1.0]), [0.0, 1.0], (0.5,))  # doctest: +SKIP
    """
    if kwargs.get("full_output"):
        raise NotImplementedError("odeint: full_output=True is not differentiable; call "
                                  "scipy.integrate.odeint on plain values")
    if not isinstance(args, tuple):
        args = (args,)
    options = tuple(sorted(kwargs.items()))
    return apply(odeint.op, (y0, t) + args, {"func": func, "options": options})


odeint = defop("odeint", _odeint_forward, vjp_for=_odeint_vjp_for, variadic=True,
               function=odeint, shape=_odeint_shape, exports=(("scipy.integrate", "odeint"),))


def __getattr__(name: str):
    return getattr(_si, name)
