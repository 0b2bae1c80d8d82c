"""The op table: one line per case, for every operation of the core vocabulary.

Each :class:`OpCase` names an operation, the ``fg`` function to call (a lambda when attributes such
as ``axis`` are fixed), the input arguments (shape and domain), a NumPy/SciPy reference, the PyTorch
equivalent (or ``None``) and which arguments are differentiable.  Other test files reuse it::

    from optable import CASES, case_params, make_inputs
    @pytest.mark.parametrize("case", case_params())
    def test_something(case):
        arrays = make_inputs(case, np.float64, np.random.default_rng(0))
        out = case.fn(*map(fg.tensor, arrays))

``case.fn`` only uses ``fg`` operations and operators, so it works on eager ``Tensor``s, graph
``Node``s and NumPy arrays alike; ``case.ref`` takes NumPy arrays; ``case.torch`` takes
``torch.Tensor``s.  Outputs are one array, or a list of arrays (``split``).

Domains keep inputs away from kinks and singularities (so central finite differences are valid):

=========  =================================================================================
real       standard normal
pos        uniform(0.5, 2)
unit       uniform(-0.9, 0.9)            (tan, arctanh-like ops)
prob       uniform(0.1, 0.9)             (logit)
away       +-uniform(0.3, 1.5)           (abs, relu, sign, reciprocal, prod: away from 0)
frac       integer + uniform(0.2, 0.8)   (floor, ceil: away from integers)
distinct   a shuffled grid with step 0.5 (max, min: no ties)
large      1000 + 3 * normal             (softmax stability)
mat        well-conditioned matrices (normal * 0.3 + 2 I), batched on leading axes
matneg     as ``mat`` with the first row negated (negative determinant)
clipx      uniform values at least 0.1 away from the clip bounds +-0.5
grid0/1    half-integer grids offset by 0.25 (maximum, minimum: no ties between the two)
gt1        uniform(1.2, 3)               (arccosh)
absdist    distinct absolute values >= 0.3 with random signs (norm ord=inf: no ties)
bool       a random boolean mask
labels:C   integer class labels in [0, C)
=========  =================================================================================
"""
from __future__ import annotations

import dataclasses
import zlib
from typing import Any, Callable, Optional, Sequence

import numpy as np
import scipy.special as sps

import fastgraph as fg
import fastgraph.scipy.special as fgs

__all__ = ["OpCase", "CASES", "CASES_BY_NAME", "case_params", "make_inputs", "rng_for",
           "as_list", "DOMAINS", "COVERED_OPS"]


@dataclasses.dataclass(frozen=True)
class OpCase:
    name: str                       # unique pytest id
    op: str                         # the operation exercised (its name)
    fn: Callable                    # fg function of the arguments
    args: tuple                     # ((shape, domain), ...)
    ref: Callable                   # NumPy / SciPy reference on ndarrays
    torch: Optional[Callable]       # PyTorch equivalent on torch tensors, or None
    diff: tuple                     # indices of the differentiable arguments
    zero_grad: bool = False         # gradient identically zero (sign, floor, ceil)
    fix: Optional[Callable] = None  # post-process the float64 inputs (e.g. separate ties)
    order2: bool = True             # check second-order derivatives
    tol: float = 1.0                # multiplies the tolerances (ill-conditioned cases)
    tensor_only: bool = False       # fn uses Tensor-only methods (no NumPy-in test)
    jax: Optional[Callable] = None  # JAX equivalent on jax arrays, for what PyTorch lacks
    out_dtype: Any = None           # the output's dtype whatever the input's (float_power)
    static: bool = True             # also in static graphs (False: needs values, trim_zeros)

    def __repr__(self) -> str:
        return f"OpCase({self.name!r})"


# ---- domains ---------------------------------------------------------------------------------
def _real(rng, shape):
    return rng.standard_normal(shape)


def _pos(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def _unit(rng, shape):
    return rng.uniform(-0.9, 0.9, shape)


def _prob(rng, shape):
    return rng.uniform(0.1, 0.9, shape)


def _away(rng, shape):
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 1.5, shape)


def _frac(rng, shape):
    return rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.8, shape)


def _distinct(rng, shape):
    n = int(np.prod(shape, dtype=np.int64))
    grid = (rng.permutation(n) - n / 2) * 0.5 + rng.uniform(-0.05, 0.05, n)
    return grid.reshape(shape)


def _large(rng, shape):
    return 1000.0 + 3.0 * rng.standard_normal(shape)


def _mat(rng, shape):
    n = shape[-1]
    return rng.standard_normal(shape) * 0.3 + 2.0 * np.eye(n)


def _matneg(rng, shape):
    a = _mat(rng, shape)
    a[..., 0, :] *= -1
    return a


def _clipx(rng, shape):
    # |x -+ 0.5| >= 0.1 everywhere
    pieces = np.array([[-1.5, -0.6], [-0.4, 0.4], [0.6, 1.5]])
    which = rng.integers(0, 3, shape)
    lo, hi = pieces[which, 0], pieces[which, 1]
    return rng.uniform(0, 1, shape) * (hi - lo) + lo


def _bool(rng, shape):
    return rng.random(shape) > 0.5


def _grid0(rng, shape):
    return rng.integers(-4, 5, shape) * 0.5 + rng.uniform(-0.05, 0.05, shape)


def _grid1(rng, shape):
    # offset by a quarter step from grid0: |grid0 - grid1| >= 0.15, no ties for maximum/minimum
    return rng.integers(-4, 4, shape) * 0.5 + 0.25 + rng.uniform(-0.05, 0.05, shape)


def _gt1(rng, shape):
    return rng.uniform(1.2, 3.0, shape)


def _absdist(rng, shape):
    n = int(np.prod(shape, dtype=np.int64))
    grid = rng.permutation(n) * 0.5 + 0.3 + rng.uniform(0, 0.05, n)
    return (rng.choice([-1.0, 1.0], n) * grid).reshape(shape)


DOMAINS = {"real": _real, "pos": _pos, "unit": _unit, "prob": _prob, "away": _away,
           "frac": _frac, "distinct": _distinct, "large": _large, "mat": _mat,
           "matneg": _matneg, "clipx": _clipx, "bool": _bool, "grid0": _grid0, "grid1": _grid1,
           "gt1": _gt1, "absdist": _absdist}


def rng_for(case: OpCase, seed: int = 0) -> np.random.Generator:
    """A generator seeded from the case name (stable across runs and processes)."""
    return np.random.default_rng([zlib.crc32(case.name.encode()), seed])


def make_inputs(case: OpCase, dtype=np.float64, rng: np.random.Generator | None = None) -> list:
    """The arguments of ``case`` as NumPy arrays: floating ones in ``dtype``, labels and masks as
    they are.  Deterministic for a given ``rng`` (default: :func:`rng_for`)."""
    if rng is None:
        rng = rng_for(case)
    arrays = []
    for shape, domain in case.args:
        if isinstance(domain, str) and domain.startswith("labels:"):
            arrays.append(rng.integers(0, int(domain.split(":")[1]), shape).astype(np.int64))
        elif callable(domain):
            arrays.append(np.asarray(domain(rng, shape)))
        else:
            arrays.append(np.asarray(DOMAINS[domain](rng, shape)))
    if case.fix is not None:
        arrays = list(case.fix(arrays))
    return [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]


def close(actual, expected, rtol, atol, what=""):
    """``assert_allclose`` in float64 with ``atol`` scaled by the expected values' magnitude."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, err_msg=what)


def leaf_tensors(case: OpCase, arrays) -> list:
    """The case's inputs as Tensors, those it differentiates requiring grad."""
    return [fg.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]


def as_list(out) -> list:
    """An op's output(s) as a list (``split`` and ``slogdet`` give several)."""
    return list(out) if isinstance(out, (list, tuple)) else [out]


# ---- the table ---------------------------------------------------------------------------------
CASES: list[OpCase] = []


def case(name, op, fn, args, ref, torch=None, diff=None, **kw):
    args = tuple((tuple(s), d) for s, d in args)
    if diff is None:
        diff = tuple(i for i, (_, d) in enumerate(args)
                     if not (d == "bool" or (isinstance(d, str) and d.startswith("labels"))))
    CASES.append(OpCase(name, op, fn, args, ref, torch, tuple(diff), **kw))


def _t():
    import torch
    return torch


# elementwise unary: (name, domain, numpy reference, torch equivalent, zero gradient)
UNARY = [
    ("negative", "real", np.negative, lambda x: -x),
    ("abs", "away", np.abs, lambda x: _t().abs(x)),
    ("exp", "real", np.exp, lambda x: _t().exp(x)),
    ("expm1", "real", np.expm1, lambda x: _t().expm1(x)),
    ("log", "pos", np.log, lambda x: _t().log(x)),
    ("log1p", "pos", np.log1p, lambda x: _t().log1p(x)),
    ("sqrt", "pos", np.sqrt, lambda x: _t().sqrt(x)),
    ("square", "real", np.square, lambda x: _t().square(x)),
    ("reciprocal", "away", np.reciprocal, lambda x: _t().reciprocal(x)),
    ("sin", "real", np.sin, lambda x: _t().sin(x)),
    ("cos", "real", np.cos, lambda x: _t().cos(x)),
    ("tan", "unit", np.tan, lambda x: _t().tan(x)),
    ("tanh", "real", np.tanh, lambda x: _t().tanh(x)),
    ("sinh", "real", np.sinh, lambda x: _t().sinh(x)),
    ("cosh", "real", np.cosh, lambda x: _t().cosh(x)),
    ("arctan", "real", np.arctan, lambda x: _t().arctan(x)),
    ("sigmoid", "real", sps.expit, lambda x: _t().sigmoid(x)),
    ("relu", "away", lambda x: np.maximum(x, 0), lambda x: _t().relu(x)),
    ("softplus", "real", lambda x: np.logaddexp(0, x), lambda x: _t().nn.functional.softplus(x)),
    ("erf", "real", sps.erf, lambda x: _t().special.erf(x)),
    ("sign", "away", np.sign, lambda x: _t().sign(x)),
    ("floor", "frac", np.floor, lambda x: _t().floor(x)),
    ("ceil", "frac", np.ceil, lambda x: _t().ceil(x)),
    ("rint", "frac", np.rint, lambda x: _t().round(x)),
    ("trunc", "frac", np.trunc, lambda x: _t().trunc(x)),
    ("round", "frac", np.round, lambda x: _t().round(x)),
    ("log10", "pos", np.log10, lambda x: _t().log10(x)),
    ("log2", "pos", np.log2, lambda x: _t().log2(x)),
    ("exp2", "real", np.exp2, lambda x: _t().exp2(x)),
    ("arcsin", "unit", np.arcsin, lambda x: _t().asin(x)),
    ("arccos", "unit", np.arccos, lambda x: _t().acos(x)),
    ("arcsinh", "real", np.arcsinh, lambda x: _t().asinh(x)),
    ("arccosh", "gt1", np.arccosh, lambda x: _t().acosh(x)),
    ("arctanh", "unit", np.arctanh, lambda x: _t().atanh(x)),
    ("deg2rad", "real", np.deg2rad, lambda x: _t().deg2rad(x)),
    ("rad2deg", "real", np.rad2deg, lambda x: _t().rad2deg(x)),
]
ZERO_GRAD_OPS = ("sign", "floor", "ceil", "rint", "trunc", "round")

for _name, _dom, _ref, _tor in UNARY:
    for _shape, _sfx in (((3, 4), ""), ((), "_0d")):
        case(f"{_name}{_sfx}", _name, getattr(fg, _name), [(_shape, _dom)], _ref, _tor,
             zero_grad=_name in ZERO_GRAD_OPS)

# method and operator forms
case("neg_operator", "negative", lambda x: -x, [((3,), "real")], np.negative, lambda x: -x)
case("abs_builtin", "abs", lambda x: abs(x), [((3,), "away")], np.abs, lambda x: abs(x))
case("exp_method", "exp", lambda x: x.exp(), [((2, 3), "real")], np.exp, lambda x: x.exp(),
     tensor_only=True)
case("rpow_scalar", "power", lambda x: 2.0 ** x, [((4,), "real")], lambda x: 2.0 ** x,
     lambda x: 2.0 ** x)
case("pow_int_scalar", "power", lambda x: x ** 3, [((4,), "real")], lambda x: x ** 3,
     lambda x: x ** 3)
case("pow_half", "power", lambda x: x ** 0.5, [((4,), "pos")], np.sqrt, lambda x: x ** 0.5)
case("rsub_scalar", "subtract", lambda x: 1.0 - x, [((4,), "real")], lambda x: 1.0 - x,
     lambda x: 1.0 - x)
case("rdiv_scalar", "divide", lambda x: 1.0 / x, [((4,), "away")], lambda x: 1.0 / x,
     lambda x: 1.0 / x)
case("mul_scalar", "multiply", lambda x: x * 3.0 + 1.0, [((4,), "real")],
     lambda x: x * 3.0 + 1.0, lambda x: x * 3.0 + 1.0)

# elementwise binary with broadcasting pairs
BINARY = [
    ("add", ("real", "real"), np.add, lambda a, b: a + b),
    ("subtract", ("real", "real"), np.subtract, lambda a, b: a - b),
    ("multiply", ("real", "real"), np.multiply, lambda a, b: a * b),
    ("divide", ("real", "away"), np.divide, lambda a, b: a / b),
    ("power", ("pos", "real"), np.power, lambda a, b: _t().pow(a, b)),
    ("maximum", ("grid0", "grid1"), np.maximum, lambda a, b: _t().maximum(a, b)),
    ("minimum", ("grid0", "grid1"), np.minimum, lambda a, b: _t().minimum(a, b)),
    ("logaddexp", ("real", "real"), np.logaddexp, lambda a, b: _t().logaddexp(a, b)),
    ("hypot", ("real", "real"), np.hypot, lambda a, b: _t().hypot(a, b)),
]
BROADCAST_PAIRS = [((3, 4), (3, 4), ""), ((3, 4), (4,), "_bc_row"), ((2, 1, 4), (3, 1), "_bc_3d"),
                   ((), (3,), "_bc_0d_left"), ((3, 4), (), "_bc_0d_right")]
for _name, (_da, _db), _ref, _tor in BINARY:
    for _sa, _sb, _sfx in BROADCAST_PAIRS:
        case(f"{_name}{_sfx}", _name, getattr(fg, _name), [(_sa, _da), (_sb, _db)], _ref, _tor)
case("add_operator", "add", lambda a, b: a + b, [((3, 4), "real"), ((4,), "real")], np.add,
     lambda a, b: a + b)
case("sub_operator", "subtract", lambda a, b: a - b, [((3, 1), "real"), ((4,), "real")],
     np.subtract, lambda a, b: a - b)
case("mul_operator", "multiply", lambda a, b: a * b, [((3, 4), "real"), ((3, 1), "real")],
     np.multiply, lambda a, b: a * b)
case("div_operator", "divide", lambda a, b: a / b, [((3, 4), "real"), ((4,), "away")],
     np.divide, lambda a, b: a / b)
case("pow_operator", "power", lambda a, b: a ** b, [((3, 4), "pos"), ((4,), "real")],
     np.power, lambda a, b: a ** b)
case("pow_negative_base", "power", lambda a: fg.power(a, 2.0), [((5,), "away")],
     lambda a: np.power(a, 2.0), lambda a: _t().pow(a, 2.0))
case("maximum_scalar", "maximum", lambda a: fg.maximum(a, 0.0), [((3, 4), "away")],
     lambda a: np.maximum(a, 0.0), lambda a: _t().clamp(a, min=0.0))

# selection
case("where", "where", fg.where, [((3, 4), "bool"), ((3, 4), "real"), ((3, 4), "real")],
     np.where, lambda c, a, b: _t().where(c, a, b))
case("where_bc", "where", fg.where, [((3, 1), "bool"), ((3, 4), "real"), ((4,), "real")],
     np.where, lambda c, a, b: _t().where(c, a, b))
case("where_scalar_branch", "where", lambda c, a: fg.where(c, a, 0.0),
     [((3, 4), "bool"), ((3, 4), "real")], lambda c, a: np.where(c, a, 0.0),
     lambda c, a: _t().where(c, a, _t().zeros((), dtype=a.dtype)))
case("clip", "clip", lambda x: fg.clip(x, -0.5, 0.5), [((3, 4), "clipx")],
     lambda x: np.clip(x, -0.5, 0.5), lambda x: _t().clamp(x, -0.5, 0.5))
case("clip_lower_only", "clip", lambda x: fg.clip(x, -0.5, None), [((3, 4), "clipx")],
     lambda x: np.clip(x, -0.5, None), lambda x: _t().clamp(x, min=-0.5))
case("clip_method", "clip", lambda x: x.clip(-0.5, 0.5), [((6,), "clipx")],
     lambda x: np.clip(x, -0.5, 0.5), lambda x: _t().clamp(x, -0.5, 0.5))


def _clip_bounds_fix(arrays):
    x, lo, hi = arrays
    lo = -np.abs(lo) - 0.2
    hi = np.abs(hi) + 0.2
    x = np.where(np.abs(x - lo) < 0.1, x + 0.25, x)
    x = np.where(np.abs(x - hi) < 0.1, x - 0.25, x)
    return [x, lo, hi]


case("clip_array_bounds", "clip", fg.clip, [((3, 4), lambda r, s: 2 * r.standard_normal(s)),
                                             ((4,), "real"), ((3, 1), "real")],
     np.clip, lambda x, lo, hi: _t().clamp(x, lo, hi), fix=_clip_bounds_fix)


# ---- reductions ------------------------------------------------------------------------------
def _tdims(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return axis if isinstance(axis, tuple) else (axis,)


def _torch_reduce(name, axis, keepdims, ddof=0):
    def f(x):
        t = _t()
        dims = _tdims(axis, x.ndim)
        if x.ndim == 0:
            dims = ()
        if name == "sum":
            return t.sum(x, dim=dims, keepdim=keepdims) if dims else x.clone()
        if name == "mean":
            return t.mean(x, dim=dims, keepdim=keepdims) if dims else x.clone()
        if name == "max":
            return t.amax(x, dim=dims, keepdim=keepdims) if dims else x.clone()
        if name == "min":
            return t.amin(x, dim=dims, keepdim=keepdims) if dims else x.clone()
        if name == "logsumexp":
            return t.logsumexp(x, dim=dims, keepdim=keepdims) if dims else x.clone()
        if name in ("var", "std"):
            fn = t.var if name == "var" else t.std
            if not dims:
                return fn(x.reshape(1), dim=0, correction=ddof)
            return fn(x, dim=dims, correction=ddof, keepdim=keepdims)
        if name == "prod":
            out = x
            for d in sorted((d % max(x.ndim, 1) for d in dims), reverse=True):
                out = t.prod(out, dim=d, keepdim=keepdims)
            return out
        raise AssertionError(name)
    return f


def _np_logsumexp(x, axis=None, keepdims=False):
    return sps.logsumexp(x, axis=axis, keepdims=keepdims)


REDUCTIONS = [("sum", "real", np.sum), ("mean", "real", np.mean), ("prod", "away", np.prod),
              ("max", "distinct", np.max), ("min", "distinct", np.min), ("var", "real", np.var),
              ("std", "real", np.std), ("logsumexp", "real", _np_logsumexp)]
REDUCTION_CONFIGS = [((2, 3, 4), None, False), ((2, 3, 4), None, True), ((2, 3, 4), 1, False),
                     ((2, 3, 4), -1, True), ((2, 3, 4), (0, 2), False),
                     ((2, 3, 4), (0, 2), True), ((5,), 0, False), ((), None, False)]


def _axis_id(axis):
    if axis is None:
        return "all"
    if isinstance(axis, tuple):
        return "ax" + "".join(str(a) for a in axis)
    return f"ax{axis}".replace("-", "m")


for _name, _dom, _ref in REDUCTIONS:
    for _shape, _axis, _keep in REDUCTION_CONFIGS:
        if _name == "std" and _shape == ():
            continue  # the derivative of sqrt at 0 is infinite
        _id = f"{_name}_{len(_shape)}d_{_axis_id(_axis)}{'_keep' if _keep else ''}"
        case(_id, _name,
             (lambda n, a, k: lambda x: getattr(fg, n)(x, axis=a, keepdims=k))(_name, _axis, _keep),
             [(_shape, _dom)],
             (lambda r, a, k: lambda x: r(x, axis=a, keepdims=k))(_ref, _axis, _keep),
             _torch_reduce(_name, _axis, _keep))
for _name in ("var", "std"):
    case(f"{_name}_ddof1", _name, (lambda n: lambda x: getattr(fg, n)(x, axis=0, ddof=1))(_name),
         [((4, 3), "real")], (lambda n: lambda x: getattr(np, n)(x, axis=0, ddof=1))(_name),
         _torch_reduce(_name, 0, False, ddof=1))
case("sum_method", "sum", lambda x: x.sum(axis=0), [((3, 4), "real")],
     lambda x: x.sum(axis=0), lambda x: x.sum(dim=0))
case("mean_method_keep", "mean", lambda x: x.mean(axis=1, keepdims=True), [((3, 4), "real")],
     lambda x: x.mean(axis=1, keepdims=True), lambda x: x.mean(dim=1, keepdim=True))
case("max_ties", "max", lambda x: fg.max(x, axis=1),
     [((2, 3), lambda r, s: np.array([[1.0, 3.0, 3.0], [2.0, -1.0, 0.5]]))],
     lambda x: np.max(x, axis=1), lambda x: _t().amax(x, dim=1), order2=False)
# (finite differences are invalid at a tie; the gradient there is checked against torch's amax)


# ---- linear algebra --------------------------------------------------------------------------
MATMUL_SHAPES = [((3, 4), (4, 2), ""), ((2, 3, 4), (4, 2), "_batched_bc"),
                 ((2, 3, 4), (2, 4, 5), "_batched"), ((2, 1, 3, 4), (3, 4, 2), "_bc4d"),
                 ((4,), (4,), "_vv"), ((4,), (4, 2), "_vm"), ((3, 4), (4,), "_mv"),
                 ((2, 3, 4), (4,), "_batched_mv"), ((4,), (2, 4, 3), "_vbatched")]
for _sa, _sb, _sfx in MATMUL_SHAPES:
    case(f"matmul{_sfx}", "matmul", fg.matmul, [(_sa, "real"), (_sb, "real")], np.matmul,
         lambda a, b: _t().matmul(a, b))
case("matmul_operator", "matmul", lambda a, b: a @ b, [((3, 4), "real"), ((4, 2), "real")],
     np.matmul, lambda a, b: a @ b)
case("dot_vv", "dot", fg.dot, [((4,), "real"), ((4,), "real")], np.dot,
     lambda a, b: _t().dot(a, b))
case("dot_mv", "dot", fg.dot, [((3, 4), "real"), ((4,), "real")], np.dot,
     lambda a, b: _t().mv(a, b))
case("dot_mm", "dot", fg.dot, [((3, 4), "real"), ((4, 2), "real")], np.dot,
     lambda a, b: _t().mm(a, b))
case("dot_scalar", "dot", fg.dot, [((), "real"), ((3,), "real")], np.dot,
     lambda a, b: a * b)
case("outer", "outer", fg.outer, [((3,), "real"), ((4,), "real")], np.outer,
     lambda a, b: _t().outer(a, b))
EINSUMS = [("ij,jk->ik", ((3, 4), (4, 2)), "mm"), ("bij,bjk->bik", ((2, 3, 4), (2, 4, 2)), "bmm"),
           ("ij->", ((3, 4),), "total"), ("ij->ji", ((3, 4),), "transpose"),
           ("i,i->", ((4,), (4,)), "inner"), ("ij,ij->i", ((3, 4), (3, 4)), "rowdot"),
           ("ij,jk", ((3, 4), (4, 2)), "implicit"), ("i,j->ij", ((3,), (4,)), "outer"),
           ("ijk,k->ij", ((2, 3, 4), (4,)), "contract_last"), ("ij,j->ij", ((3, 4), (4,)), "scale"),
           ("ij,k->i", ((3, 4), (2,)), "sum_unused")]
for _spec, _shapes, _id in EINSUMS:
    case(f"einsum_{_id}", "einsum", (lambda s: lambda *xs: fg.einsum(s, *xs))(_spec),
         [(s, "real") for s in _shapes], (lambda s: lambda *xs: np.einsum(s, *xs))(_spec),
         (lambda s: lambda *xs: _t().einsum(s, *xs))(_spec))

case("inv", "inv", fg.linalg.inv, [((3, 3), "mat")], np.linalg.inv,
     lambda a: _t().linalg.inv(a))
case("inv_batched", "inv", fg.linalg.inv, [((2, 3, 3), "mat")], np.linalg.inv,
     lambda a: _t().linalg.inv(a))
case("solve_vec", "solve", fg.linalg.solve, [((3, 3), "mat"), ((3,), "real")], np.linalg.solve,
     lambda a, b: _t().linalg.solve(a, b))
case("solve_mat", "solve", fg.linalg.solve, [((3, 3), "mat"), ((3, 2), "real")],
     np.linalg.solve, lambda a, b: _t().linalg.solve(a, b))
case("solve_batched", "solve", fg.linalg.solve, [((2, 3, 3), "mat"), ((2, 3, 2), "real")],
     np.linalg.solve, lambda a, b: _t().linalg.solve(a, b))
case("solve_broadcast_b", "solve", fg.linalg.solve, [((2, 3, 3), "mat"), ((3, 2), "real")],
     np.linalg.solve, lambda a, b: _t().linalg.solve(a, b))
case("det", "det", fg.linalg.det, [((3, 3), "mat")], np.linalg.det,
     lambda a: _t().linalg.det(a))
case("det_negative", "det", fg.linalg.det, [((3, 3), "matneg")], np.linalg.det,
     lambda a: _t().linalg.det(a))
case("det_batched", "det", fg.linalg.det, [((2, 3, 3), "mat")], np.linalg.det,
     lambda a: _t().linalg.det(a))
case("slogdet", "slogdet", lambda a: fg.linalg.slogdet(a)[1], [((3, 3), "mat")],
     lambda a: np.linalg.slogdet(a)[1], lambda a: _t().linalg.slogdet(a)[1])
case("slogdet_negative", "slogdet", lambda a: fg.linalg.slogdet(a)[1], [((3, 3), "matneg")],
     lambda a: np.linalg.slogdet(a)[1], lambda a: _t().linalg.slogdet(a)[1])
case("slogdet_batched", "slogdet", lambda a: fg.linalg.slogdet(a)[1], [((2, 3, 3), "matneg")],
     lambda a: np.linalg.slogdet(a)[1], lambda a: _t().linalg.slogdet(a)[1])
case("slogdet_sign_scaled", "slogdet", lambda a: fg.linalg.slogdet(a)[0] * fg.linalg.slogdet(a)[1],
     [((3, 3), "matneg")], lambda a: np.linalg.slogdet(a)[0] * np.linalg.slogdet(a)[1],
     lambda a: _t().linalg.slogdet(a)[0] * _t().linalg.slogdet(a)[1])


# ---- shape -----------------------------------------------------------------------------------
def _tsplit(x, sections, axis):
    t = _t()
    if isinstance(sections, int):
        return list(t.tensor_split(x, sections, dim=axis))
    return list(t.tensor_split(x, list(sections), dim=axis))


SHAPE_CASES = [
    ("reshape", "reshape", lambda x: fg.reshape(x, (3, 4)), (2, 6),
     lambda x: np.reshape(x, (3, 4)), lambda x: x.reshape(3, 4)),
    ("reshape_minus1", "reshape", lambda x: fg.reshape(x, (-1, 2)), (2, 3, 2),
     lambda x: np.reshape(x, (-1, 2)), lambda x: x.reshape(-1, 2)),
    ("reshape_method_ints", "reshape", lambda x: x.reshape(4, 3), (2, 6),
     lambda x: x.reshape(4, 3), lambda x: x.reshape(4, 3)),
    ("reshape_to_0d", "reshape", lambda x: fg.reshape(x, ()), (1, 1),
     lambda x: np.reshape(x, ()), lambda x: x.reshape(())),
    ("ravel", "reshape", fg.ravel, (2, 3), np.ravel, lambda x: x.reshape(-1)),
    ("transpose", "transpose", fg.transpose, (2, 3, 4), np.transpose, lambda x: x.permute(2, 1, 0)),
    ("transpose_axes", "transpose", lambda x: fg.transpose(x, (1, 2, 0)), (2, 3, 4),
     lambda x: np.transpose(x, (1, 2, 0)), lambda x: x.permute(1, 2, 0)),
    ("transpose_T", "transpose", lambda x: x.T, (3, 4), lambda x: x.T, lambda x: x.T),
    ("swapaxes", "swapaxes", lambda x: fg.swapaxes(x, 0, 2), (2, 3, 4),
     lambda x: np.swapaxes(x, 0, 2), lambda x: x.transpose(0, 2)),
    ("swapaxes_negative", "swapaxes", lambda x: fg.swapaxes(x, -1, -2), (2, 3, 4),
     lambda x: np.swapaxes(x, -1, -2), lambda x: x.transpose(-1, -2)),
    ("expand_dims", "expand_dims", lambda x: fg.expand_dims(x, 1), (3, 4),
     lambda x: np.expand_dims(x, 1), lambda x: x.unsqueeze(1)),
    ("expand_dims_tuple", "expand_dims", lambda x: fg.expand_dims(x, (0, -1)), (3, 4),
     lambda x: np.expand_dims(x, (0, -1)), lambda x: x.unsqueeze(0).unsqueeze(-1)),
    ("squeeze", "squeeze", fg.squeeze, (3, 1, 4, 1), np.squeeze, lambda x: x.squeeze()),
    ("squeeze_axis", "squeeze", lambda x: fg.squeeze(x, 1), (3, 1, 4, 1),
     lambda x: np.squeeze(x, 1), lambda x: x.squeeze(1)),
    ("broadcast_to", "broadcast_to", lambda x: fg.broadcast_to(x, (2, 3, 4)), (3, 1),
     lambda x: np.broadcast_to(x, (2, 3, 4)), lambda x: x.expand(2, 3, 4)),
    ("broadcast_to_0d", "broadcast_to", lambda x: fg.broadcast_to(x, (3,)), (),
     lambda x: np.broadcast_to(x, (3,)), lambda x: x.expand(3)),
    ("split_sections", "split", lambda x: fg.split(x, 3, axis=1), (2, 6),
     lambda x: np.split(x, 3, axis=1), lambda x: _tsplit(x, 3, 1)),
    ("split_indices", "split", lambda x: fg.split(x, [1, 3]), (5, 2),
     lambda x: np.split(x, [1, 3]), lambda x: _tsplit(x, (1, 3), 0)),
    ("split_negative_axis", "split", lambda x: fg.split(x, 2, axis=-1), (3, 4),
     lambda x: np.split(x, 2, axis=-1), lambda x: _tsplit(x, 2, -1)),
]
for _id, _op, _fn, _shape, _ref, _tor in SHAPE_CASES:
    case(_id, _op, _fn, [(_shape, "real")], _ref, _tor)

case("concatenate", "concatenate", lambda a, b: fg.concatenate([a, b]),
     [((2, 3), "real"), ((4, 3), "real")], lambda a, b: np.concatenate([a, b]),
     lambda a, b: _t().cat([a, b]))
case("concatenate_axis1_three", "concatenate", lambda a, b, c: fg.concatenate((a, b, c), axis=1),
     [((2, 3), "real"), ((2, 1), "real"), ((2, 2), "real")],
     lambda a, b, c: np.concatenate((a, b, c), axis=1), lambda a, b, c: _t().cat((a, b, c), 1))
case("concatenate_same_twice", "concatenate", lambda a: fg.concatenate([a, a * 2.0], axis=-1),
     [((2, 3), "real")], lambda a: np.concatenate([a, a * 2.0], axis=-1),
     lambda a: _t().cat([a, a * 2.0], -1))
case("stack", "stack", lambda a, b: fg.stack([a, b]), [((2, 3), "real"), ((2, 3), "real")],
     lambda a, b: np.stack([a, b]), lambda a, b: _t().stack([a, b]))
case("stack_axis_last", "stack", lambda a, b, c: fg.stack([a, b, c], axis=-1),
     [((2, 3), "real"), ((2, 3), "real"), ((2, 3), "real")],
     lambda a, b, c: np.stack([a, b, c], axis=-1), lambda a, b, c: _t().stack([a, b, c], -1))
case("stack_0d", "stack", lambda a, b: fg.stack([a, b]), [((), "real"), ((), "real")],
     lambda a, b: np.stack([a, b]), lambda a, b: _t().stack([a, b]))

# indexing (constants live at module level so the torch lambdas see the same index)
IDX_REPEAT = np.array([0, 2, 0, 1, 2, 2])
IDX_ROWS = np.array([1, 1, 0])
IDX_COLS = np.array([3, 3, 2])
MASK = np.array([[True, False, True, False], [False, False, True, True],
                 [True, True, False, False]])
ROW_MASK = np.array([True, False, True])


def _ti(a):
    return _t().as_tensor(a)


INDEX_CASES = [
    ("index_int", lambda x: x[1], lambda x: x[1]),
    ("index_int_pair_0d", lambda x: x[2, -1], lambda x: x[2, -1]),
    ("index_slice", lambda x: x[1:, ::2], lambda x: x[1:, ::2]),
    ("index_slice_negative_step", lambda x: x[::-1, 1:3], lambda x: _t().flip(x, [0])[:, 1:3]),
    ("index_ellipsis_newaxis", lambda x: x[None, ..., 1], lambda x: x[None, ..., 1]),
    ("index_int_array_repeated", lambda x: x[IDX_REPEAT], lambda x: x[_ti(IDX_REPEAT)]),
    ("index_int_array_list", lambda x: x[[2, 2, 0]], lambda x: x[[2, 2, 0]]),
    ("index_int_arrays_pairs", lambda x: x[IDX_ROWS, IDX_COLS],
     lambda x: x[_ti(IDX_ROWS), _ti(IDX_COLS)]),
    ("index_int_array_and_slice", lambda x: x[IDX_REPEAT, 1:], lambda x: x[_ti(IDX_REPEAT), 1:]),
    ("index_slice_and_int_array", lambda x: x[:, IDX_COLS], lambda x: x[:, _ti(IDX_COLS)]),
    ("index_bool_mask", lambda x: x[MASK], lambda x: x[_ti(MASK)]),
    ("index_bool_rows", lambda x: x[ROW_MASK], lambda x: x[_ti(ROW_MASK)]),
    ("index_bool_rows_and_slice", lambda x: x[ROW_MASK, 1:], lambda x: x[_ti(ROW_MASK), 1:]),
    ("index_bool_rows_and_int_array", lambda x: x[ROW_MASK, IDX_COLS[:2]],
     lambda x: x[_ti(ROW_MASK), _ti(IDX_COLS[:2])]),
    ("index_ellipsis_int_array", lambda x: x[..., IDX_COLS], lambda x: x[..., _ti(IDX_COLS)]),
    ("index_np_integer", lambda x: x[np.int64(1), np.int64(-2)], lambda x: x[1, -2]),
    ("index_list_pairs", lambda x: x[[0, 2, 0], [1, 1, 1]], lambda x: x[[0, 2, 0], [1, 1, 1]]),
    ("index_empty_mask", lambda x: x[np.zeros((3, 4), bool)],
     lambda x: x[_ti(np.zeros((3, 4), bool))]),
]
for _id, _fn, _tor in INDEX_CASES:
    case(_id, "getitem", _fn, [((3, 4), "real")], _fn, _tor)
case("index_getitem_fn_of_method_chain", "getitem", lambda x: (x * 2.0)[MASK].sum(),
     [((3, 4), "real")], lambda x: (x * 2.0)[MASK].sum(), lambda x: (x * 2.0)[_ti(MASK)].sum())


# ---- neural-network helpers ------------------------------------------------------------------
def _np_ce(logits, labels):
    return -np.mean(sps.log_softmax(logits, axis=-1)[np.arange(len(labels)), labels])


case("softmax", "softmax", fg.softmax, [((3, 5), "real")], lambda x: sps.softmax(x, axis=-1),
     lambda x: _t().softmax(x, -1))
case("softmax_axis0", "softmax", lambda x: fg.softmax(x, axis=0), [((3, 5), "real")],
     lambda x: sps.softmax(x, axis=0), lambda x: _t().softmax(x, 0))
case("softmax_large", "softmax", fg.softmax, [((2, 4), "large")],
     lambda x: sps.softmax(x, axis=-1), lambda x: _t().softmax(x, -1))
case("softmax_1d", "softmax", fg.softmax, [((5,), "real")], lambda x: sps.softmax(x),
     lambda x: _t().softmax(x, -1))
case("log_softmax", "log_softmax", fg.log_softmax, [((3, 5), "real")],
     lambda x: sps.log_softmax(x, axis=-1), lambda x: _t().log_softmax(x, -1))
case("log_softmax_axis0", "log_softmax", lambda x: fg.log_softmax(x, axis=0), [((3, 5), "real")],
     lambda x: sps.log_softmax(x, axis=0), lambda x: _t().log_softmax(x, 0))
case("log_softmax_large", "log_softmax", fg.log_softmax, [((2, 4), "large")],
     lambda x: sps.log_softmax(x, axis=-1), lambda x: _t().log_softmax(x, -1))
case("cross_entropy", "cross_entropy", fg.cross_entropy, [((4, 3), "real"), ((4,), "labels:3")],
     _np_ce, lambda x, y: _t().nn.functional.cross_entropy(x, y))
case("cross_entropy_large", "cross_entropy", fg.cross_entropy,
     [((5, 4), "large"), ((5,), "labels:4")], _np_ce,
     lambda x, y: _t().nn.functional.cross_entropy(x, y))

# ---- fastgraph.scipy.special -----------------------------------------------------------------
case("special_erf", "special.erf", fgs.erf, [((3, 4), "real")], sps.erf,
     lambda x: _t().special.erf(x))
case("special_erfc", "special.erfc", fgs.erfc, [((3, 4), "real")], sps.erfc,
     lambda x: _t().special.erfc(x))
case("special_erfc_0d", "special.erfc", fgs.erfc, [((), "real")], sps.erfc,
     lambda x: _t().special.erfc(x))
case("special_expit", "special.expit", fgs.expit, [((3, 4), "real")], sps.expit,
     lambda x: _t().special.expit(x))
case("special_logit", "special.logit", fgs.logit, [((3, 4), "prob")], sps.logit,
     lambda x: _t().special.logit(x))
case("special_gammaln", "special.gammaln", fgs.gammaln, [((3, 4), "pos")], sps.gammaln,
     lambda x: _t().special.gammaln(x))
case("special_digamma", "special.digamma", fgs.digamma, [((3, 4), "pos")], sps.digamma,
     lambda x: _t().special.digamma(x))
case("special_logsumexp", "special.logsumexp", fgs.logsumexp, [((3, 4), "real")],
     sps.logsumexp, lambda x: _t().logsumexp(x, dim=(0, 1)))
case("special_logsumexp_axis", "special.logsumexp", lambda x: fgs.logsumexp(x, axis=1),
     [((3, 4), "large")], lambda x: sps.logsumexp(x, axis=1), lambda x: _t().logsumexp(x, 1))
case("special_xlogy", "special.xlogy", fgs.xlogy, [((3, 4), "real"), ((3, 4), "pos")],
     sps.xlogy, lambda x, y: _t().special.xlogy(x, y))
case("special_xlogy_bc", "special.xlogy", fgs.xlogy, [((3, 1), "real"), ((4,), "pos")],
     sps.xlogy, lambda x, y: _t().special.xlogy(x, y))


# ---- NumPy's other common functions (remainder, scans, reordering, diagonals, tensordot, norm) --
def _remainder_fix(arrays):
    # x / y at least 0.2 away from an integer: np.remainder is discontinuous there
    x, y = arrays
    q = x / y
    k = np.floor(q)
    return [(k + 0.2 + 0.6 * (q - k)) * y, y]


for _sa, _sb, _sfx in [((3, 4), (3, 4), ""), ((3, 4), (4,), "_bc_row"), ((3, 4), (), "_bc_0d_right")]:
    case(f"remainder{_sfx}", "remainder", fg.remainder, [(_sa, "real"), (_sb, "away")],
         np.remainder, lambda a, b: _t().remainder(a, b), fix=_remainder_fix)
case("mod_operator", "remainder", lambda a, b: a % b, [((3, 4), "real"), ((4,), "away")],
     np.remainder, lambda a, b: a % b, fix=_remainder_fix)
case("mod_scalar", "remainder", lambda a: a % 0.7,
     [((3, 4), lambda r, s: 0.7 * (r.integers(-3, 3, s) + r.uniform(0.2, 0.8, s)))],
     lambda a: np.remainder(a, 0.7), lambda a: a % 0.7)
case("rmod_scalar", "remainder", lambda a: 2.5 % a,
     [((5,), lambda r, s: 2.5 / (r.integers(1, 4, s) + r.uniform(0.2, 0.8, s)))],
     lambda a: np.remainder(2.5, a),
     lambda a: _t().remainder(_t().tensor(2.5, dtype=a.dtype), a))  # (torch: no VJP for 2.5 % a)
case("np_mod", "remainder", fg.mod, [((3, 4), "real"), ((3, 4), "away")], np.mod,
     lambda a, b: _t().remainder(a, b), fix=_remainder_fix)


def _tnorm(ord=None, dim=None, keepdim=False):
    return lambda x: _t().linalg.norm(x, ord, dim, keepdim)


def _tvnorm(ord=2, dim=None, keepdim=False):
    return lambda x: _t().linalg.vector_norm(x, ord, dim, keepdim)


def _tflat_repeat(r):
    return lambda x: _t().repeat_interleave(x.reshape(-1), r)


def _tatleast(n):
    return lambda x: getattr(_t(), f"atleast_{n}d")(x)


NUMPY_EXTRA = [
    # (id, op, fg fn, shape, domain, numpy ref, torch)
    ("cumsum_flat", "cumsum", fg.cumsum, (3, 4), "real", np.cumsum,
     lambda x: _t().cumsum(x.reshape(-1), 0)),
    ("cumsum_axis1", "cumsum", lambda x: fg.cumsum(x, 1), (3, 4), "real",
     lambda x: np.cumsum(x, 1), lambda x: _t().cumsum(x, 1)),
    ("cumsum_axis_m2", "cumsum", lambda x: fg.cumsum(x, axis=-2), (2, 3, 4), "real",
     lambda x: np.cumsum(x, axis=-2), lambda x: _t().cumsum(x, -2)),
    ("cumsum_0d", "cumsum", fg.cumsum, (), "real", np.cumsum, lambda x: x.reshape(1)),
    ("cumsum_method", "cumsum", lambda x: x.cumsum(0), (5,), "real", lambda x: x.cumsum(0),
     lambda x: x.cumsum(0)),
    ("diff", "diff", fg.diff, (3, 5), "real", np.diff, lambda x: _t().diff(x)),
    ("diff_n2_axis0", "diff", lambda x: fg.diff(x, 2, axis=0), (5, 3), "real",
     lambda x: np.diff(x, 2, axis=0), lambda x: _t().diff(x, 2, dim=0)),
    # (a float32 scalar: a Python float would promote float32 input to float64, as in NumPy)
    ("diff_prepend_scalar", "diff", lambda x: fg.diff(x, prepend=np.float32(0.5)), (3, 4),
     "real", lambda x: np.diff(x, prepend=np.float32(0.5)),
     lambda x: _t().diff(x, prepend=_t().full((3, 1), 0.5, dtype=x.dtype))),
    ("flip", "flip", fg.flip, (2, 3, 4), "real", np.flip, lambda x: _t().flip(x, (0, 1, 2))),
    ("flip_axis", "flip", lambda x: fg.flip(x, 1), (2, 3, 4), "real", lambda x: np.flip(x, 1),
     lambda x: _t().flip(x, (1,))),
    ("flip_axes", "flip", lambda x: fg.flip(x, (0, -1)), (2, 3, 4), "real",
     lambda x: np.flip(x, (0, -1)), lambda x: _t().flip(x, (0, -1))),
    ("roll_flat", "roll", lambda x: fg.roll(x, 5), (3, 4), "real", lambda x: np.roll(x, 5),
     lambda x: _t().roll(x, 5)),
    ("roll_axes", "roll", lambda x: fg.roll(x, (1, -2), axis=(0, 1)), (3, 4), "real",
     lambda x: np.roll(x, (1, -2), axis=(0, 1)), lambda x: _t().roll(x, (1, -2), (0, 1))),
    ("roll_axis_m1", "roll", lambda x: fg.roll(x, 2, axis=-1), (2, 3, 4), "real",
     lambda x: np.roll(x, 2, axis=-1), lambda x: _t().roll(x, 2, -1)),
    ("moveaxis", "moveaxis", lambda x: fg.moveaxis(x, 0, -1), (2, 3, 4), "real",
     lambda x: np.moveaxis(x, 0, -1), lambda x: _t().movedim(x, 0, -1)),
    ("moveaxis_two", "moveaxis", lambda x: fg.moveaxis(x, (0, 1), (2, 0)), (2, 3, 4), "real",
     lambda x: np.moveaxis(x, (0, 1), (2, 0)), lambda x: _t().movedim(x, (0, 1), (2, 0))),
    ("repeat_flat", "repeat", lambda x: fg.repeat(x, 2), (2, 3), "real",
     lambda x: np.repeat(x, 2), _tflat_repeat(2)),
    ("repeat_axis", "repeat", lambda x: fg.repeat(x, 3, axis=0), (2, 3), "real",
     lambda x: np.repeat(x, 3, axis=0), lambda x: _t().repeat_interleave(x, 3, 0)),
    ("repeat_counts", "repeat", lambda x: fg.repeat(x, [1, 0, 2], axis=-1), (2, 3), "real",
     lambda x: np.repeat(x, [1, 0, 2], axis=-1),
     lambda x: _t().repeat_interleave(x, _t().tensor([1, 0, 2]), -1)),
    ("repeat_0d", "repeat", lambda x: fg.repeat(x, 3), (), "real", lambda x: np.repeat(x, 3),
     _tflat_repeat(3)),
    ("repeat_method", "repeat", lambda x: x.repeat(2, axis=1), (2, 3), "real",
     lambda x: x.repeat(2, axis=1), lambda x: _t().repeat_interleave(x, 2, 1)),
    ("tile", "tile", lambda x: fg.tile(x, 2), (2, 3), "real", lambda x: np.tile(x, 2),
     lambda x: _t().tile(x, (2,))),
    ("tile_more_dims", "tile", lambda x: fg.tile(x, (2, 1, 2)), (3,), "real",
     lambda x: np.tile(x, (2, 1, 2)), lambda x: _t().tile(x, (2, 1, 2))),
    ("tile_3d", "tile", lambda x: fg.tile(x, (2, 3)), (2, 1, 3), "real",
     lambda x: np.tile(x, (2, 3)), lambda x: _t().tile(x, (2, 3))),
    ("atleast_1d_0d", "atleast_1d", fg.atleast_1d, (), "real", np.atleast_1d, _tatleast(1)),
    ("atleast_2d_1d", "atleast_2d", fg.atleast_2d, (4,), "real", np.atleast_2d, _tatleast(2)),
    ("atleast_2d_0d", "atleast_2d", fg.atleast_2d, (), "real", np.atleast_2d, _tatleast(2)),
    ("atleast_3d_1d", "atleast_3d", fg.atleast_3d, (4,), "real", np.atleast_3d, _tatleast(3)),
    ("atleast_3d_2d", "atleast_3d", fg.atleast_3d, (2, 3), "real", np.atleast_3d,
     _tatleast(3)),
    ("diagonal", "diagonal", fg.diagonal, (3, 4), "real", np.diagonal,
     lambda x: _t().diagonal(x)),
    ("diagonal_offset_axes", "diagonal", lambda x: fg.diagonal(x, -1, 2, 0), (2, 3, 4), "real",
     lambda x: np.diagonal(x, -1, 2, 0), lambda x: _t().diagonal(x, -1, 2, 0)),
    ("diagonal_method", "diagonal", lambda x: x.diagonal(1), (4, 3), "real",
     lambda x: x.diagonal(1), lambda x: _t().diagonal(x, 1)),
    ("diag_vector", "diag", fg.diag, (3,), "real", np.diag, lambda x: _t().diag(x)),
    ("diag_vector_k", "diag", lambda x: fg.diag(x, -2), (3,), "real", lambda x: np.diag(x, -2),
     lambda x: _t().diag(x, -2)),
    ("diag_matrix_k", "diag", lambda x: fg.diag(x, 1), (3, 4), "real", lambda x: np.diag(x, 1),
     lambda x: _t().diag(x, 1)),
    ("trace", "trace", fg.trace, (3, 3), "real", np.trace, lambda x: _t().trace(x)),
    ("trace_offset_axes", "trace", lambda x: fg.trace(x, 1, 1, 2), (2, 3, 4), "real",
     lambda x: np.trace(x, 1, 1, 2), lambda x: _t().diagonal(x, 1, 1, 2).sum(-1)),
    ("trace_method", "trace", lambda x: x.trace(), (3, 4), "real", lambda x: x.trace(),
     lambda x: _t().trace(x)),
    ("triu", "triu", fg.triu, (3, 4), "real", np.triu, lambda x: _t().triu(x)),
    ("triu_batched_k", "triu", lambda x: fg.triu(x, 1), (2, 3, 4), "real",
     lambda x: np.triu(x, 1), lambda x: _t().triu(x, 1)),
    ("triu_1d", "triu", fg.triu, (4,), "real", np.triu,
     lambda x: _t().triu(x.expand(4, 4))),
    ("tril", "tril", fg.tril, (4, 3), "real", np.tril, lambda x: _t().tril(x)),
    ("tril_batched_k", "tril", lambda x: fg.tril(x, -1), (2, 3, 4), "real",
     lambda x: np.tril(x, -1), lambda x: _t().tril(x, -1)),
    ("norm_vector", "norm", fg.linalg.norm, (5,), "real", np.linalg.norm, _tnorm()),
    ("norm_frobenius", "norm", fg.linalg.norm, (3, 4), "real", np.linalg.norm, _tnorm()),
    ("norm_flat_3d_keep", "norm", lambda x: fg.linalg.norm(x, keepdims=True), (2, 3, 2), "real",
     lambda x: np.linalg.norm(x, keepdims=True), lambda x: _tvnorm()(x).reshape(1, 1, 1)),
    ("norm_axis1", "norm", lambda x: fg.linalg.norm(x, axis=1), (3, 4), "real",
     lambda x: np.linalg.norm(x, axis=1), _tvnorm(2, 1)),
    ("norm_axis_m1_keep", "norm", lambda x: fg.linalg.norm(x, axis=-1, keepdims=True), (2, 3, 4),
     "real", lambda x: np.linalg.norm(x, axis=-1, keepdims=True), _tvnorm(2, -1, True)),
    ("norm_ord1", "norm", lambda x: fg.linalg.norm(x, 1), (5,), "away",
     lambda x: np.linalg.norm(x, 1), _tvnorm(1)),
    ("norm_ord1_axis0", "norm", lambda x: fg.linalg.norm(x, 1, axis=0), (3, 4), "away",
     lambda x: np.linalg.norm(x, 1, axis=0), _tvnorm(1, 0)),
    ("norm_inf", "norm", lambda x: fg.linalg.norm(x, np.inf), (6,), "absdist",
     lambda x: np.linalg.norm(x, np.inf), _tvnorm(np.inf)),
    ("norm_minus_inf_axis", "norm", lambda x: fg.linalg.norm(x, -np.inf, axis=1), (3, 4),
     "absdist", lambda x: np.linalg.norm(x, -np.inf, axis=1), _tvnorm(-np.inf, 1)),
    ("norm_ord3", "norm", lambda x: fg.linalg.norm(x, 3), (5,), "away",
     lambda x: np.linalg.norm(x, 3), _tvnorm(3)),
    ("norm_ord_half_axis", "norm", lambda x: fg.linalg.norm(x, 0.5, axis=0), (4, 2), "away",
     lambda x: np.linalg.norm(x, 0.5, axis=0), _tvnorm(0.5, 0)),
    ("norm_fro_batched", "norm", lambda x: fg.linalg.norm(x, "fro", axis=(1, 2)), (2, 3, 4),
     "real", lambda x: np.linalg.norm(x, "fro", axis=(1, 2)), _tnorm("fro", (1, 2))),
    ("norm_matrix_1", "norm", lambda x: fg.linalg.norm(x, 1), (3, 4), "absdist",
     lambda x: np.linalg.norm(x, 1), _tnorm(1)),
    ("norm_matrix_inf_keep", "norm", lambda x: fg.linalg.norm(x, np.inf, axis=(2, 0),
                                                              keepdims=True), (3, 2, 4),
     "absdist", lambda x: np.linalg.norm(x, np.inf, axis=(2, 0), keepdims=True),
     _tnorm(np.inf, (2, 0), True)),
    ("norm_matrix_minus1", "norm", lambda x: fg.linalg.norm(x, -1), (4, 3), "absdist",
     lambda x: np.linalg.norm(x, -1), _tnorm(-1)),
]
for _id, _op, _fn, _shape, _dom, _ref, _tor in NUMPY_EXTRA:
    case(_id, _op, _fn, [(_shape, _dom)], _ref, _tor)
case("norm_ord0", "norm", lambda x: fg.linalg.norm(x, 0), [((5,), "away")],
     lambda x: np.linalg.norm(x, 0), _tvnorm(0), zero_grad=True)

STACKS = [("hstack", [(2, 3), (2, 1)]), ("hstack", [(3,), (2,)]), ("vstack", [(2, 3), (3,)]),
          ("vstack", [(4,), (4,)]), ("dstack", [(2, 3), (2, 3)]),
          ("column_stack", [(3,), (3, 2)]), ("column_stack", [(4,), (4,)])]
for _k, (_name, _shapes) in enumerate(STACKS):
    case(f"{_name}_{_k}", _name, (lambda n: lambda *xs: getattr(fg, n)(list(xs)))(_name),
         [(sh, "real") for sh in _shapes],
         (lambda n: lambda *xs: getattr(np, n)(list(xs)))(_name),
         (lambda n: lambda *xs: getattr(_t(), n)(list(xs)))(_name))

case("diff_append_array", "diff", lambda x, b: fg.diff(x, axis=0, append=b),
     [((3, 4), "real"), ((2, 4), "real")], lambda x, b: np.diff(x, axis=0, append=b),
     lambda x, b: _t().diff(x, dim=0, append=b))
def _torch_dims(axes):
    """torch.tensordot's dims for NumPy's axes (torch takes a pair of ints only as lists)."""
    if np.ndim(axes) == 0 or np.ndim(axes[0]) > 0:
        return axes
    return [axes[0]], [axes[1]]


TENSORDOTS = [((2, 3, 4), (3, 4, 5), 2, "axes2"), ((3, 4), (4, 3), ([0, 1], [1, 0]), "pairs"),
              ((2, 3), (4,), 0, "outer"), ((3, 4, 2), (2, 3), ((0, 2), (1, 0)), "mixed"),
              ((3, 4), (4, 2), 1, "matmul"), ((2, 3), (3, 2), (1, 0), "ints")]
for _sa, _sb, _axes, _id in TENSORDOTS:
    case(f"tensordot_{_id}", "tensordot",
         (lambda ax: lambda a, b: fg.tensordot(a, b, ax))(_axes), [(_sa, "real"), (_sb, "real")],
         (lambda ax: lambda a, b: np.tensordot(a, b, ax))(_axes),
         (lambda ax: lambda a, b: _t().tensordot(a, b, _torch_dims(ax)))(_axes))

# the NumPy functions added beyond the core vocabulary, each with cases above
NUMPY_EXTRA_OPS = (
    "log10 log2 exp2 arcsin arccos arcsinh arccosh arctanh deg2rad rad2deg logaddexp hypot "
    "remainder cumsum diff flip roll moveaxis repeat tile atleast_1d atleast_2d atleast_3d "
    "hstack vstack dstack column_stack diagonal diag trace triu tril tensordot norm").split()

# the drop-in NumPy namespace's lines (a table file of their own)
from optable_numpy import EXTRA_DOMAINS as _NUMPY_DOMAINS, add_cases as _add_numpy_cases  # noqa: E402
DOMAINS.update(_NUMPY_DOMAINS)
_add_numpy_cases(case)

# the collectives of fastgraph.distributed in a world of one process, where each is the identity
# (their values and gradients across two ranks: tests/test_distributed.py under mpirun)
import fastgraph.distributed as _fgd  # noqa: E402
for _name, _op, _fn in [("allreduce_sum", "allreduce", _fgd.allreduce),
                        ("allreduce_mean", "allreduce", lambda x: _fgd.allreduce(x, op="mean")),
                        ("allgather", "allgather", _fgd.allgather),
                        ("reduce_scatter", "reduce_scatter", _fgd.reduce_scatter),
                        ("broadcast_root0", "broadcast", lambda x: _fgd.broadcast(x, root=0)),
                        ("reduce_root0", "reduce", lambda x: _fgd.reduce(x, root=0))]:
    case(_name, _op, _fn, [((3, 4), "real")], lambda x: x)

# ---- bookkeeping -----------------------------------------------------------------------------
CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), "case names must be unique"

COVERED_OPS = sorted({c.op for c in CASES})

# every operation of the core vocabulary (docs/guide.md, "One vocabulary of operations")
DESIGN_OPS = (
    "add subtract multiply divide power negative abs exp expm1 log log1p sqrt square reciprocal "
    "sin cos tan tanh sinh cosh arctan sigmoid relu softplus erf maximum minimum where clip sign "
    "floor ceil sum mean prod max min var std logsumexp matmul dot outer einsum inv solve det "
    "slogdet reshape transpose swapaxes expand_dims squeeze broadcast_to concatenate stack split "
    "getitem softmax log_softmax cross_entropy special.erf special.erfc special.expit "
    "special.logit special.gammaln special.digamma special.logsumexp special.xlogy").split()


def case_params(cases: Sequence[OpCase] | None = None, marks: dict | None = None,
                predicate: Callable[[OpCase], bool] | None = None) -> list:
    """The cases as ``pytest.param``s with readable ids.

    ``marks`` maps a case name to a mark (or list of marks), e.g. a strict xfail for a known bug;
    ``predicate`` keeps only the cases it accepts.
    """
    import pytest
    marks = marks or {}
    out = []
    for c in (CASES if cases is None else cases):
        if predicate is not None and not predicate(c):
            continue
        m = marks.get(c.name, ())
        out.append(pytest.param(c, id=c.name, marks=m if isinstance(m, (list, tuple)) else [m]))
    return out
