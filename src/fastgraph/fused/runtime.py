"""The runtime of a fused kernel: :class:`FusedKernel`, a compiled register program called
like a function of its inputs, and :class:`BroadcastCall`, its C path for operands whose
broadcasting a plan knows in advance.

A call takes the VM's C fast path when its operands allow (same-shape C-contiguous native
arrays: :meth:`fastgraph.kernels.vm.Program.fast_call`); otherwise the general path here
converts and broadcasts them, derives the iteration geometry (reduction rows, collapsed element
strides, aliasing between outputs and inputs), keeps that geometry per operand signature, and
runs :meth:`~fastgraph.kernels.vm.Program.run`.  The compiler is :mod:`fastgraph.fused.compiler`.
"""
from __future__ import annotations

import os

import numpy as np

from .._core.config import get_num_threads as _get_num_threads

__all__ = ["FusedKernel", "BroadcastCall", "DEFAULT_BLOCK", "DEFAULT_THRESHOLD",
           "default_num_threads"]

#: elements per block (per register); 1024 float64 = 8 KiB, so a dozen live registers stay in L2.
DEFAULT_BLOCK = 1024
#: below this many elements a kernel runs on one thread (no OpenMP fork/join).
DEFAULT_THRESHOLD = 32768

# how the general path turns an input into an operand: as it is, cast, or copied (C order)
_SAME, _CAST, _COPY = 0, 1, 2
#: geometries kept per kernel (one per operand signature; a plan sees one)
_GEO_CACHE = 16
_MISS = object()


class _Geometry:
    """What ``FusedKernel.__call__``'s general path derives from the operands' shapes, strides
    and dtypes alone (see ``_geometry_key``), kept so a repeated call skips it."""
    __slots__ = ("dt", "f64", "conv", "shape", "red_shape", "out_shapes", "red_out", "cin",
                 "cout", "cshape", "R", "red_codes", "no_defer", "same")

    def __init__(self, dt, conv, shape, red_shape, red_out, cin, cout, cshape, R, red_codes,
                 same):
        self.dt, self.conv, self.shape, self.red_shape = dt, conv, shape, red_shape
        self.f64 = dt == np.float64
        self.out_shapes = [red_shape if r else shape for r in red_out]
        self.red_out, self.cin, self.cout, self.cshape = red_out, cin, cout, cshape
        self.R, self.same = R, same
        # (Program.run takes these as C int arrays: made once here, not per call)
        self.red_codes = np.array(red_codes, dtype=np.intc)
        self.no_defer = np.zeros(len(red_out), dtype=np.intc)


def _geometry_key(inputs, out, dtype):
    """The operand signature a cached geometry is valid for: every input an ndarray or a NumPy
    scalar (as the 0-d array it becomes), every output an ndarray, by shape, strides and dtype
    (``None``: not cacheable -- Python scalars, which promote weakly, lists, other types)."""
    for x in inputs:
        if type(x) is not np.ndarray and not isinstance(x, np.generic):
            return None
    if out is None:
        outsig = None
    else:
        outs = (out,) if type(out) is np.ndarray else out
        if type(outs) not in (tuple, list):
            return None
        for o in outs:
            if type(o) is not np.ndarray:
                return None
        outsig = tuple([(o.shape, o.strides, o.dtype) for o in outs])
    return (dtype, tuple([(x.shape, x.strides if type(x) is np.ndarray else (), x.dtype)
                          for x in inputs]), outsig)
_RED_CODES = {None: 0, "sum": 1, "mean": 2, "max": 3, "min": 4}
_NPY_MAXDIMS = 64


def default_num_threads() -> int:
    """The thread count a kernel call uses by default: ``fastgraph.get_num_threads()``."""
    return int(_get_num_threads())


def _thread_count(num_threads) -> int:
    """``num_threads`` as an int: an integer (Python or NumPy; not a bool) or a TypeError naming
    it -- ``int()`` would take ``2.5`` or ``"2"`` silently."""
    if type(num_threads) is bool or not isinstance(num_threads, (int, np.integer)):
        raise TypeError(f"num_threads must be an integer or None, got {num_threads!r} "
                        f"({type(num_threads).__name__})")
    return int(num_threads)


def _threads(num_threads) -> int:
    if num_threads is None:
        nt = default_num_threads()
    else:
        nt = num_threads if type(num_threads) is int else _thread_count(num_threads)
        if nt < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    # more threads than this only adds scratch memory and fork/join cost
    return min(nt, _MAX_THREADS)


_MAX_THREADS = max(64, 4 * (os.cpu_count() or 1))


def _broadcast_shapes(shapes):
    """NumPy broadcasting of shapes (any rank up to 64); ``None`` when they do not broadcast."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        pad = nd - len(s)
        for j, n in enumerate(s):
            o = out[pad + j]
            if n != o:
                if o == 1:
                    out[pad + j] = n
                elif n != 1:
                    return None
    return tuple(out)


def _address(a) -> int:
    return a.__array_interface__["data"][0]


def _convert_inputs(inputs, dt):
    """``(arrays, conversions, aligned)``: each input as an aligned array of the kernel dtype
    ``dt`` and how it was made (``_SAME``, ``_CAST``, ``_COPY``); ``aligned`` is false when an
    input's data pointer, not its signature, asked for a copy."""
    arrs, conv, aligned = [], [], True
    for i, x in enumerate(inputs):
        a = np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"fused kernel input {i} has unsupported dtype {a.dtype} "
                            "(need bool, integer or floating)")
        if a.ndim > _NPY_MAXDIMS:
            raise ValueError(f"input {i} has too many dimensions ({a.ndim})")
        kind = _SAME if a.dtype == dt else _CAST
        a = np.asarray(a, dtype=dt)
        if not a.flags.aligned or any(s % dt.itemsize for s in a.strides):
            if not a.flags.aligned:
                aligned = False
            a = np.array(a, dtype=dt, order="C", copy=True)
            kind = _COPY
        arrs.append(a)
        conv.append(kind)
    return arrs, conv, aligned


def _collapse(it_shape, in_st, out_st, red_out):
    """The iteration space with size-1 dims dropped and dims merged that are contiguous for
    every operand: ``(shape, input strides, output strides)``.  Merging never changes flat C
    order, so reduction rows stay intact; reduced outputs' strides do not count."""
    keep = [j for j in range(len(it_shape)) if it_shape[j] != 1]
    cshape = [it_shape[j] for j in keep]
    cin = [[s[j] for j in keep] for s in in_st]
    cout = [[s[j] for j in keep] for s in out_st]
    j = len(cshape) - 1
    while j > 0:
        ok = all(s[j - 1] == s[j] * cshape[j] for s in cin) and all(
            s[j - 1] == s[j] * cshape[j] for k, s in enumerate(cout) if not red_out[k])
        if ok:
            cshape[j - 1] *= cshape[j]
            del cshape[j]
            for s in cin + cout:
                s[j - 1] = s[j]      # the merged dim steps like the inner one
                del s[j]
        j -= 1
    if not cshape:
        return [1], [[0] for _ in cin], [[0] for _ in cout]
    return cshape, cin, cout


class FusedKernel:
    """A compiled fused elementwise kernel. Call it like a function of its inputs.

    ``k(*inputs, out=None, num_threads=None, dtype=None)`` returns the output array (one output)
    or a tuple of arrays (several outputs).  Inputs broadcast like NumPy; the kernel dtype is
    float32 when every input is float32 (or ``dtype=`` says so), else float64 (NumPy promotion,
    integers and bools become float64).  ``out=`` takes preallocated arrays (one per output, exact
    shape and dtype, writeable): nothing is allocated then.  A reduced output with all axes
    reduced and ``keepdims=False`` is a 0-d array.

    ``k.call_flat(inputs, outs, num_threads=None)`` is the **lean entry point** for callers that
    validated their operands once (a compiled plan): ``inputs`` a tuple/list of ``nin``
    ndarrays, ``outs`` a tuple/list of ``nout`` ndarrays, all C-contiguous, aligned, native byte
    order, one dtype (float64 or float32, that of ``outs[0]``), each exactly ``outs[0].size``
    elements (shapes are not compared; nothing broadcasts), outputs writeable and disjoint from
    each other; an output may *be* an input (same data pointer: in place) but not partially
    overlap one.  It converts, broadcasts and allocates nothing and returns ``None``; a violated
    contract raises ``TypeError``/``ValueError`` (cheap C checks, never a silent fallback).
    Elementwise kernels only (a kernel with a reduction raises ``TypeError``).  Per-thread
    register scratch is cached on the kernel; concurrent calls from several Python threads are
    safe (a second concurrent call uses its own scratch).
    """

    def __init__(self, prog, nin, nout, specs, block, threshold, strategy, info, name,
                 stream_min=None):
        self._prog = prog
        self.nin = nin
        self.nout = nout
        self.reduce = specs
        self.block = block
        self.threshold = threshold
        self.strategy = strategy
        self._info = info
        self.name = name
        red = [s for s in specs if s is not None]
        self._red_axes = red[0][1] if red else None
        self._keepdims = red[0][2] if red else False
        self._has_red = bool(red)
        self._stream = -1 if stream_min is None else int(stream_min)
        prog.configure(block, threshold, self._stream, _get_num_threads, _MAX_THREADS)
        # C-level fast path of __call__ (elementwise kernels only; None -> general path)
        self._fast = prog.fast_call if not self._has_red else None
        # iteration geometry of the general path, per operand signature (see _run_cached)
        self._geo = {}
        #: ``call_flat(inputs, outs, num_threads=None)``: the lean entry point for pre-validated
        #: operands (see the class docstring); a bound C method, no Python frame in between.
        self.call_flat = prog.run_contiguous if not self._has_red else self._no_flat
        #: elementwise (no reduction): an output may be one of the inputs (in place)
        self.elementwise = not self._has_red

    @property
    def nregs(self) -> int:
        return self._info["nregs"]

    def describe(self) -> str:
        """A readable listing of the register program."""
        mode_name = {0: "", 1: "  [vec]", 2: "  [numpy loop]"}
        inf = self._info
        lines = [f"fused kernel {self.name!r}: {self.nin} input(s), {self.nout} output(s), "
                 f"{len(inf['listing'])} instruction(s), {inf['nregs']} block registers "
                 f"(block={self.block}, strategy={self.strategy})"]
        for i, r in enumerate(inf["in_reg"]):
            lines.append(f"  r{r:<3} <- in{i}" if r >= 0 else f"  (in{i} unused)")
        for r, v in inf["consts"].items():
            lines.append(f"  r{r:<3} <- const {v!r}")
        for name, mode, dst, srcs in inf["listing"]:
            args = ", ".join(f"r{s}" for s in srcs)
            lines.append(f"  r{dst:<3} = {name}({args}){mode_name[mode]}")
        for k, r in enumerate(inf["out_reg"]):
            spec = self.reduce[k]
            red = "" if spec is None else (
                f"  ({spec[0]} over {'all axes' if spec[1] is None else 'axes ' + str(spec[1])}"
                f"{', keepdims' if spec[2] else ''})")
            lines.append(f"  out{k} <- r{r}{red}")
        return "\n".join(lines)

    __str__ = describe

    def __repr__(self):
        return f"<FusedKernel {self.name!r}: {self.nin} in, {self.nout} out, {self.nregs} regs>"

    # -- calling --------------------------------------------------------------------------------
    def _no_flat(self, inputs, outs, num_threads=None):
        raise TypeError(f"fused kernel {self.name!r} has a reduction; call_flat takes "
                        "elementwise kernels only (call the kernel instead)")

    def __call__(self, *inputs, out=None, num_threads=None, dtype=None):
        # the C fast path computes in the inputs' own (common) dtype: fine when none is forced,
        # or when the forced one is already theirs
        if self._fast is not None and (dtype is None or (
                inputs and type(inputs[0]) is np.ndarray and inputs[0].dtype == dtype)):
            res = self._fast(inputs, out, num_threads)
            if res is not None:
                return res
        if len(inputs) != self.nin:
            raise TypeError(f"fused kernel {self.name!r} takes {self.nin} input(s), "
                            f"got {len(inputs)}")
        conv = _weak_scalars(self, inputs, dtype)
        if conv is not None:
            return self(*conv, out=out, num_threads=num_threads, dtype=dtype)
        key = _geometry_key(inputs, out, dtype)
        if key is not None:
            geo = self._geo.get(key)
            if geo is not None:
                res = self._run_cached(geo, inputs, out, num_threads)
                if res is not _MISS:
                    return res
        return self._run_general(inputs, out, num_threads, dtype, key)

    def _run_general(self, inputs, out, num_threads, dtype, key):
        """The general path: convert and broadcast the operands, derive the iteration geometry
        (kept under the operand signature ``key`` unless an operand had to be copied), run."""
        dt = self._dtype(inputs, dtype)
        arrs, conv, aligned = _convert_inputs(inputs, dt)
        if not aligned:
            key = None          # (the data pointer, not the signature, asked for a copy)
        shape = _broadcast_shapes([a.shape for a in arrs])
        if shape is None:
            raise ValueError(
                f"fused kernel {self.name!r}: input shapes "
                f"{', '.join(str(a.shape) for a in arrs)} cannot be broadcast together")
        nd = len(shape)
        perm, red_shape, R = self._reduction_geometry(shape)
        outs = self._outputs(out, shape, red_shape, dt)
        N = int(np.prod(shape, dtype=np.int64))
        if N == 0 or (self._has_red and R == 0):
            return self._empty(outs)

        def strides_of(a):
            """``a``'s element strides in iteration order (``perm``), 0 for broadcast dims."""
            pad = nd - a.ndim
            st = []
            for d in perm:
                if d < pad or a.shape[d - pad] == 1:
                    st.append(0)
                else:
                    st.append(a.strides[d - pad] // dt.itemsize)
            return st

        defer, copied = self._aliasing(outs, arrs, shape, strides_of)
        red_out = [self.reduce[k] is not None for k in range(self.nout)]
        cshape, cin, cout = _collapse(
            [shape[d] for d in perm], [strides_of(a) for a in arrs],
            [strides_of(o) if not red_out[k] else [0] * nd for k, o in enumerate(outs)],
            red_out)
        nt = _threads(num_threads)
        red_codes = [_RED_CODES[s[0]] if s is not None else 0 for s in self.reduce]
        geo = _Geometry(
            dt, conv, shape, red_shape, red_out,
            np.array(cin, dtype=np.int64).reshape(len(arrs), len(cshape)),
            np.array(cout, dtype=np.int64).reshape(self.nout, len(cshape)),
            np.array(cshape, dtype=np.int64), R if self._has_red else 0, red_codes,
            [[self.reduce[k] is None and o.shape == shape and strides_of(a) == strides_of(o)
              for a in arrs] for k, o in enumerate(outs)])
        if key is not None and not copied:
            if len(self._geo) >= _GEO_CACHE:
                self._geo.clear()
            self._geo[key] = geo
        self._prog.run(
            dt == np.float64, arrs, geo.cin,
            [o.reshape(-1) if red_out[k] else o for k, o in enumerate(outs)],
            geo.cout, geo.cshape, geo.R, red_codes, defer, nt, self.block, self.threshold,
            self._stream)
        return outs[0] if self.nout == 1 else tuple(outs)

    def _reduction_geometry(self, shape):
        """``(perm, red_shape, R)`` for the broadcast ``shape``: the iteration order (kept axes,
        then reduced ones, so that each reduced output element is a contiguous row), the
        reduced outputs' shape and the row length (``None`` and 0 without a reduction)."""
        nd = len(shape)
        if not self._has_red:
            return tuple(range(nd)), None, 0
        axes = self._red_axes
        if axes is None:
            raxes = tuple(range(nd))
        else:
            raxes = []
            for ax in axes:
                if not -nd <= ax < nd:
                    raise ValueError(f"reduction axis {ax} is out of bounds for the "
                                     f"broadcast shape {shape}")
                raxes.append(ax % nd)
            if len(set(raxes)) != len(raxes):
                raise ValueError(f"repeated axis in reduction axes {axes}")
            raxes = tuple(sorted(raxes))
        kept = tuple(d for d in range(nd) if d not in raxes)
        red_shape = tuple(1 if d in raxes else shape[d] for d in range(nd)) \
            if self._keepdims else tuple(shape[d] for d in kept)
        return kept + raxes, red_shape, int(np.prod([shape[d] for d in raxes], dtype=np.int64))

    def _aliasing(self, outs, arrs, shape, strides_of):
        """``(defer, copied)``: an output that is exactly an input (the same memory, the same
        layout) is computed in scratch and written back per block (``defer[k]``); an input
        overlapping an output any other way is copied first (in ``arrs``)."""
        defer = [0] * self.nout
        copied = False
        for k, o in enumerate(outs):
            for i, a in enumerate(arrs):
                if np.may_share_memory(o, a):
                    same = (self.reduce[k] is None and o.shape == shape
                            and _address(a) == _address(o) and strides_of(a) == strides_of(o))
                    if same:
                        defer[k] = 1
                    else:
                        arrs[i] = a = a.copy()
                        copied = True
        return defer, copied

    def _run_cached(self, geo, inputs, out, num_threads):
        """``__call__`` on operands whose shapes, strides and dtypes were seen before: the
        iteration geometry (broadcasting, reduction rows, collapsed strides) is reused and only
        what depends on the data is redone -- conversions, outputs, aliasing.  ``_MISS`` sends
        the call down the full path (an operand misaligned or overlapping an output)."""
        dt = geo.dt
        arrs = []
        for i, a in enumerate(inputs):
            if type(a) is not np.ndarray:
                a = np.asarray(a)           # a NumPy scalar: its 0-d array
            kind = geo.conv[i]
            if kind == _COPY:
                a = np.array(a, dtype=dt, order="C", copy=True)
            else:
                if kind == _CAST:
                    a = np.asarray(a, dtype=dt)
                if not a.flags.aligned:
                    return _MISS
            arrs.append(a)
        defer = geo.no_defer
        if out is None:
            outs = [np.empty(s, dtype=dt) for s in geo.out_shapes]
        else:
            # (the signature fixed their number, shapes, strides and dtypes; the first call
            # with it checked them)
            outs = [out] if type(out) is np.ndarray else list(out)
            for k, o in enumerate(outs):
                if not o.flags.writeable:
                    return _MISS            # the full path raises the error
                for i, a in enumerate(arrs):
                    if np.may_share_memory(o, a):
                        if not (geo.same[k][i] and _address(a) == _address(o)):
                            return _MISS
                        if defer is geo.no_defer:
                            defer = geo.no_defer.copy()
                        defer[k] = 1
        red_out = geo.red_out
        self._prog.run(
            geo.f64, arrs, geo.cin,
            [o.reshape(-1) if red_out[k] else o for k, o in enumerate(outs)],
            geo.cout, geo.cshape, geo.R, geo.red_codes, defer, _threads(num_threads),
            self.block, self.threshold, self._stream)
        return outs[0] if self.nout == 1 else tuple(outs)

    def broadcast_call(self, shape, cols: int, modes: str) -> "BroadcastCall":
        """A callable for operands whose broadcasting the caller knows in advance (a compiled
        plan): the iteration space ``shape`` seen as ``(rows, cols)`` in C order, and per input
        ``modes[i]``: ``"F"`` the full space, ``"S"`` a scalar, ``"R"`` a row of ``cols``
        elements repeated on every row (a bias), ``"C"`` one element per row (a ``keepdims``
        reduction).  It runs the VM's C fast path (~1 us of overhead, where the general path's
        Python broadcasting costs ~50 us) and falls back to ``__call__`` on anything else
        (another dtype, a non-contiguous operand, other sizes).  Elementwise kernels only."""
        if self._has_red:
            raise TypeError(f"fused kernel {self.name!r} has a reduction")
        modes = str(modes)
        if len(modes) != self.nin or set(modes) - set("FSRC"):
            raise ValueError(f"modes must be one of F/S/R/C per input, got {modes!r}")
        return BroadcastCall(self, tuple(int(d) for d in shape), int(cols), modes.encode())

    def _dtype(self, inputs, dtype):
        if dtype is not None:
            dt = np.dtype(dtype)
            if dt not in (np.float32, np.float64):
                raise TypeError(f"fused kernels run in float32 or float64, not {dt}")
            return dt
        if not inputs:
            return np.dtype(np.float64)
        try:
            rt = np.result_type(*[x if isinstance(x, (bool, int, float, np.ndarray, np.generic))
                                  else np.asarray(x) for x in inputs])
        except TypeError as e:
            raise TypeError(f"fused kernel {self.name!r}: cannot promote input dtypes: "
                            f"{e}") from None
        if rt.kind == "f" and rt.itemsize <= 4:
            return np.dtype(np.float32)
        if rt.kind in "biuf":
            return np.dtype(np.float64)
        raise TypeError(f"fused kernel {self.name!r}: inputs promote to {rt}, "
                        "need a real dtype")

    def _outputs(self, out, shape, red_shape, dt):
        shapes = [shape if s is None else red_shape for s in self.reduce]
        if out is None:
            return [np.empty(s, dtype=dt) for s in shapes]
        if isinstance(out, np.ndarray):
            out = [out]
        out = list(out)
        if len(out) != self.nout:
            raise ValueError(f"fused kernel {self.name!r}: out= has {len(out)} array(s), "
                             f"the kernel has {self.nout} output(s)")
        for k, (o, s) in enumerate(zip(out, shapes)):
            if not isinstance(o, np.ndarray):
                raise TypeError(f"out[{k}] must be a numpy.ndarray, got {type(o).__name__}")
            if o.dtype != dt:
                raise TypeError(f"out[{k}] has dtype {o.dtype}, the kernel computes {dt}")
            if o.shape != tuple(s):
                raise ValueError(f"out[{k}] has shape {o.shape}, expected {tuple(s)}")
            if not o.flags.writeable:
                raise ValueError(f"out[{k}] is read-only")
            if self.reduce[k] is not None and not o.flags.c_contiguous:
                raise ValueError(f"out[{k}] (a reduced output) must be C-contiguous")
            if any(st == 0 for st, n in zip(o.strides, o.shape) if n > 1):
                raise ValueError(f"out[{k}] has zero strides {o.strides}: several elements "
                                 "share memory (a broadcast view cannot be written)")
            if any(st % dt.itemsize for st in o.strides):
                raise ValueError(f"out[{k}] has strides {o.strides} that are not multiples of "
                                 f"the itemsize {dt.itemsize}")
            if not o.flags.aligned:
                addr = _address(o)
                raise ValueError(f"out[{k}] is misaligned: its data pointer {addr:#x} is not a "
                                 f"multiple of {dt.alignment} ({dt} alignment)")
        for k in range(self.nout):
            for m in range(k):
                if out[k].size and out[m].size and np.may_share_memory(out[k], out[m]):
                    raise ValueError(f"out[{k}] and out[{m}] overlap")
        return out

    def _empty(self, outs):
        for k, o in enumerate(outs):
            spec = self.reduce[k]
            if spec is None or o.size == 0:
                continue
            kind = spec[0]
            if kind == "sum":
                o[...] = 0
            elif kind == "mean":
                o[...] = np.nan
            else:
                raise ValueError(f"zero-size array to reduction operation {kind} "
                                 "which has no identity")
        return outs[0] if self.nout == 1 else tuple(outs)


_PY_NUMBERS = (float, int, bool)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _weak_scalars(k, inputs, dtype):
    """``inputs`` with Python numbers made NumPy scalars of the kernel's dtype, or ``None``
    when there are none (or one does not convert).  A kernel computes a Python number as
    NumPy 2 does -- weak, cast to the other operands' dtype -- so the value is the same; the
    C paths and the geometry cache take NumPy scalars only, and ``fg.function`` feeds Python
    scalar arguments as they are (~70 us on the general path, ~1 us more than a NumPy scalar
    after this).  (Spelt out for speed: dtype identity tests instead of ``np.result_type``.)"""
    py = False
    f32 = True
    f64 = False
    for x in inputs:
        if type(x) in _PY_NUMBERS:
            py = True
        else:
            d = getattr(x, "dtype", None)
            if d is _F64:
                f64 = True
            elif d is not _F32:
                f32 = False
    if not py:
        return None
    if dtype is None and f64:
        dt = _F64               # (anything else promotes with it to float64 or fails later)
    elif dtype is None and f32:
        dt = _F32
    else:
        dt = k._dtype(inputs, dtype)
    try:
        return tuple([dt.type(x) if type(x) in _PY_NUMBERS else x for x in inputs])
    except (OverflowError, ValueError):
        return None


class BroadcastCall:
    """``FusedKernel.broadcast_call``'s result: ``f(*inputs, out=None, dtype=None)``."""
    __slots__ = ("k", "shape", "cols", "modes", "name", "_c")
    elementwise = True

    def __init__(self, k, shape, cols, modes):
        self.k, self.shape, self.cols, self.modes, self.name = k, shape, cols, modes, k.name
        self._c = k._prog.bcast_call

    def __call__(self, *inputs, out=None, dtype=None):
        # the C path takes NumPy scalars in scalar slots itself (a plan feeds 0-d values, such
        # as a learning rate, as NumPy scalars); anything it declines takes the general path
        if dtype is None or (inputs and type(inputs[0]) is np.ndarray
                             and inputs[0].dtype == dtype):
            res = self._c(inputs, out, self.shape, self.cols, self.modes, None)
            if res is not None:
                return res
            conv = _weak_scalars(self.k, inputs, dtype)
            if conv is not None:
                return self(*conv, out=out, dtype=dtype)
        return self.k(*inputs, out=out, dtype=dtype)
