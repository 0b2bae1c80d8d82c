"""What a PyTorch program reads back from ``fastgraph.torch`` is PyTorch's, not NumPy's: ``.data``
of tensors, parameters and gradients (a detached Tensor sharing the memory, so the classic
training-loop idioms update the parameters and ``torch.max(out.data, 1)`` is ``(values,
indices)``), the outputs of ``fg.function`` called with PyTorch-faced values, the optimizers'
state and state dicts (through ``torch.save``/``torch.load`` too), and the tensors
``autograd.Function`` hands its ``forward`` and ``backward``.  Each program runs on PyTorch 2.13
and on ``fastgraph.torch`` (skipped without PyTorch); the NumPy face's ``.data`` is checked
unchanged without it."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.torch as ftorch

rng = np.random.default_rng(0)
W = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal(3).astype(np.float32)
X = rng.standard_normal((6, 4)).astype(np.float32)
Y = np.array([0, 2, 1, 1, 0, 2])
LR = 0.1


def _pt():
    return pytest.importorskip("torch")


def _plain(v):
    """A result as NumPy values (tensors of either library), nested lists kept."""
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "detach"):
        return np.asarray(v.detach().numpy())
    return np.asarray(v)


def _assert_same(got, want, rtol=1e-6):
    got, want = _plain(got), _plain(want)
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w, rtol)
        return
    assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, (got, want)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=1e-7)


def _linear(torch):
    """``nn.Linear(4, 3)`` holding W and B, set PyTorch's classic way (``p.data = tensor``)."""
    m = torch.nn.Linear(4, 3)
    m.weight.data = torch.tensor(W)
    m.bias.data = torch.tensor(B)
    return m


def _run_both(program):
    return program(ftorch), program(_pt())


# ---- .data: the classic idioms, each against PyTorch -----------------------------------------
def evaluate(torch):
    """MNIST's test loop: predictions and the count of correct ones from ``out.data``."""
    model = _linear(torch)
    out, target = model(torch.tensor(X)), torch.tensor(Y)
    _, pred = torch.max(out.data, 1)
    values, indices = out.data.max(1)
    correct = pred.eq(target.data).sum().item()
    d = out.data
    return [pred, values, indices, correct, d.requires_grad, d.is_leaf, d.grad_fn is None,
            out.requires_grad, out.data.argmax(dim=1), d.sum(1), d.std()]


def _step_add(p):
    p.data.add_(-LR * p.grad.data)
    p.grad.data.zero_()


def _step_sub(p):
    p.data.sub_(LR * p.grad.data)
    p.grad.zero_()


def _step_isub(p):
    p.data -= LR * p.grad.data
    p.grad = None


def _step_alpha(p):
    p.data.add_(p.grad.data, alpha=-LR)
    p.grad.data.fill_(0)


def _step_rebind(p):
    p.data = p.data - LR * p.grad.data      # a new tensor as the parameter's value
    p.grad = None


UPDATES = [_step_add, _step_sub, _step_isub, _step_alpha, _step_rebind]


@pytest.mark.parametrize("update", UPDATES, ids=lambda f: f.__name__)
def test_manual_sgd_through_data_trains_as_pytorchs(update):
    def train(torch):
        model, loss_fn = _linear(torch), torch.nn.CrossEntropyLoss()
        x, y = torch.tensor(X), torch.tensor(Y)
        hist = []
        for _ in range(4):
            loss = loss_fn(model(x), y)
            loss.backward()
            for p in model.parameters():
                update(p)
            hist += [loss.item(), model.weight.detach().clone(), model.bias.detach().clone()]
        grads = [p.grad for p in model.parameters()]
        return hist + [[0.0] if g is None else g for g in grads]
    ours, theirs = _run_both(train)
    _assert_same(ours, theirs, rtol=1e-5)


def test_evaluation_idioms_are_pytorchs():
    ours, theirs = _run_both(evaluate)
    _assert_same(ours, theirs)
    pred, values = ours[0], ours[1]
    assert isinstance(pred, ftorch.Tensor) and isinstance(values, ftorch.Tensor)


#: in-place changes through ``p.data``: each must change the parameter itself
IN_PLACE = [
    ("zero_", lambda d, torch: d.zero_()),
    ("fill_", lambda d, torch: d.fill_(0.5)),
    ("mul_", lambda d, torch: d.mul_(2.0)),
    ("div_", lambda d, torch: d.div_(4.0)),
    ("clamp_", lambda d, torch: d.clamp_(-0.2, 0.3)),
    ("copy_", lambda d, torch: d.copy_(torch.ones(3, 4))),
    ("setitem", lambda d, torch: d.__setitem__(0, 7.0)),
    ("iadd", lambda d, torch: d.__iadd__(1.0)),
]


@pytest.mark.parametrize("name, change", IN_PLACE, ids=[n for n, _ in IN_PLACE])
def test_in_place_changes_through_data_change_the_parameter(name, change):
    def program(torch):
        p = _linear(torch).weight
        d = p.data
        change(d, torch)
        return [p.detach(), d, p.requires_grad, d.requires_grad, p.is_leaf]
    ours, theirs = _run_both(program)
    _assert_same(ours, theirs)


def test_gradient_data_is_a_pytorch_tensor_of_the_gradient():
    def program(torch):
        w = torch.tensor(W, requires_grad=True)
        (w * w).sum().backward()
        g = w.grad.data
        top = g.max(0)
        g.mul_(0.5)                             # w.grad itself changes
        return [w.grad, top.values, top.indices, g.requires_grad]
    ours, theirs = _run_both(program)
    _assert_same(ours, theirs)
    assert isinstance(ftorch.tensor(1.0, requires_grad=True).data, ftorch.Tensor)


def test_assigning_data_replaces_the_value_and_shares_memory():
    def program(torch):
        p = torch.nn.Parameter(torch.zeros(2))
        t = torch.tensor([1.0, 2.0, 3.0])
        p.data = t                              # another shape: allowed, and shared
        t.add_(1.0)
        q = torch.nn.Parameter(torch.zeros(2))
        q.data = torch.tensor([5.0, 6.0], dtype=torch.float64)     # another dtype
        with pytest.raises(RuntimeError, match="floating point or complex"):
            q.data = torch.tensor([5, 6])       # not for a tensor that requires grad
        return [p.detach(), p.shape, p.requires_grad, q.detach(), q.dtype == torch.float64,
                q.requires_grad]
    ours, theirs = _run_both(program)
    _assert_same(ours, theirs)


def test_data_of_parameters_and_gradients_is_a_detached_view():
    p = ftorch.nn.Parameter(ftorch.tensor([1.0, 2.0]))
    d = p.data
    assert type(d) is ftorch.Tensor and not d.requires_grad and d.is_leaf
    assert np.shares_memory(d.numpy(), p.detach().numpy())
    assert p.data is not d                      # a new view each time, as in PyTorch
    y = ftorch.tensor(3.0, requires_grad=True) * 2
    assert type(y.data) is ftorch.Tensor and y.data.item() == 6.0 and y.data.grad_fn is None


def test_a_change_through_data_to_a_saved_value_makes_backward_raise():
    # (PyTorch would silently use the new values: see docs/pytorch.md, "Known differences")
    w = ftorch.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    w.data.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation|in-place|version"):
        y.backward()
    z = (w * w).sum()                           # a fresh forward pass is fine
    z.backward()
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 8.0])


#: tensors of NumPy's face: ``.data`` stays the ndarray itself
NUMPY_FACED = [
    ("tensor", lambda: fg.tensor([[1.0, 5.0], [4.0, 2.0]])),
    ("requires grad", lambda: fg.tensor([[1.0, 5.0], [4.0, 2.0]], requires_grad=True)),
    ("result", lambda: fg.tensor([[1.0, 5.0], [4.0, 2.0]], requires_grad=True) * 1.0),
    ("0-d", lambda: fg.tensor([[1.0, 5.0], [4.0, 2.0]]).sum()),
]


@pytest.mark.parametrize("name, make", NUMPY_FACED, ids=[n for n, _ in NUMPY_FACED])
def test_numpy_faced_data_is_the_ndarray(name, make):
    t = make()
    d = t.data
    assert type(d) is np.ndarray and t.data is d
    if d.ndim == 2:
        np.testing.assert_array_equal(d.max(1), [5.0, 4.0])    # NumPy's max: the values
    t.data = d * 2                              # the setter takes arrays and tensors
    t.data = fg.tensor(np.asarray(t.data) + 1)
    np.testing.assert_allclose(t.data, d * 2 + 1)


# ---- fg.function: PyTorch-faced arguments give PyTorch-faced outputs ---------------------------
def _traced_program(a, b):
    s = a @ b.T
    return s, s.sum(), {"top": s.max(1), "list": [s.std(), b]}


def test_traced_outputs_have_the_arguments_face():
    f = fg.function(_traced_program)
    a, b = ftorch.tensor(X), ftorch.tensor(W)
    got, want = f(a, b), _traced_program(a, b)
    assert type(got[0]) is ftorch.Tensor and type(got[1]) is ftorch.Tensor
    assert got[1].ndim == 0 and isinstance(got[1].item(), float)
    assert type(got[2]["top"]) is type(want[2]["top"])            # (values, indices)
    assert all(type(v) is ftorch.Tensor for v in got[2]["list"])
    _assert_same(list(got[:2]) + [list(got[2]["top"]), got[2]["list"]],
                 list(want[:2]) + [list(want[2]["top"]), want[2]["list"]])
    # NumPy-faced values give NumPy values, as before
    plain = f(fg.tensor(X), fg.tensor(W))
    assert type(plain[0]) is np.ndarray and type(plain[2]["top"]) is not type(want[2]["top"])
    torch = pytest.importorskip("torch")
    ta, tb = torch.tensor(X), torch.tensor(W)
    _assert_same(list(got[2]["top"]), list((ta @ tb.T).max(1)))


def test_traced_module_forward_returns_what_eager_returns():
    m = _linear(ftorch)
    f = fg.function(lambda x: m(x))
    for x in (ftorch.tensor(X), X, fg.tensor(X)):   # the parameters give the face, as eager
        out, eager = f(x), m(x)
        assert type(out) is type(eager.detach()) is ftorch.Tensor
        _assert_same(out, eager)
        assert not out.requires_grad


def test_donated_outputs_are_pytorch_faced_and_written_in_place():
    step = fg.function(lambda w, g: w - LR * g, donate_argnums=(0,))
    w, g = ftorch.tensor(W), ftorch.tensor(np.ones_like(W))
    out = step(w, g)
    assert type(out) is ftorch.Tensor
    np.testing.assert_allclose(out.numpy(), W - LR)
    assert np.shares_memory(out.numpy(), w.numpy())


# ---- optimizers: state of PyTorch's face, and checkpoints of it -------------------------------
OPTIMIZERS = [
    ("SGD", {"lr": LR, "momentum": 0.9}),
    ("SGD", {"lr": LR, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("AdamW", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ("Adagrad", {"lr": 0.1}),
]
_OPT_IDS = [f"{n}{sorted(kw)}" for n, kw in OPTIMIZERS]


def _train(torch, model, opt, steps):
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = torch.tensor(X), torch.tensor(Y)
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("name, kw", OPTIMIZERS, ids=_OPT_IDS)
def test_optimizer_state_is_pytorch_faced(name, kw):
    model = _linear(ftorch)
    opt = getattr(ftorch.optim, name)(model.parameters(), **kw)
    _train(ftorch, model, opt, 2)
    for p in model.parameters():
        assert opt.state[p] and all(type(v) is ftorch.Tensor for v in opt.state[p].values())
    for s in opt.state_dict()["state"].values():
        assert all(type(v) is ftorch.Tensor for v in s.values())
    opt.zero_grad(set_to_none=False)
    assert all(type(p.grad) is ftorch.Tensor for p in model.parameters())


@pytest.mark.parametrize("name, kw", OPTIMIZERS, ids=_OPT_IDS)
def test_optimizer_checkpoint_round_trip_resumes_as_pytorch_does(name, kw, tmp_path):
    def resumed(torch, path):
        model = _linear(torch)
        opt = getattr(torch.optim, name)(model.parameters(), **kw)
        _train(torch, model, opt, 3)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
        ckpt = torch.load(path)
        model2 = _linear(torch)
        model2.load_state_dict(ckpt["model"])
        opt2 = getattr(torch.optim, name)(model2.parameters(), **kw)
        opt2.load_state_dict(ckpt["opt"])
        state = [type(v) for s in opt2.state.values() for v in s.values()]
        return _train(torch, model2, opt2, 3), state
    ours, our_types = resumed(ftorch, tmp_path / "ours.pt")
    assert our_types and all(t is ftorch.Tensor for t in our_types)
    model = _linear(ftorch)                     # the same six steps without a break
    straight = _train(ftorch, model, getattr(ftorch.optim, name)(model.parameters(), **kw), 6)
    _assert_same(ours, straight, rtol=1e-6)
    torch = _pt()
    theirs, _ = resumed(torch, tmp_path / "theirs.pt")
    _assert_same(ours, theirs, rtol=1e-4)


@pytest.mark.parametrize("name, kw", OPTIMIZERS, ids=_OPT_IDS)
def test_optimizer_loads_pytorchs_state_dict(name, kw):
    torch = _pt()
    theirs = _linear(torch)
    their_opt = getattr(torch.optim, name)(theirs.parameters(), **kw)
    _train(torch, theirs, their_opt, 3)
    ours = _linear(ftorch)
    ours.load_state_dict(theirs.state_dict())
    opt = getattr(ftorch.optim, name)(ours.parameters(), **kw)
    opt.load_state_dict(their_opt.state_dict())
    assert all(type(v) is ftorch.Tensor for s in opt.state.values() for v in s.values())
    _assert_same(_train(ftorch, ours, opt, 2), _train(torch, theirs, their_opt, 2), rtol=1e-4)


# ---- autograd.Function: forward and backward see PyTorch's tensors ----------------------------
def _row_max_function(torch):
    class RowMax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values, indices = x.max(1)          # PyTorch's max: (values, indices)
            ctx.save_for_backward(x, indices)
            return values

        @staticmethod
        def backward(ctx, g):
            x, indices = ctx.saved_tensors
            mask = torch.zeros_like(x)
            for i, j in enumerate(indices.tolist()):
                mask[i, j] = 1.0
            return mask * g.unsqueeze(1)
    return RowMax


def _relu_square_function(base):
    seen = []

    class ReluSquare(base):
        @staticmethod
        def forward(ctx, x):
            seen.append(type(x))
            ctx.save_for_backward(x)
            return x.clamp(min=0) ** 2

        @staticmethod
        def backward(ctx, g):
            seen.append(type(g))
            (x,) = ctx.saved_tensors
            return 2 * x.clamp(min=0) * g
    return ReluSquare, seen


@pytest.mark.parametrize("value", [1.5, -0.5, [[1.5, -0.5], [0.25, 2.0]]],
                         ids=["0-d", "0-d negative", "2-d"])
def test_autograd_function_gets_tensors_of_every_rank(value):
    def program(torch):
        fn, _ = _relu_square_function(torch.autograd.Function)
        x = torch.tensor(value, dtype=torch.float64, requires_grad=True)
        y = fn.apply(x)
        y.sum().backward()
        return [y, x.grad]
    ours, theirs = _run_both(program)
    _assert_same(ours, theirs)
    for face, base in ((ftorch, ftorch.autograd.Function), (fg, fg.autograd.Function)):
        fn, seen = _relu_square_function(base)
        x = face.tensor(value, requires_grad=True)
        fn.apply(x).sum().backward()
        assert seen and all(t is type(x) for t in seen), seen


def test_autograd_function_sees_pytorch_faced_tensors():
    def program(torch):
        x = torch.tensor(X, requires_grad=True)
        y = _row_max_function(torch).apply(x)
        (y * torch.arange(6.0)).sum().backward()
        return [y, x.grad]
    ours, theirs = _run_both(program)
    _assert_same(ours, theirs)
    assert type(ours[0]) is ftorch.Tensor and type(ours[1]) is ftorch.Tensor


# ---- torch.compile: fg.function's plan where no gradient is taken, eager where one may be -------
# (compared with PyTorch's eager calls: torch.compile's contract is their values, and PyTorch's
# own compiler would take most of a minute here)
def _eager_compile(model=None, **options):
    return (lambda fn: fn) if model is None else model


def _run_compiled(program):
    return program(ftorch, ftorch.compile), program(_pt(), _eager_compile)


def _mlp(torch):
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    m[0].weight.data = torch.tensor(W)
    m[0].bias.data = torch.tensor(B)
    m[2].weight.data = torch.tensor(W[:2, :3].copy())
    m[2].bias.data = torch.tensor(B[:2].copy())
    return m


def test_compiled_module_infers_with_the_plan_and_trains_eagerly():
    def program(torch, compile):
        model = _mlp(torch)
        fast = compile(model)
        x = torch.tensor(X)
        with torch.no_grad():
            first, again = fast(x), fast(x + 1)
        out = fast(x)                           # grad mode on: the tape records it
        torch.nn.functional.cross_entropy(out, torch.tensor(Y) % 2).backward()
        return [first, again, out.requires_grad, model[0].weight.grad, model[2].bias.grad,
                fast.training, len(list(fast.parameters()))]
    ours, theirs = _run_compiled(program)
    _assert_same(ours, theirs, rtol=1e-5)
    model = _mlp(ftorch)
    fast = ftorch.compile(model)
    with ftorch.no_grad():
        for k in range(3):
            y = fast(ftorch.tensor(X) * k)
    assert type(y) is ftorch.Tensor and fast._fg_function.trace_count == 1
    assert fast.eval() is model and fast.state_dict().keys() == model.state_dict().keys()
    for p in model.parameters():
        p.requires_grad_(False)
    fast(ftorch.tensor(X))                      # nothing requires grad: the plan, grad mode on
    assert fast._fg_function.trace_count == 1


COMPILE_FORMS = [
    ("decorator", lambda compile: compile),
    ("with options", lambda compile: compile(mode="reduce-overhead", fullgraph=True)),
    ("backend eager", lambda compile: compile(backend="eager")),
    ("disabled", lambda compile: compile(disable=True)),
]


@pytest.mark.parametrize("name, form", COMPILE_FORMS, ids=[n for n, _ in COMPILE_FORMS])
def test_compile_forms_give_the_eager_values(name, form):
    def program(torch, compile):
        @form(compile)
        def f(a, b):
            top = (a @ b.T).max(1)
            return top.values.sum(), top.indices
        x, w = torch.tensor(X), torch.tensor(W)
        with torch.no_grad():
            return list(f(x, w)) + list(f(x * 2, w))
    ours, theirs = _run_compiled(program)
    _assert_same(ours, theirs, rtol=1e-5)
    assert all(type(v) is ftorch.Tensor for v in ours)


def test_compile_refuses_what_it_cannot_do():
    with pytest.raises(TypeError, match="backend"):
        ftorch.compile(lambda x: x, backend=lambda gm, inputs: gm)
    with pytest.raises(TypeError, match="function or a Module"):
        ftorch.compile(3)


def test_arguments_inside_structures_trace_with_their_face():
    def program(xs, d):
        return xs[0].max(1), d["w"].std(), xs[1] * 2
    f = fg.function(program)
    x = ftorch.tensor(X)
    got, want = f([x, x], {"w": x}), program([x, x], {"w": x})
    assert type(got[0]) is type(want[0]) and type(got[2]) is ftorch.Tensor
    _assert_same([list(got[0]), got[1], got[2]], [list(want[0]), want[1], want[2]])
    plain = f([X, X], {"w": X})                 # NumPy values: NumPy's meanings, a new trace
    np.testing.assert_allclose(plain[0], X.max(1))
    np.testing.assert_allclose(plain[1], X.std(), rtol=1e-6)
    assert f.trace_count == 2
    torch = pytest.importorskip("torch")
    _assert_same(list(got[0]) + [got[1]], list(torch.tensor(X).max(1)) + [torch.tensor(X).std()])


# ---- fg.grad and the other transforms: PyTorch-faced arguments keep their face -------------------
def _stats(t):
    return t.std() + t.max(0).values.sum() * 0.5     # unbiased std, (values, indices)


def _torch_grad(torch, f):
    def g(x):
        x = x.requires_grad_()
        return torch.autograd.grad(f(x), x)[0]
    return g


#: (fastgraph transform, PyTorch's counterpart, function)
TRANSFORMS = [
    ("grad", lambda fg_, f: fg_.grad(f), _torch_grad, _stats),
    ("value_and_grad", lambda fg_, f: fg_.value_and_grad(f),
     lambda torch, f: lambda x: (f(x), _torch_grad(torch, f)(x.clone())), _stats),
    ("jacobian", lambda fg_, f: fg_.jacobian(f),
     lambda torch, f: lambda x: torch.autograd.functional.jacobian(f, x),
     lambda t: t.cumsum(0) * t.std()),
    ("hessian", lambda fg_, f: fg_.hessian(f),
     lambda torch, f: lambda x: torch.autograd.functional.hessian(f, x),
     lambda t: (t ** 3).sum() / t.var()),
]


@pytest.mark.parametrize("name, ours, theirs, f", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transforms_differentiate_pytorch_faced_arguments_as_pytorchs(name, ours, theirs, f):
    value = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]])
    x = ftorch.tensor(value)
    got = ours(fg, f)(x)
    leaves = list(got) if isinstance(got, tuple) else [got]
    assert all(type(v) is ftorch.Tensor and not v.requires_grad for v in leaves)
    plain = ours(fg, lambda t: (t * t).sum())(fg.tensor(value))   # NumPy's face: NumPy values
    plain = list(plain) if isinstance(plain, tuple) else [plain]
    assert all(isinstance(v, (np.ndarray, np.generic)) for v in plain)
    torch = _pt()
    want = theirs(torch, f)(torch.tensor(value))
    _assert_same(leaves, list(want) if isinstance(want, tuple) else [want], rtol=1e-6)


def test_momentum_buffer_is_one_tensor_updated_in_place():
    def program(torch):
        model = _linear(torch)
        opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
        _train(torch, model, opt, 1)
        buf = opt.state[model.weight]["momentum_buffer"]
        _train(torch, model, opt, 2)
        return [opt.state[model.weight]["momentum_buffer"] is buf, buf]
    ours, theirs = _run_both(program)
    _assert_same(ours, theirs, rtol=1e-5)
    assert ours[0]


# ---- the in-place methods of PyTorch's training and initialisation code ----------------------
#: (name, change): each through a parameter's ``.data`` and on a state tensor
IN_PLACE_MATH = [
    ("addcmul_", lambda d, torch: d.addcmul_(torch.tensor(W), torch.tensor(W), value=0.5)),
    ("addcdiv_", lambda d, torch: d.addcdiv_(torch.tensor(W), torch.tensor(W) ** 2 + 1.0,
                                             value=-0.1)),
    ("addcmul_ default", lambda d, torch: d.addcmul_(torch.tensor(W), torch.tensor(W))),
    ("lerp_", lambda d, torch: d.lerp_(torch.zeros(3, 4), 0.25)),
    ("lerp_ late", lambda d, torch: d.lerp_(torch.ones(3, 4), 0.75)),
    ("masked_fill_", lambda d, torch: d.masked_fill_(torch.tensor(W) > 0, -1.0)),
    ("masked_fill_ row", lambda d, torch: d.masked_fill_(torch.tensor([True, False, True, False]),
                                                         torch.tensor(2.0))),
    ("mul_ add_ chain", lambda d, torch: d.mul_(0.9).add_(torch.tensor(W), alpha=0.1)),
]


@pytest.mark.parametrize("name, change", IN_PLACE_MATH, ids=[n for n, _ in IN_PLACE_MATH])
def test_in_place_math_through_data_is_pytorchs(name, change):
    def program(torch):
        p = _linear(torch).weight
        out = change(p.data, torch)
        return [p.detach(), out]
    ours, theirs = _run_both(program)
    _assert_same(ours, theirs)


def test_a_custom_adam_written_with_in_place_methods_trains_as_pytorchs():
    # the pre-2.0 way of writing an optimizer: state tensors updated in place, p.data.addcdiv_
    def train(torch):
        model, loss_fn = _linear(torch), torch.nn.CrossEntropyLoss()
        x, y = torch.tensor(X), torch.tensor(Y)
        state = {}
        for step in range(1, 5):
            model.zero_grad()
            loss_fn(model(x), y).backward()
            for p in model.parameters():
                grad = p.grad.data
                if p not in state:
                    state[p] = (torch.zeros_like(p.data), torch.zeros_like(p.data))
                exp_avg, exp_avg_sq = state[p]
                exp_avg.mul_(0.9).add_(grad, alpha=0.1)
                exp_avg_sq.mul_(0.999).addcmul_(grad, grad, value=0.001)
                denom = exp_avg_sq.sqrt().add_(1e-8)
                p.data.addcdiv_(exp_avg, denom, value=-0.01 / (1 - 0.9 ** step))
        return [p.detach() for p in model.parameters()]
    ours, theirs = _run_both(train)
    _assert_same(ours, theirs, rtol=1e-5)


@pytest.mark.parametrize("name", ["normal_", "uniform_"])
def test_random_fills_through_data_initialise_in_place(name):
    args = (0.0, 0.02) if name == "normal_" else (-0.1, 0.1)
    layer = ftorch.nn.Linear(200, 300)
    w = layer.weight
    array = w.detach().numpy()
    ftorch.manual_seed(3)
    assert getattr(w.data, name)(*args) is not None
    first = array.copy()
    assert w.detach().numpy() is array and w.dtype == np.float32      # in place, same dtype
    if name == "normal_":
        assert abs(first.mean()) < 0.002 and abs(first.std() - 0.02) < 0.001
    else:
        assert first.min() >= -0.1 and first.max() <= 0.1 and abs(first.mean()) < 0.005
    ftorch.manual_seed(3)
    getattr(w.data, name)(*args)
    np.testing.assert_array_equal(array, first)                       # seeded: it repeats
    g = ftorch.Generator().manual_seed(5)
    getattr(w.data, name)(*args, generator=g)
    assert not np.array_equal(array, first)
    torch = _pt()
    for lib in (ftorch, torch):                 # as in PyTorch: not on a leaf that requires grad
        with pytest.raises(RuntimeError, match="leaf"):
            getattr(lib.nn.Linear(2, 2).weight, name)(*args)
        with lib.no_grad():
            getattr(lib.nn.Linear(2, 2).weight, name)(*args)


# ---- functions that read their argument's values: the same on PyTorch's face ------------------
def test_value_checks_read_pytorch_faced_arguments():
    def program(torch):
        F = torch.nn.functional
        with pytest.raises((ValueError, RuntimeError), match="between 0 and 1"):
            F.binary_cross_entropy(torch.tensor([1.5, 0.2]), torch.tensor([1.0, 0.0]))
        return [F.one_hot(torch.tensor([0, 3, 1])),
                F.binary_cross_entropy(torch.tensor([0.9, 0.2]), torch.tensor([1.0, 0.0]))]
    ours, theirs = _run_both(program)
    _assert_same(ours, theirs)


def test_module_compile_in_place_runs_the_plan_where_no_gradient_is_taken():
    def program(torch, compile_in_place):
        model = _mlp(torch)
        compile_in_place(model)
        x = torch.tensor(X)
        with torch.no_grad():
            first, again = model(x), model(x * 2)
        torch.nn.functional.cross_entropy(model(x), torch.tensor(Y) % 2).backward()
        return [first, again, model[0].weight.grad, list(model.state_dict())]
    ours = program(ftorch, lambda m: m.compile(mode="default"))
    theirs = program(_pt(), lambda m: None)     # (PyTorch's eager values: compile's contract)
    _assert_same(ours[:3], theirs[:3], rtol=1e-5)
    assert ours[3] == theirs[3]
    model = _mlp(ftorch)
    model.compile()
    with ftorch.no_grad():
        for k in range(3):
            y = model(ftorch.tensor(X) + k)
    assert type(y) is ftorch.Tensor and model.forward._fg_function.trace_count == 1
