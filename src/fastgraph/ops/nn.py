"""Neural-network helpers: softmax, log_softmax, cross_entropy (numerically stable)."""
from __future__ import annotations

import numpy as np

from .._core import TOP, apply, defop
from .._core import shapes as _shapes
from ..kernels import softmax as _loops

from .. import ops as F


def _softmax_numpy(x, axis):
    """Softmax with NumPy calls (``kernels.softmax.softmax`` computes exactly this, in one pass); the
    ufuncs' reduce methods are what np.max / np.sum compute, without their Python wrappers."""
    e = np.exp(x - np.maximum.reduce(x, axis=axis, keepdims=True))
    e /= np.add.reduce(e, axis=axis, keepdims=True)
    return e


def _log_softmax_numpy(x, axis):
    """Log-softmax with NumPy calls (``kernels.softmax.log_softmax`` computes exactly this)."""
    z = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    return z - np.log(np.add.reduce(np.exp(z), axis=axis, keepdims=True))


def _softmax_forward(x, axis):
    x = np.asarray(x)
    fast = _loops.softmax(x, axis)          # the same values in one C pass, where it applies
    return fast if fast is not None else _softmax_numpy(x, axis)


def _log_softmax_forward(x, axis):
    x = np.asarray(x)
    fast = _loops.log_softmax(x, axis)
    return fast if fast is not None else _log_softmax_numpy(x, axis)


def _same_checking_axis(shapes, axis, op):
    # the static rule checks the axis at build time (eager: NumPy checks it)
    _shapes.check_axis(axis, len(shapes[0]), op, shapes[0])
    return tuple(shapes[0])


def softmax(x, axis: int = -1):
    """Softmax along ``axis`` (default last), stable for large inputs.

        >>> fg.softmax(fg.tensor([1.0, 2.0, 1000.0]))  # doctest: +SKIP
    """
    return apply(softmax.op, (x,), {"axis": _shapes.as_int(axis, "softmax")})


softmax = defop("softmax", _softmax_forward,
                lambda g, ans, x, axis: ans * (g - F.sum(g * ans, axis=axis, keepdims=True)),
                function=softmax,
                shape=lambda shapes, axis, **_: _same_checking_axis(shapes, axis, "softmax"),
                exports=TOP, methods=True, complex_vjps=True)


def log_softmax(x, axis: int = -1):
    """Log of softmax along ``axis`` (default last), stable for large inputs."""
    return apply(log_softmax.op, (x,), {"axis": _shapes.as_int(axis, "log_softmax")})


log_softmax = defop("log_softmax", _log_softmax_forward,
                    lambda g, ans, x, axis: g - F.exp(ans) * F.sum(g, axis=axis, keepdims=True),
                    function=log_softmax,
                    shape=lambda shapes, axis, **_: _same_checking_axis(shapes, axis,
                                                                        "log_softmax"),
                    exports=TOP, methods=True, complex_vjps=True)


def _pick_forward(x, labels):
    # x[i, labels[i]] by fancy indexing: np.take_along_axis's values, without its Python frames
    x = np.asarray(x)
    labels = np.asarray(labels)
    return x[np.arange(len(labels)), labels]


def _put_forward(g, x, labels):
    out = np.zeros(np.shape(x), dtype=np.result_type(g))
    out[np.arange(len(labels)), labels] = g
    return out


def _labels_shape(name):
    def rule(shapes, **_):
        x, labels = shapes
        if (len(x) != 2 or len(labels) != 1
                or (x[0] is not None and labels[0] is not None and x[0] != labels[0])):
            raise ValueError(f"{name}: expected logits of shape (N, C) and labels of shape (N,), "
                             f"got {tuple(x)} and {tuple(labels)}")
        return (x[0] if x[0] is not None else labels[0],)
    return rule


def pick(x, labels):
    """``x[i, labels[i]]`` for each row ``i``."""
    return apply(pick.op, (x, labels), {})


pick = defop("pick", _pick_forward,
             lambda g, ans, x, labels: F.put_labels(g, x, labels), None,
             shape=_labels_shape("cross_entropy"), function=pick)


def put_labels(g, x, labels):
    """Zeros shaped like ``x`` with ``g[i]`` at ``[i, labels[i]]`` (the VJP of :func:`pick`)."""
    return apply(put_labels.op, (g, x, labels), {})


put_labels = defop("put_labels", _put_forward,
                   lambda g, ans, gin, x, labels: F.pick(g, labels), None, None,
                   shape=lambda shapes, **_: tuple(shapes[1]), function=put_labels, one_hot=True)


def _ce_loss_numpy(x, lab):
    """The loss with NumPy calls (``kernels.softmax.cross_entropy`` computes exactly this, in one pass)."""
    z = x - np.maximum.reduce(x, axis=-1, keepdims=True)
    lse = np.log(np.add.reduce(np.exp(z), axis=-1))
    total = np.add.reduce(lse - z[np.arange(len(lab)), lab])
    return total.dtype.type(total / len(lab))        # as np.mean rounds and types it


def _ce_grad_numpy(x, lab, g):
    """The gradient with NumPy calls (``kernels.softmax.cross_entropy_grad`` computes exactly this)."""
    e = _softmax_numpy(x, -1)
    e[np.arange(len(lab)), lab] -= 1
    e *= np.asarray(g, dtype=e.dtype) / len(lab)
    return e


def _ce_forward(logits, labels):
    """``mean(lse - x[i, labels[i]])``: the same value as ``-mean(pick(log_softmax(x), labels))``
    (bit for bit: each row's difference is that one's negation, and so is their mean), without
    the (N, C) log-probabilities in between.  One C pass where it applies (float32/float64,
    contiguous, int64 labels in range, finite), else the same NumPy calls."""
    fast = _loops.cross_entropy(logits, labels)
    if fast is not None:
        return fast
    return _ce_loss_numpy(np.asarray(logits), np.asarray(labels))


def _ce_grad_forward(g, logits, labels):
    """``(softmax(x) - onehot(labels)) * g / N``: the cross-entropy's gradient in one function
    (one C pass where it applies, else NumPy calls; the same values either way)."""
    fast = _loops.cross_entropy_grad(g, logits, labels)
    if fast is not None:
        return fast
    return _ce_grad_numpy(np.asarray(logits), np.asarray(labels), g)


def cross_entropy_and_grad(g, logits, labels):
    """``(cross_entropy(logits, labels), cross_entropy_grad(g, logits, labels))`` as plain
    values, from one C pass where it applies (the softmax's parts once; TensorFlow's
    ``softmax_cross_entropy_with_logits`` returns both likewise), else each on its own -- the
    same bits either way.  A static plan computing both runs this (the ``lower`` pass)."""
    both = _loops.cross_entropy_and_grad(g, logits, labels)
    if both is not None:
        return both
    return _ce_forward(logits, labels), _ce_grad_forward(g, logits, labels)


def _ce_grad_vjp_logits(u, ans, g, x, labels):
    # d/dx <u, (softmax(x) - onehot) g / N> = s * (w - sum(w * s)) with w = u g / N, s = softmax(x)
    inv_n = F.size_ratio(F.sum(x, axis=0), x)        # 1 / N in x's dtype, N known at run time
    w = u * (g * inv_n)
    s = F.softmax(x, -1)
    return s * (w - F.sum(w * s, axis=-1, keepdims=True))


def _ce_shape(shapes, **_):
    _CE_SHAPES(shapes)
    return ()


def cross_entropy_grad(g, logits, labels):
    """``(softmax(logits) - onehot(labels)) * g / N``: the VJP of :func:`cross_entropy`."""
    return apply(cross_entropy_grad.op, (g, logits, labels), {})


def cross_entropy(logits, labels):
    """Mean softmax cross-entropy of ``(N, C)`` logits against integer labels (PyTorch's default).
    One operation; its value and its gradient ``(softmax(logits) - onehot(labels)) / N`` are
    each one C pass over the rows (``kernels/softmax.pyx``), and the value is bit for bit
    ``-mean(pick(log_softmax(logits), labels))``.

        >>> fg.cross_entropy(fg.randn(4, 3), np.array([0, 2, 1, 0]))  # doctest: +SKIP
    """
    lab = labels
    dt = getattr(lab, "dtype", None)
    if dt is None and isinstance(labels, (list, tuple)) and len(labels):
        lab = F.stack(labels)  # (NumPy's array of them; one holding Tensors or Nodes too)
        dt = getattr(lab, "dtype", None)
    if dt is None:
        lab = np.asarray(labels)
        dt = lab.dtype
    if not np.issubdtype(dt, np.integer):
        raise TypeError(f"cross_entropy: labels must be integers, got dtype {dt}")
    # (the eager tape runs no shape rules; np.shape only where there is no .shape: on a Tensor
    # it would go through __array_function__ on every call)
    _CE_SHAPES([tuple(logits.shape if hasattr(logits, "shape") else np.shape(logits)),
                tuple(lab.shape if hasattr(lab, "shape") else np.shape(lab))])
    return apply(cross_entropy.op, (logits, lab), {})


cross_entropy = defop("cross_entropy", _ce_forward,
                      lambda g, ans, x, labels: cross_entropy_grad(g, x, labels), None,
                      shape=_ce_shape, function=cross_entropy, exports=TOP)
# with a constant seed (it cannot depend on the loss), a plan computing both the loss and its
# gradient runs one pass for the two (the ``lower`` pass)
cross_entropy_grad = defop("cross_entropy_grad", _ce_grad_forward,
                           lambda u, ans, g, x, labels: F.sum(u * cross_entropy_grad(1.0, x,
                                                                                     labels)),
                           _ce_grad_vjp_logits, None, function=cross_entropy_grad,
                           shape=lambda shapes, **_: tuple(shapes[1]),
                           computed_with=(cross_entropy.op, cross_entropy_and_grad))


_CE_SHAPES = _labels_shape("cross_entropy")


