"""Losses with PyTorch's names and semantics (``torch.nn.functional``), exported to
``fastgraph.nn_ops``; each takes ``reduction='mean' | 'sum' | 'none'``.

Compositions of fastgraph's ops (differentiable to any order), except two ops of their own:
``class_indices`` (integer targets checked against the number of classes, the ignored ones
mapped to class 0, so that a gather reads in range) and ``binary_cross_entropy_elementwise``
(PyTorch's clamp of the logs at -100, with PyTorch's gradient, ``(x - t) / max(x (1 - x),
1e-12)``, finite where the clamp applies).  ``cross_entropy`` is ``log_softmax`` then
``nll_loss`` for eager values and graph values alike (so eager, static and ``fg.function`` give
the same bits).
"""
from __future__ import annotations

import numpy as np

from .._core import apply, defop, defun
from .._core import shapes as _shapes

from .. import ops as F

_REDUCTIONS = ("mean", "sum", "none")


def _nn(f, name=None, alias=None):
    public = alias or f.__name__
    # (registered as ``nn_ops.<name>``: PyTorch's names may be other namespaces' too --
    # ``dropout``, ``one_hot`` and ``pad`` mean other things in ``fg.nn`` and ``fastgraph``)
    return defun(f, name=name or f"nn_ops.{public}", exports=(("nn_ops", public),))


def _shape_of(v) -> tuple:
    return tuple(v.shape) if hasattr(v, "shape") else np.shape(v)


def _reduction(reduction, name, extra=()):
    if reduction not in _REDUCTIONS + tuple(extra):
        raise ValueError(f"{name}: {reduction!r} is not a valid value for reduction (one of "
                         f"{', '.join(_REDUCTIONS + tuple(extra))})")
    return reduction


def _no_legacy_reduction(name, size_average, reduce):
    # (PyTorch still maps them onto ``reduction`` with a warning; here they are refused)
    if size_average is not None or reduce is not None:
        raise TypeError(f"{name}: size_average and reduce are deprecated; use reduction")


def _check_same_shape(name, input, target):  # noqa: A002
    xs, ts = _shape_of(input), _shape_of(target)
    if tuple(xs) != tuple(ts):
        raise ValueError(f"{name}: the target's shape {tuple(ts)} must be the input's "
                         f"{tuple(xs)}")


def _reduce(loss, reduction):
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    return loss


def _number(v, name, what):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                              np.floating)):
        raise TypeError(f"{name}: {what} must be a number, got {v!r}")
    return float(v)


# ---- regression -------------------------------------------------------------------------------------
def mse_loss(input, target, reduction="mean"):  # noqa: A002
    """Squared error ``(input - target) ** 2``, reduced.

        >>> mse_loss(fg.tensor([1.0, 2.0]), fg.tensor([0.0, 0.0]))  # doctest: +SKIP
    """
    d = input - target
    return _reduce(d * d, _reduction(reduction, "mse_loss"))


def l1_loss(input, target, reduction="mean"):  # noqa: A002
    """Absolute error ``|input - target|``, reduced.

        >>> l1_loss(fg.tensor([1.0, -2.0]), fg.tensor([0.0, 0.0]))  # doctest: +SKIP
    """
    return _reduce(F.abs(input - target), _reduction(reduction, "l1_loss"))


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):  # noqa: A002
    """``0.5 d^2 / beta`` where ``d = |input - target| < beta``, else ``d - 0.5 beta``
    (``beta=0``: the L1 loss).

        >>> smooth_l1_loss(fg.tensor([0.5, 3.0]), fg.tensor([0.0, 0.0]))  # doctest: +SKIP
    """
    b = _number(beta, "smooth_l1_loss", "beta")
    if b < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {b}")
    d = F.abs(input - target)
    loss = d if b == 0 else F.where(F.less(d, b), 0.5 * d * d / b, d - 0.5 * b)
    return _reduce(loss, _reduction(reduction, "smooth_l1_loss"))


def huber_loss(input, target, reduction="mean", delta=1.0):  # noqa: A002
    """``0.5 d^2`` where ``d = |input - target| < delta``, else ``delta (d - 0.5 delta)``.

        >>> huber_loss(fg.tensor([0.5, 3.0]), fg.tensor([0.0, 0.0]))  # doctest: +SKIP
    """
    dl = _number(delta, "huber_loss", "delta")
    if dl <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {dl}")
    d = F.abs(input - target)
    loss = F.where(F.less(d, dl), 0.5 * d * d, dl * (d - 0.5 * dl))
    return _reduce(loss, _reduction(reduction, "huber_loss"))


for _f in (mse_loss, l1_loss, smooth_l1_loss, huber_loss):
    _nn(_f)


# ---- classification ---------------------------------------------------------------------------------
def _class_indices_forward(target, num_classes, ignore_index):
    t = np.asarray(target)
    if not np.issubdtype(t.dtype, np.integer):
        raise TypeError(f"nll_loss: targets must be integers, got dtype {t.dtype}")
    ignored = t == ignore_index
    bad = ~ignored & ((t < 0) | (t >= num_classes))
    if bad.any():
        raise IndexError(f"nll_loss: target {t[bad].flat[0]} is out of bounds for "
                         f"{num_classes} classes")
    return np.where(ignored, 0, t).astype(np.int64)


def _class_indices(target, num_classes, ignore_index):
    """Integer targets checked against ``num_classes``, the ``ignore_index`` ones made 0."""
    return apply(_class_indices.op, (target,), {"num_classes": num_classes,
                                                "ignore_index": ignore_index})


_class_indices = defop("class_indices", _class_indices_forward, None,
                       function=_class_indices, shape=_shapes.same_as_first,
                       differentiable=False)


def _classes_last(input, name):
    """``(input as (M, C), C, the target shape it expects)``: PyTorch's class axis is 1, for
    ``(N, C)`` and ``(N, C, d1, ...)`` inputs (and ``(C,)`` for one unbatched sample)."""
    xs = _shape_of(input)
    if len(xs) == 1:
        return F.reshape(input, (1, -1)), xs[0], ()
    if len(xs) < 2 or xs[1] is None:
        raise ValueError(f"{name}: expected an input (N, C, ...) with known C, got {xs}")
    c = xs[1]
    x = input if len(xs) == 2 else F.reshape(F.moveaxis(input, 1, -1), (-1, c))
    return x, c, (xs[0],) + tuple(xs[2:])


def _check_target_shape(name, ts, expect):
    if len(ts) != len(expect) or any(a is not None and b is not None and a != b
                                     for a, b in zip(ts, expect)):
        raise ValueError(f"{name}: expected a target of shape {tuple(expect)}, got "
                         f"{tuple(ts)}")


def _target_dtype(target):
    dt = getattr(target, "dtype", None)
    return np.asarray(target).dtype if dt is None else np.dtype(dt)


def _weights_of(weight, c, idx, x2, name):
    """The class weight of each target (``idx``, in range; ``x2`` the ``(M, C)`` values), or
    None without weights."""
    if weight is None:
        return None
    ws = _shape_of(weight)
    if len(ws) != 1 or (ws[0] is not None and ws[0] != c):
        raise ValueError(f"{name}: weight must have shape ({c},), got {tuple(ws)}")
    return F.pick(F.broadcast_like(weight, x2), idx)


def _nll(x2, c, target, weight, ignore_index, reduction, name, tshape):
    """The negative log-likelihood of log-probabilities ``x2`` ``(M, C)`` at the integer
    targets (flattened), PyTorch's weighting and ignoring, reduced."""
    t = F.reshape(target, (-1,))
    idx = _class_indices(t, c, ignore_index)
    keep = F.astype(F.not_equal(t, ignore_index), _dtype(x2))
    picked = F.pick(x2, idx)
    w = _weights_of(weight, c, idx, x2, name)
    wk = keep if w is None else w * keep
    loss = -picked * wk
    if reduction == "none":
        return F.reshape(loss, tshape) if tshape else F.reshape(loss, ())
    if reduction == "sum":
        return F.sum(loss)
    return F.sum(loss) / F.sum(wk)


def _dtype(v):
    return v.dtype if hasattr(v, "dtype") else np.result_type(v)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
             reduce=None, reduction="mean"):
    """Negative log-likelihood of log-probabilities ``(N, C)`` or ``(N, C, d1, ...)`` at the
    integer ``target`` ``(N)`` or ``(N, d1, ...)``: PyTorch's ``torch.nn.functional.nll_loss``
    with class ``weight``, ``ignore_index`` and ``reduction`` (``'mean'`` divides by the sum of
    the targets' weights).

        >>> nll_loss(fg.log_softmax(fg.randn(3, 4)), np.array([0, 3, 1]))  # doctest: +SKIP
    """
    _no_legacy_reduction("nll_loss", size_average, reduce)
    _reduction(reduction, "nll_loss")
    ignore_index = _shapes.as_int(ignore_index, "nll_loss", "ignore_index")
    if not np.issubdtype(_target_dtype(target), np.integer):
        raise TypeError(f"nll_loss: targets must be integers, got dtype "
                        f"{_target_dtype(target)}")
    x2, c, tshape = _classes_last(input, "nll_loss")
    _check_target_shape("nll_loss", _shape_of(target), tshape)
    return _nll(x2, c, target, weight, ignore_index, reduction, "nll_loss", tshape)


def nn_cross_entropy(input, target, weight=None, size_average=None,  # noqa: A002
                     ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits ``(N, C)`` or ``(N, C, d1, ...)``: PyTorch's
    ``torch.nn.functional.cross_entropy``.  ``target`` holds class indices (``(N)`` or
    ``(N, d1, ...)``, with ``weight``, ``ignore_index``, ``label_smoothing``) or class
    probabilities (the input's shape, floats; ``'mean'`` then divides by the number of
    samples).

        >>> nn_ops.cross_entropy(fg.randn(3, 4), np.array([0, 3, 1]))  # doctest: +SKIP
    """
    _no_legacy_reduction("cross_entropy", size_average, reduce)
    _reduction(reduction, "cross_entropy")
    eps = _number(label_smoothing, "cross_entropy", "label_smoothing")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got "
                         f"{eps}")
    ignore_index = _shapes.as_int(ignore_index, "cross_entropy", "ignore_index")
    tdt = _target_dtype(target)
    if tdt.kind == "f":
        return _cross_entropy_probabilities(input, target, weight, reduction, eps)
    if not np.issubdtype(tdt, np.integer):
        raise TypeError(f"cross_entropy: targets must be class indices (integers) or "
                        f"probabilities (floats), got dtype {tdt}")
    x2, c, tshape = _classes_last(input, "cross_entropy")
    _check_target_shape("cross_entropy", _shape_of(target), tshape)
    logp = F.log_softmax(x2, -1)
    nll = _nll(logp, c, target, weight, ignore_index, reduction, "cross_entropy", tshape)
    if eps == 0.0:
        return nll
    # PyTorch's smoothing: (1 - eps) * nll + eps / C * (the weighted sum of -log p over the
    # classes, ignored targets left out, divided like nll for 'mean')
    t = F.reshape(target, (-1,))
    keep = F.astype(F.not_equal(t, ignore_index), _dtype(logp))
    smooth = -F.sum(logp if weight is None else logp * weight, axis=-1) * keep
    if reduction == "none":
        smooth = F.reshape(smooth, tshape) if tshape else F.reshape(smooth, ())
    elif reduction == "sum":
        smooth = F.sum(smooth)
    else:
        idx = _class_indices(t, c, ignore_index)
        w = _weights_of(weight, c, idx, logp, "cross_entropy")
        smooth = F.sum(smooth) / F.sum(keep if w is None else w * keep)
    return (1.0 - eps) * nll + smooth * (eps / c)


def _cross_entropy_probabilities(input, target, weight, reduction, eps):
    xs, ts = _shape_of(input), _shape_of(target)
    if tuple(xs) != tuple(ts):
        raise ValueError(f"cross_entropy: probability targets must have the input's shape "
                         f"{tuple(xs)}, got {tuple(ts)}")
    x2, c, tshape = _classes_last(input, "cross_entropy")
    t2 = F.reshape(target, (1, -1)) if len(xs) == 1 else (
        target if len(xs) == 2 else F.reshape(F.moveaxis(target, 1, -1), (-1, c)))
    if eps:
        t2 = t2 * (1.0 - eps) + eps / c
    prod = F.log_softmax(x2, -1) * t2
    if weight is not None:
        ws = _shape_of(weight)
        if len(ws) != 1 or (ws[0] is not None and ws[0] != c):
            raise ValueError(f"cross_entropy: weight must have shape ({c},), got {tuple(ws)}")
        prod = prod * weight
    loss = -F.sum(prod, axis=-1)
    if reduction == "none":
        return F.reshape(loss, tshape) if tshape else F.reshape(loss, ())
    return F.sum(loss) if reduction == "sum" else F.mean(loss)


_nn(nll_loss)
_nn(nn_cross_entropy, alias="cross_entropy")


# ---- binary ---------------------------------------------------------------------------------------
def _clamped_log(v):
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(v), -100.0)


def _bce_forward(x, t):
    x, t = np.asarray(x), np.asarray(t)
    return -(t * _clamped_log(x) + (1 - t) * _clamped_log(1 - x))


def _bce_vjp_x(g, ans, x, t):
    # PyTorch's: (x - t) / max(x (1 - x), 1e-12), finite at x = 0 and 1
    return g * (x - t) / F.maximum(x * (1.0 - x), 1e-12)


def _bce_vjp_t(g, ans, x, t):
    return g * (F.maximum(F.log(1.0 - x), -100.0) - F.maximum(F.log(x), -100.0))


binary_cross_entropy_elementwise = defop(
    "binary_cross_entropy_elementwise", _bce_forward, _bce_vjp_x, _bce_vjp_t,
    shape=lambda shapes, **_: _shapes.broadcast("binary_cross_entropy", *shapes),
    doc="``-(t log x + (1 - t) log(1 - x))`` with the logs clamped at -100 (PyTorch's).")


def binary_cross_entropy(input, target, weight=None, size_average=None,  # noqa: A002
                         reduce=None, reduction="mean"):
    """Binary cross-entropy of probabilities ``input`` in ``[0, 1]`` against ``target``:
    PyTorch's ``torch.nn.functional.binary_cross_entropy`` (logs clamped at -100, so a
    confident mistake costs 100, not infinity; ``weight`` rescales each element).

        >>> binary_cross_entropy(fg.tensor([0.9, 0.2]), fg.tensor([1.0, 0.0]))  # doctest: +SKIP
    """
    _no_legacy_reduction("binary_cross_entropy", size_average, reduce)
    _check_same_shape("binary_cross_entropy", input, target)
    x = getattr(input, "_ndarray", input)
    if isinstance(x, np.ndarray) and x.size and (np.nanmin(x) < 0 or np.nanmax(x) > 1):
        raise ValueError("binary_cross_entropy: all elements of input should be between 0 "
                         "and 1")
    loss = binary_cross_entropy_elementwise(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(reduction, "binary_cross_entropy"))


def binary_cross_entropy_with_logits(input, target, weight=None,  # noqa: A002
                                     size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross-entropy of logits (``sigmoid`` inside, stable for large ``|x|``):
    PyTorch's ``torch.nn.functional.binary_cross_entropy_with_logits``, ``(1 - t) x + (1 + (p -
    1) t) softplus(-x)`` with ``pos_weight`` ``p`` (broadcast over the last axis).

        >>> binary_cross_entropy_with_logits(fg.tensor([3.0, -1.0]), fg.tensor([1.0, 0.0]))
        ... # doctest: +SKIP
    """
    _no_legacy_reduction("binary_cross_entropy_with_logits", size_average, reduce)
    _check_same_shape("binary_cross_entropy_with_logits", input, target)
    sp = F.softplus(-input)
    if pos_weight is None:
        loss = (1.0 - target) * input + sp
    else:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(reduction, "binary_cross_entropy_with_logits"))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
           log_target=False):
    """Kullback-Leibler divergence of ``target`` from the log-probabilities ``input``:
    PyTorch's ``torch.nn.functional.kl_div``, ``t (log t - x)`` (0 where ``t = 0``), or
    ``exp(t) (t - x)`` with ``log_target``; ``reduction='batchmean'`` divides the sum by the
    batch size (the mathematical KL divergence), ``'mean'`` by the number of elements.

        >>> kl_div(fg.log_softmax(fg.randn(2, 3)), fg.softmax(fg.randn(2, 3)),
        ...        reduction="batchmean")  # doctest: +SKIP
    """
    _no_legacy_reduction("kl_div", size_average, reduce)
    _reduction(reduction, "kl_div", ("batchmean",))
    if log_target:
        loss = F.exp(target) * (target - input)
    else:
        loss = F.xlogy(target, target) - target * input
    if reduction == "batchmean":
        xs = _shape_of(input)
        if not xs:
            return F.sum(loss)
        if xs[0] is None:       # 1 / N, N known when it runs
            return F.sum(loss) * F.size_ratio(F.sum(loss, axis=0), loss)
        return F.sum(loss) / xs[0]
    return _reduce(loss, reduction)


for _f in (binary_cross_entropy, binary_cross_entropy_with_logits, kl_div):
    _nn(_f)
