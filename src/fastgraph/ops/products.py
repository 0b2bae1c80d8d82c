"""Products: ``einsum`` in full (ellipsis, repeated indices, implicit output, any number of
operands, NumPy's interleaved form, ``optimize=``), ``inner``, ``kron``, ``cross``, ``vdot``.

``einsum``'s forward is ``np.einsum`` called as the user called it (the same values, with the
same ``optimize`` path); its VJP for each operand is another ``einsum`` (of the output's
gradient with the other operands), placed back on the operand's diagonals where an index
repeats in it (``einsum_embed``, the adjoint of taking a diagonal).
"""
from __future__ import annotations

import string

import numpy as np

from .._core import TOP, TOP_TF, apply, defop, defun
from .._core import shapes as _shapes
from .shape import _as_operand, _known_ndim, _shape_of

from .. import ops as F

_LETTERS = string.ascii_letters


# ---- einsum -----------------------------------------------------------------------------------------
def _interleaved(args):
    """NumPy's ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])`` as a subscripts
    string and the operands."""
    args = list(args)
    if len(args) < 2 or not all(isinstance(s, (list, tuple)) for s in args[1::2]):
        first = args[0]
        raise TypeError(f"einsum: the subscripts must be a string such as 'ij,jk->ik' (or the "
                        f"interleaved form einsum(op0, sublist0, op1, sublist1, ...)), got "
                        f"{type(first).__name__} {first!r:.40}")
    subs_out = args.pop() if len(args) % 2 else None
    operands, subs = args[0::2], args[1::2]

    def letters(sub):
        s = []
        for k in sub:
            if k is Ellipsis:
                s.append("...")
                continue
            k = _shapes.as_int(k, "einsum", "subscript")
            if not 0 <= k < len(_LETTERS):
                raise ValueError(f"einsum: subscript {k} is not in [0, {len(_LETTERS)})")
            s.append(_LETTERS[k])
        return "".join(s)

    spec = ",".join(letters(s) for s in subs)
    if subs_out is not None:
        spec += "->" + letters(subs_out)
    return spec, operands


def _split_spec(subscripts: str):
    spec = subscripts.replace(" ", "")
    for c in spec:
        if c not in _LETTERS and c not in ".,->":
            raise ValueError(f"einsum: invalid subscript {c!r} in einstein sum subscripts string "
                             f"{subscripts!r}")
    if "->" in spec:
        lhs, out = spec.split("->", 1)
        if "-" in out or ">" in out:
            raise ValueError(f"einsum: subscripts {subscripts!r} have more than one '->'")
    else:
        lhs, out = spec, None
    return spec, lhs.split(","), out


def parse_einsum(subscripts: str, ndims) -> tuple[list[str], str]:
    """Explicit subscripts for operands of ranks ``ndims``: ``(inputs, output)``, with each
    ``...`` spelt out in letters the spec does not use (right-aligned, as NumPy broadcasts
    them) and an implicit output made explicit (the ellipsis, then the indices that occur once,
    sorted)."""
    spec, ins, out = _split_spec(subscripts)
    if len(ins) != len(ndims):
        raise ValueError(f"einsum: {subscripts!r} names {len(ins)} operand(s), got "
                         f"{len(ndims)}")
    used = set(spec) - set(".,->")
    free = [c for c in _LETTERS if c not in used]
    ell_lens = []
    for s, nd in zip(ins, ndims):
        if s.count("...") > 1 or s.replace("...", "").count(".") or (
                "." in s and "..." not in s):
            raise ValueError(f"einsum: invalid ellipsis in {s!r}")
        named = len(s.replace("...", ""))
        if "..." in s:
            if nd is None:
                raise ValueError("einsum: an operand with '...' needs a known rank")
            if nd < named:
                raise ValueError(f"einsum: operand {s!r} has {nd} dimension(s), fewer than its "
                                 f"{named} subscripts")
            ell_lens.append(nd - named)
        else:
            if nd is not None and nd != named:
                raise ValueError(f"einsum: operand has more dimensions than subscripts given in "
                                 f"einstein sum, but no '...' ellipsis provided to broadcast "
                                 f"the extra dimensions ({s!r} for {nd} dimensions)")
            ell_lens.append(0)
    n_ell = max(ell_lens, default=0)
    if n_ell > len(free):
        raise ValueError("einsum: too many dimensions for the ellipsis")
    ell = "".join(free[:n_ell])
    explicit = [s.replace("...", ell[n_ell - k:] if k else "") for s, k in zip(ins, ell_lens)]
    letters = "".join(explicit)
    if out is None:
        singles = sorted((c for c in set(letters) if letters.count(c) == 1 and c not in ell),
                         key=_LETTERS.index)
        out = ell + "".join(singles)
    else:
        if out.count("...") > 1 or out.replace("...", "").count("."):
            raise ValueError(f"einsum: invalid ellipsis in the output {out!r}")
        if "..." not in out and n_ell and any(ell_lens):
            # NumPy sums the ellipsis dimensions away only when the output has no '...'
            pass
        out = out.replace("...", ell)
        for c in out:
            if out.count(c) > 1:
                raise ValueError(f"einsum: output subscript {c!r} appears more than once")
            if c not in letters:
                raise ValueError(f"einsum: output subscript {c!r} does not appear in the "
                                 f"inputs")
    return explicit, out


def _sizes(ins, shapes, op="einsum"):
    sizes: dict = {}
    for s, shape in zip(ins, shapes):
        for c, d in zip(s, shape):
            prev = sizes.get(c)
            if prev is not None and d is not None and prev != d and 1 not in (prev, d):
                raise ValueError(f"{op}: index {c!r} has sizes {prev} and {d} (shapes "
                                 f"{' '.join(str(tuple(t)) for t in shapes)})")
            if prev is None or prev == 1:
                sizes[c] = d
    return sizes


def _einsum_shape(shapes, subscripts, optimize):
    ins, out = parse_einsum(subscripts, [len(s) for s in shapes])
    sizes = _sizes(ins, shapes)
    return tuple(sizes[c] for c in out)


def _unique(s: str) -> str:
    return "".join(dict.fromkeys(s))


def _embed_forward(r, x, sub, kept):
    """Zeros shaped like ``x`` (subscripts ``sub``, which may repeat an index) with ``r`` (over
    the indices ``kept``) placed on its diagonals and broadcast over ``sub``'s other indices."""
    r = np.asarray(r)
    shape = np.shape(x)
    uniq = _unique(sub)
    sizes = {c: d for c, d in zip(sub, shape)}
    # an index of length 1 in x broadcast against the others: sum r down to it
    axes = tuple(i for i, c in enumerate(kept) if sizes[c] == 1 and r.shape[i] != 1)
    if axes:
        r = r.sum(axis=axes, keepdims=True)
    r = np.einsum(f"{kept}->{''.join(c for c in uniq if c in kept)}", r)
    r = r.reshape(tuple(sizes[c] if c in kept else 1 for c in uniq))
    out = np.zeros(shape, dtype=r.dtype)
    view = np.einsum(f"{sub}->{uniq}", out)    # a writeable view of out's diagonals
    view[...] = r
    return out


def _embed(r, x, sub, kept):
    return apply(_embed.op, (r, x), {"sub": sub, "kept": kept})


_embed = defop("einsum_embed", _embed_forward,
               lambda G, ans, r, x, sub, kept: F.einsum(f"{sub}->{kept}", G), None,
               shape=lambda shapes, **_: tuple(shapes[1]), function=_embed, complex_vjps=True)


def _einsum_vjp_for(i):
    def vjp(g, ans, *xs, subscripts, optimize):
        ins, out = parse_einsum(subscripts, [_known_ndim(x, "einsum") for x in xs])
        sub = ins[i]
        others = [s for j, s in enumerate(ins) if j != i]
        available = set(out).union(*map(set, others))
        kept = "".join(c for c in _unique(sub) if c in available)
        spec = ",".join([out] + others) + "->" + kept
        rest = [x for j, x in enumerate(xs) if j != i]
        r = F.einsum(spec, g, *rest, optimize=bool(optimize) or len(rest) > 1)
        if kept == sub:
            # the operand's own layout; an index of length 1 here that broadcast against the
            # others leaves r longer there: the engines sum it back (unknown static dimensions
            # may hide such a 1: broadcast then too, a view at run time)
            rs, xsh = tuple(_shape_of(r)), tuple(_shape_of(xs[i]))
            if rs != xsh or None in rs:
                r = F.broadcast_like(r, xs[i])
            return r
        return _embed(r, xs[i], sub, kept)
    return vjp


def _canon_optimize(optimize):
    if optimize is None or isinstance(optimize, (bool, np.bool_)):
        return bool(optimize)
    if isinstance(optimize, str):
        return optimize
    if isinstance(optimize, (list, tuple)):   # an explicit path, as np.einsum_path gives it
        return tuple(tuple(p) if isinstance(p, (list, tuple)) else p for p in optimize)
    raise TypeError(f"einsum: optimize must be a bool, a string or a path, got {optimize!r}")


def _einsum_forward(*xs, subscripts, optimize):
    path = list(optimize) if isinstance(optimize, tuple) else optimize
    return np.einsum(subscripts, *xs, optimize=path)


def einsum(*operands, optimize=False):
    """Einstein summation, NumPy's ``np.einsum`` (its own values), differentiable in every
    operand: explicit or implicit output, ``...`` broadcasting, indices repeated in one operand
    (traces, diagonals), any number of operands, the interleaved form ``einsum(a, [0, 1], b,
    [1, 2])``; ``optimize`` is passed to NumPy.

        >>> fg.einsum("ii->", fg.tensor(np.eye(3)))  # doctest: +SKIP
        >>> fg.einsum("...ij,...jk", a, b)  # batched matmul  # doctest: +SKIP
    """
    if not operands:
        raise ValueError("einsum: no subscripts given")
    if isinstance(operands[0], str):
        subscripts, xs = operands[0], list(operands[1:])
    else:
        subscripts, xs = _interleaved(operands)
    xs = [_as_operand(x) for x in xs]
    parse_einsum(subscripts, [_known_ndim(x, "einsum") for x in xs])  # errors at the call
    return apply(einsum.op, tuple(xs), {"subscripts": subscripts.replace(" ", ""),
                                        "optimize": _canon_optimize(optimize)})


einsum = defop("einsum", _einsum_forward, vjp_for=_einsum_vjp_for, function=einsum,
               shape=_einsum_shape, variadic=True, exports=TOP_TF, complex_vjps=True)


# ---- inner, kron, cross, vdot -----------------------------------------------------------------------
def _inner_vjp_a(g, ans, a, b):
    na, nb = _known_ndim(a, "inner"), _known_ndim(b, "inner")
    if na == 0:
        return F.sum(g * b)     # a scalar times b
    if nb == 0:
        return g * b
    # g holds a's free axes, then b's: contract b's free axes with b's
    return F.tensordot(g, b, (tuple(range(na - 1, na - 1 + nb - 1)), tuple(range(nb - 1))))


def _inner_vjp_b(g, ans, a, b):
    na, nb = _known_ndim(a, "inner"), _known_ndim(b, "inner")
    if nb == 0:
        return F.sum(g * a)
    if na == 0:
        return g * a
    return F.tensordot(g, a, (tuple(range(na - 1)), tuple(range(na - 1))))


def _inner_shape(shapes, **_):
    a, b = (tuple(s) for s in shapes)
    if not a or not b:
        return _shapes.broadcast("inner", a, b)
    if a[-1] is not None and b[-1] is not None and a[-1] != b[-1]:
        raise ValueError(f"inner: shapes {a} and {b} not aligned: {a[-1]} (dim {len(a) - 1}) "
                         f"!= {b[-1]} (dim {len(b) - 1})")
    return a[:-1] + b[:-1]


inner = defop("inner", np.inner, _inner_vjp_a, _inner_vjp_b, shape=_inner_shape,
              exports=TOP,
              doc="NumPy's ``np.inner`` (the sum over the last axes; a product with a scalar), "
                  "differentiable in both operands.", complex_vjps=True)


def kron(a, b):
    """NumPy's ``np.kron`` (the same steps: an outer product over interleaved axes,
    reshaped), differentiable in both operands."""
    b = _as_operand(b)
    a = _as_operand(a)
    ndb, nda = _known_ndim(b, "kron"), _known_ndim(a, "kron")
    if None in tuple(_shape_of(a)) + tuple(_shape_of(b)):
        raise ValueError("kron: the operands' shapes must be known")
    if nda < ndb:   # NumPy reads a with ndmin=b.ndim
        a = F.reshape(a, (1,) * (ndb - nda) + tuple(_shape_of(a)))
        nda = ndb
    if nda == 0 or ndb == 0:
        return F.multiply(a, b)
    nd = max(nda, ndb)
    as_ = (1,) * max(0, ndb - nda) + tuple(_shape_of(a))
    bs = (1,) * max(0, nda - ndb) + tuple(_shape_of(b))
    b_arr = F.reshape(b, bs) if nda > ndb else b
    a_arr = F.expand_dims(a, tuple(range(1, nd * 2, 2)))
    b_arr = F.expand_dims(b_arr, tuple(range(0, nd * 2, 2)))
    return F.reshape(F.multiply(a_arr, b_arr), tuple(int(x) * int(y) for x, y in zip(as_, bs)))


kron = defun(kron, exports=TOP)


def _last(x, k):
    return F.getitem(x, (Ellipsis, k))


def _numpy_takes_2_vectors() -> bool:
    """Whether the installed NumPy's ``np.cross`` still takes 2-element vectors (deprecated in
    NumPy 2.0, refused from 2.5): fastgraph accepts exactly what the NumPy beside it accepts."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            np.cross(np.zeros(2), np.zeros(2))
        except ValueError:
            return False
    return True


CROSS_TAKES_2_VECTORS = _numpy_takes_2_vectors()


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's ``np.cross`` of 3-vectors (and, where the installed NumPy still takes them,
    2-vectors, whose z component is 0), the same products and differences NumPy computes,
    differentiable in both.

    >>> fg.cross(fg.tensor([1.0, 0.0, 0.0]), fg.tensor([0.0, 1.0, 0.0])).numpy()
    array([0., 0., 1.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _as_operand(a), _as_operand(b)
    a = F.moveaxis(a, axisa, -1)
    b = F.moveaxis(b, axisb, -1)
    na, nb = _shape_of(a)[-1], _shape_of(b)[-1]
    if na is None or nb is None:
        raise ValueError("cross: the vectors' length (2 or 3) must be known")
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("cross: incompatible dimensions for cross product (dimension must be "
                         "2 or 3)")
    if not CROSS_TAKES_2_VECTORS and (na, nb) != (3, 3):
        raise ValueError(f"cross: both inputs must be (arrays of) 3-element vectors, but they "
                         f"have {na} and {nb} elements (NumPy {np.__version__} no longer takes "
                         f"2-element vectors)")
    a0, a1, b0, b1 = _last(a, 0), _last(a, 1), _last(b, 0), _last(b, 1)
    cp2 = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return cp2
    if na == 2:
        b2 = _last(b, 2)
        cp0, cp1 = a1 * b2, -(a0 * b2)
    elif nb == 2:
        a2 = _last(a, 2)
        cp0, cp1 = -(a2 * b1), a2 * b0
    else:
        a2, b2 = _last(a, 2), _last(b, 2)
        cp0, cp1 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    cp0, cp1, cp2 = F.broadcast_arrays(cp0, cp1, cp2)
    cp = F.stack([cp0, cp1, cp2], axis=-1)
    return F.moveaxis(cp, -1, axisc)


cross = defun(cross, exports=TOP)


def vdot(a, b):
    """NumPy's ``np.vdot`` for real values: the dot product of the flattened inputs."""
    return F.dot(F.reshape(_as_operand(a), (-1,)), F.reshape(_as_operand(b), (-1,)))


vdot = defun(vdot, exports=TOP)
