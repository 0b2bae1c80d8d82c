"""TensorFlow 1 semantics that real TF1 programs rely on (``import fastgraph as tf``)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import fastgraph as tf


# ---- dtype names: TensorFlow's, in TensorFlow's constructors -----------------------------------
@pytest.mark.parametrize("name,want", [
    ("float", np.float32), ("float32", np.float32), ("double", np.float64),
    ("float64", np.float64), ("int32", np.int32), ("int64", np.int64), ("bool", np.bool_),
    (tf.float32, np.float32), (np.float64, np.float64), (float, np.float64),
])
def test_dtype_names_mean_what_they_mean_to_tensorflow(name, want):
    assert tf.placeholder(name, (2,)).dtype == want
    assert tf.constant(1, dtype=name).dtype == want
    assert tf.Variable(np.zeros(2), dtype=name).dtype == want


def test_a_float_placeholder_is_fed_and_computes_in_float32():
    x = tf.placeholder("float", [None, 2])
    y = tf.sum(x * 2.0)
    with tf.Session() as sess:
        got = sess.run(y, {x: [[1.0, 2.0]]})
    assert np.asarray(got).dtype == np.float32 and got == 6.0


def test_unsupported_dtype_names_raise_naming_them():
    with pytest.raises(TypeError, match="'datetime64'"):
        tf.placeholder("datetime64")
    with pytest.raises(TypeError, match="'float128'"):
        tf.placeholder("float128")
    with pytest.raises(TypeError, match="'bogus'"):
        tf.placeholder("bogus")


# ---- the default session ------------------------------------------------------------------------
def _graph():
    x = tf.placeholder(tf.float64, (), name="x")
    v = tf.Variable(1.0, name="v")
    return x, v, x * v, v.assign_add(1.0), tf.global_variables_initializer()


def test_eval_and_run_use_the_session_of_the_enclosing_with_block():
    x, v, y, inc, init = _graph()
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        init.run()
        assert y.eval({x: 3.0}) == 3.0
        assert y.eval(feed_dict={x: 3.0}) == 3.0
        inc.run()
        assert v.eval() == 2.0 and y.eval({x: 3.0}, session=sess) == 6.0
    assert tf.get_default_session() is None
    with pytest.raises(ValueError, match="No default session"):
        y.eval({x: 3.0})


def test_default_sessions_nest_and_as_default_keeps_the_session_open():
    x, v, y, inc, init = _graph()
    outer, inner = tf.Session(), tf.Session()
    for s in (outer, inner):
        s.run(init)
    inner.run(inc)
    with outer.as_default():
        assert tf.get_default_session() is outer and v.eval() == 1.0
        with inner.as_default():
            assert v.eval() == 2.0
        assert v.eval() == 1.0
    assert outer.run(v) == 1.0      # (as_default does not close it)
    with pytest.raises(ValueError, match="No default session"):
        v.eval()


def test_interactive_session_is_the_default_until_closed():
    x, v, y, inc, init = _graph()
    sess = tf.InteractiveSession()
    try:
        init.run()
        assert y.eval({x: 2.0}) == 2.0 and tf.get_default_session() is sess
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_a_session_block_makes_its_graph_the_default():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(2.0)
    with tf.Session(graph=g) as sess:
        b = a * 3.0                  # built in g, as TF1's Session.__enter__ makes g the default
        assert b.graph is g and tf.get_default_graph() is g and sess.run(b) == 6.0
    assert tf.get_default_graph() is not g


def test_the_default_session_is_per_thread():
    x, v, y, inc, init = _graph()
    seen = []
    with tf.Session() as sess:
        t = threading.Thread(target=lambda: seen.append(tf.get_default_session()))
        t.start()
        t.join()
        assert tf.get_default_session() is sess
    assert seen == [None]


# ---- TensorFlow's tensor names: "name:0" ------------------------------------------------------
def test_names_with_the_output_suffix_are_found():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, (), name="x")
        with tf.name_scope("layer1"):
            y = x * 2.0
        init = tf.global_variables_initializer()
    assert g.get("x:0") is x and g.get("x") is x
    assert g.get_tensor_by_name("x:0") is x and g.get_operation_by_name("x") is x
    assert y.name.startswith("layer1/") and g.get_tensor_by_name(y.name + ":0") is y
    with tf.Session(graph=g) as sess:
        sess.run(init)
        assert sess.run(y.name + ":0", {"x:0": 4.0}) == 8.0
        assert sess.run([y.name + ":0"], feed_dict={x.name + ":0": 1.0}) == [2.0]
    with pytest.raises(KeyError, match="'x:1'.*one output"):
        g.get("x:1")
    with pytest.raises(KeyError, match="no node named 'z'"):
        g.get_tensor_by_name("z:0")
    with pytest.raises(ValueError, match="'x'.*tensor name.*'x:0'"):
        g.get_tensor_by_name("x")
