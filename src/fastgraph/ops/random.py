"""Random draws in graphs: stateful ops that draw anew on every run (TensorFlow 1's
``RandomStandardNormal``, ``RandomUniform``, ``TruncatedNormal``, ``RandomUniformInt``).

Each takes the output's shape as its one input (a vector: a constant, or computed at run time,
``tf.shape(x)``) and a :class:`~fastgraph._core.random_state.Stream` attribute, its own
sequence.  They are ``stateful``: never folded at compile time, merged or hash-consed.  The
public functions (``fg.random_normal`` ...) are TensorFlow's and build graph nodes; they live
with the graph (``fastgraph.static.random``).  Outside a plan's run (the engine probing the
result's dtype) a draw is zeros of its shape, so probing consumes nothing.
"""
from __future__ import annotations

import numpy as np

from .._core import defop
from .._core.random_state import in_run

_DRAWABLE = (np.dtype(np.float32), np.dtype(np.float64))


def _shape_tuple(shape) -> tuple:
    dims = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if any(d < 0 for d in dims):
        raise ValueError(f"random draw: negative dimension in shape {dims}")
    return dims


def _float_draw(sample):
    """A draw of a float dtype: NumPy draws float32 and float64; others are drawn in float64
    and cast (TensorFlow's float16 draws are float32 ones cast)."""
    def forward(shape, dtype, stream, static_shape=None):
        dims = _shape_tuple(shape)
        dt = np.dtype(dtype)
        if not in_run():
            return np.zeros(dims, dt)
        work = dt if dt in _DRAWABLE else np.dtype(np.float32)
        out = sample(stream.generator(), dims, work)
        return out if work == dt else out.astype(dt)
    return forward


def _truncated(gen, dims, dt):
    """Standard normal values redrawn until all lie within two standard deviations."""
    out = gen.standard_normal(dims, dtype=dt)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = gen.standard_normal(int(bad.sum()), dtype=dt)
        bad = np.abs(out) > 2
    return out


def _integers(shape, dtype, stream, minval, maxval, static_shape=None):
    dims = _shape_tuple(shape)
    if not in_run():
        return np.zeros(dims, dtype)
    return stream.generator().integers(minval, maxval, dims, dtype=np.dtype(dtype))


def _draw_shape(shapes, static_shape=None, **_):
    """The static shape given when it is known, else one unknown length per entry of the
    shape vector."""
    if static_shape is not None:
        return static_shape
    (vec,) = shapes
    if len(vec) != 1:
        raise ValueError(f"random draw: the shape must be a vector, got one of shape {vec}")
    return None if vec[0] is None else (None,) * vec[0]


_FIELDS = dict(shape=_draw_shape, differentiable=False, stateful=True)

random_standard_normal = defop(
    "random_standard_normal", _float_draw(lambda g, d, t: g.standard_normal(d, dtype=t)), None,
    doc="Standard normal values of the given shape, drawn anew on every run.", **_FIELDS)
random_unit_uniform = defop(
    "random_unit_uniform", _float_draw(lambda g, d, t: g.random(d, dtype=t)), None,
    doc="Uniform values in [0, 1) of the given shape, drawn anew on every run.", **_FIELDS)
random_truncated_normal = defop(
    "random_truncated_normal", _float_draw(_truncated), None,
    doc="Standard normal values within (-2, 2), drawn anew on every run.", **_FIELDS)
random_integers = defop(
    "random_integers", _integers, None,
    doc="Integers uniform in [minval, maxval), drawn anew on every run.", **_FIELDS)
