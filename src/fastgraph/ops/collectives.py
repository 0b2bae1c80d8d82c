"""Collectives across the processes of an MPI job (``fastgraph.distributed``), differentiable.

Every rank calls the same collective on an array of the same shape and dtype (``allgather``:
the same but for the first axis); the result is the same on every rank.  Each op's VJP is the collective that carries the gradients back to
where the values came from (every rank differentiates its own copy of the result):

==================  =========================================  ===============================
op                  forward                                    VJP
==================  =========================================  ===============================
``allreduce``       sum (or mean) over the ranks               ``allreduce`` (same reduction)
``allgather``       the ranks' arrays concatenated on axis 0   this rank's rows of the sum
``reduce_scatter``  the sum over the ranks, this rank's block  ``allgather``
``broadcast``       the root's array on every rank             ``reduce`` to the root
``reduce``          the sum on the root, zeros elsewhere       ``broadcast`` from the root
==================  =========================================  ===============================

They are ``stateful`` for the static passes: never folded at compile time, never merged, a
new node on every application (each call is a communication every rank must make).  The
static engine's dtype probe runs them on stand-in values: they then communicate nothing.  Each
communication runs under the collectives' deadline (``_core.comm.guard``).
"""
from __future__ import annotations

import math

import numpy as np

from .._core import apply, defop
from .._core.comm import (check_arguments, checks_enabled, describe, exchange_rows, guard,
                          probing, world)
from .._core.registry import DISTRIBUTED

_REDUCTIONS = ("sum", "mean")


def _as_buffer(x):
    # (not np.ascontiguousarray alone: it makes a 0-d value 1-d)
    a = np.asarray(x)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _check_reduction(op):
    if op not in _REDUCTIONS:
        raise ValueError(f"allreduce: op must be one of {_REDUCTIONS}, not {op!r}")


def _rooted(what, x, root):
    """The buffer of ``x`` and the world, for a collective from or to rank ``root`` (checked
    to be one of the world's ranks)."""
    a = _as_buffer(x)
    w = world()
    if not isinstance(root, (int, np.integer)) or not 0 <= root < w.size:
        raise ValueError(f"{what}: root must be a rank in [0, {w.size}), not {root!r}")
    return a, w


def _communicates(w, what, a, *attrs) -> bool:
    """Whether this call of ``what`` talks to the other ranks: not while the static engine's
    dtype probe runs it, nor in a world of one process (the collective is then the identity).
    When it does, every rank is first checked to have called ``what`` with the same ``attrs``
    and an array of the same shape and dtype."""
    if probing() or w.size == 1:
        return False
    if checks_enabled():
        check_arguments(w, what, (what, *attrs, describe(a)), of=a)
    return True


def _allreduce(x, reduce_op="sum"):
    a = _as_buffer(x)
    if reduce_op == "mean" and a.dtype.kind not in "fc":
        raise TypeError(f"allreduce: op='mean' needs a floating-point or complex array, got "
                        f"{describe(a)} (use op='sum')")
    w = world()
    if not _communicates(w, "allreduce", a, reduce_op):
        return a.copy()
    out = np.empty_like(a)
    with guard(w, "allreduce", of=a):
        w.comm.Allreduce(a, out, op=w.MPI.SUM)
    if reduce_op == "mean":
        # (the same division on every rank of the same sum: the ranks stay equal bit for bit)
        np.divide(out, w.size, out=out)
    return out


def _gather_shape(shape, size):
    if len(shape) == 0:
        return (size,)
    # (the other ranks' first axes are known only when they run)
    first = shape[0] if size == 1 else None
    return (first,) + tuple(shape[1:])


def _rows(a) -> str:
    """An allgather's argument as the ranks must agree on it: the dtype and every axis but
    the first (``*``); a 0-d value is one row."""
    if a.ndim == 0:
        return describe(a)
    return f"{np.dtype(a.dtype).name} ({', '.join(['*'] + [str(n) for n in a.shape[1:]])}" + \
        ("," if a.ndim == 1 else "") + ")"


def _allgather(x):
    a = _as_buffer(x)
    w = world()
    flat = a.reshape((1,) + a.shape) if a.ndim == 0 else a
    if probing() or w.size == 1:
        return flat.copy()
    counts = exchange_rows(w, "allgather", lambda: ("allgather", _rows(a)), flat.shape[0], of=a)
    out = np.empty((sum(counts),) + flat.shape[1:], a.dtype)
    with guard(w, "allgather", of=a):
        if all(n == counts[0] for n in counts):
            w.comm.Allgather(flat, out)
        else:
            row = math.prod(flat.shape[1:])
            w.comm.Allgatherv(flat, [out, [n * row for n in counts]])
    return out


def _allgather_vjp_forward(g, x):
    """This rank's rows of the sum over the ranks of ``g`` (an allgather's cotangent, the same
    shape on every rank): as many as ``x``'s first axis (one for a 0-d ``x``, which gets its
    0-d share), the ranks' blocks in rank order."""
    a = _as_buffer(g)
    w = world()
    shape = np.shape(x)
    rows = 1 if len(shape) == 0 else shape[0]
    if a.ndim == 0:
        raise ValueError(f"allgather's gradient: needs an array of at least one dimension, got "
                         f"{describe(a)}")
    out_shape = () if len(shape) == 0 else (rows,) + a.shape[1:]
    if probing():
        return np.zeros(out_shape, a.dtype)
    if w.size == 1:
        return a.reshape(out_shape).copy()
    what = "allgather's gradient"
    counts = exchange_rows(w, what, lambda: (what, describe(a)), rows, of=a)
    if sum(counts) != a.shape[0]:
        raise ValueError(f"{what} ({describe(a)}): the ranks' rows ({counts}) do not add up to the gradient's "
                         f"first axis ({a.shape[0]})")
    out = np.empty(out_shape, a.dtype)
    row = math.prod(a.shape[1:])
    with guard(w, what, of=a):
        w.comm.Reduce_scatter(a, out, recvcounts=[n * row for n in counts], op=w.MPI.SUM)
    return out


def _scatter_shape(shape, size):
    if len(shape) == 0:
        raise ValueError("reduce_scatter: needs an array of at least one dimension")
    if shape[0] is not None and shape[0] % size:
        raise ValueError(f"reduce_scatter: the first axis ({shape[0]}) must divide into the "
                         f"{size} ranks' blocks")
    return ((None if shape[0] is None else shape[0] // size),) + tuple(shape[1:])


def _reduce_scatter(x):
    a = _as_buffer(x)
    w = world()
    block = _scatter_shape(a.shape, w.size)
    if not _communicates(w, "reduce_scatter", a):
        return a.reshape(block).copy()
    out = np.empty(block, a.dtype)
    with guard(w, "reduce_scatter", of=a):
        w.comm.Reduce_scatter_block(a, out, op=w.MPI.SUM)
    return out


def _broadcast(x, root=0):
    a, w = _rooted("broadcast", x, root)
    if not _communicates(w, "broadcast", a, int(root)):
        return a.copy()
    out = a.copy() if w.rank == root else np.empty_like(a)
    with guard(w, "broadcast", of=a):
        w.comm.Bcast(out, root=root)
    return out


def _reduce(x, root=0):
    a, w = _rooted("reduce", x, root)
    if not _communicates(w, "reduce", a, int(root)):
        return a.copy()
    out = np.empty_like(a)
    with guard(w, "reduce", of=a):
        w.comm.Reduce(a, out, op=w.MPI.SUM, root=root)
    if w.rank != root:
        out[...] = 0
    return out


def allreduce(x, op: str = "sum"):
    """The sum (``op="sum"``) or mean (``op="mean"``) of ``x`` over the ranks, on every rank;
    its gradient is the allreduce of the gradients.

        >>> import fastgraph.distributed as dist
        >>> dist.allreduce(np.array([1.0, 2.0]), op="mean")    # one process: the identity
        array([1., 2.])
    """
    _check_reduction(op)
    return apply(allreduce.op, (x,), {"reduce_op": op})


def allgather(x):
    """The ranks' ``x`` concatenated along the first axis, in rank order (Horovod's
    ``allgather``): the first axis may differ between the ranks, the dtype and the other axes
    must not (a mismatch raises :class:`CollectiveMismatchError` on every rank, naming each
    rank's argument); 0-d values become a vector of one per rank.  Its gradient is this rank's
    rows of the sum of the ranks' gradients.

        >>> dist.allgather(np.array([1.0, 2.0]))
        array([1., 2.])
    """
    return apply(allgather.op, (x,), None)


def reduce_scatter(x):
    """The sum of ``x`` over the ranks, cut along the first axis into one block per rank:
    this rank's block.  The first axis must be a multiple of the world size.

        >>> dist.reduce_scatter(np.array([1.0, 2.0]))
        array([1., 2.])
    """
    return apply(reduce_scatter.op, (x,), None)


def broadcast(x, root: int = 0):
    """Rank ``root``'s ``x`` on every rank (the same shape and dtype on every rank); its
    gradient, on the root, is the sum of every rank's gradient (zero elsewhere).

        >>> dist.broadcast(np.array([1.0, 2.0]), root=0)
        array([1., 2.])
    """
    return apply(broadcast.op, (x,), {"root": int(root)})


def reduce(x, root: int = 0):
    """The sum of ``x`` over the ranks on rank ``root``, zeros of its shape on the others
    (zeros, not MPI's undefined buffer, so that it is the exact adjoint of :func:`broadcast`).

        >>> dist.reduce(np.array([1.0, 2.0]), root=0)
        array([1., 2.])
    """
    return apply(reduce.op, (x,), {"root": int(root)})


def _same(shapes, **_):
    return shapes[0]


_FIELDS = dict(stateful=True, exports=(DISTRIBUTED,))

defop("allreduce", _allreduce, lambda g, ans, x, reduce_op: allreduce(g, reduce_op),
      function=allreduce, shape=_same, **_FIELDS)
_allgather_vjp = defop(
    "allgather_vjp", _allgather_vjp_forward, lambda g, ans, gin, x: allgather(g), None,
    shape=lambda shapes, **_: (() if len(shapes[1]) == 0
                               else (shapes[1][0],) + tuple(shapes[0][1:])),
    shape_only=(1,), stateful=True,
    doc="This rank's rows of the sum over the ranks of ``g``, as many as ``x``'s first axis "
        "(the gradient of ``allgather``).")
defop("allgather", _allgather, lambda g, ans, x: _allgather_vjp(g, x),
      function=allgather, shape=lambda shapes: _gather_shape(shapes[0], world().size),
      **_FIELDS)
defop("reduce_scatter", _reduce_scatter, lambda g, ans, x: allgather(g), function=reduce_scatter,
      shape=lambda shapes: _scatter_shape(shapes[0], world().size), **_FIELDS)
defop("broadcast", _broadcast, lambda g, ans, x, root: reduce(g, root), function=broadcast,
      shape=_same, **_FIELDS)
defop("reduce", _reduce, lambda g, ans, x, root: broadcast(g, root), function=reduce,
      shape=_same, **_FIELDS)
