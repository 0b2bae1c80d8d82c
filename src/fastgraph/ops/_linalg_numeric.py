"""NumPy/LAPACK computations behind the linear-algebra declarations (arrays only, no ops).

* :func:`over_batch` applies a 2-D routine over broadcast leading (batch) axes, with SciPy's
  rule for a right-hand side: 1-D is a vector, 2-D or more a (batch of) matrices;
* :func:`cholesky` is NumPy's factorisation through LAPACK's ``potrf`` directly;
* :func:`cholesky_grad` is the Cholesky factorisation's reverse mode, blocked so that it costs
  about as much as the factorisation itself (BLAS-3 products and triangular solves on blocks,
  never an inverse);
* the ``pack_*``/``*_layout`` helpers put a decomposition's several results into one array (one
  op, one LAPACK call: the results are slices of it).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas as _blas
from scipy.linalg import lapack as _lapack

#: below this order the Cholesky reverse mode is the closed form on the whole block
CHOLESKY_GRAD_BLOCK = 96


# ---- batches ----------------------------------------------------------------------------------
def core_ndim_rhs(b) -> int:
    """SciPy's rule for a right-hand side: 1-D is a vector, otherwise its last two axes are a
    matrix (the leading axes a batch)."""
    return 1 if np.ndim(b) == 1 else 2


def over_batch(fn, arrays, core_ndims, out_core=None):
    """``fn(*cores)`` for each element of the broadcast batch of ``arrays`` (each with
    ``core_ndims[i]`` trailing core axes), stacked; unbatched inputs call ``fn`` once.

        >>> over_batch(np.linalg.inv, [np.eye(2)[None].repeat(3, 0)], [2]).shape
        (3, 2, 2)
    """
    arrays = [np.asarray(a) for a in arrays]
    batch_shapes = [a.shape[:a.ndim - k] for a, k in zip(arrays, core_ndims)]
    if not any(batch_shapes):
        return fn(*arrays)
    batch = np.broadcast_shapes(*batch_shapes)
    arrays = [np.broadcast_to(a, batch + a.shape[a.ndim - k:]) for a, k in zip(arrays, core_ndims)]
    out = None
    for idx in np.ndindex(*batch):
        r = np.asarray(fn(*[a[idx] for a in arrays]))
        if out is None:
            out = np.empty(batch + r.shape, dtype=r.dtype)
        out[idx] = r
    if out is None:  # an empty batch: the core's shape and dtype from a zero problem
        probe = np.asarray(fn(*[np.eye(*a.shape[a.ndim - k:], dtype=a.dtype) if k == 2 else
                                np.zeros(a.shape[a.ndim - k:], a.dtype)
                                for a, k in zip(arrays, core_ndims)]))
        out = np.empty(batch + probe.shape, dtype=probe.dtype)
    return out


# ---- the Cholesky factorisation ------------------------------------------------------------
#: from this order on ``cholesky`` calls LAPACK's ``potrf`` itself
CHOLESKY_LAPACK_MIN = 64


def cholesky(a, upper: bool = False):
    """NumPy's ``np.linalg.cholesky(a, upper=upper)``: the same factor (to rounding) and the same
    ``LinAlgError``; float32/float64 matrices of order :data:`CHOLESKY_LAPACK_MIN` and more go
    to SciPy's LAPACK ``potrf`` on a Fortran view (NumPy's own call runs several times slower
    there), one call per matrix of a batch.

        >>> cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))[1, 0]
        np.float64(1.0)
    """
    a = np.asarray(a)
    if (a.ndim < 2 or a.dtype not in (np.float32, np.float64) or a.shape[-1] != a.shape[-2]
            or a.shape[-1] < CHOLESKY_LAPACK_MIN):
        return np.linalg.cholesky(a, upper=upper)
    potrf = _lapack.dpotrf if a.dtype == np.float64 else _lapack.spotrf

    def one(m):
        # Fortran reads m^T: its upper triangle is m's lower one (upper=True: the reverse), and
        # the factor it returns, transposed back, is m's
        c, info = potrf(m.T, lower=1 if upper else 0, clean=1, overwrite_a=0)
        if info != 0:
            raise np.linalg.LinAlgError("Matrix is not positive definite")
        return c.T

    return one(a) if a.ndim == 2 else over_batch(one, [a], [2])


def _phi(x):
    """The lower triangle with the diagonal halved."""
    out = np.tril(x)
    d = np.einsum("...ii->...i", out)
    d *= 0.5
    return out


def _cholesky_grad_closed(L, X):
    """``sym(L^-T Phi(L^T tril(X)) L^-1)`` by two triangular solves (a small block)."""
    P = _phi(np.swapaxes(L, -1, -2) @ np.tril(X))
    if L.ndim == 2:
        return _closed_2d(L, P)
    # a batch of small blocks: NumPy's batched solves
    Lt = np.swapaxes(L, -1, -2)
    zt = np.linalg.solve(Lt, np.swapaxes(P, -1, -2))
    S = np.linalg.solve(Lt, np.swapaxes(zt, -1, -2))
    # (a new array: an in-place sum with its own transpose makes NumPy solve for the overlap)
    S = S + np.swapaxes(S, -1, -2)
    S *= 0.5
    return S


def _trsm(L):
    return _blas.dtrsm if L.dtype == np.float64 else _blas.strsm


def _gemm(a, b, trans_a=False, trans_b=False):
    """``op(a) @ op(b)`` (C-ordered) by SciPy's BLAS ``gemm`` on the Fortran views.  The
    Cholesky reverse mode makes all its BLAS calls to SciPy's library, the one that runs its
    ``potrf`` and ``trsm``: alternating with NumPy's (a second OpenBLAS with threads of its
    own) leaves each library's idle threads spinning against the other's, many times slower
    on a busy machine."""
    gemm = _blas.dgemm if a.dtype == np.float64 else _blas.sgemm
    # Fortran sees a^T and b^T: C^T = op(b)^T op(a)^T
    return gemm(1.0, b.T, a.T, trans_a=int(trans_b), trans_b=int(trans_a)).T


def _closed_2d(L, P, out=None):
    """``sym(L^-T P L^-1)`` for a 2-D block, BLAS ``trsm`` twice on Fortran views (no copies
    but ``P``'s, which the solves overwrite); written into ``out`` when given."""
    trsm = _trsm(L)
    U = np.ascontiguousarray(L).T            # Fortran-ordered L^T, read as upper triangular
    # Fortran sees P^T (C-ordered P): Y^T = L^-T P^T, then Z^T = L^-T Y with Y = (Y^T)^T
    yt = trsm(1.0, U, np.ascontiguousarray(P).T, side=0, lower=0, trans_a=0, overwrite_b=1)
    z = trsm(1.0, U, np.asfortranarray(yt.T), side=0, lower=0, trans_a=0, overwrite_b=1)
    # z (Fortran) holds L^-T (L^-T P^T)^T = L^-T P L^-1 = S
    if out is None:
        out = np.empty(L.shape, dtype=L.dtype)
    np.add(z, z.T, out=out)
    out *= 0.5
    return out


def _trsm_right_lower(L, B):
    """``B L^-1`` for a lower-triangular ``L``, overwriting the C-ordered ``B`` (BLAS ``trsm``
    on the Fortran views: Fortran sees ``L^T Y = B^T`` with ``Y = (B L^-1)^T``)."""
    U = np.ascontiguousarray(L).T            # Fortran-ordered L^T (a copy of the block only)
    y = _trsm(L)(1.0, U, B.T, side=0, lower=0, trans_a=0, diag=0, overwrite_b=1)
    return y.T


def _cholesky_grad_2d(L, X, G):
    """Write the gradient for the factor ``L`` and cotangent ``X`` (their lower triangles)
    into ``G`` (a view of the result, n x n)."""
    n = L.shape[0]
    if n <= CHOLESKY_GRAD_BLOCK:
        _closed_2d(L, _phi(_gemm(L, np.tril(X), trans_a=True)), out=G)
        return
    # A = [[A11, A21^T], [A21, A22]]:  L11 = chol(A11), L21 = A21 L11^-T,
    # L22 = chol(A22 - L21 L21^T).  Backwards through the three steps, bottom-right first.
    k = n // 2
    L11, L21, L22 = L[:k, :k], L[k:, :k], L[k:, k:]
    G22 = G[k:, k:]
    _cholesky_grad_2d(L22, X[k:, k:], G22)
    X21 = _gemm(G22, L21)                                    # through L21 L21^T in A22's factor
    X21 *= -2.0
    X21 += X[k:, :k]
    W = _trsm_right_lower(L11, X21)                          # d/dA21 = X21 L11^-1
    # through L21 = A21 L11^-T (only X11's lower triangle is read below)
    X11 = _gemm(W, L21, trans_a=True)
    np.subtract(X[:k, :k], X11, out=X11)
    _cholesky_grad_2d(L11, X11, G[:k, :k])
    np.multiply(W, 0.5, out=G[k:, :k])                       # A21 and A12 share it
    G[:k, k:] = G[k:, :k].T


def cholesky_grad(L, X):
    """The symmetric gradient ``G`` with respect to ``A`` of ``<X, cholesky(A)>`` (``L`` the
    lower factor, only the lower triangles of ``L`` and ``X`` read):
    ``sym(L^-T Phi(L^T X) L^-1)``, ``Phi`` the lower triangle with the diagonal halved.

    Blocked (a 2x2 split, recursively, down to :data:`CHOLESKY_GRAD_BLOCK`): ~0.8 n^3 flops in
    products and triangular solves, against ~3 n^3 for the closed form on the whole matrix.
    Batched over leading axes.

        >>> L = np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
        >>> cholesky_grad(L, np.eye(2)).shape
        (2, 2)
    """
    L = np.asarray(L)
    X = np.asarray(X)
    dtype = np.result_type(L, X)
    if dtype.kind != "f" or dtype.itemsize < 4:
        dtype = np.dtype(np.float64)
    L = L.astype(dtype, copy=False)
    X = X.astype(dtype, copy=False)
    if L.ndim == 2 and X.ndim == 2:
        out = np.empty(L.shape, dtype=dtype)
        _cholesky_grad_2d(L, X, out)
        return out
    batch = np.broadcast_shapes(L.shape[:-2], X.shape[:-2])
    n = L.shape[-1]
    L = np.broadcast_to(L, batch + (n, n))
    X = np.broadcast_to(X, batch + (n, n))
    if n <= 32:
        return _cholesky_grad_closed(L, X)
    out = np.empty(batch + (n, n), dtype=dtype)
    for idx in np.ndindex(*batch):
        _cholesky_grad_2d(L[idx], X[idx], out[idx])
    return out
