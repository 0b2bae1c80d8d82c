"""NumPy's dispatch protocols for ``Tensor``: ``np.exp(t)``, ``np.sum(t, axis=0)``, ``a @ t``...

A NumPy ufunc or function with a fastgraph op of the same meaning is routed to that op (so it is
recorded exactly like ``fg.exp``); anything else runs on the plain arrays and returns NumPy values.
"""
from __future__ import annotations

import inspect

import numpy as np

from .. import ops as F
from .tensor import Tensor

# ufunc name -> fastgraph function (NumPy's names, with the few spellings that differ)
UFUNCS = {name: getattr(F, name) for name in (
    "add subtract multiply divide power negative exp expm1 log log1p sqrt square reciprocal sin "
    "cos tan tanh sinh cosh arctan maximum minimum sign floor ceil floor_divide less less_equal "
    "greater greater_equal equal not_equal logical_and logical_or logical_not isfinite matmul"
).split()}
UFUNCS.update({"absolute": F.abs, "true_divide": F.divide, "fabs": F.abs})

FUNCTIONS = {getattr(np, name): getattr(F, name) for name in (
    "sum mean prod max min var std reshape transpose swapaxes expand_dims squeeze broadcast_to "
    "concatenate stack split ravel where clip dot outer einsum matmul abs"
).split()}
FUNCTIONS.update({np.amax: F.max, np.amin: F.min, np.linalg.inv: F.inv, np.linalg.solve: F.solve,
                  np.linalg.det: F.det, np.linalg.slogdet: F.slogdet})


def _unwrap(x):
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    return x


def array_ufunc(ufunc, method, inputs, kwargs):
    fn = UFUNCS.get(ufunc.__name__)
    if fn is not None and method == "__call__" and not kwargs:
        return fn(*inputs)
    # not differentiable here (out=, reduce, accumulate, at...): compute on plain arrays; a
    # Tensor written in place (out=, or the first operand of ufunc.at) is checked first and its
    # version bumped after, so a tape that saved it refuses to use the new values
    written = []
    out = kwargs.get("out")
    if out is not None:
        kwargs = dict(kwargs, out=tuple(_unwrap(o) for o in out))
        for o in out:
            if isinstance(o, Tensor):
                o._check_inplace(f"np.{ufunc.__name__}(out=...)")
                written.append(o)
    if method == "at" and inputs and isinstance(inputs[0], Tensor):
        inputs[0]._check_inplace(f"np.{ufunc.__name__}.at")
        written.append(inputs[0])
    if not written:
        return getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
    try:
        result = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
    except FloatingPointError:  # (np.errstate 'raise': reported after writing)
        for o in written:
            o._bump_version()
        raise
    for o in written:
        o._bump_version()
    if out is not None:  # NumPy returns the out arrays: hand back the Tensors given (and
        # NumPy's own result where an output slot was None: np.divmod(a, b, out=(t, None)))
        if not isinstance(result, tuple):
            return out[0] if out[0] is not None else result
        return tuple(o if o is not None else r for o, r in zip(out, result))
    return result


_SIGNATURES: dict = {}


def _takes(fn, args, kwargs) -> bool:
    """Whether fastgraph's ``fn`` takes these arguments (NumPy's forms it does not take --
    ``dtype=``, ``out=``, one-argument ``where`` -- run as plain NumPy instead).  Checked by
    binding the signature, so a ``TypeError`` raised *inside* the op still reaches the user."""
    sig = _SIGNATURES.get(fn)
    if sig is None:
        sig = _SIGNATURES[fn] = inspect.signature(fn)
    try:
        sig.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def array_function(func, types, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is not None and _takes(fn, args, kwargs):
        return fn(*args, **kwargs)
    return func(*_unwrap(args), **_unwrap_kwargs(kwargs))


def _unwrap_kwargs(kwargs):
    return {k: _unwrap(v) for k, v in kwargs.items()}
