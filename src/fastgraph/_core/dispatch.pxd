# C-level API of fastgraph._core.dispatch, for the engines that register with it:
#     from fastgraph._core.dispatch cimport OpDef, apply, set_recorder, recorder_t
from fastgraph.kernels.elementwise cimport ew_kernel


cdef class OpDef:
    # what it computes
    cdef public str name
    cdef public object forward
    cdef public object vjps
    cdef public object shape
    cdef public bint elementwise
    cdef public bint differentiable
    cdef public bint variadic
    cdef readonly bint complex_vjps    # the VJPs hold for complex values (autograd's convention)
    # eager fast paths
    cdef public object operator
    cdef public object scalar_math
    cdef readonly tuple eager_vjps     # compiled VJPs for plain-array backward passes
    cdef ew_kernel kernel              # compiled elementwise kernel on small float arrays
    # facts the static passes ask (see the class docstring)
    cdef readonly object opcode
    cdef readonly bint cheap
    cdef readonly bint fuse_alone
    cdef readonly object compares
    cdef readonly bint broadcasting
    cdef readonly object reduction
    cdef readonly bint unbroadcast
    cdef readonly object stride0_operand
    cdef readonly object blas
    cdef readonly tuple shape_only
    cdef readonly object right_identity
    cdef readonly object left_identity
    cdef readonly bint noop_same_shape
    cdef readonly bint involution
    cdef readonly object permutation
    cdef readonly bint distinct
    cdef readonly bint stateful
    cdef readonly bint same_positives
    cdef readonly bint one_hot
    cdef readonly object computed_with
    cdef readonly object epilogue
    cdef readonly object activation
    # the public face: function, namespaces, method and operator forms, NumPy routing
    cdef public object api


# The eager engine's recorder: ``record(op, args, attrs)`` for arguments holding an instance of
# the type it registers (the eager Tensor's compiled base).
ctypedef object (*recorder_t)(OpDef, tuple, object)
cdef int set_recorder(type tensor_type, recorder_t record) except -1

cpdef object apply(OpDef op, tuple args, object attrs)
cpdef bint holds_graph_value(tuple values) except -1
