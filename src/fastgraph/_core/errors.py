"""Errors every layer raises: an op's NumPy failure reworded to name the op and its operands,
and the error for mixing the values of two engines in one operation."""
from __future__ import annotations

import numpy as np

__all__ = ["MixedKindsError", "op_error", "complex_gradient_error"]


class MixedKindsError(TypeError):
    """An eager Tensor met a graph Node in one operation (the transforms catch it to retry a
    gradient symbolically inside an ``fg.function`` trace)."""


_WORDED = (ValueError, TypeError, IndexError, np.linalg.LinAlgError)


def _operand_kind(v) -> str:
    """A short description of an operand: its dtype, or its Python type."""
    if isinstance(v, (np.ndarray, np.generic)):
        return str(v.dtype)
    if isinstance(v, (bool, int, float, complex)):
        return f"{type(v).__name__} (Python scalar)"
    dtype = getattr(v, "dtype", None)     # (a Tensor, a graph Node)
    if isinstance(dtype, np.dtype):
        return str(dtype)
    return type(v).__name__


def _operand_shape(v) -> str:
    if isinstance(v, (np.ndarray, np.generic)):
        return str(tuple(v.shape))
    if isinstance(v, (bool, int, float, complex)):
        return "()"
    try:
        return str(np.shape(v))
    except Exception:
        return f"ragged {type(v).__name__}" if isinstance(v, (list, tuple)) else "?"


def _rebuild(e: BaseException, msg: str) -> BaseException:
    """An exception of ``e``'s kind carrying ``msg``: ``e``'s own type where it can be built from
    one message, else the nearest public base (NumPy's ufunc errors need more arguments)."""
    if type(e) in _WORDED:
        return type(e)(msg)
    try:
        new = type(e)(msg)
        if str(new) == msg:
            return new
    except Exception:
        pass
    for base in _WORDED:
        if isinstance(e, base):
            return base(msg)
    return TypeError(msg)


def op_error(op, values, attrs, e):
    """Reword a NumPy failure so it names the op and the operands' shapes and dtypes.  Never
    raises itself: whatever it cannot word is reported as a plain message (the caller chains
    the original exception)."""
    if not isinstance(e, _WORDED):
        return e
    try:
        if op.shape is not None and not isinstance(e, np.linalg.LinAlgError):
            try:  # the op's static shape rule words shape errors best
                shapes = [tuple(np.shape(v)) for v in values]
                op.shape(shapes, **(attrs or {}))
            except (ValueError, IndexError) as worded:
                if str(worded).startswith(op.name):
                    kinds = " and ".join(_operand_kind(v) for v in values)
                    where = " and ".join(str(s) for s in shapes)
                    return _rebuild(e, f"{worded} (operand shapes {where}; dtypes {kinds})")
            except Exception:
                pass
        kinds = " and ".join(_operand_kind(v) for v in values)
        where = " and ".join(_operand_shape(v) for v in values)
        msg = str(e)
        if msg.startswith(op.name + ":"):
            msg = msg[len(op.name) + 1:].strip()
        return _rebuild(e, f"{op.name}: {msg} (operand shapes {where}; dtypes {kinds})")
    except Exception:  # (a bug here must not hide the user's error)
        try:
            kinds = ", ".join(type(v).__name__ for v in values)
        except Exception:
            kinds = "?"
        return TypeError(f"{getattr(op, 'name', op)}: {e} (operand types {kinds})")


def complex_gradient_error(op, values) -> TypeError:
    """The error for differentiating an op whose VJP rules are not declared to hold for complex
    values (``OpDef.complex_vjps``) through a complex input or output: refused, rather than a
    gradient that would silently be wrong."""
    kinds = " and ".join(_operand_kind(v) for v in values)
    return TypeError(f"{op.name}: no gradient for complex values (operand dtypes {kinds}); "
                     f"differentiate through it in real dtypes, or split the value with "
                     f"fg.real and fg.imag first")
