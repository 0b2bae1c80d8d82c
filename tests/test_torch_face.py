"""PyTorch's face: tensors of ``fastgraph.torch`` mean what PyTorch's mean, method by method and
call form by call form (against PyTorch 2.13 when it is importable); tensors of the top-level
``fastgraph`` keep NumPy's meanings (against NumPy); and the face travels through every way a
program makes a tensor (operations, indexing, ``.grad``, ``detach``, ``DataLoader``, modules,
checkpoints, mixed operands)."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.torch as ftorch
import fastgraph.torch.nn as fnn
from fastgraph.torch import _tensor as torch_face
from fastgraph.torch.utils.data import DataLoader, TensorDataset

F32 = np.array([[3.0, 1.0, 2.0, 2.0], [0.0, 5.0, -1.0, 4.0], [7.0, 6.0, 1.0, 0.5]], np.float32)
I64 = np.array([[3, 1, 2], [0, 5, -1]], np.int64)
B = np.array([[True, False, True], [True, True, True]])
EVEN = np.array([4.0, 1.0, 3.0, 2.0], np.float32)
UNIQUE = F32 + np.array([0.0, 0.0, 0.0, 0.5], np.float32)   # (ties' indices are PyTorch's choice)
NAN = np.array([[1.0, np.nan, 3.0], [2.0, 0.0, 1.0]], np.float32)


# ---- PyTorch's face against PyTorch ---------------------------------------------------------------
#: (data, method, args, kwargs): one line per method and call form
TORCH_CALLS = [
    (F32, "max", (), {}), (F32, "max", (1,), {}), (F32, "max", (0, True), {}),
    (F32, "max", (), {"dim": -1}), (F32, "max", (1,), {"keepdim": True}),
    (F32, "max", (), {"axis": 1}), (I64, "max", (1,), {}),
    (F32, "min", (), {}), (F32, "min", (1,), {}), (F32, "min", (0, True), {}),
    (F32, "min", (), {"dim": 0, "keepdim": False}),
    (F32, "std", (), {}), (F32, "std", (1,), {}), (F32, "std", (False,), {}),
    (F32, "std", (1, False), {}), (F32, "std", (1, True, True), {}),
    (F32, "std", (), {"dim": 0, "correction": 0}), (F32, "std", (), {"unbiased": False}),
    (F32, "std", ((0, 1),), {}), (I64, "std", (), {}),
    (F32, "var", (), {}), (F32, "var", (0,), {}), (F32, "var", (1, False, True), {}),
    (F32, "var", (), {"dim": 1, "correction": 2}), (I64, "var", (1,), {}),
    (F32, "mean", (), {}), (F32, "mean", (1,), {}), (F32, "mean", (1, True), {}),
    (F32, "mean", ((0, 1),), {}), (I64, "mean", (), {}), (I64, "mean", (1,), {}),
    (I64, "mean", (), {"dtype": np.float64}),
    (F32, "sum", (), {}), (F32, "sum", (0,), {}), (F32, "sum", (0, True), {}),
    (F32, "sum", (), {"axis": 1, "keepdims": True}), (B, "sum", (1,), {}),
    (I64, "sum", (), {"dtype": np.float32}),
    (F32, "prod", (), {}), (F32, "prod", (1,), {}), (F32, "prod", (1, True), {}),
    (I64, "prod", (0,), {}),
    (F32, "sort", (), {}), (F32, "sort", (0,), {}), (F32, "sort", (1, True), {}),
    (F32, "sort", (), {"descending": True}), (F32, "sort", (), {"dim": 0, "stable": True}),
    (I64, "sort", (1,), {}),
    (F32, "argsort", (), {}), (F32, "argsort", (0,), {}), (F32, "argsort", (1, True), {}),
    (F32, "repeat", (2, 3), {}), (F32, "repeat", ((2, 1),), {}), (F32, "repeat", (2, 1, 2), {}),
    (F32, "repeat", (2,), {}),
    (F32, "flatten", (), {}), (F32, "flatten", (0,), {}), (F32, "flatten", (1,), {}),
    (F32.reshape(3, 2, 2), "flatten", (1,), {}), (F32.reshape(3, 2, 2), "flatten", (0, 1), {}),
    (F32, "median", (), {}), (EVEN, "median", (), {}), (F32, "median", (1,), {}),
    (F32, "median", (0, True), {}), (I64, "median", (), {}), (NAN, "median", (1,), {}),
    (UNIQUE, "kthvalue", (2,), {}), (UNIQUE, "kthvalue", (1, 0), {}),
    (F32, "all", (), {}), (F32, "all", (1,), {}), (B, "all", (1, True), {}), (B, "any", (0,), {}),
    (F32, "cumsum", (1,), {}), (F32, "cumsum", (), {}), (I64, "cumsum", (0,), {}),
    (F32, "cumprod", (0,), {}), (F32, "cumprod", (), {}),
    (F32, "softmax", (1,), {}), (F32, "softmax", (), {}), (F32, "log_softmax", (0,), {}),
    (F32, "logsumexp", (1,), {}), (F32, "logsumexp", (), {}),
    (F32, "norm", (), {}), (F32, "norm", (1,), {}), (F32, "norm", (), {"dim": 1}),
    (F32, "transpose", (0, 1), {}), (F32, "transpose", (), {}),
    (F32.reshape(3, 1, 4), "squeeze", (), {}), (F32.reshape(3, 1, 4), "squeeze", (1,), {}),
    (F32.reshape(3, 1, 4), "squeeze", (0,), {}),
    (F32, "split", (2,), {}), (F32, "split", ([1, 2],), {}), (F32, "split", (2, 1), {}),
    (F32, "chunk", (2,), {}), (F32, "chunk", (3, 1), {}),
    (F32, "clamp", (1.0,), {}), (F32, "clamp", (1.0, 3.0), {}), (F32, "clamp", (), {"max": 2.0}),
    (I64, "clamp", (1,), {}), (I64, "clamp", (), {"max": 1}),
    (F32, "clip", (1.0, 3.0), {}), (I64, "clip", (0,), {}),
    (F32 * 1.37, "round", (), {}), (F32 * 1.37, "round", (), {"decimals": 1}),
    (F32 * 1.37, "round", (1,), {}),
    (F32, "type", (), {}), (I64, "type", (), {}), (F32, "type", (np.float64,), {}),
    (I64, "nonzero", (), {}), (I64, "nonzero", (), {"as_tuple": True}),
    (F32, "argmax", (), {}), (F32, "argmax", (1,), {}), (F32, "argmin", (0, True), {}),
    (F32, "topk", (2,), {}), (F32, "view", (4, 3), {}), (F32, "view", (-1,), {}),
    (F32, "amax", (1,), {}), (F32, "amin", (), {}),
    (F32, "new_zeros", (2, 3), {}), (F32, "new_ones", ((2,),), {}),
    (F32, "new_full", ((2,), 7.0), {}), (F32, "new_tensor", ([1, 2],), {}),
]


def _call_id(case):
    data, name, args, kwargs = case
    kw = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    shown = ", ".join([repr(a) for a in args] + ([kw] if kw else []))
    return f"{data.dtype}-{name}({shown})"


def _plain(v):
    """A result as comparable Python/NumPy values (named tuples field by field)."""
    if hasattr(v, "detach") and hasattr(v, "shape"):
        arr = v.detach().numpy() if hasattr(v, "numpy") else np.asarray(v.detach().data)
        return ("tensor", np.asarray(arr))
    if isinstance(v, tuple):
        named = hasattr(v, "values") and hasattr(v, "indices")   # (torch's are structseqs)
        return ("tuple", tuple(_plain(x) for x in v), named)
    return ("value", v)


def _assert_same(ours, theirs, where):
    assert ours[0] == theirs[0], f"{where}: {ours} vs {theirs}"
    if ours[0] == "tensor":
        a, b = ours[1], theirs[1]
        assert a.shape == b.shape, f"{where}: shape {a.shape} vs {b.shape}"
        assert a.dtype.kind == b.dtype.kind and a.dtype.itemsize == b.dtype.itemsize, \
            f"{where}: dtype {a.dtype} vs {b.dtype}"
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-5,
                                   atol=1e-6, equal_nan=True, err_msg=where)
    elif ours[0] == "tuple":
        assert ours[2] == theirs[2], f"{where}: fields {ours[2]} vs {theirs[2]}"
        assert len(ours[1]) == len(theirs[1]), where
        for x, y in zip(ours[1], theirs[1]):
            _assert_same(x, y, where)
    else:
        assert ours[1] == theirs[1], f"{where}: {ours[1]!r} vs {theirs[1]!r}"


def _torch_arg(torch, v):
    if isinstance(v, type) and issubclass(v, np.generic):
        return getattr(torch, np.dtype(v).name)
    return v


@pytest.mark.parametrize("case", TORCH_CALLS, ids=_call_id)
def test_torch_face_method_is_pytorchs(case):
    torch = pytest.importorskip("torch")
    data, name, args, kwargs = case
    ours_t = ftorch.tensor(data.copy())
    theirs_t = torch.tensor(data.copy())
    try:
        theirs = _plain(getattr(theirs_t, name)(*[_torch_arg(torch, a) for a in args],
                                               **{k: _torch_arg(torch, v)
                                                  for k, v in kwargs.items()}))
    except (TypeError, RuntimeError, IndexError, ValueError, NotImplementedError) as e:
        with pytest.raises((TypeError, RuntimeError, IndexError, ValueError)):
            getattr(ours_t, name)(*args, **kwargs)
        return
    ours = getattr(ours_t, name)(*args, **kwargs)
    _assert_same(_plain(ours), theirs, _call_id(case))
    for v in (ours if isinstance(ours, tuple) else (ours,)):
        if isinstance(v, fg.Tensor):
            assert isinstance(v, ftorch.Tensor), f"{_call_id(case)}: {type(v).__name__}"


@pytest.mark.parametrize("name, args", [("max", (1,)), ("std", (0,)), ("sort", (1,)),
                                        ("median", (1,)), ("norm", ()), ("prod", (1,))])
def test_torch_face_gradients_are_pytorchs(name, args):
    torch = pytest.importorskip("torch")
    x = ftorch.tensor(F32.astype(np.float64), requires_grad=True)
    xt = torch.tensor(F32.astype(np.float64), requires_grad=True)
    for t, lib in ((x, ftorch), (xt, torch)):
        out = getattr(t, name)(*args)
        out = out[0] if isinstance(out, tuple) else out
        weights = lib.arange(1.0, 1.0 + out.numel(), dtype=lib.float64).reshape(out.shape)
        (out * weights).sum().backward()
    assert isinstance(x.grad, ftorch.Tensor)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10)


# ---- NumPy's face against NumPy ------------------------------------------------------------------
#: (data, method, args): ``fg.tensor(data).method(*args)`` is ``ndarray.method(*args)``
NUMPY_CALLS = [
    (F32, "max", ()), (F32, "max", (1,)), (F32, "min", (0,)), (F32, "std", ()),
    (F32, "std", (1,)), (F32, "var", (0,)), (F32, "mean", (1,)), (I64, "mean", ()),
    (F32, "sum", (0,)), (F32, "prod", (1,)), (F32, "repeat", (2,)), (F32, "repeat", (2, 1)),
    (F32, "flatten", ()), (F32, "cumsum", ()), (F32, "cumsum", (1,)), (F32 * 1.37, "round", (1,)),
    (F32, "clip", (1.0, 3.0)), (F32, "argmax", (1,)), (F32, "transpose", ()),
    (F32, "argsort", ()),
]


@pytest.mark.parametrize("data, name, args", NUMPY_CALLS,
                         ids=[f"{d.dtype}-{n}{a}" for d, n, a in NUMPY_CALLS])
def test_numpy_face_method_is_numpys(data, name, args):
    ours = getattr(fg.tensor(data.copy()), name)(*args)
    theirs = getattr(data.copy(), name)(*args)
    assert type(ours) is fg.Tensor
    np.testing.assert_allclose(np.asarray(ours.data, np.float64),
                               np.asarray(theirs, np.float64), rtol=1e-6)
    assert np.asarray(ours.data).shape == np.shape(theirs)


def test_numpy_face_keeps_pytorch_keywords():
    """NumPy's face chooses PyTorch's meaning only where PyTorch's keywords are written."""
    x = fg.tensor(F32)
    assert isinstance(x.max(dim=1), tuple)
    np.testing.assert_allclose(x.std(dim=0).data, F32.std(axis=0, ddof=1), rtol=1e-6)
    assert x.max(1).shape == (3,)


# ---- the face travels ----------------------------------------------------------------------------
FACTORIES = [
    lambda: ftorch.tensor([1.0, 2.0]), lambda: ftorch.zeros(2, 3), lambda: ftorch.ones(2),
    lambda: ftorch.randn(2), lambda: ftorch.rand(2), lambda: ftorch.arange(4),
    lambda: ftorch.linspace(0, 1, 5), lambda: ftorch.empty(3), lambda: ftorch.full((2,), 3.0),
    lambda: ftorch.from_numpy(np.ones(3)), lambda: ftorch.as_tensor(np.ones(3)),
    lambda: ftorch.zeros_like(ftorch.ones(2)), lambda: ftorch.ones_like(fg.ones(2)),
    lambda: ftorch.randn_like(ftorch.ones(2)), lambda: ftorch.full_like(ftorch.ones(2), 2.0),
    lambda: ftorch.eye(3), lambda: ftorch.randint(0, 5, (3,)), lambda: ftorch.randperm(4),
    lambda: ftorch.Tensor(2, 3), lambda: ftorch.Tensor([1.0]), lambda: ftorch.logspace(0, 1, 3),
    lambda: ftorch.normal(0.0, 1.0, (2,)), lambda: fnn.Parameter(np.ones(2, np.float32)),
    lambda: fnn.Linear(2, 3).weight, lambda: fnn.BatchNorm1d(3).running_mean,
    lambda: fnn.utils.clip_grad_norm_([], 1.0),
]


@pytest.mark.parametrize("make", FACTORIES, ids=[f"factory{i}" for i in range(len(FACTORIES))])
def test_factories_make_pytorch_faced_tensors(make):
    assert isinstance(make(), ftorch.Tensor)


def _ops_on(x):
    """Every way of deriving a tensor from ``x`` (a float matrix requiring grad)."""
    y = x * 2 + 1
    return {"arithmetic": y, "rsub": 1 - x, "power": x ** 2, "function": ftorch.tanh(x),
            "indexing": x[0], "bool indexing": x[x > 0], "reduction": x.sum(),
            "comparison": x > 0, "matmul": x @ x.T, "method": x.exp(), "view": x.view(-1),
            "detach": x.detach(), "clone": x.clone(), "numpy function": np.exp(x),
            "cat": ftorch.cat([x, x]), "torch function": ftorch.max(x, 1).values,
            "sort indices": ftorch.sort(x, 1).indices, "type conversion": x.double(),
            "item": x[0, 0] * 1}


@pytest.mark.parametrize("how", list(_ops_on(ftorch.ones(2, 2, requires_grad=True))))
def test_results_of_pytorch_faced_inputs_are_pytorch_faced(how):
    x = ftorch.tensor(F32[:2, :2], requires_grad=True)
    assert isinstance(_ops_on(x)[how], ftorch.Tensor)


@pytest.mark.parametrize("how", [h for h in _ops_on(fg.ones((2, 2)))
                                 if h not in ("cat", "torch function", "sort indices")])
def test_results_of_numpy_faced_inputs_are_numpy_faced(how):
    x = fg.tensor(F32[:2, :2], requires_grad=True)
    assert type(_ops_on(x)[how]) is fg.Tensor


def test_mixed_faces_give_pytorchs():
    """A NumPy-faced operand with a PyTorch-faced one: PyTorch's face, either order."""
    a, b = fg.tensor(F32), ftorch.tensor(F32)
    for r in (a + b, b + a, a * b, fg.maximum(a, b), ftorch.maximum(b, a), a @ b.T):
        assert isinstance(r, ftorch.Tensor)
    assert isinstance((a + b).max(1), tuple)


def test_gradients_have_the_face_of_their_tensor():
    x = ftorch.tensor(F32, requires_grad=True)
    w = fg.tensor(F32, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(type(g)))
    (x * w).sum().backward()
    assert isinstance(x.grad, ftorch.Tensor) and type(w.grad) is fg.Tensor
    assert seen == [ftorch.Tensor]
    (x * w).sum().backward()                       # accumulated
    assert isinstance(x.grad, ftorch.Tensor) and type(w.grad) is fg.Tensor
    gx, gw = ftorch.autograd.grad((x * w).sum(), [x, w])
    assert isinstance(gx, ftorch.Tensor) and type(gw) is fg.Tensor
    gx, = ftorch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert isinstance(gx, ftorch.Tensor) and gx.requires_grad
    g2, = ftorch.autograd.grad(gx.sum(), x)
    assert isinstance(g2, ftorch.Tensor)
    np.testing.assert_allclose(g2.numpy(), 6 * F32, rtol=1e-6)


def test_detach_clone_of_parameters_are_plain_pytorch_tensors():
    p = fnn.Parameter(np.ones(3, np.float32))
    for t in (p.detach(), p.clone(), p * 1):
        assert type(t) is ftorch.Tensor


def test_module_outputs_and_buffers_are_pytorch_faced():
    m = fnn.Sequential(fnn.Linear(4, 3), fnn.ReLU(), fnn.BatchNorm1d(3))
    out = m(fg.tensor(F32))                          # a NumPy-faced input still meets the weights
    assert isinstance(out, ftorch.Tensor)
    assert isinstance(out.max(1), tuple)
    m.register_buffer("steps", np.zeros(1))
    assert isinstance(m.steps, ftorch.Tensor)
    out.sum().backward()
    assert all(isinstance(p.grad, ftorch.Tensor) for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(isinstance(p.grad, ftorch.Tensor) for p in m.parameters())


def test_dataloader_batches_are_pytorch_faced():
    ds = TensorDataset(fg.tensor(F32), fg.tensor(np.arange(3)))     # NumPy-faced samples
    for xb, yb in DataLoader(ds, batch_size=2):
        assert isinstance(xb, ftorch.Tensor) and isinstance(yb, ftorch.Tensor)
    for xb in DataLoader(list(F32), batch_size=2):                   # arrays
        assert isinstance(xb, ftorch.Tensor)
    for xb in DataLoader([1.0, 2.0, 3.0], batch_size=2):             # numbers
        assert isinstance(xb, ftorch.Tensor)


def test_load_gives_pytorch_faced_tensors(tmp_path):
    path = str(tmp_path / "ckpt.pt")
    ftorch.save({"w": fg.tensor(F32), "nested": [ftorch.ones(2)]}, path)
    back = ftorch.load(path)
    assert isinstance(back["w"], ftorch.Tensor) and isinstance(back["nested"][0], ftorch.Tensor)
    assert isinstance(back["w"].max(1), tuple)


def test_isinstance_is_the_face():
    assert isinstance(ftorch.ones(2), ftorch.Tensor)
    assert isinstance(fnn.Parameter(np.ones(2, np.float32)), ftorch.Tensor)
    assert not isinstance(fg.ones(2), ftorch.Tensor)      # NumPy's face
    assert ftorch.is_tensor(fg.ones(2))                   # but a tensor all the same
    assert isinstance(ftorch.ones(2), fg.Tensor)


# ---- graph values: fg.function and static graphs carry the face --------------------------------
#: method calls whose meaning differs between the faces, traced as run eagerly
TRACED_CALLS = [("max", (1,)), ("min", (0, True)), ("std", ()), ("var", (1,)),
                ("repeat", (2, 1)), ("sum", (0, True)), ("mean", (1,)), ("flatten", (1,)),
                ("prod", (1,))]


def _values(v):
    if isinstance(v, (tuple, list)):
        return [_values(x) for x in v]
    return np.asarray(v.detach().numpy() if isinstance(v, fg.Tensor) else v)


def _assert_values_equal(got, want):
    got, want = _values(got), _values(want)
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_values_equal(g, w)
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=1e-6)


@pytest.mark.parametrize("name, args", TRACED_CALLS, ids=[f"{n}{a}" for n, a in TRACED_CALLS])
def test_fg_function_traces_each_face_as_it_runs_eagerly(name, args):
    def call(x):
        return getattr(x * 1, name)(*args)
    f = fg.function(call)
    for x in (ftorch.tensor(F32), fg.tensor(F32)):       # one function, both faces: two traces
        _assert_values_equal(f(x), call(x))


def test_compiled_module_forward_means_what_it_means_eagerly():
    class Head(fnn.Module):
        def __init__(self):
            super().__init__()
            self.fc = fnn.Linear(4, 3)

        def forward(self, x):
            out = self.fc(x)
            return out.max(1).indices, out.std(), out.repeat(1, 2)

    m = Head()
    for x in (ftorch.tensor(F32), fg.tensor(F32)):       # the parameters give the face
        _assert_values_equal(fg.function(m)(x), m(x))


def test_module_on_a_placeholder_builds_pytorch_faced_nodes():
    m = fnn.Linear(4, 3)
    with fg.Graph().as_default():
        x = fg.placeholder(fg.float32, (None, 4))
        out = m(x)
        assert isinstance(out, torch_face.Node)
        top = out.max(1)
        assert isinstance(top, tuple)
        spread = out.std()
        with fg.Session() as sess:
            sess.run(fg.global_variables_initializer())
            got = sess.run([top.values, top.indices, spread], {x: F32})
    _assert_values_equal(got, [m(ftorch.tensor(F32)).max(1).values,
                               m(ftorch.tensor(F32)).max(1).indices,
                               m(ftorch.tensor(F32)).std()])


def test_numpy_faced_graphs_stay_numpys():
    with fg.Graph().as_default():
        x = fg.placeholder(fg.float32, (None, 4))
        y = (x * 2).max(1)
        assert type(y) is fg.Node
        with fg.Session() as sess:
            np.testing.assert_allclose(sess.run(y, {x: F32}), (F32 * 2).max(1))
