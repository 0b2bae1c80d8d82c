"""``import fastgraph.numpy as np``: a drop-in NumPy namespace.

Every fastgraph operation is available under its NumPy name and is differentiable; any other name
(constants, ``linspace``, ``random``, dtypes, ...) is NumPy's own, unchanged, so existing scripts
keep working after changing only their import line.

An operation NumPy also has runs as NumPy's own function when no argument is an eager Tensor or
a graph Node: plain-array code then gets exactly NumPy's results and every NumPy keyword and form
(``np.where(cond)``, ``np.sum(a, dtype=...)``, ``out=``, ``order=``...), which the differentiable
versions do not all take.  With a Tensor or Node among the arguments the fastgraph operation runs.
"""
from __future__ import annotations

import functools as _functools
import types as _types
import sys as _sys

import numpy as _np

from . import ops as _ops
from ._core import namespace as _namespace
from ._core import holds_graph_value as _holds_graph_value
from .eager.numpy_protocols import numpy_call_to_fastgraph as _to_fastgraph
from .eager.numpy_protocols import positional_counts as _positional_counts
from . import linalg  # noqa: F401
from . import fft  # noqa: F401
from .static.node import NODE_TYPES as _NODE_TYPES

#: the declarations exported to ``fastgraph.numpy`` (NumPy's names, aliases included)
_VOCABULARY = _namespace("numpy")
__all__ = list(_VOCABULARY) + ["linalg", "fft", "array", "asarray"]


#: whether any of a tuple of values (or an item of a list, tuple or object array among them) is a
#: Tensor or a Node: the tape's own test of what it packs (a list that contains itself raises
#: NumPy's ValueError)
_graph_value_in = _holds_graph_value


def _node_in(values) -> bool:
    return any(type(v) in _NODE_TYPES for v in values)


def _numpy_for_plain_values(fg_fn, np_fn):
    is_ufunc = isinstance(np_fn, _np.ufunc)   # (same positional parameters as the op)
    # the positional counts that NumPy's call passes through unchanged (made on first need)
    counts = (0, -1)

    @_functools.wraps(fg_fn)
    def op(*args, **kwargs):
        nonlocal counts
        if args and isinstance(args[0], _types.GeneratorType):
            # autograd's np.concatenate(x for x in ...): read once, for both tests and the call
            args = (tuple(args[0]),) + args[1:]
        if _graph_value_in(args) or (kwargs and _graph_value_in(tuple(kwargs.values()))):
            if not kwargs:
                if is_ufunc or counts[0] <= len(args) <= counts[1]:
                    return fg_fn(*args)
                if counts[1] < 0:
                    counts = _positional_counts(np_fn, fg_fn)
                    if counts[0] <= len(args) <= counts[1]:
                        return fg_fn(*args)
            # NumPy's spellings and positions (np.sum(a=t), np.clip(t, min=0)) in fastgraph's
            call = _to_fastgraph(np_fn, fg_fn, args, kwargs)
            if call is not None:
                args, kwargs = call
            elif not _node_in(args) and not _node_in(kwargs.values()):
                # a form fastgraph does not take (np.reshape(t, s, "F")) or a call NumPy
                # refuses: NumPy's own function on the Tensors reports it (or runs it where no
                # gradient is lost)
                return np_fn(*args, **kwargs)
            return fg_fn(*args, **kwargs)
        return np_fn(*args, **kwargs)
    return op


def _export(name: str, fg_fn) -> None:
    np_fn = getattr(_np, name, None)
    globals()[name] = fg_fn if not callable(np_fn) else _numpy_for_plain_values(fg_fn, np_fn)


# only the declared vocabulary: ``fastgraph.ops`` also holds helpers and its submodules, whose
# names (``shape``, ``identity``) mean something else to NumPy
for _name, _fn in _VOCABULARY.items():
    _export(_name, _fn)
del _name, _fn


def array(object, dtype=None, *, copy: bool = True, **kwargs):
    """NumPy's ``np.array``; differentiable when ``object`` is, or (nested) holds, a Tensor or
    Node -- autograd's ``np.array([x, y])``.  Plain values get NumPy's own function.

        >>> t = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> v = np.array([t[0] * 3.0, t[1], 5.0])   # import fastgraph.numpy as np
        >>> np.sum(v).backward(); t.grad
        tensor([3., 1.])
    """
    if not _graph_value_in((object,)):
        return _np.array(object, dtype, copy=copy, **kwargs)
    if kwargs:
        raise TypeError(f"array: {', '.join(sorted(kwargs))} not supported for a Tensor or Node "
                        f"(only dtype= and copy=)")
    if copy is False:
        raise ValueError("array: copy=False cannot be honoured for a Tensor or Node (NumPy 2 "
                         "raises the same way when a copy is needed); use asarray")
    # (stack makes a new array; a Tensor or Node itself is copied)
    out = _stacked(object) if _is_sequence(object) else _ops.copy(object)
    return out if dtype is None else _ops.astype(out, dtype)


def asarray(a, dtype=None, **kwargs):
    """NumPy's ``np.asarray``; a Tensor or Node comes back as itself (cast when ``dtype``
    differs), and a list holding them is stacked into one, differentiably."""
    if not _graph_value_in((a,)):
        return _np.asarray(a, dtype, **kwargs)
    if kwargs:
        raise TypeError(f"asarray: {', '.join(sorted(kwargs))} not supported for a Tensor or "
                        f"Node (only dtype=)")
    out = _stacked(a) if _is_sequence(a) else a
    return out if dtype is None or _np.dtype(dtype) == out.dtype else _ops.astype(out, dtype)


def _is_sequence(v) -> bool:
    """A list, tuple or object array: what the tape packs (a Tensor or Node is one value)."""
    return isinstance(v, (list, tuple)) or (isinstance(v, _np.ndarray) and v.dtype == object)


def _stacked(seq):
    return _ops.stack(list(seq))




# ``import fastgraph.numpy.random as npr`` (autograd's ``import autograd.numpy.random as npr``),
# ``.linalg`` and ``.fft``: the modules ``np.random``, ``np.linalg`` and ``np.fft`` are here
for _name, _mod in (("random", _np.random), ("linalg", linalg), ("fft", fft)):
    _sys.modules.setdefault(f"{__name__}.{_name}", _mod)
del _name, _mod


def __getattr__(name: str):
    # everything fastgraph does not define is NumPy's -- but not ``__path__``: with NumPy's,
    # ``import fastgraph.numpy.linalg`` loaded a second copy of ``numpy.linalg`` over the
    # differentiable ``linalg`` (and ``.random`` a second ``numpy.random`` with its own seed)
    if name == "__path__":
        raise AttributeError(f"module {__name__!r} has no attribute '__path__'")
    return getattr(_np, name)


def __dir__():
    return sorted(set(globals()) | set(dir(_np)))
