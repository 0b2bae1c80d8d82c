"""``fastgraph.torch.nn`` against PyTorch: every module of the table built with the same
arguments in both, PyTorch's ``state_dict`` loaded into ours, then the outputs, the input
gradients and every parameter's gradient of ``sum(out * cotangent)`` compared (float32 and
float64); the losses with each reduction; buffers after a training step (BatchNorm's running
statistics).  Then the module system (names, train/eval, hooks, containers), ``state_dict``
round trips and load errors, the default initialisations' distributions, and a seeded LeNet
trained 50 SGD steps next to PyTorch's.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.torch.nn as nn
import fastgraph.torch.nn.functional as F

torch = pytest.importorskip("torch")

# ---- the module table: (name, constructor args, kwargs, input shapes) ------------------------
# An input shape of ("int", high, shape) is integer data in [0, high).  ``eval``: compared in
# eval() mode (the default is train()).
M = [
    ("Linear", (5, 3), {}, [(4, 5)]),
    ("Linear", (5, 3), {"bias": False}, [(2, 4, 5)]),
    ("Bilinear", (3, 4, 2), {}, [(5, 3), (5, 4)]),
    ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1}, [(2, 2, 9)]),
    ("Conv2d", (3, 4, 3), {}, [(2, 3, 7, 7)]),
    ("Conv2d", (4, 6, (3, 2)), {"stride": (2, 1), "padding": (1, 0), "dilation": 2,
                                "groups": 2}, [(2, 4, 9, 8)]),
    ("Conv2d", (2, 3, 3), {"padding": "same", "bias": False}, [(2, 2, 6, 5)]),
    ("Conv2d", (2, 3, 3), {"padding": 1, "padding_mode": "reflect"}, [(1, 2, 5, 5)]),
    ("Conv3d", (2, 3, 2), {"padding": 1}, [(1, 2, 4, 3, 4)]),
    ("ConvTranspose1d", (2, 3, 3), {"stride": 2}, [(2, 2, 5)]),
    ("ConvTranspose2d", (3, 2, 3), {"stride": 2, "padding": 1, "output_padding": 1},
     [(2, 3, 4, 4)]),
    ("ConvTranspose2d", (4, 4, 2), {"groups": 2, "dilation": 2}, [(1, 4, 3, 3)]),
    ("MaxPool1d", (2,), {}, [(2, 3, 8)]),
    ("MaxPool2d", (2,), {}, [(2, 3, 6, 6)]),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, [(2, 2, 7, 7)]),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False},
     [(2, 2, 7, 6)]),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, [(2, 3, 7, 8)]),
    ("AdaptiveMaxPool2d", (2,), {}, [(2, 3, 5, 5)]),
    ("Dropout", (0.3,), {"eval": True}, [(4, 5)]),
    ("BatchNorm1d", (3,), {}, [(5, 3)]),
    ("BatchNorm1d", (3,), {}, [(5, 3, 4)]),
    ("BatchNorm2d", (3,), {"momentum": None}, [(4, 3, 2, 3)]),
    ("BatchNorm2d", (3,), {"eval": True}, [(4, 3, 2, 3)]),
    ("BatchNorm2d", (3,), {"affine": False, "track_running_stats": False}, [(4, 3, 2, 2)]),
    ("LayerNorm", ((4, 5),), {}, [(2, 3, 4, 5)]),
    ("GroupNorm", (2, 4), {}, [(2, 4, 3, 3)]),
    ("Embedding", (10, 4), {"padding_idx": 1}, [("int", 10, (3, 5))]),
    ("InstanceNorm1d", (3,), {}, [(2, 3, 6)]),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}, [(2, 3, 4, 4)]),
    ("InstanceNorm2d", (3,), {"affine": True}, [(3, 4, 5)]),           # unbatched
    ("LocalResponseNorm", (3,), {}, [(2, 5, 3, 3)]),
    ("ZeroPad2d", ((1, 0, 2, 1),), {}, [(1, 2, 3, 3)]),
    ("ConstantPad1d", (2, 0.5), {}, [(2, 3, 4)]),
    ("ReflectionPad2d", (1,), {}, [(1, 2, 4, 4)]),
    ("ReplicationPad1d", ((2, 1),), {}, [(1, 2, 5)]),
    ("CircularPad2d", (1,), {}, [(1, 2, 3, 3)]),
    ("Flatten", (), {}, [(2, 3, 4)]),
    ("Unflatten", (1, (2, 3)), {}, [(4, 6)]),
    ("Identity", (), {}, [(3, 2)]),
    ("PReLU", (3,), {}, [(2, 3, 4)]),
    ("RNN", (3, 5), {"num_layers": 2}, [(6, 2, 3)]),
    ("RNN", (3, 5), {"nonlinearity": "relu", "batch_first": True, "bidirectional": True},
     [(2, 6, 3)]),
    ("RNN", (3, 4), {}, [(5, 3)]),   # unbatched
    ("LSTM", (3, 4), {"num_layers": 2, "batch_first": True}, [(2, 5, 3)]),
    ("LSTM", (3, 4), {"bidirectional": True}, [(5, 2, 3)]),
    ("GRU", (3, 4), {"num_layers": 2}, [(5, 2, 3)]),
    ("GRU", (3, 4), {"bias": False, "batch_first": True}, [(2, 5, 3)]),
    ("RNNCell", (3, 4), {}, [(2, 3)]),
    ("LSTMCell", (3, 4), {}, [(2, 3)]),
    ("GRUCell", (3, 4), {}, [(2, 3)]),
]
# every activation module with its defaults (and some with arguments)
ACTS = sorted(set(nn.activations.ACTIVATIONS) - {"Threshold", "GLU", "Softmax", "LogSoftmax",
                                                 "Softmin"})
M += [(a, (), {}, [(3, 4)]) for a in ACTS]
M += [("LeakyReLU", (0.2,), {}, [(3, 4)]), ("GELU", (), {"approximate": "tanh"}, [(3, 4)]),
      ("Softplus", (2.0, 5.0), {}, [(3, 4)]), ("Threshold", (0.1, -2.0), {}, [(3, 4)]),
      ("GLU", (), {"dim": 1}, [(3, 4)]), ("Softmax", (), {"dim": 1}, [(3, 4)]),
      ("LogSoftmax", (), {"dim": 0}, [(3, 4)]), ("Softmin", (), {"dim": -1}, [(3, 4)]),
      ("Hardtanh", (-0.5, 0.7), {}, [(3, 4)]), ("ELU", (0.5,), {}, [(3, 4)])]


def _ids(rows):
    return [f"{r[0]}-{i}" for i, r in enumerate(rows)]


def _inputs(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        if s[0] == "int":
            out.append(rng.integers(0, s[1], s[2]).astype(np.int64))
        else:
            out.append(rng.standard_normal(s).astype(dtype))
    return out


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _flat(o)]
    return [] if out is None else [out]


def _pair(name, args, kwargs, dtype):
    kwargs = dict(kwargs)
    evaluate = kwargs.pop("eval", False)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    if dtype == np.float64:
        tm, ours = tm.double(), ours.double()
    ours.load_state_dict(tm.state_dict())
    if evaluate:
        tm.eval(), ours.eval()
    return tm, ours


#: PyTorch's float64 hardsigmoid gradient is its float32 constant 1/6 (0.1666666716...);
#: fastgraph's is 1/6 in float64
LOOSE_FLOAT64_GRAD = {"Hardsigmoid"}


def _tol(dtype, name=None):
    if name in LOOSE_FLOAT64_GRAD and dtype == np.float64:
        return dict(rtol=1e-7, atol=1e-10)
    return dict(rtol=1e-9, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("row", M, ids=_ids(M))
def test_module_matches_torch(row, dtype):
    name, args, kwargs, shapes = row
    torch.manual_seed(0)
    tm, ours = _pair(name, args, kwargs, dtype)
    xs = _inputs(shapes, dtype)
    t_in = [torch.from_numpy(x.copy()).requires_grad_(x.dtype.kind == "f") for x in xs]
    f_in = [fg.tensor(x.copy(), requires_grad=x.dtype.kind == "f") for x in xs]
    t_out, f_out = _flat(tm(*t_in)), _flat(ours(*f_in))
    assert len(t_out) == len(f_out)
    rng = np.random.default_rng(1)
    cots = [rng.standard_normal(tuple(t.shape)).astype(dtype) for t in t_out]
    for t, f in zip(t_out, f_out):
        assert f.dtype == dtype, (name, f.dtype)
        np.testing.assert_allclose(f.data, t.detach().numpy(), **_tol(dtype))
    torch.autograd.backward(t_out, [torch.from_numpy(c) for c in cots])
    fg.autograd.backward(f_out, [fg.tensor(c) for c in cots])
    for t, f in zip(t_in, f_in):
        if t.requires_grad:
            np.testing.assert_allclose(f.grad.data, t.grad.numpy(), **_tol(dtype, name))
    t_params = dict(tm.named_parameters())
    f_params = dict(ours.named_parameters())
    assert list(t_params) == list(f_params)
    for k, tp in t_params.items():
        np.testing.assert_allclose(f_params[k].grad.data, tp.grad.numpy(), **_tol(dtype),
                                   err_msg=f"{name}.{k}.grad")
    # buffers after the step (running statistics, num_batches_tracked)
    t_bufs, f_bufs = dict(tm.named_buffers()), dict(ours.named_buffers())
    assert list(t_bufs) == list(f_bufs)
    for k, tb in t_bufs.items():
        np.testing.assert_allclose(f_bufs[k].data, tb.numpy(), **_tol(dtype), err_msg=k)


# ---- losses: (module, kwargs, input maker, target maker) -------------------------------------
def _logits(rng, dtype):
    return rng.standard_normal((6, 4)).astype(dtype)


def _labels(rng, dtype):
    y = rng.integers(0, 4, 6)
    y[2] = 1
    return y.astype(np.int64)


def _probs(rng, dtype):
    return rng.uniform(0.05, 0.95, (6, 4)).astype(dtype)


def _logp(rng, dtype):
    x = rng.standard_normal((6, 4))
    return (x - np.log(np.exp(x).sum(1, keepdims=True))).astype(dtype)


WEIGHTS = np.array([0.5, 1.0, 2.0, 1.5])
L = [
    ("MSELoss", {}, _logits, _logits),
    ("L1Loss", {}, _logits, _logits),
    ("SmoothL1Loss", {"beta": 0.5}, _logits, _logits),
    ("HuberLoss", {"delta": 0.7}, _logits, _logits),
    ("NLLLoss", {}, _logp, _labels),
    ("NLLLoss", {"weight": WEIGHTS, "ignore_index": 1}, _logp, _labels),
    ("CrossEntropyLoss", {}, _logits, _labels),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "weight": WEIGHTS, "ignore_index": 1},
     _logits, _labels),
    ("CrossEntropyLoss", {"label_smoothing": 0.2}, _logits, _probs),
    ("BCELoss", {}, _probs, _probs),
    ("BCELoss", {"weight": WEIGHTS}, _probs, _probs),
    ("BCEWithLogitsLoss", {"pos_weight": WEIGHTS}, _logits, _probs),
    ("KLDivLoss", {}, _logp, _probs),
    ("KLDivLoss", {"log_target": True}, _logp, _logp),
]


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("row", L, ids=_ids(L))
def test_loss_matches_torch(row, dtype, reduction):
    name, kwargs, make_x, make_y = row
    rng = np.random.default_rng(3)
    x, y = make_x(rng, dtype), make_y(rng, dtype)
    tkw = {k: (torch.from_numpy(v.astype(dtype)) if isinstance(v, np.ndarray) else v)
           for k, v in kwargs.items()}
    fkw = {k: (v.astype(dtype) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    tl = getattr(torch.nn, name)(reduction=reduction, **tkw)
    fl = getattr(nn, name)(reduction=reduction, **fkw)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    fx = fg.tensor(x.copy(), requires_grad=True)
    t_out, f_out = tl(tx, torch.from_numpy(y)), fl(fx, y)
    np.testing.assert_allclose(f_out.data, t_out.detach().numpy(), **_tol(dtype))
    cot = np.random.default_rng(4).standard_normal(tuple(t_out.shape)).astype(dtype)
    t_out.backward(torch.from_numpy(cot))
    f_out.backward(fg.tensor(cot))
    np.testing.assert_allclose(fx.grad.data, tx.grad.numpy(), **_tol(dtype))


def test_kl_div_batchmean():
    rng = np.random.default_rng(0)
    x, y = _logp(rng, np.float64), _probs(rng, np.float64)
    t = torch.nn.KLDivLoss(reduction="batchmean")(torch.from_numpy(x), torch.from_numpy(y))
    f = nn.KLDivLoss(reduction="batchmean")(fg.tensor(x), y)
    np.testing.assert_allclose(f.data, t.numpy(), rtol=1e-12)


def test_functional_is_the_registry():
    import fastgraph.nn_ops as N
    for name in N.__all__:
        assert getattr(F, name) is getattr(N, name), name
    x = np.random.default_rng(0).standard_normal((3, 4))
    np.testing.assert_allclose(F.softmax(fg.tensor(x), dim=0).data,
                               torch.softmax(torch.from_numpy(x), 0).numpy(), rtol=1e-12)
    np.testing.assert_allclose(F.log_softmax(fg.tensor(x), 1).data,
                               torch.log_softmax(torch.from_numpy(x), 1).numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


def test_dropout_training_scales_and_eval_is_identity():
    fg.random.seed(0)
    d = nn.Dropout(0.25)
    x = np.ones((200, 50), np.float32)
    y = d(fg.tensor(x)).data
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert d.eval()(fg.tensor(x)).data is not None
    np.testing.assert_array_equal(d(fg.tensor(x)).data, x)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


# ---- the module system -----------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.blocks = nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 4)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 1)})
        self.register_buffer("scale", np.ones(1, np.float32))
        self.register_buffer("tmp", np.zeros(1, np.float32), persistent=False)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x))).reshape(x.shape[0], -1)
        for b in self.blocks:
            h = F.relu(b(h))
        return self.heads["a"](h) * self.scale


def test_names_and_traversal_match_torch():
    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 2, 3)
            self.bn = torch.nn.BatchNorm2d(2)
            self.blocks = torch.nn.ModuleList([torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)])
            self.heads = torch.nn.ModuleDict({"a": torch.nn.Linear(4, 1)})
            self.register_buffer("scale", torch.ones(1))
            self.register_buffer("tmp", torch.zeros(1), persistent=False)

    t, f = TNet(), Net()
    assert [k for k, _ in f.named_parameters()] == [k for k, _ in t.named_parameters()]
    assert [k for k, _ in f.named_buffers()] == [k for k, _ in t.named_buffers()]
    assert list(f.state_dict()) == list(t.state_dict())
    assert [k for k, _ in f.named_modules()] == [k for k, _ in t.named_modules()]
    assert [k for k, _ in f.named_children()] == [k for k, _ in t.named_children()]
    assert len(list(f.parameters())) == 10
    f.eval()
    assert not any(m.training for m in f.modules())
    f.train()
    assert all(m.training for m in f.modules())
    f.load_state_dict(t.state_dict())
    x = np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32)
    tx = torch.from_numpy(x)
    ref = t.heads["a"](torch.relu(t.blocks[1](torch.relu(t.blocks[0](
        torch.relu(t.bn(t.conv(tx))).reshape(2, -1)))))) * t.scale
    np.testing.assert_allclose(f(fg.tensor(x)).data, ref.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_zero_grad_hooks_and_attributes():
    m = nn.Linear(3, 2)
    m(fg.ones(4, 3, dtype=np.float32)).sum().backward()
    assert m.weight.grad is not None
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m.weight.grad.data, 0)
    m.zero_grad()
    assert m.weight.grad is None
    seen = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape) or out + 1)
    x = fg.ones(1, 3, dtype=np.float32)
    y = m(x)
    np.testing.assert_allclose(y.data, N_linear(m, 2 * x.data) + 1, rtol=1e-6)
    assert seen == [(1, 2)]
    h1.remove(), h2.remove()
    np.testing.assert_allclose(m(x).data, N_linear(m, x.data), rtol=1e-6)
    with pytest.raises(TypeError, match="parameter 'weight'"):
        m.weight = np.zeros((2, 3))
    m.bias = None
    assert [k for k, _ in m.named_parameters()] == ["weight"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        m.nope
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("weight", np.zeros(1))


def N_linear(m, x):
    b = 0 if m.bias is None else m.bias.data
    return x @ m.weight.data.T + b


def test_containers():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(s) == 3 and isinstance(s[1], nn.ReLU) and isinstance(s[-1], nn.Linear)
    assert len(s[:2]) == 2
    s.append(nn.Sigmoid())
    assert [k for k, _ in s.named_children()] == ["0", "1", "2", "3"]
    from collections import OrderedDict
    s2 = nn.Sequential(OrderedDict(fc=nn.Linear(2, 2), act=nn.Tanh()))
    assert list(s2.state_dict()) == ["fc.weight", "fc.bias"]
    ml = nn.ModuleList([nn.Identity()])
    ml.extend([nn.ReLU()]).insert(0, nn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "Identity", "ReLU"]
    md = nn.ModuleDict({"x": nn.ReLU()})
    md["y"] = nn.Linear(1, 1)
    assert list(md.keys()) == ["x", "y"] and "y" in md and len(md) == 2
    pl = nn.ParameterList([np.zeros(2, np.float32), np.ones(3, np.float32)])
    assert [p.shape for p in pl.parameters()] == [(2,), (3,)]
    with pytest.raises(IndexError):
        s[7]


# ---- state_dict ---------------------------------------------------------------------------------
@pytest.mark.parametrize("via", ["fastgraph.torch", "fg"])
def test_state_dict_round_trip_through_save_load(tmp_path, via):
    import fastgraph.torch as ftorch
    save, load = (ftorch.save, ftorch.load) if via == "fastgraph.torch" else (fg.save, fg.load)
    fg.random.seed(1)
    a = Net()
    a(fg.tensor(np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32)))
    save(a.state_dict(), str(tmp_path / "net.pt"))
    fg.random.seed(2)
    b = Net()
    res = b.load_state_dict(load(str(tmp_path / "net.pt")))
    assert res.missing_keys == [] and res.unexpected_keys == []
    for (k, v), (k2, w) in zip(a.state_dict().items(), b.state_dict().items()):
        assert k == k2 and v.dtype == w.dtype
        np.testing.assert_array_equal(v.data, w.data)
    assert "tmp" not in a.state_dict()   # non-persistent


def _snapshot(m):
    return {k: v.data.copy() for k, v in m.state_dict().items()}


def test_load_errors_name_keys_and_shapes_and_load_nothing():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    before = _snapshot(m)
    good = {k: np.full(v.shape, 7.0) for k, v in m.state_dict().items()}
    bad = dict(good)
    del bad["1.bias"]
    bad["extra.weight"] = np.zeros(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(bad)
    msg = str(e.value)
    assert 'Missing key(s) in state_dict: "1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    shape = dict(good, **{"0.weight": np.zeros((3, 2))})
    with pytest.raises(RuntimeError, match=r"size mismatch for 0\.weight: copying a param "
                                           r"with shape \(3, 2\) from checkpoint, the shape "
                                           r"in current model is \(2, 3\)"):
        m.load_state_dict(shape)
    with pytest.raises(RuntimeError, match="size mismatch"):
        m.load_state_dict(shape, strict=False)    # shapes are checked even when not strict
    for k, v in _snapshot(m).items():
        np.testing.assert_array_equal(v, before[k], err_msg=f"{k} was half-loaded")
    res = m.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["1.bias"] and res.unexpected_keys == ["extra.weight"]
    np.testing.assert_array_equal(m[0].weight.data, 7.0)
    assert m[0].weight.dtype == np.float32


# ---- initialisation --------------------------------------------------------------------------
def test_default_initialisation_distributions():
    fg.random.seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w = lin.weight.data
    assert w.dtype == np.float32 and np.abs(w).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert np.abs(lin.bias.data).max() <= bound
    conv = nn.Conv2d(8, 16, 5)
    b = 1 / math.sqrt(8 * 25)
    assert np.abs(conv.weight.data).max() <= b and abs(conv.weight.data.std() -
                                                        b / math.sqrt(3)) < 0.05 * b
    emb = nn.Embedding(1000, 20)
    assert abs(emb.weight.data.std() - 1) < 0.02
    lstm = nn.LSTM(10, 50)
    assert all(np.abs(p.data).max() <= 1 / math.sqrt(50) for p in lstm.parameters())
    fg.random.seed(5)
    a = nn.Linear(4, 4).weight.data.copy()
    fg.random.seed(5)
    np.testing.assert_array_equal(nn.Linear(4, 4).weight.data, a)


INIT = [
    ("xavier_uniform_", {"gain": 2.0}, lambda w: 2.0 * math.sqrt(6 / (300 + 200)) / math.sqrt(3)),
    ("xavier_normal_", {}, lambda w: math.sqrt(2 / (300 + 200))),
    ("kaiming_uniform_", {"nonlinearity": "relu"}, lambda w: math.sqrt(2 / 300)),
    ("kaiming_normal_", {"mode": "fan_out"}, lambda w: math.sqrt(2 / (1 + 0.0)) / math.sqrt(200)),
    ("normal_", {"std": 0.3}, lambda w: 0.3),
    ("uniform_", {"a": -2.0, "b": 2.0}, lambda w: 4 / math.sqrt(12)),
    ("trunc_normal_", {"std": 1.0}, lambda w: 0.8796),
]


@pytest.mark.parametrize("row", INIT, ids=[r[0] for r in INIT])
def test_init_std(row):
    name, kw, std = row
    fg.random.seed(0)
    w = nn.Parameter(np.empty((200, 300), np.float32))
    getattr(nn.init, name)(w, **kw)
    assert abs(w.data.std() - std(w)) < 0.03 * std(w), (w.data.std(), std(w))
    t = torch.empty(200, 300)
    torch.manual_seed(0)
    getattr(torch.nn.init, name)(t, **kw)
    assert abs(t.std().item() - w.data.std()) < 0.03 * std(w)


def test_init_constants_and_gain():
    w = nn.Parameter(np.empty((3, 3), np.float64))
    np.testing.assert_array_equal(nn.init.zeros_(w).data, 0)
    np.testing.assert_array_equal(nn.init.ones_(w).data, 1)
    np.testing.assert_array_equal(nn.init.constant_(w, 0.5).data, 0.5)
    np.testing.assert_array_equal(nn.init.eye_(w).data, np.eye(3))
    q = nn.init.orthogonal_(nn.Parameter(np.empty((4, 6))))
    np.testing.assert_allclose(q.data @ q.data.T, np.eye(4), atol=1e-12)
    for nl, p in [("relu", None), ("leaky_relu", 0.2), ("tanh", None), ("selu", None),
                  ("conv2d", None)]:
        assert nn.init.calculate_gain(nl, p) == pytest.approx(torch.nn.init.calculate_gain(nl, p))


# ---- a seeded LeNet trained next to PyTorch's ------------------------------------------------
class LeNet(nn.Module):
    def __init__(self, mod=nn):
        super().__init__()
        self.features = mod.Sequential(mod.Conv2d(1, 4, 5, padding=2), mod.ReLU(),
                                       mod.MaxPool2d(2), mod.Conv2d(4, 8, 5), mod.ReLU(),
                                       mod.MaxPool2d(2), mod.Flatten())
        self.classifier = mod.Sequential(mod.Linear(8 * 5 * 5, 32), mod.ReLU(),
                                         mod.Linear(32, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def _torch_lenet():
    class TLeNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            m = torch.nn
            self.features = m.Sequential(m.Conv2d(1, 4, 5, padding=2), m.ReLU(), m.MaxPool2d(2),
                                         m.Conv2d(4, 8, 5), m.ReLU(), m.MaxPool2d(2),
                                         m.Flatten())
            self.classifier = m.Sequential(m.Linear(200, 32), m.ReLU(), m.Linear(32, 10))

        def forward(self, x):
            return self.classifier(self.features(x))
    return TLeNet()


def _lenet_data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, n).astype(np.int64))


def test_lenet_50_sgd_steps_match_torch():
    torch.manual_seed(0)
    tnet = _torch_lenet()
    net = LeNet()
    net.load_state_dict(tnet.state_dict())
    X, y = _lenet_data()
    topt = torch.optim.SGD(tnet.parameters(), lr=0.05)
    opt = fg.optim.SGD(list(net.parameters()), lr=0.05)
    tX, ty = torch.from_numpy(X), torch.from_numpy(y)
    for step in range(50):
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(tnet(tX), ty)
        tl.backward()
        topt.step()
        opt.zero_grad()
        fl = F.cross_entropy(net(fg.tensor(X)), y)
        fl.backward()
        opt.step()
        assert abs(fl.item() - tl.item()) <= 1e-4 * max(1.0, abs(tl.item())), step
    for k, v in tnet.state_dict().items():
        np.testing.assert_allclose(net.state_dict()[k].data, v.numpy(), rtol=1e-3, atol=2e-5,
                                   err_msg=k)
