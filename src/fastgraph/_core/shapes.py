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


def _is_mask(item) -> bool:
    return isinstance(item, np.ndarray) and item.dtype == bool


def _index_error(shape, message: str) -> ValueError:
    return ValueError(f"getitem: {message} (input shape {tuple(shape)})")


def _check_in_bounds(item, size, axis: int, shape) -> None:
    """NumPy's bounds check of an integer (array) index on a dimension of known ``size``."""
    if size is None or np.size(item) == 0:
        return
    for i in (np.max(item), np.min(item)):
        if not -size <= i < size:
            raise _index_error(shape, f"index {int(i)} is out of bounds for axis {axis} with "
                                      f"size {size}")


def indexed(shape: Shape, index: tuple) -> Shape:
    """The shape of ``x[index]`` for ``x`` of ``shape`` (``None``: unknown) and a canonical index
    (ints, slices, ``None``, ``Ellipsis``, integer and boolean arrays), by NumPy's rules: basic
    indices keep, cut or add dimensions; integer arrays, masks (as their ``nonzero()``) and, next
    to them, integers are broadcast together, and their shape takes the place of the first when
    they are adjacent, else goes first.  An integer array or a mask fixes its dimensions'
    length even where the indexed dimension is unknown; a slice of an unknown dimension is
    unknown.  ``ValueError`` (naming ``getitem`` and the shape) where NumPy raises on every
    array of this shape."""
    items = list(index)
    if sum(it is Ellipsis for it in items) > 1:
        raise _index_error(shape, "an index can only have a single ellipsis ('...')")
    used = sum(it.ndim if _is_mask(it) else 0 if it is None or it is Ellipsis else 1
               for it in items)
    if used > len(shape):
        raise _index_error(shape, f"too many indices for array: array is {len(shape)}-"
                                  f"dimensional, but {used} were indexed")
    if not any(it is Ellipsis for it in items):
        items.append(Ellipsis)
    advanced = any(isinstance(it, np.ndarray) for it in items)
    out: list = []
    broadcast_shapes, positions, bounds = [], [], []
    ADVANCED = object()
    dim = 0
    for k, it in enumerate(items):
        if it is Ellipsis:
            out.extend(shape[dim:dim + len(shape) - used])
            dim += len(shape) - used
        elif it is None:
            out.append(1)
        elif isinstance(it, slice):
            size = shape[dim]
            out.append(None if size is None else len(range(*it.indices(size))))
            dim += 1
        elif _is_mask(it):
            for ax, (size, m) in enumerate(zip(shape[dim:dim + it.ndim], it.shape)):
                if size is not None and size != m:
                    raise _index_error(shape, f"boolean index did not match indexed array "
                                              f"along axis {dim + ax}; size of axis is {size} "
                                              f"but size of corresponding boolean axis is {m}")
            dim += it.ndim
            broadcast_shapes.append((int(np.count_nonzero(it)),))
            positions.append(k)
            out.append(ADVANCED)
        else:   # an integer or an integer array
            bounds.append((it, shape[dim], dim))
            dim += 1
            if advanced:
                broadcast_shapes.append(np.shape(it))
                positions.append(k)
                out.append(ADVANCED)
    joint = ()
    if advanced:
        try:
            joint = tuple(np.broadcast_shapes(*broadcast_shapes))
        except ValueError:
            raise _index_error(shape, "shape mismatch: indexing arrays could not be broadcast "
                                      "together with shapes " + " ".join(
                                          str(s) for s in broadcast_shapes)) from None
    for it, size, axis in bounds:   # (NumPy checks no array's bounds when selecting nothing)
        if np.ndim(it) == 0 or 0 not in joint:
            _check_in_bounds(it, size, axis, shape)
    if not advanced:
        return tuple(out)
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    first = out.index(ADVANCED)
    rest = [d for d in out if d is not ADVANCED]
    return tuple(rest[:first] + list(joint) + rest[first:]) if adjacent else joint + tuple(rest)


def check_dims(dims, op: str, what: str = "shape", unknown: tuple = ()) -> tuple:
    """A shape given by the user as a tuple of Python ints, checked as TensorFlow checks it at
    build time: every entry an integer (``as_int``: no float is truncated, no bool counts) and
    non-negative, except the entries in ``unknown`` (``None``, ``-1``), which are kept.
    ``TypeError``/``ValueError`` naming ``op`` and the whole shape."""
    dims = tuple(dims)
    out = []
    for d in dims:
        if d is None and None in unknown:
            out.append(None)
            continue
        try:
            d = as_int(d, op, what)
        except TypeError:
            raise TypeError(f"{op}: {what} {dims!r} must hold integers"
                            + (" or None" if None in unknown else "")
                            + f", got {type(d).__name__} {d!r}") from None
        if d < 0 and d not in unknown:
            raise ValueError(f"{op}: {what} {dims!r} has the negative dimension {d}"
                             + (" (only -1 stands for an unknown one)" if -1 in unknown else ""))
        out.append(d)
    return tuple(out)
