"""TensorFlow 1's random ops as graph nodes: ``random_normal``, ``random_uniform``,
``truncated_normal``, ``set_random_seed``, and ``nn.dropout``.

Each call builds a node of the default graph that draws anew on every run.  Seeds follow
TensorFlow 1: with a graph-level seed (:func:`set_random_seed`) and no op seed, an op's seed is
the number of nodes built before it, so a program rebuilt the same way draws the same values;
with an op seed alone the graph seed is TensorFlow's default; with neither the draws are not
reproducible.  Each Session starts every op's sequence afresh.

    >>> fg.set_random_seed(1)
    >>> w = fg.Variable(fg.random_normal([784, 256], stddev=0.1))
"""
from __future__ import annotations

import numpy as np

from .. import ops as F
from .._core import NN, TF, defun
from .._core.naming import named
from .._core.random_state import Stream
from .graph import get_default_graph
from .node import NODE_TYPES, as_node
from .variables import _dtype

__all__ = ["random_normal", "random_uniform", "truncated_normal", "set_random_seed",
           "get_seed", "dropout", "DEFAULT_GRAPH_SEED"]

#: the graph-level seed TensorFlow 1 uses when only an op-level seed is given
DEFAULT_GRAPH_SEED = 87654321


def set_random_seed(seed) -> None:
    """Set the default graph's random seed: random ops built after it draw reproducible
    sequences (TensorFlow 1's ``tf.set_random_seed``).

        >>> fg.set_random_seed(0); a = fg.random_uniform([2])
    """
    get_default_graph().seed = None if seed is None else int(seed)


def get_seed(op_seed, graph=None):
    """The ``(graph seed, op seed)`` pair TensorFlow 1 gives a new random op, or ``None`` when
    neither seed is set."""
    graph = graph or get_default_graph()
    if graph.seed is not None:
        return (graph.seed, len(graph.nodes) if op_seed is None else int(op_seed))
    if op_seed is not None:
        return (DEFAULT_GRAPH_SEED, int(op_seed))
    return None


def _shape_input(shape, graph, what):
    """The shape as a graph vector, and the static shape when it is known."""
    if type(shape) in NODE_TYPES:
        vec = shape
        static = None
    else:
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        try:
            dims = list(shape)
        except TypeError:
            raise TypeError(f"{what}: shape must be a sequence of integers or a graph vector, "
                            f"got {type(shape).__name__}") from None
        if any(type(d) in NODE_TYPES for d in dims):
            vec = F.stack([F.astype(d, np.int64) if type(d) in NODE_TYPES else d
                           for d in dims])
            static = None
        else:
            static = tuple(int(d) for d in dims)
            if any(d < 0 for d in static) or any(not float(d).is_integer() for d in dims):
                raise ValueError(f"{what}: shape must hold non-negative integers, got "
                                 f"{tuple(dims)}")
            vec = np.array(static, dtype=np.int64)
    vec = as_node(vec, graph)
    if vec.dtype.kind not in "iu":
        raise TypeError(f"{what}: the shape must hold integers, got dtype {vec.dtype}")
    return vec, static


def _stream(seed, graph):
    seeds = get_seed(seed, graph)
    if seeds is None:
        seeds = (int(np.random.SeedSequence().entropy),)   # not reproducible, as in TF1
    return Stream(seeds)


def _draw(op, shape, dtype, seed, what, **attrs):
    graph = get_default_graph()
    vec, static = _shape_input(shape, graph, what)
    return F.apply(op, (vec,), {"dtype": dtype, "stream": _stream(seed, graph),
                                "static_shape": static, **attrs})


def _float_dtype(dtype, what):
    dt = _dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"{what}: dtype must be a float type, got {dt}")
    return dt


def random_normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    """Normal values of ``shape`` (``mean + stddev * z``, both numbers or graph values), drawn
    anew on every run (TensorFlow 1's ``tf.random_normal``; float32 by default).

        >>> noise = fg.random_normal(fg.compat.v1.shape(x), stddev=0.1)
    """
    dt = _float_dtype(dtype, "random_normal")
    with get_default_graph().name_scope(name or "random_normal"):
        z = _draw(F.random_standard_normal.op, shape, dt, seed, "random_normal")
        out = _scale_shift(z, stddev, mean, dt)
    return named(out, name or "random_normal")


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    """Normal values of ``shape`` redrawn until within two standard deviations of ``mean``,
    drawn anew on every run (TensorFlow 1's ``tf.truncated_normal``).

        >>> w = fg.Variable(fg.truncated_normal([784, 10], stddev=0.1))
    """
    dt = _float_dtype(dtype, "truncated_normal")
    with get_default_graph().name_scope(name or "truncated_normal"):
        z = _draw(F.random_truncated_normal.op, shape, dt, seed, "truncated_normal")
        out = _scale_shift(z, stddev, mean, dt)
    return named(out, name or "truncated_normal")


def random_uniform(shape, minval=0, maxval=None, dtype=np.float32, seed=None, name=None):
    """Uniform values in ``[minval, maxval)`` (``maxval`` defaults to 1 for floats and must be
    given for integers), drawn anew on every run (TensorFlow 1's ``tf.random_uniform``).

        >>> u = fg.random_uniform([2, 3], -1.0, 1.0)
    """
    dt = _dtype(dtype)
    with get_default_graph().name_scope(name or "random_uniform"):
        if dt.kind in "iu":
            if maxval is None:
                raise ValueError(f"random_uniform: maxval must be specified for integer dtype "
                                 f"{dt}")
            if any(type(v) in NODE_TYPES for v in (minval, maxval)):
                raise TypeError("random_uniform: integer bounds must be numbers")
            lo, hi = int(minval), int(maxval)
            if lo >= hi:
                raise ValueError(f"random_uniform: need minval < maxval, got {lo} and {hi}")
            out = _draw(F.random_integers.op, shape, dt, seed, "random_uniform",
                        minval=lo, maxval=hi)
        elif dt.kind == "f":
            u = _draw(F.random_unit_uniform.op, shape, dt, seed, "random_uniform")
            hi = 1.0 if maxval is None else maxval
            width = hi - minval if not any(type(v) in NODE_TYPES for v in (hi, minval)) \
                else F.subtract(hi, minval)
            out = _scale_shift(u, width, minval, dt)
        else:
            raise TypeError(f"random_uniform: dtype must be a float or integer type, got {dt}")
    return named(out, name or "random_uniform")


def _scale_shift(z, scale, shift, dt):
    """``shift + scale * z``, leaving out a scale of 1 and a shift of 0 (numbers are cast to
    the draw's dtype, as TensorFlow converts them)."""
    if type(scale) in NODE_TYPES or not _is_number(scale, 1):
        z = z * (F.astype(scale, dt) if type(scale) in NODE_TYPES else dt.type(scale))
    if type(shift) in NODE_TYPES or not _is_number(shift, 0):
        z = z + (F.astype(shift, dt) if type(shift) in NODE_TYPES else dt.type(shift))
    return z


def _is_number(v, value) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and v == value


for _f in (random_normal, truncated_normal, random_uniform):
    defun(_f, exports=("fastgraph", TF))


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zero each element with probability ``rate`` (or ``1 - keep_prob``) and scale the others
    by ``1 / (1 - rate)``, drawing a new mask on every run (TensorFlow 1's ``tf.nn.dropout``);
    ``noise_shape`` draws one mask broadcast over it.  On an eager Tensor the mask is drawn
    once, now.

        >>> h = fg.nn.dropout(h, keep_prob=0.5)
    """
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout: give exactly one of keep_prob and rate")
    if rate is None:
        if type(keep_prob) in NODE_TYPES:
            rate = 1 - keep_prob
        else:
            if not 0 < keep_prob <= 1:
                raise ValueError(f"dropout: keep_prob must be in (0, 1], got {keep_prob}")
            rate = 1.0 - keep_prob
    elif type(rate) not in NODE_TYPES and not 0 <= rate < 1:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    if type(x) not in NODE_TYPES:
        return _eager_dropout(x, rate, noise_shape, seed)
    if x.dtype.kind != "f":
        raise TypeError(f"dropout: x must be floating, got dtype {x.dtype}")
    dt = x.dtype
    with x.graph.as_default(), x.graph.name_scope(name or "dropout"):
        shape = noise_shape if noise_shape is not None else (
            tuple(x.shape) if x.shape is not None and None not in x.shape
            else F.tf_shape(x, np.int64))
        u = _draw(F.random_unit_uniform.op, shape, dt, seed, "dropout")
        rate_v = F.astype(rate, dt) if type(rate) in NODE_TYPES else dt.type(rate)
        keep = F.astype(F.greater_equal(u, rate_v), dt)
        out = x * (1 / (1 - rate_v)) * keep
    return named(out, name or "dropout")


def _eager_dropout(x, rate, noise_shape, seed):
    rng = np.random.default_rng(seed)
    shape = noise_shape if noise_shape is not None else np.shape(x)
    dt = np.result_type(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)
    keep = (rng.random(tuple(shape)) >= rate).astype(dt)
    return x * dt.type(1 / (1 - rate)) * keep


defun(dropout, exports=(NN,))
