"""NumPy's other elementwise functions (its ufuncs beyond ``elementwise.py``), each one
declaration with NumPy's ufunc as its forward, so values, dtypes and broadcasting are NumPy's.

Where a function is not differentiable everywhere the gradient is PyTorch's choice where PyTorch
has the function, else the one-sided value a user would expect (each is written next to the
rule).  NumPy's alternative spellings (``atan2``, ``acos``, ``pow``...) are exported as aliases.
"""
from __future__ import annotations

import math

import numpy as np

from .._core import TOP, ZERO, apply, defop, defun
from .._core import shapes as _shapes

from .. import ops as F
from . import elementwise as _elementwise

_LN2 = math.log(2.0)


def _balanced(g, x, ans, y):
    """``g`` where ``x`` produced ``ans`` (half of it where ``x`` ties with ``y``): a NaN operand
    produces nothing, so ``fmax(nan, y)`` sends the whole gradient to ``y``."""
    return g * F.equal(x, ans) / (1 + F.equal(x, y))


def _atan2_vjp(g, ans, y, x, wrt_y):
    # d atan2(y, x) = (x dy - y dx) / (x^2 + y^2); at the origin there is no derivative: take 0
    # (as hypot does), dividing by 1 there so no warning is raised
    r2 = y * y + x * x
    safe = F.where(F.equal(r2, 0), 1, r2)
    return g * (x if wrt_y else -y) / safe


arctan2 = defop("arctan2", np.arctan2, lambda g, ans, y, x: _atan2_vjp(g, ans, y, x, True),
                lambda g, ans, y, x: _atan2_vjp(g, ans, y, x, False), elementwise=True,
                exports=TOP + (("numpy", "atan2"),), numpy=("arctan2", "atan2"))
fmax = defop("fmax", np.fmax, lambda g, ans, x, y: _balanced(g, x, ans, y),
             lambda g, ans, x, y: _balanced(g, y, ans, x), elementwise=True, exports=TOP)
fmin = defop("fmin", np.fmin, lambda g, ans, x, y: _balanced(g, x, ans, y),
             lambda g, ans, x, y: _balanced(g, y, ans, x), elementwise=True, exports=TOP)
# d/dx log2(2^x + 2^y) = 2^(x - ans): never overflows (x <= ans)
logaddexp2 = defop("logaddexp2", np.logaddexp2, lambda g, ans, x, y: g * F.exp2(x - ans),
                   lambda g, ans, x, y: g * F.exp2(y - ans), elementwise=True, exports=TOP)


def _sinc_vjp(g, ans, x):
    # sinc(x) = sin(pi x) / (pi x): the derivative (cos(pi x) - sinc(x)) / x, 0 at x = 0 (an
    # extremum), dividing by 1 there so no warning is raised
    zero = F.equal(x, 0)
    safe = F.where(zero, 1, x)
    return F.where(zero, 0, g * (F.cos(np.pi * x) - ans) / safe)


sinc = defop("sinc", np.sinc, _sinc_vjp, elementwise=True, exports=TOP)
# d cbrt(x) = 1 / (3 cbrt(x)^2): infinite at 0, as the cube root is vertical there
cbrt = defop("cbrt", np.cbrt, lambda g, ans, x: g / (3 * ans * ans), elementwise=True,
             exports=TOP)
# |x1| with the sign of x2: d/dx1 = sign(x1) * (+-1 by x2's sign bit), 0 at x1 = 0 (as abs)
copysign = defop("copysign", np.copysign,
                 lambda g, ans, x, y: g * F.sign(x) * F.copysign(1.0, y), ZERO,
                 elementwise=True, exports=TOP)


def _float_power_vjp_x(g, ans, x, y):
    return F.elementwise._power_vjp_x(g, ans, x, y)


float_power = defop("float_power", np.float_power, _float_power_vjp_x,
                    lambda g, ans, x, y: g * ans * F.elementwise._sign_safe_log(x),
                    elementwise=True, complex_vjps=True, exports=TOP)
# x1 - trunc(x1 / x2) * x2 (the sign of x1, C's fmod): 1 wrt x1, -trunc(x1 / x2) wrt x2 (as
# PyTorch's fmod), on either side of a jump alike
fmod = defop("fmod", np.fmod, lambda g, ans, x, y: g,
             lambda g, ans, x, y: -g * F.trunc(x / y), elementwise=True, exports=TOP)
# a step: no gradient for x1; x2 is the value taken where x1 == 0
heaviside = defop("heaviside", np.heaviside, ZERO, lambda g, ans, x, h: g * F.equal(x, 0),
                  elementwise=True, exports=TOP)
# x1 * 2**x2 for integer x2 (no gradient: an integer)
ldexp = defop("ldexp", np.ldexp, lambda g, ans, x, e: F.ldexp(g, e), None, elementwise=True,
              exports=TOP)
positive = defop("positive", np.positive, lambda g, ans, x: g, elementwise=True,
                 complex_vjps=True, exports=TOP)
# the distance to the next float: piecewise constant
spacing = defop("spacing", np.spacing, ZERO, elementwise=True, exports=TOP)
# the float after x1 towards x2: x1 moved by one ulp, so 1 wrt x1 and nothing wrt x2
nextafter = defop("nextafter", np.nextafter, lambda g, ans, x, y: g, ZERO, elementwise=True,
                  exports=TOP)

# NumPy 2's spellings of the inverse trigonometric functions and of power
for _alias, _op in (("acos", "arccos"), ("asin", "arcsin"), ("atan", "arctan"),
                    ("acosh", "arccosh"), ("asinh", "arcsinh"), ("atanh", "arctanh"),
                    ("pow", "power")):
    defun(getattr(_elementwise, _op), name=_alias, exports=(("numpy", _alias),), numpy=(_alias,))
del _alias, _op


# ---- nan_to_num ---------------------------------------------------------------------------------
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NumPy's ``np.nan_to_num`` (NaN to ``nan``, infinities to ``posinf``/``neginf``, the
    largest finite values by default), differentiable: the gradient passes where ``x`` is
    finite and is 0 where a value was replaced (a constant).  ``copy`` is accepted; the result
    is always a new array for Tensors and Nodes.

        >>> fg.nan_to_num(fg.tensor([1.0, np.nan, np.inf]))  # doctest: +SKIP
    """
    for v, what in ((nan, "nan"), (posinf, "posinf"), (neginf, "neginf")):
        if v is not None and not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"nan_to_num: {what} must be a number, got {type(v).__name__}")
    return apply(nan_to_num.op, (x,), {"nan": nan, "posinf": posinf, "neginf": neginf})


nan_to_num = defop("nan_to_num",
                   lambda x, nan, posinf, neginf: np.nan_to_num(x, nan=nan, posinf=posinf,
                                                                neginf=neginf),
                   lambda g, ans, x, nan, posinf, neginf: F.where(F.isfinite(x), g, 0),
                   function=nan_to_num,
                   shape=lambda shapes, **_: tuple(shapes[0]), exports=TOP)


# ---- functions with two results -----------------------------------------------------------------
_modf_fraction = defop("modf_fraction", lambda x: np.modf(x)[0], lambda g, ans, x: g,
                       elementwise=True, doc="The fractional part ``np.modf(x)[0]``.")
_frexp_mantissa = defop("frexp_mantissa", lambda x: np.frexp(x)[0],
                        lambda g, ans, x: F.ldexp(g, -F.frexp_exponent(x)), elementwise=True,
                        doc="The mantissa ``np.frexp(x)[0]``.")
frexp_exponent = defop("frexp_exponent", lambda x: np.frexp(x)[1], None, elementwise=True,
                       differentiable=False, doc="The exponent ``np.frexp(x)[1]`` (integers).")


def modf(x):
    """NumPy's ``np.modf``: ``(fractional part, integral part)``, both with ``x``'s sign; the
    fractional part has gradient 1, the integral part 0 (piecewise constant).

        >>> frac, whole = fg.modf(fg.tensor([1.25, -2.5]))  # doctest: +SKIP
    """
    return _modf_fraction(x), F.trunc(x)


modf = defun(modf, exports=TOP)


def frexp(x):
    """NumPy's ``np.frexp``: ``(mantissa, exponent)`` with ``x = mantissa * 2**exponent``; the
    mantissa has gradient ``2**-exponent``, the exponent (integers) none."""
    return _frexp_mantissa(x), frexp_exponent(x)


frexp = defun(frexp, exports=TOP)


def divmod(x, y):  # noqa: A001  (NumPy's name)
    """NumPy's ``np.divmod``: ``(floor_divide(x, y), remainder(x, y))``, the quotient with zero
    gradient and the remainder with ``remainder``'s."""
    return F.floor_divide(x, y), F.remainder(x, y)


divmod = defun(divmod, exports=TOP, operators=("__divmod__",))


# ---- vector products as ufuncs (NumPy 2.2's matvec, vecmat, vecdot) ---------------------------------
# vecmat and vecdot conjugate their vector (first) operand, matvec does not.  In autograd's complex
# convention a holomorphic factor's VJP is g times its derivative, and conj's VJP conjugates g.
def _outer_last(u, v):
    return F.expand_dims(u, -1) * F.expand_dims(v, -2)


def _conj(x):
    return F.conj(x) if x.dtype.kind == "c" else x


def _matvec_vjp_a(g, ans, a, v):
    return _outer_last(g, v)


def _matvec_vjp_v(g, ans, a, v):
    return F.matvec(F.swapaxes(a, -1, -2), g)


def _vecmat_vjp_v(g, ans, v, a):
    return _conj(F.matvec(a, g))


def _vecmat_vjp_a(g, ans, v, a):
    return _outer_last(_conj(v), g)


def _vecdot_vjp_x(g, ans, x, y):
    return _conj(F.expand_dims(g, -1) * y)


def _vecdot_vjp_y(g, ans, x, y):
    return F.expand_dims(g, -1) * _conj(x)


def _vec_shape(kind):
    def rule(shapes, **_):
        a, b = (tuple(s) for s in shapes)
        if kind == "vecdot":
            if not a or not b:
                raise ValueError("vecdot: both operands need at least one dimension")
            n, m = a[-1], b[-1]
            batch = _shapes.broadcast("vecdot", a[:-1], b[:-1])
        elif kind == "matvec":
            if len(a) < 2 or not b:
                raise ValueError(f"matvec: needs a matrix and a vector, got shapes {a} and {b}")
            n, m = a[-1], b[-1]
            batch = _shapes.broadcast("matvec", a[:-2], b[:-1]) + (a[-2],)
        else:
            if not a or len(b) < 2:
                raise ValueError(f"vecmat: needs a vector and a matrix, got shapes {a} and {b}")
            n, m = a[-1], b[-2]
            batch = _shapes.broadcast("vecmat", a[:-1], b[:-2]) + (b[-1],)
        if n is not None and m is not None and n != m:
            raise ValueError(f"{kind}: the contracted lengths differ (shapes {a} and {b})")
        return batch
    return rule


matvec = defop("matvec", np.matvec, _matvec_vjp_a, _matvec_vjp_v, shape=_vec_shape("matvec"),
               exports=TOP, complex_vjps=True)
vecmat = defop("vecmat", np.vecmat, _vecmat_vjp_v, _vecmat_vjp_a, shape=_vec_shape("vecmat"),
               exports=TOP, complex_vjps=True)
vecdot = defop("vecdot", np.vecdot, _vecdot_vjp_x, _vecdot_vjp_y, shape=_vec_shape("vecdot"),
               exports=TOP, complex_vjps=True)
