# Directives (boundscheck, wraparound, cdivision, language_level) are set in setup.py.
"""The fused-kernel virtual machine: a block interpreter for short register programs.

The Python side (:mod:`fastgraph.fused`) compiles an expression DAG of elementwise ops into a
register program, validates and broadcasts the operands, collapses dimensions, and calls
:meth:`Program.run` (or one of its C fast paths).  Here the flattened iteration space is cut into
fixed-size blocks; OpenMP threads take blocks (``prange``, guided schedule), load each input's
block into a register (in place when the input is contiguous, gathered with per-dimension
strides otherwise, stride 0 for broadcasting), run the program on block-length registers and
write only the outputs.  An optional trailing reduction is accumulated per block and the
per-block partials are combined in block order, so the result does not depend on the number of
threads.

The opcodes are the rows of ``include/fg_opcodes.h``, one X-macro list: the VM takes its enum
and arities from it and exports the rows (:func:`opcode_rows`), which the Python compiler reads
(:mod:`fastgraph.fused.opcodes`).  What an instruction does to one block is C in
``include/fg_vm.h``: plain loops and fastgraph's vectorised transcendentals, compiled once per
instruction set (AVX-512, AVX2 + FMA, baseline), the CPU's best copy chosen at import
(:func:`vec_isa`; ``FASTGRAPH_VEC_ISA`` names another), every copy giving the same bits; libm
loops; NumPy's own
inner loops, found at import in the ufuncs the rows name.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.stdlib cimport malloc, free
from libc.string cimport memset, memcmp, memcpy
from libc.stdint cimport uintptr_t
from cpython.float cimport PyFloat_AsDouble
from libc.math cimport fabs
cimport numpy as cnp
from fastgraph.kernels.ufunc_loops cimport find_loop, loop_t
import numpy as np

cnp.import_array()

# NumPy scalar types the C broadcast path reads directly (``Program.bcast_call``)
cdef object _NP_FLOAT64 = np.float64
cdef object _NP_FLOAT32 = np.float32

ctypedef fused real:
    float
    double


cdef extern from "fg_vm.h":
    ctypedef struct fg_opcode_row:
        const char* name
        const char* eval
        const char* ufunc
        const char* doc
        int arity
        int cost
        int ulp32
        int ulp64
    const fg_opcode_row fg_opcode_rows[]
    cdef enum:      # the opcodes this module names (all of them: FG_OPCODES)
        FG_OP_POWER, FG_OP_EXP, FG_OP_LOG1P, FG_OP_SIGMOID, FG_OP_SOFTPLUS, FG_OP_END
    int fg_vm_arith_d(int, double*, const double*, const double*, const double*,
                      Py_ssize_t) noexcept nogil
    int fg_vm_arith_f(int, float*, const float*, const float*, const float*,
                      Py_ssize_t) noexcept nogil
    int fg_vm_vec_d(int, double*, const double*, Py_ssize_t) noexcept nogil
    int fg_vm_vec_f(int, float*, const float*, Py_ssize_t) noexcept nogil
    int fg_libm_d(int, double*, const double*, const double*, Py_ssize_t) noexcept nogil
    int fg_libm_f(int, float*, const float*, const float*, Py_ssize_t) noexcept nogil
    int fg_vm_has_vec(int) noexcept nogil
    int fg_vm_isa_best() noexcept nogil
    int fg_vm_isa_count() noexcept nogil
    const char* fg_vm_isa_name(int) noexcept nogil
    int fg_vm_isa_supported(int) noexcept nogil
    int fg_vm_isa_current() noexcept nogil
    void fg_vm_isa_set(int) noexcept nogil
    void fg_stream_d(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_stream_f(float*, const float*, Py_ssize_t) noexcept nogil
    void fg_stream_d_base(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_stream_f_base(float*, const float*, Py_ssize_t) noexcept nogil
    void fg_sfence() noexcept nogil
    void fg_prefetch_part(const char*, Py_ssize_t, Py_ssize_t) noexcept nogil
    void fg_prefetch_part_w(const char*, Py_ssize_t, Py_ssize_t) noexcept nogil
    void fg_probe_4r1w(double*, const double*, const double*, const double*, const double*,
                       Py_ssize_t, Py_ssize_t) noexcept nogil


# --------------------------------------------------------------------------------------------
# the opcode list, as Python sees it
# --------------------------------------------------------------------------------------------
cdef str _text(const char* s):
    return (<bytes>s).decode()


_ROWS = tuple(
    (_text(fg_opcode_rows[i].name), fg_opcode_rows[i].arity, i + 1, _text(fg_opcode_rows[i].eval),
     None if _text(fg_opcode_rows[i].ufunc) == "none" else _text(fg_opcode_rows[i].ufunc),
     fg_opcode_rows[i].cost, (fg_opcode_rows[i].ulp32, fg_opcode_rows[i].ulp64),
     _text(fg_opcode_rows[i].doc))
    for i in range(FG_OP_END - 1))
_CODE = {row[0]: row[2] for row in _ROWS}


def opcode_rows():
    """The VM's opcodes (``include/fg_opcodes.h``), one tuple per opcode in opcode order:
    ``(name, arity, code, eval, ufunc, cost, (ulp32, ulp64), doc)``, ``ufunc`` ``None`` where no
    NumPy or SciPy loop computes it.

    >>> from fastgraph.kernels.vm import opcode_rows
    >>> opcode_rows()[1][:5]
    ('add', 2, 2, 'c', 'add')
    """
    return _ROWS


def vm_opcode_map():
    """``{opcode number: op name}``, as register programs use them."""
    return {row[2]: row[0] for row in _ROWS}


# --------------------------------------------------------------------------------------------
# which instruction set's copy of the loops runs
# --------------------------------------------------------------------------------------------
cdef int _BEST = fg_vm_isa_best()
fg_vm_isa_set(_BEST)


def _isa_from_environment():
    """Run the copy ``FASTGRAPH_VEC_ISA`` names (one of :func:`vec_isas`, or ``cpu``): every copy
    computes the same bits, so this changes only the speed (benchmarks, and checking a path on a
    machine that has a better one).  A name this CPU cannot run warns and keeps the best."""
    import os
    name = os.environ.get("FASTGRAPH_VEC_ISA", "").strip().lower()
    if not name:
        return
    try:
        _set_vec_isa(name)
    except ValueError as exc:
        import warnings
        warnings.warn(f"FASTGRAPH_VEC_ISA ignored: {exc}; running {vec_isa()!r}",
                      RuntimeWarning, stacklevel=2)


def vec_isas():
    """The copies of the vec and arithmetic loops this CPU runs, best first.

    >>> from fastgraph.kernels.vm import vec_isas
    >>> vec_isas()[-1]
    'baseline'
    """
    return tuple(_text(fg_vm_isa_name(i)) for i in range(fg_vm_isa_count())
                 if fg_vm_isa_supported(i))


def vec_isa():
    """Which copy of the vec and arithmetic loops runs: ``"avx512"`` (AVX-512 F, DQ and VL),
    ``"avx2+fma"`` or ``"baseline"``; they compute the same bits, at different speeds.

    >>> from fastgraph.kernels.vm import vec_isa, vec_isas
    >>> vec_isa() in vec_isas()
    True
    """
    return _text(fg_vm_isa_name(fg_vm_isa_current()))


def _set_vec_isa(str isa):
    """Run the ``"baseline"`` copy of the vec and arithmetic loops, another the CPU has (by its
    name in :func:`vec_isas`), or the CPU's best (``"cpu"``) -- for tests, which prove every copy
    gives the same bits, and benchmarks: on an AVX-512 machine the other copies would otherwise
    never run.  Not thread-safe: switch only while no kernel runs."""
    cdef int i
    if isa == "cpu":
        fg_vm_isa_set(_BEST)
        return
    for i in range(fg_vm_isa_count()):
        if _text(fg_vm_isa_name(i)) == isa and fg_vm_isa_supported(i):
            fg_vm_isa_set(i)
            return
    choices = ", ".join(repr(s) for s in ("cpu",) + vec_isas())
    raise ValueError(f"isa must be one of {choices} (this CPU's), got {isa!r}")


_isa_from_environment()


def stream_probe_4r1w(double[::1] a, double[::1] b, double[::1] c, double[::1] e,
                      double[::1] out, int num_threads=1):
    """``out = (a + b) + (c + e)`` with streaming stores, on ``num_threads`` threads: a plain C
    pass with the fused forward's memory traffic (4 reads, 1 write) and no other work, the
    benchmarks' probe of the machine's streaming bandwidth (:mod:`fastgraph.bench.fused`).

    >>> import numpy as np
    >>> x = np.arange(5.0)
    >>> out = np.empty(5)
    >>> stream_probe_4r1w(x, x, x, x, out)
    >>> out
    array([ 0.,  4.,  8., 12., 16.])
    """
    cdef Py_ssize_t n = out.shape[0], blk, nblk, step = 16384
    if not (a.shape[0] == b.shape[0] == c.shape[0] == e.shape[0] == n):
        raise ValueError(f"stream_probe_4r1w: the five arrays must have one length, got "
                         f"{[a.shape[0], b.shape[0], c.shape[0], e.shape[0], n]}")
    if num_threads < 1:
        raise ValueError(f"stream_probe_4r1w: num_threads must be >= 1, got {num_threads}")
    if n == 0:
        return
    nblk = (n + step - 1) // step
    with nogil:
        for blk in prange(nblk, num_threads=num_threads, schedule="static"):
            fg_probe_4r1w(&out[0], &a[0], &b[0], &c[0], &e[0], blk * step,
                          min(n, (blk + 1) * step))
        fg_sfence()


def vm_has_vec(name):
    """Whether the VM has a "vec" (own vectorised) loop for op ``name``: softplus has one when
    the exp and log1p it is made of do."""
    k = _CODE.get(name, 0)
    if k == FG_OP_SOFTPLUS:
        return bool(fg_vm_has_vec(FG_OP_EXP) and fg_vm_has_vec(FG_OP_LOG1P))
    return bool(k and fg_vm_has_vec(k))


# --------------------------------------------------------------------------------------------
# NumPy's inner loops, per opcode and dtype (resolved once, from the ufuncs the rows name)
# --------------------------------------------------------------------------------------------
cdef enum:
    MAXOP = 256

cdef int _arity[MAXOP]
cdef loop_t _loop_d[MAXOP]
cdef void* _loopdata_d[MAXOP]
cdef loop_t _loop_f[MAXOP]
cdef void* _loopdata_f[MAXOP]
# evaluation modes of an instruction (the compiler writes them; fused.compiler's _MODES)
cdef int MODE_C = 0
cdef int MODE_VEC = 1
cdef int MODE_UFUNC = 2


# a unary op whose row names a binary ufunc calls its loop with 0 first (softplus:
# logaddexp(0, a)); _loop_nin[k] is the loop's number of inputs
cdef int _loop_nin[MAXOP]


cdef int _find_loops(int k, object ufunc, int nin) except -1:
    find_loop(ufunc, nin + 1, cnp.NPY_DOUBLE, &_loop_d[k], &_loopdata_d[k])
    find_loop(ufunc, nin + 1, cnp.NPY_FLOAT, &_loop_f[k], &_loopdata_f[k])
    _loop_nin[k] = nin
    return 0


def _ufunc_named(str name):
    """NumPy's ufunc ``name``, or the one at a dotted path (``scipy.special.expit``)."""
    if "." not in name:
        return getattr(np, name)
    import importlib
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _init_tables():
    if <int>FG_OP_END > <int>MAXOP:
        raise ImportError(f"fastgraph.kernels.vm: {FG_OP_END - 1} opcodes, at most {MAXOP - 1}")
    for name, arity, code, ev, uf, cost, ulp, doc in _ROWS:
        _arity[code] = arity
        if uf is not None and arity <= 2:
            ufunc = _ufunc_named(uf)
            if ufunc.nin not in (arity, arity + 1) or (arity == 2 and ufunc.nin != 2):
                raise ImportError(f"fastgraph.kernels.vm: {uf} takes {ufunc.nin} operands, "
                                  f"opcode {name!r} {arity}")
            _find_loops(code, ufunc, ufunc.nin)
    # sigmoid and softplus are made of exp and log1p: their loops, whatever those rows say
    if _loop_d[FG_OP_LOG1P] == NULL:
        _find_loops(FG_OP_LOG1P, np.log1p, 1)
    if _loop_d[FG_OP_EXP] == NULL:
        _find_loops(FG_OP_EXP, np.exp, 1)


_init_tables()


def ufunc_loop_available(name, dtype):
    """Whether NumPy's inner loop for op ``name`` was found for ``dtype`` (float32/float64)."""
    cdef int k = _CODE[name]
    if np.dtype(dtype) == np.float64:
        return _loop_d[k] != NULL
    if np.dtype(dtype) == np.float32:
        return _loop_f[k] != NULL
    return False


# --------------------------------------------------------------------------------------------
# one instruction on one block
# --------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------
# elementwise kernels on one block
# --------------------------------------------------------------------------------------------
cdef inline void _call_loop(loop_t fn, void* data, int nin, real* d, real* a, real* b,
                            Py_ssize_t n) noexcept nogil:
    cdef char* args[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    dims[0] = n
    steps[0] = sizeof(real)
    steps[1] = sizeof(real)
    steps[2] = sizeof(real)
    args[0] = <char*>a
    if nin == 1:
        args[1] = <char*>d
    else:
        args[1] = <char*>b
        args[2] = <char*>d
    fn(args, dims, steps, data)


cdef inline void _call_loop_zero_first(loop_t fn, void* data, real* d, real* a,
                                       Py_ssize_t n) noexcept nogil:
    cdef real zero = 0
    cdef char* args[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    dims[0] = n
    steps[0] = 0
    steps[1] = sizeof(real)
    steps[2] = sizeof(real)
    args[0] = <char*>&zero
    args[1] = <char*>a
    args[2] = <char*>d
    fn(args, dims, steps, data)


cdef inline loop_t _loop_of(int k, real* dummy) noexcept nogil:
    if real is double:
        return _loop_d[k]
    else:
        return _loop_f[k]


cdef inline void* _loopdata_of(int k, real* dummy) noexcept nogil:
    if real is double:
        return _loopdata_d[k]
    else:
        return _loopdata_f[k]


cdef inline bint _vec(int k, real* d, real* a, Py_ssize_t n) noexcept nogil:
    if real is double:
        return fg_vm_vec_d(k, d, a, n)
    else:
        return fg_vm_vec_f(k, d, a, n)


cdef void _transcendental(int k, int mode, real* d, real* a, real* b,
                          Py_ssize_t n) noexcept nogil:
    """d = f_k(a) (power: a ** b) for an op without a plain C loop, by the requested strategy:
    NumPy's loop, fastgraph's vec loop, or libm in double."""
    cdef loop_t fn = _loop_of(k, d)
    if mode == MODE_UFUNC and fn != NULL:
        _call_loop(fn, _loopdata_of(k, d), 1, d, a, <real*>NULL, n)
        return
    if mode == MODE_VEC and _vec(k, d, a, n):
        return
    if real is double:
        fg_libm_d(k, d, a, b, n)
    else:
        fg_libm_f(k, d, a, b, n)


cdef void _exec(int k, int mode, real* d, real* a, real* b, real* c,
                Py_ssize_t n) noexcept nogil:
    """One instruction on one block: d[:n] = op_k(a, b, c)."""
    cdef Py_ssize_t i
    cdef real x, e, r, zero = 0, one = 1
    cdef loop_t fn
    if mode == MODE_UFUNC and (_arity[k] == 2 or _loop_nin[k] == 2):
        fn = _loop_of(k, d)
        if fn != NULL:
            if _arity[k] == 2:
                _call_loop(fn, _loopdata_of(k, d), 2, d, a, b, n)
            else:       # f(0, a): the zero operand with stride 0
                _call_loop_zero_first(fn, _loopdata_of(k, d), d, a, n)
            return
    if real is double:
        if fg_vm_arith_d(k, d, a, b, c, n):
            return
    else:
        if fg_vm_arith_f(k, d, a, b, c, n):
            return
    if k == FG_OP_SIGMOID:
        if mode == MODE_VEC and _vec(k, d, a, n):
            return
        fn = _loop_of(k, d)
        if mode == MODE_UFUNC and fn != NULL:     # SciPy's expit: the unfused op's loop
            _call_loop(fn, _loopdata_of(k, d), 1, d, a, <real*>NULL, n)
            return
        for i in range(n):
            d[i] = -fabs(a[i])
        _transcendental(FG_OP_EXP, mode, d, d, <real*>NULL, n)
        for i in range(n):
            e = d[i]
            r = one / (one + e)
            d[i] = r if a[i] >= zero else e * r
    elif k == FG_OP_SOFTPLUS:
        # log1p(exp(-|a|)) + max(a, 0), in two in-place passes over d
        for i in range(n):
            d[i] = -fabs(a[i])
        _transcendental(FG_OP_EXP, mode, d, d, <real*>NULL, n)
        _transcendental(FG_OP_LOG1P, mode, d, d, <real*>NULL, n)
        for i in range(n):
            x = a[i]
            d[i] = d[i] + (x if x > zero else zero)
    else:
        _transcendental(k, mode, d, a, b, n)

# --------------------------------------------------------------------------------------------
# gather / scatter of strided operands
# --------------------------------------------------------------------------------------------
cdef enum:
    MAXDIMS = 64

cdef void _gather(real* dst, real* base, const Py_ssize_t* strides, const Py_ssize_t* shape,
                  int nd, Py_ssize_t start, Py_ssize_t n, bint scatter) noexcept nogil:
    """dst[0:n] = operand[start:start+n] in flat C order (or the reverse when ``scatter``)."""
    cdef Py_ssize_t idx[MAXDIMS]
    cdef Py_ssize_t off = 0, rem = start, pos = 0, cnt, j, inner, st
    cdef int dd
    cdef real* p
    for dd in range(nd - 1, -1, -1):
        idx[dd] = rem % shape[dd]
        rem = rem // shape[dd]
        off += idx[dd] * strides[dd]
    inner = shape[nd - 1]
    st = strides[nd - 1]
    while pos < n:
        cnt = inner - idx[nd - 1]
        if cnt > n - pos:
            cnt = n - pos
        p = base + off
        if scatter:
            if st == 1:
                for j in range(cnt):
                    p[j] = dst[pos + j]
            else:
                for j in range(cnt):
                    p[j * st] = dst[pos + j]
        else:
            if st == 1:
                for j in range(cnt):
                    dst[pos + j] = p[j]
            elif st == 0:
                for j in range(cnt):
                    dst[pos + j] = p[0]
            else:
                for j in range(cnt):
                    dst[pos + j] = p[j * st]
        pos += cnt
        if pos >= n:
            break
        # advance the multi-index by cnt along the innermost dim, carrying outwards
        off += cnt * st
        idx[nd - 1] += cnt
        dd = nd - 1
        while dd > 0 and idx[dd] >= shape[dd]:
            off -= shape[dd] * strides[dd]
            idx[dd] = 0
            dd -= 1
            idx[dd] += 1
            off += strides[dd]


# --------------------------------------------------------------------------------------------
# the block interpreter
# --------------------------------------------------------------------------------------------
#: limits checked at the Python boundary: with them a thread's scratch (``nregs * block *
#: itemsize``, times the thread count) can never overflow ``size_t``
MAX_BLOCK = 1 << 20
MAX_REGS = 1 << 20

cdef enum:
    IN_UNUSED = 0
    IN_CONTIG = 1
    IN_SCALAR = 2
    IN_STRIDED = 3
    OUT_CONTIG = 0
    OUT_SCATTER = 1
    OUT_REDUCED = 2
    OUT_STREAM = 3
    RED_NONE = 0
    RED_SUM = 1
    RED_MEAN = 2
    RED_MAX = 3
    RED_MIN = 4

cdef struct Ctx:
    int nd
    Py_ssize_t* shape
    Py_ssize_t N
    Py_ssize_t B
    Py_ssize_t nblocks
    Py_ssize_t R            # reduction row length (flat), 0 when no reduction
    int nin
    int nout
    int nred
    int nregs
    int ninstr
    int* code               # ninstr x 6: k, mode, dst, a, b, c
    int* in_reg
    int* in_mode
    char** in_base
    Py_ssize_t* in_str      # nin x nd, in elements
    int* out_reg
    int* out_mode
    int* out_red            # RED_* per output
    int* out_redidx         # index among reduced outputs
    char** out_base
    Py_ssize_t* out_str     # nout x nd, in elements
    char* scratch           # nthreads x nregs x B elements (aligned)
    void** regp             # nthreads x regstride pointers (own cache lines per thread)
    int regstride
    double* head_val        # nblocks x nred
    double* tail_val
    Py_ssize_t* head_row    # nblocks
    Py_ssize_t* tail_row


cdef inline double _red_combine(int kind, double acc, double v) noexcept nogil:
    if kind == RED_MAX:
        return v if (v > acc or v != v) else acc
    if kind == RED_MIN:
        return v if (v < acc or v != v) else acc
    return acc + v


cdef double _red_block(int kind, real* v, Py_ssize_t n) noexcept nogil:
    """Reduce v[0:n] in a fixed order: sums in 16 interleaved double accumulators (element i
    into accumulator i % 16, which the compiler keeps in four AVX registers: with 4 the adds
    were one dependent chain per register and ran at ~1 element per cycle), then added
    pairwise; the tail goes into accumulator 0."""
    cdef Py_ssize_t i = 0
    cdef int j
    cdef double acc[16]
    cdef double m, x
    if kind == RED_SUM or kind == RED_MEAN:
        for j in range(16):
            acc[j] = 0
        while i + 16 <= n:
            for j in range(16):
                acc[j] += v[i + j]
            i += 16
        while i < n:
            acc[0] += v[i]
            i += 1
        for j in range(8):
            acc[j] += acc[j + 8]
        for j in range(4):
            acc[j] += acc[j + 4]
        return (acc[0] + acc[2]) + (acc[1] + acc[3])
    m = v[0]
    for i in range(1, n):
        x = v[i]
        if kind == RED_MAX:
            if x > m or x != x:
                m = x
        else:
            if x < m or x != x:
                m = x
    return m


cdef inline void _red_store(Ctx* c, int k, Py_ssize_t row, double val, real* dummy) noexcept nogil:
    if c.out_red[k] == RED_MEAN:
        val = val / <double>c.R
    (<real*>c.out_base[k])[row] = <real>val


#: a block's program runs over sub-blocks of this many bytes per register (see _run_block)
cdef Py_ssize_t _SUB_BYTES = 4096
#: prefetch distance (bytes ahead in each contiguous operand), for calls whose operands total
#: at least _PF_MIN_BYTES (below, they are in cache and a prefetch is an instruction wasted)
cdef Py_ssize_t _PF_AHEAD_BYTES = 16384
cdef Py_ssize_t _PF_MIN_BYTES = 1 << 21
#: streamed outputs stored with the running instruction set's widest stores (else 16 bytes)
cdef bint _WIDE_STORES = True


def _set_block_schedule(Py_ssize_t sub_bytes=4096, Py_ssize_t ahead_bytes=16384,
                        Py_ssize_t min_bytes=1 << 21, bint wide_stores=True):
    """Set the sub-block size and the prefetch distance and threshold (``ahead_bytes`` 0: no
    prefetch), and whether streamed outputs take the instruction set's widest stores
    (``wide_stores``; else the baseline copy's 16-byte ones); for measurements.  Results do not
    depend on them.  Call only while no kernel runs."""
    global _SUB_BYTES, _PF_AHEAD_BYTES, _PF_MIN_BYTES, _WIDE_STORES
    _WIDE_STORES = wide_stores
    if sub_bytes < 64 or sub_bytes % 64:
        raise ValueError(f"sub_bytes must be a positive multiple of 64, got {sub_bytes}")
    if ahead_bytes < 0:
        raise ValueError(f"ahead_bytes must be >= 0, got {ahead_bytes}")
    _SUB_BYTES, _PF_AHEAD_BYTES, _PF_MIN_BYTES = sub_bytes, ahead_bytes, min_bytes


cdef void _run_block(Ctx* c, real* scratch, int tid, Py_ssize_t b) noexcept nogil:
    cdef Py_ssize_t s = b * c.B
    cdef Py_ssize_t n = c.N - s
    cdef Py_ssize_t r0, r1, pos, row
    cdef real** regs = <real**>c.regp + tid * c.regstride
    cdef real* tscratch = scratch + <Py_ssize_t>tid * c.nregs * c.B
    cdef int i, j, r, k, m, ired
    cdef int* ins
    cdef real* v
    cdef Py_ssize_t pf_s, pf_bytes, lo, hi, sub, ahead, sb, ms
    cdef bint pf
    if n > c.B:
        n = c.B
    # inputs
    for i in range(c.nin):
        r = c.in_reg[i]
        m = c.in_mode[i]
        if m == IN_CONTIG:
            regs[r] = (<real*>c.in_base[i]) + s
        elif m == IN_STRIDED:
            regs[r] = tscratch + r * c.B
            _gather(regs[r], <real*>c.in_base[i], c.in_str + i * c.nd, c.shape, c.nd, s, n, False)
        # IN_SCALAR registers were filled once per thread; IN_UNUSED have no register
    # outputs written in place when contiguous
    for k in range(c.nout):
        r = c.out_reg[k]
        if c.out_mode[k] == OUT_CONTIG:
            regs[r] = (<real*>c.out_base[k]) + s
        else:
            regs[r] = tscratch + r * c.B
    # the program, a sub-block at a time: the live registers' slices of _SUB_BYTES each stay
    # in L1 from one instruction to the next (the whole block's would not), and every element
    # is computed as it would be in one pass (elementwise code does not depend on where an
    # element sits), so the results, reductions included, are the block's.  While a sub-block
    # runs, the contiguous operands' elements _PF_AHEAD_BYTES ahead are prefetched, a share
    # before each instruction: the memory streams on while the transcendentals compute.
    sub = _SUB_BYTES // <Py_ssize_t>sizeof(real)
    ahead = _PF_AHEAD_BYTES // <Py_ssize_t>sizeof(real)
    pf = ahead > 0 and c.N * <Py_ssize_t>sizeof(real) * (c.nin + c.nout) >= _PF_MIN_BYTES
    sb = 0
    while sb < n:
        ms = n - sb
        if ms > sub:
            ms = sub
        pf_s = s + sb + ahead
        pf_bytes = (ms if pf_s + ms <= c.N else c.N - pf_s) * <Py_ssize_t>sizeof(real)
        for i in range(c.ninstr):
            if pf and pf_bytes > 0:
                lo = pf_bytes * i // c.ninstr
                hi = pf_bytes * (i + 1) // c.ninstr
                for j in range(c.nin):
                    if c.in_mode[j] == IN_CONTIG:
                        fg_prefetch_part(c.in_base[j] + pf_s * <Py_ssize_t>sizeof(real), lo, hi)
                for j in range(c.nout):
                    if c.out_mode[j] == OUT_CONTIG:
                        fg_prefetch_part_w(c.out_base[j] + pf_s * <Py_ssize_t>sizeof(real),
                                           lo, hi)
            ins = c.code + 6 * i
            _exec(ins[0], ins[1], regs[ins[2]] + sb, regs[ins[3]] + sb,
                  regs[ins[4]] + sb if ins[4] >= 0 else <real*>NULL,
                  regs[ins[5]] + sb if ins[5] >= 0 else <real*>NULL, ms)
        sb += ms
    # write back
    for k in range(c.nout):
        m = c.out_mode[k]
        r = c.out_reg[k]
        if m == OUT_STREAM:
            if real is double:
                if _WIDE_STORES:
                    fg_stream_d((<double*>c.out_base[k]) + s, regs[r], n)
                else:
                    fg_stream_d_base((<double*>c.out_base[k]) + s, regs[r], n)
            else:
                if _WIDE_STORES:
                    fg_stream_f((<float*>c.out_base[k]) + s, regs[r], n)
                else:
                    fg_stream_f_base((<float*>c.out_base[k]) + s, regs[r], n)
        elif m == OUT_SCATTER:
            _gather(regs[r], <real*>c.out_base[k], c.out_str + k * c.nd, c.shape, c.nd, s, n, True)
        elif m == OUT_REDUCED:
            v = regs[r]
            ired = c.out_redidx[k]
            r0 = s // c.R
            r1 = (s + n - 1) // c.R
            if r0 == r1:
                c.head_val[b * c.nred + ired] = _red_block(c.out_red[k], v, n)
                c.head_row[b] = r0
                c.tail_row[b] = -1
            else:
                pos = (r0 + 1) * c.R - s
                c.head_val[b * c.nred + ired] = _red_block(c.out_red[k], v, pos)
                c.head_row[b] = r0
                for row in range(r0 + 1, r1):
                    _red_store(c, k, row, _red_block(c.out_red[k], v + pos, c.R), v)
                    pos += c.R
                c.tail_val[b * c.nred + ired] = _red_block(c.out_red[k], v + pos, n - pos)
                c.tail_row[b] = r1


cdef inline double _fold_partial(Ctx* c, int k, Py_ssize_t row, double v, Py_ssize_t* cur,
                                 double acc, real* dummy) noexcept nogil:
    """Fold a block's partial ``v`` of reduction ``row`` into the running row ``cur[0]`` (whose
    value so far is ``acc``): combined when it is the same row; else that row is finished and
    stored, and ``row`` starts.  Returns the new running value."""
    if row == cur[0]:
        return _red_combine(c.out_red[k], acc, v)
    if cur[0] >= 0:
        _red_store(c, k, cur[0], acc, dummy)
    cur[0] = row
    return v


cdef void _run_all(Ctx* c, real* scratch, int nthreads) noexcept nogil:
    cdef Py_ssize_t b, j, cur
    cdef int t, i, r, k, ired
    cdef real* reg
    cdef real val
    cdef double acc
    # broadcast scalars: filled once per thread, as far as a block reaches (a short call
    # need not fill all of it)
    cdef Py_ssize_t fill = c.B if c.N > c.B else c.N
    for t in range(nthreads):
        for i in range(c.nin):
            if c.in_mode[i] == IN_SCALAR:
                r = c.in_reg[i]
                reg = scratch + (<Py_ssize_t>t * c.nregs + r) * c.B
                val = (<real*>c.in_base[i])[0]
                for j in range(fill):
                    reg[j] = val
                (<real**>c.regp)[t * c.regstride + r] = reg
    if nthreads <= 1:
        for b in range(c.nblocks):
            _run_block(c, scratch, 0, b)
    else:
        # guided: large contiguous chunks first, small ones at the end, so a thread that the OS
        # preempts (busy machine) does not hold everyone up.  Blocks are fixed, so results do
        # not depend on which thread ran which block.
        for b in prange(c.nblocks, schedule='guided', num_threads=nthreads):
            _run_block(c, scratch, threadid(), b)
    fg_sfence()
    if c.nred == 0:
        return
    # combine per-block partials sequentially, in block order (independent of thread count)
    for k in range(c.nout):
        if c.out_mode[k] != OUT_REDUCED:
            continue
        ired = c.out_redidx[k]
        cur = -1
        acc = 0
        for b in range(c.nblocks):
            acc = _fold_partial(c, k, c.head_row[b], c.head_val[b * c.nred + ired], &cur, acc,
                                scratch)
            if c.tail_row[b] >= 0:
                acc = _fold_partial(c, k, c.tail_row[b], c.tail_val[b * c.nred + ired], &cur,
                                    acc, scratch)
        if cur >= 0:
            _red_store(c, k, cur, acc, scratch)


cdef void _fill_const(real* reg, double v, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    cdef real x = <real>v
    for j in range(n):
        reg[j] = x


cdef struct Work:
    # per-thread register scratch + register-pointer tables, cached on a Program between calls
    char* raw               # malloc'd block (cap bytes); scratch = raw aligned to 64
    size_t cap
    char* scratch
    void** regp
    Py_ssize_t regp_cap     # pointers
    Py_ssize_t cfill_isz    # constants are filled for this itemsize and block ...
    Py_ssize_t cfill_block
    int cfill_nt            # ... in the first cfill_nt threads' rows
    # tables of the flat (1-D contiguous) path, sized for the program's nin/nout
    bint tab_ok
    char** in_base
    char** out_base
    int* imode
    int* omode
    int* ored
    int* oridx
    Py_ssize_t* ones


cdef inline void _work_free(Work* w) noexcept:
    free(w.raw)
    free(w.regp)
    free(w.in_base)
    free(w.out_base)
    free(w.imode)
    free(w.omode)
    free(w.ored)
    free(w.oridx)
    free(w.ones)
    memset(w, 0, sizeof(Work))      # no tables, no scratch, no constants filled


cdef int _work_prepare(Work* w, int nt, int nregs, int regstride, Py_ssize_t block,
                       Py_ssize_t isz, int nconst, int* const_reg,
                       double* const_val) except -1 nogil:
    """Make ``w`` hold scratch for ``nt`` threads (growing it when needed), point every register
    at its own scratch row and make sure the constant registers hold their values."""
    cdef size_t need = <size_t>nt * nregs * block * isz + 64
    cdef Py_ssize_t nptr = <Py_ssize_t>nt * regstride
    cdef int t, i, j
    cdef char* row
    if need > w.cap:
        free(w.raw)
        w.raw = <char*>malloc(need)
        w.cfill_nt = 0
        if w.raw == NULL:
            w.cap = 0
            with gil:
                raise MemoryError()
        w.cap = need
        w.scratch = <char*>((<uintptr_t>w.raw + 63) & ~(<uintptr_t>63))
    if nptr > w.regp_cap:
        free(w.regp)
        w.regp = <void**>malloc(sizeof(void*) * (nptr + 1))
        if w.regp == NULL:
            w.regp_cap = 0
            with gil:
                raise MemoryError()
        w.regp_cap = nptr
    if w.cfill_isz != isz or w.cfill_block != block:
        w.cfill_isz = isz
        w.cfill_block = block
        w.cfill_nt = 0
    for t in range(nt):
        for j in range(nregs):
            w.regp[t * regstride + j] = w.scratch + (<Py_ssize_t>t * nregs + j) * block * isz
    # constant registers: filled once per thread row, then kept (no instruction writes them)
    while w.cfill_nt < nt:
        t = w.cfill_nt
        for i in range(nconst):
            j = const_reg[i]
            row = w.scratch + (<Py_ssize_t>t * nregs + j) * block * isz
            if isz == 8:
                _fill_const(<double*>row, const_val[i], block)
            else:
                _fill_const(<float*>row, const_val[i], block)
        w.cfill_nt += 1
    return 0




#: iteration spaces and operand extents are limited to 2^56 elements, so that every offset
#: computed below (times an itemsize of 8) fits in a Py_ssize_t
cdef double _MAX_SPAN = 72057594037927936.0


cdef int _check_extent(cnp.ndarray arr, const cnp.int64_t[:, ::1] st, int row,
                       const cnp.int64_t[::1] shp, int nd, Py_ssize_t isz, str what,
                       int idx) except -1:
    """Raise unless every element the iteration space ``shp`` reaches through the element
    strides ``st[row]`` lies inside ``arr``'s own memory (the byte range its shape and strides
    span): :meth:`Program.run` trusts its caller's strides, and this keeps a wrong one from
    reading or writing outside the array."""
    cdef Py_ssize_t lo = 0, hi = 0, alo = 0, ahi = 0, d, s
    cdef double span = 0
    cdef int j
    for j in range(nd):
        d = shp[j] - 1
        s = st[row, j]
        span += fabs(<double>d * <double>s)
        if span > _MAX_SPAN:
            raise ValueError(f"fused kernel: {what} {idx}'s strides span too much memory")
        if s > 0:
            hi += d * s
        else:
            lo += d * s
    for j in range(cnp.PyArray_NDIM(arr)):
        d = cnp.PyArray_DIMS(arr)[j]
        if d == 0:
            raise ValueError(f"fused kernel: {what} {idx} is empty")
        s = cnp.PyArray_STRIDES(arr)[j]
        if s > 0:
            ahi += (d - 1) * s
        else:
            alo += (d - 1) * s
    ahi += isz
    if lo * isz < alo or hi * isz + isz > ahi:
        raise ValueError(f"fused kernel: the iteration space reaches outside {what} {idx} "
                         f"(its shape {(<object>arr).shape}, strides {(<object>arr).strides} bytes)")
    return 0


cdef inline bint _work_tables(Work* w, int nin, int nout) noexcept:
    """Make the C fast paths' per-call tables of ``w`` (once); false when out of memory."""
    cdef int m = (nin if nin > nout else nout) + 1
    cdef int i
    if w.tab_ok:
        return True
    if w.in_base == NULL:
        w.in_base = <char**>malloc(sizeof(char*) * (nin + 1))
    if w.out_base == NULL:
        w.out_base = <char**>malloc(sizeof(char*) * (nout + 1))
    if w.imode == NULL:
        w.imode = <int*>malloc(sizeof(int) * (nin + 1))
    if w.omode == NULL:
        w.omode = <int*>malloc(sizeof(int) * (nout + 1))
    if w.ored == NULL:
        w.ored = <int*>malloc(sizeof(int) * (nout + 1))
    if w.oridx == NULL:
        w.oridx = <int*>malloc(sizeof(int) * (nout + 1))
    if w.ones == NULL:
        w.ones = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * m)
    if not (w.in_base and w.out_base and w.imode and w.omode and w.ored and w.oridx and w.ones):
        return False
    for i in range(m):
        w.ones[i] = 1
    for i in range(nout):
        w.ored[i] = RED_NONE
        w.oridx[i] = -1
    w.tab_ok = True
    return True


cdef inline bint _native_carray(object x, int tn, int nd, const cnp.npy_intp* dims,
                                bint writeable) noexcept:
    """Whether ``x`` is an exact ``numpy.ndarray`` of type number ``tn`` in native byte order,
    aligned and C-contiguous (and writeable when ``writeable``), of shape ``dims[:nd]``."""
    cdef cnp.ndarray a
    if not cnp.PyArray_CheckExact(x):
        return False
    a = <cnp.ndarray>x
    return (cnp.PyArray_TYPE(a) == tn and cnp.PyArray_ISNOTSWAPPED(a)
            and (cnp.PyArray_ISCARRAY(a) if writeable else cnp.PyArray_ISCARRAY_RO(a))
            and cnp.PyArray_NDIM(a) == nd
            and memcmp(dims, cnp.PyArray_DIMS(a), nd * sizeof(cnp.npy_intp)) == 0)


cdef int _flat_error(object x, bint output, Py_ssize_t i, Py_ssize_t n,
                     object outputs) except -1:
    """Raise the error of :meth:`Program.run_contiguous` for its operand ``x``."""
    what = "output" if output else "input"
    if not cnp.PyArray_Check(x):
        raise TypeError(f"run_contiguous: {what} {i} is not an ndarray")
    if output:
        raise ValueError(f"run_contiguous: output {i} is not a writeable "
                         f"C-contiguous aligned array like output 0")
    raise ValueError(f"run_contiguous: input {i} is not a C-contiguous aligned "
                     f"native {outputs[0].dtype} array of {n} elements")


cdef inline char* _flat_data(object x, int tn, Py_ssize_t n, bint output, Py_ssize_t i,
                             object outputs) except? NULL:
    """The data of operand ``i`` of :meth:`Program.run_contiguous` (an output when ``output``):
    an ndarray of type number ``tn`` in native byte order, aligned and C-contiguous (writeable
    when an output), of ``n`` elements, like ``outputs[0]``; an error naming it otherwise."""
    cdef cnp.ndarray a
    if cnp.PyArray_Check(x):
        a = <cnp.ndarray>x
        if (cnp.PyArray_TYPE(a) == tn and cnp.PyArray_ISNOTSWAPPED(a)
                and (cnp.PyArray_ISCARRAY(a) if output else cnp.PyArray_ISCARRAY_RO(a))
                and cnp.PyArray_SIZE(a) == n):
            return <char*>cnp.PyArray_DATA(a)
    _flat_error(x, output, i, n, outputs)
    return NULL


cdef inline bint _overlap(char* a, char* b, Py_ssize_t nbytes) noexcept:
    return a < b + nbytes and b < a + nbytes


cdef inline int _check_reg(int r, int nregs, str what, int i, str part="") except -1:
    if r < 0 or r >= nregs:
        raise ValueError(f"register {r} of {what} {i}{part} out of range (nregs={nregs})")
    return 0


cdef inline bint _one_pass(int k, int mode) noexcept:
    """Whether the VM's loop for op ``k`` reads each operand element before writing that
    element of the result and never rereads it (so the result may alias an operand).  The
    composite sigmoid (libm) and softplus (libm, vec) run several passes over their output;
    with SciPy's and NumPy's loops (ufunc) both are one pass."""
    if k != FG_OP_SOFTPLUS and k != FG_OP_SIGMOID:
        return True
    if mode == MODE_UFUNC and _loop_d[k] != NULL and _loop_f[k] != NULL:
        return True
    return k == FG_OP_SIGMOID and mode == MODE_VEC


cdef class Program:
    """A register program ready for the VM (built by :mod:`fastgraph.fused.compiler`).

    ``code`` is an ``(ninstr, 6)`` int array of rows ``(opcode, mode, dst, a, b, c)`` with table
    opcode numbers, ``mode`` 0 = C/libm, 1 = vec, 2 = NumPy inner loop, and register numbers
    (``-1`` for an unused operand).  ``in_reg[i]`` is input ``i``'s register (``-1``: unused),
    ``const_reg``/``const_val`` the constant registers, ``out_reg[k]`` output ``k``'s register.
    """
    cdef int* code
    cdef int ninstr
    cdef readonly int nregs
    cdef readonly int nin
    cdef readonly int nout
    cdef int* in_reg
    cdef int* out_reg
    cdef int nconst
    cdef int* const_reg
    cdef double* const_val
    # direct[k * nin + i]: output k may be written straight into input i's memory when the two
    # are the same array (in place) -- no instruction reads input i after output k's writer
    # starts, and that writer is a one-pass loop.  Otherwise in place computes in scratch.
    cdef unsigned char* direct
    # call configuration (FusedKernel.__init__ sets it through configure())
    cdef readonly Py_ssize_t block
    cdef readonly Py_ssize_t threshold
    cdef readonly Py_ssize_t stream_min
    cdef int max_threads
    cdef object nt_fn
    # cached per-thread scratch; ``busy`` while a call uses it (a second, concurrent call on
    # the same Program allocates its own, see _acquire)
    cdef Work work
    cdef bint busy

    def __cinit__(self, code, int nregs, in_reg, out_reg, const_reg, const_val):
        cdef int i, j, op, k
        memset(&self.work, 0, sizeof(Work))
        self.busy = False
        self.block = 1024
        self.threshold = 32768
        self.stream_min = -1
        self.max_threads = 64
        self.nt_fn = None
        code = np.ascontiguousarray(code, dtype=np.intc).reshape(-1, 6)
        in_reg = np.ascontiguousarray(in_reg, dtype=np.intc).ravel()
        out_reg = np.ascontiguousarray(out_reg, dtype=np.intc).ravel()
        const_reg = np.ascontiguousarray(const_reg, dtype=np.intc).ravel()
        const_val = np.ascontiguousarray(const_val, dtype=np.float64).ravel()
        if const_reg.shape[0] != const_val.shape[0]:
            raise ValueError("const_reg and const_val differ in length")
        self.ninstr = code.shape[0]
        self.nregs = nregs
        self.nin = in_reg.shape[0]
        self.nout = out_reg.shape[0]
        self.nconst = const_reg.shape[0]
        if self.nout < 1:
            raise ValueError("a program needs at least one output")
        if nregs < 0 or nregs > MAX_REGS:
            raise ValueError(f"nregs must be in 0..{MAX_REGS}, got {nregs}")
        self.code = <int*>malloc(sizeof(int) * (6 * self.ninstr + 1))
        self.in_reg = <int*>malloc(sizeof(int) * (self.nin + 1))
        self.out_reg = <int*>malloc(sizeof(int) * (self.nout + 1))
        self.const_reg = <int*>malloc(sizeof(int) * (self.nconst + 1))
        self.const_val = <double*>malloc(sizeof(double) * (self.nconst + 1))
        if not (self.code and self.in_reg and self.out_reg and self.const_reg and self.const_val):
            raise MemoryError()
        # validate with C loops over typed views: a 10,000-instruction program (bench_compile)
        # is checked in microseconds; messages are only formatted for an error
        cdef int[:, ::1] cv = code
        cdef int[::1] iv = in_reg, ov = out_reg, kv = const_reg
        cdef double[::1] vv = const_val
        cdef int r
        # per register: 0 never written, 1 written by an instruction, 2 input/constant (read-only)
        cdef unsigned char[::1] state = np.zeros(max(nregs, 1), dtype=np.uint8)
        for i in range(self.nin):
            r = iv[i]
            self.in_reg[i] = r
            if r >= 0:
                _check_reg(r, nregs, "input", i)
                state[r] = 2
        for i in range(self.nconst):
            r = kv[i]
            _check_reg(r, nregs, "constant", i)
            self.const_reg[i] = r
            self.const_val[i] = vv[i]
            state[r] = 2
        for i in range(self.ninstr):
            op = cv[i, 0]
            if op <= 0 or op >= FG_OP_END:
                raise ValueError(f"instruction {i}: unknown opcode {op}")
            k = op
            if cv[i, 1] != MODE_C and cv[i, 1] != MODE_VEC and cv[i, 1] != MODE_UFUNC:
                raise ValueError(f"instruction {i}: bad mode {cv[i, 1]}")
            self.code[6 * i] = k
            self.code[6 * i + 1] = cv[i, 1]
            r = cv[i, 2]
            _check_reg(r, nregs, "instruction", i, " destination")
            self.code[6 * i + 2] = r
            for j in range(3):
                if j < _arity[k]:
                    r = cv[i, 3 + j]
                    _check_reg(r, nregs, "instruction", i, f" operand {j}")
                    if state[r] == 0:
                        raise ValueError(f"instruction {i} reads register {r} "
                                         "before it is written")
                    if r == cv[i, 2]:
                        raise ValueError(f"instruction {i} writes a register it reads")
                    self.code[6 * i + 3 + j] = r
                else:
                    self.code[6 * i + 3 + j] = -1
            if state[cv[i, 2]] == 2:
                raise ValueError(f"instruction {i} overwrites an input or constant register")
            state[cv[i, 2]] = 1
        for i in range(self.nout):
            r = ov[i]
            _check_reg(r, nregs, "output", i)
            if state[r] == 0:
                raise ValueError(f"output {i} register {r} is never written")
            # the VM points an output's register at the output array while it runs: an input's
            # or constant's register, or one shared by two outputs, would lose its value
            if state[r] == 2:
                raise ValueError(f"output {i} register {r} is an input or constant register "
                                 "(copy it into a register of its own)")
            if state[r] == 3:
                raise ValueError(f"output {i} register {r} is also an earlier output's")
            state[r] = 3
            self.out_reg[i] = r
        self._plan_direct(cv)

    cdef int _plan_direct(self, int[:, ::1] cv) except -1:
        cdef int i, j, k, r, wpos
        self.direct = <unsigned char*>malloc(self.nout * self.nin + 1)
        if self.direct == NULL:
            raise MemoryError()
        last_read = np.full(max(self.nregs, 1), -1, dtype=np.intc)
        writer = np.full(max(self.nregs, 1), -1, dtype=np.intc)
        cdef int[::1] lr = last_read, wr = writer
        for i in range(self.ninstr):
            for j in range(_arity[self.code[6 * i]]):
                lr[cv[i, 3 + j]] = i
            wr[cv[i, 2]] = i
        for k in range(self.nout):
            wpos = wr[self.out_reg[k]]
            for i in range(self.nin):
                r = self.in_reg[i]
                self.direct[k * self.nin + i] = wpos >= 0 and (
                    r < 0 or lr[r] < wpos
                    or (lr[r] == wpos and _one_pass(self.code[6 * wpos], self.code[6 * wpos + 1])))
        return 0

    def __dealloc__(self):
        _work_free(&self.work)
        free(self.code)
        free(self.in_reg)
        free(self.out_reg)
        free(self.const_reg)
        free(self.const_val)
        free(self.direct)

    def configure(self, Py_ssize_t block, Py_ssize_t threshold, Py_ssize_t stream_min=-1,
                  nt_fn=None, int max_threads=64):
        """Fixed call settings used by :meth:`fast_call` and :meth:`run_contiguous`: ``block``
        elements per block, one thread below ``threshold`` elements, non-temporal stores from
        ``stream_min`` elements (``-1``: never), ``nt_fn()`` gives the default thread count
        (``None``: 1), at most ``max_threads`` threads."""
        if block < 16 or block > MAX_BLOCK:
            raise ValueError(f"block must be in 16..{MAX_BLOCK}, got {block}")
        if max_threads < 1:
            raise ValueError("max_threads must be >= 1")
        self.block = block
        self.threshold = threshold
        self.stream_min = stream_min
        self.nt_fn = nt_fn
        self.max_threads = max_threads

    cdef inline Work* _acquire(self, Work* tmp) noexcept:
        # Called with the GIL held, so test-and-set is atomic w.r.t. other Python threads.
        if self.busy:
            memset(tmp, 0, sizeof(Work))
            return tmp
        self.busy = True
        return &self.work

    cdef inline Work* _acquire_tables(self, Work* tmp) except NULL:
        """:meth:`_acquire`, with the tables of the C fast paths made (and released again when
        they cannot be)."""
        cdef Work* w = self._acquire(tmp)
        if not _work_tables(w, self.nin, self.nout):
            self._release(w)
            raise MemoryError()
        return w

    cdef inline void _release(self, Work* w) noexcept:
        if w == &self.work:
            self.busy = False
        else:
            _work_free(w)

    cdef inline int _nthreads(self, num_threads) except -1:
        cdef Py_ssize_t nt
        if num_threads is None:
            if self.nt_fn is None:
                return 1
            nt = self.nt_fn()
        else:
            if type(num_threads) is not int:  # NumPy integers too; floats, strings, bools not
                if isinstance(num_threads, bool) or not hasattr(num_threads, "__index__"):
                    raise TypeError(f"num_threads must be an integer, got "
                                    f"{type(num_threads).__name__} {num_threads!r}")
                num_threads = num_threads.__index__()
            nt = num_threads
            if nt < 1:
                raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        if nt > self.max_threads:
            nt = self.max_threads
        return <int>nt

    cdef void _init_ctx(self, Ctx* c, int nd, Py_ssize_t n, Py_ssize_t block,
                        Py_ssize_t red_len) noexcept:
        """The program's part of a call's context: ``n`` elements in ``nd`` dimensions cut into
        blocks of ``block``, reduction rows of ``red_len`` (0: none); no reduced output and no
        per-block partials yet."""
        c.nd = nd
        c.N = n
        c.B = block
        c.nblocks = (n + block - 1) // block
        c.R = red_len
        c.nin = self.nin
        c.nout = self.nout
        c.nred = 0
        c.nregs = self.nregs
        c.ninstr = self.ninstr
        c.code = self.code
        c.in_reg = self.in_reg
        c.out_reg = self.out_reg
        c.head_val = NULL
        c.tail_val = NULL
        c.head_row = NULL
        c.tail_row = NULL

    cdef int _exec_flat(self, Work* w, Py_ssize_t n, Py_ssize_t isz, int nthreads) except -1:
        """Run on 1-D contiguous operands whose data pointers are in ``w.in_base``/``w.out_base``
        and whose output modes (OUT_CONTIG, or OUT_SCATTER for in-place) are in ``w.omode``."""
        cdef Py_ssize_t shp = n
        cdef int i
        for i in range(self.nin):
            w.imode[i] = IN_UNUSED if self.in_reg[i] < 0 else IN_CONTIG
        return self._exec_blocks(w, 1, &shp, w.ones, w.ones, NULL, isz, nthreads)

    cdef int _exec_blocks(self, Work* w, int nd, Py_ssize_t* shape, Py_ssize_t* in_str,
                          Py_ssize_t* out_str, int* tiled, Py_ssize_t isz,
                          int nthreads) except -1:
        """The C fast paths' common runner over an ``nd``-D iteration space (``nd`` 1 or 2),
        with the input modes in ``w.imode`` (element strides ``in_str``, ``nin x nd``) and the
        outputs in ``w.out_base``/``w.omode`` (``out_str``, ``nout x nd``, for OUT_SCATTER).
        ``tiled`` (or NULL): per input, a row of ``shape[nd - 1]`` elements to repeat through its
        register once per call and thread (IN_UNUSED to the interpreter), instead of a gather per
        block -- only when the row length divides the block length.  One thread below
        ``threshold``; small calls keep the GIL (releasing it costs more than they run)."""
        cdef Ctx c
        cdef Py_ssize_t n = 1, cols = shape[nd - 1], j
        cdef int i, k, t, nt = nthreads
        cdef char* reg
        for i in range(nd):
            n *= shape[i]
        self._init_ctx(&c, nd, n, self.block, 0)
        c.shape = shape
        c.in_mode = w.imode
        c.in_base = w.in_base
        c.in_str = in_str
        c.out_mode = w.omode
        c.out_red = w.ored
        c.out_redidx = w.oridx
        c.out_base = w.out_base
        c.out_str = out_str
        if self.stream_min >= 0 and n >= self.stream_min:
            for k in range(self.nout):
                if w.omode[k] == OUT_CONTIG:
                    w.omode[k] = OUT_STREAM
        if nt < 1 or n < self.threshold:
            nt = 1
        if nt > c.nblocks:
            nt = <int>c.nblocks
        c.regstride = (self.nregs + 7) & ~7
        _work_prepare(w, nt, self.nregs, c.regstride, c.B, isz, self.nconst, self.const_reg,
                      self.const_val)
        c.scratch = w.scratch
        c.regp = w.regp
        if tiled != NULL:
            for i in range(self.nin):
                if tiled[i]:
                    for t in range(nt):
                        reg = w.scratch + (<Py_ssize_t>t * self.nregs + self.in_reg[i]) * c.B * isz
                        for j in range(0, c.B if n > c.B else n, cols):
                            memcpy(reg + j * isz, w.in_base[i], cols * isz)
        if n >= 4096:
            with nogil:
                if isz == 8:
                    _run_all(&c, <double*>c.scratch, nt)
                else:
                    _run_all(&c, <float*>c.scratch, nt)
        elif isz == 8:
            _run_all(&c, <double*>c.scratch, nt)
        else:
            _run_all(&c, <float*>c.scratch, nt)
        return 0

    cdef object _bind_outputs(self, Work* w, object out, int nd, cnp.npy_intp* dims, int tn,
                              Py_ssize_t nbytes, tuple inputs, Py_ssize_t* in_str,
                              Py_ssize_t cols, const int* local=NULL):
        """The C fast paths' outputs: fresh arrays of shape ``dims`` when ``out`` is ``None``,
        else ``out`` (one exact C-contiguous native ndarray per output, of that shape and dtype
        ``tn``, disjoint from each other).  An output may be an input (the same memory: in place,
        written directly when ``self.direct`` allows, else through scratch) -- with row strides
        ``in_str`` only an input of the full shape.  Fills ``w.out_base``/``w.omode``; returns
        the result (array or tuple), or ``None`` when the general path must take the call.
        ``local[i]`` (when given) marks an input whose value the caller copied into its own C
        storage (a NumPy scalar): it cannot overlap an output."""
        cdef Py_ssize_t nin = self.nin, nout = self.nout, i, k
        cdef cnp.ndarray a
        cdef char* base
        cdef char* ib
        if out is None:
            lst = []
            for k in range(nout):
                a = <cnp.ndarray>cnp.PyArray_EMPTY(nd, dims, tn, 0)
                lst.append(a)
                w.out_base[k] = <char*>cnp.PyArray_DATA(a)
                w.omode[k] = OUT_CONTIG
            return lst[0] if nout == 1 else tuple(lst)
        if cnp.PyArray_CheckExact(out):
            if nout != 1:
                return None
            seq = (out,)
        elif type(out) is tuple or type(out) is list:
            seq = out
            if len(seq) != nout:
                return None
        else:
            return None
        for k in range(nout):
            x = seq[k]
            if not _native_carray(x, tn, nd, dims, True):
                return None
            base = <char*>cnp.PyArray_DATA(<cnp.ndarray>x)
            w.out_base[k] = base
            w.omode[k] = OUT_CONTIG
            for i in range(nin):
                if local != NULL and local[i]:
                    continue
                ib = w.in_base[i]
                if base < ib + cnp.PyArray_NBYTES(<cnp.ndarray>inputs[i]) and ib < base + nbytes:
                    if base != ib or (in_str != NULL and (in_str[2 * i] != cols
                                                          or in_str[2 * i + 1] != 1)):
                        return None     # partial or broadcast overlap: the general path copies
                    if not self.direct[k * nin + i]:
                        w.omode[k] = OUT_SCATTER
            for i in range(k):
                if _overlap(base, w.out_base[i], nbytes):
                    return None         # the general path raises
        return seq[0] if nout == 1 else tuple(seq)

    def fast_call(self, tuple inputs, out=None, num_threads=None):
        """``FusedKernel.__call__``'s fast path, all in C: every input an aligned, native-order,
        C-contiguous ``numpy.ndarray`` (exact type) of one float dtype and one shape; ``out``
        ``None`` (fresh outputs) or exact ndarrays of that dtype and shape, C-contiguous,
        writeable, not overlapping each other; an output may *be* an input (same memory: in
        place) but not partially overlap one.  Returns the output (or a tuple for several), or
        ``None`` when the operands need the general path.  Elementwise programs only."""
        cdef Py_ssize_t nin = self.nin, nout = self.nout, i, k, n, nbytes
        cdef int nd, tn, nt
        cdef cnp.npy_intp* dims
        cdef cnp.ndarray a0
        cdef Work tmp
        cdef Work* w
        cdef object x, res
        if nin == 0 or len(inputs) != nin:
            return None
        x = inputs[0]
        if not cnp.PyArray_CheckExact(x):
            return None
        a0 = <cnp.ndarray>x
        tn = cnp.PyArray_TYPE(a0)
        if tn != cnp.NPY_DOUBLE and tn != cnp.NPY_FLOAT:
            return None
        nd = cnp.PyArray_NDIM(a0)
        dims = cnp.PyArray_DIMS(a0)
        n = cnp.PyArray_SIZE(a0)
        if n == 0:
            return None
        for i in range(nin):
            if not _native_carray(inputs[i], tn, nd, dims, False):
                return None
        nt = self._nthreads(num_threads)
        nbytes = n * (8 if tn == cnp.NPY_DOUBLE else 4)
        w = self._acquire_tables(&tmp)
        try:
            for i in range(nin):
                w.in_base[i] = <char*>cnp.PyArray_DATA(<cnp.ndarray>inputs[i])
            res = self._bind_outputs(w, out, nd, dims, tn, nbytes, inputs, NULL, 0)
            if res is None:
                return None
            self._exec_flat(w, n, 8 if tn == cnp.NPY_DOUBLE else 4, nt)
            return res
        finally:
            self._release(w)

    # ---- row/column-broadcast fast path (static plans: bias rows, per-row scalars) ----------
    def bcast_call(self, tuple inputs, out, tuple shape, Py_ssize_t cols, bytes modes,
                   num_threads=None):
        """The C fast path for kernels with broadcast inputs whose broadcasting a compiled plan
        knows statically.  The iteration space is ``shape`` (the outputs' shape) seen as
        ``(rows, cols)`` in C order; ``modes[i]`` says how input ``i`` covers it: ``b"F"`` all
        ``rows * cols`` elements, ``b"S"`` one element (a scalar), ``b"R"`` ``cols`` elements
        repeated on every row (a bias row), ``b"C"`` ``rows`` elements, each repeated along its
        row (a per-row scalar, e.g. ``keepdims`` reductions).  Every input an aligned,
        native-order, C-contiguous exact ``numpy.ndarray`` of one float dtype and exactly that
        many elements -- or, in an ``S`` slot, a NumPy scalar of that dtype (plans feed 0-d
        values such as a learning rate as NumPy scalars); ``out`` as in :meth:`fast_call` (an
        output may *be* an ``F`` input, in place).  Returns the output(s), or ``None`` when the
        operands need the general path."""
        cdef Py_ssize_t nin = self.nin, nout = self.nout, i, k, n = 1, rows, nbytes, need
        cdef int nd, tn = -1, nt
        cdef cnp.npy_intp dims[32]
        cdef Py_ssize_t in_str[2 * 32]
        cdef Py_ssize_t out_str[2 * 32]
        cdef int imode[32]
        cdef int tiled[32]
        cdef int local[32]          # 1: a NumPy scalar, its value copied into sval / fval
        cdef double sval[32]
        cdef float fval[32]
        cdef Py_ssize_t space[2]
        cdef int m
        cdef cnp.ndarray a
        cdef Work tmp
        cdef Work* w
        cdef object x, res
        nd = len(shape)
        if (nin == 0 or nin > 32 or nout > 32 or len(inputs) != nin or len(modes) != nin
                or nd < 1 or nd > 32 or cols < 1):
            return None
        for i in range(nd):
            dims[i] = shape[i]
            n *= dims[i]
        if n <= 0 or n % cols != 0:
            return None
        rows = n // cols
        for i in range(nin):
            x = inputs[i]
            m = modes[i]
            local[i] = 0
            if not cnp.PyArray_CheckExact(x):
                if m != c'S' or (type(x) is not _NP_FLOAT64 and type(x) is not _NP_FLOAT32):
                    return None
                local[i] = 1        # its dtype is checked below, once the arrays give tn
                tiled[i] = 0
                imode[i] = IN_SCALAR if self.in_reg[i] >= 0 else IN_UNUSED
                in_str[2 * i] = 0
                in_str[2 * i + 1] = 0
                continue
            a = <cnp.ndarray>x
            if tn < 0:
                tn = cnp.PyArray_TYPE(a)
                if tn != cnp.NPY_DOUBLE and tn != cnp.NPY_FLOAT:
                    return None
            if (cnp.PyArray_TYPE(a) != tn or not cnp.PyArray_ISNOTSWAPPED(a)
                    or not cnp.PyArray_ISCARRAY_RO(a)):
                return None
            tiled[i] = 0
            if m == c'F':
                need = n
                imode[i] = IN_CONTIG
                in_str[2 * i] = cols
                in_str[2 * i + 1] = 1
            elif m == c'S':
                need = 1
                imode[i] = IN_SCALAR
                in_str[2 * i] = 0
                in_str[2 * i + 1] = 0
            elif m == c'R':
                need = cols
                imode[i] = IN_STRIDED
                in_str[2 * i] = 0
                in_str[2 * i + 1] = 1
                if self.block % cols == 0:
                    imode[i] = IN_UNUSED
                    tiled[i] = 1
            elif m == c'C':
                need = rows
                imode[i] = IN_STRIDED
                in_str[2 * i] = 1
                in_str[2 * i + 1] = 0
            else:
                return None
            if self.in_reg[i] < 0:
                imode[i] = IN_UNUSED
                tiled[i] = 0
            if cnp.PyArray_SIZE(a) != need:
                return None
        if tn < 0:
            return None             # no array input: nothing says the dtype
        for i in range(nin):        # a scalar of another dtype would promote: general path
            if local[i]:
                x = inputs[i]
                if type(x) is not (_NP_FLOAT64 if tn == cnp.NPY_DOUBLE else _NP_FLOAT32):
                    return None
                sval[i] = PyFloat_AsDouble(x)   # exact for both (a float32 widens exactly)
                fval[i] = <float>sval[i]
        nt = self._nthreads(num_threads)
        nbytes = n * (8 if tn == cnp.NPY_DOUBLE else 4)
        w = self._acquire_tables(&tmp)
        try:
            for i in range(nin):
                if local[i]:
                    w.in_base[i] = <char*>&sval[i] if tn == cnp.NPY_DOUBLE else <char*>&fval[i]
                else:
                    w.in_base[i] = <char*>cnp.PyArray_DATA(<cnp.ndarray>inputs[i])
                w.imode[i] = imode[i]
            for k in range(nout):
                out_str[2 * k] = cols
                out_str[2 * k + 1] = 1
            res = self._bind_outputs(w, out, nd, dims, tn, nbytes, inputs, in_str, cols, local)
            if res is None:
                return None
            space[0] = rows
            space[1] = cols
            self._exec_blocks(w, 2, space, in_str, out_str, tiled,
                              8 if tn == cnp.NPY_DOUBLE else 4, nt)
            return res
        finally:
            self._release(w)

    def run_contiguous(self, inputs, outputs, num_threads=None):
        """Lean entry point for pre-validated elementwise calls (``FusedKernel.call_flat``).

        ``inputs``: a tuple/list of ``nin`` ndarrays; ``outputs``: a tuple/list of ``nout``
        ndarrays.  Every operand must be C-contiguous, aligned, native byte order, of one dtype
        (float64 or float32, taken from ``outputs[0]``) and hold exactly ``n = outputs[0].size``
        elements (shapes are not compared: the data are read as flat vectors); outputs writeable
        and not overlapping each other.  An output may be an input (same data pointer: in place);
        partial overlap with an input is an error.  Nothing is broadcast, converted or allocated;
        violations raise ``TypeError``/``ValueError`` (cheap C checks, never a fallback).
        ``num_threads``: ``None`` = the configured default; one thread below ``threshold``
        elements.  Returns ``None``."""
        cdef Py_ssize_t nin = self.nin, nout = self.nout, i, k, n, nbytes, isz
        cdef int tn, nt
        cdef Work tmp
        cdef Work* w
        cdef char* base
        cdef object x
        if len(inputs) != nin or len(outputs) != nout:
            raise TypeError(f"run_contiguous: this program takes {nin} input(s) and {nout} "
                            f"output(s), got {len(inputs)} and {len(outputs)}")
        x = outputs[0]
        if not cnp.PyArray_Check(x):
            raise TypeError("run_contiguous: outputs must be ndarrays")
        tn = cnp.PyArray_TYPE(<cnp.ndarray>x)
        if tn == cnp.NPY_DOUBLE:
            isz = 8
        elif tn == cnp.NPY_FLOAT:
            isz = 4
        else:
            raise TypeError(f"run_contiguous: dtype {(<cnp.ndarray>x).dtype} (need float32 "
                            "or float64)")
        n = cnp.PyArray_SIZE(<cnp.ndarray>x)
        nbytes = n * isz
        nt = self._nthreads(num_threads)
        w = self._acquire_tables(&tmp)
        try:
            for i in range(nin):
                w.in_base[i] = _flat_data(inputs[i], tn, n, False, i, outputs)
            for k in range(nout):
                base = _flat_data(outputs[k], tn, n, True, k, outputs)
                w.out_base[k] = base
                w.omode[k] = OUT_CONTIG
                for i in range(nin):
                    if _overlap(base, w.in_base[i], nbytes):
                        if base != w.in_base[i]:
                            raise ValueError(f"run_contiguous: output {k} partially overlaps "
                                             f"input {i}")
                        if not self.direct[k * nin + i]:  # else in scratch, then written back
                            w.omode[k] = OUT_SCATTER
                for i in range(k):
                    if _overlap(base, w.out_base[i], nbytes):
                        raise ValueError(f"run_contiguous: outputs {i} and {k} overlap")
            if n > 0:
                self._exec_flat(w, n, isz, nt)
        finally:
            self._release(w)

    def run(self, bint f64, list inputs, in_strides, list outputs, out_strides, shape,
            Py_ssize_t red_len, out_red, out_defer, int nthreads, Py_ssize_t block,
            Py_ssize_t threshold, Py_ssize_t stream_min=-1):
        """Run on validated operands (see :class:`fastgraph.fused.runtime.FusedKernel`).

        ``inputs``/``outputs`` are ndarrays of the kernel dtype; ``in_strides``/``out_strides``
        ``(n, nd)`` int64 element strides in the (collapsed) iteration space ``shape``;
        ``red_len`` the flat length of one reduction row (0: no reduction); ``out_red[k]`` the
        reduction of output ``k`` (0 none, 1 sum, 2 mean, 3 max, 4 min; reduced outputs are
        C-contiguous with one element per row); ``out_defer[k]`` forces scratch + write-back
        (the output aliases an input); contiguous outputs of at least ``stream_min`` elements
        (``-1``: never) are written with non-temporal stores.  Nothing here checks shapes
        again: the caller did.
        """
        cdef cnp.int64_t[::1] shp = np.ascontiguousarray(shape, dtype=np.int64).ravel()
        cdef cnp.int64_t[:, ::1] ist = np.ascontiguousarray(in_strides, dtype=np.int64).reshape(
            len(inputs), shp.shape[0])
        cdef cnp.int64_t[:, ::1] ost = np.ascontiguousarray(out_strides, dtype=np.int64).reshape(
            len(outputs), shp.shape[0])
        cdef int[::1] ored = np.ascontiguousarray(out_red, dtype=np.intc)
        cdef int[::1] odef = np.ascontiguousarray(out_defer, dtype=np.intc)
        cdef Ctx c
        cdef int nd = shp.shape[0]
        cdef int i, j, k, t, nt, ired
        cdef Py_ssize_t N = 1, cs, itemsize = 8 if f64 else 4
        cdef bint contig, allzero
        cdef cnp.ndarray arr
        cdef Work tmp
        cdef Work* w = NULL
        if len(inputs) != self.nin or len(outputs) != self.nout:
            raise ValueError("wrong number of operands for this program")
        if nd < 1 or nd > MAXDIMS:
            raise ValueError(f"iteration rank {nd} out of range 1..{MAXDIMS}")
        if ist.shape[1] != nd or ost.shape[1] != nd or ored.shape[0] != self.nout \
                or odef.shape[0] != self.nout:
            raise ValueError("stride/flag arrays do not match the operands")
        if block < 16 or block > MAX_BLOCK:
            raise ValueError(f"block must be in 16..{MAX_BLOCK}, got {block}")
        for k in range(self.nout):
            if ored[k] < 0 or ored[k] > RED_MIN:
                raise ValueError(f"out_red[{k}]: unknown reduction code {ored[k]}")
        dt = np.float64 if f64 else np.float32
        for j in range(nd):
            if shp[j] < 1:
                raise ValueError("empty iteration spaces are handled by the caller")
            if <double>N * <double>shp[j] > _MAX_SPAN:
                raise ValueError("fused kernel: iteration space too large")
            N *= shp[j]
        for a in inputs:
            if not isinstance(a, np.ndarray) or a.dtype != dt:
                raise TypeError("VM inputs must be ndarrays of the kernel dtype")
        for a in outputs:
            if not isinstance(a, np.ndarray) or a.dtype != dt or not a.flags.writeable:
                raise TypeError("VM outputs must be writeable ndarrays of the kernel dtype")
        for i in range(self.nin):
            if self.in_reg[i] >= 0:
                _check_extent(inputs[i], ist, i, shp, nd, itemsize, "input", i)
        for k in range(self.nout):
            if ored[k] == RED_NONE:
                _check_extent(outputs[k], ost, k, shp, nd, itemsize, "output", k)
        self._init_ctx(&c, nd, N, block, red_len)
        for k in range(self.nout):
            if ored[k] != RED_NONE:
                if red_len < 1 or N % red_len != 0:
                    raise ValueError("bad reduction row length")
                if outputs[k].size != N // red_len or not outputs[k].flags.c_contiguous:
                    raise ValueError("reduced output has the wrong size")
                c.nred += 1
        nt = nthreads if nthreads >= 1 else 1
        if N < threshold:
            nt = 1
        if nt > c.nblocks:
            nt = <int>c.nblocks
        if nt > self.max_threads:
            nt = self.max_threads
        # one allocation for all the small per-call tables
        c.shape = NULL
        c.in_mode = NULL
        c.in_base = NULL
        c.in_str = NULL
        c.out_mode = NULL
        c.out_red = NULL
        c.out_redidx = NULL
        c.out_base = NULL
        c.out_str = NULL
        c.regp = NULL
        try:
            c.shape = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * nd)
            c.in_mode = <int*>malloc(sizeof(int) * (self.nin + 1))
            c.in_base = <char**>malloc(sizeof(char*) * (self.nin + 1))
            c.in_str = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * (self.nin * nd + 1))
            c.out_mode = <int*>malloc(sizeof(int) * self.nout)
            c.out_red = <int*>malloc(sizeof(int) * self.nout)
            c.out_redidx = <int*>malloc(sizeof(int) * self.nout)
            c.out_base = <char**>malloc(sizeof(char*) * self.nout)
            c.out_str = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * self.nout * nd)
            c.regstride = (self.nregs + 7) & ~7
            if c.nred:
                c.head_val = <double*>malloc(sizeof(double) * c.nblocks * c.nred)
                c.tail_val = <double*>malloc(sizeof(double) * c.nblocks * c.nred)
                c.head_row = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * c.nblocks)
                c.tail_row = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * c.nblocks)
                if not (c.head_val and c.tail_val and c.head_row and c.tail_row):
                    raise MemoryError()
            if not (c.shape and c.in_mode and c.in_base and c.in_str and c.out_mode
                    and c.out_red and c.out_redidx and c.out_base and c.out_str):
                raise MemoryError()
            # per-thread scratch: the Program's cached one unless another call is using it
            w = self._acquire(&tmp)
            _work_prepare(w, nt, self.nregs, c.regstride, block, itemsize, self.nconst,
                          self.const_reg, self.const_val)
            c.scratch = w.scratch
            c.regp = w.regp
            for j in range(nd):
                c.shape[j] = shp[j]
            for i in range(self.nin):
                arr = inputs[i]
                c.in_base[i] = <char*>cnp.PyArray_DATA(arr)
                contig = True
                allzero = True
                cs = 1
                for j in range(nd - 1, -1, -1):
                    c.in_str[i * nd + j] = ist[i, j]
                    if ist[i, j] != 0 and shp[j] != 1:
                        allzero = False
                    if ist[i, j] != cs and shp[j] != 1:
                        contig = False
                    cs *= shp[j]
                if self.in_reg[i] < 0:
                    c.in_mode[i] = IN_UNUSED
                elif allzero:
                    c.in_mode[i] = IN_SCALAR
                elif contig:
                    c.in_mode[i] = IN_CONTIG
                else:
                    c.in_mode[i] = IN_STRIDED
            ired = 0
            for k in range(self.nout):
                arr = outputs[k]
                c.out_base[k] = <char*>cnp.PyArray_DATA(arr)
                c.out_red[k] = ored[k]
                c.out_redidx[k] = -1
                contig = True
                cs = 1
                for j in range(nd - 1, -1, -1):
                    c.out_str[k * nd + j] = ost[k, j]
                    if ost[k, j] != cs and shp[j] != 1:
                        contig = False
                    cs *= shp[j]
                if ored[k] != RED_NONE:
                    c.out_mode[k] = OUT_REDUCED
                    c.out_redidx[k] = ired
                    ired += 1
                elif contig and not odef[k] and stream_min >= 0 and N >= stream_min:
                    c.out_mode[k] = OUT_STREAM
                elif contig and not odef[k]:
                    c.out_mode[k] = OUT_CONTIG
                else:
                    c.out_mode[k] = OUT_SCATTER
            with nogil:
                if f64:
                    _run_all(&c, <double*>c.scratch, nt)
                else:
                    _run_all(&c, <float*>c.scratch, nt)
        finally:
            free(c.shape)
            free(c.in_mode)
            free(c.in_base)
            free(c.in_str)
            free(c.out_mode)
            free(c.out_red)
            free(c.out_redidx)
            free(c.out_base)
            free(c.out_str)
            free(c.head_val)
            free(c.tail_val)
            free(c.head_row)
            free(c.tail_row)
            if w != NULL:
                self._release(w)
        return nt
