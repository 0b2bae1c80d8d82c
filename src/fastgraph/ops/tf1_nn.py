"""TensorFlow 1's faces of the convolution, pooling and normalisation ops (``tf.nn.conv2d``,
``max_pool``, ``avg_pool``, ``batch_normalization``): NHWC by default, filters ``(kh, kw, in,
out)``, ``strides``/``ksize`` of 4 (or 2, or 1) entries, and TensorFlow's ``'SAME'`` (padding
split with the odd one at the end) and ``'VALID'``.  Each is the PyTorch-semantics op of
``convolution.py``/``pooling.py`` between two transposes (NHWC <-> NCHW), so one kernel and one
gradient serve both faces."""
from __future__ import annotations

import numpy as np

from .._core import NN, defun
from .._core.naming import named

from .. import ops as F
from . import convolution, nn_functional, pooling

_TO_NCHW, _TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def _shape_of(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _spatial(v, what: str, data_format: str, default=1) -> tuple:
    """TensorFlow's ``strides``/``ksize``/``dilations``: an int, 2 spatial entries, or 4 in the
    layout's order with 1 for the batch and channel axes."""
    if v is None:
        return (default, default)
    if isinstance(v, (int, np.integer)):
        return (int(v), int(v))
    v = [int(a) for a in v]
    if len(v) == 1:
        return (v[0], v[0])
    if len(v) == 2:
        return tuple(v)
    if len(v) == 4:
        batch_ch = (v[0], v[3]) if data_format == "NHWC" else (v[0], v[1])
        if batch_ch != (1, 1):
            raise ValueError(f"{what}: the batch and channel entries must be 1, got {v}")
        return (v[1], v[2]) if data_format == "NHWC" else (v[2], v[3])
    raise ValueError(f"{what}: expected 1, 2 or 4 entries, got {v}")


def _same_pads(size, k, s, d) -> tuple:
    """TensorFlow's 'SAME': out = ceil(size / s), the padding split with the extra one after."""
    if size is None:
        raise ValueError("'SAME' padding needs the spatial sizes known")
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def _pads(what, padding, hw, kernel, strides, dilations):
    """``(pad_top, pad_bottom, pad_left, pad_right)`` for ``padding``."""
    if isinstance(padding, str):
        p = padding.upper()
        if p == "VALID":
            return (0, 0, 0, 0)
        if p == "SAME":
            (t, b), (le, r) = (_same_pads(hw[i], kernel[i], strides[i], dilations[i])
                               for i in range(2))
            return (t, b, le, r)
        raise ValueError(f"{what}: padding must be 'SAME', 'VALID' or explicit pairs, got "
                         f"{padding!r}")
    pairs = [tuple(int(a) for a in p) for p in padding]
    if len(pairs) == 4:      # [[0, 0], [top, bottom], [left, right], [0, 0]] (NHWC)
        pairs = pairs[1:3]
    if len(pairs) != 2 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"{what}: explicit padding must be 2 or 4 pairs, got {padding!r}")
    return pairs[0] + pairs[1]


def _nchw(x, data_format: str, what: str):
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{what}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    if len(_shape_of(x)) != 4:
        raise ValueError(f"{what}: expected a 4-D input, got shape {_shape_of(x)}")
    return F.transpose(x, _TO_NCHW) if data_format == "NHWC" else x


def _back(y, data_format: str):
    return F.transpose(y, _TO_NHWC) if data_format == "NHWC" else y


def _padded(x, pads, value=0.0):
    """``x`` (NCHW) padded by ``(top, bottom, left, right)``, or PyTorch's symmetric padding
    ``(ph, pw)`` when the pads allow it (then the op pads, without a copy)."""
    t, b, le, r = pads
    if t == b and le == r:
        return x, (t, le)
    return nn_functional.pad(x, (le, r, t, b), value=value), (0, 0)


def tf_conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
              data_format="NHWC", dilations=None, name=None, filters=None):
    """2-d convolution, TensorFlow 1's ``tf.nn.conv2d``: ``input`` NHWC (or NCHW), ``filter``
    ``(kh, kw, in, out)``, ``strides`` and ``dilations`` of 4 (or 2) entries, ``padding``
    ``'SAME'``, ``'VALID'`` or explicit pairs.

        >>> fg.nn.conv2d(np.ones((1, 5, 5, 2)), np.ones((3, 3, 2, 4)), 1, "SAME").shape
        (1, 5, 5, 4)
    """
    w = filters if filter is None else filter
    if w is None or padding is None:
        raise TypeError("conv2d: filter and padding are required")
    ws = _shape_of(w)
    if len(ws) != 4:
        raise ValueError(f"conv2d: the filter must be 4-D (kh, kw, in, out), got shape {ws}")
    s = _spatial(strides, "conv2d strides", data_format)
    d = _spatial(dilations, "conv2d dilations", data_format)
    x = _nchw(input, data_format, "conv2d")
    xs = _shape_of(x)
    if xs[1] is not None and ws[2] is not None and xs[1] % ws[2]:
        raise ValueError(f"conv2d: the input's {xs[1]} channels are not a multiple of the "
                         f"filter's {ws[2]} input channels (filter {ws})")
    groups = 1 if xs[1] is None or ws[2] is None else xs[1] // ws[2]
    x, p = _padded(x, _pads("conv2d", padding, xs[2:], ws[:2], s, d))
    y = convolution.conv2d(x, F.transpose(w, (3, 2, 0, 1)), None, s, p, d, groups)
    return named(_back(y, data_format), name)


def _pool(what, value, ksize, strides, padding, data_format, is_max):
    k = _spatial(ksize, f"{what} ksize", data_format)
    s = _spatial(strides, f"{what} strides", data_format)
    x = _nchw(value, data_format, what)
    xs = _shape_of(x)
    pads = _pads(what, padding, xs[2:], k, s, (1, 1))
    t, b, le, r = pads
    if is_max:
        if any(pads):   # padded values never win: TensorFlow ignores the padding
            x = nn_functional.pad(x, (le, r, t, b), value=-np.inf)
        return _back(pooling.max_pool2d(x, k, s), data_format)
    if not any(pads):
        return _back(pooling.avg_pool2d(x, k, s), data_format)
    # TensorFlow averages over the window's elements inside the input only
    sums = pooling.avg_pool2d(nn_functional.pad(x, (le, r, t, b)), k, s)
    dt = np.result_type(getattr(x, "dtype", np.float64), np.float32)
    ones = np.pad(np.ones((1, 1) + tuple(xs[2:]), dt), ((0, 0), (0, 0), (t, b), (le, r)))
    counts = np.asarray(pooling.avg_pool2d(ones, k, s))
    return _back(sums / counts, data_format)


def tf_max_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC",
                name=None, input=None):  # noqa: A002
    """Max pooling, TensorFlow 1's ``tf.nn.max_pool``: ``ksize`` and ``strides`` of 4 (or 2)
    entries, ``'SAME'`` (padding that never wins) or ``'VALID'``, NHWC by default.

        >>> fg.nn.max_pool(np.ones((1, 4, 4, 1)), [1, 2, 2, 1], [1, 2, 2, 1], "VALID").shape
        (1, 2, 2, 1)
    """
    value = input if value is None else value
    return named(_pool("max_pool", value, ksize, strides, padding, data_format, True), name)


def tf_avg_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC",
                name=None, input=None):  # noqa: A002
    """Average pooling, TensorFlow 1's ``tf.nn.avg_pool``; with ``'SAME'`` each window averages
    the elements inside the input only."""
    value = input if value is None else value
    return named(_pool("avg_pool", value, ksize, strides, padding, data_format, False), name)


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``(x - mean) / sqrt(variance + variance_epsilon) * scale + offset`` (TensorFlow 1's
    ``tf.nn.batch_normalization``, computed as it does: ``inv = rsqrt(variance + eps) *
    scale``, ``x * inv + (offset - mean * inv)``); ``offset``/``scale`` may be None.

        >>> fg.nn.batch_normalization(np.ones(3), 1.0, 4.0, None, None, 0.0).tolist()
        [0.0, 0.0, 0.0]
    """
    inv = F.reciprocal(F.sqrt(variance + variance_epsilon))
    if scale is not None:
        inv = inv * scale
    shift = -mean * inv if offset is None else offset - mean * inv
    return named(x * inv + shift, name)


for _fn, _nn_name in ((tf_conv2d, "conv2d"), (tf_max_pool, "max_pool"),
                      (tf_avg_pool, "avg_pool"), (batch_normalization, "batch_normalization")):
    defun(_fn, name=f"nn.{_nn_name}", exports=((NN, _nn_name),))
