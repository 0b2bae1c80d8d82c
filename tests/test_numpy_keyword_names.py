"""NumPy's own keyword names reach the differentiable op: ``np.sum(a=t)``, ``np.clip(t, min=0)``...

fastgraph spells some parameters differently (``x`` for NumPy's ``a``/``array``/``ary``,
``a_min`` for NumPy 2.1's ``min``); ``__array_function__`` translates NumPy's names before
choosing between the op and plain NumPy, so these calls keep their gradient.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.numpy as fnp
from fastgraph.eager.numpy_protocols import _C_SIGNATURES, FUNCTIONS, _numpy_signature

DATA = np.array([[0.5, 1.2, 0.7], [1.6, 0.9, 1.1]])
M = lambda x: x[:, :2]  # noqa: E731  (a 2x2 matrix out of the 2x3 input: det -1.47)

# (id, NumPy's call with NumPy's keyword names, the same call positionally)
CASES = [
    ("sum-a", lambda x: np.sum(a=x), lambda x: np.sum(x)),
    ("sum-a-axis", lambda x: np.sum(a=x, axis=0), lambda x: np.sum(x, 0)),
    ("sum-a-keepdims", lambda x: np.sum(a=x, axis=1, keepdims=True),
     lambda x: np.sum(x, 1, keepdims=True)),
    ("mean-a", lambda x: np.mean(a=x, axis=0), lambda x: np.mean(x, 0)),
    ("prod-a", lambda x: np.prod(a=x, axis=1), lambda x: np.prod(x, 1)),
    ("max-a", lambda x: np.max(a=x, axis=1), lambda x: np.max(x, 1)),
    ("min-a", lambda x: np.min(a=x, axis=0), lambda x: np.min(x, 0)),
    ("amax-a", lambda x: np.amax(a=x), lambda x: np.amax(x)),
    ("amin-a", lambda x: np.amin(a=x, axis=1), lambda x: np.amin(x, 1)),
    ("var-a-ddof", lambda x: np.var(a=x, axis=1, ddof=1), lambda x: np.var(x, 1, ddof=1)),
    ("std-a", lambda x: np.std(a=x, axis=0), lambda x: np.std(x, 0)),
    ("reshape-shape", lambda x: np.reshape(x, shape=(3, 2)), lambda x: np.reshape(x, (3, 2))),
    ("reshape-newshape", lambda x: np.reshape(x, newshape=(3, 2)),
     lambda x: np.reshape(x, (3, 2))),
    ("reshape-a", lambda x: np.reshape(a=x, shape=(3, 2)), lambda x: np.reshape(x, (3, 2))),
    ("transpose-a", lambda x: np.transpose(a=x), lambda x: np.transpose(x)),
    ("transpose-a-axes", lambda x: np.transpose(a=x, axes=(1, 0)),
     lambda x: np.transpose(x, (1, 0))),
    ("swapaxes-a", lambda x: np.swapaxes(a=x, axis1=0, axis2=1),
     lambda x: np.swapaxes(x, 0, 1)),
    ("expand_dims-a", lambda x: np.expand_dims(a=x, axis=1), lambda x: np.expand_dims(x, 1)),
    ("squeeze-a", lambda x: np.squeeze(a=x[None], axis=0), lambda x: np.squeeze(x[None], 0)),
    ("broadcast_to-array", lambda x: np.broadcast_to(array=x, shape=(4, 2, 3)),
     lambda x: np.broadcast_to(x, (4, 2, 3))),
    ("split-ary", lambda x: np.split(ary=x, indices_or_sections=3, axis=1),
     lambda x: np.split(x, 3, 1)),
    ("ravel-a", lambda x: np.ravel(a=x), lambda x: np.ravel(x)),
    ("real-val", lambda x: np.real(val=x), lambda x: np.real(x)),
    ("imag-val", lambda x: np.imag(val=x * 1j), lambda x: np.imag(x * 1j)),
    ("clip-min-max", lambda x: np.clip(x, min=0.6, max=1.3), lambda x: np.clip(x, 0.6, 1.3)),
    ("clip-a-min-max", lambda x: np.clip(a=x, min=0.6, max=1.3),
     lambda x: np.clip(x, 0.6, 1.3)),
    ("clip-max-only", lambda x: np.clip(x, max=1.0), lambda x: np.clip(x, None, 1.0)),
    ("clip-a_min-a_max", lambda x: np.clip(a=x, a_min=0.6, a_max=1.3),
     lambda x: np.clip(x, 0.6, 1.3)),
    ("where-keywords", lambda x: np.where(condition=x > 1.0, x=x, y=0.0),
     lambda x: np.where(x > 1.0, x, 0.0)),
    ("concatenate-arrays", lambda x: np.concatenate(arrays=[x, x * 2.0], axis=1),
     lambda x: np.concatenate([x, x * 2.0], 1)),
    ("stack-arrays", lambda x: np.stack(arrays=[x, x * 2.0], axis=1),
     lambda x: np.stack([x, x * 2.0], 1)),
    ("dot-a-b", lambda x: np.dot(a=x, b=np.arange(3.0)), lambda x: np.dot(x, np.arange(3.0))),
    ("outer-a-b", lambda x: np.outer(a=x, b=x), lambda x: np.outer(x, x)),
    ("inv-a", lambda x: np.linalg.inv(a=M(x)), lambda x: np.linalg.inv(M(x))),
    ("det-a", lambda x: np.linalg.det(a=M(x)), lambda x: np.linalg.det(M(x))),
    ("slogdet-a", lambda x: np.linalg.slogdet(a=M(x)), lambda x: np.linalg.slogdet(M(x))),
    ("solve-a-b", lambda x: np.linalg.solve(a=M(x), b=np.ones(2)),
     lambda x: np.linalg.solve(M(x), np.ones(2))),
    ("cumsum-a", lambda x: np.cumsum(a=x, axis=1), lambda x: np.cumsum(x, 1)),
    ("round-a", lambda x: np.round(a=x * 10.0, decimals=1), lambda x: np.round(x * 10.0, 1)),
    ("around-a", lambda x: np.around(a=x, decimals=2), lambda x: np.around(x, 2)),
    ("diff-a", lambda x: np.diff(a=x, n=2, axis=1), lambda x: np.diff(x, 2, 1)),
    ("flip-m", lambda x: np.flip(m=x, axis=0), lambda x: np.flip(x, 0)),
    ("roll-a", lambda x: np.roll(a=x, shift=1, axis=1), lambda x: np.roll(x, 1, 1)),
    ("moveaxis-a", lambda x: np.moveaxis(a=x, source=0, destination=1),
     lambda x: np.moveaxis(x, 0, 1)),
    ("repeat-a", lambda x: np.repeat(a=x, repeats=2, axis=0), lambda x: np.repeat(x, 2, 0)),
    ("tile-A", lambda x: np.tile(A=x, reps=(2, 1)), lambda x: np.tile(x, (2, 1))),
    ("diagonal-a", lambda x: np.diagonal(a=x, offset=1), lambda x: np.diagonal(x, 1)),
    ("trace-a", lambda x: np.trace(a=x, offset=-1), lambda x: np.trace(x, -1)),
    ("triu-m", lambda x: np.triu(m=x, k=1), lambda x: np.triu(x, 1)),
    ("tril-m", lambda x: np.tril(m=x, k=0), lambda x: np.tril(x)),
    ("full-shape", lambda x: fnp.full(shape=(4, 2, 3), fill_value=x),
     lambda x: fnp.full((4, 2, 3), x)),
    ("full_like-a", lambda x: np.full_like(a=x, fill_value=x * 2.0),
     lambda x: np.full_like(x, x * 2.0)),
    ("copy-a", lambda x: np.copy(a=x), lambda x: np.copy(x)),
    ("astype-x", lambda x: np.astype(x, np.float64), lambda x: np.astype(x, np.float64)),
    ("norm-x-ord", lambda x: np.linalg.norm(x=x, ord=1, axis=0), lambda x: np.linalg.norm(x, 1, 0)),
]


def _pieces(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _weighted_grad(call):
    t = fg.tensor(DATA, requires_grad=True)
    pieces = _pieces(call(t))
    rng = np.random.default_rng(0)
    total = 0.0
    for p in pieces:
        total = total + (p * rng.standard_normal(p.shape)).sum()
    total.backward()
    return pieces, t.grad.data


@pytest.mark.parametrize("name,keywords,positional", CASES, ids=[c[0] for c in CASES])
def test_numpy_keyword_names_reach_the_op(name, keywords, positional):
    try:
        want = keywords(DATA.copy())
    except TypeError as e:  # a spelling this NumPy does not take (np.where(condition=...) is
        # positional-only, newshape= is gone in 2.4...): a Tensor gets NumPy's own error
        with pytest.raises(TypeError):
            keywords(fg.tensor(DATA, requires_grad=True))
        assert "keyword" in str(e) or "positional" in str(e)
        return
    got, grad = _weighted_grad(keywords)
    _, grad_positional = _weighted_grad(positional)
    assert all(isinstance(p, fg.Tensor) for p in got), \
        f"np route gave {[type(p).__name__ for p in got]}"
    assert got[-1].requires_grad  # (slogdet's sign carries none)
    for g, w in zip(got, _pieces(want)):
        np.testing.assert_allclose(g.data, w, rtol=1e-14)
    np.testing.assert_allclose(grad, grad_positional, rtol=1e-14)


def test_every_function_with_its_own_names_is_covered():
    """Each NumPy function in FUNCTIONS with a keyword fastgraph spells differently has a case:
    its first parameter (NumPy's ``a``, fastgraph's ``x``) or NumPy 2.1's ``min=``/``max=``
    (ufuncs -- np.matmul, np.abs -- dispatch through __array_ufunc__ and take no names)."""
    covered = {c[0].split("-")[0] for c in CASES}
    keywordable = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    for func, fn in FUNCTIONS.items():
        if isinstance(func, np.ufunc):
            continue
        np_params = list(_numpy_signature(func).parameters.values())
        fg_first = next(iter(inspect.signature(fn).parameters))
        names = {p.name for p in np_params if p.kind in keywordable}
        if np_params[0].name in names and np_params[0].name != fg_first \
                or names & {"min", "max", "newshape", "shape"}:
            assert func.__name__ in covered, func.__name__


@pytest.mark.parametrize("name", sorted(_C_SIGNATURES))
def test_the_c_signature_table_is_numpys_own(name):
    """The signatures fastgraph assumes for NumPy's C functions (before 2.4 NumPy reports
    none) are the ones NumPy reports where it does."""
    try:
        want = inspect.signature(getattr(np, name))
    except ValueError:
        pytest.skip(f"this NumPy ({np.__version__}) reports no signature for np.{name}")
    assert _C_SIGNATURES[name] == want


def test_the_gradient_of_np_sum_by_keyword():
    t = fg.tensor([1.0, 2.0], requires_grad=True)
    np.sum(a=t * t).backward()
    np.testing.assert_array_equal(t.grad.data, [2.0, 4.0])


# NumPy forms fastgraph does not take run as plain NumPy, whichever way they are spelt: on a
# Tensor without a gradient they give NumPy's values; on one that requires grad a floating
# result would carry no gradient, so they raise (an integer one, where's indices, comes back)
PLAIN_NUMPY = [
    ("sum-positional-dtype", lambda x: np.sum(x, 0, np.float32), "np.sum"),
    ("sum-a-dtype", lambda x: np.sum(a=x, axis=0, dtype=np.float32), "np.sum"),
    ("clip-min-dtype", lambda x: np.clip(x, min=0.6, max=1.3, dtype=np.float32), "np.clip"),
    ("reshape-order", lambda x: np.reshape(x, shape=(3, 2), order="F"), "np.reshape"),
    ("ravel-order", lambda x: np.ravel(a=x, order="F"), "np.ravel"),
    ("einsum-dtype", lambda x: np.einsum("ij->i", x, dtype=np.float32, casting="same_kind"),
     "np.einsum"),
    ("where-one-argument", lambda x: np.where(x > 1.0), None),
]


@pytest.mark.parametrize("name,call,culprit", PLAIN_NUMPY, ids=[c[0] for c in PLAIN_NUMPY])
def test_forms_fastgraph_does_not_take_run_as_numpy(name, call, culprit):
    want = call(DATA.copy())
    got = call(fg.tensor(DATA))
    for g, w in zip(_pieces(got), _pieces(want)):
        assert not isinstance(g, fg.Tensor)
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
    needs_grad = fg.tensor(DATA, requires_grad=True)
    if culprit is None:
        np.testing.assert_array_equal(_pieces(call(needs_grad))[0], _pieces(want)[0])
    else:
        with pytest.raises(TypeError, match=f"{culprit}: .*no gradient.*detach"):
            call(needs_grad)
        with fg.no_grad():
            np.testing.assert_array_equal(_pieces(call(needs_grad))[0], _pieces(want)[0])


# NumPy's defaults spelt out change nothing, so these reach the op
DEFAULTS_SPELT_OUT = [
    ("mean-a-out-none", lambda x: np.mean(a=x, out=None), lambda x: np.mean(x)),
    ("sum-out-none", lambda x: np.sum(x, axis=0, out=None), lambda x: np.sum(x, 0)),
    ("reshape-order-c", lambda x: np.reshape(x, (3, 2), order="C"),
     lambda x: np.reshape(x, (3, 2))),
    ("ravel-order-c", lambda x: np.ravel(a=x, order="C"), lambda x: np.ravel(x)),
]


@pytest.mark.parametrize("name,call,positional", DEFAULTS_SPELT_OUT,
                         ids=[c[0] for c in DEFAULTS_SPELT_OUT])
def test_numpys_defaults_spelt_out_reach_the_op(name, call, positional):
    t = fg.tensor(DATA, requires_grad=True)
    out = call(t)
    assert isinstance(out, fg.Tensor) and out.requires_grad
    fg.sum(out * out).backward()
    u = fg.tensor(DATA, requires_grad=True)
    ref = positional(u)
    fg.sum(ref * ref).backward()
    np.testing.assert_array_equal(out.data, ref.data)
    np.testing.assert_array_equal(t.grad.data, u.grad.data)


@pytest.mark.parametrize("call", [
    lambda x: np.clip(x, 0.6, max=1.3),              # a_min with max: NumPy refuses the mix
    lambda x: np.clip(x, a_min=0.6, a_max=1.3, max=1.3),
    lambda x: np.reshape(x, 3, 2),                   # 2 is NumPy's order
    lambda x: np.sum(x, axis=0, a=x),
])
def test_calls_numpy_refuses_are_refused_for_tensors_too(call):
    with pytest.raises((TypeError, ValueError)) as want:
        call(DATA.copy())
    with pytest.raises(want.type):
        call(fg.tensor(DATA, requires_grad=True))


def test_a_type_error_inside_the_op_still_reaches_the_user():
    with pytest.raises(TypeError, match="keepdims must be a bool"):
        np.mean(a=fg.tensor(DATA), keepdims="no")
