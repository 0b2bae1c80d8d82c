"""Elementwise operations: one line of declaration each (name, NumPy forward, VJP per input).

VJP rules read ``vjp(g, ans, *inputs)``; they use ``fastgraph`` ops (``F``) or operators, so they
serve arrays, Tensors and graph Nodes alike.  Broadcasting is undone by the engines.
"""
from __future__ import annotations

import math
import operator

import numpy as np
import scipy.special as _sp

from .._core import ZERO, OpDef, apply, defop
from .._core import shapes as _shapes

from .. import ops as F  # late-bound: rules look names up when they run

_SQRT_PI_2 = 2.0 / math.sqrt(math.pi)
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_DEG, _RAD = math.pi / 180.0, 180.0 / math.pi


def _broadcast_rule(name):
    return lambda shapes, **_: _shapes.broadcast(name, *shapes)


def _unary(name, forward, vjp, **kw):
    op = defop(name, forward, vjp, shape=_broadcast_rule(name), elementwise=True, **kw)

    def fn(x):
        return apply(op, (x,), None)  # no attributes: None saves a dict per call

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (NumPy semantics), differentiable.\n\n" \
                 f"    >>> fg.{name}(fg.tensor([0.5]))  # doctest: +SKIP\n"
    fn.op = op
    return fn


def _binary(name, forward, vjp_x, vjp_y, **kw):
    op = defop(name, forward, vjp_x, vjp_y, shape=_broadcast_rule(name), elementwise=True, **kw)

    def fn(x, y):
        return apply(op, (x, y), None)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` with NumPy broadcasting, differentiable.\n\n" \
                 f"    >>> fg.{name}(fg.tensor([1.0]), 2.0)  # doctest: +SKIP\n"
    fn.op = op
    return fn


def _relu(x):
    return np.maximum(x, 0)


def _softplus(x):
    return np.logaddexp(0, x)


def _tie_split(g, x, y, wins):
    return F.where(F.equal(x, y), g * 0.5, F.where(wins(x, y), g, 0))


def _sign_safe_log(x):
    # d/dy x**y = log(x) * x**y; where x <= 0 the branch is undefined, use 0 like autograd
    return F.log(F.where(F.greater(x, 0), x, 1))


# ---- arithmetic -----------------------------------------------------------------------------
# ``operator=``: the engines may use Python's operator when an operand is a NumPy value (same
# result; NumPy scalars then skip the ufunc machinery). ``scalar_math=`` likewise for float64
# scalars.
add = _binary("add", np.add, lambda g, ans, x, y: g, lambda g, ans, x, y: g,
              operator=operator.add)
subtract = _binary("subtract", np.subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g,
                   operator=operator.sub)
multiply = _binary("multiply", np.multiply, lambda g, ans, x, y: g * y,
                   lambda g, ans, x, y: g * x, operator=operator.mul)
divide = _binary("divide", np.divide, lambda g, ans, x, y: g / y,
                 lambda g, ans, x, y: -g * ans / y, operator=operator.truediv)


def _power_vjp_x(g, ans, x, y):
    # d/dx x**y = y * x**(y-1); where y == 0 that is 0 * 0**-1 = nan at x = 0, but x**0 is
    # constant: take 0, as PyTorch does (the exponent becomes 1 there, so 0 * x**0 = 0 with no
    # warning). A non-zero constant exponent (x ** 2, the common case) needs no mask.
    if isinstance(y, (int, float, np.integer, np.floating)) and y != 0:
        return g * y * F.power(x, y - 1)
    return g * y * F.power(x, F.where(F.equal(y, 0), 1, y) - 1)


power = _binary("power", np.power, _power_vjp_x,
                lambda g, ans, x, y: g * ans * _sign_safe_log(x))
# ties split the gradient evenly, as PyTorch does
maximum = _binary("maximum", np.maximum,
                  lambda g, ans, x, y: _tie_split(g, x, y, F.greater),
                  lambda g, ans, x, y: _tie_split(g, x, y, F.less))
minimum = _binary("minimum", np.minimum,
                  lambda g, ans, x, y: _tie_split(g, x, y, F.less),
                  lambda g, ans, x, y: _tie_split(g, x, y, F.greater))
floor_divide = _binary("floor_divide", np.floor_divide, ZERO, ZERO)
negative = _unary("negative", np.negative, lambda g, ans, x: -g)
abs = _unary("abs", np.abs, lambda g, ans, x: g * F.sign(x))
square = _unary("square", np.square, lambda g, ans, x: g * 2 * x)
sqrt = _unary("sqrt", np.sqrt, lambda g, ans, x: g * 0.5 / ans)
reciprocal = _unary("reciprocal", lambda x: np.reciprocal(x if np.issubdtype(np.result_type(x), np.inexact) else np.asarray(x, float)),
                    lambda g, ans, x: -g * ans * ans)

# ---- exponentials, logs, trigonometry ---------------------------------------------------------
exp = _unary("exp", np.exp, lambda g, ans, x: g * ans, scalar_math=math.exp)
expm1 = _unary("expm1", np.expm1, lambda g, ans, x: g * (ans + 1))
log = _unary("log", np.log, lambda g, ans, x: g / x, scalar_math=math.log)
log1p = _unary("log1p", np.log1p, lambda g, ans, x: g / (x + 1))
sin = _unary("sin", np.sin, lambda g, ans, x: g * F.cos(x), scalar_math=math.sin)
cos = _unary("cos", np.cos, lambda g, ans, x: -g * F.sin(x), scalar_math=math.cos)
tan = _unary("tan", np.tan, lambda g, ans, x: g * (1 + ans * ans))
tanh = _unary("tanh", np.tanh, lambda g, ans, x: F.tanh_grad(ans, g), scalar_math=math.tanh)
sinh = _unary("sinh", np.sinh, lambda g, ans, x: g * F.cosh(x))
cosh = _unary("cosh", np.cosh, lambda g, ans, x: g * F.sinh(x))
arctan = _unary("arctan", np.arctan, lambda g, ans, x: g / (1 + x * x))
log10 = _unary("log10", np.log10, lambda g, ans, x: g / (x * _LN10))
log2 = _unary("log2", np.log2, lambda g, ans, x: g / (x * _LN2))
exp2 = _unary("exp2", np.exp2, lambda g, ans, x: g * ans * _LN2)
arcsin = _unary("arcsin", np.arcsin, lambda g, ans, x: g / F.sqrt(1 - x * x))
arccos = _unary("arccos", np.arccos, lambda g, ans, x: -g / F.sqrt(1 - x * x))
arcsinh = _unary("arcsinh", np.arcsinh, lambda g, ans, x: g / F.sqrt(x * x + 1))
arccosh = _unary("arccosh", np.arccosh, lambda g, ans, x: g / F.sqrt(x * x - 1))
arctanh = _unary("arctanh", np.arctanh, lambda g, ans, x: g / (1 - x * x))
deg2rad = _unary("deg2rad", np.deg2rad, lambda g, ans, x: g * _DEG)
rad2deg = _unary("rad2deg", np.rad2deg, lambda g, ans, x: g * _RAD)
# d/dx log(e^x + e^y) = e^(x - ans): never overflows (x <= ans); nan where both are -inf (as
# PyTorch's 1 / (1 + e^(y - x)))
logaddexp = _binary("logaddexp", np.logaddexp, lambda g, ans, x, y: g * F.exp(x - ans),
                    lambda g, ans, x, y: g * F.exp(y - ans))


def _hypot_vjp(g, ans, x, y):
    # x / hypot(x, y); at x = y = 0 the norm has no derivative: take 0, as PyTorch's norm does
    # (ans is 0 only there, where x is 0 too; dividing by 1 there raises no warning)
    return g * x / F.where(F.equal(ans, 0), 1, ans)


hypot = _binary("hypot", np.hypot, _hypot_vjp,
                lambda g, ans, x, y: _hypot_vjp(g, ans, y, x))
# x mod y = x - floor(x / y) * y (the sign of y, as Python's %): 1 wrt x and -floor(x / y) wrt y,
# as PyTorch's remainder (floor_divide is NumPy's, consistent with np.remainder's own quotient)
remainder = _binary("remainder", np.remainder, lambda g, ans, x, y: g,
                    lambda g, ans, x, y: -g * F.floor_divide(x, y))
mod = remainder  # NumPy's np.mod is np.remainder
sigmoid = _unary("sigmoid", _sp.expit, lambda g, ans, x: F.sigmoid_grad(ans, g))
# a product with the mask: ~6x cheaper than np.where with a scalar.  The tape runs the forward
# as a compiled kernel (np.maximum's own loop against zeros, ~3x faster than against the scalar)
relu = _unary("relu", _relu, lambda g, ans, x: g * F.greater(x, 0), kernel="relu")
softplus = _unary("softplus", _softplus, lambda g, ans, x: g * F.sigmoid(x))
erf = _unary("erf", _sp.erf, lambda g, ans, x: g * _SQRT_PI_2 * F.exp(-(x * x)))
erfc = _unary("erfc", _sp.erfc, lambda g, ans, x: -g * _SQRT_PI_2 * F.exp(-(x * x)))
logit = _unary("logit", _sp.logit, lambda g, ans, x: g / (x * (1 - x)))
gammaln = _unary("gammaln", _sp.gammaln, lambda g, ans, x: g * F.digamma(x))
digamma = _unary("digamma", _sp.digamma, lambda g, ans, x: g * F.polygamma(1, x))
xlogy = _binary("xlogy", _sp.xlogy,
                lambda g, ans, x, y: g * F.log(y), lambda g, ans, x, y: g * x / y)

# ---- VJP building blocks: one pass over memory instead of three ------------------------------
# Large float arrays run as one fused kernel (no temporaries); the static fuse pass sees the same
# opcodes. Scalars and small arrays use NumPy directly.
_FUSED_MIN_SIZE = 1 << 15
_kernels: dict = {}


def _fused_kernel(opcode):
    k = _kernels.get(opcode)
    if k is None:
        from ..fused import Expr, compile_kernel
        k = _kernels[opcode] = compile_kernel([Expr.op(opcode, Expr.input(0), Expr.input(1))],
                                              name=opcode)
    return k


def _is_big(y, g) -> bool:
    return (type(y) is np.ndarray and y.size >= _FUSED_MIN_SIZE and y.dtype.kind == "f"
            and type(g) is np.ndarray and g.dtype.kind == "f")


def _tanh_grad_forward(t, g):
    if _is_big(t, g):
        return _fused_kernel("tanh_grad")(t, g)
    return g * (1 - t * t)


def _sigmoid_grad_forward(s, g):
    if _is_big(s, g):
        return _fused_kernel("sigmoid_grad")(s, g)
    return g * s * (1 - s)


# tanh_grad(t, g) = g * (1 - t^2), where t = tanh(x); sigmoid_grad(s, g) = g * s * (1 - s)
tanh_grad = _binary("tanh_grad", _tanh_grad_forward,
                    lambda G, ans, t, g: -2 * G * g * t,
                    lambda G, ans, t, g: F.tanh_grad(t, G), kernel="tanh_grad")
sigmoid_grad = _binary("sigmoid_grad", _sigmoid_grad_forward,
                       lambda G, ans, s, g: G * g * (1 - 2 * s),
                       lambda G, ans, s, g: F.sigmoid_grad(s, G), kernel="sigmoid_grad")

# ---- compiled VJPs for the plain-array backward pass ------------------------------------------
# ``create_graph=False`` backward passes on small float arrays run these instead of the rules
# above: the same arithmetic as one compiled kernel, without a Python frame or NumPy's dispatch
# (see ``OpDef.set_eager_vjps``; tests check each against its rule).  "g" passes the gradient on.
add.op.set_eager_vjps(["g", "g"])
subtract.op.set_eager_vjps(["g", (negative.op, "g")])
multiply.op.set_eager_vjps([(multiply.op, "g", 1), (multiply.op, "g", 0)])
divide.op.set_eager_vjps([(divide.op, "g", 1), None])
negative.op.set_eager_vjps([(negative.op, "g")])
exp.op.set_eager_vjps([(multiply.op, "g", "ans")])
log.op.set_eager_vjps([(divide.op, "g", 0)])
tanh.op.set_eager_vjps([(tanh_grad.op, "ans", "g")])
sigmoid.op.set_eager_vjps([(sigmoid_grad.op, "ans", "g")])
# relu's rule, g * (x > 0), as one compiled pass: an OpDef that only carries the kernel, not a
# registered op: graphs and create_graph=True keep the rule
_relu_grad_kernel = OpDef("relu_grad", lambda x, g: g * (x > 0), (), None, True, None, False,
                          False)
_relu_grad_kernel.set_kernel("relu_grad")
relu.op.set_eager_vjps([(_relu_grad_kernel, 0, "g")])

# ---- piecewise constant: zero gradient ------------------------------------------------------
sign = _unary("sign", np.sign, ZERO)
floor = _unary("floor", np.floor, ZERO)
ceil = _unary("ceil", np.ceil, ZERO)
rint = _unary("rint", np.rint, ZERO)
trunc = _unary("trunc", np.trunc, ZERO)
_round_op = defop("round", lambda x, decimals: np.round(x, decimals), ZERO,
                  shape=_broadcast_rule("round"))


def round(x, decimals: int = 0):  # noqa: A001  (NumPy's name)
    """``np.round`` (half to even, ``decimals`` places), differentiable: zero gradient, as
    ``floor``'s (piecewise constant), so display or quantisation code keeps working in a
    gradient computation.

        >>> fg.round(fg.tensor([0.5, 1.26]), 1)  # doctest: +SKIP
    """
    return apply(_round_op, (x,), {"decimals": _shapes.as_int(decimals, "round", "decimals")})


round.op = _round_op
around = round


def _polygamma_forward(x, n):
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.float64
    return _sp.polygamma(n, x).astype(dtype, copy=False)


_polygamma_op = defop("polygamma", _polygamma_forward,
                      lambda g, ans, x, n: g * F.polygamma(n + 1, x),
                      shape=_broadcast_rule("polygamma"))


def polygamma(n: int, x):
    """The ``n``-th derivative of the digamma function, differentiable in ``x`` to any order."""
    return apply(_polygamma_op, (x,), {"n": _shapes.as_int(n, "polygamma", "n")})


polygamma.op = _polygamma_op


# ---- selection --------------------------------------------------------------------------------
_where_op = defop("where", np.where, None,
                  lambda g, ans, c, x, y: F.where(c, g, 0),
                  lambda g, ans, c, x, y: F.where(c, 0, g),
                  shape=_broadcast_rule("where"), elementwise=True)


def where(condition, x, y):
    """Elementwise ``x if condition else y``; differentiable in ``x`` and ``y``.

        >>> fg.where(fg.tensor([True, False]), 1.0, 2.0)  # doctest: +SKIP
    """
    return apply(_where_op, (condition, x, y), {})


where.op = _where_op

# np.clip(x, lo, hi) is minimum(maximum(x, lo), hi): each element's gradient goes to the one
# operand that produced it.  x where lo <= x <= hi (at a bound too, as torch.clamp); hi where
# max(x, lo) > hi, which includes every element when lo > hi (the output is then hi, as in NumPy
# and PyTorch); lo where x < lo <= hi.  (For x < lo == hi PyTorch gives no operand a gradient;
# here lo gets it, the value maximum() selected.)
_clip_op = defop("clip", np.clip,
                 lambda g, ans, x, lo, hi: g * F.logical_and(F.greater_equal(x, lo),
                                                             F.less_equal(x, hi)),
                 lambda g, ans, x, lo, hi: g * F.logical_and(F.less(x, lo),
                                                             F.less_equal(lo, hi)),
                 lambda g, ans, x, lo, hi: g * F.greater(F.maximum(x, lo), hi),
                 shape=_broadcast_rule("clip"), elementwise=True)


def clip(x, a_min=None, a_max=None):
    """Clamp ``x`` to ``[a_min, a_max]`` (either may be ``None``).

        >>> fg.clip(fg.tensor([-2.0, 0.5, 3.0]), 0.0, 1.0)  # doctest: +SKIP
    """
    if a_min is None and a_max is None:
        raise ValueError("clip: one of a_min and a_max must be given")
    return apply(_clip_op, (x, -np.inf if a_min is None else a_min,
                            np.inf if a_max is None else a_max), {})


clip.op = _clip_op


# ---- comparisons and logic: boolean results, no gradient --------------------------------------
def _compare(name, forward):
    op = defop(name, forward, None, None, shape=_broadcast_rule(name), elementwise=True,
               differentiable=False)

    def fn(x, y):
        return apply(op, (x, y), {})

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``; a boolean result that carries no gradient."
    fn.op = op
    return fn


less = _compare("less", np.less)
less_equal = _compare("less_equal", np.less_equal)
greater = _compare("greater", np.greater)
greater_equal = _compare("greater_equal", np.greater_equal)
equal = _compare("equal", np.equal)
not_equal = _compare("not_equal", np.not_equal)
logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)

_isfinite_op = defop("isfinite", np.isfinite, None, shape=_broadcast_rule("isfinite"),
                     elementwise=True, differentiable=False)


def isfinite(x):
    """Elementwise finiteness test (boolean, no gradient)."""
    return apply(_isfinite_op, (x,), {})


_logical_not_op = defop("logical_not", np.logical_not, None,
                        shape=_broadcast_rule("logical_not"),
                        elementwise=True, differentiable=False)


def logical_not(x):
    """Elementwise logical not (boolean, no gradient)."""
    return apply(_logical_not_op, (x,), {})
