"""``import fastgraph.compat.v1 as tf``: TensorFlow 1's namespace, with TensorFlow's meanings.

Where ``fastgraph``'s top level keeps NumPy's meaning of a name TensorFlow also uses
(``argmax``'s default axis, ``split`` with a list, ``shape``, ``matmul``'s keywords), this
namespace has TensorFlow's; and it has only TensorFlow's names.  As in TensorFlow 1's graph
mode, every operation gives a graph node: one whose inputs are all plain data (Python numbers,
lists, NumPy arrays) becomes a constant of the default graph, and Python numbers are
TensorFlow's dtypes (float32, int32) rather than NumPy's (float64, int64).  ``name=`` names the
node.  ``disable_eager_execution()`` and ``disable_v2_behavior()`` do nothing: fastgraph's
graphs are always graphs.

The operations are the declarations exported to ``"compat.v1"`` (generated from the registry);
the graph API (``placeholder``, ``Variable``, ``Session``...), ``train``, ``nn``, ``losses``
and the dtypes are added below.

    >>> import fastgraph.compat.v1 as tf
    >>> tf.disable_v2_behavior()
    >>> x = tf.placeholder(tf.float32, [None, 3])
    >>> y = tf.reduce_sum(tf.square(x), axis=1)
    >>> with tf.Session() as sess:
    ...     print(sess.run(y, {x: [[1, 2, 3]]}))
    [14.]
"""
from __future__ import annotations

import functools as _functools
import inspect as _inspect

import numpy as _np

from .. import ops as _ops
from .. import errors, layers, losses, nn, train  # noqa: F401  (TensorFlow's modules)
from .. import static as _static
from .._core import TF as _TF
from .._core import is_tensor as _is_tensor
from .._core import namespace as _namespace
from .._core.dtypes import TF_DTYPES as _TF_DTYPES
from .._core.dtypes import as_dtype
from .._core.naming import named as _named
from ..static import (Graph, InteractiveSession, Session, assign, assign_add, get_default_graph,
                      get_default_session, global_variables, global_variables_initializer,
                      gradients, group, name_scope, placeholder, reset_default_graph,
                      trainable_variables, variables_initializer)
from ..static.node import NODE_TYPES as _NODE_TYPES
from ..static.node import Node as Tensor
from ..static.node import register_node_type as _register_node_type
from ..static.random import get_seed, set_random_seed  # noqa: F401
from ..static.variables import source_array as _source_array

Operation = Tensor
_INT32 = _np.iinfo(_np.int32)


# ---- TensorFlow's dtypes for Python data -----------------------------------------------------
def _python_data(values) -> bool:
    """Whether ``values`` hold no NumPy array or scalar (only Python numbers, lists...)."""
    for v in values:
        if isinstance(v, (_np.ndarray, _np.generic)):
            return False
        if isinstance(v, (list, tuple)) and not _python_data(v):
            return False
    return True


def _tf_array(value, dtype=None):
    """``value`` as TensorFlow converts it: NumPy data keeps its dtype; Python floats are
    float32 and Python integers int32 (int64 when they do not fit), unless ``dtype`` says."""
    if dtype is not None or not _python_data((value,)):
        return _source_array(value, dtype)
    return _tf_dtyped(_source_array(value))


def _tf_dtyped(arr):
    """An array made from Python numbers, in the dtype TensorFlow gives them."""
    if arr.dtype == _np.float64:
        arr = arr.astype(_np.float32)
    elif arr.dtype == _np.int64 and (arr.size == 0 or (_INT32.min <= arr.min()
                                                       and arr.max() <= _INT32.max)):
        arr = arr.astype(_np.int32)
    else:
        return arr
    arr.flags.writeable = False
    return arr


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """A constant node (TensorFlow's ``tf.constant``: Python floats are float32, integers
    int32, strings bytes; ``shape`` fills a scalar, or the rest with the last value given).

        >>> tf.constant(2.0).dtype
        dtype('float32')
    """
    arr = _tf_array(value, dtype)
    if shape is not None:
        shape = tuple(int(d) for d in ([shape] if _np.ndim(shape) == 0 else shape))
        n = int(_np.prod(shape, dtype=_np.int64))
        if arr.shape != shape:
            if verify_shape:
                raise TypeError(f"constant: expected shape {shape}, got {arr.shape}")
            flat = arr.reshape(-1)
            if flat.size > n or flat.size == 0:
                raise ValueError(f"constant: cannot make a value of shape {shape} from "
                                 f"{arr.size} element(s)")
            arr = _np.concatenate([flat, _np.repeat(flat[-1:], n - flat.size)]).reshape(shape)
    return _static.constant(arr, name=name)


class Variable(_static.Variable):
    """A graph variable (TensorFlow 1's ``tf.Variable``: its arguments in their order, Python
    numbers as TensorFlow's dtypes).

        >>> W = tf.Variable(tf.zeros([784, 10]), name="W")
    """

    __slots__ = ()

    def __init__(self, initial_value=None, trainable=None, collections=None,
                 validate_shape=True, caching_device=None, name=None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, shape=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if constraint is not None or variable_def is not None:
            raise NotImplementedError("Variable: constraint and variable_def are not supported")
        if callable(initial_value):
            initial_value = initial_value()
        if type(initial_value) not in _NODE_TYPES and not _is_tensor(initial_value):
            initial_value = _tf_array(initial_value, dtype)
        super().__init__(initial_value, dtype=dtype, name=name,
                         trainable=True if trainable is None else trainable)


_register_node_type(Variable)


def _zeros_or_ones(fill_value, shape, dtype, name, what):
    dt = as_dtype(dtype)
    if type(shape) in _NODE_TYPES or (isinstance(shape, (list, tuple)) and any(
            type(d) in _NODE_TYPES for d in shape)):
        return _named(_ops.fill(shape, dt.type(fill_value)), name)
    if _np.ndim(shape) == 0:
        shape = (shape,)
    return _static.constant(_np.full(tuple(shape), fill_value, dt), name=name or what)


def zeros(shape, dtype=_np.float32, name=None):
    """Zeros of ``shape`` (float32 by default); ``shape`` may be a graph vector."""
    return _zeros_or_ones(0, shape, dtype, name, "zeros")


def ones(shape, dtype=_np.float32, name=None):
    """Ones of ``shape`` (float32 by default); ``shape`` may be a graph vector."""
    return _zeros_or_ones(1, shape, dtype, name, "ones")


def _like(fill_value, tensor, dtype, name):
    if type(tensor) not in _NODE_TYPES and not _is_tensor(tensor):
        tensor = constant(tensor)
    dt = as_dtype(dtype) if dtype is not None else tensor.dtype
    return _named(_ops.broadcast_like(_np.array(fill_value, dt), tensor), name)


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """Zeros shaped like ``tensor`` (its dtype unless ``dtype`` says)."""
    return _like(0, tensor, dtype, name)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """Ones shaped like ``tensor`` (its dtype unless ``dtype`` says)."""
    return _like(1, tensor, dtype, name)


def assign_sub(ref, value, use_locking=None, name=None):
    """``ref -= value`` when run (TensorFlow's ``tf.assign_sub``)."""
    return ref.assign_sub(value, name=name)


def no_op(name=None):
    """An operation that does nothing (TensorFlow's ``tf.no_op``)."""
    return group(name=name or "NoOp")


def initialize_all_variables():
    """TensorFlow's old name of :func:`global_variables_initializer`."""
    return global_variables_initializer()


def local_variables_initializer():
    """An operation initialising the local variables: fastgraph has none, so it does
    nothing."""
    return group(name="init_local")


def local_variables() -> list:
    """fastgraph keeps no local variables (TensorFlow's metric counters)."""
    return []


def disable_eager_execution() -> None:
    """A no-op: fastgraph's graphs are always graphs, and ``fg.Tensor`` is eager anyway."""


def disable_v2_behavior() -> None:
    """A no-op: this namespace is TensorFlow 1's behaviour."""


def enable_eager_execution(*args, **kwargs):
    raise NotImplementedError("enable_eager_execution: fastgraph's eager mode is its Tensor "
                              "(fg.tensor(...), as in PyTorch); this namespace builds graphs")


def executing_eagerly() -> bool:
    """False: this namespace builds graphs."""
    return False


# ---- the operations: graph nodes, even of plain data -----------------------------------------
def _engine_value(v) -> bool:
    return type(v) in _NODE_TYPES or _is_tensor(v)


def _as_graph(value, python_inputs, name):
    """A plain result as a constant, dtyped as TensorFlow would have computed it."""
    if isinstance(value, list):
        return [_as_graph(v, python_inputs, None) for v in value]
    if isinstance(value, tuple):
        return type(value)(*[_as_graph(v, python_inputs, None) for v in value]) \
            if hasattr(value, "_fields") else tuple(_as_graph(v, python_inputs, None)
                                                     for v in value)
    if _engine_value(value) or value is None:
        return value if name is None else _named(value, name)
    arr = _source_array(value)
    return _static.constant(_tf_dtyped(arr) if python_inputs else arr, name=name or "Const")


def _graph_face(fn):
    """TensorFlow's face of ``fn``: ``name=`` taken, a plain result made a graph constant."""
    try:
        params = _inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - every declaration has a signature
        params = {}
    takes_name = "name" in params

    @_functools.wraps(fn)
    def tf_op(*args, **kwargs):
        name = kwargs.get("name") if takes_name else kwargs.pop("name", None)
        out = fn(*args, **kwargs)
        if _engine_value(out):
            return out if takes_name else _named(out, name)
        if isinstance(out, (list, tuple)) and any(_engine_value(o) for o in out):
            return out
        values = list(args) + list(kwargs.values())
        return _as_graph(out, _python_data(values), name)
    return tf_op


for _name, _fn in _namespace(_TF).items():
    globals()[_name] = _graph_face(_fn)
del _name, _fn

def _tf_scalar(v):
    """A Python number as TensorFlow reads it (float32, int32); anything else unchanged."""
    return _tf_array(v)[()] if isinstance(v, (bool, int, float)) else v


_ops_fill, _ops_range = fill, range  # noqa: F821  (from the loop above)


@_functools.wraps(_ops_fill)
def fill(dims, value, name=None):
    return _ops_fill(dims, _tf_scalar(value), name=name)


@_functools.wraps(_ops_range)
def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    if limit is None:
        start, limit = 0, start
    return _ops_range(_tf_scalar(start), _tf_scalar(limit), _tf_scalar(delta), dtype=dtype,
                      name=name)


# TensorFlow's dtype names (tf.float32, tf.int16, tf.string, ...)
globals().update(_TF_DTYPES)

from .. import compat  # noqa: E402  (tf.compat.v1 inside this namespace too)


# ---- control flow: TensorFlow 1's signatures over fastgraph's graph operations ----------------
def _graph_tree(tree):
    """Plain data in ``tree`` as constants of the default graph (TensorFlow's dtypes), so that
    the control flow is a graph operation, as in TensorFlow 1, whatever it is given."""
    from .._core.tree import map_structure
    return map_structure(lambda v: v if type(v) in _NODE_TYPES or _is_tensor(v)
                         else _static.constant(_tf_array(v)), tree)


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None):
    """TensorFlow 1's ``tf.cond``: ``true_fn()`` if ``pred`` else ``false_fn()``, one graph
    operation (only the branch taken runs); a one-element list result is unpacked unless
    ``strict``.

        >>> x = tf.placeholder(tf.float32, ())
        >>> y = tf.cond(x > 0, lambda: x * 2.0, lambda: -x)
    """
    from ..bridge.control_flow import cond as _cond
    if true_fn is None or false_fn is None:
        raise TypeError("cond: true_fn and false_fn are required")
    out = _cond(_graph_tree(pred), true_fn, false_fn)
    if not strict and isinstance(out, (list, tuple)) and len(out) == 1:
        return out[0]
    return out


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """TensorFlow 1's ``tf.while_loop``: one graph operation, differentiable (reverse mode);
    a single loop variable comes back unpacked unless ``return_same_structure``.

        >>> i, x = tf.while_loop(lambda i, x: i < 10, lambda i, x: (i + 1, x * 2.0), [0, 1.0])
    """
    from ..bridge.control_flow import while_loop as _while_loop
    single = not isinstance(loop_vars, (list, tuple))
    vars_ = [loop_vars] if single else loop_vars
    out = _while_loop(cond, body, _graph_tree(vars_), maximum_iterations=maximum_iterations)
    if not back_prop:
        from .._core.tree import map_structure
        out = map_structure(_ops.stop_gradient, out)
    if (single or len(out) == 1) and not return_same_structure:
        return out[0]
    return out


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """TensorFlow 1's ``tf.scan``: ``a = fn(a, x)`` over the leading axis of ``elems``,
    returning every ``a`` stacked; without ``initializer`` the first element (the last with
    ``reverse``) starts it and is the first (last) result.  (fastgraph's top-level ``scan``
    is JAX's ``lax.scan``.)

        >>> xs = tf.constant([1.0, 2.0, 3.0])
        >>> sums = tf.scan(lambda a, x: a + x, xs)     # [1, 3, 6]
    """
    from .._core.tree import flatten
    from ..bridge.control_flow import scan as _scan
    elems = _graph_tree(elems)
    leaves: list = []
    rebuild = flatten(elems, leaves)
    first = None
    if initializer is None:
        k = -1 if reverse else 0
        first = [v[k] for v in leaves]
        initializer = rebuild(first)
        elems = rebuild([v[:-1] if reverse else v[1:] for v in leaves])
    _, ys = _scan(lambda a, x: (lambda new: (new, new))(fn(a, x)), _graph_tree(initializer),
                  elems, reverse=reverse)
    if first is not None:
        y_leaves: list = []
        rebuild_y = flatten(ys, y_leaves)
        parts = [(y, f[None]) for y, f in zip(y_leaves, first)]
        ys = rebuild_y([_ops.concatenate([f, y] if not reverse else [y, f], axis=0)
                        for y, f in parts])
    if not back_prop:
        from .._core.tree import map_structure
        ys = map_structure(_ops.stop_gradient, ys)
    return ys
