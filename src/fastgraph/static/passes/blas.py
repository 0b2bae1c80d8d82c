"""``blas``: an update by a scaled product, ``v - c * (a @ b)``, handed to BLAS in two calls.

That is the SGD step on a weight (the gradient of ``x @ W`` is ``x.T @ delta``).  Left to the
other passes it is NumPy's product, then one fused kernel ``v - c * g`` on one thread -- one
thread because the plan runs threaded BLAS, whose spinning threads would starve a second
OpenMP thread (:mod:`fastgraph.static.blas_threads`).  Here it becomes:

* ``s = c * (a @ b)`` as one ``gemm`` with BLAS's own ``alpha = c`` (:class:`BlasMatmul`):
  the kernel scales each finished dot product once, exactly what ``np.multiply`` does to
  ``np.matmul``'s result -- unless BLAS splits the sum over ``k`` into panels, which
  :func:`gemm_exact` rules out by computing both ways on the product's own shape, once
  per shape and dtype;
* ``v - s`` as ``axpy(-1, s, v)`` (:class:`AxpySubtract`): ``-1 * s`` is exact, so its one
  rounding is that of ``v - s``.  Written into ``v`` (the ``inplace`` pass), it runs on BLAS's
  own threads -- the ones that just wrote ``s``, each on the rows it computed -- and takes
  the update off the one thread the rest of the plan runs on.

So the values are NumPy's, bit for bit, with the pass on or off (``disable=("blas",)``).
Measured on 2 cores (float32 784 x 256, the MLP's first layer, after its gradient's product):
the update took 51-60 us against 120-160 us for the one-thread pass; on 256 x 256 both took the
same, hence :data:`MIN_ELEMENTS`.  The calls reach NumPy's own OpenBLAS
(:mod:`fastgraph._numpy_blas`); with NumPy built on another BLAS the pass does nothing.

The helpers here also serve ``lower``, whose plain 2-D products make NumPy's BLAS call
directly: :func:`gemm_exact` (a direct call gives NumPy's values on this shape) and
:func:`is_matrix_transpose` (an operand BLAS reads transposed), :func:`direct_call_refused`
and :class:`BlasMatmul` (the product step itself).
"""
from __future__ import annotations

import operator
from math import prod

import numpy as np

from ...kernels import blas as _blas
from ... import _numpy_blas
from ..plan import known, live_order, resolve, users_of
from ..blas_threads import BLAS_THREADED_MNK

#: updates of fewer elements stay with the fused kernels (as fast there, measured)
MIN_ELEMENTS = 1 << 17
#: products of more multiply-adds are not checked (two products at compile time: ~0.1 s here);
#: OpenBLAS splits sums over more than 320 (float32) or 256 (float64) k anyway, measured here
MAX_CHECKED_MNK = 1 << 32
_F = (np.dtype(np.float32), np.dtype(np.float64))
_exact_cache: dict = {}


class BlasMatmul:
    """``a @ b``, times ``alpha`` when given, for operands each maybe transposed on the way in
    (last two axes: a view).  With ``direct`` (2-D operands, checked at compile time with
    :func:`direct_call_refused`) it is one BLAS call writing ``out``; otherwise, and whenever
    the operands come in another layout than the one checked, NumPy's steps -- the same
    values either way.  The ``blas`` pass's scaled products and ``lower``'s products are this."""
    __slots__ = ("alpha", "ta", "tb", "direct", "threaded_blas", "name")
    elementwise = False

    def __init__(self, ta: bool, tb: bool, direct: bool = False, alpha=None, mnk: int = 0,
                 name: str = "matmul"):
        self.alpha = alpha              # None, or a NumPy scalar of the product's dtype
        self.ta, self.tb, self.direct = ta, tb, direct
        self.threaded_blas = direct and mnk > BLAS_THREADED_MNK
        self.name = name

    def __call__(self, a, b, out=None):
        # the ndarray method, not np.swapaxes: no Python-level wrapper on every run
        if self.ta:
            a = a.swapaxes(-1, -2)
        if self.tb:
            b = b.swapaxes(-1, -2)
        alpha = self.alpha
        if self.direct and type(a) is np.ndarray and type(b) is np.ndarray:
            if out is None:
                out = np.empty((a.shape[0], b.shape[1]), a.dtype)
            if _blas.scaled_matmul(a, b, 1.0 if alpha is None else alpha, out,
                                   self.ta, self.tb) == _blas.DONE:
                return out
        # refused, or a floating-point exception: NumPy's steps warn or raise as it says
        if alpha is None:
            return np.matmul(a, b, out=out)
        return np.multiply(np.matmul(a, b), alpha, out=out)

    def __repr__(self):
        return f"<{self.name} alpha={self.alpha!r} ta={self.ta} tb={self.tb} direct={self.direct}>"


class AxpySubtract:
    """``v - s``: BLAS ``axpy`` on ``v``'s own array when written in place (``out is v``),
    NumPy's ``subtract`` otherwise (the same values)."""
    __slots__ = ()
    elementwise = True
    threaded_blas = True
    name = "axpy_subtract"

    def __call__(self, v, s, out=None):
        if out is v and type(v) is np.ndarray and type(s) is np.ndarray and \
                _blas.sub_inplace(v, s):
            return v
        return np.subtract(v, s, out=out)

    def __repr__(self):
        return "<axpy_subtract>"


def gemm_exact(dtype, a_shape, b_shape, ta: bool, tb: bool, scaled: bool = True) -> bool:
    """Does one direct BLAS call (:func:`fastgraph.kernels.blas.scaled_matmul`) give NumPy's values
    bit for bit on operands of these shapes (each C-contiguous, read transposed when ``ta``/
    ``tb``): ``np.multiply(np.matmul(a, b), alpha)`` when ``scaled``, else ``np.matmul(a, b)``
    (``alpha = 1``: the very call NumPy makes, barring a case NumPy treats otherwise)?  Computed
    both ways once per shape on random values: a sum split over ``k`` and scaled per panel
    differs on most elements; one that is not agrees on all."""
    key = (dtype, tuple(a_shape), tuple(b_shape), ta, tb, scaled)
    hit = _exact_cache.get(key)
    if hit is None:
        rng = np.random.default_rng(0)
        a = rng.standard_normal(a_shape).astype(dtype)
        b = rng.standard_normal(b_shape).astype(dtype)
        av = a.swapaxes(0, 1) if ta else a
        bv = b.swapaxes(0, 1) if tb else b
        alpha = dtype.type(0.1 if scaled else 1)   # 0.1, not a power of two: a per-panel scale shows
        ref = np.matmul(av, bv)
        if scaled:
            ref = np.multiply(ref, alpha)
        out = np.empty_like(ref)
        hit = _blas.scaled_matmul(av, bv, alpha, out, ta, tb) == _blas.DONE and \
            np.array_equal(out, ref)
        _exact_cache[key] = hit
    return hit


def _scalar_const(q, dtype):
    """The value of a 0-d constant multiplied into an array of ``dtype`` keeping that dtype,
    as NumPy converts it; ``None`` if ``q`` is not one."""
    if q.kind != "const" or np.ndim(q.value) != 0:
        return None
    value = np.asarray(q.value)
    if value.dtype.kind not in "biuf":
        return None
    if not q.weak and value.dtype != dtype:
        return None
    with np.errstate(all="ignore"):
        return dtype.type(value)


def _permutation(q):
    """The axes step ``q`` reorders (an op with a ``permutation``), or None."""
    if q.kind != "op" or q.op.permutation is None or not known(q.shape):
        return None
    return tuple(q.op.permutation(len(q.shape), **(q.attrs or {})))


def is_last_swap(q) -> bool:
    """Is step ``q`` a swap of its last two axes (as a matmul's gradient makes)?"""
    perm = _permutation(q)
    if perm is None or len(perm) < 2:
        return False
    nd = len(perm)
    return perm == tuple(range(nd - 2)) + (nd - 1, nd - 2)


def is_matrix_transpose(q) -> bool:
    """Is step ``q`` a 2-D transpose (``swapaxes``, as in gradients, or ``transpose``)?  BLAS
    reads its input as it is, transposed."""
    return _permutation(q) == (1, 0)


def direct_call_refused(dt, a, b, ta: bool, tb: bool, scaled: bool, max_mnk: int):
    """``None`` when the product of 2-D steps ``a`` and ``b`` (read transposed when ``ta``/
    ``tb``), of dtype ``dt``, may be one direct BLAS call (:class:`BlasMatmul`); otherwise why
    not, for ``explain``."""
    if dt not in _F or not (known(a.shape) and known(b.shape)) or \
            not len(a.shape) == 2 == len(b.shape) or a.dtype != dt or b.dtype != dt:
        return "not a 2-D float product of one dtype"
    m, k = a.shape[::-1] if ta else a.shape
    if m * k * (b.shape[0] if tb else b.shape[1]) > max_mnk:
        return "a product too large to check at compile time"
    if not _numpy_blas.load():
        return "NumPy's BLAS is not scipy-openblas"
    if not gemm_exact(dt, a.shape, b.shape, ta, tb, scaled):
        return "BLAS's call differs from NumPy's steps on this shape"
    return None


def blas(ir, ctx) -> None:
    order = live_order(ir)
    users = users_of(order)
    kept = {id(o) for o in ir.outputs if o is not None}
    loaded = None
    n = 0
    for u in order:
        if u.kind != "op" or u.op.operator is not operator.sub or u.attrs:
            continue
        v, w = (resolve(q) for q in u.inputs)
        if w.kind != "op" or w.op.operator is not operator.mul or w.attrs or \
                users.get(id(w)) != [u] or id(w) in kept:
            continue
        dt = u.dtype
        if dt not in _F or w.dtype != dt or v.dtype != dt or v.weak or \
                not (known(u.shape) and len(u.shape) == 2 and prod(u.shape) >= MIN_ELEMENTS) or \
                v.shape is None or tuple(v.shape) != tuple(u.shape):
            continue
        x, y = (resolve(q) for q in w.inputs)
        for mm, c in ((x, y), (y, x)):
            if mm.kind == "op" and mm.op.blas == "product" and not mm.attrs:
                break
        else:
            continue
        alpha = _scalar_const(c, dt)
        if alpha is None or mm.dtype != dt or users.get(id(mm)) != [w] or id(mm) in kept or \
                tuple(mm.shape) != tuple(u.shape):
            continue
        a, b = (resolve(q) for q in mm.inputs)
        ta, tb = is_matrix_transpose(a), is_matrix_transpose(b)
        a, b = (a.inputs[0] if ta else a), (b.inputs[0] if tb else b)
        if loaded is None:
            loaded = _numpy_blas.load()
            if not loaded:
                ctx.note("blas", "NumPy's BLAS is not scipy-openblas: nothing to do")
        if not loaded:
            break
        why = direct_call_refused(dt, a, b, ta, tb, True, MAX_CHECKED_MNK)
        if why is not None:
            ctx.note("blas", f"{u.name}: kept ({why})")
            continue
        k = a.shape[0] if ta else a.shape[1]
        w.kind, w.op, w.inputs, w.fresh = "call", None, [a, b], True
        w.fn = BlasMatmul(ta, tb, True, alpha, prod(u.shape) * k, "scaled_matmul")
        w.note = f"alpha={alpha}" + "".join(
            f", {s} transposed" for s, t in (("a", ta), ("b", tb)) if t)
        u.kind, u.op, u.inputs, u.fresh = "call", None, [v, w], True
        u.fn = AxpySubtract()
        ctx.note("blas", f"{u.name}: {v.name} - {alpha} * {mm.name} -> axpy on a gemm "
                         f"scaled by alpha ({tuple(u.shape)}, {dt})")
        n += 1
    ctx.note("blas", f"{n} update(s) by BLAS")
