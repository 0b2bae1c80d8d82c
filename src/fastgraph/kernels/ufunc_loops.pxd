# NumPy ufunc inner loops, called directly on raw buffers (the eager tape's small-array fast
# path and the fused-kernel VM both use them).  One definition, inlined into each module:
#     from fastgraph.kernels.ufunc_loops cimport loop_t, find_loop
#
# The loop table (nargs, ntypes, types, functions, data) is read through NumPy's C declaration
# of the ufunc struct, not through ``cnp.ufunc``'s Cython fields: NumPy's own .pxd has changed
# how it spells them (plain struct fields up to 2.4, inline properties from 2.5), while the C
# layout of these fields has been the same in every NumPy 2 release.  NumPy 2.5 names the field
# view ``_PyUFuncObject_GET_ITEM_DATA``; earlier releases are a plain cast.  Where the C view
# and the Python attributes ever disagree, find_loop raises instead of reading a wrong table.
cimport numpy as cnp
from cpython.object cimport PyObject

ctypedef void (*loop_t)(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil

cdef extern from *:
    """
    #include <numpy/ufuncobject.h>
    #ifdef _PyUFuncObject_GET_ITEM_DATA
    #define FG_UFUNC_FIELDS(u) (_PyUFuncObject_GET_ITEM_DATA(u))
    #else
    #define FG_UFUNC_FIELDS(u) ((PyUFuncObject *)(u))
    #endif
    static inline int fg_ufunc_nargs(PyObject *u) { return FG_UFUNC_FIELDS(u)->nargs; }
    static inline int fg_ufunc_ntypes(PyObject *u) { return FG_UFUNC_FIELDS(u)->ntypes; }
    static inline const char *fg_ufunc_types(PyObject *u) { return FG_UFUNC_FIELDS(u)->types; }
    static inline void *fg_ufunc_function(PyObject *u, int i) {
        return FG_UFUNC_FIELDS(u)->functions == NULL
            ? NULL : (void *)FG_UFUNC_FIELDS(u)->functions[i];
    }
    static inline void *fg_ufunc_data(PyObject *u, int i) {
        return FG_UFUNC_FIELDS(u)->data == NULL ? NULL : (void *)FG_UFUNC_FIELDS(u)->data[i];
    }
    """
    int fg_ufunc_nargs(PyObject* u) nogil
    int fg_ufunc_ntypes(PyObject* u) nogil
    const char* fg_ufunc_types(PyObject* u) nogil
    void* fg_ufunc_function(PyObject* u, int i) nogil
    void* fg_ufunc_data(PyObject* u, int i) nogil


cdef inline int find_loop(object ufunc_obj, int nargs, char tc, loop_t* fn,
                          void** data) except -1:
    """Find the inner loop of ``ufunc_obj`` whose types are all ``tc`` (e.g. ``dd->d``): 1 and
    ``fn``/``data`` set when there is one, else 0 (and both NULL)."""
    cdef PyObject* uf = <PyObject*>(<cnp.ufunc?>ufunc_obj)
    cdef const char* types
    cdef int i, j
    cdef bint ok
    fn[0] = NULL
    data[0] = NULL
    if fg_ufunc_nargs(uf) != ufunc_obj.nargs or fg_ufunc_ntypes(uf) != ufunc_obj.ntypes:
        raise RuntimeError(
            f"numpy.{ufunc_obj.__name__}'s loop table read through the NumPy headers fastgraph "
            f"was built with (nargs {fg_ufunc_nargs(uf)}, ntypes {fg_ufunc_ntypes(uf)}) "
            f"disagrees with the installed NumPy (nargs {ufunc_obj.nargs}, ntypes "
            f"{ufunc_obj.ntypes}): rebuild fastgraph against the installed NumPy")
    types = fg_ufunc_types(uf)
    if fg_ufunc_nargs(uf) != nargs or types == NULL:
        return 0
    for i in range(fg_ufunc_ntypes(uf)):
        ok = True
        for j in range(nargs):
            if types[i * nargs + j] != tc:
                ok = False
                break
        if ok and fg_ufunc_function(uf, i) != NULL:
            fn[0] = <loop_t>fg_ufunc_function(uf, i)
            data[0] = fg_ufunc_data(uf, i)
            return 1
    return 0
