"""The process world the collectives of ``fastgraph.distributed`` run over: MPI's
``COMM_WORLD`` (through ``mpi4py``) when the process was started by an MPI launcher, else a
world of one process that needs no MPI at all.

A script run alone (``python train.py``) is a world of size 1 whether or not ``mpi4py`` is
installed: every collective is then the identity and nothing is imported.  Under ``mpirun`` the
world is MPI's; ``mpi4py`` is imported on first use.  Started by ``mpirun -n 2`` without
``mpi4py`` installed, the first use raises instead of letting each process train alone.

Before each collective the ranks exchange a short description of their arguments (the op, the
shape, the dtype) so that a mismatch raises on every rank, naming every rank's argument, instead
of MPI reading a wrong-sized buffer; :func:`set_checks` turns that exchange off.

    >>> w = world()
    >>> w.size >= 1 and 0 <= w.rank < w.size
    True
"""
from __future__ import annotations

import os
import threading

import numpy as np

__all__ = ["World", "world", "launched_size", "set_checks", "checks_enabled",
           "CollectiveMismatchError", "check_arguments", "probing", "mpi4py_available"]

#: environment variables MPI launchers set in each process they start, with the world's size
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE",
              "MPI_LOCALNRANKS")
_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                    "PMI_LOCAL_RANK")
#: set by Open MPI's and PMIx launchers even where the size variables are not
_LAUNCH_VARS = _SIZE_VARS + ("PMIX_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK")


class CollectiveMismatchError(ValueError):
    """The ranks called a collective with arguments that do not match (shapes, dtypes, the op,
    the root): raised on every rank, naming each rank's argument."""


def launched_size() -> int | None:
    """The world size an MPI launcher announced in the environment, or None (not launched
    by one)."""
    for var in _SIZE_VARS:
        v = os.environ.get(var)
        if v:
            try:
                return int(v)
            except ValueError:
                continue
    if any(os.environ.get(v) for v in _LAUNCH_VARS):
        return 1
    return None


def mpi4py_available() -> bool:
    """Whether ``mpi4py`` can be imported (without importing it, which starts MPI)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


class World:
    """The processes a job runs on: ``rank``, ``size``, ``local_rank`` (the rank among the
    processes of this machine) and ``comm`` (mpi4py's communicator, or None for a world of one
    process without MPI); ``MPI`` is the ``mpi4py.MPI`` module or None."""
    __slots__ = ("comm", "MPI", "rank", "size", "local_rank")

    def __init__(self, comm=None, MPI=None):
        self.comm, self.MPI = comm, MPI
        if comm is None:
            self.rank, self.size, self.local_rank = 0, 1, 0
        else:
            self.rank, self.size = comm.Get_rank(), comm.Get_size()
            self.local_rank = _local_rank(comm, MPI, self.rank)

    def __repr__(self) -> str:
        kind = "MPI" if self.comm is not None else "one process, no MPI"
        return f"World(rank={self.rank}, size={self.size}, {kind})"


def _local_rank(comm, MPI, rank) -> int:
    for var in _LOCAL_RANK_VARS:
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    # (a launcher that does not say: the rank among the processes sharing this node's memory)
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
    try:
        return local.Get_rank()
    finally:
        local.Free()


_lock = threading.Lock()
_world: World | None = None
_checks = os.environ.get("FASTGRAPH_MPI_CHECKS", "1") not in ("0", "false", "False", "no")


def world() -> World:
    """The world of this process (made on first call; see the module docstring)."""
    global _world
    w = _world
    if w is not None:
        return w
    with _lock:
        if _world is None:
            _world = _make_world()
        return _world


def _make_world() -> World:
    size = launched_size()
    if size is None:
        return World()
    try:
        from mpi4py import MPI
    except ImportError as e:
        if size > 1:
            raise RuntimeError(
                f"fastgraph.distributed: this process was started by an MPI launcher as one of "
                f"{size} processes, but mpi4py cannot be imported ({e}); install the extra: "
                f"pip install 'fastgraph[mpi]'") from None
        return World()
    # (errors are returned to Python as exceptions, which the job's fault handler turns into an
    # abort of every rank, instead of MPI's default of aborting with its own message)
    MPI.COMM_WORLD.Set_errhandler(MPI.ERRORS_RETURN)
    return World(MPI.COMM_WORLD, MPI)


def set_checks(enabled: bool) -> bool:
    """Turn the exchange of argument descriptions before each collective on or off (on by
    default; ``FASTGRAPH_MPI_CHECKS=0`` in the environment starts with it off).  Returns the
    previous setting.  Off, a mismatch between ranks is undefined behaviour of MPI's."""
    global _checks
    prev, _checks = _checks, bool(enabled)
    return prev


def checks_enabled() -> bool:
    return _checks


def describe(a) -> str:
    return f"{np.dtype(a.dtype).name} {tuple(a.shape)}"


def check_arguments(w: World, what: str, meta) -> None:
    """Exchange ``meta`` (a short picklable description of this rank's arguments) and raise
    :class:`CollectiveMismatchError` on every rank unless all ranks gave the same."""
    if w.comm is None or w.size == 1 or not _checks:
        return
    metas = w.comm.allgather(meta)
    if any(m != metas[0] for m in metas):
        each = ", ".join(f"rank {r}: {m}" for r, m in enumerate(metas))
        raise CollectiveMismatchError(
            f"{what}: the ranks' arguments do not match ({each}); every rank must call the "
            f"same collectives in the same order with the same shapes and dtypes (rank "
            f"{w.rank} of {w.size} raising)")


def probing() -> bool:
    """Whether this thread is running a stateful op on stand-in values (the static engine
    learning a result's dtype): a collective then communicates nothing."""
    from .random_state import _local
    return getattr(_local, "scratch", None) is not None
