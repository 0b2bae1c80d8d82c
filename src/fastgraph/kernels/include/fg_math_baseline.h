/* The VM's loops compiled for the baseline instruction set (suffix _base): what the compiler
 * makes of fg_math_scalar.h and fg_vm_loops.h with the build's own flags, and float64 tanh and
 * sigmoid from fg_math_simd.h on one-lane "vectors" (plain doubles), so that they compute what
 * the vector copies compute, operation for operation (fg_math_isa.h instantiates the copy).
 * It always exists and is the only copy where FG_X86_DISPATCH is 0.  Included by fg_vm.h inside
 * its no-trapping-math region. */
#ifndef FG_MATH_BASELINE_H
#define FG_MATH_BASELINE_H

/* fg_math_simd.h's operations on one double: the vector instructions' semantics exactly
   (min/max return b when either is NaN; the bitwise ones act on the encodings) */
static inline double fg__s_and(double a, double b) {
    return fg__from_bits_d(fg__bits_d(a) & fg__bits_d(b)); }
static inline double fg__s_andnot(double a, double b) {
    return fg__from_bits_d(~fg__bits_d(a) & fg__bits_d(b)); }
static inline double fg__s_or(double a, double b) {
    return fg__from_bits_d(fg__bits_d(a) | fg__bits_d(b)); }
static inline double fg__s_xor(double a, double b) {
    return fg__from_bits_d(fg__bits_d(a) ^ fg__bits_d(b)); }
static inline double fg__s_pow2(double km, int e) {
    return fg__from_bits_d((fg__bits_d(km) + (uint64_t)(1023 + e)) << 52); }

#define FGV_SUF _base
#define FGV_ATTR
#define FGV_LANES 1
#define FGV_NMAX 2
#define FGV_T double
#define FGV_MASK_T int
#define FGV_LOAD(p) (*(p))
#define FGV_STORE(p, v) (*(p) = (v))
#define FGV_SET1(x) ((double)(x))
#define FGV_ZERO() 0.0
#define FGV_ADD(a, b) ((a) + (b))
#define FGV_SUB(a, b) ((a) - (b))
#define FGV_MUL(a, b) ((a) * (b))
#define FGV_DIV(a, b) ((a) / (b))
#define FGV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FGV_MAX(a, b) ((a) > (b) ? (a) : (b))
#define FGV_FMADD(a, b, c) FG_FMA_d((a), (b), (c))
#define FGV_FNMADD(a, b, c) FG_FMA_d((a), -(b), (c))   /* b is a constant: a NaN a keeps its sign */
#define FGV_AND fg__s_and
#define FGV_ANDNOT fg__s_andnot
#define FGV_OR fg__s_or
#define FGV_XOR fg__s_xor
#define FGV_POW2 fg__s_pow2
#define FGV_GE(a, b) ((a) >= (b))
#define FGV_BLEND(a, b, m) ((m) ? (b) : (a))
#include "fg_math_isa.h"          /* the copy: vec loops, float64 tanh and sigmoid, arithmetic */

#endif
