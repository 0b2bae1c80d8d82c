/* The VM's loops compiled for the baseline instruction set (suffix _base): what the compiler
 * makes of fg_math_scalar.h and fg_vm_loops.h with the build's own flags.  It always exists and
 * is the only copy where FG_X86_DISPATCH is 0.  Included by fg_vm.h inside its no-trapping-math
 * region. */
#ifndef FG_MATH_BASELINE_H
#define FG_MATH_BASELINE_H

FG_DEF_VEC_LOOPS(_base, )
FG_DEF_VEC_LOOP(tanh, d, _base, )
FG_DEF_VEC_LOOP(sigmoid, d, _base, )

#include "fg_fp_exact_begin.h"
FG_ARITH_OPTIONS
FG_DEF_ARITH(d, _base, )
FG_DEF_ARITH(f, _base, )
#include "fg_fp_exact_end.h"

#endif
