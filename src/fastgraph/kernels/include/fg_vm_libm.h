/* The VM's c loops of the transcendentals: libm, computed in double and rounded to the kernel's
 * dtype (the "libm" strategy, and the ops without a vectorised kernel or a NumPy loop).
 * Compiled once, with the build's own flags (not inside fg_vm.h's region). */
#ifndef FG_VM_LIBM_H
#define FG_VM_LIBM_H
#include <math.h>
#include "fg_opcodes.h"

/* (opcode, libm function) for the unary ones; power is pow, below */
#define FG_LIBM_OPS(X) \
    X(EXP, exp) X(EXPM1, expm1) X(LOG, log) X(LOG1P, log1p) X(SIN, sin) X(COS, cos) \
    X(TAN, tan) X(TANH, tanh) X(SINH, sinh) X(COSH, cosh) X(ARCTAN, atan) X(ERF, erf)

#define FG__LIBM_CASE(OP, FN) \
    case FG_OP_##OP: for (i = 0; i < n; i++) d[i] = (elem)FN((double)a[i]); return 1;
/* fg_libm_<P>(op, d, a, b, n): d = op(a) (or pow(a, b)); 0 for an op it does not have */
#define FG__DEF_LIBM(P) \
static int fg_libm_##P(int k, fg_real_##P *d, const fg_real_##P *a, const fg_real_##P *b, \
                       Py_ssize_t n) { \
    typedef fg_real_##P elem; \
    Py_ssize_t i; \
    switch (k) { \
    FG_LIBM_OPS(FG__LIBM_CASE) \
    case FG_OP_POWER: for (i = 0; i < n; i++) d[i] = (elem)pow((double)a[i], (double)b[i]); \
        return 1; \
    default: return 0; \
    } }
FG__DEF_LIBM(d)
FG__DEF_LIBM(f)
#undef FG__DEF_LIBM
#undef FG__LIBM_CASE

#endif
