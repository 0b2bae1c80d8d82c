"""``fastgraph.nn_ops.dropout``: masks from the seedable eager generator, off in eval, the mask
as its gradient, and a new mask on every run of a static plan or ``fg.function``."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.nn_ops as N


def test_seeded_masks_repeat_and_scale_the_kept_entries():
    fg.random.seed(3)
    a = N.dropout(fg.ones((50, 40)), 0.25).data
    fg.random.seed(3)
    b = N.dropout(fg.ones((50, 40)), 0.25).data
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) == {0.0, np.float64(1 / 0.75)}
    assert 0.2 < np.mean(a == 0) < 0.3


def test_eval_mode_and_p_zero_are_the_identity():
    x = fg.tensor(np.arange(6.0))
    assert N.dropout(x, 0.5, training=False) is x
    assert N.dropout(x, 0.0) is x
    np.testing.assert_array_equal(N.dropout(x, 1.0).data, np.zeros(6))


def test_gradient_is_the_mask():
    x = fg.tensor(np.ones((8, 9), np.float32), requires_grad=True)
    y = N.dropout(x, 0.5)
    y.sum().backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.data, y.data)


def test_channel_dropout_zeroes_whole_channels():
    y = N.dropout2d(fg.ones((4, 6, 3, 3)), 0.5).data
    per_channel = y.reshape(4, 6, 9)
    assert np.all(per_channel.min(axis=2) == per_channel.max(axis=2))


def test_bad_probability_is_named():
    with pytest.raises(ValueError, match="dropout: dropout probability"):
        N.dropout(fg.ones(3), 1.5)


def test_static_and_function_draw_anew_and_building_leaves_the_sequence_alone():
    fg.random.seed(7)
    expected = fg.random.rand(3)      # the sequence's first draw, as if nothing intervened
    fg.random.seed(7)
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(np.float64, (200,))
        y = N.dropout(x, 0.5)
    np.testing.assert_array_equal(fg.random.rand(3).data, expected.data)
    sess = fg.Session(g)
    ones = np.ones(200)
    r1, r2 = sess.run(y, {x: ones}), sess.run(y, {x: ones})
    assert not np.array_equal(r1, r2)
    f = fg.function(lambda v: N.dropout(v, 0.5))
    assert not np.array_equal(f(ones), f(ones))
    fg.random.seed(11)
    a = f(ones)
    fg.random.seed(11)
    np.testing.assert_array_equal(f(ones), a)     # fg.function's draws follow fg.random.seed
