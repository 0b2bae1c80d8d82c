"""Thread-count policy (pure Python; compiled kernels receive the count as an argument).

The default comes from ``FASTGRAPH_NUM_THREADS``, else ``OMP_NUM_THREADS``, else the number of CPUs
this process may run on.
"""
from __future__ import annotations

import operator
import os
import warnings

__all__ = ["get_num_threads", "set_num_threads", "default_num_threads"]

# OpenMP workers that keep spinning after a fused kernel steal the cores NumPy's BLAS threads need
# for the matmul that usually follows (measured: an MLP step 6x slower). Unless the user chose a
# wait policy, spin briefly and then sleep. Read by libgomp when it loads, i.e. when the first
# compiled module is imported -- this module is imported before any of them.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "10000"


def _usable_cpus() -> int:
    # sched_getaffinity honours taskset/cgroup CPU pinning; cpu_count() does not.
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: the most threads a count may ask for (the kernels take a C int and use at most 64 anyway)
MAX_THREADS = 4096


def _validate(n: object, source: str = "number of threads") -> int:
    if isinstance(n, bool):
        raise TypeError(f"{source} must be a positive integer, got {n!r}")
    try:
        value = operator.index(n)  # accepts int and NumPy integers, rejects 2.0 and "2"
    except TypeError:
        raise TypeError(f"{source} must be a positive integer, got {n!r}") from None
    if value < 1 or value > MAX_THREADS:
        raise ValueError(f"{source} must be a positive integer up to {MAX_THREADS}, got {value}")
    return value


def default_num_threads() -> int:
    """The thread count implied by the environment (see the module docstring)."""
    for var in ("FASTGRAPH_NUM_THREADS", "OMP_NUM_THREADS"):
        raw = os.environ.get(var, "").strip()
        if not raw:
            continue
        # OMP_NUM_THREADS may be a nested list such as "4,2"; the outer level is what we use.
        first = raw.split(",")[0].strip()
        try:
            return _validate(int(first), source=var)
        except (TypeError, ValueError):
            # A bad environment must not make `import fastgraph` fail; say so and fall through.
            warnings.warn(
                f"ignoring {var}={raw!r}: not a positive integer up to {MAX_THREADS}",
                RuntimeWarning, stacklevel=2
            )
    return _usable_cpus()


_num_threads: int = default_num_threads()


def get_num_threads() -> int:
    """Number of threads the compiled kernels use.

    >>> import fastgraph as fg
    >>> fg.get_num_threads() >= 1
    True
    """
    return _num_threads


def set_num_threads(n: int) -> None:
    """Set the number of threads the compiled kernels use (a positive integer).

    >>> import fastgraph as fg
    >>> old = fg.get_num_threads()
    >>> fg.set_num_threads(1); fg.get_num_threads()
    1
    >>> fg.set_num_threads(old)
    """
    global _num_threads
    _num_threads = _validate(n)


try:   # NumPy 2 keeps np.errstate in a context variable: a new object whenever it changes
    from numpy._core._ufunc_config import _extobj_contextvar as _NP_ERRSTATE
except ImportError:  # pragma: no cover - another NumPy layout: no caching
    _NP_ERRSTATE = None
_fp_cache: list = [None, None, False]  # [NumPy's error state, the filters seen, the answer]


def fp_errors_may_raise() -> bool:
    """Whether a floating-point exception in a NumPy call may raise now: ``np.errstate(...=
    'raise')`` or ``'call'``, or a warnings filter turning NumPy's RuntimeWarnings into errors.
    NumPy raises such an error *after* writing ``out=``, so code that updates arrays in place
    computes into fresh arrays first while this holds (the eager optimizers, the static plans'
    in-place updates): nothing is left half-updated.  The answer is cached while NumPy's error
    state is the same object and the warnings filters hold the same entries (~0.4 us instead of
    ~3 us per call; the objects themselves are kept, so no reused id can match)."""
    f = tuple(warnings.filters)
    state = None
    if _NP_ERRSTATE is not None:
        state = _NP_ERRSTATE.get()
        if state is _fp_cache[0] and f == _fp_cache[1]:
            return _fp_cache[2]
    import numpy as np

    answer = False
    for v in np.geterr().values():
        if v == "raise" or v == "call":
            answer = True
    for flt in f:
        if flt[0] == "error" and issubclass(RuntimeWarning, flt[2]):
            answer = True
    if state is not None:
        _fp_cache[0], _fp_cache[1], _fp_cache[2] = state, f, answer
    return answer
