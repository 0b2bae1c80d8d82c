"""NumPy protocols on eager Tensors, and the drop-in namespace ``fastgraph.numpy``."""
from __future__ import annotations

import types

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.numpy as fnp
from fastgraph.ops import PUBLIC


def _bug(reason):
    return pytest.mark.xfail(strict=True, reason=f"bug: {reason}")


def _t(data=(1.0, 2.0)):
    return fg.tensor(np.array(data), requires_grad=True)


# ---- __array__ -----------------------------------------------------------------------------------
def test_asarray_gives_the_data():
    t = fg.tensor(np.array([1.0, 2.0]))      # (no gradient to lose)
    a = np.asarray(t)
    assert type(a) is np.ndarray and a.dtype == np.float64
    np.testing.assert_array_equal(a, [1.0, 2.0])
    assert np.shares_memory(a, t.data)
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    assert not np.shares_memory(np.array(t, copy=True), t.data)
    assert np.array(fg.tensor(3.0)).shape == ()


# Every way of turning a Tensor that requires grad into a plain ndarray would drop its gradient
# without a word: refused as PyTorch refuses it, saying what to write instead.
def _assigned(a, t):
    a[:] = t
    return a


CONVERSIONS = [
    ("np.asarray", lambda t: np.asarray(t)),
    ("np.asarray dtype", lambda t: np.asarray(t, dtype=np.float32)),
    ("np.array", lambda t: np.array(t)),
    ("np.array copy", lambda t: np.array(t, copy=True)),
    ("np.asarray of a list", lambda t: np.asarray([t, t])),
    ("np.array of a list of 0-d", lambda t: np.array([t[0], t[1]])),
    ("assigned into an ndarray", lambda t: _assigned(np.zeros(2), t)),
    ("np.asanyarray", lambda t: np.asanyarray(t)),
    ("np.ascontiguousarray", lambda t: np.ascontiguousarray(t)),
    ("t.numpy()", lambda t: t.numpy()),
]


@pytest.mark.parametrize("call", [c[1] for c in CONVERSIONS], ids=[c[0] for c in CONVERSIONS])
def test_converting_a_tensor_that_requires_grad_raises(call):
    t = _t()
    with pytest.raises(RuntimeError, match=r"requires grad.*detach\(\)\.numpy\(\).*"
                                           r"fastgraph\.numpy"):
        call(t)
    y = t * 2.0                              # a non-leaf result too
    with pytest.raises(RuntimeError, match="requires grad"):
        call(y)
    # no gradient to lose: the values come back
    for plain in (t.detach(), fg.tensor([1.0, 2.0])):
        np.testing.assert_array_equal(np.asarray(call(plain), dtype=float).ravel()[:2], [1, 2])
    with fg.no_grad():
        np.testing.assert_array_equal(np.asarray(call(t), dtype=float).ravel()[:2], [1, 2])


def test_explicit_escape_hatches_stay_allowed_as_in_pytorch():
    # t.data (no copy, detached), t.detach(), float(t), t.item(), t.tolist(), fg.tensor(t):
    # each says in its name that the value leaves the graph (or makes a new leaf)
    t = _t()
    assert np.shares_memory(t.data, t.detach().numpy())
    assert float(t[1]) == 2.0 and t[0].item() == 1.0 and int(t[1]) == 2
    assert t.tolist() == [1.0, 2.0]
    for c in (fg.tensor(t), fg.tensor([t[0], t[1]])):     # a new leaf, as torch.tensor makes
        assert c.is_leaf and not c.requires_grad and not np.shares_memory(c.data, t.data)
        np.testing.assert_array_equal(c.numpy(), [1.0, 2.0])


def test_object_arrays_of_tensors_keep_their_gradients():
    # NumPy asks an element for an object array too: it hands back its 0-d Tensors
    t = _t()
    for objects in (np.array(t, dtype=object), np.array([t[0], t[1]], dtype=object)):
        assert all(isinstance(o, fg.Tensor) for o in objects)
        t.grad = None
        fg.sum(fg.multiply(objects, 3.0)).backward()
        np.testing.assert_array_equal(t.grad.data, [3.0, 3.0])


def test_feeding_a_tensor_that_requires_grad_to_a_session_raises():
    x = fg.placeholder(fg.float64, (2,), name="x")
    with fg.Session() as sess:
        with pytest.raises(fg.errors.InvalidArgumentError, match="'x'.*requires grad"):
            sess.run(x * 2.0, {x: _t()})
        np.testing.assert_array_equal(sess.run(x * 2.0, {x: _t().detach()}), [2.0, 4.0])


# ---- ufuncs and functions are recorded like fg ops ---------------------------------------------------
UFUNC_CASES = [
    ("exp", lambda t: np.exp(t), fg.exp),
    ("log", lambda t: np.log(t), fg.log),
    ("sin", lambda t: np.sin(t), fg.sin),
    ("tanh", lambda t: np.tanh(t), fg.tanh),
    ("sqrt", lambda t: np.sqrt(t), fg.sqrt),
    ("square", lambda t: np.square(t), fg.square),
    ("absolute", lambda t: np.absolute(t), fg.abs),
    ("abs", lambda t: np.abs(t), fg.abs),
    ("negative", lambda t: np.negative(t), fg.negative),
    ("expm1", lambda t: np.expm1(t), fg.expm1),
    ("reciprocal", lambda t: np.reciprocal(t), fg.reciprocal),
    ("maximum", lambda t: np.maximum(t, 1.5), lambda t: fg.maximum(t, 1.5)),
    ("power", lambda t: np.power(t, 3), lambda t: fg.power(t, 3)),
    ("sum_axis0", lambda t: np.sum(t, axis=0), lambda t: fg.sum(t, axis=0)),
    ("sum_keepdims", lambda t: np.sum(t, axis=1, keepdims=True),
     lambda t: fg.sum(t, axis=1, keepdims=True)),
    ("mean", lambda t: np.mean(t), fg.mean),
    ("max_axis", lambda t: np.max(t, axis=1), lambda t: fg.max(t, axis=1)),
    ("amax", lambda t: np.amax(t, axis=0), lambda t: fg.max(t, axis=0)),
    ("std", lambda t: np.std(t, axis=0), lambda t: fg.std(t, axis=0)),
    ("var_ddof", lambda t: np.var(t, ddof=1), lambda t: fg.var(t, ddof=1)),
    ("prod", lambda t: np.prod(t, axis=0), lambda t: fg.prod(t, axis=0)),
    ("reshape", lambda t: np.reshape(t, (3, 2)), lambda t: fg.reshape(t, (3, 2))),
    ("transpose", lambda t: np.transpose(t), fg.transpose),
    ("swapaxes", lambda t: np.swapaxes(t, 0, 1), lambda t: fg.swapaxes(t, 0, 1)),
    ("expand_dims", lambda t: np.expand_dims(t, 0), lambda t: fg.expand_dims(t, 0)),
    ("broadcast_to", lambda t: np.broadcast_to(t, (4, 2, 3)),
     lambda t: fg.broadcast_to(t, (4, 2, 3))),
    ("concatenate", lambda t: np.concatenate([t, t * 2.0]),
     lambda t: fg.concatenate([t, t * 2.0])),
    ("stack", lambda t: np.stack([t, t], axis=1), lambda t: fg.stack([t, t], axis=1)),
    ("where", lambda t: np.where(np.eye(2, 3, dtype=bool), t, 0.0),
     lambda t: fg.where(np.eye(2, 3, dtype=bool), t, 0.0)),
    ("clip", lambda t: np.clip(t, 0.6, 1.3), lambda t: fg.clip(t, 0.6, 1.3)),
    ("einsum", lambda t: np.einsum("ij,ij->i", t, t), lambda t: fg.einsum("ij,ij->i", t, t)),
    ("dot", lambda t: np.dot(t, np.ones(3)), lambda t: fg.dot(t, np.ones(3))),
    ("outer", lambda t: np.outer(t, t), lambda t: fg.outer(t, t)),
    ("matmul_ndarray_left", lambda t: np.matmul(np.ones((4, 2)), t),
     lambda t: fg.matmul(np.ones((4, 2)), t)),
    ("rmatmul_operator", lambda t: np.ones((4, 2)) @ t, lambda t: fg.matmul(np.ones((4, 2)), t)),
    ("radd_ndarray", lambda t: np.ones(3) + t, lambda t: fg.add(np.ones(3), t)),
    ("rsub_ndarray", lambda t: np.ones(3) - t, lambda t: fg.subtract(np.ones(3), t)),
    ("rmul_ndarray", lambda t: np.arange(3.0) * t, lambda t: fg.multiply(np.arange(3.0), t)),
    ("rdiv_ndarray", lambda t: np.ones(3) / t, lambda t: fg.divide(np.ones(3), t)),
    ("rpow_ndarray", lambda t: np.full(3, 2.0) ** t, lambda t: fg.power(np.full(3, 2.0), t)),
    ("np_scalar_mul", lambda t: np.float64(2.0) * t, lambda t: fg.multiply(2.0, t)),
]


@pytest.mark.parametrize("name,np_fn,fg_fn", UFUNC_CASES, ids=[c[0] for c in UFUNC_CASES])
def test_numpy_call_is_recorded_like_fg(name, np_fn, fg_fn):
    data = np.array([[0.5, 1.2, 0.7], [1.6, 0.9, 1.1]])
    t1 = fg.tensor(data, requires_grad=True)
    t2 = fg.tensor(data, requires_grad=True)
    out1, out2 = np_fn(t1), fg_fn(t2)
    assert isinstance(out1, fg.Tensor), f"np route gave {type(out1).__name__}"
    assert out1.requires_grad
    assert out1.grad_fn is not None and out1.grad_fn.op is out2.grad_fn.op
    np.testing.assert_allclose(out1.data, out2.data, rtol=1e-15)
    w = np.random.default_rng(0).standard_normal(out1.shape)
    (out1 * w).sum().backward()
    (out2 * w).sum().backward()
    np.testing.assert_allclose(t1.grad.data, t2.grad.data, rtol=1e-15)


def test_linalg_functions_dispatch():
    a = fg.tensor(np.array([[2.0, 0.5], [0.3, 1.5]]), requires_grad=True)
    for f, g in [(np.linalg.inv, fg.linalg.inv), (np.linalg.det, fg.linalg.det)]:
        out = f(a)
        assert isinstance(out, fg.Tensor) and out.requires_grad
        np.testing.assert_allclose(out.data, g(a).data)
    sign, logdet = np.linalg.slogdet(a)
    assert logdet.requires_grad
    x = np.linalg.solve(a, np.ones(2))
    x.sum().backward()
    assert a.grad.shape == (2, 2)


def test_split_dispatch_gives_differentiable_pieces():
    t = _t([1.0, 2.0, 3.0, 4.0])
    pieces = np.split(t, 2)
    assert len(pieces) == 2 and all(isinstance(p, fg.Tensor) for p in pieces)
    (pieces[0] * 2.0 + pieces[1] * 3.0).sum().backward()
    np.testing.assert_array_equal(t.grad.data, [2.0, 2.0, 3.0, 3.0])


def test_comparison_ufuncs_carry_no_gradient():
    t = _t()
    m = np.greater(t, 1.5)
    assert isinstance(m, fg.Tensor) and m.dtype == np.bool_ and not m.requires_grad


def test_unsupported_numpy_functions_fall_back_to_numpy_values():
    t = fg.tensor([3.0, 1.0, 2.0])           # (no gradient to lose)
    s = np.i0(t)
    assert type(s) is np.ndarray
    np.testing.assert_array_equal(s, np.i0([3.0, 1.0, 2.0]))
    edges = np.histogram_bin_edges(t, bins=2)
    assert type(edges) is np.ndarray
    np.testing.assert_array_equal(edges, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.polyfit(np.arange(2.0), fg.tensor([3.0, 4.0]), 1), [1.0, 3.0])


# NumPy calls with no differentiable op, on a Tensor that requires grad: a floating result would
# silently carry no gradient, so they raise naming the function (PyTorch raises too)
LOST_GRADIENT = [
    ("np.i0", lambda t: np.i0(t)),
    ("np.histogram_bin_edges", lambda t: np.histogram_bin_edges(t, bins=2)),
    ("np.add.reduce", lambda t: np.add.reduce(t)),
    ("np.maximum.accumulate", lambda t: np.maximum.accumulate(t)),
    ("np.polyfit", lambda t: np.polyfit(np.arange(3.0), t, 1)),
    ("np.sum", lambda t: np.sum(t, dtype=np.float32)),
    ("np.sum", lambda t: np.sum(t, dtype=t.dtype)),
    ("np.linalg.tensorinv", lambda t: np.linalg.tensorinv(np.outer(t.detach(), t.detach())
                                                          + np.diag(t), ind=1)),
    ("np.exp", lambda t: np.exp(t, out=np.empty(3))),          # out=: before writing
    ("np.multiply", lambda t: np.multiply(2.0, t, out=np.empty(3))),
]


@pytest.mark.parametrize("culprit,call", LOST_GRADIENT, ids=[c[0] for c in LOST_GRADIENT])
def test_numpy_fallback_refuses_to_drop_a_gradient(culprit, call):
    t = _t([3.0, 1.0, 2.0])
    with pytest.raises(TypeError, match=f"{culprit}: .*no gradient.*requires grad"):
        call(t)
    with fg.no_grad():
        assert not isinstance(call(t), fg.Tensor)
    assert not isinstance(call(t.detach()), fg.Tensor)


# the error names what made fastgraph's operation refuse the call
REFUSAL_REASONS = [
    ("np.sum", lambda t: np.sum(t, dtype=t.dtype), "sum takes no dtype= argument"),
    ("np.mean", lambda t: np.mean(t, dtype=np.float32), "mean takes no dtype= argument"),
    ("np.cumsum", lambda t: np.cumsum(t, dtype=t.dtype), "cumsum takes no dtype= argument"),
    ("np.exp", lambda t: np.exp(t, dtype=np.float64), r"exp takes none of NumPy's keyword "
                                                      r"arguments \(dtype=\)"),
    ("np.add.reduce", lambda t: np.add.reduce(t), r"add has no differentiable \.reduce form"),
]


@pytest.mark.parametrize("culprit,call,reason", REFUSAL_REASONS,
                         ids=[c[0] for c in REFUSAL_REASONS])
def test_numpy_fallback_refusal_names_the_reason(culprit, call, reason):
    with pytest.raises(TypeError, match=f"{culprit}: fastgraph's {reason}, so its result "
                                        f"would carry no gradient"):
        call(_t([3.0, 1.0, 2.0]))


def test_numpy_fallback_refusal_writes_nothing():
    t = _t([3.0, 1.0, 2.0])
    buf = np.zeros(3)
    with pytest.raises(TypeError, match="out="):
        np.exp(t, out=buf)
    with pytest.raises(TypeError, match="np.add.at"):
        np.add.at(buf, [0, 1], t[:2])
    assert not buf.any()


# ... while integer, boolean and non-array results come back as NumPy's (nothing to lose)
NO_GRADIENT_TO_LOSE = [
    lambda t: np.argmax(t), lambda t: np.argsort(t), lambda t: np.allclose(t, t),
    lambda t: np.isnan(t), lambda t: np.shape(t), lambda t: np.ndim(t),
    lambda t: np.count_nonzero(t), lambda t: np.nonzero(t), lambda t: np.array_equal(t, t),
    lambda t: np.isclose(t, 1.0), lambda t: np.signbit(t),
]


@pytest.mark.parametrize("call", NO_GRADIENT_TO_LOSE)
def test_numpy_calls_without_a_floating_result_still_work(call):
    t = _t([3.0, 1.0, 2.0])
    want = call(t.data)
    got = call(t)
    for g, w in zip(np.atleast_1d(np.asarray(got, dtype=object)),
                    np.atleast_1d(np.asarray(want, dtype=object))):
        np.testing.assert_array_equal(g, w)


def test_ufunc_out_argument_respects_inplace_rule():
    t = _t()
    with pytest.raises(RuntimeError, match="in-place"):
        np.exp(t, out=t)
    c = fg.tensor([0.0, 1.0])
    np.exp(c, out=c)
    np.testing.assert_allclose(c.data, np.exp([0.0, 1.0]))


def test_ndarray_plus_tensor_gradient_flows():
    t = _t()
    a = np.array([10.0, 20.0])
    y = a + t
    assert isinstance(y, fg.Tensor)
    z = (a * y - a / t).sum() + a @ t
    z.backward()
    expected = a + a / t.data ** 2 + a
    np.testing.assert_allclose(t.grad.data, expected)


def test_numpy_calls_on_plain_values_return_numpy():
    assert type(fg.exp(np.ones(2))) is np.ndarray
    assert isinstance(fg.sum(np.ones(2)), np.floating)
    assert fg.add(1.0, 2.0) == 3.0


# ---- fastgraph.numpy -----------------------------------------------------------------------------
def _tensorflow_only_names() -> set:
    """Names ``fastgraph`` exports for TensorFlow 1 (``reduce_sum``) that NumPy has not."""
    from fastgraph._core import API, TF
    return {n for api in API.values() if api.names_in(TF) and not api.names_in("numpy")
            for n in api.names_in("fastgraph")}


def test_every_op_is_exposed_under_its_numpy_name():
    tf_only = _tensorflow_only_names()
    assert {"reduce_sum", "cast", "one_hot"} <= tf_only and "exp" not in tf_only
    missing = [n for n in PUBLIC if not hasattr(fnp, n) and n not in tf_only]
    assert not missing
    # names NumPy has too run NumPy's own function on plain values (see the tests below);
    # fastgraph-only names are fastgraph's functions themselves
    for name in ("exp", "sum", "matmul", "where", "maximum", "concatenate", "abs", "max"):
        assert getattr(fnp, name).__wrapped__ is getattr(fg, name)
    assert fnp.softmax is fg.softmax and fnp.relu is fg.relu
    assert fnp.absolute.__wrapped__ is fg.abs and fnp.amax.__wrapped__ is fg.max
    assert fnp.amin.__wrapped__ is fg.min
    for name in ("inv", "solve", "det", "slogdet", "norm"):
        assert getattr(fnp.linalg, name) is getattr(fg.linalg, name)


def test_other_names_pass_through_to_numpy():
    assert fnp.pi == np.pi and fnp.e == np.e and fnp.inf == np.inf
    assert fnp.float32 is np.float32 and fnp.float64 is np.float64 and fnp.newaxis is None
    np.testing.assert_array_equal(fnp.linspace(0, 1, 5), np.linspace(0, 1, 5))
    assert fnp.random is np.random
    # (what fastgraph does not differentiate is NumPy's own: tensorinv; eig is fg.linalg.eig)
    assert fnp.linalg.tensorinv is np.linalg.tensorinv
    assert fnp.linalg.LinAlgError is np.linalg.LinAlgError
    assert fnp.zeros is np.zeros and fnp.ones_like is np.ones_like  # (array: differentiable)
    with pytest.raises(AttributeError):
        fnp.definitely_not_a_numpy_name  # noqa: B018
    assert "exp" in dir(fnp) and "linspace" in dir(fnp)


#: NumPy's submodules with a differentiable twin in the drop-in namespace
_TWIN_MODULES = {"linalg": "fastgraph.linalg", "fft": "fastgraph.fft"}


def _public_numpy_names():
    return sorted(n for n in dir(np) if not n.startswith("_") and hasattr(np, n))


def test_every_numpy_name_means_what_it_means_to_numpy():
    # fastgraph.ops holds helpers and submodules too (shape, identity): each NumPy name in the
    # drop-in namespace is NumPy's own object or a deliberate differentiable twin, a function
    # where NumPy's is one and a module only where NumPy's is a module
    for name in _public_numpy_names():
        ours, theirs = getattr(fnp, name), getattr(np, name)
        if ours is theirs:
            continue
        assert name in fnp.__all__, f"fastgraph.numpy.{name} is {ours!r}, not NumPy's"
        if isinstance(theirs, types.ModuleType):
            assert isinstance(ours, types.ModuleType) and ours.__name__ == _TWIN_MODULES[name]
        else:
            assert callable(theirs) and not isinstance(theirs, type), name
            assert callable(ours) and not isinstance(ours, (type, types.ModuleType)), name
    for name, value in vars(fnp).items():     # and no other module of fastgraph's leaks in
        if isinstance(value, types.ModuleType) and not name.startswith("_"):
            assert value is getattr(np, name, None) or _TWIN_MODULES.get(name) == value.__name__


def test_numpy_names_that_fastgraph_helpers_shadowed():
    params = fg.tensor(np.ones((2, 3)), requires_grad=True)
    assert fnp.shape(params) == (2, 3) and fnp.shape(np.ones(4)) == (4,)
    np.testing.assert_array_equal(fnp.identity(3), np.eye(3))
    with fg.Graph().as_default():
        x = fg.placeholder(fg.float64, (None, 3))
        # a graph Node's static shape is known without running it (None: unknown)
        assert fnp.shape(x) == (None, 3) and fnp.ndim(x) == 2
        assert fnp.size(fg.placeholder(fg.float64, (2, 3))) == 6
        with pytest.raises(TypeError, match="np.size.*unknown"):
            fnp.size(x)
    # a drop-in script asking for its parameters' shape, eager and traced
    loss = lambda p: fnp.sum(p ** 2) / fnp.shape(p)[0]  # noqa: E731
    for run in (fg.grad(loss), fg.function(fg.grad(loss))):
        np.testing.assert_array_equal(run(np.ones((2, 3))), np.ones((2, 3)))


def test_top_level_numpy_names_are_functions_or_numpys():
    # fg's NumPy-named entries are its ops and factories; its modules are twins of NumPy's
    for name in _public_numpy_names():
        ours = getattr(fg, name, None)
        if ours is None or ours is getattr(np, name):
            continue
        if isinstance(ours, types.ModuleType):
            assert name in ("linalg", "random", "fft") and ours.__name__ == f"fastgraph.{name}"
        else:
            assert callable(ours), name


def test_drop_in_on_plain_arrays_matches_numpy():
    x = np.linspace(-1, 1, 7)
    for name in ("exp", "tanh", "abs", "square", "sum", "mean", "max", "std", "sign"):
        np.testing.assert_array_equal(getattr(fnp, name)(x), getattr(np, name)(x))
    np.testing.assert_array_equal(fnp.maximum(x, 0.0), np.maximum(x, 0.0))
    np.testing.assert_array_equal(fnp.sum(x.reshape(7, 1), axis=0), np.sum(x.reshape(7, 1), axis=0))


SCRIPT = '''
def run(np):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3)).astype(np.float64)
    w_true = np.array([1.0, -2.0, 0.5])
    y = np.tanh(X @ w_true) + 0.01 * np.cos(np.linspace(0, np.pi, 20))

    def predict(w, X):
        return np.tanh(np.dot(X, w))

    def loss(w):
        r = predict(w, X) - y
        return np.mean(r ** 2) + 1e-3 * np.sum(np.abs(w)) + 0.0 * np.linalg.norm(w_true)

    w = np.zeros(3) + 0.1
    stats = [np.max(X), np.min(X), np.var(X, axis=0), np.log1p(np.exp(-np.abs(X))).sum(),
             np.concatenate([X[:2], X[-2:]]).shape, np.where(X > 0, X, 0.0).sum(),
             np.stack([w, w]).sum(axis=1), np.float32(1.5), np.clip(X, -1, 1).mean()]
    return loss, w, stats
'''


def test_small_numpy_script_runs_unchanged():
    ns: dict = {}
    exec(SCRIPT, ns)
    loss_np, w_np, stats_np = ns["run"](np)
    loss_fg, w_fg, stats_fg = ns["run"](fnp)
    assert loss_np(w_np) == pytest.approx(loss_fg(w_fg), rel=1e-15)
    for a, b in zip(stats_np, stats_fg):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    # and the fastgraph.numpy version is differentiable
    g = fg.grad(loss_fg)(w_fg)
    eps = 1e-6
    num = [(loss_np(w_np + eps * e) - loss_np(w_np - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-9)


A = np.arange(6.0).reshape(2, 3)
# NumPy forms and keywords the differentiable ops do not take: plain arrays get NumPy's own
NUMPY_ONLY_FORMS = [
    ("where-one-argument", lambda m: m.where(A > 2)),
    ("sum-dtype", lambda m: m.sum(A, dtype=np.float32)),
    ("mean-dtype", lambda m: m.mean(A, dtype=np.float32)),
    ("sum-initial", lambda m: m.sum(A, initial=10.0)),
    ("max-initial", lambda m: m.max(A, initial=-1.0)),
    ("sum-where", lambda m: m.sum(A, where=A > 1)),
    ("reshape-order", lambda m: m.reshape(A, (3, 2), order="F")),
    ("reshape-shape-keyword", lambda m: m.reshape(A, shape=(3, 2))),
    ("ravel-order", lambda m: m.ravel(A, order="F")),
    ("clip-min-max-keywords", lambda m: m.clip(A, min=1, max=2)),
    ("concatenate-axis-none", lambda m: m.concatenate([A, A], axis=None)),
    ("einsum-trace", lambda m: m.einsum("ii", np.eye(3))),
    ("einsum-interleaved", lambda m: m.einsum(A, [0, 1], A, [2, 1], [0, 2])),
    ("reciprocal-int", lambda m: m.reciprocal(np.array([2]))),
    ("exp-out", lambda m: m.exp(A, out=np.empty((2, 3)))),
]


@pytest.mark.parametrize("name,call", NUMPY_ONLY_FORMS, ids=[c[0] for c in NUMPY_ONLY_FORMS])
def test_drop_in_takes_numpy_forms_on_plain_arrays(name, call):
    want, got = call(np), call(fnp)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,)):
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


def test_drop_in_with_tensors():
    t = fnp.tanh(fg.tensor([0.1, 0.2], requires_grad=True))
    assert isinstance(t, fg.Tensor) and t.requires_grad


@pytest.mark.parametrize("call", [lambda x: x + np.zeros_like(x), lambda x: x * np.ones_like(x),
                                  lambda x: x + np.full_like(x, 2.0),
                                  lambda x: x * np.round(x), lambda x: x * np.around(x, 1),
                                  lambda x: x * np.rint(x), lambda x: x * np.trunc(x)])
def test_value_free_and_piecewise_constant_calls_keep_the_gradient(call):
    xv = np.array([0.3, 1.1, 2.6])
    got = fg.grad(lambda x: call(x).sum())(xv)
    eps = 1e-6      # (away from the jumps: finite differences)
    want = [(call(xv + eps * e).sum() - call(xv - eps * e).sum()) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_full_like_keeps_its_fill_values_gradient_rule():
    shape_only = fg.tensor(np.zeros(2))
    # the fill value's gradient: one for each of the copies
    assert fg.grad(lambda w: np.full_like(shape_only, w).sum())(3.0) == 2.0
    assert fg.grad(lambda w: (w * np.full_like(shape_only, 2.0)).sum())(3.0) == 4.0


def test_fix_and_builtin_round():
    np.testing.assert_array_equal(np.fix(fg.tensor([-1.5, 1.5])).data, [-1.0, 1.0])
    assert round(fg.tensor(2.567), 2).item() == 2.57
    assert fg.grad(lambda x: x * np.fix(x))(2.5) == 2.0


def test_row_stack_routes_where_numpy_has_it():
    """NumPy 2.5 removed ``np.row_stack``: fastgraph.numpy keeps it (as vstack), and NumPy's
    function routes to it only where NumPy still has one (importing must not fail either way)."""
    t = fg.tensor(np.ones((2, 3)), requires_grad=True)
    out = fnp.row_stack([t, 2.0 * t])
    assert out.shape == (4, 3)
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.full((2, 3), 3.0))
    if hasattr(np, "row_stack"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert isinstance(np.row_stack([t, t]), fg.Tensor)
