"""Edge cases of the op layer found by fuzzing: one line per case, expanded by parametrisation.

* ``ERRORS``: bad axes, shapes and arguments raise a clear error naming the op (NumPy's
  exception types: ``AxisError`` for an axis out of range, ``TypeError`` for a float or bool
  where an integer is required), on NumPy inputs, eager Tensors and graph Nodes alike -- never a
  silent truncation (``axis=1.7`` meaning 1) or wrap-around (axis 5 of a 3-D array meaning 2);
* ``VALUES``: inputs that must keep working, compared with NumPy;
* ``GRADS``: gradients at kinks and degenerate points, eager and static, compared with PyTorch
  (or, where PyTorch's own answer is not the derivative, with an explicit reference).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.exceptions import AxisError

import fastgraph as fg
import fastgraph.ops as F

KINDS = ("numpy", "eager", "static")
T, E, S = ("eager",), ("eager", "static"), KINDS  # which input kinds a case runs on


def _as_kind(kind, value):
    value = np.asarray(value, dtype=float)
    if kind == "numpy":
        return value
    if kind == "eager":
        return fg.tensor(value)
    return fg.placeholder(value.dtype, value.shape)


X2, X3 = (2, 3), (2, 3, 4)

# ---- errors: (id, input shape, fn(x), exception, message pattern, kinds) -------------------
ERRORS = [
    ("transpose-axis-past-end", X3, lambda x: fg.transpose(x, (0, 1, 5)), AxisError,
     r"transpose: axis 5 is out of bounds for array of dimension 3 \(operand shape \(2, 3, 4\)\)",
     S),
    ("transpose-negative-past-end", X3, lambda x: fg.transpose(x, (0, -4, 1)), AxisError,
     "transpose: axis -4 .* dimension 3", S),
    ("transpose-repeated-axis", X3, lambda x: fg.transpose(x, (0, 2, -1)), ValueError,
     "transpose: axes .* not a permutation", S),
    ("transpose-too-few-axes", X3, lambda x: fg.transpose(x, (1, 0)), ValueError,
     "transpose: axes .* not a permutation", S),
    ("transpose-float-axis", X2, lambda x: fg.transpose(x, (1.0, 0)), TypeError,
     "transpose: axis must be an integer, got float", S),
    ("method-transpose-past-end", X2, lambda x: x.transpose(0, 2), AxisError, "transpose", E),
    ("swapaxes-past-end", X2, lambda x: fg.swapaxes(x, 0, 2), AxisError,
     "swapaxes: axis 2 .* dimension 2", S),
    ("swapaxes-float", X2, lambda x: fg.swapaxes(x, 0, 1.0), TypeError, "swapaxes", S),
    ("sum-float-axis", X2, lambda x: fg.sum(x, axis=1.7), TypeError,
     "sum: axis must be an integer, got float 1.7", S),
    ("sum-float-axis-in-tuple", X2, lambda x: fg.sum(x, axis=(0, 1.0)), TypeError, "sum", S),
    ("sum-bool-axis", X2, lambda x: fg.sum(x, axis=True), TypeError, "sum", S),
    ("sum-numpy-float-axis", X2, lambda x: fg.sum(x, axis=np.float64(1)), TypeError, "sum", S),
    ("method-mean-float-axis", X2, lambda x: x.mean(axis=0.5), TypeError, "mean", E),
    ("max-float-axis", X2, lambda x: fg.max(x, axis=1.5), TypeError, "max", S),
    ("var-float-axis", X2, lambda x: fg.var(x, axis=1.5), TypeError, "var", S),
    ("std-float-axis", X2, lambda x: fg.std(x, axis=1.5), TypeError, "std", S),
    ("logsumexp-float-axis", X2, lambda x: fg.logsumexp(x, axis=0.5), TypeError, "logsumexp", S),
    ("sum-axis-past-end-static", X2, lambda x: fg.sum(x, axis=2), AxisError,
     "sum: axis 2 is out of bounds for array of dimension 2", ("static",)),
    ("softmax-float-axis", X2, lambda x: fg.softmax(x, axis=0.5), TypeError,
     "softmax: axis must be an integer", S),
    ("log-softmax-float-axis", X2, lambda x: fg.log_softmax(x, axis=0.5), TypeError,
     "log_softmax", S),
    ("softmax-axis-past-end", X2, lambda x: fg.softmax(x, axis=2), AxisError, "axis 2", S),
    ("expand-dims-float", X2, lambda x: fg.expand_dims(x, 0.9), TypeError,
     "expand_dims: axis must be an integer, got float 0.9", S),
    ("expand-dims-past-end", X2, lambda x: fg.expand_dims(x, 3), AxisError,
     "axis 3 is out of bounds for array of dimension 3", S),
    ("squeeze-float", (2, 1), lambda x: fg.squeeze(x, 1.0), TypeError, "squeeze", S),
    ("reshape-float", X2, lambda x: fg.reshape(x, (3.9, 2)), TypeError,
     "reshape: shape must be an integer, got float 3.9", S),
    ("reshape-float-scalar", (6,), lambda x: fg.reshape(x, 6.0), TypeError, "reshape", S),
    ("method-reshape-float", X2, lambda x: x.reshape(3.9, 2), TypeError, "reshape", E),
    ("broadcast-to-float", (3,), lambda x: fg.broadcast_to(x, (2.0, 3)), TypeError,
     "broadcast_to", S),
    ("concatenate-float-axis", X2, lambda x: fg.concatenate([x, x], axis=0.5), TypeError,
     "concatenate", S),
    ("concatenate-axis-past-end-static", X2, lambda x: fg.concatenate([x, x], axis=2),
     AxisError, "concatenate: axis 2 .* dimension 2", ("static",)),
    ("stack-axis-past-end-static", X2, lambda x: fg.stack([x, x], axis=3), AxisError,
     "stack: axis 3 .* dimension 3", ("static",)),
    ("split-axis-past-end", X3, lambda x: fg.split(x, 2, axis=3), AxisError,
     "split: axis 3 is out of bounds for array of dimension 3", S),
    ("split-float-sections", X3, lambda x: fg.split(x, 2.0), TypeError, "split", S),
    ("split-float-index", X3, lambda x: fg.split(x, [1.5]), TypeError, "split", S),
    ("einsum-subscripts-not-str", X2, lambda x: fg.einsum(5, x), TypeError,
     "einsum: the subscripts must be a string", S),
    ("polygamma-float-order", X2, lambda x: fg.ops.polygamma(1.5, x), TypeError, "polygamma", S),
]

FACTORY_ERRORS = [
    ("zeros-float", lambda: fg.zeros(2.5), "zeros: shape"),
    ("zeros-float-in-tuple", lambda: fg.zeros((2, 3.0)), "zeros: shape"),
    ("ones-float", lambda: fg.ones(2, 1.5), "ones: shape"),
    ("rand-float", lambda: fg.rand(2.0), "rand: shape"),
    ("randn-bool", lambda: fg.randn(True), "randn: shape"),
]


# each case on the input kinds it applies to (no skipped combinations)
_ERROR_CASES = [(kind, *case) for case in ERRORS for kind in KINDS if kind in case[5]]


@pytest.mark.parametrize("kind,name,shape,fn,exc,match,kinds", _ERROR_CASES,
                         ids=[f"{c[1]}-{c[0]}" for c in _ERROR_CASES])
def test_bad_arguments_raise_clear_errors(kind, name, shape, fn, exc, match, kinds):
    x = _as_kind(kind, np.ones(shape))
    if kind == "static" and exc is AxisError:
        exc = ValueError  # the graph builder re-raises shape-rule errors as ValueError
    with pytest.raises(exc, match=match):
        fn(x)


@pytest.mark.parametrize("name,fn,match", FACTORY_ERRORS, ids=[c[0] for c in FACTORY_ERRORS])
def test_factories_reject_float_shapes(name, fn, match):
    with pytest.raises(TypeError, match=match):
        fn()


# ---- values that must keep working: (id, fg fn, NumPy reference, input) -------------------
_A = np.arange(24.0).reshape(X3)
VALUES = [
    ("transpose-negative-axes", lambda x: fg.transpose(x, (0, -1, 1)),
     lambda a: np.transpose(a, (0, -1, 1)), _A),
    ("transpose-numpy-int-axes", lambda x: fg.transpose(x, np.array([2, 0, 1])),
     lambda a: np.transpose(a, (2, 0, 1)), _A),
    ("sum-numpy-int-axis", lambda x: fg.sum(x, axis=np.int64(1)), lambda a: a.sum(axis=1), _A),
    ("sum-negative-tuple", lambda x: fg.sum(x, axis=[-1, 0]), lambda a: a.sum(axis=(-1, 0)), _A),
    ("var-float-ddof", lambda x: fg.var(x, axis=0, ddof=0.5),
     lambda a: np.var(a, axis=0, ddof=0.5), _A),
    ("std-numpy-int-ddof", lambda x: fg.std(x, ddof=np.int64(1)), lambda a: np.std(a, ddof=1), _A),
    ("reshape-numpy-ints", lambda x: fg.reshape(x, (np.int64(4), -1)),
     lambda a: a.reshape(4, -1), _A),
    ("reshape-array-shape", lambda x: fg.reshape(x, np.array([6, 4])),
     lambda a: a.reshape(6, 4), _A),
    ("expand-dims-negative", lambda x: fg.expand_dims(x, (-1, 0)),
     lambda a: np.expand_dims(a, (-1, 0)), _A),
    ("swapaxes-negative", lambda x: fg.swapaxes(x, -1, 0), lambda a: np.swapaxes(a, -1, 0), _A),
    ("split-negative-axis", lambda x: fg.stack(fg.split(x, 2, axis=-1)),
     lambda a: np.stack(np.split(a, 2, axis=-1)), _A),
    ("split-numpy-int-sections", lambda x: fg.stack(fg.split(x, np.int64(3), axis=1)),
     lambda a: np.stack(np.split(a, 3, axis=1)), _A),
    ("softmax-numpy-int-axis", lambda x: fg.softmax(x, axis=np.int64(0)),
     lambda a: np.exp(a) / np.exp(a).sum(axis=0), _A / 24),
    ("index-empty-list", lambda x: x[[]], lambda a: a[[]], _A),
    ("clip-lo-above-hi", lambda x: fg.clip(x, 5.0, 2.0), lambda a: np.clip(a, 5.0, 2.0), _A),
]


# plain-array indexing is NumPy's own: the empty-list index is checked on Tensors and Nodes
_VALUE_CASES = [(kind, *case) for case in VALUES for kind in KINDS
                if not (kind == "numpy" and case[0] == "index-empty-list")]


@pytest.mark.parametrize("kind,name,fn,ref,a", _VALUE_CASES,
                         ids=[f"{c[1]}-{c[0]}" for c in _VALUE_CASES])
def test_values_match_numpy(kind, name, fn, ref, a):
    x = _as_kind(kind, a)
    out = fn(x)
    if kind == "static":
        out = fg.Session().run(out, {x: a})
    elif kind == "eager":
        out = out.data
    np.testing.assert_allclose(out, ref(a), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("data", [[1.0, 2.0], [1, 2], [[True]], 3.0, np.float32([1, 2])])
@pytest.mark.parametrize("which", ["zeros_like", "ones_like"])
def test_like_factories_accept_lists_and_scalars(data, which):
    got = getattr(fg, which)(data)
    want = getattr(np, which)(data)
    assert isinstance(got, fg.Tensor)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.data, want)


# ---- gradients: (id, fg fn, torch fn or None, inputs, reference gradients or None) ----------
def _cofactors(m):
    """The gradient of det: the cofactor matrix, det(a) inv(a)^T for invertible a, but a
    polynomial in the entries, so it is the derivative at singular matrices too."""
    m = np.asarray(m, dtype=float)
    n = m.shape[-1]
    c = np.empty_like(m)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(m, i, axis=-2), j, axis=-1)
            c[..., i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return [c]


_SING2 = np.array([[1.0, 2.0], [2.0, 4.0]])                        # rank 1 of 2
_SING3 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])  # rank 2 of 3
_RANK1_3 = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])               # rank 1 of 3: adj = 0
_REG3 = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
_X = np.array([-1.0, 0.5, 3.0, 1.5, 0.0, 2.0])


def _ref_det(a):
    return _cofactors(a)


GRADS = [
    # clip with a_min > a_max: the output is a_max (NumPy, PyTorch), so a_max gets the gradient
    ("clip-tensor-bounds-lo-above-hi", lambda x, lo, hi: fg.clip(x, lo, hi),
     lambda x, lo, hi: x.clamp(lo, hi),
     [_X, np.array([2.0, 2.0, 2.0, 0.0, -1.0, 3.0]), np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])],
     None),
    ("clip-tensor-bounds-ordinary", lambda x, lo, hi: fg.clip(x, lo, hi),
     lambda x, lo, hi: x.clamp(lo, hi), [_X, np.full(6, 0.25), np.full(6, 1.75)], None),
    ("clip-tensor-bounds-at-bounds", lambda x, lo, hi: fg.clip(x, lo, hi),
     lambda x, lo, hi: x.clamp(lo, hi), [_X, _X - 0.0, _X + 1.0], None),
    ("clip-scalar-lo-above-hi", lambda x: fg.clip(x, 2.0, 1.0),
     lambda x: x.clamp(2.0, 1.0), [_X], None),
    ("clip-broadcast-bounds", lambda x, lo, hi: fg.clip(x, lo, hi),
     lambda x, lo, hi: x.clamp(lo, hi), [_X.reshape(2, 3), np.array([[0.4], [2.5]]),
                                          np.array([1.0, 2.0, 0.1])], None),
    # einsum: an index of length 1 in one operand broadcasts against the others
    ("einsum-broadcast-vector", lambda a, b: fg.einsum("ij,j->i", a, b),
     lambda a, b: __import__("torch").einsum("ij,j->i", a, b),
     [np.arange(6.0).reshape(2, 3), np.array([1.5])], None),
    ("einsum-broadcast-both", lambda a, b: fg.einsum("ij,jk->ik", a, b),
     lambda a, b: __import__("torch").einsum("ij,jk->ik", a, b),
     [np.arange(2.0).reshape(2, 1), np.arange(12.0).reshape(3, 4)], None),
    ("einsum-broadcast-elementwise", lambda a, b: fg.einsum("ij,ij->ij", a, b),
     lambda a, b: __import__("torch").einsum("ij,ij->ij", a, b),
     [np.arange(2.0).reshape(2, 1) + 1, np.arange(6.0).reshape(2, 3)], None),
    ("einsum-broadcast-summed", lambda a, b: fg.einsum("ij,j->", a, b),
     lambda a, b: __import__("torch").einsum("ij,j->", a, b),
     [np.arange(3.0).reshape(1, 3), np.arange(3.0) - 1], None),
    # std where the result is 0: PyTorch's gradient is 0 there (not 0 * inf = nan)
    ("std-constant", lambda x: fg.std(x), lambda x: x.std(correction=0), [np.ones(4)], None),
    ("std-constant-column", lambda x: fg.std(x, axis=0), lambda x: x.std(0, correction=0),
     [np.array([[1.0, 2.0], [1.0, 5.0], [1.0, -1.0]])], None),
    ("std-constant-keepdims-ddof", lambda x: fg.std(x, axis=1, keepdims=True, ddof=1),
     lambda x: x.std(1, keepdim=True, correction=1),
     [np.array([[3.0, 3.0, 3.0], [1.0, 2.0, 4.0]])], None),
    ("var-constant", lambda x: fg.var(x, axis=0), lambda x: x.var(0, correction=0),
     [np.array([[1.0, 2.0], [1.0, 5.0]])], None),
    # x ** y at x = 0, y = 0: the derivative in x is taken as 0 (PyTorch), not 0 * 0**-1 = nan
    ("power-zero-zero", lambda x, y: x ** y, lambda x, y: x ** y,
     [np.array([0.0, 0.0, 2.0, 1.5, 0.0]), np.array([0.0, 2.0, 0.0, 3.0, 1.0])], None),
    ("power-constant-zero-exponent", lambda x: x ** 0, lambda x: x ** 0,
     [np.array([0.0, 1.5])], None),
    ("power-constant-exponent", lambda x: x ** 2.5, lambda x: x ** 2.5,
     [np.array([0.0, 1.5])], None),
    # det of singular matrices: the gradient is the cofactor matrix (PyTorch 2.13 returns zeros
    # there, which is not the derivative: compare with the cofactors, a polynomial)
    ("det-singular-2x2", lambda a: fg.linalg.det(a), None, [_SING2], _ref_det),
    ("det-singular-3x3-rank2", lambda a: fg.linalg.det(a), None, [_SING3], _ref_det),
    ("det-singular-3x3-rank1", lambda a: fg.linalg.det(a), None, [_RANK1_3], _ref_det),
    ("det-zero-matrix", lambda a: fg.linalg.det(a), None, [np.zeros((3, 3))], _ref_det),
    ("det-batch-singular-and-regular", lambda a: fg.linalg.det(a), None,
     [np.stack([_SING3, _REG3, -_REG3])], _ref_det),
    ("det-regular", lambda a: fg.linalg.det(a), lambda a: __import__("torch").linalg.det(a),
     [_REG3], None),
    ("det-regular-1x1", lambda a: fg.linalg.det(a), lambda a: __import__("torch").linalg.det(a),
     [np.array([[0.5]])], None),
]


def _grads_eager(fn, arrays, cot):
    ts = [fg.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    (out * fg.tensor(cot)).sum().backward()
    return out.data, [t.grad.data for t in ts]


def _grads_static(fn, arrays, cot):
    xs = [fg.placeholder(np.float64, a.shape) for a in arrays]
    out = fn(*xs)
    gs = fg.gradients((out * cot).sum(), xs)
    feed = dict(zip(xs, arrays))
    vals = fg.Session().run([out] + [g if g is not None else fg.constant(np.zeros(a.shape))
                                     for g, a in zip(gs, arrays)], feed)
    return vals[0], vals[1:]


def _reference(fn_torch, ref, arrays, cot):
    if ref is not None:
        return [g * np.asarray(cot)[..., None, None] for g in ref(*arrays)]
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn_torch(*ts)
    out.backward(torch.tensor(cot))
    return [np.zeros(a.shape) if t.grad is None else t.grad.numpy() for t, a in zip(ts, arrays)]


@pytest.mark.parametrize("mode", ["eager", "static"])
@pytest.mark.parametrize("name,fn,fn_torch,arrays,ref", GRADS, ids=[c[0] for c in GRADS])
def test_gradients_at_edge_points(name, fn, fn_torch, arrays, ref, mode):
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    out_shape = np.shape(fn(*arrays))
    cot = np.linspace(0.5, 1.5, int(np.prod(out_shape))).reshape(out_shape)
    with np.errstate(all="raise"):  # no division by zero on the way either
        out, grads = (_grads_eager if mode == "eager" else _grads_static)(fn, arrays, cot)
    want = _reference(fn_torch, ref, arrays, cot)
    for i, (g, w) in enumerate(zip(grads, want)):
        assert g.shape == arrays[i].shape, f"{name}: gradient {i} has shape {g.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=f"{name}: d/darg{i}")


def test_det_gradient_matches_finite_differences_at_singular_matrix():
    a = _SING3
    got = _grads_eager(fg.linalg.det, [a], np.float64(1.0))[1][0]
    eps = 1e-6
    num = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[idx] = eps
        num[idx] = (np.linalg.det(a + d) - np.linalg.det(a - d)) / (2 * eps)
    np.testing.assert_allclose(got, num, atol=1e-6)


@pytest.mark.parametrize("a", [_REG3, np.array([[1.0, 2.0], [3.0, -1.0]])], ids=["3x3", "2x2"])
def test_det_second_derivative_matches_torch(a):
    torch = pytest.importorskip("torch")
    w = np.arange(a.size, dtype=float).reshape(a.shape) / a.size - 0.3
    x = fg.tensor(a, requires_grad=True)
    (g,) = fg.autograd.grad(fg.linalg.det(x), [x], create_graph=True)
    (h,) = fg.autograd.grad((g * fg.tensor(w)).sum(), [x])
    tx = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.linalg.det(tx), [tx], create_graph=True)
    (th,) = torch.autograd.grad((tg * torch.tensor(w)).sum(), [tx])
    np.testing.assert_allclose(g.data, tg.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.data, th.numpy(), rtol=1e-9, atol=1e-12)


_SLOGDET_A = np.array([[2.0, 0.5, 0.1], [0.3, -1.5, 0.2], [0.0, 0.4, 1.1]])  # det < 0


def _check_slogdet_result(r, a=_SLOGDET_A):
    """NumPy's ``SlogdetResult``: the name, the fields, unpacking, NumPy's values."""
    want = np.linalg.slogdet(a)
    assert type(r).__name__ == type(want).__name__ == "SlogdetResult"
    assert isinstance(r, tuple) and r._fields == want._fields == ("sign", "logabsdet")
    sign, logabsdet = r
    assert sign is r.sign and logabsdet is r.logabsdet and r[0] is sign and r[1] is logabsdet
    np.testing.assert_allclose(float(r.logabsdet), want.logabsdet, rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(r.sign, dtype=float), want.sign)


@pytest.mark.parametrize("kind", ["numpy", "eager", "np.linalg-on-tensor"])
def test_slogdet_returns_numpys_namedtuple(kind):
    if kind == "numpy":
        _check_slogdet_result(fg.linalg.slogdet(_SLOGDET_A))
        return
    x = fg.tensor(_SLOGDET_A, requires_grad=True)
    r = fg.linalg.slogdet(x) if kind == "eager" else np.linalg.slogdet(x)
    _check_slogdet_result(r)
    assert isinstance(r.logabsdet, fg.Tensor) and not r.sign.requires_grad
    r.logabsdet.backward()
    np.testing.assert_allclose(x.grad.data, np.linalg.inv(_SLOGDET_A).T, rtol=1e-12)


def test_slogdet_returns_numpys_namedtuple_in_a_static_graph():
    g = fg.Graph()
    with g.as_default():
        p = fg.placeholder(np.float64, (3, 3))
        r = fg.linalg.slogdet(p)
        assert type(r).__name__ == "SlogdetResult"
        assert r.sign.op.name == "signdet" and r.logabsdet.op.name == "logabsdet"
        with fg.Session() as sess:
            _check_slogdet_result(sess.run(r, {p: _SLOGDET_A}))   # the structure comes back
            logabsdet = sess.run(r.logabsdet, {p: _SLOGDET_A})
    np.testing.assert_allclose(logabsdet, np.linalg.slogdet(_SLOGDET_A).logabsdet, rtol=1e-14)


def test_slogdet_returns_numpys_namedtuple_under_fg_function():
    whole = fg.function(lambda a: fg.linalg.slogdet(a))
    _check_slogdet_result(whole(_SLOGDET_A))
    _check_slogdet_result(whole(fg.tensor(_SLOGDET_A)))
    field = fg.function(lambda a: fg.linalg.slogdet(a).logabsdet * 2.0)
    np.testing.assert_allclose(field(_SLOGDET_A), 2 * np.linalg.slogdet(_SLOGDET_A).logabsdet,
                               rtol=1e-14)
    g = fg.grad(lambda a: fg.linalg.slogdet(a).logabsdet)(_SLOGDET_A)
    np.testing.assert_allclose(g, np.linalg.inv(_SLOGDET_A).T, rtol=1e-12)
    jac = fg.jacobian(lambda a: fg.linalg.slogdet(a))(_SLOGDET_A)
    assert type(jac).__name__ == "SlogdetResult"
    np.testing.assert_allclose(jac.logabsdet, np.linalg.inv(_SLOGDET_A).T, rtol=1e-12)


def test_slogdet_result_through_numpys_fallback():
    # a NumPy form fastgraph does not take unwraps the namedtuple's Tensors (plain NumPy)
    r = fg.linalg.slogdet(fg.tensor(_SLOGDET_A))
    got = np.stack(r, dtype=np.float32)
    assert type(got) is np.ndarray and got.dtype == np.float32
    np.testing.assert_allclose(got, np.stack(np.linalg.slogdet(_SLOGDET_A)), rtol=1e-6)


def test_std_second_derivative_is_finite_at_constant_input():
    x = fg.tensor(np.ones(3), requires_grad=True)
    (g,) = fg.autograd.grad(fg.std(x), [x], create_graph=True)
    np.testing.assert_array_equal(g.data, np.zeros(3))
    (h,) = fg.autograd.grad(g.sum(), [x], allow_unused=True)
    assert h is None or np.all(np.isfinite(h.data))


# ---- index arrays are copied: mutating the caller's array later changes nothing ----------------
@pytest.mark.parametrize("index", [
    np.array([0, 1]),
    np.array([True, True, False, False]),
], ids=["int-array", "bool-mask"])
def test_static_index_array_mutated_after_building(index):
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(np.float64, (4,))
        y1 = x[index]
        index[:] = index[::-1].copy()  # the mutation must not reach y1
        y2 = x[np.array([0, 1]) if index.dtype != bool else np.array([True, True, False, False])]
        r1, r2 = fg.Session(g).run([y1, y2], {x: np.arange(4.0)})
    np.testing.assert_array_equal(r1, [0.0, 1.0])
    np.testing.assert_array_equal(r2, [0.0, 1.0])


@pytest.mark.parametrize("index", [
    np.array([0, 1]),
    np.array([True, True, False, False]),
], ids=["int-array", "bool-mask"])
def test_eager_index_array_mutated_before_backward(index):
    x = fg.tensor(np.arange(4.0), requires_grad=True)
    y = x[index]
    index[:] = index[::-1].copy()
    (y * fg.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 2.0, 0.0, 0.0])


def test_index_array_kept_read_only_and_caller_array_untouched():
    idx = np.array([2, 0])
    x = fg.tensor(np.arange(4.0))
    y = fg.ops.getitem(x, idx)
    assert idx.flags.writeable  # the caller's array is not frozen
    np.testing.assert_array_equal(y.data, [2.0, 0.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [None, (0, 1)])
def test_logsumexp_over_all_axes_is_a_numpy_scalar_like_scipy(dtype, axis):
    x = np.arange(6.0, dtype=dtype).reshape(2, 3)
    got = fg.logsumexp(x, axis=axis)
    assert type(got) is dtype          # scipy.special.logsumexp's (and np.sum's) result type
    np.testing.assert_allclose(got, np.log(np.sum(np.exp(x.astype(np.float64)))), rtol=1e-6)


def test_concatenate_gradient_with_a_plain_list_before_the_tensor():
    t = fg.tensor([0.3, 0.7], requires_grad=True)
    (fg.concatenate([[1.0, 2.0], t]) * fg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(t.grad.data, [3.0, 4.0])


@pytest.mark.parametrize("call", [
    lambda t: fg.sum(t, 0, np.float32),        # NumPy's positional dtype (np.sum reads it as
                                               # dtype: test_numpy_keyword_names.py)
    lambda t: fg.mean(t, 0, "no"),
    lambda t: fg.var(t, 0, None),
])
def test_keepdims_must_be_a_bool(call):
    with pytest.raises(TypeError, match="keepdims must be a bool"):
        call(fg.tensor(np.ones((2, 3))))


# sum and mean run np.add.reduce on ndarrays (and mean divides by the count): NumPy's own bits,
# dtypes and result types, for every dtype, axis and keepdims
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32, np.complex64,
                                   np.int32, np.int8, np.bool_, np.float16])
@pytest.mark.parametrize("shape, axis", [((7,), None), ((7,), 0), ((3, 5, 4), None),
                                         ((3, 5, 4), -1), ((3, 5, 4), (0, 2)), ((0, 3), 1)])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_sum_and_mean_are_numpys_bit_for_bit(name, dtype, shape, axis):
    x = (np.random.default_rng(3).standard_normal(shape) * 100).astype(dtype)
    for keepdims in (False, True):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # (the mean of an empty axis)
            got = getattr(F, name)(x, axis=axis, keepdims=keepdims)
            want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        assert type(got) is type(want) and np.shape(got) == np.shape(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


def test_broadcast_like_of_a_scalar_is_a_read_only_view():
    x = np.ones((3, 4))
    for g in (np.float64(2.5), 2.5, np.array(2.5)):
        v = F.broadcast_like(g, x)
        assert v.shape == (3, 4) and v.strides == (0, 0) and not v.flags.writeable
        np.testing.assert_array_equal(v, np.full((3, 4), 2.5))
    assert F.broadcast_like(np.float32(1.0), x).dtype == np.float32
