"""NumPy's own BLAS, reached directly for the calls NumPy's API cannot make (:mod:`fastgraph.kernels.blas`).

It has to be NumPy's library and no other: a plan's products must give ``np.matmul``'s bits
(another BLAS, or another build of OpenBLAS, may round differently), and a second OpenBLAS
would bring a second pool of spinning threads.  NumPy's wheels (2.0 on) ship OpenBLAS as
``scipy-openblas`` with 64-bit integers and prefixed names (``scipy_cblas_sgemm64_``), in
``numpy.libs`` (Linux, Windows) or ``numpy/.dylibs`` (macOS); NumPy built against any other
BLAS (MKL, Accelerate, a system OpenBLAS) leaves :func:`load` false, and plans then make the
same steps with NumPy's functions instead.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading

import numpy as np

from .kernels import blas as _blas

#: the four functions :mod:`fastgraph.kernels.blas` calls, under scipy-openblas's names
SYMBOLS = ("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_",
           "scipy_cblas_saxpy64_", "scipy_cblas_daxpy64_")

#: the library's thread-count functions (``one_thread``), under scipy-openblas's names
THREAD_SYMBOLS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_")

_loaded: bool | None = None
_threads: tuple | None = None       # (get, set) when the library has them
_pin = threading.Lock()
_pinned = [0, 0]                    # [blocks inside one_thread, the count to restore]


def _numpy_blas_name() -> str:
    """The BLAS NumPy was built against, as its build configuration records it ("" unknown)."""
    try:
        return str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"])
    except (AttributeError, KeyError, TypeError):
        return ""


def _library_paths() -> list[str]:
    """The scipy-openblas library files NumPy's wheel ships beside it."""
    root = os.path.dirname(os.path.abspath(np.__file__))
    found: list[str] = []
    for folder in (os.path.join(root, os.pardir, "numpy.libs"), os.path.join(root, ".dylibs")):
        found += glob.glob(os.path.join(folder, "*scipy_openblas*"))
    return sorted(set(os.path.realpath(p) for p in found))


def load() -> bool:
    """Hand NumPy's ``cblas_{s,d}gemm``/``cblas_{s,d}axpy`` to :mod:`fastgraph.kernels.blas` (once);
    ``True`` when they are there.

    >>> load() in (True, False)
    True
    """
    global _loaded
    if _loaded is None:
        _loaded = _load()
    return _loaded


def _load() -> bool:
    if _numpy_blas_name() != "scipy-openblas":
        return False
    paths = _library_paths()
    if len(paths) != 1:     # none, or several and no way to tell which one NumPy loaded
        return False
    try:
        lib = ctypes.CDLL(paths[0])
        addresses = [ctypes.cast(getattr(lib, s), ctypes.c_void_p).value for s in SYMBOLS]
    except (OSError, AttributeError):
        return False
    if not all(addresses):
        return False
    _blas.configure(*addresses)
    _blas.configure_accumulate(accumulate_exact)
    global _threads
    try:
        get, set_ = (getattr(lib, s) for s in THREAD_SYMBOLS)
    except AttributeError:
        _threads = None
    else:
        get.restype, get.argtypes = ctypes.c_int, []
        set_.restype, set_.argtypes = None, [ctypes.c_int]
        _threads = (get, set_)
    return _blas.available()


_accumulate_cache: dict = {}


def accumulate_exact(dtype, m: int, k: int, n: int, trans_a: bool, trans_b: bool) -> bool:
    """Does ``kernels.blas.accumulate_matmul`` (``acc += a @ b``, one ``gemm`` with ``beta =
    1``) give ``acc + np.matmul(a, b)`` bit for bit on an ``(m, k) @ (k, n)`` product of
    ``dtype``, its operands read transposed as ``trans_a``/``trans_b`` say?  Computed both ways
    once per shape on random values: a sum OpenBLAS splits over ``k`` adds each panel into
    ``acc`` and differs on most elements; one it does not split agrees on all.  (The kernel
    asks once per shape and keeps the answer.)

    >>> accumulate_exact(np.dtype(np.float32), 4, 3, 5, False, False) in (True, False)
    True
    """
    key = (np.dtype(dtype), int(m), int(k), int(n), bool(trans_a), bool(trans_b))
    hit = _accumulate_cache.get(key)
    if hit is None:
        dt = key[0]
        rng = np.random.default_rng(0)
        a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dt)
        b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dt)
        a = a.T if trans_a else a
        b = b.T if trans_b else b
        acc = rng.standard_normal((m, n)).astype(dt)
        ref = acc + np.matmul(a, b)
        with np.errstate(all="ignore"):
            hit = _blas.accumulate_matmul_unchecked(a, b, acc) and np.array_equal(acc, ref)
        _accumulate_cache[key] = hit
    return hit


def accumulate_warnings(a, b, acc_dtype) -> None:
    """After ``kernels.blas.accumulate_matmul`` answered ``FP_EXCEPTION``: what NumPy's two steps,
    ``np.matmul(a, b)`` and the sum into the gradient, would have warned or raised under
    ``np.errstate``.  The product is recomputed (NumPy's own warnings); a flag the product
    does not explain came from the sum (an overflow, or inf - inf) and is raised again by a
    one-element NumPy sum."""
    flags = _blas.accumulate_flags()
    with np.errstate(all="ignore"):
        _blas.accumulate_matmul_unchecked(a, b, None)
    own = _blas.accumulate_flags()
    np.matmul(a, b)
    dt = np.dtype(acc_dtype)
    big = np.array([np.finfo(dt).max], dt)
    inf = np.array([np.inf], dt)
    if flags["over"] and not own["over"]:
        np.add(big, big)
    if flags["invalid"] and not own["invalid"]:
        np.add(inf, -inf)


@contextlib.contextmanager
def one_thread():
    """NumPy's BLAS computes every product on its caller's thread inside the block (kernels
    that run their own tasks on several threads make products past OpenBLAS's single-thread
    bound); the thread count is restored when the last such block ends.  Nothing happens when
    :func:`load` is false or the library cannot set its thread count.

    >>> with one_thread():
    ...     pass
    """
    threads = _threads if load() else None
    if threads is None:
        yield
        return
    with _pin:
        if _pinned[0] == 0:
            _pinned[1] = threads[0]()
            if _pinned[1] != 1:
                threads[1](1)
        _pinned[0] += 1
    try:
        yield
    finally:
        with _pin:
            _pinned[0] -= 1
            if _pinned[0] == 0 and _pinned[1] != 1:
                threads[1](_pinned[1])
