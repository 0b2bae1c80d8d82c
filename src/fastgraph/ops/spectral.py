"""Discrete Fourier transforms: NumPy's ``np.fft`` (``fastgraph.numpy.fft``, ``fg.fft``), one
declaration per function, differentiable to any order in HIPS autograd's convention for
complex values (see ``docs/complex.md``).

Every transform is linear.  A complex transform's matrix is symmetric, so its VJP is the same
transform of the gradient (the same ``norm``), cut or zero-padded back to the input's sizes
(the forward pads or cuts the input to ``s``).  ``rfft*`` is the complex transform of a real
input, kept to the first ``s[-1] // 2 + 1`` entries of the last axis: its VJP zero-pads the
gradient there, transforms it, and takes the real part.  ``irfft*`` reads only the
Hermitian half (the imaginary parts of the first entry, and of the last for an even length,
are ignored): its VJP is ``c * conj(rfftn(g))`` with the dual normalisation, where ``c`` is 2 on
the entries that stand for two (conjugate) terms of the full spectrum and 1 on the others.
"""
from __future__ import annotations

import numpy as np
import scipy.fft as _sfft

from .._core import apply, defop
from .._core import shapes as _shapes

from .. import ops as F

_NORMS = ("backward", "ortho", "forward")
#: the normalisation whose scale a transform's adjoint carries: the inverse's scale of ``norm``
#: is the forward's of its dual
_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _shape_of(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _norm(norm, op):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f'{op}: invalid norm {norm!r}: use None, "backward", "ortho" or '
                         f'"forward"')
    return norm


_CANON_CACHE: dict = {}


def _canon(op, x, s, axes, kind, ndim_default):
    """``(s, axes)`` as tuples of ints for ``x``'s shape, as NumPy reads them: ``axes`` defaults
    to the last ``len(s)`` axes (all of them, or ``ndim_default``'s when ``s`` is None too),
    ``s`` to the input's sizes (``irfft``'s last to ``2 * (m - 1)``)."""
    shape = _shape_of(x)
    try:
        key = (op, shape, s, axes)
        hit = _CANON_CACHE.get(key)
    except TypeError:       # (an unhashable s or axes: a list)
        key = hit = None
    if hit is not None:
        return hit
    out = _canonical(op, shape, s, axes, kind, ndim_default)
    if key is not None and len(_CANON_CACHE) < 4096:
        _CANON_CACHE[key] = out
    return out


def _canonical(op, shape, s, axes, kind, ndim_default):
    ndim = len(shape)
    if axes is None:
        if s is not None:
            axes = tuple(range(ndim - len(s), ndim))
        elif ndim_default is None:
            axes = tuple(range(ndim))
        else:
            axes = tuple(range(ndim - ndim_default, ndim))
    axes = tuple(_shapes.check_axis(_shapes.as_int(a, op), ndim, op, shape) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: repeated axes {axes} (NumPy transforms such an axis twice) are "
                         f"not supported; call the transform twice")
    if not axes:
        raise ValueError(f"{op}: no axes to transform (input shape {shape})")
    if s is None:
        sizes = [shape[a] for a in axes]
        if any(n is None for n in sizes):
            raise ValueError(f"{op}: the input's size along axes {axes} is not known (shape "
                             f"{shape}); give s (or n)")
        if kind == "c2r":
            sizes[-1] = 2 * (sizes[-1] - 1)
        s = tuple(sizes)
    else:
        s = tuple(_shapes.as_int(n, op, "s") for n in s)
        if len(s) != len(axes):
            raise ValueError(f"{op}: s {s} and axes {axes} differ in length")
    if any(n < 1 for n in s):
        raise ValueError(f"{op}: invalid number of data points {s} (each must be at least 1)")
    return s, axes


def _out_shape(kind):
    def rule(shapes, s, axes, norm):
        out = list(shapes[0])
        for a, n in zip(axes, s):
            out[a] = n
        if kind == "r2c":
            out[axes[-1]] = s[-1] // 2 + 1
        return tuple(out)
    return rule


def _fit(v, shape, axes):
    """``v`` cut or zero-padded along ``axes`` to ``shape``'s sizes there."""
    vshape = _shape_of(v)
    if vshape == shape:   # (a transform at the input's own sizes: the common case)
        return v
    index = [slice(None)] * len(vshape)
    widths = [(0, 0)] * len(vshape)
    cut = padded = False
    for a in axes:
        have, want = vshape[a], shape[a]
        if have > want:
            index[a], cut = slice(0, want), True
        elif have < want:
            widths[a], padded = (0, want - have), True
    if cut:
        v = v[tuple(index)]
    if padded:
        v = F.pad(v, widths)
    return v


def _c2c_vjp(self_fn):
    def vjp(g, ans, x, s, axes, norm):
        return _fit(self_fn(g, s, axes, norm), _shape_of(x), axes)
    return vjp


def _r2c_vjp(g, ans, x, s, axes, norm):
    last = axes[-1]
    full = list(_shape_of(g))
    full[last] = s[-1]
    spectrum = _fit(g, tuple(full), (last,))
    return F.real(_fit(_fftn_call(spectrum, s, axes, norm), _shape_of(x), axes))


def _hermitian_weights(n, m, dtype):
    """2 for the entries of a Hermitian half that stand for two terms of the full spectrum, 1
    for the zero frequency (and the Nyquist one of an even length ``n``)."""
    c = np.full(m, 2.0)
    c[0] = 1.0
    if n % 2 == 0:
        c[-1] = 1.0
    return c.astype(np.result_type(dtype, np.float32) if np.dtype(dtype).kind == "f" else
                    np.float64)


def _c2r_vjp(g, ans, x, s, axes, norm):
    half = _rfftn_call(g, s, axes, _DUAL[norm])
    last = axes[-1]
    m = s[-1] // 2 + 1
    shape = [1] * len(_shape_of(half))
    shape[last] = m
    c = _hermitian_weights(s[-1], m, np.dtype(g.dtype)).reshape(shape)
    return _fit(F.conj(half) * c, _shape_of(x), axes)


# ---- the calls of each transform with canonical attributes (the VJPs use them) --------------
def _call(op, x, s, axes, norm):
    return apply(op, (x,), {"s": s, "axes": axes, "norm": norm})


def _fftn_call(x, s, axes, norm):
    return _call(fftn.op, x, s, axes, norm)


def _rfftn_call(x, s, axes, norm):
    return _call(rfftn.op, x, s, axes, norm)


# ---- the declarations --------------------------------------------------------------------------
_DOC_1D = """NumPy's ``np.fft.{name}(a, n, axis, norm)``, differentiable in ``a``.

        >>> fg.fft.{name}(fg.tensor({example}))  # doctest: +SKIP
"""
_DOC_ND = """NumPy's ``np.fft.{name}(a, s, axes, norm)``, differentiable in ``a``.

        >>> fg.fft.{name}(fg.tensor(np.eye(4)))  # doctest: +SKIP
"""


# ---- the forwards: SciPy's transforms (pocketfft, as NumPy's) ---------------------------------
# scipy.fft runs an N-D transform in one call, several lines at a time in SIMD registers along
# a non-last axis, where NumPy's N-D functions transform one line at a time through a copy:
# 64 x 64 complex fft2 takes ~30 us against NumPy's ~40.  Both are pocketfft, so the values
# agree to the last bits or so (a few ulp of the largest entry; tests/test_fft_table.py holds
# them to NumPy's within 8 ulp of the largest magnitude) rather than bit for bit; the shapes,
# dtypes (complex64 in, complex64 out) and the ``s``/``axes``/``norm`` readings are NumPy's.
def _contiguous(out):
    return out if out.flags.c_contiguous else np.ascontiguousarray(out)


def _transform(fn):
    def forward(x, s, axes, norm):
        return _contiguous(fn(np.asarray(x), s, axes, norm))
    return forward


try:    # pocketfft's own complex transform, under scipy.fft's argument handling and backends
    from scipy.fft._pocketfft.pypocketfft import c2c as _pocketfft_c2c
except ImportError:   # (a private module: another SciPy may move it; scipy.fft then serves)
    _pocketfft_c2c = None

#: pocketfft's ``inorm`` (0: none, 1: 1/sqrt(n), 2: 1/n) of each norm, forward and inverse
_INORM = {(False, "backward"): 0, (False, "ortho"): 1, (False, "forward"): 2,
          (True, "backward"): 2, (True, "ortho"): 1, (True, "forward"): 0}
_COMPLEX = (np.dtype(np.complex128), np.dtype(np.complex64))


def _complex_transform(inverse: bool):
    """A complex transform: a complex input transformed at its own sizes (the common case)
    goes straight to pocketfft's ``c2c`` -- scipy.fft.fftn's own computation, the same bits,
    without its ~8 us of argument handling and backend dispatch; padding, cutting and other
    dtypes go through ``scipy.fft``."""
    public = _transform(_sfft.ifftn if inverse else _sfft.fftn)
    forward = not inverse

    def transform(x, s, axes, norm):
        a = x if type(x) is np.ndarray else np.asarray(x)
        if _pocketfft_c2c is not None and a.dtype in _COMPLEX:
            shape = a.shape
            for i in range(len(axes)):   # (a loop, not all() of a generator: no frames)
                if shape[axes[i]] != s[i]:
                    break
            else:
                out = _pocketfft_c2c(a, axes, forward, _INORM[inverse, norm])
                return out if out.flags.c_contiguous else np.ascontiguousarray(out)
        return public(a, s, axes, norm)
    return transform


_FORWARDS = {("c2c", False): _complex_transform(False), ("c2c", True): _complex_transform(True),
             ("r2c", False): _transform(_sfft.rfftn), ("c2r", True): _transform(_sfft.irfftn)}


def _declare(name, kind, nd, vjp):
    """One transform: its public function (NumPy's signature), its op and VJP."""
    ndim_default = {1: 1, 2: 2, None: None}[nd]
    if nd == 1:
        def function(a, n=None, axis=-1, norm=None):
            s, axes = _canon(name, a, None if n is None else (n,), (axis,), kind, 1)
            return _call(function.op, a, s, axes, _norm(norm, name))
        function.__doc__ = _DOC_1D.format(name=name, example="[1.0, 2.0, 0.5, -1.0]")
    else:
        default_axes = (-2, -1) if nd == 2 else None

        def function(a, s=None, axes=default_axes, norm=None):
            s, axes = _canon(name, a, s, axes, kind, ndim_default)
            return _call(function.op, a, s, axes, _norm(norm, name))
        function.__doc__ = _DOC_ND.format(name=name)
    function.__name__ = function.__qualname__ = name
    forward = _FORWARDS[kind, name.startswith("i")]
    return defop(name, forward, vjp, function=function, shape=_out_shape(kind),
                 complex_vjps=True, exports=(("fft", name),), numpy=(f"fft.{name}",))


def _same(name):
    return lambda g, s, axes, norm: _call(F.REGISTRY[name], g, s, axes, norm)


fft = _declare("fft", "c2c", 1, _c2c_vjp(_same("fft")))
ifft = _declare("ifft", "c2c", 1, _c2c_vjp(_same("ifft")))
fft2 = _declare("fft2", "c2c", 2, _c2c_vjp(_same("fft2")))
ifft2 = _declare("ifft2", "c2c", 2, _c2c_vjp(_same("ifft2")))
fftn = _declare("fftn", "c2c", None, _c2c_vjp(_same("fftn")))
ifftn = _declare("ifftn", "c2c", None, _c2c_vjp(_same("ifftn")))
rfft = _declare("rfft", "r2c", 1, _r2c_vjp)
rfft2 = _declare("rfft2", "r2c", 2, _r2c_vjp)
rfftn = _declare("rfftn", "r2c", None, _r2c_vjp)
irfft = _declare("irfft", "c2r", 1, _c2r_vjp)
irfft2 = _declare("irfft2", "c2r", 2, _c2r_vjp)
irfftn = _declare("irfftn", "c2r", None, _c2r_vjp)


# ---- shifts: permutations of the entries ---------------------------------------------------
def _shift_axes(op, x, axes):
    ndim = len(_shape_of(x))
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    return tuple(_shapes.check_axis(_shapes.as_int(a, op), ndim, op, _shape_of(x))
                 for a in axes)


def fftshift(x, axes=None):
    """NumPy's ``np.fft.fftshift``: the zero frequency moved to the centre, differentiable.

        >>> fg.fft.fftshift(fg.tensor([0.0, 1.0, 2.0, -2.0, -1.0]))  # doctest: +SKIP
        tensor([-2., -1.,  0.,  1.,  2.])
    """
    return apply(fftshift.op, (x,), {"axes": _shift_axes("fftshift", x, axes)})


def ifftshift(x, axes=None):
    """NumPy's ``np.fft.ifftshift``, the inverse of :func:`fftshift`, differentiable."""
    return apply(ifftshift.op, (x,), {"axes": _shift_axes("ifftshift", x, axes)})


fftshift = defop("fftshift", lambda x, axes: np.fft.fftshift(x, axes),
                 lambda g, ans, x, axes: ifftshift(g, axes), function=fftshift,
                 shape=lambda shapes, **_: tuple(shapes[0]), complex_vjps=True,
                 exports=(("fft", "fftshift"),), numpy=("fft.fftshift",))
ifftshift = defop("ifftshift", lambda x, axes: np.fft.ifftshift(x, axes),
                  lambda g, ans, x, axes: fftshift(g, axes), function=ifftshift,
                  shape=lambda shapes, **_: tuple(shapes[0]), complex_vjps=True,
                  exports=(("fft", "ifftshift"),), numpy=("fft.ifftshift",))
