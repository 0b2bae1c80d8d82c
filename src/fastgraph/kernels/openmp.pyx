"""Build facts about OpenMP, readable from Python (used by ``python -m fastgraph info``)."""
from fastgraph.kernels.openmp_helpers cimport (
    FG_OPENMP_ENABLED, fg_omp_get_max_threads, fg_omp_set_num_threads,
)


def openmp_enabled():
    """True when the extensions were compiled with OpenMP.

    >>> from fastgraph.kernels.openmp import openmp_enabled
    >>> openmp_enabled() in (True, False)
    True
    """
    return bool(FG_OPENMP_ENABLED)


def omp_max_threads():
    """The OpenMP runtime's default team size (1 without OpenMP)."""
    return fg_omp_get_max_threads()


def omp_set_num_threads(int n):
    """Set the OpenMP runtime's default team size (no-op without OpenMP).

    fastgraph's kernels take their thread count as an argument (see ``fastgraph.set_num_threads``);
    this only matters for code that relies on the runtime default.
    """
    if n < 1:
        raise ValueError(f"number of threads must be >= 1, got {n}")
    fg_omp_set_num_threads(n)
