# NumPy ufunc inner loops, called directly on raw buffers (the eager tape's small-array fast
# path and the fused-kernel VM both use them).  One definition, inlined into each module:
#     from fastgraph.kernels.ufunc_loops cimport loop_t, find_loop
cimport numpy as cnp

ctypedef void (*loop_t)(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil


cdef inline int find_loop(object ufunc_obj, int nargs, char tc, loop_t* fn,
                          void** data) except -1:
    """Find the inner loop of ``ufunc_obj`` whose types are all ``tc`` (e.g. ``dd->d``): 1 and
    ``fn``/``data`` set when there is one, else 0 (and both NULL)."""
    cdef cnp.ufunc uf = <cnp.ufunc?>ufunc_obj
    cdef int i, j
    cdef bint ok
    fn[0] = NULL
    data[0] = NULL
    if uf.nargs != nargs or uf.functions == NULL or uf.types == NULL:
        return 0
    for i in range(uf.ntypes):
        ok = True
        for j in range(nargs):
            if uf.types[i * nargs + j] != tc:
                ok = False
                break
        if ok and uf.functions[i] != NULL:
            fn[0] = <loop_t><void*>uf.functions[i]
            data[0] = uf.data[i] if uf.data != NULL else NULL
            return 1
    return 0
