"""Static shape rules shared by the op declarations (``None`` is an unknown dimension)."""
from __future__ import annotations

import operator
from typing import Optional, Sequence

import numpy as np
from numpy.exceptions import AxisError

Shape = tuple  # tuple[Optional[int], ...]


def broadcast(op: str, *shapes: Shape) -> Shape:
    """NumPy broadcasting of static shapes; ``ValueError`` naming the op and the shapes."""
    # the common cases first (graphs of 100,000 ops build through here): equal shapes, or one
    # shape against 0-d operands
    first = None
    for s in shapes:
        if s:
            if first is None:
                first = s
            elif s != first:
                break
    else:
        return tuple(first) if first is not None else ()
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        dim: Optional[int] = 1
        for s in shapes:
            if -i > len(s):
                continue
            d = s[i]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d is None:
                continue
            elif dim is None:
                dim = d
            elif d != dim:
                raise ValueError(
                    f"{op}: operands could not be broadcast together with shapes "
                    + " ".join(str(tuple(s)) for s in shapes))
        out.append(dim)
    return tuple(out)


def as_int(value, op: str, what: str = "axis") -> int:
    """``value`` as a Python int: Python and NumPy integers (and 0-d integer arrays) pass, as
    ``operator.index`` accepts them; floats and bools are a ``TypeError`` naming the op, as NumPy
    rejects them (truncating ``axis=1.7`` to 1 would be a silent wrong answer)."""
    if type(value) is int:  # the common case, first and cheap
        return value
    if not isinstance(value, (bool, np.bool_)):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{op}: {what} must be an integer, got {type(value).__name__} {value!r}")


def check_axis(axis, ndim: int, op: str = "op", shape=None) -> int:
    """One axis checked against ``ndim`` and made non-negative; ``AxisError`` (a ``ValueError``
    and an ``IndexError``, as NumPy raises) naming the op, the axis, ``ndim`` and, when given,
    the operand's ``shape``."""
    a = as_int(axis, op)
    if not -ndim <= a < ndim:
        where = "" if shape is None else f" (operand shape {tuple(shape)})"
        raise AxisError(f"{op}: axis {a} is out of bounds for array of dimension {ndim}{where}")
    return a + ndim if a < 0 else a


def normalize_axis(axis, ndim: int, op: str = "op", shape=None) -> tuple:
    """Axis (None, int or tuple) -> sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = [check_axis(a, ndim, op, shape) for a in axes]
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis}")
    return tuple(sorted(out))


def reduce(shapes: Sequence[Shape], axis=None, keepdims=False, op: str = "reduce", **_) -> Shape:
    (shape,) = shapes[:1]
    axes = normalize_axis(axis, len(shape), op, shape)
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def same_as_first(shapes: Sequence[Shape], **_) -> Shape:
    return tuple(shapes[0])


def scalar(shapes: Sequence[Shape], **_) -> Shape:
    return ()


def matmul(shapes: Sequence[Shape], op: str = "matmul", **_) -> Shape:
    a, b = shapes
    if len(a) == 0 or len(b) == 0:
        raise ValueError(f"{op}: input operand does not have enough dimensions "
                         f"(shapes {tuple(a)} and {tuple(b)})")
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    k1, k2 = a2[-1], b2[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"{op}: shapes {tuple(a)} and {tuple(b)} are not aligned "
                         f"({k1} (dim {len(a) - 1}) != {k2})")
    batch = broadcast(op, a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out
