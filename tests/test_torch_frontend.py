"""``fastgraph.torch`` against PyTorch 2.13: the tutorial programs ("learning PyTorch with
examples": the polynomial fit with tensors, with autograd, with a custom autograd.Function),
micrograd's PyTorch-parity tests, and tables of functions and methods (values, dtypes,
gradients), each run under both modules from the same data."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.torch as ftorch

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().data)


# ---- the tutorial programs, written once, run under either module ------------------------------
def polynomial_tensors(torch, init, steps=300):
    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    a, b, c, d = (torch.tensor(v, device=device, dtype=dtype) for v in init)
    learning_rate = 1e-6
    losses = []
    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum().item()
        losses.append(loss)
        grad_y_pred = 2.0 * (y_pred - y)
        grad_a = grad_y_pred.sum()
        grad_b = (grad_y_pred * x).sum()
        grad_c = (grad_y_pred * x ** 2).sum()
        grad_d = (grad_y_pred * x ** 3).sum()
        a -= learning_rate * grad_a
        b -= learning_rate * grad_b
        c -= learning_rate * grad_c
        d -= learning_rate * grad_d
    return losses, [a.item(), b.item(), c.item(), d.item()]


def polynomial_autograd(torch, init, steps=300, dtype=None):
    dtype = dtype or torch.float
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = torch.sin(x)
    a, b, c, d = (torch.tensor(v, dtype=dtype, requires_grad=True) for v in init)
    learning_rate = 1e-6
    losses = []
    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return losses, [a.item(), b.item(), c.item(), d.item()]


def legendre_function(torch):
    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)
    return LegendrePolynomial3


def polynomial_custom_function(torch, init, steps=300):
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = torch.sin(x)
    a, b, c, d = (torch.full((), v, dtype=dtype, requires_grad=True) for v in init)
    learning_rate = 5e-6
    P3 = legendre_function(torch)
    losses = []
    for t in range(steps):
        y_pred = a + b * P3.apply(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return losses, [a.item(), b.item(), c.item(), d.item()]


INIT = [0.3367, 0.1288, 0.2345, 0.2303]


@pytest.mark.parametrize("program", [polynomial_tensors, polynomial_autograd])
def test_tutorial_polynomial(program):
    ours, theirs = program(ftorch, INIT), program(torch, INIT)
    # float32 from the same data: the sums are NumPy's pairwise sums, PyTorch's its own
    # vectorised ones, so the last bits of each step's loss may differ
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-5, atol=1e-6)


def test_tutorial_polynomial_float64_exact():
    ours = polynomial_autograd(ftorch, INIT, steps=50, dtype=ftorch.float64)
    theirs = polynomial_autograd(torch, INIT, steps=50, dtype=torch.float64)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)


def test_tutorial_custom_function():
    init = [0.0, -1.0, 0.0, 0.3]
    ours, theirs = polynomial_custom_function(ftorch, init), polynomial_custom_function(torch, init)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-5, atol=1e-6)


# ---- micrograd's PyTorch-parity tests ----------------------------------------------------------
def micrograd_sanity(torch):
    x = torch.Tensor([-4.0]).double()
    x.requires_grad = True
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    return y.data.item(), x.grad.item()


def micrograd_more_ops(torch):
    a = torch.Tensor([-4.0]).double()
    b = torch.Tensor([2.0]).double()
    a.requires_grad = True
    b.requires_grad = True
    c = a + b
    d = a * b + b ** 3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e ** 2
    g = f / 2.0
    g = g + 10.0 / f
    g.backward()
    return g.data.item(), a.grad.item(), b.grad.item()


@pytest.mark.parametrize("program", [micrograd_sanity, micrograd_more_ops])
def test_micrograd_parity(program):
    np.testing.assert_allclose(program(ftorch), program(torch), rtol=1e-12)


# ---- functions and methods: values, dtypes, gradients ------------------------------------------
X = np.array([[0.5, -1.25, 2.0, 0.75], [3.0, 0.25, -0.5, 1.5], [-2.0, 1.0, 0.125, -0.75]])

# (name, call with the module `m` and the input `x`); each result (or tuple of results) is
# compared in value and dtype, and the sum of its float parts differentiated
CASES = [
    ("sum dim", lambda m, x: m.sum(x, dim=1)),
    ("sum dim keepdim", lambda m, x: x.sum(dim=0, keepdim=True)),
    ("sum dims", lambda m, x: x.sum(dim=(0, 1))),
    ("mean dim", lambda m, x: x.mean(dim=-1)),
    ("prod dim", lambda m, x: m.prod(x, 1)),
    ("max", lambda m, x: m.max(x)),
    ("max dim", lambda m, x: m.max(x, 1)),
    ("max dim keepdim", lambda m, x: x.max(dim=0, keepdim=True)),
    ("min dim method", lambda m, x: x.min(dim=1)),
    ("max other", lambda m, x: m.max(x, x * 0.5)),
    ("argmax", lambda m, x: m.argmax(x)),
    ("argmax dim", lambda m, x: x.argmax(dim=1)),
    ("argmin dim keepdim", lambda m, x: m.argmin(x, 0, keepdim=True)),
    ("std", lambda m, x: m.std(x)),
    ("std dim", lambda m, x: x.std(dim=1)),
    ("var dim biased", lambda m, x: x.var(dim=0, unbiased=False)),
    ("var correction", lambda m, x: m.var(x, dim=1, correction=2, keepdim=True)),
    ("sort", lambda m, x: m.sort(x)),
    ("sort dim descending", lambda m, x: x.sort(dim=0, descending=True)),
    ("argsort", lambda m, x: m.argsort(x, dim=1, descending=True)),
    ("topk", lambda m, x: m.topk(x, 2)),
    ("topk dim smallest", lambda m, x: x.topk(2, dim=0, largest=False)),
    ("transpose", lambda m, x: m.transpose(x, 0, 1)),
    ("transpose method", lambda m, x: x.transpose(0, 1)),
    ("transpose 3d", lambda m, x: x.reshape(3, 2, 2).transpose(0, 2)),
    ("t", lambda m, x: x.t()),
    ("cat", lambda m, x: m.cat([x, x * 2], dim=1)),
    ("cat 0", lambda m, x: m.cat((x, x))),
    ("stack", lambda m, x: m.stack([x, x], dim=1)),
    ("split size", lambda m, x: m.split(x, 3, dim=1)),
    ("split sizes", lambda m, x: x.split([1, 2], dim=0)),
    ("chunk", lambda m, x: x.chunk(2, dim=1)),
    ("view", lambda m, x: x.view(2, 6)),
    ("view -1", lambda m, x: x.view(-1)),
    ("view tuple", lambda m, x: x.view((4, 3))),
    ("reshape", lambda m, x: m.reshape(x, (6, 2))),
    ("unsqueeze", lambda m, x: x.unsqueeze(1)),
    ("unsqueeze -1", lambda m, x: m.unsqueeze(x, -1)),
    ("squeeze dim", lambda m, x: x.unsqueeze(0).squeeze(0)),
    ("squeeze dim not 1", lambda m, x: x.squeeze(1)),
    ("squeeze", lambda m, x: m.squeeze(x.view(3, 1, 4))),
    ("permute", lambda m, x: x.view(3, 2, 2).permute(2, 0, 1)),
    ("flatten", lambda m, x: x.view(3, 2, 2).flatten()),
    ("flatten start", lambda m, x: x.view(3, 2, 2).flatten(1)),
    ("flatten range", lambda m, x: m.flatten(x.view(3, 2, 2), 0, 1)),
    ("expand", lambda m, x: x[0:1].expand(2, 3, 4)),
    ("expand -1", lambda m, x: x[:, 0:1].expand(-1, 5)),
    ("tile", lambda m, x: x.tile(2, 1)),
    ("tile function", lambda m, x: m.tile(x, (2, 1, 3))),
    ("mm", lambda m, x: m.mm(x, x.t())),
    ("bmm", lambda m, x: m.bmm(x.view(3, 2, 2), x.view(3, 2, 2))),
    ("matmul", lambda m, x: x.matmul(x.t())),
    ("clamp", lambda m, x: m.clamp(x, min=-0.5, max=1.0)),
    ("clamp min", lambda m, x: x.clamp(min=0.0)),
    ("clamp max", lambda m, x: x.clamp(max=0.3)),
    ("pow", lambda m, x: x.pow(2)),
    ("add alpha", lambda m, x: x.add(x * 3, alpha=0.5)),
    ("sub alpha", lambda m, x: m.sub(x, 1.0, alpha=2)),
    ("div", lambda m, x: x.div(4.0)),
    ("exp", lambda m, x: m.exp(x)),
    ("sigmoid", lambda m, x: m.sigmoid(x)),
    ("tanh", lambda m, x: x.tanh()),
    ("relu", lambda m, x: m.relu(x)),
    ("abs", lambda m, x: m.abs(x)),
    ("atan2", lambda m, x: m.atan2(x, x * 0.5 + 1)),
    ("logsumexp", lambda m, x: m.logsumexp(x, dim=1)),
    ("softmax", lambda m, x: m.softmax(x, dim=0)),
    ("cumsum", lambda m, x: m.cumsum(x, dim=1)),
    ("where", lambda m, x: m.where(x > 0, x, x * 2)),
    ("double", lambda m, x: x.double()),
    ("float", lambda m, x: x.float()),
    ("long", lambda m, x: x.long()),
    ("int", lambda m, x: x.int()),
    ("bool", lambda m, x: x.bool()),
    ("to dtype", lambda m, x: x.to(m.float32)),
    ("to device", lambda m, x: x.to("cpu")),
    ("to tensor", lambda m, x: x.to(m.tensor([1], dtype=m.int64))),
    ("detach clone", lambda m, x: x.detach().clone()),
    ("einsum", lambda m, x: m.einsum("ij,kj->ik", x, x)),
    ("norm", lambda m, x: x.norm()),
    ("norm dim", lambda m, x: x.norm(dim=1)),
    ("norm p1 keepdim", lambda m, x: x.norm(p=1, dim=0, keepdim=True)),
    ("norm inf", lambda m, x: x.norm(p=float("inf"), dim=1)),
    ("norm p3", lambda m, x: x.norm(p=3, dim=(0, 1))),
    ("masked_fill", lambda m, x: x.masked_fill(x > 0.5, -1.0)),
    ("eq", lambda m, x: x.eq(x * 1.0)),
    ("gt", lambda m, x: x.gt(0.25)),
    ("max 0-d", lambda m, x: x[0, 1].max(dim=0)),
    ("sort 0-d", lambda m, x: m.sort(x[1, 1], dim=0)),
    ("topk 0-d", lambda m, x: x[2, 0].topk(1)),
]


def _compare(ours, theirs, name):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), name
        for o, t in zip(ours, theirs):
            _compare(o, t, name)
        if hasattr(theirs, "_fields"):
            assert ours._fields == theirs._fields, name
        return
    t = _np(theirs)
    o = _np(ours)
    assert o.dtype == t.dtype, (name, o.dtype, t.dtype)
    assert o.shape == t.shape, (name, o.shape, t.shape)
    np.testing.assert_allclose(o, t, rtol=1e-12, atol=0, err_msg=name)


def _float_parts(r):
    if isinstance(r, (tuple, list)):
        return [p for e in r for p in _float_parts(e)]
    return [r] if np.dtype(str(r.dtype).replace("torch.", "")).kind == "f" and r.requires_grad \
        else []


@pytest.mark.parametrize("name, call", CASES, ids=[c[0] for c in CASES])
def test_function_table(name, call):
    xo = ftorch.tensor(X, requires_grad=True)
    xt = torch.tensor(X, requires_grad=True)
    ro, rt = call(ftorch, xo), call(torch, xt)
    _compare(ro, rt, name)
    po, pt = _float_parts(ro), _float_parts(rt)
    assert len(po) == len(pt), name
    if not pt:
        return
    w = np.linspace(0.5, 1.5, 7)
    lo = sum(((p * ftorch.tensor(np.resize(w, p.shape))).sum() for p in po), ftorch.tensor(0.0))
    lt = sum(((p * torch.tensor(np.resize(w, p.shape))).sum() for p in pt), torch.tensor(0.0))
    lo.backward()
    lt.backward()
    np.testing.assert_allclose(_np(xo.grad), _np(xt.grad), rtol=1e-12, atol=1e-15,
                               err_msg=name)


# ---- factories and dtypes ----------------------------------------------------------------------
FACTORIES = [
    ("tensor float", lambda m: m.tensor([1.5, 2.0])),
    ("tensor int", lambda m: m.tensor([1, 2])),
    ("tensor bool", lambda m: m.tensor([True, False])),
    ("tensor scalar", lambda m: m.tensor(3.25)),
    ("tensor dtype", lambda m: m.tensor([1, 2], dtype=m.float64)),
    ("tensor nested tensors", lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]])),
    ("Tensor legacy", lambda m: m.Tensor([-4.0, 1.0])),
    ("Tensor sizes", lambda m: m.Tensor(2, 3).zero_()),
    ("zeros", lambda m: m.zeros(2, 3)),
    ("zeros tuple", lambda m: m.zeros((2, 3), dtype=m.int64)),
    ("ones", lambda m: m.ones(3, dtype=m.double)),
    ("full float", lambda m: m.full((2, 2), 1.5)),
    ("full int", lambda m: m.full((2,), 7)),
    ("full scalar", lambda m: m.full((), 0.0)),
    ("zeros_like", lambda m: m.zeros_like(m.ones(2, dtype=m.float64))),
    ("ones_like dtype", lambda m: m.ones_like(m.ones(2), dtype=m.long)),
    ("full_like", lambda m: m.full_like(m.ones(2, 2), 3.0)),
    ("arange int", lambda m: m.arange(5)),
    ("arange float", lambda m: m.arange(0, 1, 0.25)),
    ("arange start end", lambda m: m.arange(2, 7, 2)),
    ("linspace", lambda m: m.linspace(-math.pi, math.pi, 2000)),
    ("linspace double", lambda m: m.linspace(0, 1, 11, dtype=m.float64)),
    ("linspace one", lambda m: m.linspace(1, -1, 1)),
    ("eye", lambda m: m.eye(3)),
    ("eye rect", lambda m: m.eye(2, 3, dtype=m.int32)),
    ("size", lambda m: m.tensor(m.zeros(2, 3).size())),
    ("numel", lambda m: m.tensor(m.zeros(2, 3).numel())),
    ("size dim", lambda m: m.tensor(m.zeros(2, 3).size(-1))),
    ("item", lambda m: m.tensor(m.tensor([2.5]).item())),
    ("fill_", lambda m: m.zeros(3).fill_(2.5)),
    ("zero_", lambda m: m.ones(3).zero_()),
    ("copy_", lambda m: m.zeros(2, 2).copy_(m.tensor([1.0, 2.0]))),
    ("add_ mul_ sub_", lambda m: m.ones(3).add_(m.ones(3), alpha=2).mul_(3).sub_(1)),
]


@pytest.mark.parametrize("name, make", FACTORIES, ids=[c[0] for c in FACTORIES])
def test_factory_table(name, make):
    _compare(make(ftorch), make(torch), name)


def test_dtype_names_are_torchs():
    for n in ["float", "double", "half", "long", "int", "short", "bool", "float32", "float64",
              "float16", "int64", "int32", "int16", "int8", "uint8", "complex64", "complex128"]:
        assert str(getattr(torch, n)).replace("torch.", "") == getattr(ftorch, n).name or \
            np.dtype(str(getattr(torch, n)).replace("torch.", "")) == getattr(ftorch, n), n
    assert ftorch.get_default_dtype() == ftorch.float32
    assert ftorch.tensor([1.0]).dtype == ftorch.float


def test_device_and_errors():
    assert ftorch.zeros(2, device="cpu").device == ftorch.device("cpu")
    assert ftorch.zeros(2).to("cpu").device.type == "cpu"
    with pytest.raises(RuntimeError, match="CPU only"):
        ftorch.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CPU only"):
        ftorch.zeros(2).to("cuda:0")
    assert not ftorch.cuda.is_available()
    with pytest.raises(IndexError, match="dimension out of range"):
        ftorch.zeros(2, 3).sum(dim=2)
    with pytest.raises(TypeError, match="multiple values for argument 'dim'"):
        ftorch.zeros(2, 3).max(dim=1, axis=0)         # (PyTorch reads axis= as dim=)
    with pytest.raises(TypeError, match="dim=/keepdim= or NumPy's axis="):
        fg.zeros((2, 3)).max(dim=1, axis=0)
    with pytest.raises(RuntimeError, match="split_with_sizes"):
        ftorch.zeros(4).split([1, 2])
    with pytest.raises(RuntimeError, match="leaf Variable"):
        ftorch.zeros(2, requires_grad=True).add_(1)
    with pytest.raises(RuntimeError, match="at least one"):
        ftorch.zeros(2).clamp()


# ---- the NumPy face stays: the methods' NumPy calls keep NumPy's meaning ------------------------
NUMPY_FACE = [
    ("max axis", lambda x: x.max(axis=1), lambda a: a.max(axis=1)),
    ("max positional", lambda x: x.max(1), lambda a: a.max(1)),
    ("min keepdims", lambda x: x.min(axis=0, keepdims=True), lambda a: a.min(0, keepdims=True)),
    ("std", lambda x: x.std(), lambda a: a.std()),
    ("std axis ddof", lambda x: x.std(axis=0, ddof=1), lambda a: a.std(axis=0, ddof=1)),
    ("var axis", lambda x: x.var(1), lambda a: a.var(1)),
    ("sum axis", lambda x: x.sum(axis=(0, 1)), lambda a: a.sum(axis=(0, 1))),
    ("transpose", lambda x: x.transpose(), lambda a: a.transpose()),
    ("transpose perm", lambda x: x.reshape(3, 2, 2).transpose(2, 0, 1),
     lambda a: a.reshape(3, 2, 2).transpose(2, 0, 1)),
    ("transpose tuple", lambda x: x.transpose((1, 0)), lambda a: a.transpose((1, 0))),
    ("repeat", lambda x: x.repeat(2), lambda a: a.repeat(2)),
    ("repeat axis", lambda x: x.repeat(2, 1), lambda a: a.repeat(2, 1)),
    ("flatten", lambda x: x.flatten(), lambda a: a.flatten()),
    ("squeeze", lambda x: x.reshape(3, 1, 4).squeeze(1), lambda a: a.reshape(3, 1, 4).squeeze(1)),
    ("sort", lambda x: x.sort(0), lambda a: np.sort(a, 0)),
    ("size", lambda x: fg.tensor(x.size), lambda a: np.asarray(a.size)),
]


@pytest.mark.parametrize("name, ours, numpy", NUMPY_FACE, ids=[c[0] for c in NUMPY_FACE])
def test_numpy_face_kept(name, ours, numpy):
    r = ours(fg.tensor(X))
    np.testing.assert_array_equal(np.asarray(r.data), numpy(X.copy()), err_msg=name)


def test_size_serves_both_habits():
    x = fg.zeros((2, 3))
    assert x.size == 6 and isinstance(x.size, int) and x.size * 2 == 12
    assert x.size() == (2, 3) and x.size(0) == 2 and x.size().numel() == 6
    assert repr(x.size()) == "torch.Size([2, 3])"
    assert ftorch.Size is type(x.size())
    import pickle
    back = pickle.loads(pickle.dumps(x.size))
    assert back == 6 and type(back) is int
    assert fg.tensor(2.5).size == 1 and fg.tensor(2.5).size() == ()


def test_methods_on_graph_nodes():
    g = fg.Graph()
    with g.as_default():
        p = fg.placeholder(np.float64, (3, 4))
        outs = [p.transpose(0, 1), p.max(dim=1).values, p.view(2, 6).sum(dim=1), p.unsqueeze(0)]
        with fg.Session() as sess:
            vals = sess.run(outs, {p: X})
    xt = torch.tensor(X)
    for v, t in zip(vals, [xt.transpose(0, 1), xt.max(dim=1).values, xt.view(2, 6).sum(dim=1),
                           xt.unsqueeze(0)]):
        np.testing.assert_array_equal(v, t.numpy())


def test_autograd_grad_and_backward():
    for m in (ftorch, torch):
        x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        y = (x ** 3).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (h,) = m.autograd.grad(g.sum(), x)
        m.autograd.backward((x * x).sum())
        if m is ftorch:
            ours = (_np(g), _np(h), _np(x.grad))
        else:
            theirs = (_np(g), _np(h), _np(x.grad))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12)


def test_no_grad_and_manual_seed():
    x = ftorch.ones(2, requires_grad=True)
    with ftorch.no_grad():
        assert not (x * 2).requires_grad
    with ftorch.inference_mode():
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    ftorch.manual_seed(3)
    a = ftorch.randn(4)
    ftorch.manual_seed(3)
    assert np.array_equal(a.data, ftorch.randn(4).data)
    assert a.dtype == ftorch.float32
    r1 = ftorch.randn(3, generator=ftorch.Generator().manual_seed(2))
    assert np.array_equal(r1.data, ftorch.randn(3, generator=ftorch.Generator().manual_seed(2)).data)
    g1, g2 = ftorch.Generator().manual_seed(5), ftorch.Generator().manual_seed(5)
    assert ftorch.randperm(6, generator=g1).tolist() == ftorch.randperm(6, generator=g2).tolist()


# ---- checkpoints -------------------------------------------------------------------------------
def test_save_load_state_dicts(tmp_path):
    w = ftorch.randn(3, 2, requires_grad=True)
    state = {"model": {"layer.weight": w.detach(), "layer.bias": ftorch.zeros(2, dtype=ftorch.double),
                       "steps": ftorch.tensor(5)},
             "epoch": 3, "lr": 0.01, "name": "run-1", "history": [0.5, 0.25], "best": None,
             "optimizer": {"state": {0: {"step": ftorch.tensor(2.0),
                                         "exp_avg": ftorch.ones(3, 2)}},
                           "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0]}]}}
    path = tmp_path / "ckpt.pt"
    ftorch.save(state, path)
    for kw in ({}, {"weights_only": True}, {"weights_only": False}, {"map_location": "cpu"}):
        got = ftorch.load(path, **kw)
        assert got["epoch"] == 3 and got["lr"] == 0.01 and got["name"] == "run-1"
        assert got["history"] == [0.5, 0.25] and got["best"] is None
        for k, v in state["model"].items():
            assert got["model"][k].dtype == v.dtype and np.array_equal(got["model"][k].data, v.data)
        assert got["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
        assert got["optimizer"]["state"][0]["step"].item() == 2.0
    with pytest.raises(RuntimeError, match="CPU only"):
        ftorch.load(path, map_location="cuda:0")


def test_save_refuses_objects_and_load_never_unpickles(tmp_path):
    import pickle

    class Model:
        pass
    with pytest.raises(ftorch.serialization.CheckpointError):
        ftorch.save({"model": Model()}, tmp_path / "bad.pt")
    assert not (tmp_path / "bad.pt").exists()          # nothing half-written
    evil = tmp_path / "evil.pt"
    evil.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ftorch.serialization.CheckpointError):
        ftorch.load(evil, weights_only=False)
    torch_file = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2)}, torch_file)       # PyTorch's own format: refused, not run
    with pytest.raises(ftorch.serialization.CheckpointError):
        ftorch.load(torch_file)
    with pytest.raises(TypeError, match="file path"):
        import io
        ftorch.save({"a": 1}, io.BytesIO())


def test_methods_eager_static_and_traced_agree():
    def f(x):
        return (x.max(dim=1).values.sum() + x.transpose(0, 1).std(dim=1).sum()
                + x.view(2, 6).sum(dim=1, keepdim=True).mean() + x.unsqueeze(0).flatten(1).norm()
                + x.clamp(min=0.0).sum())
    eager = f(fg.tensor(X)).item()
    traced = float(np.asarray(fg.function(f)(X)))
    g = fg.Graph()
    with g.as_default():
        p = fg.placeholder(np.float64, X.shape)
        with fg.Session() as sess:
            static = float(sess.run(f(p), {p: X}))
    xt = torch.tensor(X)
    theirs = f(xt).item()
    np.testing.assert_allclose([eager, traced, static], theirs, rtol=1e-12)
    gx = fg.grad(lambda x: f(x))(fg.tensor(X))
    xt.requires_grad_(True)
    f(xt).backward()
    np.testing.assert_allclose(np.asarray(gx.data), xt.grad.numpy(), rtol=1e-12)
