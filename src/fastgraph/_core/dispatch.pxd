# C-level API of fastgraph._core.dispatch, for the engines that register with it:
#     from fastgraph._core.dispatch cimport OpDef, apply, set_recorder, recorder_t
from fastgraph.kernels.elementwise cimport ew_kernel


cdef class OpDef:
    cdef public str name
    cdef public object forward
    cdef public object vjps
    cdef public object shape
    cdef public bint elementwise
    cdef public object opcode
    cdef public bint differentiable
    cdef public bint variadic
    cdef public object operator
    cdef public object scalar_math
    # compiled VJPs for plain-array backward passes (see set_eager_vjps)
    cdef readonly tuple eager_vjps
    # the op's compiled elementwise kernel on small float arrays (see set_kernel)
    cdef ew_kernel kernel


# The eager engine's recorder: ``record(op, args, attrs)`` for arguments holding an instance of
# the type it registers (the eager Tensor's compiled base).
ctypedef object (*recorder_t)(OpDef, tuple, object)
cdef int set_recorder(type tensor_type, recorder_t record) except -1

cpdef object apply(OpDef op, tuple args, object attrs)
cpdef bint holds_graph_value(tuple values) except -1
