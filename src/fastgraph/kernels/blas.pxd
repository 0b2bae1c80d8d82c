# C-level API of fastgraph.kernels.blas: NumPy's own gemm for other kernels (convolution):
#     from fastgraph.kernels.blas cimport gemm_available, sgemm_rm, dgemm_rm
from libc.stdint cimport int64_t

# whether ``configure`` installed the library's functions
cdef bint gemm_available() noexcept nogil
# row-major ``c = alpha * op(a) @ op(b) + beta * c`` (``ta``/``tb``: transpose the operand);
# callers check gemm_available() first
cdef void sgemm_rm(bint ta, bint tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   float *c, int64_t ldc) noexcept nogil
cdef void dgemm_rm(bint ta, bint tb, int64_t m, int64_t n, int64_t k, double alpha,
                   const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                   double *c, int64_t ldc) noexcept nogil
# ``acc += a @ b`` by one gemm with beta = 1 where that is ``acc + np.matmul(a, b)`` bit for
# bit: 0 refused (nothing written), 1 done, 2 done with a floating-point exception (see blas.pyx)
cdef int accumulate_matmul_c(object a, object b, object acc) except -1
