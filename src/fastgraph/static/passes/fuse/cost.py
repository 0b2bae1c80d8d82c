"""The cost model: whether a region is worth a kernel, and the settings its kernel runs with.

A kernel call costs more than a NumPy step but saves a pass over memory per op: a region of ``k``
ops on ``n`` elements is kept when ``k * STEP_US + n * k * itemsize * ELEM_NUMPY_US`` (its
NumPy steps) exceeds ``CALL_US + n * k * itemsize * ELEM_VM_US`` (one kernel), with
``BROADCAST_CALL_US`` instead of ``CALL_US`` where an operand broadcasts in a way the VM's C
broadcast path does not take.  The constants were fitted to side-by-side timings of fused and
unfused plans of chains of 3 to 24 ops on 5 to 10,000 elements.

>>> from fastgraph.static.passes.fuse.cost import bcast_modes
>>> bcast_modes([(128, 256), (256,), ()], (128, 256))
(256, 'FRS')
"""
from __future__ import annotations

from math import prod

import numpy as np

from ....fused import DEFAULT_BLOCK, DEFAULT_THRESHOLD
from ....fused.opcodes import BY_NAME as _OPCODES
from ... import blas_threads
from ...plan import resolve

__all__ = ["ALWAYS", "worth", "bcast_modes", "kernel_shape", "kernel_settings"]

#: force fusion of every candidate region (tests compare fused and unfused plans on tiny inputs)
ALWAYS = False

#: a plain NumPy step, microseconds
STEP_US = 0.8
#: a kernel call through the VM's C fast path (or its C broadcast path)
CALL_US = 1.5
#: a kernel call with a broadcast input on the VM's general path (float32 (128, 256) + (256,)
#: took 64 us fused against 25 us for two NumPy ufuncs) -- unless every input is the full shape,
#: a scalar, a row repeated on every row (a bias) or one value per row (:func:`bcast_modes`),
#: which take the C broadcast path at ``CALL_US``
BROADCAST_CALL_US = 50.0
#: per element and op, per byte of the dtype: NumPy and the VM
ELEM_NUMPY_US = 0.1e-3
ELEM_VM_US = 0.04e-3


def kernel_shape(q):
    """The shape ``q`` has as a kernel operand (a scalar constant is a kernel constant: ``()``)."""
    return np.shape(q.value) if q.kind == "const" else q.shape


def bcast_modes(shapes, shape):
    """``(cols, modes)`` for the VM's C broadcast path (``FusedKernel.broadcast_call``) when
    every operand shape is the full ``shape`` (``F``), one element (``S``), its trailing dims
    repeated on every row (``R``) or its leading dims with one value per row (``C``), all rows of
    one length ``cols``; ``None`` otherwise (or for an unknown shape)."""
    nd = len(shape)
    n = prod(shape)
    cols = None
    modes = []
    for s in shapes:
        if s is None or None in s or len(s) > nd:
            return None
        s = tuple(s)
        size = prod(s)
        if size == n:
            modes.append("F")
            continue
        if size == 1:
            modes.append("S")
            continue
        c, m = _row_mode((1,) * (nd - len(s)) + s, shape)
        if c is None or (cols is not None and c != cols):
            return None
        cols = c
        modes.append(m)
    return (cols if cols is not None else (shape[-1] if nd else 1)), "".join(modes)


def _row_mode(pad, shape):
    """``(cols, "R")`` when the padded operand shape ``pad`` is ``shape``'s trailing dims (a row
    repeated on every row), ``(cols, "C")`` when it is its leading dims (one value per row),
    ``(None, None)`` otherwise."""
    nd = len(shape)
    k = 0
    while k < nd and pad[k] == 1:
        k += 1
    if pad[k:] == tuple(shape[k:]):
        return prod(shape[k:]), "R"
    k = nd
    while k > 0 and pad[k - 1] == 1:
        k -= 1
    if pad[:k] == tuple(shape[:k]):
        return prod(shape[k:]), "C"
    return None, None


def worth(reg) -> bool:
    """Is region ``reg`` worth one kernel (the cost model above)?  Never for 0-d regions (the
    plan's inline scalar path is faster), nor for one op that is ``cheap`` or not ``fuse_alone``
    (a ufunc with ``out=`` is as good, unless the VM's own kernel is several times faster)."""
    if reg.nops == 0:
        return False
    if ALWAYS:
        return True
    shape = reg.shape
    n = prod(shape)
    if len(shape) == 0 or n == 0:
        return False
    k = reg.nops
    if k == 1 and reg.red is None:
        op = next(m for m in reg.members if not m.op.broadcasting).op
        if op.cheap or not op.fuse_alone:
            return False
    size = np.dtype(reg.dtype).itemsize if reg.dtype is not None else 8
    saved = k * STEP_US + n * k * size * ELEM_NUMPY_US
    call = BROADCAST_CALL_US if _general_path(reg) else CALL_US
    return saved > call + n * k * size * ELEM_VM_US


def _general_path(reg) -> bool:
    """Does the region's kernel take the VM's general path (an operand broadcasting in a way
    the C broadcast path does not take)?"""
    shape = reg.shape
    members = {id(m) for m in reg.members}
    outside = {}        # id -> step: each outside input once (a constant read 1000s of times)
    broadcast = False
    for m in reg.members:
        for q in m.inputs:
            if q.repl is not None:
                q = resolve(q)
            if id(q) not in members and id(q) not in outside:
                outside[id(q)] = q
                if q.shape is not None and tuple(q.shape) != shape:
                    broadcast = True
    return broadcast and bcast_modes([kernel_shape(q) for q in outside.values()],
                                     shape) is None


#: elements x work (adds per element: the opcodes' ``cost``, an add = 1, a vectorised tanh = 6)
#: above which a kernel is worth several threads even on a short array: ~1 ms of work, so the
#: OpenMP fork/join (microseconds; more when the machine is oversubscribed) is noise
PARALLEL_WORK = 1 << 20
#: kernels on fewer elements than this run on one thread unless they are heavy per element
PARALLEL_MIN = 1 << 18
#: small, light regions (at most this many elements and this much work) evaluate
#: transcendentals with NumPy's own inner loops (the VM's "ufunc" strategy): there the VM's
#: vectorised versions save next to nothing, and the fused plan computes exactly what the unfused
#: one does (softmax's exp in a cross-entropy gradient, float32 (128, 10)).  A long program on a
#: short array keeps the vectorised kernels (NumPy's float64 tanh is several times slower).
EXACT_MAX = 4096
EXACT_WORK = 1 << 16


def _work(reg) -> int:
    """Estimated work per element of a region, in adds."""
    return sum(_OPCODES[m.op.opcode].cost for m in reg.members if m.op.opcode in _OPCODES)


def _geometry(n: int, work: int) -> dict:
    """Block size and single-thread threshold of a region of ``n`` elements doing ``work`` adds
    per element.  The VM's defaults (1024-element blocks, one thread below 32k elements) suit
    short programs; a long program on a short array (10,000 ops on 1,000 elements) has enough
    work per element to split into a few smaller blocks and use the threads.  Blocks never depend
    on the thread count, so results do not either."""
    if n >= PARALLEL_MIN:
        return {}
    if n < 256 or n * work < PARALLEL_WORK:
        # one thread: no OpenMP fork/join, and no spinning OpenMP workers left to compete with
        # the BLAS threads of a following matmul (that costs milliseconds on 2 shared cores)
        return {"threshold": PARALLEL_MIN}
    block = max(128, ((-(-n // 4)) + 63) // 64 * 64)
    return {"block": min(block, DEFAULT_BLOCK), "threshold": n}


#: outputs of at least this many bytes are written with non-temporal stores (``stream_min``):
#: an output larger than the last-level cache leaves it before anything reads it back, so its
#: lines need not be read first (a sixth less memory traffic for 4 inputs and 1 output)
STREAM_MIN_BYTES = 32 << 20


def _strategy(n: int, work: int) -> dict:
    if n > EXACT_MAX or n * work > EXACT_WORK:
        return {}
    return {"strategy": "ufunc"}


def kernel_settings(reg, plan_holds: bool = False) -> tuple[dict, bool]:
    """``compile_kernel`` settings for a region (geometry and transcendental strategy), and
    whether ``plan_holds`` (:func:`~fastgraph.static.blas_threads.plan_holds_threads`) kept a
    kernel that would use the threads on one thread -- same blocks, so the same results."""
    n = prod(reg.shape)
    work = _work(reg)
    geometry = _geometry(n, work)
    held = blas_threads.hold_threads(plan_holds, n, work,
                                     geometry.get("threshold", DEFAULT_THRESHOLD))
    if held:
        geometry["threshold"] = blas_threads.ONE_THREAD
    stream = {"stream_min": STREAM_MIN_BYTES // reg.dtype.itemsize}
    return {**geometry, **_strategy(n, work), **stream}, held
