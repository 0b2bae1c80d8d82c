/* The VM's loops compiled for AVX-512 F, DQ and VL (suffix _avx512): fg_math_avx2.h's three
 * instantiations at 8 doubles or 16 floats a vector.  With 32 vector registers the tanh and
 * sigmoid loops keep their constants in registers and run FGV_NMAX = 4 chains side by side; the
 * vec loops of fg_math_scalar.h are GCC's vectorisation at 512 bits (FG_AVX512 asks for it).
 * The same operations as every other copy, lane by lane: the same bits.  Included by fg_vm.h
 * inside its no-trapping-math region, on x86 with GCC or clang only (FG_X86_DISPATCH). */
#ifndef FG_MATH_AVX512_H
#define FG_MATH_AVX512_H
#include <immintrin.h>

FG_DEF_VEC_LOOPS(_avx512, FG_AVX512)

#define FGV_SUF _avx512
#define FGV_ATTR FG_AVX512
#define FGV_LANES 8
#define FGV_NMAX 4
#define FGV_T __m512d
#define FGV_MASK_T __mmask8
#define FGV_LOAD _mm512_loadu_pd
#define FGV_STORE _mm512_storeu_pd
#define FGV_SET1 _mm512_set1_pd
#define FGV_ZERO _mm512_setzero_pd
#define FGV_ADD _mm512_add_pd
#define FGV_SUB _mm512_sub_pd
#define FGV_MUL _mm512_mul_pd
#define FGV_DIV _mm512_div_pd
#define FGV_MIN _mm512_min_pd
#define FGV_MAX _mm512_max_pd
#define FGV_FMADD _mm512_fmadd_pd
#define FGV_FNMADD _mm512_fnmadd_pd
#define FGV_AND _mm512_and_pd
#define FGV_ANDNOT _mm512_andnot_pd
#define FGV_OR _mm512_or_pd
#define FGV_XOR _mm512_xor_pd
#define FGV_POW2(KM, E) _mm512_castsi512_pd(_mm512_slli_epi64( \
    _mm512_add_epi64(_mm512_castpd_si512(KM), _mm512_set1_epi64(1023 + (E))), 52))
#define FGV_GE(A, B) _mm512_cmp_pd_mask(A, B, _CMP_GE_OQ)
#define FGV_BLEND(A, B, M) _mm512_mask_blend_pd(M, A, B)
#include "fg_math_simd.h"          /* fg_vtanh_d_avx512, fg_vsigmoid_d_avx512; undefines FGV_ */

#include "fg_fp_exact_begin.h"
FG_ARITH_OPTIONS
FG_DEF_ARITH(d, _avx512, FG_AVX512)
FG_DEF_ARITH(f, _avx512, FG_AVX512)
#include "fg_fp_exact_end.h"

#endif
