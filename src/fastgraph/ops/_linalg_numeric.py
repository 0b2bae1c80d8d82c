"""NumPy/LAPACK computations behind the linear-algebra declarations (arrays only, no ops).

* :func:`over_batch` applies a 2-D routine over broadcast leading (batch) axes, with SciPy's
  rule for a right-hand side: 1-D is a vector, 2-D or more a (batch of) matrices;
* :func:`cholesky_grad` is the Cholesky factorisation's reverse mode, blocked so that it costs
  about as much as the factorisation itself (BLAS-3 products and triangular solves on blocks,
  never an inverse);
* the ``pack_*``/``*_layout`` helpers put a decomposition's several results into one array (one
  op, one LAPACK call: the results are slices of it).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as _sla
from scipy.linalg import blas as _blas

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


# ---- triangular solves ----------------------------------------------------------------------
def trsolve(a, b, lower: bool, trans: int = 0, unit_diagonal: bool = False):
    """``op(a)^-1 b`` for a triangular 2-D ``a`` (only its ``lower``/upper triangle is read);
    ``trans`` 0: ``a``, 1: ``a.T``, 2: ``a^H``.  LAPACK's ``trtrs`` through SciPy."""
    return _sla.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                                 check_finite=False)


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
        zt = trsolve(L, P.T, lower=True, trans=1)          # (P L^-1)^T = L^-T P^T
        S = trsolve(L, zt.T, lower=True, trans=1)          # L^-T (P L^-1)
    else:  # a batch of small blocks: NumPy's batched solves
        Lt = np.swapaxes(L, -1, -2)
        zt = np.linalg.solve(Lt, np.swapaxes(P, -1, -2))
        S = np.linalg.solve(Lt, np.swapaxes(zt, -1, -2))
    # (a new array: an in-place sum with its own transpose makes NumPy solve for the overlap)
    S = S + np.swapaxes(S, -1, -2)
    S *= 0.5
    return S


def _trsm_right_lower(L, B):
    """``B L^-1`` for a lower-triangular ``L`` (BLAS ``trsm`` on the transposed, C-ordered
    views: Fortran sees ``L^T Y = B^T`` with ``Y = (B L^-1)^T``)."""
    trsm = _blas.dtrsm if L.dtype == np.float64 else _blas.strsm
    Lt = np.ascontiguousarray(L).T       # Fortran-ordered L^T (no copy when L is C-ordered)
    Bt = np.array(B, order="C", copy=True).T
    y = trsm(1.0, Lt, Bt, side=0, lower=0, trans_a=0, diag=0, overwrite_b=1)
    return y.T


def _cholesky_grad_2d(L, X):
    n = L.shape[0]
    if n <= CHOLESKY_GRAD_BLOCK:
        return _cholesky_grad_closed(L, X)
    # A = [[A11, A21^T], [A21, A22]]:  L11 = chol(A11), L21 = A21 L11^-T,
    # L22 = chol(A22 - L21 L21^T).  Backwards through the three steps, bottom-right first.
    k = n // 2
    L11, L21, L22 = L[:k, :k], L[k:, :k], L[k:, k:]
    G22 = _cholesky_grad_2d(L22, X[k:, k:])
    X21 = X[k:, :k] - 2.0 * (G22 @ L21)                     # through L21 L21^T in A22's factor
    W = _trsm_right_lower(L11, X21)                        # d/dA21 = X21 L11^-1
    X11 = np.tril(X[:k, :k]) - np.tril(W.T @ L21)            # through L21 = A21 L11^-T
    G11 = _cholesky_grad_2d(L11, X11)
    W *= 0.5                                                 # A21 and A12 share it
    G = np.empty_like(G22, shape=(n, n))
    G[:k, :k] = G11
    G[k:, k:] = G22
    G[k:, :k] = W
    G[:k, k:] = W.T
    return G


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
        return _cholesky_grad_2d(L, X)
    batch = np.broadcast_shapes(L.shape[:-2], X.shape[:-2])
    n = L.shape[-1]
    L = np.broadcast_to(L, batch + (n, n))
    X = np.broadcast_to(X, batch + (n, n))
    if n <= 32:
        return _cholesky_grad_closed(L, X)
    out = np.empty(batch + (n, n), dtype=dtype)
    for idx in np.ndindex(*batch):
        out[idx] = _cholesky_grad_2d(L[idx], X[idx])
    return out
