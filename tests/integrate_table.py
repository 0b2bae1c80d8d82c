"""The ``fastgraph.scipy.integrate`` op table (``odeint`` and ``solve_ivp``, one op): a damped,
driven oscillator and a logistic growth, values against SciPy's ``odeint`` and ``solve_ivp``
(three of its methods), gradients in the initial state, the
time points and the parameters against finite differences and HIPS autograd's adjoint; run by
``tests/test_special_table.py`` beside the special functions.  The adjoint solve has the
forward's tolerances, so gradients are checked to ``tol`` times the table's bounds.
"""
from __future__ import annotations

import numpy as np
import scipy.integrate as si

import fastgraph.numpy as fnp
import fastgraph.scipy.integrate as fg_integrate
from fastgraph.scipy.integrate import odeint, solve_ivp
from linalg_table import LinalgCase

__all__ = ["CASES", "oscillator", "logistic"]

TOLS = dict(rtol=1e-11, atol=1e-11)


def oscillator(np_):
    def f(y, t, theta):
        return np_.stack([y[1], -theta[0] * y[0] - theta[1] * y[1] + 0.1 * np_.sin(t)])
    return f


def logistic(np_):
    def f(y, t, r, k):
        return r * y * (1 - y / k)
    return f


def _ag_odeint(func, y0, t, args):
    from autograd.builtins import tuple as atuple
    from autograd.scipy.integrate import odeint as aode
    return aode(func, y0, t, atuple(args), **TOLS)


def _anp():
    import autograd.numpy as anp
    return anp


def _np_oscillator(y, t, theta):
    return np.array([y[1], -theta[0] * y[0] - theta[1] * y[1] + 0.1 * np.sin(t)])


def _ag_oscillator():
    anp = _anp()

    def f(y, t, theta):
        return anp.array([y[1], -theta[0] * y[0] - theta[1] * y[1] + 0.1 * anp.sin(t)])
    return f


def _ivp(lib, method, f, np_):
    """``solve_ivp(...).y`` of ``f(y, t, *args)`` (odeint's order) from 0 to 3 at ``t``."""
    def run(y0, t, *args):
        sol = lib.solve_ivp(lambda s, y, *a: f(np_)(y, s, *a), (0.0, 3.0), y0, method=method,
                            t_eval=t, args=args, **TOLS)
        return sol.y
    return run


def _times(rng, shape):
    return np.sort(rng.uniform(0.0, 2.0, shape)) + np.arange(shape[0]) * 0.2


CASES = [
    LinalgCase("odeint_oscillator", "odeint",
               lambda y0, t, th: odeint(oscillator(fnp), y0, t, (th,), **TOLS),
               (((2,), "real"), ((5,), _times), ((2,), "pos")),
               lambda y0, t, th: si.odeint(_np_oscillator, y0, t, (th,), **TOLS), None, (0, 1, 2),
               autograd=lambda y0, t, th: _ag_odeint(_ag_oscillator(), y0, t, (th,)),
               order2=False, tol=100.0),
    LinalgCase("odeint_logistic_scalar_args", "odeint",
               lambda y0, t, r, k: odeint(logistic(fnp), y0, t, (r, k), **TOLS),
               (((3,), "pos"), ((4,), _times), ((), "pos"), ((), lambda r, s: np.asarray(3.0))),
               lambda y0, t, r, k: si.odeint(logistic(np), y0, t, (r, k), **TOLS), None,
               (0, 1, 2, 3),
               autograd=lambda y0, t, r, k: _ag_odeint(logistic(_anp()), y0, t, (r, k)),
               order2=False, tol=100.0),
] + [
    LinalgCase(f"solve_ivp_oscillator_{method}", "odeint",
               _ivp(fg_integrate, method, oscillator, fnp),
               (((2,), "real"), ((5,), _times), ((2,), "pos")),
               _ivp(si, method, lambda np_: _np_oscillator, np), None, (0, 1, 2),
               order2=False, tol=100.0)
    for method in ("RK45", "DOP853", "LSODA")
] + [
    LinalgCase("solve_ivp_logistic_scalar_args_Radau", "odeint",
               _ivp(fg_integrate, "Radau", logistic, fnp),
               (((3,), "pos"), ((4,), _times), ((), "pos"), ((), lambda r, s: np.asarray(3.0))),
               _ivp(si, "Radau", logistic, np), None, (0, 1, 2, 3), order2=False, tol=100.0),
]
