"""TensorFlow 1's vocabulary as a table: one line per case, written once in TensorFlow 1's form.

Each :class:`TFCase` builds a graph with a TensorFlow 1 module ``tf`` -- ``fastgraph.compat.v1``,
``fastgraph`` itself (``top=True``: the name means the same there) or TensorFlow's own
``tensorflow.compat.v1`` -- from placeholders fed with ``inputs``, and says what TensorFlow's
documentation says the result is (``ref``, on NumPy arrays).  ``grad`` lists the inputs whose
gradient of ``sum(first output)`` is compared (against finite differences, and against
TensorFlow's own ``tf.gradients`` when TensorFlow is installed).

Optimizers (:data:`OPTIMIZERS`) and the classic tutorial programs (:data:`PROGRAMS`) are here
too, as functions of ``tf``.  Run as a script, this module evaluates everything with TensorFlow
(``python tests/tf1_cases.py OUT.npz``), so the tests compare with TensorFlow without importing
it into the test process; it exits with status 3 when TensorFlow is not installed.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Callable, Optional

import numpy as np
import scipy.special as sps


@dataclasses.dataclass(frozen=True)
class TFCase:
    name: str
    build: Callable                 # build(tf, *placeholders) -> a node, or a list of nodes
    inputs: tuple = ()              # arrays fed to the placeholders
    ref: Optional[Callable] = None  # TensorFlow's documented result, on the arrays
    grad: tuple = ()                # inputs differentiated (sum of the first output)
    top: bool = False               # fastgraph's top level has the name, with this meaning
    shapes: Optional[tuple] = None  # placeholder shapes (None dims), default: the inputs'
    tol: float = 1e-10
    fd: bool = True                 # finite differences see the gradient (not stop_gradient)
    tf32: bool = False              # TensorFlow computes it in float32 whatever the inputs'
                                    # dtype (tf.losses); fastgraph keeps the inputs' dtype

    def __repr__(self) -> str:
        return f"TFCase({self.name!r})"


_rng = np.random.default_rng(24)
X = _rng.standard_normal((3, 4))
Y = _rng.standard_normal((3, 4))
Z = _rng.standard_normal((3, 4))
ROW = _rng.standard_normal(4)
POS = _rng.uniform(0.5, 2.0, (3, 4))
PROB = _rng.uniform(0.1, 0.9, (3, 4))
A = _rng.standard_normal((3, 5))
B = _rng.standard_normal((5, 4))
BT = np.ascontiguousarray(B.T)
AT = np.ascontiguousarray(A.T)
BATCH_A = _rng.standard_normal((2, 3, 5))
BATCH_B = _rng.standard_normal((2, 5, 4))
LABELS = np.array([2, 0, 3])
ONEHOT = np.eye(4)[LABELS]
SOFT = sps.softmax(_rng.standard_normal((3, 4)), axis=1)
# labels that are distributions along axis 0 (TensorFlow's fused gradient, softmax - labels,
# is the derivative only for labels that sum to 1 along the class axis)
SOFT0 = sps.softmax(SOFT * 3, axis=0)
BITS = _rng.standard_normal((3, 4)) > 0
INTS = np.array([[1, 2, -4], [4, 6, -5]], dtype=np.int32)   # row means -1/3, 5/3
IMG = _rng.standard_normal((2, 3, 3, 4))             # NHWC, 4 channels
IMG_NCHW = _rng.standard_normal((2, 4, 3, 3))
BIAS = _rng.standard_normal(4)
# away from relu6's kinks at 0 and 6
WIDE = np.array([[-3.1, -0.7, 0.4, 2.5], [5.2, 6.6, 8.0, -5.5], [0.9, 3.3, -1.2, 7.1]])
WEIGHTS = np.array([[1.0, 0.0, 2.0, 1.0], [0.0, 0.0, 0.5, 1.0], [1.0, 1.0, 0.0, 3.0]])
HUBER_P = np.array([[0.2, 2.5, -1.0, 0.1], [3.0, -0.4, 0.0, 1.7], [-2.2, 0.3, 0.6, -0.05]])


def _softmax(x, axis=-1):
    return sps.softmax(x, axis=axis)


def _log_softmax(x, axis=-1):
    return sps.log_softmax(x, axis=axis)


def _sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def _elu(x):
    return np.where(x > 0, x, np.expm1(x))


def _selu(x):
    return 1.0507009873554804934193349852946 * np.where(
        x > 0, x, 1.6732632423543772848170429916717 * np.expm1(x))


def _nonzero_mean(losses, w=1.0):
    w = np.broadcast_to(w, losses.shape)
    n = np.count_nonzero(w)
    return np.sum(losses * w) / n if n else 0.0


def _huber(e, delta=1.0):
    a = np.abs(e)
    q = np.minimum(a, delta)
    return 0.5 * q * q + delta * (a - q)


def _sse(tf, labels, logits):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


C = TFCase


def L(*args, **kwargs):  # noqa: N802  (a tf.losses case: TensorFlow computes it in float32)
    return TFCase(*args, tf32=True, **kwargs)


CASES: list[TFCase] = [
    # ---- reductions ---------------------------------------------------------------------------
    C("reduce_sum", lambda tf, x: tf.reduce_sum(x), (X,), np.sum, (0,), top=True),
    C("reduce_sum_axis", lambda tf, x: tf.reduce_sum(x, axis=1), (X,),
      lambda x: x.sum(1), (0,), top=True),
    C("reduce_sum_axes_keepdims", lambda tf, x: tf.reduce_sum(x, [0, 1], keepdims=True), (X,),
      lambda x: x.sum((0, 1), keepdims=True), (0,), top=True),
    C("reduce_sum_reduction_indices", lambda tf, x: tf.reduce_sum(x, reduction_indices=[1]),
      (X,), lambda x: x.sum(1), (0,), top=True),
    C("reduce_sum_keep_dims", lambda tf, x: tf.reduce_sum(x, 0, keep_dims=True), (X,),
      lambda x: x.sum(0, keepdims=True), (0,), top=True),
    C("reduce_mean", lambda tf, x: tf.reduce_mean(x, axis=-1), (X,), lambda x: x.mean(-1),
      (0,), top=True),
    C("reduce_mean_int_truncates", lambda tf, x: tf.reduce_mean(x, axis=1), (INTS,),
      lambda x: np.array([0, 1], np.int32), top=True),
    C("reduce_max", lambda tf, x: tf.reduce_max(x, axis=0), (X,), lambda x: x.max(0), (0,),
      top=True),
    C("reduce_min", lambda tf, x: tf.reduce_min(x, axis=1, keepdims=True), (X,),
      lambda x: x.min(1, keepdims=True), (0,), top=True),
    C("reduce_prod", lambda tf, x: tf.reduce_prod(x, axis=1), (POS,), lambda x: x.prod(1),
      (0,), top=True),
    C("reduce_logsumexp", lambda tf, x: tf.reduce_logsumexp(x, axis=1), (X,),
      lambda x: sps.logsumexp(x, axis=1), (0,), top=True),
    C("reduce_any", lambda tf, b: tf.reduce_any(b, axis=1), (BITS,), lambda b: b.any(1),
      top=True),
    C("reduce_all", lambda tf, b: tf.reduce_all(b, axis=0), (BITS,), lambda b: b.all(0),
      top=True),
    C("reduce_all_empty", lambda tf, b: tf.reduce_all(b), (np.zeros((0, 2), bool),),
      lambda b: np.True_, top=True),
    # ---- conversions, indices, shapes ---------------------------------------------------------
    C("cast_float_to_int_truncates", lambda tf, x: tf.cast(x * 3, tf.int32), (X,),
      lambda x: np.trunc(x * 3).astype(np.int32), top=True),
    C("cast_bool_to_float", lambda tf, b: tf.cast(b, tf.float32), (BITS,),
      lambda b: b.astype(np.float32), top=True),
    C("cast_float64_to_float32", lambda tf, x: tf.cast(x, tf.float32), (X,),
      lambda x: x.astype(np.float32), (0,), top=True),
    C("argmax_default_axis_0", lambda tf, x: tf.argmax(x), (X,), lambda x: x.argmax(0)),
    C("argmax_axis_1", lambda tf, x: tf.argmax(x, 1), (X,), lambda x: x.argmax(1)),
    C("argmax_dimension", lambda tf, x: tf.argmax(x, dimension=1), (X,),
      lambda x: x.argmax(1)),
    C("argmax_int32", lambda tf, x: tf.argmax(x, 1, output_type=tf.int32), (X,),
      lambda x: x.argmax(1).astype(np.int32)),
    C("argmin", lambda tf, x: tf.argmin(x, axis=1), (X,), lambda x: x.argmin(1)),
    C("arg_min", lambda tf, x: tf.arg_min(x, 0), (X,), lambda x: x.argmin(0)),
    C("arg_max", lambda tf, x: tf.arg_max(x, 1), (X,), lambda x: x.argmax(1)),
    C("accuracy", lambda tf, x, y: tf.reduce_mean(
        tf.cast(tf.equal(tf.argmax(x, 1), tf.argmax(y, 1)), tf.float32)), (X, Y),
      lambda x, y: np.float32(np.mean(x.argmax(1) == y.argmax(1)))),
    C("concat_axis0", lambda tf, x, y: tf.concat([x, y], 0), (X, Y),
      lambda x, y: np.concatenate([x, y], 0), (0, 1), top=True),
    C("concat_axis_last", lambda tf, x, y, z: tf.concat([x, y, z], axis=-1), (X, Y, Z),
      lambda x, y, z: np.concatenate([x, y, z], -1), (0, 2), top=True),
    C("shape", lambda tf, x: tf.shape(x), (X,), lambda x: np.array(x.shape, np.int32),
      shapes=((None, 4),)),
    C("shape_int64", lambda tf, x: tf.shape(x, out_type=tf.int64), (X,),
      lambda x: np.array(x.shape, np.int64), shapes=((None, None),)),
    C("size", lambda tf, x: tf.size(x), (X,), lambda x: np.int32(x.size), shapes=((None, 4),)),
    C("rank", lambda tf, x: tf.rank(x), (X,), lambda x: np.int32(2), top=True),
    C("fill", lambda tf: tf.fill([2, 3], 9.0), (), lambda: np.full((2, 3), 9.0, np.float32)),
    C("fill_dynamic", lambda tf, x: tf.fill(tf.shape(x), 2.5), (X,),
      lambda x: np.full(x.shape, 2.5, np.float32), shapes=((None, 4),)),
    C("range_limit", lambda tf: tf.range(5), (), lambda: np.arange(5, dtype=np.int32)),
    C("range_start_limit_delta", lambda tf: tf.range(1, 10, 3), (),
      lambda: np.array([1, 4, 7], np.int32)),
    C("range_float", lambda tf: tf.range(0.0, 1.0, 0.25), (),
      lambda: np.arange(0.0, 1.0, 0.25, dtype=np.float32)),
    C("range_dynamic", lambda tf, x: tf.range(tf.shape(x)[0]), (X,),
      lambda x: np.arange(3, dtype=np.int32), shapes=((None, 4),)),
    C("one_hot", lambda tf, i: tf.one_hot(i, 4), (LABELS,),
      lambda i: np.eye(4, dtype=np.float32)[i], top=True),
    C("one_hot_values_axis0", lambda tf, i: tf.one_hot(i, 4, on_value=5.0, off_value=-1.0,
                                                      axis=0), (LABELS,),
      lambda i: np.where(np.eye(4)[i].T > 0, 5.0, -1.0).astype(np.float32), top=True),
    C("one_hot_out_of_range_is_off", lambda tf, i: tf.one_hot(i, 3, dtype=tf.int32),
      (np.array([0, 3, -1, 2]),), lambda i: np.array([[1, 0, 0], [0, 0, 0], [0, 0, 0],
                                                       [0, 0, 1]], np.int32), top=True),
    C("split_sizes", lambda tf, x: tf.split(x, [1, 3], axis=1), (X,),
      lambda x: [x[:, :1], x[:, 1:]], (0,)),
    C("split_num", lambda tf, x: tf.split(x, 2, 1), (X,), lambda x: [x[:, :2], x[:, 2:]],
      (0,)),
    C("split_rest", lambda tf, x: tf.split(x, [2, -1], 1), (X,),
      lambda x: [x[:, :2], x[:, 2:]], (0,)),
    C("unstack", lambda tf, x: tf.unstack(x, axis=1), (X,), lambda x: list(x.T), (0,),
      top=True),
    C("transpose_perm", lambda tf, x: tf.transpose(x, perm=[1, 0]), (X,), lambda x: x.T, (0,)),
    C("expand_dims_dim", lambda tf, x: tf.expand_dims(x, dim=1), (X,), lambda x: x[:, None],
      (0,)),
    C("squeeze_dims", lambda tf, x: tf.squeeze(tf.expand_dims(x, 0), squeeze_dims=[0]), (X,),
      lambda x: x, (0,)),
    C("where_select", lambda tf, b, x, y: tf.where(b, x, y), (BITS, X, Y),
      lambda b, x, y: np.where(b, x, y), (1, 2), top=True),
    C("where_coordinates", lambda tf, b: tf.where(b), (BITS,), lambda b: np.argwhere(b)),
    C("cumsum_axis0", lambda tf, x: tf.cumsum(x), (X,), lambda x: np.cumsum(x, 0), (0,)),
    C("cumsum_exclusive_reverse", lambda tf, x: tf.cumsum(x, axis=1, exclusive=True,
                                                          reverse=True), (X,),
      lambda x: np.flip(np.cumsum(np.flip(x, 1), 1), 1) - x, (0,)),
    C("clip_by_value", lambda tf, x: tf.clip_by_value(x, -0.5, 0.7), (X,),
      lambda x: np.clip(x, -0.5, 0.7), (0,), top=True),
    # ---- arithmetic ---------------------------------------------------------------------------
    C("matmul", lambda tf, a, b: tf.matmul(a, b), (A, B), lambda a, b: a @ b, (0, 1),
      top=True),
    C("matmul_transpose_b", lambda tf, a, b: tf.matmul(a, b, transpose_b=True), (A, BT),
      lambda a, b: a @ b.T, (0, 1)),
    C("matmul_transpose_a", lambda tf, a, b: tf.matmul(a, b, transpose_a=True), (AT, B),
      lambda a, b: a.T @ b, (0, 1)),
    C("matmul_batched", lambda tf, a, b: tf.matmul(a, b), (BATCH_A, BATCH_B),
      lambda a, b: a @ b, (0, 1), top=True),
    C("squared_difference", lambda tf, x, r: tf.squared_difference(x, r), (X, ROW),
      lambda x, r: (x - r) ** 2, (0, 1), top=True),
    C("pow", lambda tf, p, x: tf.pow(p, x), (POS, X), np.power, (0, 1), top=True),
    C("sqrt", lambda tf, p: tf.sqrt(p), (POS,), np.sqrt, (0,), top=True),
    C("rsqrt", lambda tf, p: tf.rsqrt(p), (POS,), lambda p: 1 / np.sqrt(p), (0,), top=True),
    C("log", lambda tf, p: tf.log(p), (POS,), np.log, (0,), top=True),
    C("sigmoid", lambda tf, x: tf.sigmoid(x), (X,), sps.expit, (0,), top=True),
    C("tanh", lambda tf, x: tf.tanh(x), (X,), np.tanh, (0,), top=True),
    C("square", lambda tf, x: tf.square(x), (X,), np.square, (0,), top=True),
    C("add_n", lambda tf, x, y, z: tf.add_n([x, y, z]), (X, Y, Z), lambda x, y, z: x + y + z,
      (0, 1, 2), top=True),
    C("identity", lambda tf, x: tf.identity(x) * 2, (X,), lambda x: 2 * x, (0,)),
    C("stop_gradient", lambda tf, x: tf.stop_gradient(x) * x, (X,), lambda x: x * x, (0,),
      top=True, fd=False),
    C("basic_ops", lambda tf, x, y: [tf.add(x, y), tf.subtract(x, y), tf.multiply(x, y),
                                     tf.divide(x, y), tf.negative(x), tf.abs(x),
                                     tf.maximum(x, y), tf.minimum(x, y)], (X, POS),
      lambda x, y: [x + y, x - y, x * y, x / y, -x, np.abs(x), np.maximum(x, y),
                    np.minimum(x, y)], (0, 1), top=True),
    C("comparisons", lambda tf, x, y: [tf.equal(x, y), tf.not_equal(x, y), tf.less(x, y),
                                       tf.less_equal(x, y), tf.greater(x, y),
                                       tf.greater_equal(x, y)], (X, np.where(BITS, X, Y)),
      lambda x, y: [x == y, x != y, x < y, x <= y, x > y, x >= y], top=True),
    C("tf_math_aliases", lambda tf, u: [tf.atan(u), tf.asin(u), tf.acos(u), tf.mod(u, 0.3),
                                        tf.floormod(u, 0.3), tf.truediv(u, 2.0)],
      (PROB,), lambda u: [np.arctan(u), np.arcsin(u), np.arccos(u), np.mod(u, 0.3),
                          np.mod(u, 0.3), u / 2], (0,)),
    # ---- tf.nn ---------------------------------------------------------------------------------
    C("nn_relu", lambda tf, x: tf.nn.relu(x), (WIDE,), lambda x: np.maximum(x, 0), (0,)),
    C("nn_relu6", lambda tf, x: tf.nn.relu6(x), (WIDE,), lambda x: np.clip(x, 0, 6), (0,)),
    C("nn_elu", lambda tf, x: tf.nn.elu(x), (WIDE,), _elu, (0,)),
    C("nn_selu", lambda tf, x: tf.nn.selu(x), (WIDE,), _selu, (0,)),
    C("nn_softplus", lambda tf, x: tf.nn.softplus(x), (WIDE,), lambda x: np.logaddexp(0, x),
      (0,)),
    C("nn_softsign", lambda tf, x: tf.nn.softsign(x), (WIDE,), lambda x: x / (1 + np.abs(x)),
      (0,)),
    C("nn_sigmoid_tanh", lambda tf, x: [tf.nn.sigmoid(x), tf.nn.tanh(x)], (X,),
      lambda x: [sps.expit(x), np.tanh(x)], (0,)),
    C("nn_softmax", lambda tf, x: tf.nn.softmax(x), (X,), _softmax, (0,)),
    C("nn_softmax_axis0", lambda tf, x: tf.nn.softmax(x, axis=0), (X,),
      lambda x: _softmax(x, 0), (0,)),
    C("nn_softmax_dim", lambda tf, x: tf.nn.softmax(x, dim=0), (X,), lambda x: _softmax(x, 0),
      (0,)),
    C("nn_log_softmax", lambda tf, x: tf.nn.log_softmax(x), (X,), _log_softmax, (0,)),
    C("nn_l2_loss", lambda tf, x: tf.nn.l2_loss(x), (X,), lambda x: np.sum(x * x) / 2, (0,)),
    C("nn_bias_add", lambda tf, x, b: tf.nn.bias_add(x, b), (IMG, BIAS), lambda x, b: x + b,
      (0, 1)),
    C("nn_bias_add_nchw", lambda tf, x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
      (IMG_NCHW, BIAS), lambda x, b: x + b[:, None, None], (0, 1)),
    C("nn_xw_plus_b", lambda tf, a, b, r: tf.nn.xw_plus_b(a, b, r), (A, B, ROW),
      lambda a, b, r: a @ b + r, (0, 1, 2)),
    C("nn_softmax_xent", lambda tf, y, x: tf.nn.softmax_cross_entropy_with_logits(
        labels=y, logits=x), (SOFT, X), lambda y, x: -np.sum(y * _log_softmax(x), 1), (1,)),
    C("nn_softmax_xent_v2", lambda tf, y, x: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=y, logits=x), (SOFT, X), lambda y, x: -np.sum(y * _log_softmax(x), 1), (0, 1)),
    C("nn_softmax_xent_axis0", lambda tf, y, x: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=y, logits=x, axis=0), (SOFT0, X),
      lambda y, x: -np.sum(y * _log_softmax(x, 0), 0), (0, 1)),
    C("nn_sparse_softmax_xent", lambda tf, i, x: _sse(tf, i, x), (LABELS, X),
      lambda i, x: -_log_softmax(x)[np.arange(3), i], (1,)),
    C("nn_sparse_softmax_xent_3d", lambda tf, i, x: _sse(tf, i, x),
      (LABELS.reshape(1, 3), X.reshape(1, 3, 4)),
      lambda i, x: -_log_softmax(x)[0, np.arange(3), i[0]][None], (1,)),
    C("nn_sigmoid_xent", lambda tf, z, x: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=z, logits=x), (PROB, WIDE), _sigmoid_xent, (0, 1)),
    C("nn_l2_normalize", lambda tf, x: tf.nn.l2_normalize(x, axis=1), (X,),
      lambda x: x / np.sqrt(np.sum(x * x, 1, keepdims=True)), (0,)),
    C("nn_l2_normalize_all", lambda tf, x: tf.nn.l2_normalize(x), (X,),
      lambda x: x / np.sqrt(np.sum(x * x)), (0,)),
    C("nn_moments", lambda tf, x: list(tf.nn.moments(x, axes=[0])), (X,),
      lambda x: [x.mean(0), x.var(0)], (0,)),
    C("nn_moments_keep_dims", lambda tf, x: list(tf.nn.moments(x, [0, 1], keep_dims=True)),
      (X,), lambda x: [x.mean(keepdims=True), x.var(keepdims=True)], (0,)),
    C("nn_dropout_keep_all", lambda tf, x: tf.nn.dropout(x, keep_prob=1.0), (X,),
      lambda x: x, (0,)),
    # ---- tf.losses -----------------------------------------------------------------------------
    L("losses_mse", lambda tf, y, p: tf.losses.mean_squared_error(y, p), (Y, X),
      lambda y, p: np.mean((p - y) ** 2), (0, 1)),
    L("losses_mse_weights", lambda tf, y, p, w: tf.losses.mean_squared_error(y, p, w),
      (Y, X, WEIGHTS), lambda y, p, w: _nonzero_mean((p - y) ** 2, w), (0, 1)),
    L("losses_mse_sum", lambda tf, y, p: tf.losses.mean_squared_error(
        y, p, reduction=tf.losses.Reduction.SUM), (Y, X), lambda y, p: np.sum((p - y) ** 2),
      (0, 1)),
    L("losses_mse_mean", lambda tf, y, p, w: tf.losses.mean_squared_error(
        y, p, w, reduction=tf.losses.Reduction.MEAN), (Y, X, WEIGHTS),
      lambda y, p, w: np.sum(w * (p - y) ** 2) / np.sum(w), (0, 1, 2)),
    L("losses_mse_none", lambda tf, y, p: tf.losses.mean_squared_error(
        y, p, reduction=tf.losses.Reduction.NONE), (Y, X), lambda y, p: (p - y) ** 2, (0, 1)),
    L("losses_mse_over_batch", lambda tf, y, p, w: tf.losses.mean_squared_error(
        y, p, w, reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE), (Y, X, WEIGHTS),
      lambda y, p, w: np.sum(w * (p - y) ** 2) / 12, (0, 1, 2)),
    L("losses_absolute_difference", lambda tf, y, p: tf.losses.absolute_difference(y, p),
      (Y, X), lambda y, p: np.mean(np.abs(p - y)), (0, 1)),
    L("losses_huber", lambda tf, y, p: tf.losses.huber_loss(y, p), (np.zeros((3, 4)), HUBER_P),
      lambda y, p: np.mean(_huber(p - y)), (1,)),
    L("losses_huber_delta", lambda tf, y, p: tf.losses.huber_loss(y, p, delta=0.5),
      (np.zeros((3, 4)), HUBER_P), lambda y, p: np.mean(_huber(p - y, 0.5)), (1,)),
    L("losses_log_loss", lambda tf, y, p: tf.losses.log_loss(y, p), (BITS * 1.0, PROB),
      lambda y, p: np.mean(-y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7)), (1,)),
    L("losses_sigmoid_xent", lambda tf, z, x: tf.losses.sigmoid_cross_entropy(
        z, x, label_smoothing=0.1), (BITS * 1.0, X),
      lambda z, x: np.mean(_sigmoid_xent(z * 0.9 + 0.05, x)), (1,)),
    L("losses_softmax_xent", lambda tf, y, x: tf.losses.softmax_cross_entropy(
        y, x, label_smoothing=0.2), (ONEHOT, X),
      lambda y, x: np.mean(-np.sum((y * 0.8 + 0.05) * _log_softmax(x), 1)), (1,)),
    L("losses_sparse_softmax_xent", lambda tf, i, x, w: tf.losses.sparse_softmax_cross_entropy(
        i, x, weights=w), (LABELS, X, np.array([1.0, 0.0, 2.0])),
      lambda i, x, w: _nonzero_mean(-_log_softmax(x)[np.arange(3), i], w), (1,)),
]

CASES_BY_NAME = {c.name: c for c in CASES}


# ---- dtypes: fed, fetched, compared -------------------------------------------------------------
def _dtype_value(name):
    return {"int8": np.array([-3, 7], np.int8), "int16": np.array([300, -2], np.int16),
            "int32": np.array([1, 2], np.int32), "int64": np.array([2 ** 40, -1], np.int64),
            "uint8": np.array([0, 255], np.uint8), "float16": np.array([0.5, -2.0], np.float16),
            "float32": np.array([0.25, 3.0], np.float32),
            "float64": np.array([0.1, -7.5]), "bool": np.array([True, False]),
            "string": np.array([b"hello", b"fastgraph"]),
            "complex64": np.array([1 + 2j, -1j], np.complex64),
            "complex128": np.array([0.5 - 1j, 2 + 0j])}[name]


DTYPE_NAMES = ("int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64",
               "bool", "string", "complex64", "complex128")


def dtype_program(tf, name):
    """A placeholder of each TensorFlow dtype: fed, fetched, compared with a constant."""
    value = _dtype_value(name)
    dt = getattr(tf, name)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(dt, shape=[2])
        c = tf.constant(value[:1], dtype=dt)
        eq = tf.equal(x, c)
        with tf.Session(graph=g) as sess:
            got, same = sess.run([x, eq], {x: value})
    return [np.asarray(got), np.asarray(same)]


# ---- optimizers, step for step ------------------------------------------------------------------
OPTIMIZERS = {
    "GradientDescent": lambda tf: tf.train.GradientDescentOptimizer(0.1),
    "Momentum": lambda tf: tf.train.MomentumOptimizer(0.05, momentum=0.9),
    "MomentumNesterov": lambda tf: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "Adam": lambda tf: tf.train.AdamOptimizer(0.05),
    "AdamBetas": lambda tf: tf.train.AdamOptimizer(learning_rate=0.02, beta1=0.5, beta2=0.9,
                                                   epsilon=1e-3),
    "RMSProp": lambda tf: tf.train.RMSPropOptimizer(0.01),
    "RMSPropMomentum": lambda tf: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5,
                                                            epsilon=1e-4),
    "RMSPropCentered": lambda tf: tf.train.RMSPropOptimizer(0.01, momentum=0.3, centered=True),
    "Adagrad": lambda tf: tf.train.AdagradOptimizer(0.1),
    "AdagradInitial": lambda tf: tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.5),
    "Adadelta": lambda tf: tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
}
OPT_STEPS = 5
_OPT_X = _rng.standard_normal((8, 3))
_OPT_Y = _rng.standard_normal((8, 2))
_OPT_W = _rng.standard_normal((3, 2)) * 0.5
_OPT_B = np.array([0.1, -0.2])


def optimizer_program(tf, name, dtype=np.float64):
    """Linear least squares, ``OPT_STEPS`` steps of optimizer ``name`` with a global step:
    the weights after each step, then the global step."""
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(_OPT_X.astype(dtype))
        y = tf.constant(_OPT_Y.astype(dtype))
        w = tf.Variable(_OPT_W.astype(dtype), name="w")
        b = tf.Variable(_OPT_B.astype(dtype), name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        step = tf.train.get_or_create_global_step()
        train = OPTIMIZERS[name](tf).minimize(loss, global_step=step)
        out = []
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(OPT_STEPS):
                sess.run(train)
                out += [np.asarray(v) for v in sess.run([w, b])]
            out.append(np.asarray(sess.run(step)))
    return out


# ---- the classic TensorFlow 1 tutorial programs ----------------------------------------------------
def hello_world(tf):
    hello = tf.constant("Hello, TensorFlow!")
    with tf.Session() as sess:
        return [sess.run(hello)]


def basic_operations(tf):
    a = tf.constant(2)
    b = tf.constant(3)
    out = []
    with tf.Session() as sess:
        out += [sess.run(a + b), sess.run(a * b)]
    a = tf.placeholder(tf.int16)
    b = tf.placeholder(tf.int16)
    add = tf.add(a, b)
    mul = tf.multiply(a, b)
    with tf.Session() as sess:
        out += [sess.run(add, feed_dict={a: 2, b: 3}), sess.run(mul, feed_dict={a: 2, b: 3})]
    matrix1 = tf.constant([[3., 3.]])
    matrix2 = tf.constant([[2.], [2.]])
    product = tf.matmul(matrix1, matrix2)
    with tf.Session() as sess:
        out.append(sess.run(product))
    return out


def linear_regression(tf):
    train_X = np.asarray([3.3, 4.4, 5.5, 6.71, 6.93, 4.168, 9.779, 6.182, 7.59, 2.167,
                          7.042, 10.791, 5.313, 7.997, 5.654, 9.27, 3.1])
    train_Y = np.asarray([1.7, 2.76, 2.09, 3.19, 1.694, 1.573, 3.366, 2.596, 2.53, 1.221,
                          2.827, 3.465, 1.65, 2.904, 2.42, 2.94, 1.3])
    n_samples = train_X.shape[0]
    X = tf.placeholder("float")
    Y = tf.placeholder("float")
    W = tf.Variable(0.3, name="weight")
    b = tf.Variable(-0.2, name="bias")
    pred = tf.add(tf.multiply(X, W), b)
    cost = tf.reduce_sum(tf.pow(pred - Y, 2)) / (2 * n_samples)
    optimizer = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    init = tf.global_variables_initializer()
    with tf.Session() as sess:
        sess.run(init)
        for epoch in range(20):
            for (x, y) in zip(train_X, train_Y):
                sess.run(optimizer, feed_dict={X: x, Y: y})
        training_cost = sess.run(cost, feed_dict={X: train_X, Y: train_Y})
        return [training_cost, sess.run(W), sess.run(b)]


_LOGREG_X = _rng.standard_normal((64, 5)).astype(np.float32)
_LOGREG_Y = np.eye(3, dtype=np.float32)[np.argmax(_LOGREG_X[:, :3] + 0.3 * _LOGREG_X[:, 3:4],
                                                  axis=1)]


def logistic_regression(tf):
    x = tf.placeholder(tf.float32, [None, 5])
    y = tf.placeholder(tf.float32, [None, 3])
    W = tf.Variable(tf.zeros([5, 3]))
    b = tf.Variable(tf.zeros([3]))
    pred = tf.nn.softmax(tf.matmul(x, W) + b)
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), reduction_indices=1))
    optimizer = tf.train.GradientDescentOptimizer(0.5).minimize(cost)
    correct = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        costs = []
        for epoch in range(25):
            for i in range(0, 64, 16):
                _, c = sess.run([optimizer, cost], feed_dict={x: _LOGREG_X[i:i + 16],
                                                              y: _LOGREG_Y[i:i + 16]})
            costs.append(c)
        return [np.array(costs), accuracy.eval({x: _LOGREG_X, y: _LOGREG_Y})]


_MLP_W = {"h1": _rng.standard_normal((5, 8)).astype(np.float32) * 0.5,
          "h2": _rng.standard_normal((8, 8)).astype(np.float32) * 0.5,
          "out": _rng.standard_normal((8, 3)).astype(np.float32) * 0.5}
_MLP_B = {"b1": np.zeros(8, np.float32), "b2": np.zeros(8, np.float32),
          "out": np.zeros(3, np.float32)}


def multilayer_perceptron(tf):
    X = tf.placeholder("float", [None, 5])
    Y = tf.placeholder("float", [None, 3])
    weights = {k: tf.Variable(v) for k, v in _MLP_W.items()}
    biases = {k: tf.Variable(v) for k, v in _MLP_B.items()}

    def net(x):
        layer_1 = tf.add(tf.matmul(x, weights["h1"]), biases["b1"])
        layer_2 = tf.add(tf.matmul(layer_1, weights["h2"]), biases["b2"])
        return tf.matmul(layer_2, weights["out"]) + biases["out"]

    logits = net(X)
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
    train_op = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss_op)
    correct_pred = tf.equal(tf.argmax(logits, 1), tf.argmax(Y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
    init = tf.global_variables_initializer()
    with tf.Session() as sess:
        sess.run(init)
        losses = []
        for step in range(30):
            _, loss = sess.run([train_op, loss_op], feed_dict={X: _LOGREG_X, Y: _LOGREG_Y})
            losses.append(loss)
        return [np.array(losses), sess.run(accuracy, feed_dict={X: _LOGREG_X, Y: _LOGREG_Y})]


_AE_X = _rng.uniform(0, 1, (32, 6)).astype(np.float32)
_AE_W = {"encoder_h1": _rng.standard_normal((6, 4)).astype(np.float32) * 0.3,
         "encoder_h2": _rng.standard_normal((4, 2)).astype(np.float32) * 0.3,
         "decoder_h1": _rng.standard_normal((2, 4)).astype(np.float32) * 0.3,
         "decoder_h2": _rng.standard_normal((4, 6)).astype(np.float32) * 0.3}


def autoencoder(tf):
    X = tf.placeholder("float", [None, 6])
    weights = {k: tf.Variable(v) for k, v in _AE_W.items()}
    biases = {k: tf.Variable(tf.zeros([v.shape[1]])) for k, v in _AE_W.items()}

    def layer(x, name):
        return tf.nn.sigmoid(tf.add(tf.matmul(x, weights[name]), biases[name]))

    decoder_op = layer(layer(layer(layer(X, "encoder_h1"), "encoder_h2"), "decoder_h1"),
                       "decoder_h2")
    loss = tf.reduce_mean(tf.pow(X - decoder_op, 2))
    optimizer = tf.train.RMSPropOptimizer(0.01).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([optimizer, loss], feed_dict={X: _AE_X})[1] for _ in range(30)]
        return [np.array(losses), sess.run(decoder_op, feed_dict={X: _AE_X[:2]})]


_NN_TRAIN = _rng.standard_normal((20, 4)).astype(np.float32)
_NN_LABELS = np.eye(3, dtype=np.float32)[_rng.integers(0, 3, 20)]
_NN_TEST = _NN_TRAIN[[3, 11, 17]] + 0.01


def nearest_neighbor(tf):
    xtr = tf.placeholder("float", [None, 4])
    xte = tf.placeholder("float", [4])
    distance = tf.reduce_sum(tf.abs(tf.add(xtr, tf.negative(xte))), reduction_indices=1)
    pred = tf.arg_min(distance, 0)
    found = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(len(_NN_TEST)):
            nn_index = sess.run(pred, feed_dict={xtr: _NN_TRAIN, xte: _NN_TEST[i, :]})
            found.append(np.argmax(_NN_LABELS[nn_index]))
    return [np.array(found)]


PROGRAMS = {"hello_world": hello_world, "basic_operations": basic_operations,
            "linear_regression": linear_regression, "logistic_regression": logistic_regression,
            "multilayer_perceptron": multilayer_perceptron, "autoencoder": autoencoder,
            "nearest_neighbor": nearest_neighbor}


# ---- evaluating a case ----------------------------------------------------------------------------
def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def run_case(tf, case: TFCase, inputs=None, grads=True):
    """``(values, gradients)`` of ``case`` built with module ``tf`` in a graph of its own;
    ``gradients`` holds one array per index of ``case.grad`` (``None`` where the graph has no
    gradient)."""
    inputs = case.inputs if inputs is None else inputs
    g = tf.Graph()
    with g.as_default():
        shapes = case.shapes or tuple(np.shape(a) for a in inputs)
        phs = [tf.placeholder(np.asarray(a).dtype, s) for a, s in zip(inputs, shapes)]
        outs = as_list(case.build(tf, *phs))
        fetch = list(outs)
        wanted = list(case.grad) if grads else []
        if wanted:
            gs = tf.gradients(tf.reduce_sum(outs[0]), [phs[i] for i in wanted])
            present = [i for i, gr in zip(wanted, gs) if gr is not None]
            fetch += [gr for gr in gs if gr is not None]
        with tf.Session(graph=g) as sess:
            res = sess.run(fetch, dict(zip(phs, inputs)))
    values = [np.asarray(v) for v in res[:len(outs)]]
    grad_values = {}
    if wanted:
        for i, v in zip(present, res[len(outs):]):
            grad_values[i] = np.asarray(v)
    return values, [grad_values.get(i) for i in wanted]


def _tensorflow_results(path) -> None:
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        sys.exit(3)
    tf.disable_eager_execution()
    out = {}
    for case in CASES:
        values, grads = run_case(tf, case)
        for k, v in enumerate(values):
            out[f"case/{case.name}/value/{k}"] = v
        for i, v in zip(case.grad, grads):
            if v is not None:
                out[f"case/{case.name}/grad/{i}"] = v
    for name in DTYPE_NAMES:
        for k, v in enumerate(dtype_program(tf, name)):
            out[f"dtype/{name}/{k}"] = v
    for name in OPTIMIZERS:
        for dt in (np.float32, np.float64):
            for k, v in enumerate(optimizer_program(tf, name, dt)):
                out[f"opt/{name}/{np.dtype(dt).name}/{k}"] = v
    for name, program in PROGRAMS.items():
        tf.reset_default_graph()
        for k, v in enumerate(program(tf)):
            out[f"program/{name}/{k}"] = np.asarray(v)
    np.savez(path, **{k: _plain(v) for k, v in out.items()})


def _plain(value):
    """``value`` as an array ``np.load`` reads without pickle: TensorFlow fetches strings as
    object arrays of bytes, stored here as NumPy's bytes dtype."""
    arr = np.asarray(value)
    return np.array(arr.tolist(), dtype=np.bytes_) if arr.dtype == object else arr


if __name__ == "__main__":
    _tensorflow_results(sys.argv[1])
