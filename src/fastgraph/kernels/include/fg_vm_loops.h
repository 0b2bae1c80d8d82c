/* The VM's block loops, as templates that every instruction set's header instantiates under its
 * own suffix and target attribute (fg_math_baseline.h, fg_math_avx2.h):
 *
 *   FG_DEF_VEC_LOOPS(SUF, ATTR)  fg_v<op>_<P><SUF>(d, a, n): the vec loops made of the scalar
 *                                functions of fg_math_scalar.h, for exp, expm1, log, log1p (both
 *                                precisions), sin and cos (libm's beyond FG_TRIG_BIG), and
 *                                float tanh, sigmoid and tanh_fma.  float64 tanh and
 *                                sigmoid are fg_math_simd.h's, in each instruction set's
 *                                vectors (one-lane ones in the baseline copy).
 *   FG_DEF_ARITH(P, SUF, ATTR)   fg_arith_<P><SUF>(op, d, a, b, c, n): the plain ("c") ops, one
 *                                switch (and the superinstruction tanh_fma, whose tanh is
 *                                the vec loop's); returns 0 for an op it does not have.  Expand it between
 *                                fg_fp_exact_begin.h and fg_fp_exact_end.h, after
 *                                FG_ARITH_OPTIONS: a*b+c must round twice, exactly as the
 *                                unfused NumPy ops do, and sqrt is the instruction.
 *
 * P is d (double) or f (float).  Included by fg_vm.h inside its no-trapping-math region. */
#ifndef FG_VM_LOOPS_H
#define FG_VM_LOOPS_H
#include "fg_opcodes.h"
#include "fg_grad_rules.h"      /* tanh_grad, sigmoid_grad, mul_greater: shared with the tape */

#define FG_DEF_VEC_LOOP(NAME, P, SUF, ATTR) \
ATTR static void fg_v##NAME##_##P##SUF(fg_real_##P *d, const fg_real_##P *a, Py_ssize_t n) { \
    for (Py_ssize_t i = 0; i < n; i++) d[i] = fg_##NAME##_##P(a[i]); }
/* sin and cos: fg_<name>_d where |x| <= FG_TRIG_BIG, libm's in double beyond (and for inf and
   NaN), a chunk at a time: a chunk with no such element (the usual case) is one vectorised pass;
   one with any goes element by element.  Element by element, so in place (d == a) is fine. */
#define FG__TRIG_CHUNK 64
#define FG_DEF_TRIG_LOOP(NAME, P, SUF, ATTR) \
ATTR static void fg_v##NAME##_##P##SUF(fg_real_##P *d, const fg_real_##P *a, Py_ssize_t n) { \
    for (Py_ssize_t i0 = 0; i0 < n; i0 += FG__TRIG_CHUNK) { \
        Py_ssize_t m = n - i0 < FG__TRIG_CHUNK ? n - i0 : FG__TRIG_CHUNK; \
        const fg_real_##P *x = a + i0; \
        fg_real_##P *y = d + i0; \
        int big = 0; \
        for (Py_ssize_t i = 0; i < m; i++) big |= !(fabs((double)x[i]) <= FG_TRIG_BIG); \
        if (!big) { \
            for (Py_ssize_t i = 0; i < m; i++) y[i] = (fg_real_##P)fg_##NAME##_d((double)x[i]); \
        } else { \
            for (Py_ssize_t i = 0; i < m; i++) { \
                double v = (double)x[i]; \
                y[i] = (fg_real_##P)(fabs(v) <= FG_TRIG_BIG ? fg_##NAME##_d(v) : NAME(v)); } } } }
/* tanh(a * b + c), float: the tanh_fma superinstruction (float64's is fg_math_simd.h's) */
#define FG_DEF_TANH_FMA_LOOP(SUF, ATTR) \
ATTR static void fg_vtanh_fma_f##SUF(float *d, const float *a, const float *b, const float *c, \
                                     Py_ssize_t n) { \
    for (Py_ssize_t i = 0; i < n; i++) { float p = a[i] * b[i]; d[i] = fg_tanh_f(p + c[i]); } }
#define FG_DEF_VEC_LOOPS(SUF, ATTR) \
    FG_DEF_TANH_FMA_LOOP(SUF, ATTR) \
    FG_DEF_TRIG_LOOP(sin, d, SUF, ATTR) FG_DEF_TRIG_LOOP(sin, f, SUF, ATTR) \
    FG_DEF_TRIG_LOOP(cos, d, SUF, ATTR) FG_DEF_TRIG_LOOP(cos, f, SUF, ATTR) \
    FG_DEF_VEC_LOOP(exp, d, SUF, ATTR) FG_DEF_VEC_LOOP(exp, f, SUF, ATTR) \
    FG_DEF_VEC_LOOP(expm1, d, SUF, ATTR) FG_DEF_VEC_LOOP(expm1, f, SUF, ATTR) \
    FG_DEF_VEC_LOOP(tanh, f, SUF, ATTR) FG_DEF_VEC_LOOP(sigmoid, f, SUF, ATTR) \
    FG_DEF_VEC_LOOP(log, d, SUF, ATTR) FG_DEF_VEC_LOOP(log, f, SUF, ATTR) \
    FG_DEF_VEC_LOOP(log1p, d, SUF, ATTR) FG_DEF_VEC_LOOP(log1p, f, SUF, ATTR)

#if defined(__GNUC__) && !defined(__clang__)
#  define FG_ARITH_OPTIONS _Pragma("GCC optimize(\"no-math-errno\")")
#else
#  define FG_ARITH_OPTIONS
#endif
#define FG_SQRT_d sqrt
#define FG_SQRT_f sqrtf
#define FG_FLOOR_d floor
#define FG_FLOOR_f floorf
#define FG_CEIL_d ceil
#define FG_CEIL_f ceilf
/* Operands are read into locals before a select so that both sides are plain loads (which
   lets the compiler if-convert and vectorise); the block registers are always readable. */
#define FG__LOOP(EXPR) for (Py_ssize_t i = 0; i < n; i++) { \
        elem x = a[i]; (void)x; EXPR; } return 1;
#define FG_DEF_ARITH(P, SUF, ATTR) \
ATTR static int fg_arith_##P##SUF(int k, fg_real_##P *d, const fg_real_##P *a, \
                                  const fg_real_##P *b, const fg_real_##P *c, Py_ssize_t n) { \
    typedef fg_real_##P elem; \
    const elem zero = 0, one = 1; \
    switch (k) { \
    case FG_OP_COPY: FG__LOOP(d[i] = x) \
    case FG_OP_ADD: FG__LOOP(d[i] = x + b[i]) \
    case FG_OP_SUBTRACT: FG__LOOP(d[i] = x - b[i]) \
    case FG_OP_MULTIPLY: FG__LOOP(d[i] = x * b[i]) \
    case FG_OP_DIVIDE: FG__LOOP(d[i] = x / b[i]) \
    case FG_OP_FMA: FG__LOOP(elem p = x * b[i]; d[i] = p + c[i]) \
    case FG_OP_NFMA: FG__LOOP(elem p = x * b[i]; d[i] = c[i] - p) \
    case FG_OP_MUL_MUL: FG__LOOP(elem p = x * b[i]; d[i] = p * c[i]) \
    case FG_OP_TANH_FMA: fg_vtanh_fma_##P##SUF(d, a, b, c, n); return 1; \
    case FG_OP_MUL_GREATER: FG__LOOP(elem y = b[i]; elem z = c[i]; \
                                     d[i] = FG_MUL_GREATER(elem, x, y, z)) \
    case FG_OP_NEGATIVE: FG__LOOP(d[i] = -x) \
    case FG_OP_SQUARE: FG__LOOP(d[i] = x * x) \
    case FG_OP_RECIPROCAL: FG__LOOP(d[i] = one / x) \
    case FG_OP_ABS: FG__LOOP(d[i] = FG_FABS_##P(x)) \
    case FG_OP_SQRT: FG__LOOP(d[i] = FG_SQRT_##P(x)) \
    case FG_OP_FLOOR: FG__LOOP(d[i] = FG_FLOOR_##P(x)) \
    case FG_OP_CEIL: FG__LOOP(d[i] = FG_CEIL_##P(x)) \
    case FG_OP_MAXIMUM: FG__LOOP(elem y = b[i]; d[i] = (x >= y || x != x) ? x : y) \
    case FG_OP_MINIMUM: FG__LOOP(elem y = b[i]; d[i] = (x <= y || x != x) ? x : y) \
    case FG_OP_RELU: FG__LOOP(d[i] = x <= zero ? zero : x) \
    case FG_OP_SIGN: FG__LOOP(d[i] = x > zero ? one : (x < zero ? -one : (x == zero ? zero : x))) \
    case FG_OP_LESS: FG__LOOP(d[i] = x < b[i] ? one : zero) \
    case FG_OP_LESS_EQUAL: FG__LOOP(d[i] = x <= b[i] ? one : zero) \
    case FG_OP_GREATER: FG__LOOP(d[i] = x > b[i] ? one : zero) \
    case FG_OP_GREATER_EQUAL: FG__LOOP(d[i] = x >= b[i] ? one : zero) \
    case FG_OP_EQUAL: FG__LOOP(d[i] = x == b[i] ? one : zero) \
    case FG_OP_NOT_EQUAL: FG__LOOP(d[i] = x != b[i] ? one : zero) \
    case FG_OP_WHERE: case FG_OP_SELECT: \
        FG__LOOP(elem y = b[i]; elem z = c[i]; d[i] = x != zero ? y : z) \
    case FG_OP_CLIP: FG__LOOP(elem lo = b[i]; elem hi = c[i]; \
                              x = (x >= lo || x != x) ? x : lo; d[i] = (x <= hi || x != x) ? x : hi) \
    case FG_OP_TANH_GRAD: FG__LOOP(d[i] = FG_TANH_GRAD(elem, x, b[i])) \
    case FG_OP_SIGMOID_GRAD: FG__LOOP(d[i] = FG_SIGMOID_GRAD(elem, x, b[i])) \
    default: return 0; \
    } }

#endif
