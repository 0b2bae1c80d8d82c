# C-level API of fastgraph.kernels.toposort, for other extensions (tape walker, static planner):
#     from fastgraph.kernels.toposort cimport toposort_csr_nogil
from libc.stdint cimport int64_t

# Kahn's algorithm over a CSR graph with n = indptr.shape[0] - 1 nodes: writes a topological
# order into order[0:n] and returns how many nodes were placed (< n means the graph has a cycle).
# indeg must have room for n entries; it is overwritten (on return, indeg[v] > 0 exactly for the
# nodes that could not be placed).  Inputs must be valid (0 <= indices < n, indptr monotone).
cdef int64_t toposort_csr_nogil(const int64_t[::1] indptr, const int64_t[::1] indices,
                                int64_t[::1] indeg, int64_t[::1] order) noexcept nogil
