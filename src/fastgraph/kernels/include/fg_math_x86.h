/* fg_math_simd.h's vector operations for an x86 instruction set whose double intrinsics are
 * named _mm<width>_<op>_pd: its header (fg_math_avx2.h, fg_math_avx512.h) defines FGV_PD(op) as
 * that name and the operations whose form differs between widths (FGV_POW2, FGV_GE, FGV_BLEND),
 * then includes this file, which defines the rest and instantiates the copy (fg_math_isa.h).
 * No include guard: once per instruction set. */
#define FGV_LOAD FGV_PD(loadu)
#define FGV_STORE FGV_PD(storeu)
#define FGV_SET1 FGV_PD(set1)
#define FGV_ZERO FGV_PD(setzero)
#define FGV_ADD FGV_PD(add)
#define FGV_SUB FGV_PD(sub)
#define FGV_MUL FGV_PD(mul)
#define FGV_DIV FGV_PD(div)
#define FGV_MIN FGV_PD(min)
#define FGV_MAX FGV_PD(max)
#define FGV_FMADD FGV_PD(fmadd)
#define FGV_FNMADD FGV_PD(fnmadd)
#define FGV_AND FGV_PD(and)
#define FGV_ANDNOT FGV_PD(andnot)
#define FGV_OR FGV_PD(or)
#define FGV_XOR FGV_PD(xor)
#include "fg_math_isa.h"
#undef FGV_PD
