"""``fastgraph.distributed``: data-parallel training across processes and machines, on MPI
(``mpi4py`` with Open MPI: ``pip install 'fastgraph[mpi]'``).

Run the same script on every rank with ``mpirun -n 2 python train.py``; run alone
(``python train.py``) it is a world of one process and every collective is the identity, so one
script serves both.  See ``docs/distributed.md``.

* the world: :func:`init`, :func:`rank`, :func:`size`, :func:`local_rank`, :func:`barrier`,
  and the collectives' timeout, :func:`set_timeout`;
* differentiable collectives on arrays, Tensors and graph Nodes (ops, with their VJPs):
  ``allreduce(x, op="sum"|"mean")``, ``allgather``, ``reduce_scatter``, ``broadcast(x, root)``,
  ``reduce(x, root)``;
* eager data parallelism: :class:`DistributedDataParallel`, :class:`DistributedOptimizer` around
  ``fg.optim`` optimizers, :func:`broadcast_parameters`;
* static data parallelism: :class:`DistributedOptimizer` around ``fg.train`` optimizers,
  :func:`broadcast_global_variables`;
* data: :func:`shard`, :class:`DistributedSampler`.

A rank that raises aborts the whole job (every rank), the failing rank's traceback printed with
its rank, instead of leaving the others waiting in a collective; a collective that waits longer
than the timeout (:func:`set_timeout`) for the other ranks to join it aborts the job too.

    >>> import fastgraph.distributed as dist
    >>> dist.init().size >= 1
    True
"""
from __future__ import annotations

import math
import sys
import threading
import weakref
from typing import Iterable

import numpy as np

from ._core import namespace as _namespace
from ._core.comm import (DEFAULT_TIMEOUT, CollectiveMismatchError, World, check_arguments,
                         checks_enabled, collective_timeout, describe, guard, mpi4py_available,
                         set_checks, set_timeout, world)
from ._core.comm import _set_timeout
from . import ops as _ops  # noqa: F401  (the declarations)
from .eager.tensor import Tensor
from .static.node import Node
from .static.variables import Variable, group, get_default_graph  # noqa: F401

globals().update(_namespace("distributed"))

__all__ = sorted(_namespace("distributed")) + [
    "init", "rank", "size", "local_rank", "barrier", "is_available", "World",
    "CollectiveMismatchError", "set_checks", "checks_enabled", "set_timeout",
    "collective_timeout", "DEFAULT_TIMEOUT", "DistributedDataParallel",
    "DistributedOptimizer", "broadcast_parameters", "broadcast_global_variables", "shard",
    "DistributedSampler"]

#: the default bucket size of the eager and static gradient allreduces (PyTorch DDP's 25 MB)
BUCKET_BYTES = 25 * 2 ** 20


# ---- the world ---------------------------------------------------------------------------------
_fault_lock = threading.Lock()
_fault_installed = False


_KEEP = object()


def init(timeout=_KEEP) -> World:
    """Join the job's world (MPI's under ``mpirun``, else a world of one process) and install
    the fault handler: an exception that ends a rank aborts every rank.  Called implicitly by
    the other functions; calling it again returns the same world.

    ``timeout``: the seconds (or a ``datetime.timedelta``) a collective may wait for the other
    ranks to join it before the job is aborted, naming the collective and the rank; 0 or None
    for no limit.  Left out, it stays as it is: ``FASTGRAPH_COLLECTIVE_TIMEOUT`` from the
    environment, else 1800 s (see :func:`set_timeout`).

        >>> w = init(); (w.rank, w.size) if w.size == 1 else None
        (0, 1)
    """
    if timeout is not _KEEP:
        _set_timeout(timeout, "init: timeout")
    w = world()
    _install_fault_handler(w)
    return w


def is_available() -> bool:
    """Whether MPI can be used here (``mpi4py`` importable)."""
    return mpi4py_available()


def rank() -> int:
    """This process's rank in the world (0 alone).

        >>> rank()
        0
    """
    return init().rank


def size() -> int:
    """The number of processes in the world (1 alone).

        >>> size()
        1
    """
    return init().size


def local_rank() -> int:
    """This process's rank among the world's processes on this machine (to pick a device or a
    thread set).

        >>> local_rank()
        0
    """
    return init().local_rank


def barrier() -> None:
    """Wait until every rank has reached this call.

        >>> barrier()
    """
    w = init()
    if w.comm is not None and w.size > 1:
        with guard(w, "barrier"):
            w.comm.Barrier()


def _install_fault_handler(w: World) -> None:
    """An uncaught exception on one rank: print it with the rank, then MPI_Abort the job, so the
    other ranks do not wait forever in their next collective."""
    global _fault_installed
    if w.comm is None or w.size == 1:
        return
    with _fault_lock:
        if _fault_installed:
            return
        _fault_installed = True
    previous = sys.excepthook

    def abort_job(kind, value, tb):
        import traceback
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(f"fastgraph.distributed: rank {w.rank} of {w.size} raised; aborting the "
                         f"job\n" + "".join(f"[rank {w.rank}] {line}\n"
                                            for line in text.rstrip().splitlines()))
        sys.stderr.flush()
        if kind is KeyboardInterrupt:
            previous(kind, value, tb)
        w.comm.Abort(1)

    sys.excepthook = abort_job

    def thread_abort(args):
        abort_job(args.exc_type, args.exc_value, args.exc_traceback)

    threading.excepthook = thread_abort


# ---- eager data parallelism --------------------------------------------------------------------
def _tensors_of(params) -> list:
    """The leaf Tensors of ``params``: a list of Tensors, a model with ``parameters()``, a dict
    (a state dict) of them, or an optimizer (``params`` or ``param_groups``)."""
    if hasattr(params, "param_groups"):
        return [p for grp in params.param_groups for p in grp["params"]]
    if hasattr(params, "params") and not callable(params.params):
        return list(params.params)
    if hasattr(params, "parameters") and callable(params.parameters):
        params = params.parameters()
    if isinstance(params, dict):
        params = params.values()
    if isinstance(params, Tensor):
        raise TypeError("expected an iterable of Tensors (or a model), got one Tensor")
    out = list(params)
    for i, p in enumerate(out):
        if not isinstance(p, Tensor):
            raise TypeError(f"parameter {i} is a {type(p).__name__}, not a Tensor")
    return out


def broadcast_parameters(params, root: int = 0) -> None:
    """Overwrite every rank's parameters (Tensors, a model or a state dict) with rank ``root``'s
    values, in place, so that every rank starts equal.

        >>> w = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> broadcast_parameters([w], root=0)
    """
    w = init()
    for p in _tensors_of(params):
        value = broadcast(p._data, root)  # noqa: F821  (the op, from the namespace)
        np.copyto(p._data, value)
        p._bump_version()


class _Sent:
    """A bucket handed to the sending thread: ``Wait()`` returns once its allreduce is done
    (and raises what it raised)."""
    __slots__ = ("event", "error")

    def __init__(self):
        self.event, self.error = threading.Event(), None

    def Wait(self):
        self.event.wait()
        if self.error is not None:
            raise self.error


class _Sender:
    """The thread that runs the buckets' allreduces, blocking ones (MPI's tuned algorithms:
    Open MPI's non-blocking ones are slower on large buffers, and progress only inside MPI
    calls), one after the other in the order given, while the backward pass goes on in the
    calling thread (MPI calls and NumPy's loops release the GIL)."""

    def __init__(self, comm, MPI):
        import queue
        self.comm, self.MPI = comm, MPI
        self.queue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="fastgraph-allreduce",
                                       daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            item = self.queue.get()
            if item is None:
                return
            buffer, sent = item
            try:
                self.comm.Allreduce(self.MPI.IN_PLACE, buffer, op=self.MPI.SUM)
            except BaseException as e:      # (re-raised by Wait, in the training thread)
                sent.error = e
            sent.event.set()

    def send(self, buffer) -> _Sent:
        sent = _Sent()
        self.queue.put((buffer, sent))
        return sent

    def stop(self, wait: float = 0.0) -> bool:
        """Let the thread end once the buckets handed to it are sent; wait up to ``wait``
        seconds for that.  Returns whether it has ended."""
        self.queue.put(None)
        if wait:
            self.thread.join(wait)
        return not self.thread.is_alive()


def _release(handles, sender, comm, MPI) -> None:
    """Take a gradient averager's hooks off its parameters, end its sending thread and free its
    communicator: run by ``remove()``, or when the averager is garbage-collected, or at exit
    (a :func:`weakref.finalize`), whichever comes first."""
    for h in handles:
        h.remove()
    ended = sender.stop(wait=1.0) if sender is not None else True
    # (a thread still sending, in a pass cut short, keeps the communicator it uses)
    if comm is not None and ended and not MPI.Is_finalized():
        comm.Free()


class _Bucket:
    __slots__ = ("dtype", "slots", "buffer", "filled", "request", "done")

    def __init__(self, dtype):
        self.dtype, self.slots = dtype, []
        self.buffer = None
        self.filled = 0
        self.request = None
        self.done = False


class _GradientAverager:
    """The gradients of ``params`` averaged over the ranks, bucket by bucket, during the
    backward pass: each parameter's grad-ready hook copies its gradient into its bucket's
    buffer; a full bucket starts its allreduce (buckets start in their fixed order
    on every rank, as MPI requires); the last hook of the pass waits for all of them and
    divides by the world size, and the parameters' gradients are read-only views of the
    averaged buffers (the walk copies them into ``.grad``).  The allreduces run on a
    duplicate of the world's communicator, so collectives the training thread makes meanwhile
    cannot interleave with them; where MPI allows threads (``MPI_THREAD_MULTIPLE``, mpi4py's
    default) a sending thread runs them (see :class:`_Sender`), else non-blocking ones do."""

    def __init__(self, params, bucket_bytes: int = BUCKET_BYTES,
                 find_unused_parameters: bool = False):
        self.world = w = init()
        self.find_unused = find_unused_parameters
        self.params = _tensors_of(params)
        seen = set()
        for i, p in enumerate(self.params):
            if not p.requires_grad or not p.is_leaf:
                raise ValueError(f"DistributedDataParallel: parameter {i} must be a leaf Tensor "
                                 f"that requires grad")
            if id(p) in seen:
                raise ValueError(f"DistributedDataParallel: parameter {i} is listed twice")
            seen.add(id(p))
        check_arguments(w, "DistributedDataParallel (the parameters)",
                        tuple(describe(p._data) for p in self.params))
        # (backward produces the last layers' gradients first: their buckets fill first)
        self.buckets: list[_Bucket] = []
        self.slot_of = {}
        current: dict = {}
        for p in reversed(self.params):
            dt = np.dtype(p._data.dtype)
            b = current.get(dt)
            if b is None or (b.slots and sum(s[2] for s in b.slots) * dt.itemsize
                             + p._data.nbytes > bucket_bytes):
                b = current[dt] = _Bucket(dt)
                self.buckets.append(b)
            offset = sum(s[2] for s in b.slots)
            b.slots.append((p, offset, int(p._data.size)))
            self.slot_of[id(p)] = (b, offset, int(p._data.size))
        for b in self.buckets:
            b.buffer = np.zeros(sum(s[2] for s in b.slots), b.dtype)
        # (per parameter, made once: its part of its bucket in its shape, to pack into, and
        # the same read-only, handed to the walk, which copies it into .grad)
        self.views_of = {}
        for p in self.params:
            b, offset, n = self.slot_of[id(p)]
            part = b.buffer[offset:offset + n].reshape(p._data.shape)
            handed = part.view()
            handed.flags.writeable = False
            self.views_of[id(p)] = (b, part, handed)
        self.comm, self.sender = None, None
        if w.comm is not None and w.size > 1:
            self.comm = w.comm.Dup()
            if w.MPI.Query_thread() == w.MPI.THREAD_MULTIPLE:
                self.sender = _Sender(self.comm, w.MPI)
        # (each rank's share, 1/size, is taken as its gradient is copied in: one pass over
        # the data fewer than dividing the sum, and the same sum on every rank all the same)
        self.scale = 1.0 / w.size
        # (the hooks hold the averager weakly: a wrapper dropped without remove() releases it)
        ref = weakref.ref(self)

        def ready(p, g):
            averager = ref()
            return g if averager is None else averager._ready(p, g)

        self.handles = [p.register_grad_ready_hook(ready) for p in self.params]
        self._release = weakref.finalize(self, _release, self.handles, self.sender, self.comm,
                                         w.MPI)
        self._reset()

    def _reset(self):
        for b in self.buckets:
            b.filled, b.request, b.done = 0, None, False
        self.next_bucket = 0
        self.seen = {}          # id(param) -> the .grad it had before this pass
        self.complete = 0

    def _ready(self, p, g):
        if g.requires_grad:
            raise RuntimeError("DistributedDataParallel: backward(create_graph=True) is not "
                               "supported (the averaged gradients are plain arrays)")
        if id(p) in self.seen:
            # (a second backward pass before the first one reached every parameter)
            if not self.find_unused:
                raise RuntimeError(self._unused_message("a second backward pass started"))
            self.synchronize()
        b, part, handed = self.views_of[id(p)]
        self.seen[id(p)] = p._grad
        src = g._data
        if type(src) is not np.ndarray or src.shape != part.shape:
            src = np.asarray(src).reshape(part.shape)
        if self.scale != 1.0:
            np.multiply(src, self.scale, out=part, casting="same_kind")
        else:
            np.copyto(part, src, casting="same_kind")
        b.filled += 1
        if len(self.seen) == len(self.params) and not self.find_unused:
            self._finish()
        else:
            self._start_ready_buckets()
        return handed

    def _start_ready_buckets(self):
        w = self.world
        while self.next_bucket < len(self.buckets):
            b = self.buckets[self.next_bucket]
            if b.filled < len(b.slots):
                return
            if self.sender is not None:
                b.request = self.sender.send(b.buffer)
            elif self.comm is not None:
                b.request = self.comm.Iallreduce(w.MPI.IN_PLACE, b.buffer, op=w.MPI.SUM)
            self.next_bucket += 1

    def _finish(self):
        """Wait for every bucket's allreduce (of the ranks' shares: the average), every bucket
        being full.  The buckets not yet started are reduced here, in this thread, once the
        started ones are done: the pass has nothing left to overlap them with, and handing
        them to the sending thread would only add its wake-ups (and, on a rank given one core,
        a switch of threads) to the wait."""
        for i, b in enumerate(self.buckets):
            if b.request is not None or (i >= self.next_bucket and self.comm is not None):
                with guard(self.world, f"DistributedDataParallel's gradient allreduce (bucket "
                                       f"{i + 1} of {len(self.buckets)}, {b.dtype.name} "
                                       f"({b.buffer.size},))"):
                    if b.request is not None:
                        b.request.Wait()
                    else:
                        # (after the started ones: the ranks' calls on the communicator
                        # stay in the buckets' order)
                        self.comm.Allreduce(self.world.MPI.IN_PLACE, b.buffer,
                                            op=self.world.MPI.SUM)
                b.request = None
            b.done = True
        self.complete += 1
        self._reset()

    def synchronize(self):
        """Finish a pass that did not reach every parameter (unused parameters, or a pass in
        progress): the missing gradients count as zeros on this rank, and every parameter some
        rank reached gets its ``.grad`` before the pass plus the average (on every rank)."""
        if not self.find_unused:
            if self.seen:
                raise RuntimeError(self._unused_message("step()"))
            return
        before = dict(self.seen)
        # (which parameters some rank reached: those no rank did keep their .grad untouched)
        used = np.array([id(p) in before for p in self.params], np.int32)
        w = self.world
        if w.comm is not None and w.size > 1:
            with guard(w, "DistributedDataParallel.synchronize (the parameters used)"):
                w.comm.Allreduce(w.MPI.IN_PLACE, used, op=w.MPI.SUM)
        for p in self.params:
            if id(p) not in self.seen:
                b, offset, n = self.slot_of[id(p)]
                b.buffer[offset:offset + n] = 0
                b.filled += 1
                self.seen[id(p)] = p._grad
                before[id(p)] = p._grad
        self._finish()
        for p, k in zip(self.params, used):
            if not k:
                continue
            b, offset, n = self.slot_of[id(p)]
            avg = b.buffer[offset:offset + n].reshape(p._data.shape).copy()
            old = before[id(p)]
            p._grad = Tensor(avg if old is None else old._data + avg)

    def _unused_message(self, when):
        missing = [i for i, p in enumerate(self.params) if id(p) not in self.seen]
        return (f"DistributedDataParallel: {when} before the backward pass reached every "
                f"parameter (parameters {missing} got no gradient on rank {self.world.rank}); "
                f"the ranks cannot know when to average: pass find_unused_parameters=True")

    def remove(self):
        self._release()
        self.sender = self.comm = None


class DistributedDataParallel:
    """PyTorch's DDP contract on the tape: after ``loss.backward()`` every rank's parameters
    hold the gradients averaged over the ranks, the allreduces overlapping the backward pass
    (one per bucket of about ``bucket_bytes``, started by the parameters' grad-ready hooks).
    ``model_or_params`` is a model (called through, ``parameters()`` read) or the parameters;
    they are broadcast from rank 0 first so that every rank starts equal.

    A backward pass must reach every parameter (on every rank): the last one's gradient is
    when the ranks finish averaging.  Where some go unused (on some ranks, or some steps),
    ``find_unused_parameters=True`` moves the end of the averaging to ``synchronize()``
    (``DistributedOptimizer.step()``, where every rank agrees on which parameters any rank
    used; gradients are then written after the pass, at the price of less overlap).

        >>> w = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> ddp = DistributedDataParallel([w])
        >>> (w * w).sum().backward(); w.grad          # one process: the local gradient
        tensor([2., 4.])
    """

    def __init__(self, model_or_params, bucket_bytes: int = BUCKET_BYTES,
                 broadcast_from: int | None = 0, find_unused_parameters: bool = False):
        self.module = model_or_params
        params = _tensors_of(model_or_params)
        if broadcast_from is not None:
            broadcast_parameters(params, broadcast_from)
        self._averager = _GradientAverager(params, bucket_bytes, find_unused_parameters)

    def __call__(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def parameters(self):
        return list(self._averager.params)

    def synchronize(self) -> None:
        """Complete the averaging of a backward pass that did not reach every parameter (a no-op
        after a pass that did; ``DistributedOptimizer.step()`` calls it)."""
        self._averager.synchronize()

    def remove(self) -> None:
        """Take the hooks off the parameters (gradients stay local from then on) and end the
        sending thread.  Dropping the wrapper (garbage collection) or the end of the process
        does the same."""
        self._averager.remove()


def _eager_distributed_optimizer(optimizer, bucket_bytes, broadcast_from, find_unused):
    """``optimizer`` as an instance of a subclass of its own class (Horovod's way: learning-rate
    schedulers and ``isinstance`` checks still see the optimizer) sharing its state, whose
    ``step()`` first completes the averaging of the gradients over the ranks."""
    ddp = DistributedDataParallel(_tensors_of(optimizer), bucket_bytes, broadcast_from,
                                  find_unused)
    base = type(optimizer)

    # (the averager is reached through the instance, not held by the class: dropping the
    # optimizer releases its hooks and thread)
    def step(self, *args, **kwargs):
        self._distributed.synchronize()
        return base.step(self, *args, **kwargs)

    def synchronize(self):
        self._distributed.synchronize()

    cls = type(f"Distributed{base.__name__}", (base,),
               {"step": step, "synchronize": synchronize, "__module__": base.__module__,
                "__doc__": f"{base.__name__} with its gradients averaged over the ranks."})
    wrapped = object.__new__(cls)
    wrapped.__dict__ = optimizer.__dict__     # (one state: the optimizer's own)
    wrapped._distributed = ddp
    return wrapped


# ---- static data parallelism -------------------------------------------------------------------
def _static_bucket_allreduce(grads, bucket_bytes):
    """Average graph gradients over the ranks: one ``allreduce`` node per bucket of gradients of
    one dtype, fused into one flat buffer (concatenated, reduced, split back)."""
    from .ops import concatenate, reshape
    out = list(grads)
    groups: dict = {}
    for i, g in enumerate(grads):
        if g is None:
            continue
        if g.shape is None or None in g.shape:
            out[i] = allreduce(g, op="mean")  # noqa: F821
            continue
        groups.setdefault(np.dtype(g.dtype), []).append(i)
    for dt, idx in groups.items():
        bucket, nbytes = [], 0
        buckets = [bucket]
        for i in reversed(idx):
            n = math.prod(grads[i].shape) * dt.itemsize
            if bucket and nbytes + n > bucket_bytes:
                bucket, nbytes = [], 0
                buckets.append(bucket)
            bucket.append(i)
            nbytes += n
        for bucket in buckets:
            flat = concatenate([reshape(grads[i], (-1,)) for i in bucket])
            red = allreduce(flat, op="mean")  # noqa: F821
            start = 0
            for i in bucket:
                n = math.prod(grads[i].shape)
                out[i] = reshape(red[start:start + n], grads[i].shape)
                start += n
    return out


class _StaticDistributedOptimizer:
    """Horovod's contract for TensorFlow 1: ``compute_gradients`` (and so ``minimize``) returns
    the gradients averaged over the ranks by allreduce nodes in the graph, one per bucket."""

    def __init__(self, optimizer, bucket_bytes=BUCKET_BYTES):
        self.optimizer = optimizer
        self.bucket_bytes = bucket_bytes
        init()

    def compute_gradients(self, loss, var_list=None, **kwargs):
        pairs = self.optimizer.compute_gradients(loss, var_list, **kwargs)
        grads = _static_bucket_allreduce([g for g, _ in pairs], self.bucket_bytes)
        return list(zip(grads, [v for _, v in pairs]))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self.optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        if kwargs.get("grad_loss") is not None:
            raise NotImplementedError("minimize: grad_loss is not supported")
        return self.apply_gradients(self.compute_gradients(loss, var_list),
                                    global_step=global_step, name=name)

    def __getattr__(self, name):
        return getattr(self.optimizer, name)


def DistributedOptimizer(optimizer, bucket_bytes: int = BUCKET_BYTES, broadcast_from=0,
                         find_unused_parameters: bool = False):
    """Average the gradients over the ranks before every update.

    * around an ``fg.train`` optimizer (a static graph's): ``minimize``/``compute_gradients``
      put one ``allreduce`` node per bucket of fused gradient buffers into the graph (run
      :func:`broadcast_global_variables` after the initialiser);
    * around an ``fg.optim`` optimizer (eager): the gradients are averaged during
      ``backward()`` (see :class:`DistributedDataParallel`), and ``step()`` steps; the
      parameters are broadcast from rank ``broadcast_from`` first.

        >>> w = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = DistributedOptimizer(fg.optim.SGD([w], lr=0.1))
        >>> (w * w).sum().backward(); opt.step(); w
        tensor([0.8, 1.6], requires_grad=True)
    """
    from .static.train import Optimizer as _StaticOptimizer
    if isinstance(optimizer, _StaticOptimizer):
        return _StaticDistributedOptimizer(optimizer, bucket_bytes)
    if not hasattr(optimizer, "__dict__") or not callable(getattr(optimizer, "step", None)):
        raise TypeError(f"DistributedOptimizer: expected an optimizer (fg.optim, fg.train), "
                        f"got {type(optimizer).__name__}")
    return _eager_distributed_optimizer(optimizer, bucket_bytes, broadcast_from,
                                        find_unused_parameters)


def broadcast_global_variables(root: int = 0, graph=None):
    """One graph operation that overwrites every variable of ``graph`` (the default graph) with
    rank ``root``'s value; run it after the initialiser so that every rank starts equal.

        >>> v = fg.Variable(np.ones(2))
        >>> sync = broadcast_global_variables(0)
    """
    init()
    g = graph if graph is not None else get_default_graph()
    variables = list(g.variables)
    if not variables:
        raise ValueError("broadcast_global_variables: the graph has no variables")
    with g.as_default():
        return group(*[v.assign(broadcast(v, root)) for v in variables],  # noqa: F821
                     name="broadcast_global_variables")


# ---- data --------------------------------------------------------------------------------------
def shard(data, rank: int | None = None, size: int | None = None):
    """This rank's part of ``data`` (an array, a Tensor, a list, or anything with ``len`` and
    integer indexing): the contiguous block ``rank`` of ``size`` nearly equal blocks (the first
    ``len % size`` blocks one longer).  ``rank`` and ``size`` default to the world's.

        >>> shard(np.arange(10), rank=1, size=3)
        array([4, 5, 6])
    """
    rank = init().rank if rank is None else int(rank)
    size = init().size if size is None else int(size)
    if size < 1 or not 0 <= rank < size:
        raise ValueError(f"shard: rank must be in [0, size), got rank={rank} size={size}")
    n = len(data)
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    stop = start + base + (1 if rank < extra else 0)
    if isinstance(data, (np.ndarray, Tensor, list, tuple, range)):
        return data[start:stop]
    return [data[i] for i in range(start, stop)]


class DistributedSampler:
    """The indices of one rank's part of each epoch of a data set of ``n`` items (or of
    ``len(dataset)``), PyTorch's ``DistributedSampler`` (its signature, for
    ``fastgraph.torch.utils.data.DataLoader(sampler=...)``): the epoch's permutation, seeded by
    ``seed + epoch`` and so the same on every rank (NumPy's generator, not PyTorch's numbers),
    padded by repeating its start to a multiple of ``num_replicas`` (``drop_last``: cut down to
    one instead), then every ``num_replicas``-th index from ``rank``: the ranks' parts are
    disjoint (but for the padding) and of equal length.  ``num_replicas`` and ``rank`` default
    to the world's.  Call :meth:`set_epoch` before each epoch.

        >>> s = DistributedSampler(10, num_replicas=2, rank=0, seed=0)
        >>> len(list(s)), len(s)
        (5, 5)
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        self.n = int(dataset) if isinstance(dataset, (int, np.integer)) else len(dataset)
        self.num_replicas = init().size if num_replicas is None else int(num_replicas)
        self.rank = init().rank if rank is None else int(rank)
        if self.num_replicas < 1 or not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"DistributedSampler: rank must be in [0, num_replicas), got "
                             f"rank={self.rank} num_replicas={self.num_replicas}")
        self.shuffle, self.seed, self.drop_last = shuffle, int(seed), drop_last
        self.epoch = 0
        if drop_last:
            self.num_samples = self.n // self.num_replicas
        else:
            self.num_samples = -(-self.n // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose permutation the next iteration gives (the same on every rank)."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self):
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(self.n)
        else:
            order = np.arange(self.n)
        if self.total_size > self.n and self.n:
            order = np.resize(order, self.total_size)   # (repeats the start, as PyTorch pads)
        order = order[:self.total_size]
        return iter(order[self.rank::self.num_replicas].tolist())
