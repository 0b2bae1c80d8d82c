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

Every collective runs under a deadline (:func:`set_timeout`, ``FASTGRAPH_COLLECTIVE_TIMEOUT``
in the environment, 1800 s unless set): MPI's collectives have no timeout of their own, so a
watchdog thread aborts the job, naming the collective and the rank, when one has waited longer
than that for the other ranks to join it, instead of leaving every rank hanging.

    >>> w = world()
    >>> w.size >= 1 and 0 <= w.rank < w.size
    True
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time

import numpy as np

__all__ = ["World", "world", "launched_size", "set_checks", "checks_enabled",
           "CollectiveMismatchError", "check_arguments", "exchange_rows", "label", "probing",
           "mpi4py_available", "set_timeout", "collective_timeout", "guard", "DEFAULT_TIMEOUT"]

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


def label(what: str, of=None) -> str:
    """A collective as a timeout or a mismatch names it: ``what`` and, given an array ``of``,
    its dtype and shape (formatted only when needed)."""
    return what if of is None else f"{what} ({describe(of)})"


def _raise_unless_equal(w: World, what: str, metas, rule: str) -> None:
    if any(m != metas[0] for m in metas):
        each = ", ".join(f"rank {r}: {m}" for r, m in enumerate(metas))
        raise CollectiveMismatchError(
            f"{what}: the ranks' arguments do not match ({each}); every rank must call the "
            f"same collectives in the same order with {rule} (rank {w.rank} of {w.size} "
            f"raising)")


def check_arguments(w: World, what: str, meta, of=None) -> None:
    """Exchange ``meta`` (a short picklable description of this rank's arguments) and raise
    :class:`CollectiveMismatchError` on every rank unless all ranks gave the same (``what``
    and ``of``: see :func:`label`)."""
    if w.comm is None or w.size == 1 or not _checks:
        return
    with guard(w, what, of):
        metas = w.comm.allgather(meta)
    _raise_unless_equal(w, label(what, of), metas, "the same shapes and dtypes")


def exchange_rows(w: World, what: str, meta, rows: int, of=None) -> list[int]:
    """Every rank's ``rows`` (the length of its first axis, which may differ between ranks),
    in rank order; with the checks on, ``meta()`` (the rest of the description: the op, the
    dtype, the other axes) is exchanged with them and must be the same on every rank."""
    with guard(w, what, of):
        if _checks:
            pairs = w.comm.allgather((meta(), int(rows)))
        else:
            counts = np.empty(w.size, np.int64)
            w.comm.Allgather(np.array([rows], np.int64), counts)
            return counts.tolist()
    _raise_unless_equal(w, label(what, of), [m for m, _ in pairs],
                        "the same dtypes and the same shapes beyond the first axis")
    return [r for _, r in pairs]


# ---- the collectives' deadline -------------------------------------------------------------
#: the timeout of a collective when neither ``FASTGRAPH_COLLECTIVE_TIMEOUT`` nor
#: :func:`set_timeout` says otherwise (PyTorch's default for its process groups)
DEFAULT_TIMEOUT = 1800.0
_TIMEOUT_VAR = "FASTGRAPH_COLLECTIVE_TIMEOUT"
_UNSET = object()
_timeout = _UNSET
_waiting: dict = {}                 # id(guard) -> (deadline, guard)
_watchdog: threading.Thread | None = None


def _parse_timeout(value, source: str) -> float | None:
    """Seconds (a number or a ``datetime.timedelta``); 0, ``inf`` or None: no timeout."""
    if value is None:
        return None
    if hasattr(value, "total_seconds"):
        value = value.total_seconds()
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("0", "none", "off", "inf"):
            return None
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{source}: expected a number of seconds (0 for none), got "
                             f"{value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{source}: expected a number of seconds, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value) or value < 0:
        raise ValueError(f"{source}: expected a number of seconds >= 0 (0 for none), got "
                         f"{value}")
    return None if value == 0 or math.isinf(value) else value


def collective_timeout() -> float | None:
    """The seconds a collective may wait for the other ranks before the job is aborted (None:
    forever)."""
    global _timeout
    if _timeout is _UNSET:
        raw = os.environ.get(_TIMEOUT_VAR) or None      # (set but empty: unset)
        _timeout = DEFAULT_TIMEOUT if raw is None else _parse_timeout(raw, _TIMEOUT_VAR)
    return _timeout


def set_timeout(seconds) -> float | None:
    """Set the timeout of every later collective: seconds (or a ``datetime.timedelta``); 0 or
    None for none.  Returns the previous one (None: none).  Set it to the same value on every
    rank."""
    return _set_timeout(seconds, "set_timeout")


def _set_timeout(seconds, source: str) -> float | None:
    global _timeout
    prev = collective_timeout()
    _timeout = _parse_timeout(seconds, source)
    return prev


class _Guard:
    """The deadline of one collective while this rank waits in it (see :func:`guard`)."""
    __slots__ = ("w", "what", "of", "timeout")

    def __init__(self, w, what, of, timeout):
        self.w, self.what, self.of, self.timeout = w, what, of, timeout

    def __enter__(self):
        if _watchdog is None:
            _start_watchdog(self.w)
        _waiting[id(self)] = (time.monotonic() + self.timeout, self)
        return self

    def __exit__(self, *exc):
        _waiting.pop(id(self), None)
        return False


class _NoGuard:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_GUARD = _NoGuard()


def guard(w: World, what: str, of=None):
    """A context manager for a call that waits for the other ranks (``what`` and ``of`` name
    it: see :func:`label`): if it has not returned within the timeout, the watchdog aborts the
    job (every rank) with a message naming it and this rank.  A no-op alone or without a
    timeout."""
    timeout = _timeout if _timeout is not _UNSET else collective_timeout()
    if timeout is None or w.comm is None or w.size == 1:
        return _NO_GUARD
    return _Guard(w, what, of, timeout)


def _start_watchdog(w: World) -> None:
    global _watchdog
    with _lock:
        if _watchdog is None:
            _watchdog = threading.Thread(target=_watch, args=(w,), name="fastgraph-watchdog",
                                         daemon=True)
            _watchdog.start()


def _watch(w: World) -> None:
    """Look at the waiting collectives a few times per timeout; abort the job on the first one
    past its deadline."""
    while True:
        now = time.monotonic()
        waiting = tuple(_waiting.values())
        late = [g for deadline, g in waiting if deadline <= now]
        if late:
            _abort_late(late[0])
            return
        timeout = _timeout if isinstance(_timeout, float) else DEFAULT_TIMEOUT
        soonest = min((d for d, _ in waiting), default=now + timeout)
        time.sleep(min(max(soonest - now, 0.0) + 0.01, max(0.02, min(timeout / 20, 0.5))))


def _abort_late(g: _Guard) -> None:
    w = g.w
    sys.stderr.write(
        f"fastgraph.distributed: rank {w.rank} of {w.size} waited {g.timeout:g} s in {label(g.what, g.of)} "
        f"for the other ranks to join it; aborting the job. "
        f"A rank skipped this collective, called another one, or is stuck or slower than the "
        f"timeout ({_TIMEOUT_VAR}, or fastgraph.distributed.init(timeout=...))\n")
    sys.stderr.flush()
    try:
        w.comm.Abort(1)
    finally:
        os._exit(1)


def probing() -> bool:
    """Whether this thread is running a stateful op on stand-in values (the static engine
    learning a result's dtype): a collective then communicates nothing."""
    from .random_state import _local
    return getattr(_local, "scratch", None) is not None
