"""``fastgraph.torch.optim`` (``fg.optim``) against PyTorch 2.13, step for step: every optimizer
and option on the same parameters and gradients (float64 to 1e-12, float32 to rounding),
parameter groups, ``state_dict``/``load_state_dict``, ``zero_grad``, and the learning-rate
schedulers."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.torch as ftorch

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
W0 = rng.standard_normal((3, 4))
B0 = rng.standard_normal(4)
X = rng.standard_normal((5, 3))
T = rng.standard_normal((5, 4))


def _params(m, dtype):
    w = m.tensor(W0, dtype=dtype, requires_grad=True)
    b = m.tensor(B0, dtype=dtype, requires_grad=True)
    return w, b


def _loss(m, w, b, dtype):
    x, t = m.tensor(X, dtype=dtype), m.tensor(T, dtype=dtype)
    y = m.tanh(x @ w + b)
    return ((y - t) ** 2).mean()


def _run(m, make, dtype, steps=8, groups=False):
    w, b = _params(m, dtype)
    params = [{"params": [w]}, {"params": [b], "lr": 0.03}] if groups else [w, b]
    opt = make(m, params)
    hist = []
    for _ in range(steps):
        opt.zero_grad()
        _loss(m, w, b, dtype).backward()
        opt.step()
        hist.append((w.detach().numpy().copy(), b.detach().numpy().copy()))
    return hist, opt


OPTIMIZERS = [
    ("sgd", lambda m, p: m.optim.SGD(p, lr=0.1)),
    ("sgd momentum", lambda m, p: m.optim.SGD(p, lr=0.1, momentum=0.9)),
    ("sgd dampening", lambda m, p: m.optim.SGD(p, lr=0.1, momentum=0.8, dampening=0.3)),
    ("sgd nesterov", lambda m, p: m.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
    ("sgd weight decay", lambda m, p: m.optim.SGD(p, lr=0.1, momentum=0.5, weight_decay=0.1)),
    ("sgd maximize", lambda m, p: m.optim.SGD(p, lr=0.01, momentum=0.5, maximize=True)),
    ("adam", lambda m, p: m.optim.Adam(p, lr=0.05)),
    ("adam betas eps", lambda m, p: m.optim.Adam(p, lr=0.05, betas=(0.5, 0.9), eps=1e-3)),
    ("adam weight decay", lambda m, p: m.optim.Adam(p, lr=0.05, weight_decay=0.2)),
    ("adam amsgrad", lambda m, p: m.optim.Adam(p, lr=0.05, amsgrad=True)),
    ("adam maximize", lambda m, p: m.optim.Adam(p, lr=0.01, maximize=True)),
    ("adamw", lambda m, p: m.optim.AdamW(p, lr=0.05)),
    ("adamw amsgrad", lambda m, p: m.optim.AdamW(p, lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("rmsprop", lambda m, p: m.optim.RMSprop(p, lr=0.01)),
    ("rmsprop momentum", lambda m, p: m.optim.RMSprop(p, lr=0.01, momentum=0.9, alpha=0.9)),
    ("rmsprop centered", lambda m, p: m.optim.RMSprop(p, lr=0.01, centered=True,
                                                      weight_decay=0.1)),
    ("rmsprop centered momentum", lambda m, p: m.optim.RMSprop(p, lr=0.01, centered=True,
                                                               momentum=0.5, eps=1e-4)),
    ("adagrad", lambda m, p: m.optim.Adagrad(p, lr=0.1)),
    ("adagrad options", lambda m, p: m.optim.Adagrad(p, lr=0.1, lr_decay=0.05,
                                                     weight_decay=0.1,
                                                     initial_accumulator_value=0.2)),
]


def _assert_hist(ours, theirs, rtol, atol=0.0):
    for step, ((wo, bo), (wt, bt)) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(wo, wt, rtol=rtol, atol=atol, err_msg=f"step {step}")
        np.testing.assert_allclose(bo, bt, rtol=rtol, atol=atol, err_msg=f"step {step}")


@pytest.mark.parametrize("name, make", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_step_for_step_float64(name, make):
    ours, opt = _run(ftorch, make, ftorch.float64)
    theirs, topt = _run(torch, make, torch.float64)
    _assert_hist(ours, theirs, rtol=1e-12, atol=1e-14)
    # the same groups (every hyperparameter, PyTorch's names) and the same state
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert [sorted(g) for g in sd["param_groups"]] == [sorted(g) for g in tsd["param_groups"]]
    for g, tg in zip(sd["param_groups"], tsd["param_groups"]):
        assert g == tg
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for i in tsd["state"]:
        assert sorted(sd["state"][i]) == sorted(tsd["state"][i]), name
        for k, tv in tsd["state"][i].items():
            v = sd["state"][i][k]
            if tv is None:
                assert v is None
                continue
            assert str(tv.dtype).replace("torch.", "") == str(v.dtype), (name, k)
            np.testing.assert_allclose(np.asarray(v.data), tv.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, make", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_step_for_step_float32(name, make):
    ours, _ = _run(ftorch, make, ftorch.float32)
    theirs, _ = _run(torch, make, torch.float32)
    assert ours[-1][0].dtype == np.float32
    # (the forward and backward sums round in another order: a few float32 ulps a step)
    _assert_hist(ours, theirs, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name, make", OPTIMIZERS[1::3], ids=[o[0] for o in OPTIMIZERS[1::3]])
def test_param_groups(name, make):
    ours, opt = _run(ftorch, make, ftorch.float64, steps=4, groups=True)
    theirs, topt = _run(torch, make, torch.float64, steps=4, groups=True)
    _assert_hist(ours, theirs, rtol=1e-12, atol=1e-14)
    assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in topt.param_groups]


@pytest.mark.parametrize("name, make", OPTIMIZERS[::2], ids=[o[0] for o in OPTIMIZERS[::2]])
def test_state_dict_round_trip_through_save(name, make, tmp_path):
    """Four steps, save the optimizer's state, load it into a new optimizer over new parameters
    holding the same values, four more steps: the same values as eight steps in one go."""
    straight, _ = _run(ftorch, make, ftorch.float64, steps=8)
    w, b = _params(ftorch, ftorch.float64)
    opt = make(ftorch, [w, b])
    for _ in range(4):
        opt.zero_grad()
        _loss(ftorch, w, b, ftorch.float64).backward()
        opt.step()
    path = tmp_path / "opt.pt"
    ftorch.save({"optimizer": opt.state_dict(), "w": w.detach(), "b": b.detach()}, path)
    ck = ftorch.load(path, weights_only=True)
    w2 = ck["w"].clone().requires_grad_(True)
    b2 = ck["b"].clone().requires_grad_(True)
    opt2 = make(ftorch, [w2, b2])
    opt2.load_state_dict(ck["optimizer"])
    for _ in range(4):
        opt2.zero_grad()
        _loss(ftorch, w2, b2, ftorch.float64).backward()
        opt2.step()
    np.testing.assert_array_equal(w2.data, straight[-1][0])
    np.testing.assert_array_equal(b2.data, straight[-1][1])


def test_zero_grad_and_closure():
    for m in (ftorch, torch):
        w = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        opt = m.optim.SGD([w], lr=0.1)
        (w * w).sum().backward()
        opt.zero_grad(set_to_none=False)
        assert w.grad is not None and w.grad.sum().item() == 0.0
        opt.zero_grad()
        assert w.grad is None

        def closure():
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss
        assert opt.step(closure).item() == 5.0
        assert np.allclose(w.detach().numpy(), [0.8, 1.6])


def test_bad_hyperparameters_raise():
    w = ftorch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="Nesterov"):
        ftorch.optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta"):
        ftorch.optim.AdamW([w], betas=(0.9, 1.5))
    with pytest.raises(ValueError, match="learning rate"):
        ftorch.optim.RMSprop([w], lr=-0.1)
    with pytest.raises(ValueError, match="epsilon"):
        ftorch.optim.Adagrad([w], eps=-1.0)
    with pytest.raises(ValueError, match="differentiable"):
        ftorch.optim.Adam([w], differentiable=True)
    with pytest.raises(ValueError, match="number of parameter groups"):
        ftorch.optim.SGD([w], lr=0.1).load_state_dict(
            {"state": {}, "param_groups": [{"params": [0]}, {"params": [1]}]})


# ---- schedulers ----------------------------------------------------------------------------------
SCHEDULERS = [
    ("step", lambda m, o: m.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
    ("step default gamma", lambda m, o: m.optim.lr_scheduler.StepLR(o, 2)),
    ("cosine", lambda m, o: m.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5)),
    ("cosine eta_min", lambda m, o: m.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4,
                                                                           eta_min=0.01)),
    ("lambda", lambda m, o: m.optim.lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e)),
    ("lambda per group", lambda m, o: m.optim.lr_scheduler.LambdaLR(
        o, [lambda e: 1 / (e + 1), lambda e: math.cos(e / 10)])),
]


def _schedule(m, make, epochs=13):
    w, b = _params(m, m.float64)
    opt = m.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.2}], lr=0.1, momentum=0.9)
    sched = make(m, opt)
    lrs, hist = [], []
    for _ in range(epochs):
        opt.zero_grad()
        _loss(m, w, b, m.float64).backward()
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        hist.append((w.detach().numpy().copy(), b.detach().numpy().copy()))
    return lrs, hist, sched


@pytest.mark.parametrize("name, make", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_scheduler_matches_torch(name, make):
    lrs, hist, sched = _schedule(ftorch, make)
    tlrs, thist, tsched = _schedule(torch, make)
    np.testing.assert_allclose(lrs, tlrs, rtol=1e-14, atol=1e-17)
    _assert_hist(hist, thist, rtol=1e-12, atol=1e-14)
    sd, tsd = sched.state_dict(), tsched.state_dict()
    for k in ("last_epoch", "base_lrs", "_step_count"):
        assert sd[k] == tsd[k], k


def test_scheduler_state_dict_resumes():
    make = SCHEDULERS[2][1]
    lrs, _, _ = _schedule(ftorch, make, epochs=10)
    w = ftorch.zeros(2, requires_grad=True)
    opt = ftorch.optim.SGD([w], lr=0.1)
    sched = make(ftorch, opt)
    for _ in range(4):
        opt.step()
        sched.step()
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    opt2 = ftorch.optim.SGD([w], lr=0.1)
    sched2 = make(ftorch, opt2)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved)
    for _ in range(6):
        opt2.step()
        sched2.step()
    assert sched2.get_last_lr()[0] == pytest.approx(lrs[-1][0], rel=1e-14)


def _custom_optimizer(m):
    """An optimizer written against PyTorch's API (signSGD with a step counter in its state)."""
    class SignSGD(m.optim.Optimizer):
        def __init__(self, params, lr=0.01):
            super().__init__(params, dict(lr=lr))

        @m.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["n"] = 0
                    state["n"] += 1
                    p.add_(m.sign(p.grad), alpha=-group["lr"] / state["n"])
    return SignSGD


def test_an_optimizer_written_for_torch_runs():
    ours, opt = _run(ftorch, lambda m, p: _custom_optimizer(m)(p, lr=0.1), ftorch.float64)
    theirs, topt = _run(torch, lambda m, p: _custom_optimizer(m)(p, lr=0.1), torch.float64)
    _assert_hist(ours, theirs, rtol=1e-12, atol=1e-14)
    assert opt.state_dict()["state"] == topt.state_dict()["state"]
