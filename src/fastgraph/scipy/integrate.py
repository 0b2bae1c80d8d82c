"""``fastgraph.scipy.integrate``: ``odeint`` and ``solve_ivp`` with SciPy's signatures,
differentiable in the initial state ``y0``, the time points and the parameters passed in ``args``.

    >>> from fastgraph.scipy.integrate import odeint
    >>> ys = odeint(lambda y, t, k: -k * y, fg.tensor([1.0], requires_grad=True),
    ...             np.linspace(0, 1, 5), (fg.tensor(0.5, requires_grad=True),))  # doctest: +SKIP

The forward is SciPy's ``odeint`` (or ``solve_ivp`` with the method asked for) (``func`` is called on NumPy values, so it is written with
``fastgraph.numpy``/NumPy operations as for SciPy).  The gradient is the adjoint method: the
augmented system (state, adjoint state, time and parameter sensitivities) solved backwards
between the time points by the same SciPy solver, with the VJPs of ``func`` from fastgraph's own
reverse mode; it is first order (asking for a second derivative raises).  Keyword arguments go
to SciPy's solver in both directions (tolerances apply to the adjoint solve too).  Any other
name is SciPy's own.
"""
from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np

from .._core import apply, defop
from .. import ops as _ops  # noqa: F401  (the declarations)

__all__ = ["odeint", "solve_ivp"]

#: the attribute ``solver`` of the op: SciPy's ``odeint``, or one of ``solve_ivp``'s methods
ODEINT = "odeint"
IVP_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")


def _scipy_integrate():
    """SciPy's integrate module, imported on first use: it pulls in scipy.optimize and
    scipy.sparse, which would otherwise double the time ``import fastgraph`` takes."""
    import scipy.integrate
    return scipy.integrate


def _np_func(func, args):
    def f(y, t):
        return np.asarray(func(y, t, *args), dtype=np.float64)
    return f


def _trajectory(f, y0, t, solver, options):
    """The states at the times ``t`` (a ``(len(t), len(y0))`` array) of ``dy/dt = f(y, t)``."""
    if solver == ODEINT:
        return _scipy_integrate().odeint(f, y0, t, **dict(options))
    res = _scipy_integrate().solve_ivp(lambda s, y: f(y, s), (t[0], t[-1]), y0, method=solver, t_eval=t,
                        **dict(options))
    if not res.success:
        raise RuntimeError(f"solve_ivp ({solver}): {res.message}")
    return res.y.T


def _odeint_forward(y0, t, *args, func, options, solver=ODEINT):
    out = _trajectory(_np_func(func, args), np.asarray(y0, np.float64),
                      np.asarray(t, np.float64), solver, options)
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
    value = np.asarray(out._ndarray, np.float64)
    if not out.requires_grad:
        return value, np.zeros_like(y), 0.0, [np.zeros(np.shape(a)) for a in args]
    grads = fg.autograd.grad(out, [yt, tt, *at], grad_outputs=fg.tensor(cot),
                             allow_unused=True)
    z = [np.zeros(np.shape(x._ndarray)) if gr is None else np.asarray(gr._ndarray, np.float64)
         for gr, x in zip(grads, [yt, tt, *at])]
    return value, z[0], float(z[1]), z[2:]


def _adjoint(g, yt, y0, t, args, func, options, solver):
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
        back = _trajectory(augmented, state, np.array([t[i], t[i - 1]]), solver, options)[1]
        adj_y = back[D:2 * D] + g[i - 1]
        adj_t0 = back[2 * D]
        adj_args = back[2 * D + 1:]
    dt[0] = adj_t0
    return adj_y, dt, split(adj_args)


#: per thread, the last backwards solve: the gradients of all inputs come from one solve, so the
#: other inputs of the same call reuse it (matched by the identity of every operand, so never a
#: stale reuse; per thread, so two threads' backward passes never see each other's)
_LAST_SOLVE = threading.local()


def _grad_forward(g, yt, y0, t, *args, func, options, which, solver=ODEINT):
    operands = (g, yt, y0, t) + args
    key = getattr(_LAST_SOLVE, "key", None)
    if key is None or len(key) != len(operands) or not all(
            a is b for a, b in zip(key, operands)):
        _LAST_SOLVE.key = None
        _LAST_SOLVE.value = _adjoint(g, yt, y0, t, args, func, options, solver)
        _LAST_SOLVE.key = operands
    dy0, dt, dargs = _LAST_SOLVE.value
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
    def rule(g, ans, y0, t, *args, func, options, solver=ODEINT):
        return apply(_odeint_grad.op, (g, ans, y0, t) + tuple(args),
                     {"func": func, "options": options, "which": i, "solver": solver})
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


#: solve_ivp's options that change what it returns (not differentiable here)
_IVP_REFUSED = ("events", "dense_output", "vectorized")


class _SolveIvpFunc:
    """``fun(t, y, *args)`` seen as ``odeint``'s ``func(y, t, *args)``; equal for the same
    ``fun`` (so a traced step's attributes compare equal from call to call)."""

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, y, t, *args):
        return self.fun(t, y, *args)

    def __eq__(self, other):
        return isinstance(other, _SolveIvpFunc) and other.fun is self.fun

    def __hash__(self):
        return hash(self.fun)


def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, args=None, **options):
    """SciPy's ``solve_ivp(fun, t_span, y0, method, t_eval, args=...)``, differentiable in
    ``y0``, the times and every entry of ``args`` (adjoint method, on the same ``method``).

    Returns SciPy's result fields ``t`` and ``y`` (``y[:, i]`` the state at ``t[i]``; a value
    of fastgraph's kind) with ``success``, ``status`` and ``message``.  With ``t_eval`` the
    times are ``t_eval`` (differentiable); without it they are the solver's own steps, found by
    a first solve on plain values and then held fixed.  ``events``, ``dense_output`` and
    ``vectorized`` change what SciPy returns and are refused: call ``scipy.integrate.solve_ivp``
    on plain values for them.

        >>> sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), fg.tensor([1.0]),
        ...                 t_eval=[0.5, 1.0], args=(0.5,))  # doctest: +SKIP
        >>> sol.y.shape  # doctest: +SKIP
        (1, 2)
    """
    refused = [k for k in _IVP_REFUSED if options.get(k)]
    if refused:
        raise NotImplementedError(f"solve_ivp: {', '.join(refused)} is not differentiable; "
                                  f"call scipy.integrate.solve_ivp on plain values")
    if method not in IVP_METHODS:
        raise ValueError(f"solve_ivp: method must be one of {', '.join(IVP_METHODS)} "
                         f"(a solver class is not differentiable here), got {method!r}")
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    t0, t1 = t_span
    func = _SolveIvpFunc(fun)
    if t_eval is None:
        # the solver's own steps, from a solve on the values: fixed times from then on
        plain = _scipy_integrate().solve_ivp(lambda s, y: _np_func(func, [_concrete(a) for a in args])(y, s),
                              (float(_concrete(t0)), float(_concrete(t1))),
                              _concrete(y0), method=method, **options)
        if not plain.success:
            raise RuntimeError(f"solve_ivp ({method}): {plain.message}")
        times = plain.t
    else:
        # the solve starts at t0 whatever t_eval's first time: t0 goes in front (its gradient
        # is the trajectory's dependence on the start time) and its row is dropped
        import fastgraph as fg      # (a front-end may use the top-level namespace)
        times = fg.concatenate([fg.reshape(_as_times(t0), (1,)), _as_times(t_eval)])
    ys = apply(odeint.op, (y0, times) + args,
               {"func": func, "options": tuple(sorted(options.items())), "solver": method})
    if t_eval is not None:
        ys, times = ys[1:], times[1:]
    return SimpleNamespace(t=times, y=ys.T, success=True, status=0,
                           message="The solver successfully reached the end of the "
                                   "integration interval.")


def _concrete(x):
    """A value's numbers, for the solve that picks the solver's steps."""
    if hasattr(x, "graph") and hasattr(x, "op"):
        raise TypeError("solve_ivp: without t_eval the times are the solver's own steps, which "
                        "need the values; in a graph or a traced function give t_eval")
    return np.asarray(getattr(x, "_ndarray", x), np.float64)


def _as_times(t):
    """Times as given: a Tensor or graph value stays one (differentiable), numbers become a
    float64 array."""
    return t if hasattr(t, "shape") and not isinstance(t, np.ndarray) else np.asarray(t, np.float64)


def __getattr__(name: str):
    # SciPy's other integrate names (quad, trapezoid, ...) pass through undifferentiated
    return getattr(_scipy_integrate(), name)
