# C-level API of fastgraph.kernels.elementwise: compiled elementwise loops on small float arrays,
# for the dispatcher (plain values) and the eager tape (forward and backward):
#     from fastgraph.kernels.elementwise cimport ew_kernel, ew, same_layout, ...
cimport numpy as cnp
from fastgraph.kernels.ufunc_loops cimport loop_t


# One op's elementwise kernel: its float64 [0] and float32 [1] inner loops, each a
# ``PyUFuncGenericFunction`` with its ``data`` argument.
ctypedef struct ew_kernel:
    int nin            # 0: no kernel; else 1 or 2 inputs
    bint any_size      # also run on arrays of any size when a new array is written
    loop_t loop[2]
    void* data[2]


# ``k`` from a NumPy ufunc's own dd->d / ff->f loops (1), or left empty (0) for a ufunc that has
# none of one or two inputs
cdef int kernel_of_ufunc(ew_kernel* k, object ufunc) except -1
# ``k`` from a built-in loop: "tanh_grad", "sigmoid_grad", "relu_grad" or "relu" (1; 0 when
# NumPy's loop it builds on is missing); ValueError for another name
cdef int builtin_kernel(ew_kernel* k, str name) except -1
# ``k`` applied to ``x`` (and ``y``), or None where NumPy must compute it (see elementwise.pyx)
cdef object ew(ew_kernel* k, object x, object y, object into, object acc)
cpdef object sum_to_shape_of(object g, object x)


cdef inline bint same_dims(cnp.ndarray a, cnp.ndarray b):
    cdef int nd = cnp.PyArray_NDIM(a), k
    if nd != cnp.PyArray_NDIM(b):
        return False
    cdef cnp.npy_intp* da = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp* db = cnp.PyArray_DIMS(b)
    for k in range(nd):
        if da[k] != db[k]:
            return False
    return True


cdef inline bint same_layout(cnp.ndarray a, cnp.ndarray b):
    """Same shape and dtype, compared in C (builtin dtypes are singletons)."""
    return same_dims(a, b) and cnp.PyArray_DESCR(a) == cnp.PyArray_DESCR(b)


cdef inline object scalar_if_0d(object v):
    """A 0-d ndarray as its NumPy scalar (scalar arithmetic is ~7x cheaper); anything else as
    it is."""
    if cnp.PyArray_CheckExact(v) and cnp.PyArray_NDIM(<cnp.ndarray>v) == 0:
        return (<cnp.ndarray>v)[()]
    return v
