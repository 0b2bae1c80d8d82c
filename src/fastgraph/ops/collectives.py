"""Collectives across the processes of an MPI job (``fastgraph.distributed``), differentiable.

Every rank calls the same collective on an array of the same shape and dtype; the result is
the same on every rank.  Each op's VJP is the collective that carries the gradients back to
where the values came from (every rank differentiates its own copy of the result):

==================  =========================================  ===============================
op                  forward                                    VJP
==================  =========================================  ===============================
``allreduce``       sum (or mean) over the ranks               ``allreduce`` (same reduction)
``allgather``       the ranks' arrays concatenated on axis 0   ``reduce_scatter``
``reduce_scatter``  the sum over the ranks, this rank's block  ``allgather``
``broadcast``       the root's array on every rank             ``reduce`` to the root
``reduce``          the sum on the root, zeros elsewhere       ``broadcast`` from the root
==================  =========================================  ===============================

They are ``stateful`` for the static passes: never folded at compile time, never merged, a
new node on every application (each call is a communication every rank must make).  The
static engine's dtype probe runs them on stand-in values: they then communicate nothing.
"""
from __future__ import annotations

import numpy as np

from .._core import apply, defop
from .._core.comm import check_arguments, describe, probing, world
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
    check_arguments(w, what, (what, *attrs, describe(a)))
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
    w.comm.Allreduce(a, out, op=w.MPI.SUM)
    if reduce_op == "mean":
        # (the same division on every rank of the same sum: the ranks stay equal bit for bit)
        np.divide(out, w.size, out=out)
    return out


def _gather_shape(shape, size):
    if len(shape) == 0:
        return (size,)
    return ((None if shape[0] is None else shape[0] * size),) + tuple(shape[1:])


def _allgather(x):
    a = _as_buffer(x)
    w = world()
    flat = a.reshape((1,) + a.shape) if a.ndim == 0 else a
    if not _communicates(w, "allgather", a):
        return flat.copy()
    out = np.empty((w.size * flat.shape[0],) + flat.shape[1:], a.dtype)
    w.comm.Allgather(flat, out)
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
    w.comm.Reduce_scatter_block(a, out, op=w.MPI.SUM)
    return out


def _broadcast(x, root=0):
    a, w = _rooted("broadcast", x, root)
    if not _communicates(w, "broadcast", a, int(root)):
        return a.copy()
    out = a.copy() if w.rank == root else np.empty_like(a)
    w.comm.Bcast(out, root=root)
    return out


def _reduce(x, root=0):
    a, w = _rooted("reduce", x, root)
    if not _communicates(w, "reduce", a, int(root)):
        return a.copy()
    out = np.empty_like(a)
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
    """The ranks' ``x`` (the same shape on every rank) concatenated along the first axis, in
    rank order (0-d values become a vector of one per rank); its gradient is this rank's block of
    the summed gradients.

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
defop("allgather", _allgather, lambda g, ans, x: reduce_scatter(g).reshape(np.shape(x)),
      function=allgather, shape=lambda shapes: _gather_shape(shapes[0], world().size),
      **_FIELDS)
defop("reduce_scatter", _reduce_scatter, lambda g, ans, x: allgather(g), function=reduce_scatter,
      shape=lambda shapes: _scatter_shape(shapes[0], world().size), **_FIELDS)
defop("broadcast", _broadcast, lambda g, ans, x, root: reduce(g, root), function=broadcast,
      shape=_same, **_FIELDS)
defop("reduce", _reduce, lambda g, ans, x, root: broadcast(g, root), function=reduce,
      shape=_same, **_FIELDS)
