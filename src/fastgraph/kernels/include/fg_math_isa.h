/* One instruction set's copy of the VM's loops, written once for every copy: the header of an
 * instruction set (fg_math_baseline.h, fg_math_avx2.h, ...) defines FGV_SUF (the functions' name
 * suffix), FGV_ATTR (their target attribute) and the FGV_ vector operations of fg_math_simd.h,
 * then includes this file, which instantiates, under that suffix and attribute,
 *
 *   the vec loops of fg_math_scalar.h (FG_DEF_VEC_LOOPS: GCC vectorises them at the set's width),
 *   float64 tanh, sigmoid and tanh_fma in the set's vectors (fg_math_simd.h),
 *   the plain arithmetic (FG_DEF_ARITH, rounding as NumPy's unfused ops do),
 *
 * and undefines the FGV_ parameters, ready for the next set.  Included inside fg_vm.h's
 * no-trapping-math region.  No include guard: once per instruction set. */
#define FGV__DEF_VEC_LOOPS(SUF, ATTR) FG_DEF_VEC_LOOPS(SUF, ATTR)
#define FGV__DEF_ARITH(P, SUF, ATTR) FG_DEF_ARITH(P, SUF, ATTR)

FGV__DEF_VEC_LOOPS(FGV_SUF, FGV_ATTR)
#include "fg_math_simd.h"          /* fg_vtanh_d, fg_vsigmoid_d, fg_vtanh_fma_d; undefines FGV_ */

#include "fg_fp_exact_begin.h"
FG_ARITH_OPTIONS
FGV__DEF_ARITH(d, FGV_SUF, FGV_ATTR)
FGV__DEF_ARITH(f, FGV_SUF, FGV_ATTR)
#include "fg_fp_exact_end.h"

#undef FGV__DEF_ARITH
#undef FGV__DEF_VEC_LOOPS
#undef FGV_ATTR
#undef FGV_SUF
