/* The VM's loops compiled for AVX-512 F, DQ and VL (suffix _avx512), 8 doubles or 16 floats a
 * vector: fg_math_avx2.h at twice the width.  With 32 vector registers the tanh and sigmoid
 * loops keep their constants in registers and run FGV_NMAX = 4 chains side by side; the vec
 * loops of fg_math_scalar.h are GCC's vectorisation at 512 bits (FG_AVX512 asks for it).  The
 * same operations as every other copy, lane by lane: the same bits.  Included by fg_vm.h inside
 * its no-trapping-math region, on x86 with GCC or clang only (FG_X86_DISPATCH). */
#ifndef FG_MATH_AVX512_H
#define FG_MATH_AVX512_H
#include <immintrin.h>

#define FGV_SUF _avx512
#define FGV_ATTR FG_AVX512
#define FGV_LANES 8
#define FGV_NMAX 4
#define FGV_T __m512d
#define FGV_MASK_T __mmask8
#define FGV_PD(op) _mm512_##op##_pd
#define FGV_POW2(KM, E) _mm512_castsi512_pd(_mm512_slli_epi64( \
    _mm512_add_epi64(_mm512_castpd_si512(KM), _mm512_set1_epi64(1023 + (E))), 52))
#define FGV_GE(A, B) _mm512_cmp_pd_mask(A, B, _CMP_GE_OQ)
#define FGV_BLEND(A, B, M) _mm512_mask_blend_pd(M, A, B)
#include "fg_math_x86.h"

#endif
