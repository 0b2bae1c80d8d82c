"""``fg.function(..., donate_argnums=...)``: outputs written into donated arguments' arrays.

The contract (JAX's): a donated argument's array is handed over; each output takes the first
unpaired donated argument of its shape and dtype and may be that very array, updated.  Values are
always those of the same function without donation."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import fastgraph as fg


def _loss(w, b, x, y):
    return fg.mean((fg.matmul(x, w) + b - y) ** 2)


def _sgd_step(w, b, x, y):
    loss, (gw, gb) = fg.value_and_grad(_loss, argnums=(0, 1))(w, b, x, y)
    return loss, (w - 0.1 * gw, b - 0.1 * gb)


@pytest.fixture
def problem(rng):
    return (rng.standard_normal((5, 3)), np.zeros(3), rng.standard_normal((40, 5)),
            rng.standard_normal((40, 3)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_training_loop_updates_in_place_with_the_same_values(problem, dtype):
    w0, b0, x, y = (a.astype(dtype) for a in problem)
    plain = fg.function(_sgd_step)
    donating = fg.function(_sgd_step, donate_argnums=(0, 1))
    w_ref, b_ref = w0.copy(), b0.copy()
    w, b = w0.copy(), b0.copy()
    w_id, b_id = id(w), id(b)
    for _ in range(5):
        l_ref, (w_ref, b_ref) = plain(w_ref, b_ref, x, y)
        loss, (w, b) = donating(w, b, x, y)
        assert loss == l_ref
        np.testing.assert_array_equal(w, w_ref)
        np.testing.assert_array_equal(b, b_ref)
        assert w.dtype == dtype and b.dtype == dtype
    assert (id(w), id(b)) == (w_id, b_id)          # the caller's arrays, updated
    assert donating.trace_count == 1
    assert "in place into arg0" in donating.explain(w, b, x, y)


def test_without_donation_the_arguments_are_untouched(problem):
    w, b, x, y = problem
    keep = w.copy()
    _, (w1, _) = fg.function(_sgd_step)(w, b, x, y)
    np.testing.assert_array_equal(w, keep)
    assert w1 is not w


def test_arguments_that_cannot_be_written_are_copied(problem):
    w, b, x, y = problem
    _, (w_ref, b_ref) = fg.function(_sgd_step)(w, b, x, y)
    donating = fg.function(_sgd_step, donate_argnums=(0, 1))
    ro = w.copy()
    ro.flags.writeable = False
    strided = np.asfortranarray(w)              # same values, not C-contiguous
    for arg in (ro, strided):
        keep = np.array(arg)
        _, (w1, b1) = donating(arg, b.copy(), x, y)
        np.testing.assert_array_equal(w1, w_ref)
        np.testing.assert_array_equal(b1, b_ref)
        assert w1 is not arg
        np.testing.assert_array_equal(arg, keep)


def test_a_donated_array_that_is_also_read_elsewhere_is_copied(rng):
    def step(w, v):                 # v is read by the update of w: aliasing would corrupt it
        return w - 0.5 * v, v * 2.0
    a = rng.standard_normal(7)
    want = fg.function(step)(a.copy(), a.copy())
    donating = fg.function(step, donate_argnums=(0,))
    arr = a.copy()
    for second in (arr, arr[:]):                 # the same array twice, or a view of it
        got = donating(arr, second)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0] is not arr
        np.testing.assert_array_equal(arr, a)


def test_pairing_by_shape_and_dtype_and_non_elementwise_outputs(rng):
    def f(w, s, v):
        # outputs: a (3,) vector, a (3, 3) matrix product (not elementwise), w itself
        return v + 1.0, fg.matmul(w, w), w, s * 2.0
    w, s, v = rng.standard_normal((3, 3)), np.float64(2.0), rng.standard_normal(3)
    want = fg.function(f)(w.copy(), s, v.copy())
    donating = fg.function(f, donate_argnums=(0, 1, 2))
    got = donating(w.copy(), s, v.copy())
    for g_, w_ in zip(got, want):
        np.testing.assert_array_equal(g_, w_)
    assert np.shape(got[3]) == ()


def test_the_plan_does_not_keep_the_callers_arrays_alive(problem):
    w, b, x, y = problem
    donating = fg.function(_sgd_step, donate_argnums=(0, 1))
    w, b = w.copy(), b.copy()
    _, (w, b) = donating(w, b, x, y)
    ref = weakref.ref(w)
    del w, b
    gc.collect()
    assert ref() is None


def test_donate_argnums_errors(problem):
    w, b, x, y = problem
    with pytest.raises(TypeError, match="donate_argnums"):
        fg.function(_sgd_step, donate_argnums=("w",))
    with pytest.raises(ValueError, match="donate_argnums entry 9 is out of range for 4"):
        fg.function(_sgd_step, donate_argnums=9)(w, b, x, y)
    assert fg.function(_sgd_step, donate_argnums=-4)(w.copy(), b, x, y)[0] == \
        fg.function(_sgd_step)(w, b, x, y)[0]



@pytest.mark.parametrize("disable", [("inplace",), ("fuse",), ("fold", "simplify", "merge")])
def test_donation_with_passes_switched_off_gives_the_same_values(problem, disable):
    w, b, x, y = problem
    want = fg.function(_sgd_step, disable=disable)(w, b, x, y)
    w2, b2 = w.copy(), b.copy()
    got = fg.function(_sgd_step, disable=disable, donate_argnums=(0, 1))(w2, b2, x, y)
    assert got[0] == want[0]
    for g_, w_ in zip(got[1], want[1]):
        np.testing.assert_array_equal(g_, w_)
    if "inplace" in disable:              # then nothing is written into the arguments
        np.testing.assert_array_equal(w2, w)


@pytest.mark.parametrize("errors", ["errstate", "warnings"])
def test_a_floating_point_error_leaves_donated_arrays_unchanged(errors):
    import warnings
    f = fg.function(lambda w, b, d: (w / d, b - 1.0), donate_argnums=(0, 1))
    f(np.ones(2), np.ones(2), np.ones(2))
    w, b = np.array([1.0, 2.0]), np.array([5.0, 6.0])
    ctx = (np.errstate(divide="raise") if errors == "errstate" else warnings.catch_warnings())
    with ctx:
        if errors == "warnings":
            warnings.simplefilter("error")
        with pytest.raises((FloatingPointError, RuntimeWarning)):
            f(w, b, np.array([2.0, 0.0]))
    np.testing.assert_array_equal(w, [1.0, 2.0])
    np.testing.assert_array_equal(b, [5.0, 6.0])
    w2, b2 = f(w, b, np.array([2.0, 4.0]))       # and in place again once errors do not raise
    assert w2 is w and b2 is b
    np.testing.assert_array_equal(w, [0.5, 0.5])


def test_a_floating_point_error_leaves_session_variables_unchanged():
    g = fg.Graph()
    with g.as_default():
        d = fg.placeholder(fg.float64, (2,), name="d")
        v = fg.Variable(np.array([1.0, 2.0]))
        u = fg.Variable(np.array([3.0, 4.0]))
        train = fg.group(v.assign(v / d), u.assign(u * 2.0))
        init = fg.global_variables_initializer()
    for disable in [(), ("fuse",)]:
        sess = fg.Session(graph=g, disable=disable)
        sess.run(init)
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            sess.run(train, {d: np.array([1.0, 0.0])})
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(u), [3.0, 4.0])
