"""The deep-learning op table: one line per case, each an ``fg`` function (PyTorch's names and
semantics, from ``fastgraph.nn_ops``), its arguments (shape and domain, as in ``optable``), the
PyTorch function it must equal, and its differentiable arguments.

``test_nn_ops.py`` runs every case against PyTorch (values, gradients, second order), central
finite differences (float64), eager == static == ``fg.function``, and 1 thread == 2 threads.
Shapes are small, and the convolution configurations a compact grid (each of stride, padding
mode, dilation, groups, kernel shape and batching appears, not every combination).
"""
from __future__ import annotations

import numpy as np

from optable import OpCase

import fastgraph.nn_ops as N
from fastgraph import ops as _ops

__all__ = ["CASES", "NN_CASES", "NN_CASES_BY_NAME", "nn_case_params"]

NN_CASES: list[OpCase] = []


def _t():
    import torch
    return torch


def _tf():
    return _t().nn.functional


def case(name, fn, args, torch, diff=None, **kw):
    args = tuple((tuple(s), d) for s, d in args)
    if diff is None:
        diff = tuple(i for i, (_, d) in enumerate(args)
                     if not (d == "bool" or (isinstance(d, str) and d.startswith("labels"))))
    NN_CASES.append(OpCase(name, name.split("-")[0], fn, args, None, torch, tuple(diff), **kw))


def _both(fname, **kw):
    """``(fg function, torch function)`` of the same name and keywords."""
    return (lambda *a: getattr(N, fname)(*a, **kw)), (lambda *a: getattr(_tf(), fname)(*a, **kw))


# ---- convolutions: (id, function, x shape, w shape, bias?, keywords) -------------------------------
CONVS = [
    ("conv2d-3x3pad1", "conv2d", (2, 3, 6, 5), (4, 3, 3, 3), True, dict(padding=1)),
    ("conv2d-strided-dilated-groups", "conv2d", (2, 4, 9, 8), (6, 2, 3, 2), True,
     dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    ("conv2d-same-depthwise", "conv2d", (2, 4, 7, 6), (4, 1, 3, 3), False,
     dict(padding="same", dilation=2, groups=4)),
    ("conv2d-same-even-kernel", "conv2d", (1, 2, 5, 6), (3, 2, 2, 4), True,
     dict(padding="same")),
    ("conv2d-1x1", "conv2d", (2, 5, 4, 3), (3, 5, 1, 1), True, {}),
    ("conv2d-valid-stride23", "conv2d", (2, 2, 8, 9), (3, 2, 3, 3), False,
     dict(padding="valid", stride=(2, 3))),
    ("conv2d-unbatched", "conv2d", (3, 5, 5), (2, 3, 3, 3), True, dict(padding=1)),
    ("conv1d-strided", "conv1d", (2, 3, 11), (4, 3, 3), True, dict(stride=2, padding=1)),
    ("conv1d-same-groups", "conv1d", (2, 4, 8), (6, 2, 4), False,
     dict(padding="same", groups=2)),
    ("conv3d-groups", "conv3d", (1, 4, 4, 5, 4), (2, 2, 2, 3, 2), True,
     dict(stride=(1, 2, 1), padding=(1, 0, 1), groups=2)),
]
for _id, _f, _xs, _ws, _bias, _kw in CONVS:
    _fg, _to = _both(_f, **_kw)
    _args = [(_xs, "real"), (_ws, "real")] + ([((_ws[0],), "real")] if _bias else [])
    case(_id, _fg, _args, _to)

CONV_TRANSPOSES = [
    ("conv_transpose2d-stride2-outpad-groups", "conv_transpose2d", (2, 4, 3, 4), (4, 3, 3, 3),
     True, dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("conv_transpose2d-dilated", "conv_transpose2d", (1, 2, 4, 3), (2, 3, 2, 3), False,
     dict(stride=(1, 2), dilation=(2, 1), padding=(1, 0))),
    ("conv_transpose1d", "conv_transpose1d", (2, 3, 5), (3, 2, 3), True,
     dict(stride=3, padding=1, output_padding=2)),
    ("conv_transpose3d", "conv_transpose3d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), True,
     dict(stride=2)),
]
for _id, _f, _xs, _ws, _bias, _kw in CONV_TRANSPOSES:
    _fg, _to = _both(_f, **_kw)
    _args = [(_xs, "real"), (_ws, "real")] + ([((_ws[1] * _kw.get("groups", 1),), "real")]
                                              if _bias else [])
    case(_id, _fg, _args, _to)

# ---- pooling: (id, function, x shape, domain, keywords) --------------------------------------------
POOLS = [
    ("max_pool2d", "max_pool2d", (2, 3, 6, 5), "distinct", dict(kernel_size=2)),
    ("max_pool2d-pad-ceil", "max_pool2d", (2, 2, 7, 6), "distinct",
     dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_pool2d-dilated-overlap", "max_pool2d", (1, 2, 8, 7), "distinct",
     dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 1))),
    ("max_pool1d-ceil", "max_pool1d", (2, 3, 9), "distinct",
     dict(kernel_size=3, stride=2, ceil_mode=True)),
    ("max_pool3d", "max_pool3d", (1, 2, 4, 5, 4), "distinct",
     dict(kernel_size=2, stride=(1, 2, 1), padding=1)),
    ("max_pool2d-unbatched", "max_pool2d", (3, 6, 6), "distinct", dict(kernel_size=3,
                                                                        stride=2)),
    ("avg_pool2d", "avg_pool2d", (2, 3, 6, 5), "real", dict(kernel_size=2)),
    ("avg_pool2d-pad-ceil", "avg_pool2d", (2, 2, 7, 6), "real",
     dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d-exclude-pad", "avg_pool2d", (2, 2, 7, 6), "real",
     dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d-divisor", "avg_pool2d", (1, 2, 6, 6), "real",
     dict(kernel_size=3, padding=1, divisor_override=4)),
    ("avg_pool1d", "avg_pool1d", (2, 3, 9), "real", dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool3d", "avg_pool3d", (1, 2, 4, 5, 4), "real", dict(kernel_size=2, stride=(1, 2, 1),
                                                              padding=1)),
    ("adaptive_avg_pool2d", "adaptive_avg_pool2d", (2, 3, 7, 5), "real",
     dict(output_size=(3, 2))),
    ("adaptive_avg_pool2d-global", "adaptive_avg_pool2d", (2, 3, 5, 4), "real",
     dict(output_size=1)),
    ("adaptive_avg_pool1d", "adaptive_avg_pool1d", (2, 2, 10), "real", dict(output_size=4)),
    ("adaptive_avg_pool3d", "adaptive_avg_pool3d", (1, 2, 5, 4, 3), "real",
     dict(output_size=(2, 3, 2))),
    ("adaptive_max_pool2d", "adaptive_max_pool2d", (2, 2, 7, 5), "distinct",
     dict(output_size=(3, 2))),
    ("adaptive_max_pool1d", "adaptive_max_pool1d", (2, 2, 10), "distinct",
     dict(output_size=4)),
]
for _id, _f, _xs, _dom, _kw in POOLS:
    _fg, _to = _both(_f, **_kw)
    case(_id, _fg, [(_xs, _dom)], _to)

# ---- linear layers, activations --------------------------------------------------------------------
case("linear", lambda x, w, b: N.linear(x, w, b), [((2, 3, 4), "real"), ((5, 4), "real"),
                                                   ((5,), "real")],
     lambda x, w, b: _tf().linear(x, w, b))
case("linear-nobias", lambda x, w: N.linear(x, w), [((3, 4), "real"), ((2, 4), "real")],
     lambda x, w: _tf().linear(x, w))
# linear's product (a weight stored (out, in)), its weight gradient in the weight's layout
case("matmul_nt", lambda a, b: _ops.matmul_nt(a, b), [((3, 4), "real"), ((5, 4), "real")],
     lambda a, b: a @ b.T)
case("matmul_nt-batched", lambda a, b: _ops.matmul_nt(a, b),
     [((2, 3, 4), "real"), ((5, 4), "real")], lambda a, b: a @ b.T)
case("bilinear", lambda a, b, w, c: N.bilinear(a, b, w, c),
     [((3, 2), "real"), ((3, 4), "real"), ((5, 2, 4), "real"), ((5,), "real")],
     lambda a, b, w, c: _tf().bilinear(a, b, w, c))


def _wide(rng, shape):
    return rng.uniform(-5.0, 5.0, shape)


ACTIVATIONS = [
    ("gelu", "real", {}), ("gelu-tanh", "real", dict(approximate="tanh")), ("silu", "real", {}),
    ("mish", "real", {}), ("leaky_relu", "away", dict(negative_slope=0.2)),
    ("elu", "away", dict(alpha=1.3)), ("celu", "away", dict(alpha=0.5)), ("selu", "away", {}),
    ("hardtanh", "away", dict(min_val=-0.8, max_val=1.2)), ("relu6", _wide, {}),
    ("hardsigmoid", _wide, {}), ("hardswish", _wide, {}), ("logsigmoid", "real", {}),
    ("softsign", "real", {}), ("softplus", "real", {}),
    ("softplus-beta-threshold", _wide, dict(beta=2.0, threshold=3.0)),
    ("tanhshrink", "real", {}), ("softshrink", "away", dict(lambd=0.2)),
    ("hardshrink", "away", dict(lambd=0.2)),
]
for _id, _dom, _kw in ACTIVATIONS:
    _fg, _to = _both(_id.split("-")[0], **_kw)
    # (PyTorch has no second derivative of hardsigmoid)
    case(_id, _fg, [((3, 4), _dom)], _to, tol=1e3 if _id.startswith("hards") else 1.0,
         order2=_id != "hardsigmoid")
case("prelu", N.prelu, [((2, 3, 4), "away"), ((3,), "real")], lambda x, w: _tf().prelu(x, w))
case("glu", lambda x: N.glu(x, 1), [((2, 6, 3), "real")], lambda x: _tf().glu(x, 1))

# ---- normalisation (training-mode statistics without running buffers, and eval mode) ----------------
case("batch_norm-train", lambda x, w, b: N.batch_norm(x, None, None, w, b, training=True),
     [((4, 3, 2, 3), "real"), ((3,), "real"), ((3,), "real")],
     lambda x, w, b: _tf().batch_norm(x, None, None, w, b, training=True))
case("batch_norm-train-1d", lambda x: N.batch_norm(x, None, None, training=True, eps=1e-3),
     [((5, 4), "real")], lambda x: _tf().batch_norm(x, None, None, training=True, eps=1e-3))
case("batch_norm-eval", lambda x, m, v, w, b: N.batch_norm(x, m, v, w, b),
     [((2, 3, 4), "real"), ((3,), "real"), ((3,), "pos"), ((3,), "real"), ((3,), "real")],
     lambda x, m, v, w, b: _tf().batch_norm(x, m, v, w, b), diff=(0, 3, 4))
case("instance_norm", lambda x, w, b: N.instance_norm(x, weight=w, bias=b),
     [((2, 3, 4, 3), "real"), ((3,), "real"), ((3,), "real")],
     lambda x, w, b: _tf().instance_norm(x, weight=w, bias=b))
case("layer_norm", lambda x, w, b: N.layer_norm(x, (3, 4), w, b),
     [((2, 3, 4), "real"), ((3, 4), "real"), ((3, 4), "real")],
     lambda x, w, b: _tf().layer_norm(x, (3, 4), w, b))
case("layer_norm-noaffine", lambda x: N.layer_norm(x, 5), [((3, 5), "real")],
     lambda x: _tf().layer_norm(x, (5,)))
case("group_norm", lambda x, w, b: N.group_norm(x, 2, w, b),
     [((2, 4, 3, 2), "real"), ((4,), "real"), ((4,), "real")],
     lambda x, w, b: _tf().group_norm(x, 2, w, b))
case("local_response_norm", lambda x: N.local_response_norm(x, 3), [((2, 5, 3), "real")],
     lambda x: _tf().local_response_norm(x, 3))
case("normalize", lambda x: N.normalize(x, dim=1), [((3, 4), "real")],
     lambda x: _tf().normalize(x, dim=1))
case("normalize-p1", lambda x: N.normalize(x, p=1.0, dim=0), [((3, 4), "away")],
     lambda x: _tf().normalize(x, p=1.0, dim=0))

# ---- embeddings, padding --------------------------------------------------------------------------
case("embedding", lambda i, w: N.embedding(i, w), [((2, 3), "labels:5"), ((5, 4), "real")],
     lambda i, w: _tf().embedding(i, w))
case("embedding-padding_idx", lambda i, w: N.embedding(i, w, padding_idx=1),
     [((7,), lambda r, s: np.array([0, 1, 2, 1, 3, 0, 1])), ((4, 2), "real")],
     lambda i, w: _tf().embedding(i, w, padding_idx=1), diff=(1,))
PADS = [("pad-constant", (1, 2), dict(value=0.5)), ("pad-constant-crop", (1, -1, -1, 2), {}),
        ("pad-reflect", (2, 1, 1, 2), dict(mode="reflect")),
        ("pad-replicate", (3, 1, 0, 2), dict(mode="replicate")),
        ("pad-circular", (2, 3, 1, 0), dict(mode="circular"))]
for _id, _p, _kw in PADS:
    case(_id, (lambda p, kw: lambda x: N.pad(x, p, **kw))(_p, _kw), [((2, 3, 4, 3), "real")],
         (lambda p, kw: lambda x: _tf().pad(x, p, **kw))(_p, _kw))

# ---- losses -----------------------------------------------------------------------------------------
REGRESSION = [("mse_loss", {}), ("l1_loss", dict(reduction="sum")),
              ("smooth_l1_loss", dict(beta=0.5)), ("smooth_l1_loss-beta0", dict(beta=0.0)),
              ("huber_loss", dict(delta=0.7, reduction="none"))]
for _id, _kw in REGRESSION:
    _fg, _to = _both(_id.split("-")[0], **_kw)
    case(_id, _fg, [((3, 4), "real"), ((3, 4), "real")], _to)


def _ignored(rng, shape):
    t = rng.integers(0, 4, shape)
    t.flat[::3] = -100
    return t


CLASSIFICATION = [
    ("cross_entropy", (6, 4), (6,), "labels:4", {}),
    ("cross_entropy-spatial-weights-ignore", (2, 4, 3, 2), (2, 3, 2), _ignored,
     dict(weight="w")),
    ("cross_entropy-smoothing-sum", (5, 4), (5,), _ignored, dict(label_smoothing=0.2,
                                                                reduction="sum")),
    ("cross_entropy-smoothing-weights-mean", (5, 4), (5,), _ignored,
     dict(label_smoothing=0.3, weight="w")),
    ("cross_entropy-none-ignore3", (5, 4), (5,), "labels:4", dict(ignore_index=3,
                                                                 reduction="none")),
    ("nll_loss", (5, 4), (5,), "labels:4", {}),
    ("nll_loss-weights-ignore", (2, 4, 3), (2, 3), _ignored, dict(weight="w")),
]
_W = np.array([0.5, 1.0, 2.0, 1.5])
for _id, _xs, _ts, _dom, _kw in CLASSIFICATION:
    _kw = {k: (_W if v == "w" else v) for k, v in _kw.items()}
    _fg = (lambda n, kw: lambda x, t: getattr(N, n)(x, t, **{
        k: (v.astype(x.dtype) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}))(
        _id.split("-")[0], _kw)
    _to = (lambda n, kw: lambda x, t: getattr(_tf(), n)(x, t, **{
        k: (_t().from_numpy(v).to(x.dtype) if isinstance(v, np.ndarray) else v)
        for k, v in kw.items()}))(_id.split("-")[0], _kw)
    case(_id, _fg, [(_xs, "real"), (_ts, _dom)], _to, diff=(0,))


def _probs(rng, shape):
    p = rng.uniform(0.1, 1.0, shape)
    return p / p.sum(axis=1, keepdims=True)


case("cross_entropy-probabilities", lambda x, t: N.cross_entropy(x, t, label_smoothing=0.1),
     [((3, 4, 2), "real"), ((3, 4, 2), _probs)],
     lambda x, t: _tf().cross_entropy(x, t, label_smoothing=0.1))
case("binary_cross_entropy", lambda x, t, w: N.binary_cross_entropy(x, t, w),
     [((3, 4), "prob"), ((3, 4), "prob"), ((4,), "pos")],
     lambda x, t, w: _tf().binary_cross_entropy(x, t, w), diff=(0, 1))
case("binary_cross_entropy_with_logits",
     lambda x, t, w, p: N.binary_cross_entropy_with_logits(x, t, w, pos_weight=p),
     [((3, 4), "real"), ((3, 4), "prob"), ((3, 4), "pos"), ((4,), "pos")],
     lambda x, t, w, p: _tf().binary_cross_entropy_with_logits(x, t, w, pos_weight=p),
     diff=(0, 1))
case("kl_div-batchmean", lambda x, t: N.kl_div(x, t, reduction="batchmean"),
     [((3, 4), "real"), ((3, 4), "prob")],
     lambda x, t: _tf().kl_div(x, t, reduction="batchmean"))
case("kl_div-log_target", lambda x, t: N.kl_div(x, t, log_target=True),
     [((3, 4), "real"), ((3, 4), "real")],
     lambda x, t: _tf().kl_div(x, t, log_target=True))

NN_CASES_BY_NAME = {c.name: c for c in NN_CASES}
assert len(NN_CASES_BY_NAME) == len(NN_CASES), "case names must be unique"


def nn_case_params(predicate=None) -> list:
    import pytest
    return [pytest.param(c, id=c.name) for c in NN_CASES if predicate is None or predicate(c)]
CASES = NN_CASES     # (the name the op-table checks read)
