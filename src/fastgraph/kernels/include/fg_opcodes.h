/* The fused-kernel VM's opcodes, listed once.  The VM (kernels/vm.pyx) takes its enum, its
 * arities and its export to Python from this list; the Python compiler (fastgraph.fused.opcodes)
 * reads the export, so the numbers it writes and the numbers the VM reads cannot drift apart.
 *
 * One row per op:  OP(ENUM, name, arity, eval, ufunc, cost, ulp32, ulp64, doc)
 *   ENUM   the enum suffix: FG_OP_<ENUM> is the row's position + 1 (0 is never an opcode);
 *          append new rows at the end
 *   name   the op's name in Python (an OpDef's ``opcode``)
 *   arity  operands, 1 to 3
 *   eval   how the VM evaluates it by default: c (a C loop: an expression in fg_vm_loops.h, or
 *          libm in double, fg_vm_libm.h), vec (fastgraph's own vectorised polynomials,
 *          fg_math_scalar.h and one loop per instruction set), ufunc (NumPy's inner loop)
 *   ufunc  the ufunc whose all-same-type inner loop (d->d, dd->d) computes exactly what the
 *          unfused op does, or none: a NumPy name, or a dotted path (scipy.special.expit);
 *          softplus calls logaddexp's loop as logaddexp(0, a)
 *   cost   work per element in adds (a vectorised tanh is ~6, a libm call or NumPy loop ~10):
 *          the fuse pass gives a kernel several threads on a short array only when it is heavy
 *   ulp32, ulp64  the most ulp the default evaluation's float32 / float64 results differ from
 *          the unfused op's (NumPy's or SciPy's), over the whole float range and on every
 *          instruction-set copy; 0: the same bits (NaN results are NaN, their sign and payload
 *          are not promised).  tests/test_fused_accuracy.py holds it, docs/fusion.md lists it
 *   doc    what it computes
 *
 * Adding an op: a row here, its kernel (a case in fg_vm_loops.h, a line of FG_LIBM_OPS, or a
 * vec loop in each instruction set's header), and its NumPy reference in fused/opcodes.py.
 *
 * power's default is NumPy's loop: its float32 loop calls powf, whose results differ in the last
 * bit from pow computed in double and rounded (the c loop) on ~1 element in 1000, and where
 * NumPy uses SVML (AVX-512 builds) its float64 results differ from libm's too. */
#ifndef FG_OPCODES_H
#define FG_OPCODES_H

#define FG_OPCODES(OP) \
    OP(COPY,          copy,          1, c,     none,                1,  0, 0, "d = a") \
    OP(ADD,           add,           2, c,     add,                 1,  0, 0, "d = a + b") \
    OP(SUBTRACT,      subtract,      2, c,     subtract,            1,  0, 0, "d = a - b") \
    OP(MULTIPLY,      multiply,      2, c,     multiply,            1,  0, 0, "d = a * b") \
    OP(DIVIDE,        divide,        2, c,     divide,              2,  0, 0, "d = a / b") \
    OP(POWER,         power,         2, ufunc, power,               12, 0, 0, \
       "d = a ** b (NumPy's power loop)") \
    OP(NEGATIVE,      negative,      1, c,     negative,            1,  0, 0, "d = -a") \
    OP(ABS,           abs,           1, c,     absolute,            1,  0, 0, "d = |a|") \
    OP(SQUARE,        square,        1, c,     square,              1,  0, 0, "d = a * a") \
    OP(RECIPROCAL,    reciprocal,    1, c,     reciprocal,          2,  0, 0, "d = 1 / a") \
    OP(MAXIMUM,       maximum,       2, c,     maximum,             1,  0, 0, \
       "NaN-propagating max") \
    OP(MINIMUM,       minimum,       2, c,     minimum,             1,  0, 0, \
       "NaN-propagating min") \
    OP(SIGN,          sign,          1, c,     sign,                1,  0, 0, \
       "-1, 0, +1 (NaN stays NaN)") \
    OP(FLOOR,         floor,         1, ufunc, floor,               1,  0, 0, "") \
    OP(CEIL,          ceil,          1, ufunc, ceil,                1,  0, 0, "") \
    OP(SQRT,          sqrt,          1, ufunc, sqrt,                2,  0, 0, "") \
    OP(RELU,          relu,          1, c,     none,                1,  0, 0, "maximum(a, 0)") \
    OP(EXP,           exp,           1, vec,   exp,                 6,  3, 1, "") \
    OP(EXPM1,         expm1,         1, vec,   expm1,               6,  2, 2, "") \
    OP(LOG,           log,           1, vec,   log,                 6,  4, 1, "") \
    OP(LOG1P,         log1p,         1, vec,   log1p,               6,  2, 1, "") \
    OP(SIN,           sin,           1, vec,   sin,                 6,  1, 1, "") \
    OP(COS,           cos,           1, vec,   cos,                 6,  1, 1, "") \
    OP(TAN,           tan,           1, ufunc, tan,                 10, 0, 0, "") \
    OP(TANH,          tanh,          1, vec,   tanh,                6,  3, 4, "") \
    OP(SINH,          sinh,          1, ufunc, sinh,                10, 0, 0, "") \
    OP(COSH,          cosh,          1, ufunc, cosh,                10, 0, 0, "") \
    OP(ARCTAN,        arctan,        1, ufunc, arctan,              10, 0, 0, "") \
    OP(SIGMOID,       sigmoid,       1, vec,   scipy.special.expit, 7,  4, 4, \
       "scipy.special.expit; vec: e = exp(-|a|), a >= 0 ? 1/(1+e) : e/(1+e)") \
    OP(SOFTPLUS,      softplus,      1, vec,   logaddexp,           12, 2, 3, \
       "logaddexp(0, a); vec: log1p(exp(-|a|)) + max(a, 0)") \
    OP(ERF,           erf,           1, ufunc, scipy.special.erf,   10, 0, 0, "scipy.special.erf") \
    OP(LESS,          less,          2, c,     none,                1,  0, 0, "a < b") \
    OP(LESS_EQUAL,    less_equal,    2, c,     none,                1,  0, 0, "a <= b") \
    OP(GREATER,       greater,       2, c,     none,                1,  0, 0, "a > b") \
    OP(GREATER_EQUAL, greater_equal, 2, c,     none,                1,  0, 0, "a >= b") \
    OP(EQUAL,         equal,         2, c,     none,                1,  0, 0, "a == b") \
    OP(NOT_EQUAL,     not_equal,     2, c,     none,                1,  0, 0, "a != b") \
    OP(WHERE,         where,         3, c,     none,                1,  0, 0, "a != 0 ? b : c") \
    OP(CLIP,          clip,          3, c,     none,                1,  0, 0, \
       "minimum(maximum(a, b), c) (np.clip)") \
    OP(FMA,           fma,           3, c,     none,                1,  0, 0, \
       "a * b + c (two roundings, like NumPy)") \
    OP(NFMA,          nfma,          3, c,     none,                1,  0, 0, \
       "c - a * b (two roundings, like NumPy): an SGD update's p - lr * g in one pass") \
    OP(MUL_GREATER,   mul_greater,   3, c,     none,                1,  0, 0, \
       "a * (b > c): relu's gradient g * (x > 0) in one pass") \
    OP(SELECT,        select,        3, c,     none,                1,  0, 0, \
       "alias of where: a != 0 ? b : c") \
    OP(TANH_GRAD,     tanh_grad,     2, c,     none,                1,  0, 0, \
       "b * (1 - a*a): gradient through tanh given its output a") \
    OP(SIGMOID_GRAD,  sigmoid_grad,  2, c,     none,                1,  0, 0, \
       "b * a * (1 - a): gradient through sigmoid given its output a") \
    OP(MUL_MUL,       mul_mul,       3, c,     none,                1,  0, 0, \
       "(a * b) * c (two roundings, like NumPy): 0.5 * x * x in one pass") \
    OP(TANH_FMA,      tanh_fma,      3, c,     none,                7,  3, 4, \
       "tanh(a * b + c): fma's two roundings, then the vec tanh, in one pass")

#define FG__OP_ENUM(ENUM, name, arity, eval, ufunc, cost, ulp32, ulp64, doc) FG_OP_##ENUM,
enum { FG_OP_NONE = 0, FG_OPCODES(FG__OP_ENUM) FG_OP_END };
#undef FG__OP_ENUM

/* The rows as data, for the export to Python and the VM's checks (index = opcode - 1). */
typedef struct {
    const char *name, *eval, *ufunc, *doc;
    int arity, cost, ulp32, ulp64;
} fg_opcode_row;
#define FG__OP_ROW(ENUM, name, arity, eval, ufunc, cost, ulp32, ulp64, doc) \
    {#name, #eval, #ufunc, doc, arity, cost, ulp32, ulp64},
static const fg_opcode_row fg_opcode_rows[] = { FG_OPCODES(FG__OP_ROW) };
#undef FG__OP_ROW

#endif
