# Declarations of the OpenMP shims in fg_openmp_helpers.h, for any .pyx to cimport:
#     from fastgraph.kernels.openmp_helpers cimport fg_omp_get_thread_num
# They are safe to call with or without OpenMP compiled in.
cdef extern from "fg_openmp_helpers.h" nogil:
    int FG_OPENMP_ENABLED
    int fg_omp_get_max_threads()
    int fg_omp_get_thread_num()
    int fg_omp_get_num_threads()
    void fg_omp_set_num_threads(int n)
