"""Sources and state: ``placeholder``, ``constant``, ``Variable``, ``assign``, ``group``."""
from __future__ import annotations

import numpy as np

from .. import ops as F
from .._core import is_tensor, shapes
from .._core.dtypes import as_dtype
from .graph import get_default_graph
from .node import (ASSIGN, CONST, GROUP, PLACEHOLDER, VARIABLE, NODE_TYPES, Node, _normalize_value,
                   as_node, register_node_type)

__all__ = ["placeholder", "constant", "Variable", "assign", "assign_add", "group",
           "global_variables_initializer", "variables_initializer", "trainable_variables",
           "global_variables"]


#: the dtype kinds graph sources hold: booleans, integers, floats, complex numbers and
#: TensorFlow's strings (bytes); only floats (and complex numbers) carry gradients
_SOURCE_KINDS = "biufcS"


def _dtype(dtype):
    """A dtype given to ``placeholder``, ``constant`` or ``Variable``, read as TensorFlow reads
    it (``"float"`` is float32, ``"string"`` bytes) and checked."""
    dt = as_dtype(dtype)
    if dt.kind not in _SOURCE_KINDS or (dt.kind == "f" and dt.itemsize not in (2, 4, 8)):
        raise TypeError(f"unsupported dtype {dtype!r} ({dt}); use bool, an integer, float16, "
                        f"float32, float64, complex64, complex128 or string")
    return dt


def source_array(value, dtype=None, what="constant"):
    """``value`` as the read-only array a graph source holds: ``np.array(value, dtype)``, with
    Python strings encoded as UTF-8 bytes (TensorFlow's strings)."""
    dt = None if dtype is None else _dtype(dtype)
    if dt is not None and dt.kind == "S":
        arr = _as_bytes(value)
    else:
        arr = np.array(value, dtype=dt)
        if arr.dtype.kind == "U":
            arr = _as_bytes(arr)
    if arr.dtype.kind not in _SOURCE_KINDS:
        raise TypeError(f"{what}: unsupported dtype {arr.dtype}")
    if dt is not None and dt.kind != "S" and arr.dtype != dt:   # (np.array(.., float16))
        arr = arr.astype(dt)
    arr.flags.writeable = False
    return arr


def _as_bytes(value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind == "U":
        return np.char.encode(arr, "utf-8")
    if arr.dtype.kind == "S":
        return np.array(arr)
    if arr.dtype.kind == "O" and all(isinstance(v, (str, bytes)) for v in arr.reshape(-1)):
        return np.array([v.encode("utf-8") if isinstance(v, str) else v
                         for v in arr.reshape(-1)], dtype="S").reshape(arr.shape)
    raise TypeError(f"cannot make a string value from {type(value).__name__} data of dtype "
                    f"{arr.dtype}")


def placeholder(dtype, shape=None, name=None) -> Node:
    """A value fed at run time: ``sess.run(y, feed_dict={x: value})``.

    ``shape`` may contain ``None`` for dimensions of unknown length; ``shape=None`` leaves the
    rank unknown too.
    """
    g = get_default_graph()
    if shape is not None:
        shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
        what = "placeholder" + ("" if name is None else f" {name!r}")
        try:
            shape = tuple(shape)
        except TypeError:
            raise TypeError(f"{what}: shape must be a sequence of integers or None, got "
                            f"{type(shape).__name__} {shape!r}") from None
        # (TensorFlow's rules: -1 is an unknown dimension too; floats are not truncated)
        shape = tuple(None if d == -1 else d
                      for d in shapes.check_dims(shape, what, unknown=(None, -1)))
    return Node(g, PLACEHOLDER, (), None, shape, _dtype(dtype),
                g.unique_name(name or "Placeholder"), kind="placeholder")


def constant(value, dtype=None, name=None) -> Node:
    """A constant node holding ``np.array(value, dtype)`` (Python floats -> float64; strings
    are TensorFlow's, UTF-8 bytes).

        >>> hello = fg.constant("Hello"); fg.Session().run(hello)
        b'Hello'
    """
    g = get_default_graph()
    if type(value) in NODE_TYPES:
        raise TypeError("constant: value must be data, not a Node")
    arr = source_array(value, dtype)
    return Node(g, CONST, (), None, arr.shape, arr.dtype, g.unique_name(name or "Const"),
                kind="const", value=_normalize_value(arr))


class Variable(Node):
    """A graph value kept in each ``Session`` (``v.initializer`` sets it to ``initial_value``).

        >>> v = fg.Variable(1.0); sess.run(v.initializer); sess.run(v.assign_add(2.0))
        3.0
    """

    __slots__ = ("initial_value", "initializer", "trainable", "var_index")

    def __init__(self, initial_value, dtype=None, name=None, trainable: bool = True):
        g = get_default_graph()
        if type(initial_value) in NODE_TYPES:
            init = initial_value if dtype is None else as_node(initial_value, g, _dtype(dtype))
            if init.graph is not g:
                raise ValueError("Variable: the initial value belongs to another graph")
            if init.shape is None or None in init.shape:
                raise ValueError(f"Variable: the initial value must have a fully known shape, "
                                 f"got {init.shape}")
        else:
            arr = source_array(initial_value._ndarray if is_tensor(initial_value)
                               else initial_value, dtype, "Variable")
            init = None
        vname = g.unique_name(name or "Variable")
        shape = init.shape if init is not None else arr.shape
        dt = init.dtype if init is not None else arr.dtype
        super().__init__(g, VARIABLE, (), None, tuple(shape), dt, vname, kind="variable")
        if init is None:
            init = Node(g, CONST, (), None, arr.shape, arr.dtype,
                        g.unique_name(vname + "/initial_value", False), kind="const",
                        value=_normalize_value(arr))
        self.initial_value = init
        self.trainable = bool(trainable)
        self.var_index = len(g.variables)
        g.variables.append(self)
        if self.trainable:
            g._trainable.append(self)
        # (vname already carries the name scope)
        self.initializer = _make_assign(self, init, vname + "/Assign", operation=True,
                                        scoped=False)

    def assign(self, value, name=None) -> Node:
        """A node that sets this variable to ``value`` when run (its value is the new value)."""
        return assign(self, value, name)

    def assign_add(self, delta, name=None) -> Node:
        """A node that adds ``delta`` to this variable when run (its value is the new value)."""
        return assign_add(self, delta, name)

    def assign_sub(self, delta, name=None) -> Node:
        """A node that subtracts ``delta`` from this variable when run (its value is the new
        value)."""
        if name is not None:
            return assign(self, self - delta, name)
        return _make_assign(self, self - delta, self.name + "/AssignSub", scoped=False)

    def __repr__(self) -> str:
        return f"<fg.Variable {self.name!r} shape={self.shape} dtype={self.dtype}>"


register_node_type(Variable)


def _make_assign(var: Variable, value, name: str, operation: bool = False,
                 scoped: bool = True) -> Node:
    g = var.graph
    value = as_node(value, g)
    if value.shape is not None:
        try:
            shapes.broadcast("assign", value.shape, var.shape)
        except ValueError:
            raise ValueError(f"assign: cannot assign a value of shape {value.shape} to variable "
                             f"{var.name!r} of shape {var.shape}") from None
        if len(value.shape) > len(var.shape) or any(
                a is not None and a != b and a != 1 for a, b in zip(value.shape[::-1],
                                                                  var.shape[::-1])):
            raise ValueError(f"assign: cannot assign a value of shape {value.shape} to variable "
                             f"{var.name!r} of shape {var.shape}")
    if value.dtype != var.dtype:
        if not np.can_cast(value.dtype, var.dtype, "same_kind") and not value.weak:
            raise TypeError(f"assign: cannot assign a value of dtype {value.dtype} to variable "
                            f"{var.name!r} of dtype {var.dtype}")
        value = F.astype(value, var.dtype)
    if value.shape != var.shape:
        value = F.broadcast_to(value, var.shape)
    return Node(g, ASSIGN, (value,), None, var.shape, var.dtype, g.unique_name(name, scoped),
                kind="assign", value=var, is_operation=operation)


def assign(var, value, name=None) -> Node:
    """``var = value`` when run; the node's value is the new value (``fg.assign(v, x)``)."""
    if not isinstance(var, Variable):
        raise TypeError(f"assign: the target must be a Variable, got {type(var).__name__}")
    return _make_assign(var, value, name or "Assign")


def assign_add(var, delta, name=None) -> Node:
    """``var += delta`` when run; the node's value is the new value."""
    if not isinstance(var, Variable):
        raise TypeError(f"assign_add: the target must be a Variable, got {type(var).__name__}")
    return _make_assign(var, var + delta, name or "AssignAdd")


def _flatten_ops(ops, out):
    for o in ops:
        if isinstance(o, (list, tuple)):
            _flatten_ops(o, out)
        elif o is not None:
            if type(o) not in NODE_TYPES:
                raise TypeError(f"group: expected graph nodes, got {type(o).__name__}")
            out.append(o)
    return out


def group(*ops, name=None) -> Node:
    """One operation that runs all of ``ops`` (its fetched value is ``None``)."""
    inputs = tuple(_flatten_ops(ops, []))
    g = inputs[0].graph if inputs else get_default_graph()
    for n in inputs:
        if n.graph is not g:
            raise ValueError(f"group: node {n.name!r} belongs to another graph")
    return Node(g, GROUP, inputs, None, None, None, g.unique_name(name or "group"),
                kind="group", is_operation=True)


def variables_initializer(var_list, name="init") -> Node:
    """One operation that initialises the variables in ``var_list``."""
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer() -> Node:
    """One operation that initialises every variable of the default graph (made so far)."""
    return variables_initializer(get_default_graph().variables)


def global_variables() -> list:
    return list(get_default_graph().variables)


def trainable_variables() -> list:
    """The default graph's variables created with ``trainable=True``, in creation order."""
    return list(get_default_graph()._trainable)
