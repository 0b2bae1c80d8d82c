/* fastgraph's own transcendentals, one element at a time: branch-free, so that the C compiler
 * vectorises the block loops made of them (fg_vm_loops.h), in every instruction set's copy.
 *
 *   fg_exp_P, fg_expm1_P, fg_tanh_P, fg_sigmoid_P   P = d (double) or f (float), one algorithm
 *                                                   (fg_math_scalar_generic.h) with each
 *                                                   precision's constants and polynomials here
 *   fg_log_d, fg_log1p_d                            double; the float versions compute in double
 *
 * Every fused multiply-add is written out (FG_FMA_P): fg_vm.h compiles this with fp-contract=off,
 * so the compiler adds none of its own, and every instruction set's copy (each vectorises these
 * loops at its own width) computes the same operations, rounded the same way: the same bits.
 * Where the target has FMA instructions fma() is one; on x86-64 without them (the baseline
 * copy, run only by CPUs older than AVX2 or when forced) it is libm's exact fma, slower.
 *
 * Included by fg_vm.h inside its no-trapping-math region (see there). */
#ifndef FG_MATH_SCALAR_H
#define FG_MATH_SCALAR_H
#include <stdint.h>
#include <string.h>
#include <math.h>

typedef double fg_real_d;
typedef float fg_real_f;
typedef uint64_t fg_bits_d;
typedef uint32_t fg_bits_f;

static inline double fg__from_bits_d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static inline uint64_t fg__bits_d(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline float fg__from_bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t fg__bits_f(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
#define FG_SIGN_d 0x8000000000000000ULL
#define FG_SIGN_f 0x80000000u
#define FG_FABS_d fabs
#define FG_FABS_f fabsf
/* a b + c with one rounding */
#if defined(__GNUC__) || defined(__clang__)
#  define FG_FMA_d(a, b, c) __builtin_fma((a), (b), (c))
#  define FG_FMA_f(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#  define FG_FMA_d(a, b, c) fma((a), (b), (c))
#  define FG_FMA_f(a, b, c) fmaf((a), (b), (c))
#endif

/* ---- range reduction: x = k ln2 + r, |r| <= ln2/2 ----
 * Adding MAGIC (1.5 * 2^52, 1.5 * 2^23) rounds to an integer k, left in MAGIC's low bits
 * (km = k + MAGIC), from which fg__pow2_P builds 2^k in the exponent field; ln2 in two parts. */
#define FG_MAGIC_d 6755399441055744.0
#define FG_MAGIC_f 12582912.0f
#define FG_LOG2E_d 1.4426950408889634
#define FG_LOG2E_f 1.44269504088896341f
#define FG_LN2HI_d 6.93147180369123816490e-01
#define FG_LN2HI_f 0.693359375f
#define FG_LN2LO_d 1.90821492927058770002e-10
#define FG_LN2LO_f -2.12194440e-4f
/* 2^k from km = k + MAGIC, for k in the exponent range */
static inline double fg__pow2_d(double km) { return fg__from_bits_d((fg__bits_d(km) + 1023u) << 52); }
static inline float fg__pow2_f(float km) { return fg__from_bits_f((fg__bits_f(km) + 127u) << 23); }

/* ---- exp and expm1 ----
 * exp(x) = 2^k exp(r), 2^k applied in two halves so that results down to the smallest subnormal
 * are right; the clamp [LO, HI] keeps k in range, OVER/UNDER are where exp overflows/underflows
 * to inf/0.  expm1 takes exp(r) - 1 = r + r^2 P(r) itself when 2^k - 1 is exact (x <= BIG). */
#define FG_EXP_LO_d -746.0
#define FG_EXP_LO_f -104.0f
#define FG_EXP_HI_d 710.0
#define FG_EXP_HI_f 89.0f
#define FG_EXP_OVER_d 709.782712893384
#define FG_EXP_OVER_f 88.72283935546875f
#define FG_EXP_UNDER_d -745.1332191019412
#define FG_EXP_UNDER_f -103.972084045410f
#define FG_EXPM1_BIG_d 40.0             /* 2^k - 1 exact for k <= 53 */
#define FG_EXPM1_BIG_f 16.0f            /* ... and k <= 24 */
/* P of degree 9: a near-minimax Chebyshev fit (mpmath.chebyfit, 40 digits) with 1.4e-18
   absolute error in P, so expm1(r) is accurate to rounding (max 1.3e-16 relative in double).
   Estrin form: short dependency chains. */
static inline double fg__expm1_poly_d(double r) {
    double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    double a = FG_FMA_d(r, 0.16666666666666669, 0.5000000000000001);
    double b = FG_FMA_d(r, 0.008333333333330065, 0.041666666666624164);
    double c = FG_FMA_d(r, 0.00019841269863040545, 0.0013888888917196719);
    double d = FG_FMA_d(r, 2.7557268480310024e-06, 2.4801521322368692e-05);
    double e = FG_FMA_d(r, 2.5100375832561234e-08, 2.7620075879983367e-07);
    double p = FG_FMA_d(r8, e, FG_FMA_d(r4, FG_FMA_d(r2, d, c), FG_FMA_d(r2, b, a)));
    return FG_FMA_d(r2, p, r);
}
/* P of degree 4 (Chebyshev fit): 7.5e-8 relative */
static inline float fg__expm1_poly_f(float r) {
    float r2 = r * r;
    float a = FG_FMA_f(r, 0.16666577756404877f, 0.5f);
    float b = FG_FMA_f(r, 0.008363173343241215f, 0.041666556149721146f);
    float p = FG_FMA_f(r2 * r2, 0.0013926175888627768f, FG_FMA_f(r2, b, a));
    return FG_FMA_f(r2, p, r);
}

/* ---- tanh and sigmoid: exp(r) = N / D in fdlibm's rational form ----
 * D = 2 - c, N = D + 2r, c = r - r^2 P(r^2) (P of degree 4 in r^2 for double, error < 2^-59;
 * degree 1 for float, fdlibm's expf coefficients), D computed as r^2 P + (2 - r), one FMA
 * (fg_math_simd.h's order: the float64 loops are written there).  Half the multiply-adds of the polynomial
 * above, at the price of a division: a win where a division is needed anyway. */
#define FG__EXP_P1 1.66666666666666019037e-01
#define FG__EXP_P2 -2.77777777770155933842e-03
#define FG__EXP_P3 6.61375632143793436117e-05
#define FG__EXP_P4 -1.65339022054652515390e-06
#define FG__EXP_P5 4.13813679705723846039e-08
static inline double fg__exp_den_d(double r) {
    double t = r * r, t2 = t * t;
    double p = FG_FMA_d(t2, FG_FMA_d(t2, FG__EXP_P5, FG_FMA_d(t, FG__EXP_P4, FG__EXP_P3)),
                        FG_FMA_d(t, FG__EXP_P2, FG__EXP_P1));
    return FG_FMA_d(t, p, 2.0 - r);
}
static inline float fg__exp_den_f(float r) {
    float t = r * r;
    return FG_FMA_f(t, FG_FMA_f(t, -2.7667332906e-3f, 1.6666625440e-1f), 2.0f - r);
}
/* tanh(|x|) for 2|x| >= CLAMP rounds to 1 */
#define FG_TANH_CLAMP_d 40.0
#define FG_TANH_CLAMP_f 20.0f
/* sigmoid forms S N as 2^(k+SHIFT) N, a normal number for every k down to the clamp, and scales
   the quotient back by UNSHIFT = 2^-SHIFT, so that subnormal results are rounded once */
#define FG_SIGMOID_SHIFT_d 54.0
#define FG_SIGMOID_SHIFT_f 26.0f
#define FG_SIGMOID_UNSHIFT_d 5.551115123125783e-17
#define FG_SIGMOID_UNSHIFT_f 1.4901161193847656e-08f
/* the largest x whose sigmoid is 0, as the unfused op (SciPy's expit, 1 / (1 + exp(-x)) in the
   array's precision) gives it: from there down exp(-x) overflows and expit is 0, where the
   rational form would give the subnormal e^x rounds to.  (-log(DBL_MAX) and -logf(FLT_MAX),
   rounded to the next float away from 0.)  The reduction then takes EXP_LO instead, whose
   e^EXP_LO is under half the smallest subnormal: the quotient rounds to 0, at no extra cost. */
#define FG_SIGMOID_ZERO_d -0x1.62e42fefa39f0p+9
#define FG_SIGMOID_ZERO_f -0x1.62e43p+6f

#define FG__CAT(a, b) a##b
#define FG__XCAT(a, b) FG__CAT(a, b)
#define FG_P d
#include "fg_math_scalar_generic.h"
#undef FG_P
#define FG_P f
#include "fg_math_scalar_generic.h"
#undef FG_P

/* ---- log and log1p (double) ----
 * log: fdlibm's algorithm, branch-free: x = 2^k m, m in [sqrt(2)/2, sqrt(2)), f = m - 1,
 * s = f / (2 + f), log(m) = f - s (f - R(s^2)) with fdlibm's degree-14 minimax R.  The exponent
 * becomes a double through the 2^52 trick (no int64->double needed).  1 ulp. */
static inline double fg_log_d(double x) {
    int sub = x < 2.2250738585072014e-308;          /* subnormal (or <= 0): scale by 2^54 */
    double xs = sub ? x * 18014398509481984.0 : x;
    uint64_t bits = fg__bits_d(xs);
    double eb = fg__from_bits_d((bits >> 52) | 0x4330000000000000ULL) - 4503599627370496.0;
    double m = fg__from_bits_d((bits & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL);
    int big = m > 1.4142135623730951;
    m = big ? m * 0.5 : m;
    double k = eb - 1023.0 + (big ? 1.0 : 0.0) - (sub ? 54.0 : 0.0);
    double f = m - 1.0;
    double s = f / (2.0 + f), z = s * s, w = z * z;
    double t1 = w * FG_FMA_d(w, FG_FMA_d(w, 1.531383769920937332e-01, 2.222219843214978396e-01),
                             3.999999999940941908e-01);
    double t2 = z * FG_FMA_d(w, FG_FMA_d(w, FG_FMA_d(w, 1.479819860511658591e-01,
                                                     1.818357216161805012e-01),
                                         2.857142874366239149e-01),
                             6.666666666666735130e-01);
    double R = t2 + t1, hfsq = 0.5 * f * f;
    double y = k * FG_LN2HI_d - ((hfsq - (s * (hfsq + R) + k * FG_LN2LO_d)) - f);
    y = x == INFINITY ? x : y;
    y = x == 0.0 ? -INFINITY : y;
    y = x < 0.0 ? NAN : y;
    return x != x ? x : y;
}
/* log1p(x) = log(u) + (x - (u - 1)) / u with u = 1 + x (corrects the rounding of 1 + x) */
static inline double fg_log1p_d(double x) {
    double u = 1.0 + x;
    double c = (x - (u - 1.0)) / u;
    c = (u == 0.0 || u == INFINITY) ? 0.0 : c;
    double y = fg_log_d(u) + c;
    return u == 1.0 ? x : y;                     /* |x| < eps/2: log1p(x) = x */
}
/* ---- sin and cos (double) ----
 * fdlibm's: x = k pi/2 + (y0 + y1), pi/2 in three 33-bit parts and their tails (its medium-size
 * reduction, all three rounds always: branch-free, good to 151 bits), then its kernels
 * __kernel_sin(y0, y1) and __kernel_cos(y0, y1) (Horner steps as FMAs), the quadrant k mod 4
 * choosing the kernel and the sign.  For |x| <= FG_TRIG_BIG only (k < 2^19, so k times each
 * 33-bit part is exact); the block loops (fg_vm_loops.h) send larger, infinite and NaN
 * arguments to libm.  The float versions compute in double. */
#define FG_TRIG_BIG 524288.0
#define FG__INVPIO2 6.36619772367581382433e-01
#define FG__PIO2_1 1.57079632673412561417e+00
#define FG__PIO2_2 6.07710050630396597660e-11
#define FG__PIO2_2T 2.02226624879595063154e-21
#define FG__PIO2_3 2.02226624871116645580e-21
#define FG__PIO2_3T 8.47842766036889956997e-32
/* y0 + y1 = x - k pi/2; the quadrant k mod 4 */
#define FG__TRIG_REDUCE(X, Y0, Y1, Q) \
    double km_ = FG_FMA_d((X), FG__INVPIO2, FG_MAGIC_d); \
    double fn_ = km_ - FG_MAGIC_d; \
    uint64_t Q = fg__bits_d(km_) & 3u; \
    double r_ = (X) - fn_ * FG__PIO2_1, t_, w_; \
    t_ = r_; w_ = fn_ * FG__PIO2_2; r_ = t_ - w_; w_ = fn_ * FG__PIO2_2T - ((t_ - r_) - w_); \
    t_ = r_; w_ = fn_ * FG__PIO2_3; r_ = t_ - w_; w_ = fn_ * FG__PIO2_3T - ((t_ - r_) - w_); \
    double Y0 = r_ - w_; \
    double Y1 = (r_ - Y0) - w_;
static inline double fg__ksin_d(double x, double y) {
    double z = x * x, w = z * z, v = z * x;
    double r = FG_FMA_d(z, FG_FMA_d(z, 2.75573137070700676789e-06, -1.98412698298579493134e-04),
                        8.33333333332248946124e-03)
               + z * w * FG_FMA_d(z, 1.58969099521155010221e-10, -2.50507602534068634195e-08);
    return x - ((z * (0.5 * y - v * r) - y) - v * -1.66666666666666324348e-01);
}
static inline double fg__kcos_d(double x, double y) {
    double z = x * x, w = z * z;
    double r = z * FG_FMA_d(z, FG_FMA_d(z, 2.48015872894767294178e-05,
                                        -1.38888888888741095749e-03), 4.16666666666666019037e-02)
               + w * w * FG_FMA_d(z, FG_FMA_d(z, -1.13596475577881948265e-11,
                                              2.08757232129817482790e-09),
                                  -2.75573143513906633035e-07);
    double hz = 0.5 * z, u = 1.0 - hz;
    return u + (((1.0 - u) - hz) + (z * r - x * y));
}
/* quadrant q: sin = (q odd ? cos : sin)(y), negated for q = 2, 3; cos = (q odd ? sin : cos)(y),
   negated for q = 1, 2 (the sign put on with an integer xor) */
static inline double fg_sin_d(double x) {
    FG__TRIG_REDUCE(x, y0, y1, q)
    double s = fg__ksin_d(y0, y1), c = fg__kcos_d(y0, y1);
    double v = (q & 1u) ? c : s;
    v = fg__from_bits_d(fg__bits_d(v) ^ ((q & 2u) << 62));
    return x == 0.0 ? x : v;                     /* keeps the sign of zero */
}
static inline double fg_cos_d(double x) {
    FG__TRIG_REDUCE(x, y0, y1, q)
    double s = fg__ksin_d(y0, y1), c = fg__kcos_d(y0, y1);
    double v = (q & 1u) ? s : c;
    return fg__from_bits_d(fg__bits_d(v) ^ (((q + 1u) & 2u) << 62));
}
#undef FG__TRIG_REDUCE

static inline float fg_log_f(float x) { return (float)fg_log_d((double)x); }
static inline float fg_log1p_f(float x) { return (float)fg_log1p_d((double)x); }

#endif
