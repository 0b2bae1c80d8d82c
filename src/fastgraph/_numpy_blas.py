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

import ctypes
import glob
import os

import numpy as np

from .kernels import blas as _blas

#: the four functions :mod:`fastgraph.kernels.blas` calls, under scipy-openblas's names
SYMBOLS = ("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_",
           "scipy_cblas_saxpy64_", "scipy_cblas_daxpy64_")

_loaded: bool | None = None


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
    return _blas.available()
