"""The op table's lines for the drop-in NumPy namespace: NumPy's other ufuncs, array
manipulation, sorting, padding, products (``einsum`` in full), statistics, signal and
polynomial functions.  ``optable.py`` calls :func:`add_cases` with its ``case`` function, so
every table test (values against NumPy, gradients against finite differences, PyTorch and JAX,
second order, float32, static against eager, fused against unfused) covers them.

Domains as in ``optable.py``, plus those below (each keeps finite differences valid):

=========  ===========================================================================
fmodx      x1 = x2 * (k + u), u in [0.2, 0.8] (away from fmod's jumps)
withnan    standard normal with about a quarter NaN
withzero   as ``away`` with a few exact zeros (cumprod's gradient at 0)
sorted     an increasing grid (interp's sample points)
inrange    uniform(0.05, 2.95) away from the grid points 0, 1, 2, 3 (interp's x)
=========  ===========================================================================
"""
from __future__ import annotations

import numpy as np

import fastgraph as fg
import fastgraph.numpy as fnp
from fastgraph.ops.products import CROSS_TAKES_2_VECTORS

#: the public functions this table covers (the namespace-walk and coverage tests read it)
NUMPY_DROPIN_OPS = set()


def _t():
    import torch
    return torch


def _j():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    return jnp


def _withnan(rng, shape):
    x = rng.standard_normal(shape)
    x[rng.random(shape) < 0.25] = np.nan
    return x


def _withzero(rng, shape):
    x = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 1.5, shape)
    x.reshape(-1)[rng.permutation(x.size)[:max(1, x.size // 5)]] = 0.0
    return x


def _inrange(rng, shape):
    return rng.integers(0, 3, shape) + rng.uniform(0.1, 0.9, shape)


def _fmod_fix(arrays):
    x, y = arrays
    k = np.floor(x)
    u = 0.2 + 0.6 * (x - k)
    return [y * (k + u), y]


def _distinct(rng, shape):
    n = int(np.prod(shape, dtype=np.int64))
    grid = (rng.permutation(n) - n / 2) * 0.5 + rng.uniform(-0.05, 0.05, n)
    return grid.reshape(shape)


def _index(n, shape, seed=0):
    return np.random.default_rng(seed).integers(0, n, shape)


def add_cases(case) -> None:
    """Add this table's lines with ``case(name, op, fn, args, ref, torch, **fields)``."""

    def c(name, op, fn, args, ref, torch=None, **kw):
        NUMPY_DROPIN_OPS.add(op)
        case(name, op, fn, args, ref, torch, **kw)

    # ---- elementwise ----------------------------------------------------------------------------
    pairs = [((3, 4), (3, 4), ""), ((3, 4), (4,), "_bc"), ((2, 1, 3), (4, 1), "_bc3d"),
             ((), (3,), "_0d")]
    binary = [
        ("arctan2", ("real", "away"), np.arctan2, lambda a, b: _t().atan2(a, b),
         lambda a, b: _j().arctan2(a, b)),
        ("fmax", ("grid0", "grid1"), np.fmax, lambda a, b: _t().fmax(a, b), None),
        ("fmin", ("grid0", "grid1"), np.fmin, lambda a, b: _t().fmin(a, b), None),
        ("logaddexp2", ("real", "real"), np.logaddexp2, lambda a, b: _t().logaddexp2(a, b),
         None),
        ("copysign", ("away", "away"), np.copysign, lambda a, b: _t().copysign(a, b), None),
        ("float_power", ("pos", "real"), np.float_power,
         lambda a, b: _t().float_power(a, b), None),
        ("nextafter", ("real", "real"), np.nextafter, None, None),
    ]
    for name, (da, db), ref, tor, jx in binary:
        for sa, sb, sfx in pairs:
            c(f"{name}{sfx}", name, getattr(fg, name), [(sa, da), (sb, db)], ref, tor, jax=jx,
              out_dtype=np.float64 if name == "float_power" else None,
              order2=name != "nextafter")
    c("fmod", "fmod", fg.fmod, [((3, 4), "real"), ((4,), "away")], np.fmod,
      lambda a, b: _t().fmod(a, b), fix=_fmod_fix)
    c("fmax_nan", "fmax", fg.fmax, [((6,), "withnan"), ((6,), "real")], np.fmax,
      lambda a, b: _t().fmax(a, b))
    c("heaviside", "heaviside", fg.heaviside, [((3, 4), "away"), ((4,), "real")],
      np.heaviside, None, jax=lambda a, b: _j().heaviside(a, b))
    c("ldexp", "ldexp", fg.ldexp, [((3, 4), "real"), ((3, 4), "labels:4")], np.ldexp,
      lambda a, e: _t().ldexp(a, e))
    unary = [
        ("sinc", "away", np.sinc, lambda x: _t().sinc(x)),
        ("cbrt", "away", np.cbrt, None),
        ("positive", "real", np.positive, lambda x: _t().positive(x)),
        ("spacing", "away", np.spacing, None),
        ("nan_to_num", "real", np.nan_to_num, lambda x: _t().nan_to_num(x)),
        ("acos", "unit", np.acos, lambda x: _t().acos(x)),
        ("asinh", "real", np.asinh, lambda x: _t().asinh(x)),
        ("atan", "real", np.atan, lambda x: _t().atan(x)),
    ]
    for name, dom, ref, tor in unary:
        for shape, sfx in (((3, 4), ""), ((), "_0d")):
            c(f"{name}{sfx}", name, getattr(fg, name) if hasattr(fg, name) else
              getattr(fg.numpy, name), [(shape, dom)], ref, tor,
              zero_grad=name == "spacing",
              jax=(lambda x: _j().cbrt(x)) if name == "cbrt" else None)
    c("atan2_alias", "atan2", fnp.atan2, [((3,), "real"), ((3,), "away")], np.atan2,
      lambda a, b: _t().atan2(a, b))
    c("pow_alias", "pow", fnp.pow, [((3,), "pos"), ((3,), "real")], np.pow,
      lambda a, b: _t().pow(a, b))
    c("modf_fraction", "modf", lambda x: fg.modf(x)[0], [((3, 4), "frac")],
      lambda x: np.modf(x)[0], lambda x: _t().frac(x))
    c("modf_both", "modf", lambda x: list(fg.modf(x)), [((5,), "frac")],
      lambda x: list(np.modf(x)), None)
    c("frexp_mantissa", "frexp", lambda x: fg.frexp(x)[0], [((3, 4), "away")],
      lambda x: np.frexp(x)[0], lambda x: _t().frexp(x)[0])
    c("divmod_remainder", "divmod", lambda x, y: fg.divmod(x, y)[1],
      [((3, 4), "real"), ((4,), "away")], lambda x, y: np.divmod(x, y)[1], None,
      fix=lambda arrays: [arrays[1] * (np.floor(arrays[0]) + 0.2 + 0.6 * (arrays[0] -
                                                                             np.floor(arrays[0]))),
                          arrays[1]])
    c("matvec", "matvec", fg.matvec, [((2, 3, 4), "real"), ((4,), "real")], np.matvec,
      lambda a, v: _t().matmul(a, v))
    c("matvec_bc", "matvec", fg.matvec, [((3, 4), "real"), ((2, 4), "real")], np.matvec,
      lambda a, v: _t().matmul(a, v[..., None])[..., 0])
    c("vecmat", "vecmat", fg.vecmat, [((2, 3), "real"), ((3, 4), "real")], np.vecmat,
      lambda v, a: _t().matmul(v[..., None, :], a)[..., 0, :])
    c("vecdot", "vecdot", fg.vecdot, [((2, 3, 4), "real"), ((3, 4), "real")], np.vecdot,
      lambda a, b: (a * b).sum(-1))

    # ---- gathering, sorting ----------------------------------------------------------------------
    c("take_along_axis", "take_along_axis", fg.take_along_axis,
      [((3, 4), "real"), ((3, 5), "labels:4")], lambda x, i: np.take_along_axis(x, i, -1),
      lambda x, i: _t().take_along_dim(x, i, -1))
    c("take_along_axis_0", "take_along_axis", lambda x, i: fg.take_along_axis(x, i, 0),
      [((3, 4), "real"), ((5, 1), "labels:3")], lambda x, i: np.take_along_axis(x, i, 0),
      lambda x, i: _t().take_along_dim(x, i, 0))
    idx = _index(4, (2, 3), 1)
    c("take_axis", "take", lambda x: fg.take(x, idx, axis=1), [((3, 4), "real")],
      lambda x: np.take(x, idx, axis=1), lambda x: x[:, _t().from_numpy(idx)])
    c("take_flat", "take", lambda x: fg.take(x, idx), [((2, 3), "real")],
      lambda x: np.take(x, idx), lambda x: x.reshape(-1)[_t().from_numpy(idx)])
    for shape, axis, sfx in (((6,), -1, ""), ((3, 4), 0, "_ax0"), ((3, 4), -1, "_2d"),
                             ((2, 3), None, "_flat")):
        c(f"sort{sfx}", "sort", (lambda a: lambda x: fg.sort(x, axis=a))(axis),
          [(shape, "distinct")], (lambda a: lambda x: np.sort(x, axis=a))(axis),
          (lambda a: lambda x: _t().sort(x.reshape(-1) if a is None else x,
                                          dim=0 if a is None else a)[0])(axis))
    c("sort_method", "sort", lambda x: x.sort(), [((5,), "distinct")], lambda x: np.sort(x),
      None, tensor_only=True)
    c("msort", "msort", fnp.msort, [((4, 3), "distinct")], lambda x: np.sort(x, axis=0),
      lambda x: _t().sort(x, dim=0)[0])
    c("partition", "partition", lambda x: fg.partition(x, 2), [((7,), "distinct")],
      lambda x: np.partition(x, 2), None)  # (JAX orders the unsorted part differently)
    c("partition_2d_kths", "partition", lambda x: fg.partition(x, (0, 3), axis=0),
      [((5, 3), "distinct")], lambda x: np.partition(x, (0, 3), axis=0), None)

    # ---- pad ------------------------------------------------------------------------------------------
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
        kw = {"constant_values": 1.5} if mode == "constant" else {}
        c(f"pad_{mode}", "pad", (lambda m, k: lambda x: fg.pad(x, ((1, 2), (2, 0)), mode=m,
                                                               **k))(mode, kw),
          [((3, 4), "real")], (lambda m, k: lambda x: np.pad(x, ((1, 2), (2, 0)), mode=m,
                                                             **k))(mode, kw),
          None, jax=(lambda m, k: lambda x: _j().pad(x, ((1, 2), (2, 0)), mode=m, **k))(mode,
                                                                                        kw))
    c("pad_int_width", "pad", lambda x: fg.pad(x, 2, mode="reflect"), [((4,), "real")],
      lambda x: np.pad(x, 2, mode="reflect"), None)
    c("pad_wide_wrap", "pad", lambda x: fg.pad(x, (5, 4), mode="wrap"), [((3,), "real")],
      lambda x: np.pad(x, (5, 4), mode="wrap"), None)

    # ---- rotations, flips, axes -----------------------------------------------------------------
    c("rot90", "rot90", fg.rot90, [((3, 4), "real")], np.rot90, lambda x: _t().rot90(x))
    for k in (2, 3, -1):
        c(f"rot90_k{k}".replace("-", "m"), "rot90",
          (lambda k: lambda x: fg.rot90(x, k, axes=(1, 2)))(k), [((2, 3, 4), "real")],
          (lambda k: lambda x: np.rot90(x, k, axes=(1, 2)))(k),
          (lambda k: lambda x: _t().rot90(x, k, (1, 2)))(k))
    c("fliplr", "fliplr", fg.fliplr, [((3, 4), "real")], np.fliplr, lambda x: _t().fliplr(x))
    c("flipud", "flipud", fg.flipud, [((3, 4), "real")], np.flipud, lambda x: _t().flipud(x))
    c("rollaxis", "rollaxis", lambda x: fg.rollaxis(x, 2), [((2, 3, 4), "real")],
      lambda x: np.rollaxis(x, 2), lambda x: x.permute(2, 0, 1))
    c("rollaxis_start", "rollaxis", lambda x: fg.rollaxis(x, 0, 3), [((2, 3, 4), "real")],
      lambda x: np.rollaxis(x, 0, 3), lambda x: x.permute(1, 2, 0))
    c("matrix_transpose", "matrix_transpose", fg.matrix_transpose, [((2, 3, 4), "real")],
      np.matrix_transpose, lambda x: x.transpose(-1, -2))
    c("permute_dims", "permute_dims", lambda x: fg.permute_dims(x, (1, 2, 0)),
      [((2, 3, 4), "real")], lambda x: np.permute_dims(x, (1, 2, 0)),
      lambda x: x.permute(1, 2, 0))

    # ---- the split family, joining -------------------------------------------------------------
    c("array_split", "array_split", lambda x: fg.array_split(x, 3), [((7, 2), "real")],
      lambda x: np.array_split(x, 3), lambda x: list(_t().tensor_split(x, 3)))
    c("array_split_idx", "array_split", lambda x: fg.array_split(x, [1, 3], axis=1),
      [((2, 5), "real")], lambda x: np.array_split(x, [1, 3], axis=1),
      lambda x: list(_t().tensor_split(x, [1, 3], dim=1)))
    c("hsplit", "hsplit", lambda x: fg.hsplit(x, 2), [((3, 4), "real")],
      lambda x: np.hsplit(x, 2), lambda x: list(_t().hsplit(x, 2)))
    c("hsplit_1d", "hsplit", lambda x: fg.hsplit(x, [2]), [((5,), "real")],
      lambda x: np.hsplit(x, [2]), None)
    c("vsplit", "vsplit", lambda x: fg.vsplit(x, 2), [((4, 3), "real")],
      lambda x: np.vsplit(x, 2), lambda x: list(_t().vsplit(x, 2)))
    c("dsplit", "dsplit", lambda x: fg.dsplit(x, [1]), [((2, 2, 3), "real")],
      lambda x: np.dsplit(x, [1]), lambda x: list(_t().dsplit(x, [1])))
    c("unstack", "unstack", lambda x: list(fg.unstack(x, axis=1)), [((2, 3), "real")],
      lambda x: list(np.unstack(x, axis=1)), lambda x: list(_t().unbind(x, 1)))
    c("append_flat", "append", fg.append, [((2, 3), "real"), ((4,), "real")], np.append,
      None)
    c("append_axis", "append", lambda a, b: fg.append(a, b, axis=0),
      [((2, 3), "real"), ((1, 3), "real")], lambda a, b: np.append(a, b, axis=0),
      lambda a, b: _t().cat([a, b], 0))
    c("block", "block", lambda a, b, d: fg.block([[a, b], [d]]),
      [((2, 2), "real"), ((2, 1), "real"), ((1, 3), "real")],
      lambda a, b, d: np.block([[a, b], [d]]), None)
    c("broadcast_arrays", "broadcast_arrays", lambda a, b: list(fg.broadcast_arrays(a, b)),
      [((3, 1), "real"), ((4,), "real")], lambda a, b: list(np.broadcast_arrays(a, b)),
      lambda a, b: list(_t().broadcast_tensors(a, b)))
    c("meshgrid_xy", "meshgrid", lambda a, b: list(fg.meshgrid(a, b)),
      [((3,), "real"), ((4,), "real")], lambda a, b: list(np.meshgrid(a, b)),
      lambda a, b: list(_t().meshgrid(a, b, indexing="xy")))
    c("meshgrid_ij_sparse", "meshgrid",
      lambda a, b, d: list(fg.meshgrid(a, b, d, indexing="ij", sparse=True)),
      [((3,), "real"), ((2,), "real"), ((2,), "real")],
      lambda a, b, d: list(np.meshgrid(a, b, d, indexing="ij", sparse=True)), None)

    # ---- selection -----------------------------------------------------------------------------
    c("select", "select", lambda c1, c2, a, b: fg.select([c1, c2], [a, b], -1.0),
      [((3, 4), "bool"), ((3, 4), "bool"), ((3, 4), "real"), ((4,), "real")],
      lambda c1, c2, a, b: np.select([c1, c2], [a, b], -1.0), None,
      jax=lambda c1, c2, a, b: _j().select([c1, c2], [a, b], -1.0))
    ch = _index(3, (3, 4), 2)
    c("choose", "choose", lambda a, b, d: fg.choose(ch, [a, b, d]),
      [((3, 4), "real"), ((4,), "real"), ((3, 4), "real")],
      lambda a, b, d: np.choose(ch, [a, b, d]), None,
      jax=lambda a, b, d: _j().choose(ch, [a, b, d]))
    cond = np.array([True, False, True])
    c("compress", "compress", lambda x: fg.compress(cond, x, axis=1), [((2, 3), "real")],
      lambda x: np.compress(cond, x, axis=1), None)
    mask = np.array([[1, 0, 1], [0, 0, 1]])
    c("extract", "extract", lambda x: fg.extract(mask, x), [((2, 3), "real")],
      lambda x: np.extract(mask, x), None)
    c("delete", "delete", lambda x: fg.delete(x, [0, 2], axis=1), [((2, 4), "real")],
      lambda x: np.delete(x, [0, 2], axis=1), None)
    c("delete_flat", "delete", lambda x: fg.delete(x, 1), [((2, 2), "real")],
      lambda x: np.delete(x, 1), None)
    c("resize", "resize", lambda x: fg.resize(x, (3, 3)), [((2, 2), "real")],
      lambda x: np.resize(x, (3, 3)), None)

    # ---- factories ----------------------------------------------------------------------------------
    c("full", "full", lambda v: fnp.full((2, 3), v), [((), "real")],
      lambda v: np.full((2, 3), v), lambda v: v.expand(2, 3))
    c("full_row", "full", lambda v: fnp.full((2, 3), v), [((3,), "real")],
      lambda v: np.full((2, 3), v), lambda v: v.expand(2, 3))
    c("full_like", "full_like", lambda a, v: fg.full_like(a, v), [((2, 3), "real"), ((), "real")],
      lambda a, v: np.full_like(a, v), None, diff=(1,))
    for sa, sb, kw, sfx in (((), (), {}, ""), ((), (), {"endpoint": False}, "_open"),
                            ((2,), (3, 1), {"axis": 1}, "_arrays")):
        c(f"linspace{sfx}", "linspace",
          (lambda k: lambda a, b: fg.linspace(a, b, 5, **k))(kw), [(sa, "real"), (sb, "real")],
          (lambda k: lambda a, b: np.linspace(a, b, 5, **k))(kw), None,
          jax=(lambda k: lambda a, b: _j().linspace(a, b, 5, **k))(kw))
    c("linspace_retstep", "linspace", lambda a, b: list(fg.linspace(a, b, 4, retstep=True)),
      [((), "real"), ((), "real")], lambda a, b: list(np.linspace(a, b, 4, retstep=True)),
      None)
    c("logspace", "logspace", lambda a, b: fg.logspace(a, b, 4), [((), "unit"), ((), "unit")],
      lambda a, b: np.logspace(a, b, 4), None,
      jax=lambda a, b: _j().logspace(a, b, 4))
    c("logspace_base", "logspace", lambda a, b, e: fg.logspace(a, b, 4, base=e),
      [((), "unit"), ((), "unit"), ((), "pos")], lambda a, b, e: np.logspace(a, b, 4, base=e),
      None)
    c("geomspace", "geomspace", lambda a, b: fg.geomspace(a, b, 5), [((), "pos"), ((), "pos")],
      lambda a, b: np.geomspace(a, b, 5), None, jax=lambda a, b: _j().geomspace(a, b, 5))
    c("geomspace_neg_arrays", "geomspace", lambda a, b: fg.geomspace(-a, -b, 4, axis=1),
      [((2,), "pos"), ((2,), "pos")], lambda a, b: np.geomspace(-a, -b, 4, axis=1), None)
    c("make_diagonal", "make_diagonal", lambda d: fg.make_diagonal(d, 0, -1, -2),
      [((2, 3), "real")], lambda d: np.einsum("ij,jk->ijk", d, np.eye(3)),
      lambda d: _t().diag_embed(d))
    c("make_diagonal_offset", "make_diagonal", lambda d: fg.make_diagonal(d, 1),
      [((3,), "real")], lambda d: np.diag(d, 1), lambda d: _t().diag(d, 1))
    c("diagflat", "diagflat", lambda v: fg.diagflat(v, -1), [((2, 2), "real")],
      lambda v: np.diagflat(v, -1), lambda v: _t().diagflat(v, -1))

    # ---- products ------------------------------------------------------------------------------
    einsums = [
        ("ii->", ((3, 3),), "trace"), ("ii->i", ((3, 3),), "diag"),
        ("bii->bi", ((2, 3, 3),), "batched_diag"), ("ii", ((3, 3),), "implicit_trace"),
        ("iij,j->i", ((2, 2, 3), (3,)), "repeated_with_other"),
        ("...ij,...jk->...ik", ((2, 3, 4), (4, 2)), "ellipsis_bmm"),
        ("...ij,...jk", ((2, 1, 3, 4), (3, 4, 2)), "ellipsis_implicit_bc"),
        ("i...->...", ((3, 2, 2),), "ellipsis_sum"),
        ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2)), "three"),
        ("ij,jk,kl,lm", ((2, 3), (3, 2), (2, 2), (2, 3)), "four_implicit"),
        ("ijij->ij", ((2, 3, 2, 3),), "double_diag"), ("iii->", ((2, 2, 2),), "triple"),
        ("ij->", ((3, 4),), "naked_sum"), ("ji", ((3, 4),), "implicit_transpose"),
    ]
    for spec, shapes, sid in einsums:
        c(f"einsum_{sid}", "einsum", (lambda s: lambda *xs: fg.einsum(s, *xs))(spec),
          [(s, "real") for s in shapes], (lambda s: lambda *xs: np.einsum(s, *xs))(spec),
          (lambda s: lambda *xs: _t().einsum(s, *xs))(spec))
    c("einsum_optimize", "einsum",
      lambda a, b, d: fg.einsum("ij,jk,kl->il", a, b, d, optimize=True),
      [((2, 3), "real"), ((3, 4), "real"), ((4, 2), "real")],
      lambda a, b, d: np.einsum("ij,jk,kl->il", a, b, d, optimize=True),
      lambda a, b, d: _t().einsum("ij,jk,kl->il", a, b, d))
    c("einsum_interleaved", "einsum", lambda a, b: fg.einsum(a, [0, 1], b, [1, 2], [0, 2]),
      [((2, 3), "real"), ((3, 4), "real")],
      lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]),
      lambda a, b: _t().einsum(a, [0, 1], b, [1, 2], [0, 2]))
    c("einsum_interleaved_ellipsis", "einsum",
      lambda a: fg.einsum(a, [Ellipsis, 0, 0], [Ellipsis]), [((2, 3, 3), "real")],
      lambda a: np.einsum(a, [Ellipsis, 0, 0], [Ellipsis]),
      lambda a: _t().einsum(a, [Ellipsis, 0, 0], [Ellipsis]))
    c("inner_vv", "inner", fg.inner, [((4,), "real"), ((4,), "real")], np.inner,
      lambda a, b: _t().inner(a, b))
    c("inner_nd", "inner", fg.inner, [((2, 3, 4), "real"), ((5, 4), "real")], np.inner,
      lambda a, b: _t().inner(a, b))
    c("inner_scalar", "inner", fg.inner, [((), "real"), ((2, 3), "real")], np.inner,
      lambda a, b: _t().inner(a, b))
    c("kron", "kron", fg.kron, [((2, 3), "real"), ((3, 2), "real")], np.kron,
      lambda a, b: _t().kron(a, b))
    c("kron_1d_2d", "kron", fg.kron, [((3,), "real"), ((2, 2), "real")], np.kron,
      lambda a, b: _t().kron(a, b))
    c("kron_3d", "kron", fg.kron, [((2, 1, 2), "real"), ((2, 2), "real")], np.kron,
      lambda a, b: _t().kron(a, b))
    c("cross", "cross", fg.cross, [((4, 3), "real"), ((3,), "real")], np.cross,
      lambda a, b: _t().linalg.cross(a, b.expand(4, 3)))
    c("cross_axis", "cross", lambda a, b: fg.cross(a, b, axis=0),
      [((3, 2), "real"), ((3, 2), "real")], lambda a, b: np.cross(a, b, axis=0),
      lambda a, b: _t().linalg.cross(a, b, dim=0))
    if CROSS_TAKES_2_VECTORS:    # NumPy 2.5 refuses 2-element vectors (test_numpy_dropin)
        c("cross_2d_3d", "cross", fg.cross, [((2, 3), "real"), ((2, 2), "real")],
          lambda a, b: np.cross(a, b), None,
          jax=lambda a, b: _j().cross(a, b))
    c("vdot", "vdot", fg.vdot, [((2, 3), "real"), ((6,), "real")], np.vdot,
      lambda a, b: _t().vdot(a.reshape(-1), b))

    # ---- cumulative and NaN-ignoring reductions -----------------------------------------------
    c("cumprod", "cumprod", fg.cumprod, [((2, 3), "away")], np.cumprod,
      lambda x: _t().cumprod(x.reshape(-1), 0))
    c("cumprod_axis_zeros", "cumprod", lambda x: fg.cumprod(x, axis=1), [((3, 5), _withzero)],
      lambda x: np.cumprod(x, axis=1), lambda x: _t().cumprod(x, 1))
    c("cumprod_method", "cumprod", lambda x: x.cumprod(axis=0), [((4, 2), _withzero)],
      lambda x: x.cumprod(axis=0), lambda x: _t().cumprod(x, 0), tensor_only=True)
    c("cumulative_sum", "cumulative_sum",
      lambda x: fg.cumulative_sum(x, axis=0, include_initial=True), [((3, 2), "real")],
      lambda x: np.cumulative_sum(x, axis=0, include_initial=True), None)
    c("cumulative_prod", "cumulative_prod", fg.cumulative_prod, [((4,), "away")],
      np.cumulative_prod, lambda x: _t().cumprod(x, 0))
    nan_red = [("nansum", lambda x: _t().nansum(x, 1)), ("nanmean", lambda x: _t().nanmean(x, 1)),
               ("nanprod", None), ("nanvar", None), ("nanstd", None), ("nanmax", None),
               ("nanmin", None)]
    for name, tor in nan_red:
        dom = "withnan" if name not in ("nanprod",) else "away"
        c(f"{name}_ax1", name, (lambda n: lambda x: getattr(fg, n)(x, axis=1))(name),
          [((3, 4), dom)], (lambda n: lambda x: getattr(np, n)(x, axis=1))(name), tor,
          fix=None if name not in ("nanmax", "nanmin", "nanvar", "nanstd") else
          (lambda arrays: [np.where(np.isnan(arrays[0]), np.nan,
                                    _distinct(np.random.default_rng(4), arrays[0].shape))]),
          jax=(lambda n: lambda x: getattr(_j(), n)(x, axis=1))(name))
    c("nansum_all_keep", "nansum", lambda x: fg.nansum(x, keepdims=True), [((2, 3), "withnan")],
      lambda x: np.nansum(x, keepdims=True), None)
    c("nanmean_plain", "nanmean", fg.nanmean, [((2, 3), "real")], np.nanmean,
      lambda x: _t().nanmean(x))
    c("nancumsum", "nancumsum", lambda x: fg.nancumsum(x, axis=1), [((2, 4), "withnan")],
      lambda x: np.nancumsum(x, axis=1), None)
    c("nancumprod", "nancumprod", fg.nancumprod, [((5,), "away")], np.nancumprod, None)

    # ---- order statistics ------------------------------------------------------------------------
    for method in ("linear", "lower", "higher", "nearest", "midpoint"):
        c(f"quantile_{method}", "quantile",
          (lambda m: lambda x: fg.quantile(x, [0.3, 0.75], axis=1, method=m))(method),
          [((2, 7), "distinct")],
          (lambda m: lambda x: np.quantile(x, [0.3, 0.75], axis=1, method=m))(method),
          (lambda m: lambda x: _t().quantile(x, _t().tensor([0.3, 0.75], dtype=x.dtype),
                                             dim=1, interpolation=m))(method),
          out_dtype=np.float64 if method in ('linear', 'midpoint') else None)
    c("quantile_all_keep", "quantile", lambda x: fg.quantile(x, 0.4, keepdims=True),
      [((3, 4), "distinct")], lambda x: np.quantile(x, 0.4, keepdims=True), None)
    c("percentile_axes", "percentile", lambda x: fg.percentile(x, 35, axis=(0, 2)),
      [((2, 3, 4), "distinct")], lambda x: np.percentile(x, 35, axis=(0, 2)), None)
    c("median_odd", "median", lambda x: fg.median(x, axis=0), [((5, 3), "distinct")],
      lambda x: np.median(x, axis=0), lambda x: _t().median(x, 0)[0])
    c("median_even", "median", fg.median, [((2, 3), "distinct")], np.median, None,
      jax=lambda x: _j().median(x))
    def _nan_distinct(arrays):
        x = _distinct(np.random.default_rng(5), arrays[0].shape)
        return [np.where(np.isnan(arrays[0]), np.nan, x)]
    c("nanmedian", "nanmedian", lambda x: fg.nanmedian(x, axis=1), [((3, 6), "withnan")],
      lambda x: np.nanmedian(x, axis=1), None, fix=_nan_distinct,
      jax=lambda x: _j().nanmedian(x, axis=1))
    c("nanquantile", "nanquantile", lambda x: fg.nanquantile(x, [0.2, 0.9], axis=0),
      [((6, 2), "withnan")], lambda x: np.nanquantile(x, [0.2, 0.9], axis=0), None,
      fix=_nan_distinct, out_dtype=np.float64)
    c("nanpercentile", "nanpercentile", lambda x: fg.nanpercentile(x, 60),
      [((7,), "withnan")], lambda x: np.nanpercentile(x, 60), None, fix=_nan_distinct)

    # ---- averages and spreads --------------------------------------------------------------------
    c("average", "average", fg.average, [((3, 4), "real")], np.average,
      lambda x: x.mean())
    c("average_weights", "average", lambda a, w: fg.average(a, axis=1, weights=w),
      [((3, 4), "real"), ((4,), "pos")], lambda a, w: np.average(a, axis=1, weights=w),
      lambda a, w: (a * w).sum(1) / w.sum())
    c("average_returned", "average",
      lambda a, w: list(fg.average(a, axis=0, weights=w, returned=True)),
      [((3, 2), "real"), ((3, 2), "pos")],
      lambda a, w: list(np.average(a, axis=0, weights=w, returned=True)), None)
    c("ptp", "ptp", lambda x: fg.ptp(x, axis=0), [((4, 3), "distinct")],
      lambda x: np.ptp(x, axis=0), lambda x: x.amax(0) - x.amin(0))
    c("cov", "cov", fg.cov, [((3, 5), "real")], np.cov, lambda x: _t().cov(x), out_dtype=np.float64)
    c("cov_y_cols_bias", "cov", lambda x, y: fg.cov(x, y, rowvar=False, bias=True),
      [((5, 2), "real"), ((5,), "real")], lambda x, y: np.cov(x, y, rowvar=False, bias=True),
      None, out_dtype=np.float64,  # (JAX's cov does not stack a 1-d y with rowvar=False)
      jax=lambda x, y: _j().cov(_j().column_stack([x, y]), rowvar=False, bias=True))
    fw = np.array([1, 2, 1, 3])
    c("cov_fweights", "cov", lambda x: fg.cov(x, fweights=fw), [((2, 4), "real")],
      lambda x: np.cov(x, fweights=fw), None, out_dtype=np.float64)
    c("corrcoef", "corrcoef", fg.corrcoef, [((3, 6), "real")], np.corrcoef,
      lambda x: _t().corrcoef(x), tol=10.0, out_dtype=np.float64)

    # ---- integration, differences, signal ------------------------------------------------------
    c("trapezoid", "trapezoid", fg.trapezoid, [((3, 5), "real")], np.trapezoid,
      lambda y: _t().trapezoid(y))
    c("trapezoid_x", "trapezoid", lambda y, x: fg.trapezoid(y, x, axis=0),
      [((4, 2), "real"), ((4,), "real")], lambda y, x: np.trapezoid(y, x, axis=0),
      lambda y, x: _t().trapezoid(y, x, dim=0))
    c("ediff1d", "ediff1d", lambda x, b, e: fg.ediff1d(x, to_end=e, to_begin=b),
      [((2, 3), "real"), ((), "real"), ((2,), "real")],
      lambda x, b, e: np.ediff1d(x, to_end=e, to_begin=b), None)
    c("gradient", "gradient", fg.gradient, [((6,), "real")], np.gradient,
      lambda f: _t().gradient(f)[0])
    c("gradient_2d_edge2", "gradient", lambda f: list(fg.gradient(f, 0.5, edge_order=2)),
      [((4, 5), "real")], lambda f: list(np.gradient(f, 0.5, edge_order=2)),
      lambda f: list(_t().gradient(f, spacing=0.5, edge_order=2)))
    coords = np.array([0.0, 0.5, 1.5, 1.75, 3.0])
    for eo in (1, 2):
        c(f"gradient_coords_edge{eo}", "gradient",
          (lambda e: lambda f: fg.gradient(f, coords, axis=1, edge_order=e))(eo),
          [((2, 5), "real")],
          (lambda e: lambda f: np.gradient(f, coords, axis=1, edge_order=e))(eo),
          (lambda e: lambda f: _t().gradient(f, spacing=(_t().from_numpy(coords),), dim=1,
                                             edge_order=e)[0])(eo))
    c("unwrap", "unwrap", fg.unwrap, [((6,), lambda r, s: np.cumsum(r.uniform(0.5, 2.5, s)))],
      np.unwrap, None, jax=lambda p: _j().unwrap(p))
    xp = np.array([0.0, 1.0, 2.0, 3.0])
    c("interp", "interp", lambda x, fp: fg.interp(x, xp, fp), [((5,), _inrange), ((4,), "real")],
      lambda x, fp: np.interp(x, xp, fp), None,
      jax=lambda x, fp: _j().interp(x, xp, fp), out_dtype=np.float64)
    c("interp_outside", "interp", lambda x, fp: fg.interp(x * 2 - 1.5, xp, fp, right=-2.0),
      [((6,), _inrange), ((4,), "real")],
      lambda x, fp: np.interp(x * 2 - 1.5, xp, fp, right=-2.0), None,
      jax=lambda x, fp: _j().interp(x * 2 - 1.5, xp, fp, right=-2.0), out_dtype=np.float64)
    for mode in ("full", "same", "valid"):
        for n, m in ((5, 3), (3, 4)):
            c(f"convolve_{mode}_{n}{m}", "convolve",
              (lambda md: lambda a, v: fg.convolve(a, v, md))(mode),
              [((n,), "real"), ((m,), "real")],
              (lambda md: lambda a, v: np.convolve(a, v, md))(mode), None,
              jax=(lambda md: lambda a, v: _j().convolve(a, v, md))(mode))
            c(f"correlate_{mode}_{n}{m}", "correlate",
              (lambda md: lambda a, v: fg.correlate(a, v, md))(mode),
              [((n,), "real"), ((m,), "real")],
              (lambda md: lambda a, v: np.correlate(a, v, md))(mode), None,
              jax=(lambda md: lambda a, v: _j().correlate(a, v, md))(mode))

    # ---- polynomials ------------------------------------------------------------------------------
    c("polyval", "polyval", fg.polyval, [((4,), "real"), ((3, 2), "real")], np.polyval, None,
      jax=lambda p, x: _j().polyval(p, x))
    c("polyadd", "polyadd", fg.polyadd, [((3,), "real"), ((5,), "real")], np.polyadd, None)
    c("polysub", "polysub", fg.polysub, [((4,), "real"), ((2,), "real")], np.polysub, None)
    c("polymul", "polymul", fg.polymul, [((3,), "real"), ((2,), "real")], np.polymul, None)
    c("polyder", "polyder", lambda p: fg.polyder(p, 2), [((5,), "real")],
      lambda p: np.polyder(p, 2), None, out_dtype=np.float64)
    c("polyint", "polyint", lambda p, k: fg.polyint(p, 2, k), [((3,), "real"), ((2,), "real")],
      lambda p, k: np.polyint(p, 2, k), None, out_dtype=np.float64)
    c("vander", "vander", lambda x: fg.vander(x, 4), [((3,), "real")],
      lambda x: np.vander(x, 4), None, jax=lambda x: _j().vander(x, 4), out_dtype=np.float64)
    c("vander_increasing", "vander", lambda x: fg.vander(x, increasing=True),
      [((4,), _withzero)], lambda x: np.vander(x, increasing=True), None, out_dtype=np.float64)


EXTRA_DOMAINS = {"withnan": _withnan, "withzero": _withzero, "inrange": _inrange}
