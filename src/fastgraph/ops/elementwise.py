"""Elementwise operations, each one declaration: name, NumPy forward, one VJP per input, and its
facts (see ``_core/registry.py``).

VJP rules read ``vjp(g, ans, *inputs)``; they use ``fastgraph`` ops (``F``) or operators, so they
serve arrays, Tensors and graph Nodes alike.  Broadcasting is undone by the engines.  An
elementwise op's shape rule is NumPy's broadcasting.

``eager_vjps``: plain-array backward passes (``create_graph=False``) on small float arrays run
these instead of the rules: the same arithmetic as one compiled kernel, without a Python frame or
NumPy's dispatch (tests check each against its rule).  ``G`` passes the gradient on.
"""
from __future__ import annotations

import math
import operator

import numpy as np
import scipy.special as _sp

from .._core import ANS, NN, TF, TOP, TOP_TF, ZERO, G, Kernel, OpDef, X0, X1, apply, defop
from .._core import holds_graph_value, is_tensor
from .._core import shapes as _shapes

from .. import ops as F  # late-bound: rules look names up when they run

_SQRT_PI_2 = 2.0 / math.sqrt(math.pi)
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_DEG, _RAD = math.pi / 180.0, 180.0 / math.pi


def _relu(x):
    return np.maximum(x, 0)


def _softplus(x):
    return np.logaddexp(0, x)


def _tie_split(g, x, y, wins):
    return F.where(F.equal(x, y), g * 0.5, F.where(wins(x, y), g, 0))


def _is_complex(x) -> bool:
    """``x`` (an array, a Tensor, a graph Node or a Python number) holds complex values: the
    rules of non-holomorphic ops branch on it (their real rule is cheaper)."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return np.dtype(dtype).kind == "c"
    return isinstance(x, complex)


def _sign_safe_log(x):
    # d/dy x**y = log(x) * x**y; where x <= 0 the branch is undefined, use 0 like autograd
    # (a complex x has its principal logarithm everywhere but at 0)
    if _is_complex(x):
        nonzero = F.not_equal(x, 0)
        return F.where(nonzero, F.log(F.where(nonzero, x, 1)), 0)
    return F.log(F.where(F.greater(x, 0), x, 1))


def _abs_vjp(g, ans, x):
    # |z| for complex z: conj(z) / |z| in autograd's convention (d/dx - i d/dy of |x + iy|), 0
    # at z = 0 as for reals (where ans is 0 it divides by 1: no warning); the division in reals
    # (a complex division costs ten times a real one)
    if _is_complex(x):
        return F.conj(x) * (g / F.where(F.equal(ans, 0), 1, ans))
    return g * F.sign(x)


def _power_vjp_x(g, ans, x, y):
    # d/dx x**y = y * x**(y-1); where y == 0 that is 0 * 0**-1 = nan at x = 0, but x**0 is
    # constant: take 0, as PyTorch does (the exponent becomes 1 there, so 0 * x**0 = 0 with no
    # warning). A non-zero constant exponent (x ** 2, the common case) needs no mask.
    if isinstance(y, (int, float, np.integer, np.floating)) and y != 0:
        # (x ** 2, the common case: x ** 1 is x, bit for bit, without a pass over it)
        return g * y * (x if y == 2 else F.power(x, y - 1))
    return g * y * F.power(x, F.where(F.equal(y, 0), 1, y) - 1)


def _hypot_vjp(g, ans, x, y):
    # x / hypot(x, y); at x = y = 0 the norm has no derivative: take 0, as PyTorch's norm does
    # (ans is 0 only there, where x is 0 too; dividing by 1 there raises no warning)
    return g * x / F.where(F.equal(ans, 0), 1, ans)


def _reciprocal(x):
    # an integer's reciprocal is float64, as 1.0 / x (NumPy's divides in integers)
    return np.reciprocal(x if np.issubdtype(np.result_type(x), np.inexact) else
                         np.asarray(x, float))


# ---- negation first: other ops' compiled VJPs use its kernel ---------------------------------
negative = defop("negative", np.negative, lambda g, ans, x: -g, elementwise=True,
                 opcode="negative", cheap=True, involution=True, operator=operator.neg,
                 eager_vjps=(Kernel("negative", G),), exports=TOP_TF, operators=("__neg__",),
                 complex_vjps=True)

# ---- arithmetic -----------------------------------------------------------------------------
# ``operator=``: the engines may use Python's operator when an operand is a NumPy value (same
# result; NumPy scalars then skip the ufunc machinery). ``scalar_math=`` likewise for float64
# scalars.  ``-0.0`` is addition's identity: ``x + 0.0`` turns ``-0.0`` into ``+0.0``.
add = defop("add", np.add, lambda g, ans, x, y: g, lambda g, ans, x, y: g, elementwise=True,
            opcode="add", cheap=True, operator=operator.add, right_identity=-0.0,
            left_identity=-0.0, eager_vjps=(G, G), exports=TOP_TF,
            operators=("__add__", "__radd__"), complex_vjps=True)
subtract = defop("subtract", np.subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g,
                 elementwise=True, opcode="subtract", cheap=True, operator=operator.sub,
                 right_identity=0.0, eager_vjps=(G, Kernel("negative", G)), exports=TOP_TF,
                 operators=("__sub__", "__rsub__"), complex_vjps=True)
multiply = defop("multiply", np.multiply, lambda g, ans, x, y: g * y,
                 lambda g, ans, x, y: g * x, elementwise=True, opcode="multiply", cheap=True,
                 operator=operator.mul, right_identity=1, left_identity=1,
                 eager_vjps=(Kernel("multiply", G, X1), Kernel("multiply", G, X0)),
                 exports=TOP_TF, operators=("__mul__", "__rmul__"), complex_vjps=True)
divide = defop("divide", np.divide, lambda g, ans, x, y: g / y,
               lambda g, ans, x, y: -g * ans / y, elementwise=True, opcode="divide",
               operator=operator.truediv, right_identity=1,
               eager_vjps=(Kernel("divide", G, X1), None),
               exports=TOP_TF + (("numpy", "true_divide"), (TF, "truediv"), (TF, "realdiv")),
               operators=("__truediv__", "__rtruediv__"), complex_vjps=True)
power = defop("power", np.power, _power_vjp_x, lambda g, ans, x, y: g * ans * _sign_safe_log(x),
              elementwise=True, opcode="power", stride0_operand=1, right_identity=1,
              exports=TOP + (("fastgraph", "pow"), (TF, "pow")),
              operators=("__pow__", "__rpow__"), complex_vjps=True)
# ties split the gradient evenly, as PyTorch does
maximum = defop("maximum", np.maximum, lambda g, ans, x, y: _tie_split(g, x, y, F.greater),
                lambda g, ans, x, y: _tie_split(g, x, y, F.less), elementwise=True,
                opcode="maximum", cheap=True, exports=TOP_TF)
minimum = defop("minimum", np.minimum, lambda g, ans, x, y: _tie_split(g, x, y, F.less),
                lambda g, ans, x, y: _tie_split(g, x, y, F.greater), elementwise=True,
                opcode="minimum", cheap=True, exports=TOP_TF)
floor_divide = defop("floor_divide", np.floor_divide, ZERO, ZERO, elementwise=True,
                     exports=TOP + ((TF, "floordiv"), (TF, "floor_div")),
                     operators=("__floordiv__", "__rfloordiv__"))
abs = defop("abs", np.abs, _abs_vjp, elementwise=True,  # noqa: A001
            opcode="abs", cheap=True,
            exports=TOP_TF + (("numpy", "absolute"), ("numpy", "fabs")),
            numpy=("absolute", "fabs"), methods=True, operators=("__abs__",), complex_vjps=True)
square = defop("square", np.square, lambda g, ans, x: g * 2 * x, elementwise=True,
               opcode="square", cheap=True, exports=TOP_TF, methods=True, complex_vjps=True)
sqrt = defop("sqrt", np.sqrt, lambda g, ans, x: g * 0.5 / ans, elementwise=True,
             opcode="sqrt", exports=TOP_TF, methods=True, complex_vjps=True)
reciprocal = defop("reciprocal", _reciprocal, lambda g, ans, x: -g * ans * ans,
                   elementwise=True, opcode="reciprocal", exports=TOP_TF, methods=True,
                   complex_vjps=True)

# ---- VJP building blocks: one pass over memory instead of three ------------------------------
# Large float arrays run as one fused kernel (no temporaries); the static fuse pass sees the same
# opcodes. Scalars and small arrays use NumPy directly (or the ops' compiled kernels).
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


# tanh_grad(t, g) = g * (1 - t^2), where t = tanh(x); sigmoid_grad(s, g) = g * s * (1 - s);
# their own VJPs keep higher derivatives exact
tanh_grad = defop("tanh_grad", _tanh_grad_forward, lambda G, ans, t, g: -2 * G * g * t,
                  lambda G, ans, t, g: F.tanh_grad(t, G), elementwise=True,
                  opcode="tanh_grad", kernel="tanh_grad", complex_vjps=True)
sigmoid_grad = defop("sigmoid_grad", _sigmoid_grad_forward,
                     lambda G, ans, s, g: G * g * (1 - 2 * s),
                     lambda G, ans, s, g: F.sigmoid_grad(s, G), elementwise=True,
                     opcode="sigmoid_grad", kernel="sigmoid_grad")
# relu's rule, g * (x > 0), as one compiled pass: an OpDef that only carries the kernel, not a
# registered op (graphs and create_graph=True keep the rule)
_RELU_GRAD = OpDef("relu_grad", lambda x, g: g * (x > 0), (), elementwise=True)
_RELU_GRAD.set_kernel("relu_grad")

# ---- exponentials, logs, trigonometry ---------------------------------------------------------
exp = defop("exp", np.exp, lambda g, ans, x: g * ans, elementwise=True, opcode="exp",
            fuse_alone=True, scalar_math=math.exp, eager_vjps=(Kernel("multiply", G, ANS),),
            exports=TOP_TF, methods=True, complex_vjps=True)
expm1 = defop("expm1", np.expm1, lambda g, ans, x: g * (ans + 1), elementwise=True,
              opcode="expm1", fuse_alone=True, exports=TOP_TF, methods=True, complex_vjps=True)
log = defop("log", np.log, lambda g, ans, x: g / x, elementwise=True, opcode="log",
            scalar_math=math.log, eager_vjps=(Kernel("divide", G, X0),), exports=TOP_TF,
            methods=True, complex_vjps=True)
log1p = defop("log1p", np.log1p, lambda g, ans, x: g / (x + 1), elementwise=True,
              opcode="log1p", exports=TOP_TF, methods=True, complex_vjps=True)
sin = defop("sin", np.sin, lambda g, ans, x: g * F.cos(x), elementwise=True, opcode="sin",
            scalar_math=math.sin, exports=TOP_TF, methods=True, complex_vjps=True)
cos = defop("cos", np.cos, lambda g, ans, x: -g * F.sin(x), elementwise=True, opcode="cos",
            scalar_math=math.cos, exports=TOP_TF, methods=True, complex_vjps=True)
tan = defop("tan", np.tan, lambda g, ans, x: g * (1 + ans * ans), elementwise=True,
            opcode="tan", exports=TOP_TF, methods=True, complex_vjps=True)
tanh = defop("tanh", np.tanh, lambda g, ans, x: F.tanh_grad(ans, g), elementwise=True,
             opcode="tanh", fuse_alone=True, scalar_math=math.tanh,
             eager_vjps=(Kernel("tanh_grad", ANS, G),), exports=TOP_TF + (NN,), methods=True,
             complex_vjps=True)
sinh = defop("sinh", np.sinh, lambda g, ans, x: g * F.cosh(x), elementwise=True,
             opcode="sinh", exports=TOP_TF, methods=True, complex_vjps=True)
cosh = defop("cosh", np.cosh, lambda g, ans, x: g * F.sinh(x), elementwise=True,
             opcode="cosh", exports=TOP_TF, methods=True, complex_vjps=True)
arctan = defop("arctan", np.arctan, lambda g, ans, x: g / (1 + x * x), elementwise=True,
               opcode="arctan", exports=TOP + ((TF, "atan"),), methods=True, complex_vjps=True)
log10 = defop("log10", np.log10, lambda g, ans, x: g / (x * _LN10), elementwise=True,
              exports=TOP, complex_vjps=True)
log2 = defop("log2", np.log2, lambda g, ans, x: g / (x * _LN2), elementwise=True, exports=TOP,
             complex_vjps=True)
exp2 = defop("exp2", np.exp2, lambda g, ans, x: g * ans * _LN2, elementwise=True, exports=TOP,
             complex_vjps=True)
arcsin = defop("arcsin", np.arcsin, lambda g, ans, x: g / F.sqrt(1 - x * x), elementwise=True,
               exports=TOP + ((TF, "asin"),), complex_vjps=True)
arccos = defop("arccos", np.arccos, lambda g, ans, x: -g / F.sqrt(1 - x * x),
               elementwise=True, exports=TOP + ((TF, "acos"),), complex_vjps=True)
arcsinh = defop("arcsinh", np.arcsinh, lambda g, ans, x: g / F.sqrt(x * x + 1),
                elementwise=True, exports=TOP + ((TF, "asinh"),), complex_vjps=True)
arccosh = defop("arccosh", np.arccosh, lambda g, ans, x: g / F.sqrt(x * x - 1),
                elementwise=True, exports=TOP + ((TF, "acosh"),), complex_vjps=True)
arctanh = defop("arctanh", np.arctanh, lambda g, ans, x: g / (1 - x * x), elementwise=True,
                exports=TOP + ((TF, "atanh"),), complex_vjps=True)
deg2rad = defop("deg2rad", np.deg2rad, lambda g, ans, x: g * _DEG, elementwise=True,
                exports=TOP + (("numpy", "radians"),), complex_vjps=True)
rad2deg = defop("rad2deg", np.rad2deg, lambda g, ans, x: g * _RAD, elementwise=True,
                exports=TOP + (("numpy", "degrees"),), complex_vjps=True)
# d/dx log(e^x + e^y) = e^(x - ans): never overflows (x <= ans); nan where both are -inf (as
# PyTorch's 1 / (1 + e^(y - x)))
logaddexp = defop("logaddexp", np.logaddexp, lambda g, ans, x, y: g * F.exp(x - ans),
                  lambda g, ans, x, y: g * F.exp(y - ans), elementwise=True, exports=TOP)
hypot = defop("hypot", np.hypot, _hypot_vjp, lambda g, ans, x, y: _hypot_vjp(g, ans, y, x),
              elementwise=True, exports=TOP)
# x mod y = x - floor(x / y) * y (the sign of y, as Python's %): 1 wrt x and -floor(x / y) wrt y,
# as PyTorch's remainder (floor_divide is NumPy's, consistent with np.remainder's own quotient);
# NumPy's np.mod is np.remainder
remainder = defop("remainder", np.remainder, lambda g, ans, x, y: g,
                  lambda g, ans, x, y: -g * F.floor_divide(x, y), elementwise=True,
                  exports=TOP + (("fastgraph", "mod"), ("numpy", "mod"), (TF, "mod"),
                                 (TF, "floormod")),
                  operators=("__mod__", "__rmod__"))
sigmoid = defop("sigmoid", _sp.expit, lambda g, ans, x: F.sigmoid_grad(ans, g),
                elementwise=True, opcode="sigmoid", fuse_alone=True,
                eager_vjps=(Kernel("sigmoid_grad", ANS, G),),
                exports=TOP_TF + (NN, ("scipy.special", "expit")), methods=True)
# a product with the mask: ~6x cheaper than np.where with a scalar.  The tape runs the forward
# as a compiled kernel (np.maximum's own loop against zeros, ~3x faster than against the scalar)
relu = defop("relu", _relu, lambda g, ans, x: g * F.greater(x, 0), elementwise=True,
             opcode="relu", cheap=True, same_positives=True,
             activation="relu", kernel="relu",
             eager_vjps=(Kernel(_RELU_GRAD, X0, G),), exports=TOP + (NN,), methods=True)
softplus = defop("softplus", _softplus, lambda g, ans, x: g * F.sigmoid(x), elementwise=True,
                 opcode="softplus", fuse_alone=True, exports=TOP + (NN,), methods=True)
erf = defop("erf", _sp.erf, lambda g, ans, x: g * _SQRT_PI_2 * F.exp(-(x * x)),
            elementwise=True, complex_vjps=True, opcode="erf",
            exports=TOP_TF + ("scipy.special",))
erfc = defop("erfc", _sp.erfc, lambda g, ans, x: -g * _SQRT_PI_2 * F.exp(-(x * x)),
             elementwise=True, complex_vjps=True, exports=("scipy.special",))
logit = defop("logit", _sp.logit, lambda g, ans, x: g / (x * (1 - x)), elementwise=True,
              exports=("scipy.special",))
gammaln = defop("gammaln", _sp.gammaln, lambda g, ans, x: g * F.digamma(x), elementwise=True,
                exports=("scipy.special",))
digamma = defop("digamma", _sp.digamma, lambda g, ans, x: g * F.polygamma(1, x),
                elementwise=True, exports=("scipy.special", ("scipy.special", "psi")))
xlogy = defop("xlogy", _sp.xlogy, lambda g, ans, x, y: g * F.log(y),
              lambda g, ans, x, y: g * x / y, elementwise=True, exports=("scipy.special",))

# ---- piecewise constant: zero gradient ------------------------------------------------------
def _sign_vjp(g, ans, x):
    # complex z: NumPy 2's sign is s = z / |z|, so ds = (dz - s Re(conj(s) dz)) / |z|, and in
    # autograd's convention the gradient is (g - Re(g s) conj(s)) / |z| (0 at z = 0, where NumPy
    # gives 0).  Real x: piecewise constant, ZERO (the engines then add nothing, as for a ZERO
    # rule)
    if _is_complex(x):
        r = F.abs(x)
        zero = F.equal(r, 0)
        return F.where(zero, 0, (g - F.real(g * ans) * F.conj(ans)) / F.where(zero, 1, r))
    return ZERO


sign = defop("sign", np.sign, _sign_vjp, elementwise=True, opcode="sign", cheap=True,
             exports=TOP_TF, methods=True, complex_vjps=True)
floor = defop("floor", np.floor, ZERO, elementwise=True, opcode="floor", cheap=True,
              exports=TOP_TF, methods=True)
ceil = defop("ceil", np.ceil, ZERO, elementwise=True, opcode="ceil", cheap=True, exports=TOP_TF,
             methods=True)
rint = defop("rint", np.rint, ZERO, elementwise=True, exports=TOP_TF)
trunc = defop("trunc", np.trunc, ZERO, elementwise=True, exports=TOP, numpy=("trunc", "fix"))


def round(x, decimals: int = 0):  # noqa: A001  (NumPy's name)
    """``np.round`` (half to even, ``decimals`` places), differentiable: zero gradient, as
    ``floor``'s (piecewise constant), so display or quantisation code keeps working in a
    gradient computation.

        >>> fg.round(fg.tensor([0.5, 1.26]), 1)  # doctest: +SKIP
    """
    return apply(round.op, (x,), {"decimals": _shapes.as_int(decimals, "round", "decimals")})


def _round_method(self, ndigits=None):
    return round(self, 0 if ndigits is None else ndigits)


round = defop("round", lambda x, decimals: np.round(x, decimals), ZERO, function=round,
              shape=lambda shapes, **_: _shapes.broadcast("round", *shapes),
              exports=TOP_TF + (("fastgraph", "around"), ("numpy", "around")),
              methods={"round": round, "__round__": _round_method})


def _polygamma_forward(x, n):
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.float64
    return _sp.polygamma(n, x).astype(dtype, copy=False)


def polygamma(n: int, x):
    """The ``n``-th derivative of the digamma function, differentiable in ``x`` to any order."""
    return apply(polygamma.op, (x,), {"n": _shapes.as_int(n, "polygamma", "n")})


polygamma = defop("polygamma", _polygamma_forward, lambda g, ans, x, n: g * F.polygamma(n + 1, x),
                  function=polygamma,
                  shape=lambda shapes, **_: _shapes.broadcast("polygamma", *shapes),
                  exports=("scipy.special",))


# ---- complex parts ------------------------------------------------------------------------------
# Gradients follow HIPS autograd's convention: the gradient of a real f(z), z = x + iy, is
# df/dx - i df/dy, and a holomorphic op's VJP is g * f'(z) (no conjugate).  So real passes g on,
# imag gives -i g, conj conjugates g; a real input takes the real part of what reaches it.
def _imag_vjp(g, ans, x):
    return g * -1j if _is_complex(x) else g * 0


def _angle_vjp(g, ans, x, deg):
    if not _is_complex(x):
        return g * 0      # 0 or pi: piecewise constant on the reals
    # atan2(y, x): d/dx - i d/dy = (-y - ix) / |z|^2 = -i conj(z) / |z|^2 (nan at z = 0, as
    # autograd's: the angle has no derivative there)
    gz = g * (_RAD if deg else 1.0)
    return gz * F.conj(x) * -1j / F.real(x * F.conj(x))


real = defop("real", np.real, lambda g, ans, x: g, elementwise=True, complex_vjps=True,
             exports=TOP_TF, methods={"real": property(lambda self: F.real(self))}, doc="The real part (NumPy's ``np.real``; a real input unchanged).\n\n"
             "        >>> fg.real(fg.tensor([1 + 2j]))  # doctest: +SKIP\n"
             "        tensor([1.])")
imag = defop("imag", np.imag, _imag_vjp, elementwise=True, complex_vjps=True, exports=TOP_TF,
             methods={"imag": property(lambda self: F.imag(self))},
             doc="The imaginary part (NumPy's ``np.imag``; zeros for a real input).\n\n"
             "        >>> fg.imag(fg.tensor([1 + 2j]))  # doctest: +SKIP\n"
             "        tensor([2.])")
conj = defop("conj", np.conjugate, lambda g, ans, x: F.conj(g), elementwise=True,
             complex_vjps=True, involution=True,
             exports=TOP_TF + (("fastgraph", "conjugate"), ("numpy", "conjugate")),
             numpy=("conj", "conjugate"), methods=("conj", "conjugate"),
             doc="The complex conjugate (NumPy's ``np.conjugate``; a real input unchanged).\n\n"
             "        >>> fg.conj(fg.tensor([1 + 2j]))  # doctest: +SKIP\n"
             "        tensor([1.-2.j])")


def angle(z, deg: bool = False):
    """The argument of each complex value, in radians (degrees with ``deg=True``): NumPy's
    ``np.angle``, differentiable (0 or pi for real input, with a zero gradient).

        >>> fg.angle(fg.tensor([1j, -1.0]))  # doctest: +SKIP
        tensor([1.5708, 3.1416])
    """
    if not isinstance(deg, (bool, np.bool_)):
        raise TypeError(f"angle: deg must be a bool, got {deg!r}")
    return apply(angle.op, (z,), {"deg": bool(deg)})


angle = defop("angle", lambda x, deg: np.angle(x, deg=deg), _angle_vjp, function=angle,
              shape=lambda shapes, **_: tuple(shapes[0]), complex_vjps=True, exports=TOP)


def real_if_close(a, tol=100):
    """NumPy's ``np.real_if_close``: the real part when every imaginary part is within ``tol``
    machine epsilons of zero, else ``a``; the gradient passes through either way.  Its dtype
    depends on the values, so graphs (whose dtypes are fixed when they are built) refuse it:
    use :func:`real` there.

        >>> fg.real_if_close(fg.tensor([1 + 1e-20j])).dtype  # doctest: +SKIP
        dtype('float64')
    """
    if holds_graph_value((a,)) and not is_tensor(a):
        raise TypeError("real_if_close: the result's dtype depends on the values, which a graph "
                        "does not know when it is built; use fg.real (or fg.real_if_close on "
                        "eager Tensors)")
    return apply(real_if_close.op, (a,), {"tol": tol})


real_if_close = defop("real_if_close", lambda a, tol: np.real_if_close(a, tol),
                      lambda g, ans, a, tol: g, function=real_if_close,
                      shape=lambda shapes, **_: tuple(shapes[0]), complex_vjps=True,
                      exports=TOP)


# ---- selection --------------------------------------------------------------------------------
def where(condition, x, y):
    """Elementwise ``x if condition else y``; differentiable in ``x`` and ``y``.

        >>> fg.where(fg.tensor([True, False]), 1.0, 2.0)  # doctest: +SKIP
    """
    return apply(where.op, (condition, x, y), {})


where = defop("where", np.where, None, lambda g, ans, c, x, y: F.where(c, g, 0),
              lambda g, ans, c, x, y: F.where(c, 0, g), function=where, elementwise=True,
              opcode="where", cheap=True, exports=TOP, complex_vjps=True)


def clip(x, a_min=None, a_max=None):
    """Clamp ``x`` to ``[a_min, a_max]`` (either may be ``None``).

        >>> fg.clip(fg.tensor([-2.0, 0.5, 3.0]), 0.0, 1.0)  # doctest: +SKIP
    """
    if a_min is None and a_max is None:
        raise ValueError("clip: one of a_min and a_max must be given")
    return apply(clip.op, (x, -np.inf if a_min is None else a_min,
                           np.inf if a_max is None else a_max), {})


# np.clip(x, lo, hi) is minimum(maximum(x, lo), hi): each element's gradient goes to the one
# operand that produced it.  x where lo <= x <= hi (at a bound too, as torch.clamp); hi where
# max(x, lo) > hi, which includes every element when lo > hi (the output is then hi, as in NumPy
# and PyTorch); lo where x < lo <= hi.  (For x < lo == hi PyTorch gives no operand a gradient;
# here lo gets it, the value maximum() selected.)
clip = defop("clip", np.clip,
             lambda g, ans, x, lo, hi: g * F.logical_and(F.greater_equal(x, lo),
                                                         F.less_equal(x, hi)),
             lambda g, ans, x, lo, hi: g * F.logical_and(F.less(x, lo), F.less_equal(lo, hi)),
             lambda g, ans, x, lo, hi: g * F.greater(F.maximum(x, lo), hi),
             function=clip, elementwise=True, opcode="clip", cheap=True, exports=TOP,
             methods=True)


# ---- comparisons and logic: boolean results, no gradient --------------------------------------
less = defop("less", np.less, None, None, elementwise=True, differentiable=False,
             opcode="less", cheap=True, compares="lt", exports=TOP_TF, operators=("__lt__",))
less_equal = defop("less_equal", np.less_equal, None, None, elementwise=True,
                   differentiable=False, opcode="less_equal", cheap=True, compares="le",
                   exports=TOP_TF, operators=("__le__",))
greater = defop("greater", np.greater, None, None, elementwise=True, differentiable=False,
                opcode="greater", cheap=True, compares="gt", exports=TOP_TF,
                operators=("__gt__",))
greater_equal = defop("greater_equal", np.greater_equal, None, None, elementwise=True,
                      differentiable=False, opcode="greater_equal", cheap=True,
                      compares="ge", exports=TOP_TF, operators=("__ge__",))
equal = defop("equal", np.equal, None, None, elementwise=True, differentiable=False,
              opcode="equal", cheap=True, compares="eq", exports=TOP_TF, operators=("__eq__",))
not_equal = defop("not_equal", np.not_equal, None, None, elementwise=True,
                  differentiable=False, opcode="not_equal", cheap=True, compares="ne",
                  exports=TOP_TF, operators=("__ne__",))
logical_and = defop("logical_and", np.logical_and, None, None, elementwise=True,
                    differentiable=False, exports=TOP_TF, operators=("__and__",))
logical_or = defop("logical_or", np.logical_or, None, None, elementwise=True,
                   differentiable=False, exports=TOP_TF, operators=("__or__",))
isfinite = defop("isfinite", np.isfinite, None, elementwise=True, differentiable=False,
                 doc="Elementwise finiteness test (boolean, no gradient).",
                 exports=TOP + ((TF, "is_finite"),))
logical_not = defop("logical_not", np.logical_not, None, elementwise=True,
                    differentiable=False, doc="Elementwise logical not (boolean, no gradient).",
                    exports=TOP_TF, operators=("__invert__",))
