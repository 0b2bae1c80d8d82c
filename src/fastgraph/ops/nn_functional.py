"""Deep-learning functions with PyTorch's names and semantics (``torch.nn.functional``), exported
to ``fastgraph.nn_ops``: the linear layers, activations, dropout, normalisation, embeddings,
one-hot encoding and padding.

Most are compositions of fastgraph's ops (``defun``), so they are differentiable to any order in
eager, static and ``fg.function`` code, and their elementwise parts fuse in static plans.  The
ops of their own: ``hardtanh`` (PyTorch's gradient, zero at the bounds), ``dropout_mask`` (a
random draw from fastgraph's seedable generator: stateful, never folded or merged),
``embedding`` with ``embedding_grad`` (rows gathered and scattered back, the padding row left
out of the gradient), ``one_hot``, and ``pad_constant`` (its VJP is itself with the pads
negated: padding and cropping are each other's adjoints).
"""
from __future__ import annotations

import math

import numpy as np

from .._core import apply, defop, defun, holds_graph_value, is_tensor, random_state
from .._core import shapes as _shapes

from .. import ops as F


def _nn(f, name=None, alias=None):
    """Export ``f`` to ``fastgraph.nn_ops`` (under ``alias`` when its registry name differs)."""
    public = alias or f.__name__
    # (registered as ``nn_ops.<name>``: PyTorch's names may be other namespaces' too --
    # ``dropout``, ``one_hot`` and ``pad`` mean other things in ``fg.nn`` and ``fastgraph``)
    return defun(f, name=name or f"nn_ops.{public}", exports=(("nn_ops", public),))


def _shape_of(v) -> tuple:
    return tuple(v.shape) if hasattr(v, "shape") else np.shape(v)


def _ndim(v) -> int:
    return len(_shape_of(v))


def _number(v, name, what):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                              np.floating)):
        raise TypeError(f"{name}: {what} must be a number, got {v!r}")
    return float(v)


# ---- linear layers -------------------------------------------------------------------------------
def linear(input, weight, bias=None):  # noqa: A002
    """``input @ weight.T + bias``, PyTorch's ``torch.nn.functional.linear``: weight
    ``(out, in)``, input ``(*, in)``.

        >>> linear(fg.ones((2, 3)), fg.ones((4, 3)), fg.zeros(4)).shape  # doctest: +SKIP
        (2, 4)
    """
    ws = _shape_of(weight)
    if len(ws) not in (1, 2):
        raise ValueError(f"linear: the weight must be 1-D or 2-D (out, in), got shape {ws}")
    xs = _shape_of(input)
    if xs and ws[-1] is not None and xs[-1] is not None and xs[-1] != ws[-1]:
        raise ValueError(f"linear: the input's last dimension {xs[-1]} does not match the "
                         f"weight {ws} (out, in)")
    y = F.matmul_nt(input, weight) if len(ws) == 2 else F.matmul(input, weight)
    return y if bias is None else y + bias


def bilinear(input1, input2, weight, bias=None):
    """``y[..., k] = input1 @ weight[k] @ input2 + bias[k]``, PyTorch's
    ``torch.nn.functional.bilinear``: weight ``(out, in1, in2)``.

        >>> bilinear(fg.ones((2, 3)), fg.ones((2, 4)), fg.ones((5, 3, 4))).shape
        ... # doctest: +SKIP
        (2, 5)
    """
    ws = _shape_of(weight)
    if len(ws) != 3:
        raise ValueError(f"bilinear: the weight must be (out, in1, in2), got shape {ws}")
    lead = _shape_of(input1)[:-1]
    if any(d is None for d in lead[1:]):
        raise ValueError(f"bilinear: the input's inner dimensions must be known, got "
                         f"{_shape_of(input1)}")
    a = F.reshape(input1, (-1, ws[1]))
    b = F.reshape(input2, (-1, ws[2]))
    y = F.reshape(F.einsum("bi,kij,bj->bk", a, weight, b), (-1,) + tuple(lead[1:]) + (ws[0],)
                  if lead else (ws[0],))
    return y if bias is None else y + bias


for _f in (linear, bilinear):
    _nn(_f)


# ---- activations ---------------------------------------------------------------------------------
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def gelu(input, approximate="none"):  # noqa: A002
    """GELU, ``x * Phi(x)`` (``approximate='tanh'``: PyTorch's tanh approximation).

        >>> gelu(fg.tensor([0.0, 1.0]))  # doctest: +SKIP
    """
    x = input
    if approximate == "none":
        return 0.5 * x * (1.0 + F.erf(x * _SQRT_HALF))
    if approximate == "tanh":
        return 0.5 * x * (1.0 + F.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(input, inplace=False):  # noqa: A002
    """SiLU (swish), ``x * sigmoid(x)``.

        >>> silu(fg.tensor([1.0]))  # doctest: +SKIP
    """
    return input * F.sigmoid(input)


def mish(input, inplace=False):  # noqa: A002
    """Mish, ``x * tanh(softplus(x))``.

        >>> mish(fg.tensor([1.0]))  # doctest: +SKIP
    """
    return input * F.tanh(F.softplus(input))


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """``x`` where positive, else ``negative_slope * x`` (the slope's gradient at 0, as
    PyTorch).

        >>> leaky_relu(fg.tensor([-1.0, 2.0]), 0.1)  # doctest: +SKIP
    """
    s = _number(negative_slope, "leaky_relu", "negative_slope")
    return F.where(F.greater(input, 0), input, input * s)


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    """ELU: ``x`` where positive, else ``alpha * (exp(x) - 1)``.

        >>> elu(fg.tensor([-1.0, 2.0]))  # doctest: +SKIP
    """
    a = _number(alpha, "elu", "alpha")
    # (expm1 of min(x, 0): the unused branch stays finite, so its zero gradient is not nan)
    return F.where(F.greater(input, 0), input, a * F.expm1(F.minimum(input, 0)))


def celu(input, alpha=1.0, inplace=False):  # noqa: A002
    """CELU: ``x`` where positive, else ``alpha * (exp(x / alpha) - 1)``.

        >>> celu(fg.tensor([-1.0, 2.0]), 2.0)  # doctest: +SKIP
    """
    a = _number(alpha, "celu", "alpha")
    if a == 0:
        raise ValueError("celu: alpha must not be 0")
    return F.where(F.greater(input, 0), input, a * F.expm1(F.minimum(input, 0) / a))


def selu(input, inplace=False):  # noqa: A002
    """SELU: ``scale * elu(x, alpha)`` with PyTorch's constants.

        >>> selu(fg.tensor([-1.0, 2.0]))  # doctest: +SKIP
    """
    return _SELU_SCALE * elu(input, _SELU_ALPHA)


def _hardtanh_forward(x, min_val, max_val):
    return np.clip(x, min_val, max_val)


def _hardtanh_vjp(g, ans, x, min_val, max_val):
    # PyTorch's: the gradient passes strictly inside the bounds only
    return g * F.logical_and(F.greater(x, min_val), F.less(x, max_val))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    """``clip(x, min_val, max_val)``; the gradient passes strictly between the bounds
    (PyTorch's).

        >>> hardtanh(fg.tensor([-2.0, 0.5, 2.0]))  # doctest: +SKIP
    """
    lo = _number(min_val, "hardtanh", "min_val")
    hi = _number(max_val, "hardtanh", "max_val")
    if lo > hi:
        raise ValueError(f"hardtanh: min_val {lo} must not exceed max_val {hi}")
    return apply(hardtanh.op, (input,), {"min_val": lo, "max_val": hi})


hardtanh = defop("hardtanh", _hardtanh_forward, _hardtanh_vjp, function=hardtanh,
                 shape=_shapes.same_as_first, exports=("nn_ops",))


def relu6(input, inplace=False):  # noqa: A002
    """``min(max(x, 0), 6)`` (``hardtanh(x, 0, 6)``).

        >>> relu6(fg.tensor([-1.0, 7.0]))  # doctest: +SKIP
    """
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input, inplace=False):  # noqa: A002
    """``relu6(x + 3) / 6``.

        >>> hardsigmoid(fg.tensor([0.0]))  # doctest: +SKIP
    """
    return hardtanh(input + 3.0, 0.0, 6.0) / 6.0


def hardswish(input, inplace=False):  # noqa: A002
    """``x * relu6(x + 3) / 6``.

        >>> hardswish(fg.tensor([1.0]))  # doctest: +SKIP
    """
    return input * hardsigmoid(input)


def logsigmoid(input):  # noqa: A002
    """``log(sigmoid(x))``, stable for large ``|x|`` (``-softplus(-x)``).

        >>> logsigmoid(fg.tensor([-100.0, 0.0]))  # doctest: +SKIP
    """
    return -F.softplus(-input)


def softsign(input):  # noqa: A002
    """``x / (1 + |x|)``.

        >>> softsign(fg.tensor([1.0]))  # doctest: +SKIP
    """
    return input / (1.0 + F.abs(input))


def nn_softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    """PyTorch's softplus: ``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta *
    x > threshold`` (``fastgraph.softplus`` is NumPy-style, without the two parameters).

        >>> nn_ops.softplus(fg.tensor([0.0, 30.0]))  # doctest: +SKIP
    """
    b = _number(beta, "softplus", "beta")
    t = _number(threshold, "softplus", "threshold")
    if b == 0:
        raise ValueError("softplus: beta must not be 0")
    bx = input * b if b != 1.0 else input
    soft = F.softplus(bx) / b if b != 1.0 else F.softplus(bx)
    return F.where(F.greater(bx, t), input, soft)


def tanhshrink(input):  # noqa: A002
    """``x - tanh(x)``.

        >>> tanhshrink(fg.tensor([1.0]))  # doctest: +SKIP
    """
    return input - F.tanh(input)


def softshrink(input, lambd=0.5):  # noqa: A002
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

        >>> softshrink(fg.tensor([-1.0, 0.2, 1.0]))  # doctest: +SKIP
    """
    lam = _number(lambd, "softshrink", "lambd")
    return F.where(F.greater(input, lam), input - lam,
                   F.where(F.less(input, -lam), input + lam, 0.0))


def hardshrink(input, lambd=0.5):  # noqa: A002
    """``x`` where ``|x| > lambd``, else 0.

        >>> hardshrink(fg.tensor([-1.0, 0.2, 1.0]))  # doctest: +SKIP
    """
    lam = _number(lambd, "hardshrink", "lambd")
    return F.where(F.greater(F.abs(input), lam), input, 0.0)


def prelu(input, weight):  # noqa: A002
    """``x`` where positive, else ``weight * x``, with one weight (or one per channel, axis 1).

        >>> prelu(fg.tensor([[-1.0, 2.0]]), fg.tensor([0.25]))  # doctest: +SKIP
    """
    ws = _shape_of(weight)
    nd = _ndim(input)
    if len(ws) != 1:
        raise ValueError(f"prelu: the weight must be 1-D, got shape {ws}")
    w = weight
    if ws[0] != 1 and nd >= 2:
        w = F.reshape(weight, (-1,) + (1,) * (nd - 2))
    return F.where(F.greater(input, 0), input, w * input)


def glu(input, dim=-1):  # noqa: A002
    """Gated linear unit: ``a * sigmoid(b)`` for the halves ``a, b`` of ``dim``.

        >>> glu(fg.ones((2, 4))).shape  # doctest: +SKIP
        (2, 2)
    """
    n = _shape_of(input)[dim]
    if n is None or n % 2:
        raise ValueError(f"glu: dimension {dim} must have an even length, got {n}")
    a, b = F.split(input, 2, axis=dim)
    return a * F.sigmoid(b)


for _f in (gelu, silu, mish, leaky_relu, elu, celu, selu, relu6, hardsigmoid, hardswish,
           logsigmoid, softsign, tanhshrink, softshrink, hardshrink, prelu, glu):
    _nn(_f)
_nn(nn_softplus, alias="softplus")


# ---- dropout ---------------------------------------------------------------------------------------
def _dropout_mask_forward(x, p, channels):
    """A mask of 0 and ``1 / (1 - p)`` in ``x``'s dtype, each entry kept with probability
    ``1 - p`` (one per channel when ``channels``), from fastgraph's seedable generator."""
    x = np.asarray(x)
    dt = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    shape = x.shape[:2] + (1,) * (x.ndim - 2) if channels else x.shape
    keep = random_state.generator().random(shape) >= p
    return keep.astype(dt) * dt.type(1.0 / (1.0 - p))


def _dropout_mask_shape(shapes, p, channels):
    s = shapes[0]
    return tuple(s[:2]) + (1,) * (len(s) - 2) if channels else tuple(s)


def dropout_mask(x, p, channels=False):
    """A fresh random mask for ``x`` (see :func:`dropout`); stateful: every run draws anew."""
    return apply(dropout_mask.op, (x,), {"p": p, "channels": channels})


dropout_mask = defop("dropout_mask", _dropout_mask_forward, None, function=dropout_mask,
                     shape=_dropout_mask_shape, differentiable=False, stateful=True,
                     shape_only=(0,))


def _dropout(input, p, training, name, channels):
    p = _number(p, name, "p")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    return input * dropout_mask(input, p, channels)


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (when
    ``training``; the identity otherwise).  The mask comes from fastgraph's seedable
    generator (``fg.random.seed``); in a static plan or ``fg.function`` every run draws a new
    one.  The gradient is the mask times the output gradient.

        >>> fg.random.seed(0); dropout(fg.ones(6), 0.5)  # doctest: +SKIP
    """
    return _dropout(input, p, training, "dropout", False)


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Channel dropout of ``(N, C, L)``: whole channels zeroed (one draw per ``(n, c)``).

        >>> dropout1d(fg.ones((2, 3, 4)), 0.5).shape  # doctest: +SKIP
        (2, 3, 4)
    """
    return _dropout(input, p, training, "dropout1d", True)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Channel dropout of ``(N, C, H, W)``: whole channels zeroed (one draw per ``(n, c)``).

        >>> dropout2d(fg.ones((2, 3, 4, 4)), 0.5).shape  # doctest: +SKIP
        (2, 3, 4, 4)
    """
    return _dropout(input, p, training, "dropout2d", True)


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Channel dropout of ``(N, C, D, H, W)``.

        >>> dropout3d(fg.ones((1, 2, 2, 2, 2)), 0.5).shape  # doctest: +SKIP
        (1, 2, 2, 2, 2)
    """
    return _dropout(input, p, training, "dropout3d", True)


for _f in (dropout, dropout1d, dropout2d, dropout3d):
    _nn(_f)


# ---- normalisation ----------------------------------------------------------------------------------
def _channel_shape(nd):
    return (-1,) + (1,) * (nd - 2)


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = y * (F.reshape(weight, shape) if shape is not None else weight)
    if bias is not None:
        y = y + (F.reshape(bias, shape) if shape is not None else bias)
    return y


def _check_channels(name, v, what, c):
    if v is None:
        return
    s = _shape_of(v)
    if len(s) != 1 or (c is not None and s[0] is not None and s[0] != c):
        raise ValueError(f"{name}: {what} must have shape ({c},), got {tuple(s)}")


def batch_norm_statistics(input, eps=1e-5):  # noqa: A002
    """``(normalised, mean, var)`` over the batch and spatial axes of ``(N, C, *spatial)``:
    the training-mode pieces of :func:`batch_norm` (``var`` biased), for code that keeps the
    running statistics itself (a module in a traced or static graph).

        >>> y, m, v = batch_norm_statistics(fg.randn(4, 3, 2, 2))  # doctest: +SKIP
    """
    nd = _ndim(input)
    if nd < 2:
        raise ValueError(f"batch_norm: expected at least a 2-D input (N, C, ...), got shape "
                         f"{_shape_of(input)}")
    axes = (0,) + tuple(range(2, nd))
    mean = F.mean(input, axis=axes, keepdims=True)
    centred = input - mean
    var = F.mean(centred * centred, axis=axes, keepdims=True)
    y = centred / F.sqrt(var + eps)
    return y, F.reshape(mean, (-1,)), F.reshape(var, (-1,))


def _eager_value(v):
    """The array of an eager value (a Tensor or an ndarray), or None for a graph value."""
    if is_tensor(v):
        return v._ndarray
    if isinstance(v, np.ndarray):
        return v
    return None


def _update_running(name, running, stat, momentum):
    """PyTorch's in-place ``running = (1 - momentum) * running + momentum * stat`` on an eager
    buffer (a Tensor or an ndarray), outside the gradient computation."""
    data, value = _eager_value(running), _eager_value(stat)
    if data is None or value is None:
        raise TypeError(f"{name}: running statistics are updated in place on eager values "
                        f"only (got {type(running).__name__}); in a graph, compute them with "
                        f"batch_norm_statistics and assign them")
    data *= data.dtype.type(1.0 - momentum)
    data += data.dtype.type(momentum) * value.astype(data.dtype, copy=False)


def _count(xs, axes):
    n = 1
    for a in axes:
        n *= xs[a]
    return n


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training=False, momentum=0.1, eps=1e-5):
    """Batch normalisation of ``(N, C, *spatial)``, PyTorch's
    ``torch.nn.functional.batch_norm``: in training, normalise with the batch's mean and
    (biased) variance per channel and update ``running_mean``/``running_var`` in place with
    ``momentum`` (the variance unbiased, as PyTorch keeps it); otherwise normalise with the
    running statistics.  ``weight``/``bias``: the per-channel affine transform.

        >>> rm, rv = np.zeros(3), np.ones(3)
        >>> batch_norm(fg.randn(4, 3, 2, 2), rm, rv, training=True).shape  # doctest: +SKIP
        (4, 3, 2, 2)
    """
    xs = _shape_of(input)
    nd = len(xs)
    if nd < 2:
        raise ValueError(f"batch_norm: expected at least a 2-D input (N, C, ...), got {xs}")
    c = xs[1]
    for v, what in ((running_mean, "running_mean"), (running_var, "running_var"),
                    (weight, "weight"), (bias, "bias")):
        _check_channels("batch_norm", v, what, c)
    shape = _channel_shape(nd)
    if training:
        axes = (0,) + tuple(range(2, nd))
        known = all(xs[a] is not None for a in axes)
        if known and _count(xs, axes) <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                             f"training, got input size {xs}")
        y, mean, var = batch_norm_statistics(input, eps)
        m = _number(momentum, "batch_norm", "momentum")
        if running_mean is not None:
            _update_running("batch_norm", running_mean, mean, m)
        if running_var is not None:
            n = _count(xs, axes) if known else 2
            _update_running("batch_norm", running_var, var * (n / (n - 1)), m)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed when not "
                             "training")
        y = (input - F.reshape(running_mean, shape)) / F.sqrt(F.reshape(running_var, shape) + eps)
    return _affine(y, weight, bias, shape)


def instance_norm(input, running_mean=None, running_var=None, weight=None,  # noqa: A002
                  bias=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalisation: each sample's channels normalised over their spatial axes
    (PyTorch's ``torch.nn.functional.instance_norm``; running statistics as in
    :func:`batch_norm`, averaged over the batch).

        >>> instance_norm(fg.randn(2, 3, 4, 4)).shape  # doctest: +SKIP
        (2, 3, 4, 4)
    """
    xs = _shape_of(input)
    nd = len(xs)
    if nd < 3:
        raise ValueError(f"instance_norm: expected a 3-D or larger input, got {xs}")
    shape = _channel_shape(nd)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: running statistics are needed when "
                             "use_input_stats=False")
        y = (input - F.reshape(running_mean, shape)) / F.sqrt(F.reshape(running_var, shape) + eps)
        return _affine(y, weight, bias, shape)
    axes = tuple(range(2, nd))
    mean = F.mean(input, axis=axes, keepdims=True)
    centred = input - mean
    var = F.mean(centred * centred, axis=axes, keepdims=True)
    y = centred / F.sqrt(var + eps)
    m = _number(momentum, "instance_norm", "momentum")
    if running_mean is not None:
        _update_running("instance_norm", running_mean,
                        F.mean(F.reshape(mean, xs[:2]), axis=0), m)
    if running_var is not None:
        count = int(np.prod(xs[2:]))
        _update_running("instance_norm", running_var,
                        F.mean(F.reshape(var, xs[:2]), axis=0) * (count / max(count - 1, 1)), m)
    return _affine(y, weight, bias, shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise over the trailing ``normalized_shape`` axes (biased variance), then the
    elementwise affine ``weight``/``bias`` of that shape: PyTorch's
    ``torch.nn.functional.layer_norm``.

        >>> layer_norm(fg.randn(2, 5), (5,)).shape  # doctest: +SKIP
        (2, 5)
    """
    ns = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else \
        tuple(normalized_shape)
    xs = _shape_of(input)
    if len(ns) > len(xs) or tuple(xs[len(xs) - len(ns):]) != tuple(ns):
        raise ValueError(f"layer_norm: normalized_shape {ns} is not the trailing shape of the "
                         f"input {xs}")
    for v, what in ((weight, "weight"), (bias, "bias")):
        if v is not None and tuple(_shape_of(v)) != tuple(ns):
            raise ValueError(f"layer_norm: {what} must have shape {ns}, got {_shape_of(v)}")
    axes = tuple(range(len(xs) - len(ns), len(xs)))
    mean = F.mean(input, axis=axes, keepdims=True)
    centred = input - mean
    var = F.mean(centred * centred, axis=axes, keepdims=True)
    return _affine(centred / F.sqrt(var + eps), weight, bias, None)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise each sample's channels in ``num_groups`` groups (over the group's channels
    and the spatial axes), then the per-channel affine: PyTorch's
    ``torch.nn.functional.group_norm``.

        >>> group_norm(fg.randn(2, 4, 3, 3), 2).shape  # doctest: +SKIP
        (2, 4, 3, 3)
    """
    xs = _shape_of(input)
    if len(xs) < 2 or xs[1] is None:
        raise ValueError(f"group_norm: expected an input (N, C, ...) with known C, got {xs}")
    if isinstance(num_groups, (bool, np.bool_)) or not isinstance(num_groups, (int, np.integer)) \
            or num_groups < 1 or xs[1] % num_groups:
        raise ValueError(f"group_norm: num_groups={num_groups!r} must divide the {xs[1]} "
                         f"channels")
    for v, what in ((weight, "weight"), (bias, "bias")):
        _check_channels("group_norm", v, what, xs[1])
    if any(d is None for d in xs[2:]):
        raise ValueError(f"group_norm: the spatial dimensions must be known, got {xs}")
    n = -1 if xs[0] is None else xs[0]
    g = F.reshape(input, (n, int(num_groups), -1))
    mean = F.mean(g, axis=2, keepdims=True)
    centred = g - mean
    var = F.mean(centred * centred, axis=2, keepdims=True)
    y = F.reshape(centred / F.sqrt(var + eps), (n,) + tuple(xs[1:]))
    return _affine(y, weight, bias, _channel_shape(len(xs)))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """Local response normalisation across channels (PyTorch's
    ``torch.nn.functional.local_response_norm``): ``x / (k + alpha / size * sum of x^2 over
    the neighbouring size channels) ** beta``.

        >>> local_response_norm(fg.randn(1, 5, 2, 2), 3).shape  # doctest: +SKIP
        (1, 5, 2, 2)
    """
    xs = _shape_of(input)
    if len(xs) < 3:
        raise ValueError(f"local_response_norm: expected a 3-D or larger input, got {xs}")
    sq = input * input
    pads = (0, 0) * (len(xs) - 2) + (size // 2, (size - 1) // 2)
    sq = pad(sq, pads)
    c = xs[1]
    windows = sum(F.getitem(sq, (slice(None), slice(j, j + c))) for j in range(size))
    return input / (k + alpha / size * windows) ** beta


def normalize(input, p=2.0, dim=1, eps=1e-12):  # noqa: A002
    """``x / max(||x||_p, eps)`` along ``dim``: PyTorch's ``torch.nn.functional.normalize``.

        >>> normalize(fg.tensor([[3.0, 4.0]]))  # doctest: +SKIP
    """
    norm = F.sum(F.abs(input) ** p, axis=dim, keepdims=True) ** (1.0 / p) if p != 2.0 else \
        F.sqrt(F.sum(input * input, axis=dim, keepdims=True))
    return input / F.maximum(norm, eps)


for _f in (batch_norm, batch_norm_statistics, instance_norm, layer_norm, group_norm,
           local_response_norm, normalize):
    _nn(_f)


# ---- embeddings and one-hot -------------------------------------------------------------------------
def _int_indices(idx, name):
    idx = np.asarray(idx)
    if not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"{name}: indices must be integers, got dtype {idx.dtype}")
    return idx


def _embedding_forward(weight, idx, padding_idx):
    weight, idx = np.asarray(weight), _int_indices(idx, "embedding")
    n = weight.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError(f"embedding: index out of range: indices must lie in [0, {n}), got "
                         f"{idx.min() if idx.min() < 0 else idx.max()}")
    return weight[idx]


def _embedding_grad_forward(g, weight, idx, padding_idx):
    g, idx = np.asarray(g), _int_indices(idx, "embedding")
    shape = np.shape(weight)
    out = np.zeros(shape, dtype=np.result_type(g))
    flat = idx.reshape(-1)
    rows = g.reshape((flat.size,) + tuple(shape[1:]))
    if padding_idx is not None:
        keep = flat != padding_idx
        flat, rows = flat[keep], rows[keep]
    np.add.at(out, flat, rows)
    return out


def _embedding_rows(G, idx, padding_idx):
    """``G[idx]`` with the padding rows zeroed: the VJP of :func:`embedding_grad` in ``g``."""
    rows = embedding(G, idx, None)
    if padding_idx is None:
        return rows
    keep = F.not_equal(idx, padding_idx)
    return rows * F.expand_dims(F.astype(keep, _dtype(G)), -1)


def _dtype(v):
    return v.dtype if hasattr(v, "dtype") else np.result_type(v)


def _embedding_shape(shapes, padding_idx):
    w, idx = shapes
    if len(w) != 2:
        raise ValueError(f"embedding: the weight must be 2-D (num_embeddings, dim), got {w}")
    return tuple(idx) + (w[1],)


def embedding(weight, idx, padding_idx):
    """``weight[idx]`` as an op (``idx`` an input, so it may be a graph value)."""
    return apply(embedding.op, (weight, idx), {"padding_idx": padding_idx})


def embedding_grad(g, weight, idx, padding_idx):
    """Zeros shaped like ``weight`` with the rows of ``g`` added at ``idx`` (the padding row
    left out): the VJP of :func:`embedding`."""
    return apply(embedding_grad.op, (g, weight, idx), {"padding_idx": padding_idx})


embedding = defop("embedding", _embedding_forward,
                  lambda g, ans, w, idx, padding_idx: embedding_grad(g, w, idx, padding_idx),
                  None, function=embedding, shape=_embedding_shape)
embedding_grad = defop("embedding_grad", _embedding_grad_forward,
                       lambda G, ans, g, w, idx, padding_idx: _embedding_rows(G, idx,
                                                                              padding_idx),
                       None, None, function=embedding_grad,
                       shape=lambda shapes, **_: tuple(shapes[1]), shape_only=(1,))


def nn_embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
                 scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` ``(num_embeddings, dim)`` at the integer ``input`` (any shape):
    PyTorch's ``torch.nn.functional.embedding``.  ``padding_idx``'s row gets no gradient.

        >>> nn_ops.embedding(np.array([[0, 2]]), fg.randn(3, 4)).shape  # doctest: +SKIP
        (1, 2, 4)
    """
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported")
    ws = _shape_of(weight)
    if len(ws) != 2:
        raise ValueError(f"embedding: the weight must be 2-D (num_embeddings, dim), got {ws}")
    if padding_idx is not None:
        padding_idx = _shapes.as_int(padding_idx, "embedding", "padding_idx")
        if ws[0] is not None:
            if not -ws[0] <= padding_idx < ws[0]:
                raise ValueError(f"embedding: padding_idx {padding_idx} must be within "
                                 f"num_embeddings {ws[0]}")
            padding_idx %= ws[0]
    dt = getattr(input, "dtype", None)
    if dt is None:
        input = np.asarray(input)       # noqa: A001
        dt = input.dtype
    if not np.issubdtype(dt, np.integer):
        raise TypeError(f"embedding: indices must be integers, got dtype {dt}")
    return embedding(weight, input, padding_idx)


_nn(nn_embedding, alias="embedding")


def _one_hot_forward(labels, num_classes):
    labels = _int_indices(labels, "one_hot")
    if labels.size and labels.min() < 0:
        raise ValueError("one_hot: class values must be non-negative")
    if labels.size and labels.max() >= num_classes:
        raise ValueError(f"one_hot: class values must be smaller than num_classes "
                         f"{num_classes}, got {labels.max()}")
    return (labels[..., None] == np.arange(num_classes)).astype(np.int64)


def _one_hot(labels, num_classes):
    return apply(_one_hot.op, (labels,), {"num_classes": num_classes})


_one_hot = defop("one_hot_classes", _one_hot_forward, None, function=_one_hot, differentiable=False,
                 shape=lambda shapes, num_classes: tuple(shapes[0]) + (num_classes,))


def one_hot(tensor, num_classes=-1):
    """``(..., num_classes)`` int64 one-hot encoding of integer class values (PyTorch's
    ``torch.nn.functional.one_hot``; ``num_classes=-1``: the largest value plus one, which a
    graph value must give explicitly).

        >>> one_hot(np.array([0, 2]), 3)  # doctest: +SKIP
        array([[1, 0, 0],
               [0, 0, 1]])
    """
    num_classes = _shapes.as_int(num_classes, "one_hot", "num_classes")
    if num_classes == -1:
        data = getattr(tensor, "_ndarray", tensor)
        if holds_graph_value((tensor,)) and not isinstance(data, np.ndarray):
            raise ValueError("one_hot: num_classes must be given for a graph value")
        data = _int_indices(data, "one_hot")
        num_classes = int(data.max()) + 1 if data.size else 0
    elif num_classes < 1:
        raise ValueError(f"one_hot: num_classes must be positive or -1, got {num_classes}")
    return _one_hot(tensor, num_classes)


_nn(one_hot, name="nn_one_hot", alias="one_hot")


# ---- padding ---------------------------------------------------------------------------------------
def _pad_constant_forward(x, pads, value):
    x = np.asarray(x)
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pads, x.shape))
    x = x[crop]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    if not any(lo or hi for lo, hi in widths):
        return np.array(x)
    return np.pad(x, widths, mode="constant", constant_values=value)


def _pad_constant_shape(shapes, pads, value):
    out = []
    for n, (lo, hi) in zip(shapes[0], pads):
        m = None if n is None else n + lo + hi
        if m is not None and m < 0:
            raise ValueError(f"pad: padding {pads} makes a negative size of input "
                             f"{tuple(shapes[0])}")
        out.append(m)
    return tuple(out)


def pad_constant(x, pads, value):
    """``x`` with ``pads[i] = (before, after)`` elements of ``value`` added on axis ``i`` (a
    negative width crops)."""
    return apply(pad_constant.op, (x,), {"pads": pads, "value": value})


pad_constant = defop("pad_constant", _pad_constant_forward,
                     lambda g, ans, x, pads, value: pad_constant(
                         g, tuple((-lo, -hi) for lo, hi in pads), 0.0),
                     function=pad_constant, shape=_pad_constant_shape)

_NUMPY_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(input, pad, mode="constant", value=None):  # noqa: A002
    """Pad the trailing axes, PyTorch's ``torch.nn.functional.pad``: ``pad`` is ``(last_before,
    last_after, second_last_before, ...)``; ``mode`` ``'constant'`` (``value``, default 0;
    negative widths crop), ``'reflect'``, ``'replicate'`` or ``'circular'``.

        >>> pad(fg.ones((1, 2, 3)), (1, 2), mode="reflect").shape  # doctest: +SKIP
        (1, 2, 6)
    """
    if not isinstance(pad, (list, tuple)) or len(pad) % 2:
        raise ValueError(f"pad: the padding must be a sequence of pairs of ints, got {pad!r}")
    widths = [_shapes.as_int(p, "pad", "padding") for p in pad]
    xs = _shape_of(input)
    k = len(widths) // 2
    if k > len(xs):
        raise ValueError(f"pad: {len(widths)} padding values for an input of {len(xs)} "
                         f"dimensions")
    pairs = [(0, 0)] * (len(xs) - k) + [(widths[2 * j], widths[2 * j + 1])
                                        for j in reversed(range(k))]
    if mode == "constant":
        v = 0.0 if value is None else _number(value, "pad", "value")
        return pad_constant(input, tuple(pairs), v)
    if mode not in _NUMPY_MODES:
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or "
                         f"'circular', got {mode!r}")
    if value not in (None, 0, 0.0):
        raise ValueError(f"pad: a value is only used by mode='constant', got {value!r}")
    y = input
    for axis, (lo, hi) in enumerate(pairs):
        if not (lo or hi):
            continue
        n = xs[axis]
        if n is None:
            raise ValueError(f"pad: mode {mode!r} needs the padded dimensions known, got {xs}")
        if lo < 0 or hi < 0:
            raise ValueError(f"pad: mode {mode!r} takes non-negative padding, got {pad!r}")
        if mode == "reflect" and (lo >= n or hi >= n):
            raise ValueError(f"pad: reflect padding {pad!r} must be smaller than the "
                             f"dimension {n} of input {xs}")
        if mode == "circular" and (lo > n or hi > n):
            raise ValueError(f"pad: circular padding {pad!r} must be at most the dimension "
                             f"{n} of input {xs}")
        idx = np.pad(np.arange(n), (lo, hi), mode=_NUMPY_MODES[mode])
        y = F.getitem(y, (slice(None),) * axis + (idx,))
    return y


_nn(pad, name="nn_pad", alias="pad")
