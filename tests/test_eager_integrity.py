"""Integrity of eager mode: no silent wrong gradient, no half-update after an error.

Regression tests for a fuzzing review: in-place changes through views and ``detach()``, NumPy's
``out=`` and ``ufunc.at``, integer casts, optimizer validation, the compiled SGD update under
``np.errstate``, backward seeds, error wording, ``.grad`` assignment, hooks in
``fg.autograd.grad``, and all-or-nothing backward passes.  PyTorch's semantics throughout.
"""
import numpy as np
import pytest

import fastgraph as fg

MODIFIED = "modified by an inplace operation"


# ---- 1. one version counter for a tensor, its detach() and its views ---------------------------
def test_inplace_through_detach_is_detected():
    b = fg.tensor([3.0, 4.0], requires_grad=True)
    c = b * 2
    d = c * c
    t = c.detach()
    t += 1
    with pytest.raises(RuntimeError, match=MODIFIED):
        d.sum().backward()


def test_inplace_through_a_basic_index_view_is_detected():
    w = fg.tensor([1.0, 1.0, 1.0])
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * w).sum()
    v = w[0:2]
    v += 5
    np.testing.assert_array_equal(w.data, [6.0, 6.0, 1.0])  # it is a view
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


@pytest.mark.parametrize("make_view", [
    lambda t: t[1:],
    lambda t: t[0],
    lambda t: t.reshape(3, 2),
    lambda t: t.T,
    lambda t: fg.transpose(t),
    lambda t: fg.swapaxes(t, 0, 1),
    lambda t: fg.expand_dims(t, 0),
    lambda t: fg.squeeze(fg.expand_dims(t, 0), 0),
    lambda t: t.ravel(),
    lambda t: np.reshape(t, (6,)),
    lambda t: t.astype(np.float64),
    lambda t: t.detach()[0][1:],          # a view of a view of a detached tensor
], ids=["slice", "int", "reshape", "T", "transpose", "swapaxes", "expand_dims", "squeeze",
        "ravel", "np.reshape", "astype-same", "view-of-view"])
def test_every_view_shares_the_version_counter(make_view):
    w = fg.tensor(np.arange(6.0).reshape(2, 3))
    x = fg.tensor(np.ones((2, 3)), requires_grad=True)
    y = (x * w).sum()
    v = make_view(w)
    v[...] = 0.0
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


def test_setitem_on_the_base_is_seen_by_a_saved_view():
    w = fg.tensor([1.0, 2.0, 3.0])
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * w[:2]).sum()  # the tape saved the view
    w[0] = 10.0
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


def test_copies_do_not_share_the_version_counter():
    w = fg.tensor([1.0, 2.0, 3.0])
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * w[[0, 1]]).sum()      # integer-array indexing copies
    z = (x * (w[:2] + 0.0)).sum()  # so does arithmetic
    w += 1
    y.backward()
    z.backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])


def test_inplace_on_a_no_grad_view_of_a_leaf_requiring_grad_is_an_error():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with fg.no_grad():
        v = x.reshape(3)
    with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
        v += 10
    with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
        v[0] = 10.0
    np.testing.assert_array_equal(x.data, [1.0, 2.0, 3.0])
    with fg.no_grad():  # allowed under no_grad (how parameters are updated), and versioned
        y = x * 1.0
        v += 10
    np.testing.assert_array_equal(x.data, [11.0, 12.0, 13.0])
    assert x._version == v._version == 1
    del y


def test_inplace_on_detach_of_a_leaf_is_allowed_but_versioned():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    x.detach().__iadd__(1.0)  # PyTorch allows x.detach().add_(1)
    np.testing.assert_array_equal(x.data, [2.0, 3.0])
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


def test_unchanged_views_still_backprop():
    x = fg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    w = fg.tensor(np.arange(6.0).reshape(3, 2))
    y = (x.T * w).sum() + x[0].sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.data, w.data.T + np.array([[1.0] * 3, [0.0] * 3]))


# ---- 2. NumPy out= and ufunc.at ---------------------------------------------------------------
def test_numpy_out_bumps_the_version():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    w = fg.tensor([3.0, 4.0])
    y = x * w
    r = np.multiply(w, 10.0, out=w)
    assert r is w
    np.testing.assert_array_equal(w.data, [30.0, 40.0])
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


def test_ufunc_at_checks_leaves_and_bumps_the_version():
    p = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        np.add.at(p, [0], 5.0)
    np.testing.assert_array_equal(p.data, [1.0, 2.0])
    w = fg.tensor([3.0, 4.0])
    y = (p * w).sum()
    np.add.at(w, [0], 5.0)
    np.testing.assert_array_equal(w.data, [8.0, 4.0])
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


# ---- 3. integer and boolean results carry no gradient -----------------------------------------
@pytest.mark.parametrize("dtype", [np.int64, np.int32, bool])
def test_astype_to_non_float_does_not_require_grad(dtype):
    x = fg.tensor([1.4, 2.6], requires_grad=True)
    y = (x * 3.0).astype(dtype)
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        (y * 2).sum().backward()
    z = (x * 3.0).astype(np.float32)  # float casts still carry it
    assert z.requires_grad
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0])


# ---- 4. optimizers: validate everything first ------------------------------------------------
def _two_params(bad_shape=(3,)):
    p1 = fg.tensor([1.0, 1.0], requires_grad=True)
    p2 = fg.tensor([1.0, 1.0], requires_grad=True)
    p1.grad = fg.tensor([1.0, 1.0])
    p2._grad = fg.tensor(np.ones(bad_shape))  # (past the .grad check, as a buggy caller might)
    return p1, p2


@pytest.mark.parametrize("make", [
    lambda ps: fg.optim.SGD(ps, lr=0.1),
    lambda ps: fg.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: fg.optim.Adam(ps, lr=0.1),
], ids=["sgd", "momentum", "adam"])
@pytest.mark.parametrize("bad_shape", [(3,), (1,), (1, 2)], ids=["wrong", "broadcast", "2d"])
def test_optimizer_rejects_a_bad_gradient_before_changing_anything(make, bad_shape):
    p1, p2 = _two_params(bad_shape)
    opt = make([p1, p2])
    name = type(opt).__name__
    with pytest.raises(ValueError, match=rf"{name}\.step\(\): parameter 1 has shape \(2,\)"):
        opt.step()
    np.testing.assert_array_equal(p1.data, [1.0, 1.0])
    np.testing.assert_array_equal(p2.data, [1.0, 1.0])
    assert p1._version == 0
    p2.grad = fg.tensor([1.0, 1.0])
    opt.step()  # the retried step is a first step
    np.testing.assert_allclose(p1.data, [0.9, 0.9])
    np.testing.assert_allclose(p2.data, [0.9, 0.9])


def test_optimizer_rejects_duplicates_and_bad_hyperparameters():
    x = fg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="more than once"):
        fg.optim.SGD([x, x], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        fg.optim.SGD(x, lr=0.1)
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="learning rate"):
            fg.optim.SGD([x], lr=bad)
    with pytest.raises(ValueError, match="momentum"):
        fg.optim.SGD([x], lr=0.1, momentum=float("nan"))
    with pytest.raises(ValueError, match="beta"):
        fg.optim.Adam([x], lr=0.1, betas=(1.0, 0.999))
    with pytest.raises(ValueError, match="epsilon"):
        fg.optim.Adam([x], lr=0.1, eps=float("inf"))
    opt = fg.optim.SGD([x], lr=0.1)
    x.grad = fg.tensor([1.0])
    opt.lr = float("nan")
    with pytest.raises(ValueError, match="SGD.step.*learning rate"):
        opt.step()
    np.testing.assert_array_equal(x.data, [1.0])


def test_optimizer_step_bumps_the_version():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    fg.optim.SGD([x], lr=0.1).step()
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


@pytest.mark.parametrize("make", [
    lambda ps: fg.optim.SGD(ps, lr=10.0),
    lambda ps: fg.optim.SGD(ps, lr=10.0, momentum=0.5),
    lambda ps: fg.optim.Adam(ps, lr=10.0),
], ids=["sgd", "momentum", "adam"])
def test_optimizer_step_is_all_or_nothing_under_errstate_raise(make):
    p = np.ones(3000, np.float32)
    g = np.ones(3000, np.float32)
    g[2000] = 3e38  # lr * g overflows past the first blocks of the compiled loop
    w0 = fg.tensor(np.ones(4, np.float32), requires_grad=True)
    w0.grad = fg.tensor(np.ones(4, np.float32))
    w = fg.tensor(p.copy(), requires_grad=True)
    w.grad = fg.tensor(g)
    opt = make([w0, w])
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        opt.step()
    np.testing.assert_array_equal(w.data, p)        # nothing written ...
    np.testing.assert_array_equal(w0.data, np.ones(4, np.float32))  # ... to any parameter
    w.grad = fg.tensor(np.ones(3000, np.float32))
    opt.step()  # and no state advanced: this is a first step
    np.testing.assert_allclose(w0.data, 1 - 10.0 * np.ones(4), rtol=1e-6)


def test_sgd_update_under_warnings_as_errors_is_all_or_nothing():
    import warnings
    p = np.ones(3000, np.float32)
    g = np.ones(3000, np.float32)
    g[2000] = 3e38
    w = fg.tensor(p.copy(), requires_grad=True)
    w.grad = fg.tensor(g)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning):
            fg.optim.SGD([w], lr=10.0).step()
    np.testing.assert_array_equal(w.data, p)


# ---- 5. backward seeds --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [[None, None], ["a", "b"], [object(), object()]],
                         ids=["none", "str", "object"])
def test_backward_rejects_non_numeric_gradients(seed):
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="gradient"):
        (x * x).backward(gradient=seed)
    assert x.grad is None


@pytest.mark.parametrize("create_graph", [False, True])
def test_backward_rejects_a_gradient_of_the_wrong_shape(create_graph):
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    for seed in ([1.0], fg.tensor([1.0, 1.0, 1.0]), np.ones((2, 1))):
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            (x * x).backward(gradient=seed, create_graph=create_graph)
    (x * x).backward(gradient=[1.0, 1.0])
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])


# ---- 6. error wording never crashes -------------------------------------------------------------
@pytest.mark.parametrize("fn, op", [
    (lambda x: x + "ab", "add"),
    (lambda x: "ab" * x, "multiply"),
    (lambda x: x @ "ab", "matmul"),
    (lambda x: fg.clip(x, "a", 1), "clip"),
    (lambda x: x + object(), "add"),
], ids=["add-str", "rmul-str", "matmul-str", "clip-str", "add-object"])
def test_op_errors_name_the_op_and_operands(fn, op):
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError) as info:
        fn(x)
    msg = str(info.value)
    assert msg.startswith(op), msg
    assert "float64" in msg, msg
    assert info.value.__cause__ is not None  # the original error is chained


def test_op_error_keeps_shape_errors_worded():
    with pytest.raises(ValueError, match="add"):
        fg.tensor([1.0, 2.0]) + fg.tensor([1.0, 2.0, 3.0])


# ---- 7. .grad assignment ----------------------------------------------------------------------
def test_grad_assignment_is_validated():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    for bad in (np.array([1.0, 2.0]), "ab", [1.0, 2.0]):
        with pytest.raises(TypeError, match="Tensor or None"):
            x.grad = bad
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = fg.tensor([1.0])
    with pytest.raises(RuntimeError, match="different type"):
        x.grad = fg.tensor([1.0, 2.0], dtype=np.float32)
    assert x.grad is None
    x.grad = fg.tensor([1.0, 1.0])
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 5.0])
    x.grad = None
    assert x.grad is None


def test_a_hook_may_not_change_the_gradient_shape():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g[:1])
    with pytest.raises(RuntimeError, match="changed the size"):
        (x * x).sum().backward()
    assert x.grad is None


# ---- 8. autograd.grad runs the leaves' hooks ----------------------------------------------------
def test_autograd_grad_runs_leaf_hooks():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (gx,) = fg.autograd.grad((x ** 2).sum(), [x])
    np.testing.assert_array_equal(gx.data, [20.0, 40.0])
    assert x.grad is None
    x2 = fg.tensor([1.0, 2.0], requires_grad=True)
    x2.register_hook(lambda g: g * 10)
    (gx2,) = fg.autograd.grad((x2 ** 2).sum(), [x2], create_graph=True)
    np.testing.assert_array_equal(gx2.data, [20.0, 40.0])


# ---- 9. all-or-nothing backward -----------------------------------------------------------------
def test_a_failing_backward_leaves_grads_and_graph_untouched():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    b = fg.tensor([1.0, 2.0], requires_grad=True)
    c = a * 2.0
    c.retain_grad()
    y = c.sum() + (b * 3.0).sum()

    def bad(g):
        raise ZeroDivisionError("hook")

    for target in (a, b):  # whichever leaf is delivered first, nothing is delivered
        h = target.register_hook(bad)
        with pytest.raises(ZeroDivisionError):
            y.backward()
        assert a.grad is None and b.grad is None and c.grad is None
        h.remove()
    y.backward()  # the graph was not freed by the failed passes
    np.testing.assert_array_equal(a.grad.data, [2.0, 2.0])
    np.testing.assert_array_equal(b.grad.data, [3.0, 3.0])
    np.testing.assert_array_equal(c.grad.data, [1.0, 1.0])


def test_a_failing_non_leaf_hook_leaves_grads_untouched():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    b = fg.tensor([1.0, 2.0], requires_grad=True)
    m = a * b
    m.register_hook(lambda g: 1 / 0)
    y = (a * 5.0).sum() + m.sum()
    with pytest.raises(ZeroDivisionError):
        y.backward()
    assert a.grad is None and b.grad is None


# ---- more in-place forms, and values that would silently drop a gradient ------------------------
@pytest.mark.parametrize("stmt", ["x **= 2", "x //= 2", "x @= x"])
def test_every_inplace_operator_on_a_leaf_that_requires_grad_raises(stmt):
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        exec(stmt)
    np.testing.assert_array_equal(x.data, [1.0, 2.0])


def test_inplace_power_and_floor_divide_work_on_plain_tensors():
    y = fg.tensor([2.0, 3.0])
    y **= 2
    y //= 2
    np.testing.assert_array_equal(y.data, [2.0, 4.0])
    x = fg.tensor([2.0, 3.0], requires_grad=True)
    z = x * 1.0
    z **= 2                       # a non-leaf: recorded out of place, gradients stay right
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [4.0, 6.0])


def test_setitem_of_a_value_that_requires_grad_raises_instead_of_dropping_it():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    t = fg.zeros(3)
    with pytest.raises(RuntimeError, match="not differentiable"):
        t[0:2] = x * 2
    np.testing.assert_array_equal(t.data, 0.0)
    t[0:2] = (x * 2).detach()
    np.testing.assert_array_equal(t.data, [2.0, 4.0, 0.0])


def test_tensor_constructor_checks_requires_grad_dtype():
    with pytest.raises(RuntimeError, match="floating point"):
        fg.Tensor(np.arange(3), requires_grad=True)
    with pytest.raises(TypeError, match="float128"):
        fg.tensor(np.ones(2, np.longdouble))


def test_ufunc_out_with_an_empty_slot_returns_numpys_result_there():
    t = fg.tensor([7.0, 8.0])
    q, r = np.divmod(np.array([7.0, 8.0]), 3.0, out=(t, None))
    assert q is t
    np.testing.assert_array_equal(t.data, [2.0, 2.0])
    np.testing.assert_array_equal(r, [1.0, 2.0])


def test_adam_updates_its_moments_in_place_when_errors_do_not_raise():
    p = fg.tensor(np.ones(4), requires_grad=True)
    opt = fg.optim.Adam([p], lr=0.1)
    p.grad = fg.tensor(np.full(4, 0.5))
    opt.step()
    m, v = opt.state[p]["exp_avg"].data, opt.state[p]["exp_avg_sq"].data
    opt.step()
    assert opt.state[p]["exp_avg"].data is m and opt.state[p]["exp_avg_sq"].data is v  # no copies
    with np.errstate(over="raise"):                       # strict: computed first, same values
        ref = fg.tensor(np.ones(4), requires_grad=True)
        opt2 = fg.optim.Adam([ref], lr=0.1)
        ref.grad = fg.tensor(np.full(4, 0.5))
        opt2.step()
        opt2.step()
    np.testing.assert_array_equal(ref.data, p.data)
