"""``fastgraph.scipy.signal.convolve``: N-dimensional convolution, differentiable in both
inputs, in SciPy's form (``convolve(in1, in2, mode)``) and in HIPS autograd's form for
convolutional nets (``convolve(A, B, axes=([...], [...]), dot_axes=([...], [...]), mode)``:
``axes`` pairs the convolved axes of ``A`` and ``B``, ``dot_axes`` pairs axes summed over as in
``tensordot``; the result's axes are ``A``'s others, then ``B``'s others, then the convolved
ones).

The forward slides windows of the smaller operand's size over the other (padded with zeros in
``full`` mode) and contracts them with one ``tensordot`` (BLAS); ``same`` is ``full`` cut to
``A``'s size around the centre, as SciPy's.  The VJPs are ``valid`` convolutions of the
(zero-padded) gradient with the other operand flipped: the op itself, so gradients of any order
work.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .._core import apply, defop

from .. import ops as F

_MODES = ("full", "valid", "same")


def _conv_layout(a_ndim, b_ndim, axes, dot_axes):
    ax_a, ax_b = (list(range(a_ndim)), list(range(a_ndim))) if axes is None else axes
    dot_a, dot_b = dot_axes
    rest_a = [i for i in range(a_ndim) if i not in ax_a and i not in dot_a]
    rest_b = [i for i in range(b_ndim) if i not in ax_b and i not in dot_b]
    return tuple(ax_a), tuple(ax_b), tuple(dot_a), tuple(dot_b), tuple(rest_a), tuple(rest_b)


def _check(name, a_shape, b_shape, axes, dot_axes, mode):
    ax_a, ax_b, dot_a, dot_b, _, _ = _conv_layout(len(a_shape), len(b_shape), axes, dot_axes)
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {_MODES}, got {mode!r}")
    if len(ax_a) != len(ax_b) or len(dot_a) != len(dot_b):
        raise ValueError(f"{name}: axes {axes} / dot_axes {dot_axes} do not pair up")
    for i, j in zip(dot_a, dot_b):
        if None not in (a_shape[i], b_shape[j]) and a_shape[i] != b_shape[j]:
            raise ValueError(f"{name}: dot axes {i} of A {tuple(a_shape)} and {j} of B "
                             f"{tuple(b_shape)} differ in length")
    if mode == "valid":
        la = [a_shape[i] for i in ax_a]
        lb = [b_shape[j] for j in ax_b]
        if not (all(x >= y for x, y in zip(la, lb)) or all(x <= y for x, y in zip(la, lb))):
            raise ValueError(f"{name}: in 'valid' mode one input must be at least as large as "
                             f"the other along every convolved axis, got A {tuple(a_shape)} and "
                             f"B {tuple(b_shape)}")


def _slide(kernel, signal, k_conv, s_conv, k_dot, s_dot, k_rest, s_rest, pad):
    """``out[k_rest, s_rest, n] = sum kernel[k_rest, m, d] * signal[s_rest, n - m, d]`` with
    ``signal`` zero-padded by ``kernel``'s size - 1 when ``pad`` (``full``), else ``valid``."""
    kernel = np.asarray(kernel)
    signal = np.asarray(signal)
    sizes = [kernel.shape[i] for i in k_conv]
    if pad:
        widths = [(0, 0)] * signal.ndim
        for j, n in zip(s_conv, sizes):
            widths[j] = (n - 1, n - 1)
        signal = np.pad(signal, widths)
    windows = sliding_window_view(signal, sizes, axis=s_conv)   # (..., window) at the end
    flipped = np.flip(kernel, axis=k_conv)
    nw = windows.ndim
    window_axes = list(range(signal.ndim, nw))
    out = np.tensordot(flipped, windows, axes=(list(k_conv) + list(k_dot),
                                               window_axes + list(s_dot)))
    # out: kernel's rest axes, then the signal's axes left (rest and positions, in order)
    left = [i for i in range(signal.ndim) if i not in s_dot]
    nk = len(k_rest)
    order = list(range(nk)) + [nk + left.index(j) for j in s_rest] + \
        [nk + left.index(j) for j in s_conv]
    return np.transpose(out, order)


def _convolve_forward(a, b, axes=None, dot_axes=((), ()), mode="full"):
    a = np.asarray(a)
    b = np.asarray(b)
    ax_a, ax_b, dot_a, dot_b, rest_a, rest_b = _conv_layout(a.ndim, b.ndim, axes, dot_axes)
    la = [a.shape[i] for i in ax_a]
    lb = [b.shape[j] for j in ax_b]
    a_smaller = all(x <= y for x, y in zip(la, lb))
    if mode == "valid" and not a_smaller:
        out = _slide(b, a, ax_b, ax_a, dot_b, dot_a, rest_b, rest_a, pad=False)
        nb, na = len(rest_b), len(rest_a)
        return np.transpose(out, list(range(nb, nb + na)) + list(range(nb)) +
                            list(range(na + nb, out.ndim)))
    if mode == "valid":
        return _slide(a, b, ax_a, ax_b, dot_a, dot_b, rest_a, rest_b, pad=False)
    out = _slide(a, b, ax_a, ax_b, dot_a, dot_b, rest_a, rest_b, pad=True)
    if mode == "same":
        lead = len(rest_a) + len(rest_b)
        index = [slice(None)] * out.ndim
        for k, (x, y) in enumerate(zip(la, lb)):
            start = (y - 1) // 2
            index[lead + k] = slice(start, start + x)
        out = out[tuple(index)]
    return out


def _full_gradient(g, a, b, ax_a, ax_b, mode):
    """``g`` (the result's gradient) placed in the ``full`` result's shape."""
    if mode == "full":
        return g
    la = [_dim(a, i) for i in ax_a]
    lb = [_dim(b, j) for j in ax_b]
    nd = _ndim(g)
    lead = nd - len(ax_a)
    widths = [(0, 0)] * nd
    for k, (x, y) in enumerate(zip(la, lb)):
        if mode == "valid":
            lo = min(x, y) - 1
            widths[lead + k] = (lo, lo)
        else:       # same: g is the full result's [start, start + x)
            start = (y - 1) // 2
            widths[lead + k] = (start, x + y - 1 - start - x)
    return F.pad(g, widths)


def _dim(x, i):
    n = tuple(x.shape)[i] if hasattr(x, "shape") else np.shape(x)[i]
    if n is None:
        raise ValueError("convolve: the lengths of the convolved axes must be known")
    return n


def _ndim(x):
    return F.shape._known_ndim(x, "convolve")


def _grad_of(g, a, b, axes, dot_axes, mode, which):
    """The gradient for ``A`` (``which == 0``) or ``B``: a valid convolution of the full
    gradient with the other operand flipped along the convolved axes, summed over the other's
    other axes, then put back in the operand's axis order."""
    ax_a, ax_b, dot_a, dot_b, rest_a, rest_b = _conv_layout(_ndim(a), _ndim(b), axes, dot_axes)
    g = _full_gradient(g, a, b, ax_a, ax_b, mode)
    na, nb = len(rest_a), len(rest_b)
    g_conv = tuple(range(na + nb, na + nb + len(ax_a)))
    if which == 0:
        mine, other = a, b
        my_conv, my_dot, my_rest = ax_a, dot_a, rest_a
        o_conv, o_dot, o_rest = ax_b, dot_b, rest_b
        g_rest_mine, g_rest_other = tuple(range(na)), tuple(range(na, na + nb))
    else:
        mine, other = b, a
        my_conv, my_dot, my_rest = ax_b, dot_b, rest_b
        o_conv, o_dot, o_rest = ax_a, dot_a, rest_a
        g_rest_mine, g_rest_other = tuple(range(na, na + nb)), tuple(range(na))
    flipped = F.flip(other, axis=o_conv) if o_conv else other
    # result: g's rest (mine), then other's rest (= other's dot axes), then my conv axes
    piece = convolve(g, flipped, axes=(g_conv, o_conv),
                     dot_axes=(g_rest_other, o_rest), mode="valid")
    # piece axes: my rest axes, other's dot axes (pairs with my dot axes), my conv axes
    have = list(my_rest) + [my_dot[o_dot.index(j)] for j in sorted(o_dot)] + list(my_conv)
    del mine, g_rest_mine
    perm = [have.index(i) for i in range(len(have))]
    return F.transpose(piece, perm)


def _shape(shapes, axes=None, dot_axes=((), ()), mode="full", **_):
    a, b = tuple(shapes[0]), tuple(shapes[1])
    _check("convolve", a, b, axes, dot_axes, mode)
    ax_a, ax_b, _, _, rest_a, rest_b = _conv_layout(len(a), len(b), axes, dot_axes)
    conv = []
    for i, j in zip(ax_a, ax_b):
        x, y = a[i], b[j]
        if x is None or y is None:
            conv.append(None)
        elif mode == "full":
            conv.append(x + y - 1)
        elif mode == "valid":
            conv.append(abs(x - y) + 1)
        else:
            conv.append(x)
    return tuple(a[i] for i in rest_a) + tuple(b[j] for j in rest_b) + tuple(conv)


def _canon_pairs(pairs, name):
    if pairs is None:
        return None
    if len(pairs) != 2:
        raise ValueError(f"convolve: {name} must be a pair of axis lists, got {pairs!r}")
    return tuple(tuple(int(i) for i in p) for p in pairs)


def convolve(in1, in2, mode: str = "full", axes=None, dot_axes=((), ()), method: str = "auto"):
    """N-dimensional convolution of ``in1`` and ``in2``, differentiable in both: SciPy's
    ``scipy.signal.convolve(in1, in2, mode)`` (``full``, ``valid``, ``same``), and HIPS
    autograd's form ``convolve(A, B, axes=..., dot_axes=..., mode=...)`` for convolutional
    nets.  ``method`` is accepted for SciPy's signature (the result is the direct sum either
    way, up to rounding).

        >>> import fastgraph.scipy.signal as sig
        >>> sig.convolve(fg.tensor([1.0, 2.0, 3.0]), [0.0, 1.0, 0.5])  # doctest: +SKIP
    """
    axes = _canon_pairs(axes, "axes")
    dot_axes = _canon_pairs(dot_axes, "dot_axes")
    if axes is None and _ndim(in1) != _ndim(in2):
        raise ValueError(f"convolve: in1 and in2 should have the same dimensionality, got "
                         f"{_ndim(in1)} and {_ndim(in2)}")
    return apply(convolve.op, (in1, in2), {"axes": axes, "dot_axes": dot_axes, "mode": mode})


convolve = defop("signal_convolve", _convolve_forward,
                 lambda g, ans, a, b, axes, dot_axes, mode: _grad_of(g, a, b, axes, dot_axes,
                                                                     mode, 0),
                 lambda g, ans, a, b, axes, dot_axes, mode: _grad_of(g, a, b, axes, dot_axes,
                                                                     mode, 1),
                 function=convolve, shape=_shape, complex_vjps=True,
                 exports=(("scipy.signal", "convolve"),))
