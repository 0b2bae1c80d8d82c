/* The VM's loops compiled for AVX2 + FMA (suffix _avx2), 4 doubles or 8 floats a vector: the
 * operations fg_math_simd.h needs, as AVX2 intrinsics, then the copy (fg_math_x86.h, which
 * instantiates fg_math_isa.h).  Included by fg_vm.h inside its no-trapping-math region, on x86
 * with GCC or clang only (FG_X86_DISPATCH).  Another instruction set is a header like this one
 * and one row of FG_VM_ISAS (fg_vm_isa.h). */
#ifndef FG_MATH_AVX2_H
#define FG_MATH_AVX2_H
#include <immintrin.h>

#define FGV_SUF _avx2
#define FGV_ATTR FG_AVX2
#define FGV_LANES 4
#define FGV_NMAX 3          /* in cache, 3 chains against 1: tanh -8%, sigmoid -20%; 4 spill */
#define FGV_T __m256d
#define FGV_MASK_T __m256d
#define FGV_PD(op) _mm256_##op##_pd
#define FGV_POW2(KM, E) _mm256_castsi256_pd(_mm256_slli_epi64( \
    _mm256_add_epi64(_mm256_castpd_si256(KM), _mm256_set1_epi64x(1023 + (E))), 52))
#define FGV_GE(A, B) _mm256_cmp_pd(A, B, _CMP_GE_OQ)
#define FGV_BLEND(A, B, M) _mm256_blendv_pd(A, B, M)
#include "fg_math_x86.h"

#endif
