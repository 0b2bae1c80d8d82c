"""Static shapes: inferred while building (``None`` is an unknown dimension) and checked there.

An inferred shape has the rank the run gives and every known dimension equal to the run's, for
any size an unknown dimension takes; shapes that no run can have are refused at build time,
naming the op and the shape, as TensorFlow refuses them.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import fastgraph as fg
from optable import as_list, case_params, make_inputs

M5 = np.array([True, False, True, True, False])
M23 = np.array([[True, False, True], [False, True, True]])

# (placeholder shape, index, static shape); each is also run on a value of the same rank
INDEXING = [
    ((None,), np.array([3, 4]), (2,)),
    ((None,), np.array([-1]), (1,)),
    ((None,), M5, (3,)),
    ((None, 3), np.array([3]), (1, 3)),
    ((None, 3), (slice(None), np.array([0, 2])), (None, 2)),
    ((None, None), (np.array([1, 2]), np.array([0])), (2,)),
    ((None, 4, 5), (np.array([0, 1]), slice(None), np.array([1, 2])), (2, 4)),   # apart: first
    ((3, None, 5), (slice(None), np.array([0, 1]), np.array([[1], [2]])), (3, 2, 2)),
    ((None, 4), (np.array([[0, 1]]), 2), (1, 2)),         # an int beside an array: advanced
    ((None, 3, 2), (M23,), (4, 2)),
    ((None, 3), (Ellipsis, np.array([1, 1, 1])), (None, 3)),
    ((None,), slice(0, 2), (None,)),                      # min(2, n): unknown
    ((5,), slice(0, 2), (2,)),
    ((5,), slice(None, None, -2), (3,)),
    ((None, 3), 0, (3,)),
    ((None, 3), (Ellipsis, 1), (None,)),
    ((None,), None, (1, None)),
    ((None, 3), (None, slice(None), None, 1), (1, None, 1)),
    ((None, 2), np.array(1), (2,)),
    ((None,), True, (1, None)),
]


def _value(shape, index, n):
    """A value of ``shape`` with unknown dimensions of size ``n`` (a leading mask fixes its own)."""
    full = [n if d is None else d for d in shape]
    first = index[0] if isinstance(index, tuple) else index
    if isinstance(first, np.ndarray) and first.dtype == bool:
        full[:first.ndim] = first.shape
    return np.arange(np.prod(full), dtype=np.float64).reshape(full)


@pytest.mark.parametrize("shape,index,want", INDEXING, ids=[str(i) for i in range(len(INDEXING))])
def test_indexing_an_unknown_dimension_keeps_the_rank(shape, index, want):
    x = fg.placeholder(fg.float64, shape)
    y = x[index]
    assert y.shape == want
    with fg.Session() as sess:
        for n in (5, 6, 9):
            v = _value(shape, index, n)
            got = sess.run(y, {x: v})
            assert np.shape(got) == np.shape(v[index])
            assert len(got.shape) == len(want)
            assert all(w is None or w == g for w, g in zip(want, got.shape))


def test_an_indexed_unknown_dimension_builds_into_later_ops():
    x = fg.placeholder(fg.float64, (None,))
    y = x[np.array([3, 4])]
    z = fg.concatenate([fg.reshape(y, (2, 1)), fg.reshape(x[M5], (3, 1))])
    assert z.shape == (5, 1)
    with fg.Session() as sess:
        np.testing.assert_array_equal(sess.run(z, {x: np.arange(5.0)}).ravel(), [3, 4, 0, 2, 3])


def _random_index(rng, ndim):
    """A random mix of NumPy's index kinds for ``ndim`` dimensions of sizes 4 to 6 (some of
    them invalid for the value: out of bounds, mismatched masks, too many indices)."""
    items, left = [], ndim
    while left > 0 and rng.random() < 0.85:
        kind = rng.integers(7)
        if kind == 0:
            items.append(int(rng.integers(-6, 6)))
        elif kind == 1:
            a, b = rng.integers(-7, 7, size=2)
            items.append(slice(int(a), int(b), int(rng.choice([-2, -1, 1, 2, 3]))))
        elif kind == 2:
            items.append(rng.integers(-5, 5, size=tuple(rng.integers(0, 3, size=rng.integers(3)))))
        elif kind == 3:
            items.append(rng.random(tuple(rng.integers(4, 7, size=rng.integers(1, 3)))) < 0.5)
            left -= items[-1].ndim - 1
        elif kind == 4:
            items.append(None)
            continue
        elif kind == 5:
            items.append(bool(rng.integers(2)))
            continue
        else:
            items.append(slice(None) if any(it is Ellipsis for it in items) else Ellipsis)
            continue
        left -= 1
    return tuple(items)


def test_indexing_shapes_agree_with_numpy():
    # every known dimension of the static shape is the run's, for many random index mixes;
    # an index NumPy refuses on the value is refused at build time when the shape is known
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(3000):
        ndim = int(rng.integers(1, 4))
        full = tuple(int(d) for d in rng.integers(4, 7, size=ndim))
        index = _random_index(rng, ndim)
        value = np.zeros(full)
        try:
            want = value[index].shape
        except (IndexError, ValueError):
            with pytest.raises(ValueError, match="getitem"):
                fg.placeholder(fg.float64, full)[index]
            continue
        assert fg.placeholder(fg.float64, full)[index].shape == want, (full, index)
        unknown = tuple(None if rng.random() < 0.5 else d for d in full)
        got = fg.placeholder(fg.float64, unknown)[index].shape
        assert len(got) == len(want) and all(g is None or g == w for g, w in zip(got, want)), \
            (unknown, index, got, want)
        checked += 1
    assert checked > 1000


@pytest.mark.parametrize("shape,index,message", [
    ((3,), np.array([3]), "index 3 is out of bounds for axis 0 with size 3"),
    ((3,), 5, "index 5 is out of bounds for axis 0 with size 3"),
    ((3,), (0, 0), "too many indices"),
    ((None,), (0, 0), "too many indices"),
    ((4,), M5, "boolean index did not match"),
    ((None, 3), (np.array([0, 1]), np.array([0, 1, 2])), "could not be broadcast"),
    ((None,), (Ellipsis, Ellipsis), "single ellipsis"),
])
def test_invalid_indices_are_refused_at_build_time(shape, index, message):
    x = fg.placeholder(fg.float64, shape, name="x")
    with pytest.raises(ValueError, match=f"getitem: .*{message}.*{re.escape(str(shape))}"):
        x[index]


@pytest.mark.parametrize("case", case_params(predicate=lambda c: c.static))
def test_every_op_infers_a_shape_its_runs_have_from_unknown_dimensions(case):
    # placeholders of the inputs' ranks with every dimension unknown: each output's static
    # shape has the run's rank (or an unknown rank) and only the run's dimensions; an op that
    # needs a known length says so at build time
    arrays = make_inputs(case, np.float64, np.random.default_rng(0))
    want = [np.shape(o) for o in as_list(case.ref(*arrays))]
    with fg.Graph().as_default():
        phs = [fg.placeholder(a.dtype, (None,) * a.ndim) for a in arrays]
        try:
            outs = as_list(case.fn(*phs))
        except ValueError as e:
            assert str(e).startswith(case.op) and "known" in str(e), e
            return
        for out, w in zip(outs, want):
            if out.shape is not None:
                assert len(out.shape) == len(w), (out.shape, w)
                assert all(d is None or d == e for d, e in zip(out.shape, w)), (out.shape, w)
        with fg.Session() as sess:
            got = sess.run(outs, dict(zip(phs, arrays)))
        assert [np.shape(g) for g in got] == want


# ---- shapes given by the user are checked where they are given --------------------------------
@pytest.mark.parametrize("shape,error,message", [
    ((-2,), ValueError, r"placeholder 'x': shape \(-2,\) has the negative dimension -2"),
    ((3, -5), ValueError, r"placeholder 'x': shape \(3, -5\) has the negative dimension -5"),
    ((2.5,), TypeError, r"placeholder 'x': shape \(2\.5,\) must hold integers or None, got float"),
    ((3.0,), TypeError, r"placeholder 'x': shape \(3\.0,\) must hold integers"),
    ((True,), TypeError, r"placeholder 'x': shape \(True,\) must hold integers"),
    (([2],), TypeError, r"placeholder 'x': shape \(\[2\],\) must hold integers"),
    (2.5, TypeError, r"placeholder 'x': shape must be a sequence of integers or None, got float"),
])
def test_a_placeholder_shape_is_checked_at_build_time(shape, error, message):
    with pytest.raises(error, match=message):
        fg.placeholder(fg.float64, shape, name="x")


@pytest.mark.parametrize("shape,want", [
    ((None, 3), (None, 3)), ([-1, 3], (None, 3)), (3, (3,)), ((np.int64(2), 0), (2, 0)),
    (np.array([2, 3]), (2, 3)), ((), ()), (None, None),
])
def test_placeholder_shapes_tensorflow_accepts(shape, want):
    assert fg.placeholder(fg.float64, shape).shape == want


# (fn, error, message): the same in eager and static mode, raised when the op is built
SHAPE_ARGUMENTS = [
    (lambda x: fg.reshape(x, (-1, -1)), ValueError, r"reshape: shape \(-1, -1\) has more than "
                                                    r"one unknown dimension"),
    (lambda x: fg.reshape(x, (-2, 3)), ValueError, r"reshape: shape \(-2, 3\) has the negative "
                                                   r"dimension -2 \(only -1"),
    (lambda x: x.reshape(3, -3), ValueError, r"reshape: shape \(3, -3\) has the negative"),
    (lambda x: fg.reshape(x, (0, -1)), ValueError, r"reshape: .*\(0, -1\).*ambiguous"),
    (lambda x: fg.reshape(x, (2.5, 3)), TypeError, r"reshape: shape must be an integer"),
    (lambda x: fg.reshape(x, (4, -1)), ValueError, r"reshape: cannot reshape array of shape "
                                                   r"\(2, 3\) into shape \(4, -1\)"),
    (lambda x: fg.broadcast_to(x, (-2, 2, 3)), ValueError, r"broadcast_to: shape \(-2, 2, 3\) "
                                                           r"has the negative dimension -2"),
    (lambda x: fg.broadcast_to(x, (1, 3)), ValueError, r"broadcast_to: cannot broadcast an "
                                                       r"operand of shape \(2, 3\) to shape "
                                                       r"\(1, 3\)"),
    (lambda x: fg.broadcast_to(x, (3,)), ValueError, r"broadcast_to: cannot broadcast"),
]


@pytest.mark.parametrize("fn,error,message", SHAPE_ARGUMENTS,
                         ids=[str(i) for i in range(len(SHAPE_ARGUMENTS))])
@pytest.mark.parametrize("mode", ["eager", "static"])
def test_invalid_shape_arguments_raise_when_built(mode, fn, error, message):
    x = fg.tensor(np.zeros((2, 3))) if mode == "eager" else fg.placeholder(fg.float64, (2, 3))
    with pytest.raises(error, match=message):
        fn(x)
    if mode == "static":    # an unknown dimension does not excuse a shape no run can have
        u = fg.placeholder(fg.float64, (None, 3))
        if "cannot reshape" not in message and "cannot broadcast an operand of shape" \
                not in message:
            with pytest.raises(error, match=message.split(":")[0]):
                fn(u)


@pytest.mark.parametrize("factory", [
    lambda s: fg.zeros(s), lambda s: fg.ones(s), lambda s: fg.full(s, 1.0),
    lambda s: fg.rand(s), lambda s: fg.randn(s)])
def test_factories_name_themselves_for_a_negative_shape(factory):
    with pytest.raises(ValueError, match=r"^\w+: shape \(2, -1\) has the negative dimension -1"):
        factory((2, -1))
    assert factory((2, 0)).shape == (2, 0) and factory(np.array([2, 3])).shape == (2, 3)
