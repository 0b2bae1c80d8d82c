"""Linear algebra: matmul (batched, ``@``), dot, outer, tensordot, trace, and ``fg.linalg``
(``einsum`` is in ``products.py``)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._core import TOP, TOP_TF, G, Kernel, X0, X1, apply, defop, defun
from .._core import shapes as _shapes

from .. import ops as F


def _matmul_vjp_a(g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * b
    if b.ndim == 1:  # g is (..., n): an outer product with b
        return F.matmul(F.expand_dims(g, -1), F.expand_dims(b, 0))
    if a.ndim == 1:  # g is (..., m): a row vector times b^T
        if b.ndim == 2:  # (a vector-matrix product: g @ b^T, no axis added and removed)
            return F.matmul(g, _mT(b))
        return F.squeeze(F.matmul(F.expand_dims(g, -2), _mT(b)), -2)
    return F.matmul(g, _mT(b))


def _matmul_vjp_b(g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if a.ndim == 1:  # g is (..., m): an outer product with a
        return F.matmul(F.expand_dims(a, -1), F.expand_dims(g, -2))
    if b.ndim == 1:  # g is (..., n): a^T times a column vector
        if a.ndim == 2:  # (a matrix-vector product: a^T @ g, no axis added and removed)
            return F.matmul(_mT(a), g)
        return F.squeeze(F.matmul(_mT(a), F.expand_dims(g, -1)), -1)
    return F.matmul(_mT(a), g)


def matmul(a, b):
    """Matrix product with NumPy's ``@`` rules (1-D promotion, broadcast batch dimensions).

        >>> fg.matmul(fg.ones((2, 3)), fg.ones(3))  # doctest: +SKIP
    """
    return apply(matmul.op, (a, b), None)


# Plain-array backward passes of 2-D products (every dense layer) call np.matmul on transposed
# views directly: the rules' last lines, without their Python frames (tests check them against
# the rules).  Other ranks, and create_graph=True, run the rules.
matmul = defop("matmul", np.matmul, _matmul_vjp_a, _matmul_vjp_b, function=matmul,
               shape=_shapes.matmul, blas="product",
               eager_vjps=(Kernel("matmul", G, X1.T), Kernel("matmul", X0.T, G)),
               exports=TOP, operators=("__matmul__", "__rmatmul__"), complex_vjps=True)


def _shape(x) -> tuple:
    return x.shape if hasattr(x, "shape") else np.shape(x)


def _matmul_nt_forward(a, b):
    return np.matmul(a, b.T)


def _matmul_nt_vjp_a(g, ans, a, b):
    return F.matmul(g, b)


def _matmul_nt_vjp_b(g, ans, a, b):
    if _ndim(a) != 2:    # (..., k): every row of every batch is one sample
        n, k = _shape(b)
        g, a = F.reshape(g, (-1, n)), F.reshape(a, (-1, k))
    return F.matmul(F.transpose(g), a)


def _matmul_nt_shape(shapes, **_):
    a, b = shapes
    if len(b) != 2 or len(a) == 0:
        raise ValueError(f"matmul_nt: expected an input (..., k) and a 2-D weight (n, k), got "
                         f"shapes {tuple(a)} and {tuple(b)}")
    if a[-1] is not None and b[1] is not None and a[-1] != b[1]:
        raise ValueError(f"matmul_nt: shapes {tuple(a)} and {tuple(b)} are not aligned "
                         f"({a[-1]} (dim {len(a) - 1}) != {b[1]} (dim 1))")
    return tuple(a[:-1]) + (b[0],)


def matmul_nt(a, b):
    """``a @ b.T`` for a 2-D ``b`` ``(n, k)`` and ``a`` ``(..., k)``: a dense layer whose weight is
    stored ``(out, in)`` (PyTorch's ``linear``).  Its gradient for ``b`` is the product
    ``g.T @ a`` itself, an array in ``b``'s layout, not the transpose of ``a.T @ g``, so the
    weight's update reads contiguous memory.

        >>> fg.ops.matmul_nt(fg.ones((2, 3)), fg.ones((4, 3))).shape  # doctest: +SKIP
        (2, 4)
    """
    return apply(matmul_nt.op, (a, b), {})


matmul_nt = defop("matmul_nt", _matmul_nt_forward, _matmul_nt_vjp_a, _matmul_nt_vjp_b,
                  function=matmul_nt, shape=_matmul_nt_shape,
                  eager_vjps=(Kernel("matmul", G, X1), Kernel("matmul", G.T, X0)))




def _ndim(x) -> int:
    return x.ndim if hasattr(x, "ndim") else np.ndim(x)


def dot(a, b):
    """``np.dot`` for scalars, vectors and matrices (N-D ``dot`` is not supported: use matmul)."""
    if _ndim(a) == 0 or _ndim(b) == 0:
        return F.multiply(a, b)
    if _ndim(a) <= 2 and _ndim(b) <= 2:
        return matmul(a, b)
    raise ValueError(f"dot: only arrays of up to 2 dimensions are supported "
                     f"(got {_ndim(a)}-D and {_ndim(b)}-D); use matmul or einsum")


dot = defun(dot, exports=TOP, methods=True)


def outer(a, b):
    """Outer product of two vectors (inputs are flattened, as NumPy does)."""
    return F.multiply(F.reshape(a, (-1, 1)), F.reshape(b, (1, -1)))


outer = defun(outer, exports=TOP)


# ---- fg.linalg ------------------------------------------------------------------------------
def _mT(x):
    return F.swapaxes(x, -1, -2)


def _square_shape(name):
    def rule(shapes, **_):
        s = tuple(shapes[0])
        if len(s) < 2 or (s[-1] is not None and s[-2] is not None and s[-1] != s[-2]):
            raise ValueError(f"{name}: last 2 dimensions of the array must be square, got shape {s}")
        return s
    return rule


def inv(a):
    """Matrix inverse (batched)."""
    return apply(inv.op, (a,), {})


inv = defop("inv", np.linalg.inv,
            lambda g, ans, a: -F.matmul(_mT(ans), F.matmul(g, _mT(ans))),
            shape=_square_shape("inv"), function=inv, blas="lapack", exports=("linalg",),
            complex_vjps=True)


def _solve_vjp_a(g, ans, a, b):
    gb = F.solve(_mT(a), g)
    if b.ndim == 1:
        return -F.matmul(F.expand_dims(gb, -1), F.expand_dims(ans, -2))
    return -F.matmul(gb, _mT(ans))


def _solve_shape(shapes, **_):
    a, b = shapes
    _square_shape("solve")([a])
    if len(b) == 1:
        return tuple(b)
    return _shapes.matmul([a, b], op="solve")


def solve(a, b):
    """Solve ``a @ x = b`` (``b`` a vector or a batch of matrices)."""
    return apply(solve.op, (a, b), {})


solve = defop("solve", np.linalg.solve, _solve_vjp_a,
              lambda g, ans, a, b: F.solve(_mT(a), g), shape=_solve_shape,
              function=solve, blas="lapack", exports=("linalg",), complex_vjps=True)


def _adjugate_forward(a):
    """adj(a) = det(a) inv(a), from the SVD a = U diag(s) Vh so that singular matrices work too:
    adj(a) = det(U) det(Vh) Vh^T diag(prod_{j != i} s_j) U^T (the products without division)."""
    a = np.asarray(a)
    if a.dtype.kind not in "fc":
        a = a.astype(np.float64)
    u, s, vh = np.linalg.svd(a)
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    sign = np.linalg.det(u) * np.linalg.det(vh)
    if a.dtype.kind == "c":   # unitary factors: their inverses are conjugate transposes
        u, vh = u.conj(), vh.conj()
    adj = np.matmul(np.swapaxes(vh, -1, -2) * (before * after)[..., None, :],
                    np.swapaxes(u, -1, -2))
    return adj * sign[..., None, None]


def _adjugate_vjp(G, ans, a):
    # adj(a) = det(a) inv(a) for invertible a: d adj = det(a) (tr(a^-1 da) a^-1 - a^-1 da a^-1),
    # so the VJP is det(a) (<G, a^-1> a^-T - a^-T G a^-T).  (A second derivative at a singular
    # matrix is not supported: inv raises there.)
    ainv_t = _mT(F.inv(a))
    d = F.expand_dims(F.det(a), (-1, -2))
    t = F.sum(G * _mT(ainv_t), axis=(-1, -2), keepdims=True)
    return d * (t * ainv_t - F.matmul(ainv_t, F.matmul(G, ainv_t)))


def adjugate(a):
    """The adjugate ``det(a) * inv(a)`` (batched), defined for singular matrices too (the
    gradient of :func:`det` is its transpose).

        >>> fg.ops.adjugate(np.array([[1.0, 2.0], [2.0, 4.0]]))  # doctest: +SKIP
        array([[ 4., -2.],
               [-2.,  1.]])
    """
    return apply(adjugate.op, (a,), {})


adjugate = defop("adjugate", _adjugate_forward, _adjugate_vjp,
                 shape=_square_shape("adjugate"), function=adjugate, complex_vjps=True)


# d det(a) / da = adj(a)^T: det(a) a^-T for invertible a, and still the derivative (the
# cofactors, a polynomial in the entries) for singular a, where inv raises.  (PyTorch 2.13
# returns zeros at exactly singular matrices, which is not the derivative.)


def det(a):
    """Determinant (batched)."""
    return apply(det.op, (a,), {})


det = defop("det", np.linalg.det,
            lambda g, ans, a: F.expand_dims(g, (-1, -2)) * _mT(F.adjugate(a)),
            shape=lambda shapes, **_: _square_shape("det")(shapes)[:-2],
            function=det, blas="lapack", exports=("linalg",), complex_vjps=True)


# log|det a| = Re(log det a): d = Re tr(a^-1 da), so the gradient is g a^-T for complex a too
_logabsdet = defop("logabsdet", lambda a: np.linalg.slogdet(a)[1],
                   lambda g, ans, a: F.expand_dims(g, (-1, -2)) * _mT(F.inv(a)),
                   shape=lambda shapes, **_: _square_shape("slogdet")(shapes)[:-2],
                   blas="lapack", complex_vjps=True)


def _sign_of_det(a):
    return np.linalg.slogdet(a)[0]


_signdet = defop("signdet", _sign_of_det, None,
                 shape=lambda shapes, **_: _square_shape("slogdet")(shapes)[:-2],
                 differentiable=False, blas="lapack")


def _phasedet_vjp(g, ans, a):
    # s = det / |det|: ds = s i Im(tr(a^-1 da)), so the gradient is i Im(g s) a^-T
    return F.expand_dims(F.imag(g * ans) * 1j, (-1, -2)) * _mT(F.inv(a))


# a complex matrix's sign moves with it (a real one's is piecewise constant: signdet above)
_phasedet = defop("phasedet", _sign_of_det, _phasedet_vjp,
                  shape=lambda shapes, **_: _square_shape("slogdet")(shapes)[:-2],
                  blas="lapack", complex_vjps=True)


class SlogdetResult(NamedTuple):
    """What ``slogdet`` returns: NumPy's ``SlogdetResult`` (``.sign``, ``.logabsdet``; unpacks
    as ``sign, logabsdet``), holding Tensors, graph Nodes or NumPy values."""
    sign: Any
    logabsdet: Any


def slogdet(a):
    """``SlogdetResult(sign, logabsdet)`` of a (batched) matrix, NumPy's namedtuple:
    ``log|det|`` is differentiable, and so is a complex matrix's sign ``det / |det|`` (a real
    matrix's is piecewise constant and carries no gradient)."""
    sign = _phasedet if F.elementwise._is_complex(a) else _signdet
    return SlogdetResult(apply(sign.op, (a,), {}), apply(_logabsdet.op, (a,), {}))


slogdet = defun(slogdet, exports=("linalg",))


# ---- trace and tensordot --------------------------------------------------------------------------
def trace(x, offset=0, axis1=0, axis2=1):
    """Sum along a diagonal, NumPy's ``np.trace``: ``sum(diagonal(x, offset, axis1, axis2),
    axis=-1)``, which is how NumPy computes it (the same bits)."""
    return F.sum(F.diagonal(x, offset, axis1, axis2), axis=-1)


trace = defun(trace, exports=TOP, methods=True)


def _tensordot_axes(a_shape, b_shape, axes):
    """NumPy's ``axes`` (an int N, or a pair of axis lists) as two tuples of non-negative axes."""
    na, nb = len(a_shape), len(b_shape)
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise ValueError("tensordot: axes must be an integer or a pair of axis sequences")
        ax_a, ax_b = axes
        ax_a = tuple(ax_a) if isinstance(ax_a, (tuple, list)) else (ax_a,)
        ax_b = tuple(ax_b) if isinstance(ax_b, (tuple, list)) else (ax_b,)
    else:
        k = _shapes.as_int(axes, "tensordot", "axes")
        if k < 0 or k > min(na, nb):
            raise ValueError(f"tensordot: axes={k} does not fit operands of shapes "
                             f"{tuple(a_shape)} and {tuple(b_shape)}")
        ax_a, ax_b = tuple(range(na - k, na)), tuple(range(k))
    ax_a = tuple([_shapes.check_axis(i, na, "tensordot", a_shape) for i in ax_a])
    ax_b = tuple([_shapes.check_axis(i, nb, "tensordot", b_shape) for i in ax_b])
    if len(ax_a) != len(ax_b) or len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
        raise ValueError(f"tensordot: shape-mismatch for sum (axes {ax_a} and {ax_b})")
    for i, j in zip(ax_a, ax_b):
        if a_shape[i] is not None and b_shape[j] is not None and a_shape[i] != b_shape[j]:
            raise ValueError(f"tensordot: shape-mismatch for sum (shapes {tuple(a_shape)} and "
                             f"{tuple(b_shape)}, axes {ax_a} and {ax_b})")
    return ax_a, ax_b


def _tensordot_shape(shapes, axes):
    a, b = (tuple(s) for s in shapes)
    ax_a, ax_b = _tensordot_axes(a, b, axes)
    return (tuple(d for i, d in enumerate(a) if i not in ax_a)
            + tuple(d for i, d in enumerate(b) if i not in ax_b))


def _argsort(order):
    return tuple(int(i) for i in np.argsort(order, kind="stable"))


def _tensordot_vjp_a(g, ans, a, b, axes):
    ax_a, ax_b = axes
    free_a = [i for i in range(_ndim(a)) if i not in ax_a]
    free_b = tuple(i for i in range(_ndim(b)) if i not in ax_b)
    nfa = len(free_a)
    # g's b-part contracted with b's free axes: a's free axes, then b's contracted axes in b's
    # order, which stand for the a axes paired with them
    r = tensordot(g, b, (tuple(range(nfa, nfa + len(free_b))), free_b))
    return F.transpose(r, _argsort(free_a + [ax_a[ax_b.index(j)] for j in sorted(ax_b)]))


def _tensordot_vjp_b(g, ans, a, b, axes):
    ax_a, ax_b = axes
    free_a = tuple(i for i in range(_ndim(a)) if i not in ax_a)
    free_b = [i for i in range(_ndim(b)) if i not in ax_b]
    r = tensordot(a, g, (free_a, tuple(range(len(free_a)))))
    return F.transpose(r, _argsort([ax_b[ax_a.index(i)] for i in sorted(ax_a)] + free_b))


def tensordot(a, b, axes=2):
    """NumPy's ``np.tensordot`` (its own function: the same bits), differentiable in both
    operands: ``axes`` is N (the last N axes of ``a`` with the first N of ``b``) or a pair of
    axis lists."""
    a = F.shape._as_operand(a)
    b = F.shape._as_operand(b)
    ax = _tensordot_axes(tuple(_shape(a)), tuple(_shape(b)), axes)
    return apply(tensordot.op, (a, b), {"axes": ax})


tensordot = defop("tensordot", lambda a, b, axes: np.tensordot(a, b, axes),
                  _tensordot_vjp_a, _tensordot_vjp_b, shape=_tensordot_shape,
                  function=tensordot, exports=TOP_TF, complex_vjps=True)


# ---- norm -------------------------------------------------------------------------------------
_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def _norm_ord(ord):
    if ord is None or isinstance(ord, str):
        return ord
    if isinstance(ord, (bool, np.bool_)):
        raise TypeError(f"norm: ord must be a number, a string or None, got {ord!r}")
    f = float(ord)
    return int(f) if f.is_integer() else f


def _norm_reduced(ndim, axis):
    """The axes a norm reduces: all of them for ``axis=None``."""
    if axis is None:
        return tuple(range(ndim))
    return (axis,) if isinstance(axis, int) else tuple(axis)


def _abs_derivative(x):
    """d|x|: ``sign(x)`` for real values; ``conj(x) / |x|`` for complex ones, autograd's
    convention (``d/dre - i d/dim`` of ``|re + i im|``); 0 at 0 either way."""
    if not F.elementwise._is_complex(x):
        return F.sign(x)
    r = F.abs(x)
    zero = F.equal(r, 0)
    return F.where(zero, 0, F.conj(x) / F.where(zero, 1, r))


def _norm_vjp(g, ans, x, ord, axis, keepdims):
    nd = _ndim(x)
    red = _norm_reduced(nd, axis)
    gk = g if keepdims or axis is None else F.expand_dims(g, tuple(sorted(red)))
    ak = ans if keepdims or axis is None else F.expand_dims(ans, tuple(sorted(red)))
    matrix = len(red) == 2 and ord is not None  # (axis=None with an ord: nd is 1 or 2)
    if ord is None or ord == "fro" or (ord == 2 and not matrix):
        # x / |x|; at |x| = 0 there is no derivative: take 0, as PyTorch does (x is 0 there)
        # (complex values: conj(x) / |x|, autograd's convention)
        xc = F.conj(x) if F.elementwise._is_complex(x) else x
        return gk * xc / F.where(F.equal(ak, 0), 1, ak)
    if matrix:
        row, col = red
        if ord in (1, -1, np.inf, -np.inf):
            # max (min) over one axis of the absolute sums over the other; ties split evenly
            summed, over = (row, col) if ord in (1, -1) else (col, row)
            hit = F.equal(F.sum(F.abs(x), axis=summed, keepdims=True), ak)
            count = F.sum(hit, axis=over, keepdims=True)
            return gk * _abs_derivative(x) * (hit / count)
        return F.linalg_decomp._spectral_norm_vjp(gk, x, ord, row, col)
    if ord == 1:
        return gk * _abs_derivative(x)
    if ord in (np.inf, -np.inf):
        hit = F.equal(F.abs(x), ak)  # the entries reaching the max (min); ties split evenly
        return gk * _abs_derivative(x) * (hit / F.sum(hit, axis=red, keepdims=True))
    if ord == 0:  # the count of non-zero entries: piecewise constant
        return F.broadcast_like(gk * 0, x)
    # sum(|x|^p)^(1/p): sign(x) (|x| / norm)^(p-1), taken as 0 where x or the norm is 0
    zero = F.logical_or(F.equal(x, 0), F.equal(ak, 0))
    r = F.where(zero, 1, F.abs(x) / F.where(F.equal(ak, 0), 1, ak))
    return F.where(zero, 0, gk * _abs_derivative(x) * F.power(r, ord - 1))


def _norm_shape(shapes, ord, axis, keepdims):
    s = tuple(shapes[0])
    if axis is None and ord is None:
        return (1,) * len(s) if keepdims else ()
    return _shapes.reduce([s], _norm_reduced(len(s), axis), keepdims, op="norm")


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's ``np.linalg.norm`` (its own function: the same values and dtypes), differentiable:
    vector norms of any order, and every matrix norm (Frobenius, ord=1, -1, inf, -inf, and
    through the singular values 2, -2 and 'nuc'), over ``axis`` (one axis, or two for matrix
    norms) with ``keepdims``; complex values in HIPS autograd's convention (``conj(x) / |x|``
    where a real ``x`` has ``sign(x)``).  Where the norm is not differentiable the gradient is
    PyTorch's choice: 0 at a zero vector (2-norm, Frobenius, p-norms), ``sign(x)`` for ord=1 (0
    at 0), ties
    of ord=inf and of the extreme singular values (ord=2, -2) split evenly; 'nuc' takes
    ``U_r Vh_r`` over the non-zero singular values (the smallest subgradient).

        >>> fg.linalg.norm(fg.tensor([[3.0, 0.0], [0.0, 4.0]]), 2)
        tensor(4.)
    """
    x = F.shape._as_operand(x)
    nd = F.shape._known_ndim(x, "norm")
    ord = _norm_ord(ord)
    if axis is None:
        if ord is not None and nd not in (1, 2):
            raise ValueError("norm: Improper number of dimensions to norm.")
        red = None if ord is None else tuple(range(nd))
    else:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        if len(axes) not in (1, 2):
            raise ValueError("norm: Improper number of dimensions to norm.")
        red = tuple([_shapes.check_axis(a, nd, "norm", _shape(x)) for a in axes])
        if len(red) == 2 and red[0] == red[1]:
            raise ValueError("norm: Duplicate axes given.")
        axis = red[0] if not isinstance(axis, (tuple, list)) else red
    if red is not None and len(red) == 1 and isinstance(ord, str):
        raise ValueError(f"norm: Invalid norm order '{ord}' for vectors")
    if red is not None and len(red) == 2 and ord not in _MATRIX_ORDS:
        raise ValueError("norm: Invalid norm order for matrices.")
    return apply(norm.op, (x,), {"ord": ord, "axis": axis,
                                  "keepdims": F.reductions._canon_keepdims(keepdims, "norm")})


norm = defop("norm", lambda x, ord, axis, keepdims: np.linalg.norm(x, ord, axis, keepdims),
             _norm_vjp, shape=_norm_shape, function=norm, exports=("linalg",), complex_vjps=True)


