/* The VM's loops compiled for AVX2 + FMA (suffix _avx2): the vec loops of fg_math_scalar.h
 * (GCC vectorises them, 4 doubles or 8 floats a vector), float64 tanh and sigmoid in AVX2
 * intrinsics (fg_math_simd.h), and the plain arithmetic (fg_vm_loops.h).
 *
 * Included by fg_vm.h inside its no-trapping-math region, on x86 with GCC or clang only
 * (FG_X86_DISPATCH).  Another instruction set is a header like this one: its FGV_ operations,
 * then the same three instantiations under its own suffix and target attribute, and one row of
 * FG_VM_ISAS (fg_vm_isa.h). */
#ifndef FG_MATH_AVX2_H
#define FG_MATH_AVX2_H
#include <immintrin.h>

FG_DEF_VEC_LOOPS(_avx2, FG_AVX2)

#define FGV_SUF _avx2
#define FGV_ATTR FG_AVX2
#define FGV_LANES 4
#define FGV_NMAX 3          /* in cache, 3 chains against 1: tanh -8%, sigmoid -20%; 4 spill */
#define FGV_T __m256d
#define FGV_MASK_T __m256d
#define FGV_LOAD _mm256_loadu_pd
#define FGV_STORE _mm256_storeu_pd
#define FGV_SET1 _mm256_set1_pd
#define FGV_ZERO _mm256_setzero_pd
#define FGV_ADD _mm256_add_pd
#define FGV_SUB _mm256_sub_pd
#define FGV_MUL _mm256_mul_pd
#define FGV_DIV _mm256_div_pd
#define FGV_MIN _mm256_min_pd
#define FGV_MAX _mm256_max_pd
#define FGV_FMADD _mm256_fmadd_pd
#define FGV_FNMADD _mm256_fnmadd_pd
#define FGV_AND _mm256_and_pd
#define FGV_ANDNOT _mm256_andnot_pd
#define FGV_OR _mm256_or_pd
#define FGV_XOR _mm256_xor_pd
#define FGV_POW2(KM, E) _mm256_castsi256_pd(_mm256_slli_epi64( \
    _mm256_add_epi64(_mm256_castpd_si256(KM), _mm256_set1_epi64x(1023 + (E))), 52))
#define FGV_GE(A, B) _mm256_cmp_pd(A, B, _CMP_GE_OQ)
#define FGV_BLEND(A, B, M) _mm256_blendv_pd(A, B, M)
#include "fg_math_simd.h"          /* fg_vtanh_d_avx2, fg_vsigmoid_d_avx2; undefines FGV_ */

#include "fg_fp_exact_begin.h"
FG_ARITH_OPTIONS
FG_DEF_ARITH(d, _avx2, FG_AVX2)
FG_DEF_ARITH(f, _avx2, FG_AVX2)
#include "fg_fp_exact_end.h"

#endif
