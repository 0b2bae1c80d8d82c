# Directives (boundscheck, wraparound, cdivision, language_level) are set in setup.py.
"""The fused-kernel virtual machine: a block interpreter for short register programs.

The Python side (:mod:`fastgraph.fused.kernel`) compiles an expression DAG of elementwise ops into
a register program, validates and broadcasts the operands, collapses dimensions, and calls
:func:`run`.  Here the flattened iteration space is cut into fixed-size blocks; OpenMP threads take
blocks (``prange``, guided schedule), load each input's block into a register (in place when the
input is contiguous, gathered with per-dimension strides otherwise, stride 0 for broadcasting),
run the program on block-length registers and write only the outputs.  An optional trailing
reduction is accumulated per block and the per-block partials are combined in block order, so the
result does not depend on the number of threads.

Opcode numbers are not defined here: at import this module reads
:data:`fastgraph.fused.opcodes.OPCODES` and maps each table entry, by name, onto one of the VM's
implementations (and resolves the NumPy inner loops the table names).  It refuses to import when the
two disagree.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.stdlib cimport malloc, free
from libc.string cimport memset, memcmp, memcpy
from libc.stdint cimport uintptr_t
from cpython.float cimport PyFloat_AsDouble
from libc.math cimport (exp, expm1, log, log1p, sin, cos, tan, tanh, sinh, cosh, atan, erf, pow,
                        fabs)
cimport numpy as cnp
from fastgraph._ufunc_loops cimport find_loop, loop_t
import numpy as np

cnp.import_array()

# NumPy scalar types the C broadcast path reads directly (``Program.bcast_call``)
cdef object _NP_FLOAT64 = np.float64
cdef object _NP_FLOAT32 = np.float32

ctypedef fused real:
    float
    double


# --------------------------------------------------------------------------------------------
# fastgraph's own vectorisable transcendentals ("vec" strategy).  Branch-free so that the C
# compiler vectorises the block loops; on x86-64 Linux/GCC each loop is also cloned for Haswell
# (AVX2 + FMA) and picked at load time by the ifunc resolver.  float32 has its own single-precision versions (8 lanes per AVX2 register).
# --------------------------------------------------------------------------------------------
cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include <math.h>
    #include "_x86_dispatch.h"     /* FG_X86_DISPATCH, FG_AVX2, fg_cpu_avx2_fma */
    /* The branch-free selects below only vectorise when the compiler may assume FP compares do
       not trap; that changes no result (nothing here reads the FP exception flags). */
    #if defined(__GNUC__) && !defined(__clang__)
    #  pragma GCC push_options
    #  pragma GCC optimize("no-trapping-math")
    #endif
    static inline double fg__asd(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
    static inline uint64_t fg__asu(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
    #define FG_MAGIC 6755399441055744.0   /* 1.5 * 2^52: adding it rounds to an integer */
    /* 2^k from km = k + FG_MAGIC, for integer k in [-1022, 1023] */
    static inline double fg__pow2(double km) { return fg__asd((fg__asu(km) + 1023u) << 52); }
    /* exp(r) - 1 = r + r^2 P(r) for |r| <= ln2/2, P of degree 9: a near-minimax Chebyshev fit
       (mpmath.chebyfit, 40 digits) with 1.4e-18 absolute error in P, so expm1(r) is accurate
       to rounding (max 1.3e-16 relative in double).  Estrin form: short dependency chains. */
    static inline double fg__expm1_poly(double r) {
        double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
        double a = 0.5000000000000001 + r * 0.16666666666666669;
        double b = 0.041666666666624164 + r * 0.008333333333330065;
        double c = 0.0013888888917196719 + r * 0.00019841269863040545;
        double d = 2.4801521322368692e-05 + r * 2.7557268480310024e-06;
        double e = 2.7620075879983367e-07 + r * 2.5100375832561234e-08;
        double p = (a + r2 * b) + r4 * (c + r2 * d) + r8 * e;
        return r + r2 * p;
    }
    #define FG_LOG2E 1.4426950408889634
    #define FG_LN2HI 6.93147180369123816490e-01
    #define FG_LN2LO 1.90821492927058770002e-10
    /* exp(x): x = k ln2 + r, exp(x) = 2^k exp(r); 2^k applied in two halves so that results
       down to the smallest subnormal are right.  NaN propagates through the polynomial. */
    static inline double fg_exp1(double x) {
        double xc = x < -746.0 ? -746.0 : (x > 710.0 ? 710.0 : x);
        double km = xc * FG_LOG2E + FG_MAGIC;
        double k = km - FG_MAGIC;
        double r = (xc - k * FG_LN2HI) - k * FG_LN2LO;
        double k1m = k * 0.5 + FG_MAGIC;
        double k1 = k1m - FG_MAGIC;
        double k2m = (k - k1) + FG_MAGIC;
        double y = (fg__expm1_poly(r) + 1.0) * fg__pow2(k1m) * fg__pow2(k2m);
        y = x > 709.782712893384 ? INFINITY : y;
        return x < -745.1332191019412 ? 0.0 : y;
    }
    static inline double fg_expm1_1(double x) {
        double xc = x < -746.0 ? -746.0 : (x > 710.0 ? 710.0 : x);
        double km = xc * FG_LOG2E + FG_MAGIC;
        double k = km - FG_MAGIC;
        double r = (xc - k * FG_LN2HI) - k * FG_LN2LO;
        double k1m = k * 0.5 + FG_MAGIC;
        double k1 = k1m - FG_MAGIC;
        double k2m = (k - k1) + FG_MAGIC;
        double q = fg__expm1_poly(r);
        double s1 = fg__pow2(k1m), s2 = fg__pow2(k2m);
        double S = s1 * s2;
        double small = q * S + (S - 1.0);           /* exact 2^k - 1 for k <= 53 */
        double big = ((q + 1.0) * s1) * s2;
        double y = x > 40.0 ? big : small;
        y = x > 709.782712893384 ? INFINITY : y;
        return x == 0.0 ? x : y;                    /* keeps the sign of zero */
    }
    /* exp(r) = N / D for |r| <= ln2/2, with D = 2 - c, N = D + 2r, c = r - r^2 P(r^2): fdlibm's
       rational form (P of degree 4 in r^2, error < 2^-59).  Half the multiply-adds of the
       polynomial above, at the price of a division -- a win where a division is needed anyway. */
    #define FG__EXP_P1 1.66666666666666019037e-01
    #define FG__EXP_P2 -2.77777777770155933842e-03
    #define FG__EXP_P3 6.61375632143793436117e-05
    #define FG__EXP_P4 -1.65339022054652515390e-06
    #define FG__EXP_P5 4.13813679705723846039e-08
    static inline double fg__exp_den(double r) {
        double t = r * r, t2 = t * t;
        double p = (FG__EXP_P1 + t * FG__EXP_P2)
                   + t2 * ((FG__EXP_P3 + t * FG__EXP_P4) + t2 * FG__EXP_P5);
        return 2.0 - (r - t * p);
    }
    /* tanh(x) = sign(x) e / (e + 2), e = expm1(2|x|) = S N / D - 1 (S = 2^k), so
       tanh = (S N - D) / (S N + D) = ((S - 1) D + 2 S r) / ((S + 1) D + 2 S r): one division, and
       for k = 0 the numerator is exactly 2r (no cancellation near 0).  2|x| is clamped to 40,
       where the quotient already rounds to 1.  Max error 3 ulp (vs. long double). */
    static inline double fg_tanh1(double x) {
        /* the sign is split off and put back with integer ops (2 instructions, not 3), and the
           clamp is written so that it compiles to one min instruction (NaN passes through) */
        uint64_t sign = fg__asu(x) & 0x8000000000000000ULL;
        double ax = fg__asd(fg__asu(x) ^ sign);
        double y = ax + ax;
        y = 40.0 < y ? 40.0 : y;
        double km = y * FG_LOG2E + FG_MAGIC;
        double k = km - FG_MAGIC;
        double r = (y - k * FG_LN2HI) - k * FG_LN2LO;
        double S = fg__pow2(km);
        double D = fg__exp_den(r);
        double Sr = (S + S) * r;
        double q = ((S - 1.0) * D + Sr) / ((S + 1.0) * D + Sr);
        return fg__asd(fg__asu(q) ^ sign);
    }
    /* sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e) otherwise, with e = exp(-|x|) = S N / D
       in tanh's rational form (S = 2^k, N = D + 2r), so sigmoid = D / (D + S N) or
       S N / (D + S N): one division and the short polynomial.  S N is formed as 2^(k+54) N (a
       normal number for every k >= -1076) and scaled back by 2^-54 after the division, so that
       subnormal results are rounded once.  Max error 2 ulp (vs. long double). */
    static inline double fg_sigmoid1(double x) {
        double z = -fabs(x);
        double zc = z < -746.0 ? -746.0 : z;
        double km = zc * FG_LOG2E + FG_MAGIC;
        double k = km - FG_MAGIC;
        double r = (zc - k * FG_LN2HI) - k * FG_LN2LO;
        double D = fg__exp_den(r);
        double SN = (D + 2.0 * r) * fg__pow2(km + 54.0);    /* e D 2^54 */
        double den = D + SN * 5.551115123125783e-17;          /* D (1 + e) */
        int pos = x >= 0.0;
        double q = (pos ? D : SN) / den;
        return q * (pos ? 1.0 : 5.551115123125783e-17);
    }
    /* log(x) (fdlibm's algorithm, branch-free): x = 2^k m, m in [sqrt(2)/2, sqrt(2)),
       f = m - 1, s = f / (2 + f), log(m) = f - s (f - R(s^2)) with fdlibm's degree-14 minimax R.
       The exponent becomes a double through the 2^52 trick (no int64->double needed). 1 ulp. */
    static inline double fg_log1(double x) {
        int sub = x < 2.2250738585072014e-308;          /* subnormal (or <= 0): scale by 2^54 */
        double xs = sub ? x * 18014398509481984.0 : x;
        uint64_t bits = fg__asu(xs);
        double eb = fg__asd((bits >> 52) | 0x4330000000000000ULL) - 4503599627370496.0;
        double m = fg__asd((bits & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL);
        int big = m > 1.4142135623730951;
        m = big ? m * 0.5 : m;
        double k = eb - 1023.0 + (big ? 1.0 : 0.0) - (sub ? 54.0 : 0.0);
        double f = m - 1.0;
        double s = f / (2.0 + f), z = s * s, w = z * z;
        double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01
                    + w * 1.531383769920937332e-01));
        double t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01
                    + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
        double R = t2 + t1, hfsq = 0.5 * f * f;
        double y = k * FG_LN2HI - ((hfsq - (s * (hfsq + R) + k * FG_LN2LO)) - f);
        y = x == INFINITY ? x : y;
        y = x == 0.0 ? -INFINITY : y;
        y = x < 0.0 ? NAN : y;
        return x != x ? x : y;
    }
    /* log1p(x) = log(u) + (x - (u - 1)) / u with u = 1 + x (corrects the rounding of 1 + x) */
    static inline double fg_log1p1(double x) {
        double u = 1.0 + x;
        double c = (x - (u - 1.0)) / u;
        c = (u == 0.0 || u == INFINITY) ? 0.0 : c;
        double y = fg_log1(u) + c;
        return u == 1.0 ? x : y;                     /* |x| < eps/2: log1p(x) = x */
    }
    static inline float fg_logf1(float x) { return (float)fg_log1((double)x); }
    static inline float fg_log1pf1(float x) { return (float)fg_log1p1((double)x); }
    /* ---- float32: the same algorithms in single precision (8 lanes per AVX2 register) ---- */
    static inline float fg__asf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
    static inline uint32_t fg__asuf(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
    #define FG_MAGICF 12582912.0f          /* 1.5 * 2^23 */
    static inline float fg__pow2f(float km) { return fg__asf((fg__asuf(km) + 127u) << 23); }
    /* expm1(r) = r + r^2 P(r), |r| <= ln2/2, P of degree 4 (Chebyshev fit): 7.5e-8 relative */
    static inline float fg__expm1_polyf(float r) {
        float r2 = r * r;
        float a = 0.5f + r * 0.16666577756404877f;
        float b = 0.041666556149721146f + r * 0.008363173343241215f;
        float p = a + r2 * b + (r2 * r2) * 0.0013926175888627768f;
        return r + r2 * p;
    }
    #define FG_LOG2EF 1.44269504088896341f
    #define FG_LN2HIF 0.693359375f
    #define FG_LN2LOF -2.12194440e-4f
    static inline float fg_expf1(float x) {
        float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
        float km = xc * FG_LOG2EF + FG_MAGICF;
        float k = km - FG_MAGICF;
        float r = (xc - k * FG_LN2HIF) - k * FG_LN2LOF;
        float k1m = k * 0.5f + FG_MAGICF;
        float k1 = k1m - FG_MAGICF;
        float k2m = (k - k1) + FG_MAGICF;
        float y = (fg__expm1_polyf(r) + 1.0f) * fg__pow2f(k1m) * fg__pow2f(k2m);
        y = x > 88.72283935546875f ? INFINITY : y;
        return x < -103.972084045410f ? 0.0f : y;
    }
    static inline float fg_expm1f1(float x) {
        float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
        float km = xc * FG_LOG2EF + FG_MAGICF;
        float k = km - FG_MAGICF;
        float r = (xc - k * FG_LN2HIF) - k * FG_LN2LOF;
        float k1m = k * 0.5f + FG_MAGICF;
        float k1 = k1m - FG_MAGICF;
        float k2m = (k - k1) + FG_MAGICF;
        float q = fg__expm1_polyf(r);
        float s1 = fg__pow2f(k1m), s2 = fg__pow2f(k2m);
        float S = s1 * s2;
        float small = q * S + (S - 1.0f);           /* exact 2^k - 1 for k <= 24 */
        float big = ((q + 1.0f) * s1) * s2;
        float y = x > 16.0f ? big : small;
        y = x > 88.72283935546875f ? INFINITY : y;
        return x == 0.0f ? x : y;
    }
    /* tanh in float: the rational form of fg_tanh1 with fdlibm's expf coefficients. 3 ulp. */
    static inline float fg_tanhf1(float x) {
        uint32_t sign = fg__asuf(x) & 0x80000000u;
        float ax = fg__asf(fg__asuf(x) ^ sign);
        float y = ax + ax;
        y = 20.0f < y ? 20.0f : y;                  /* tanh(10) rounds to 1 in float */
        float km = y * FG_LOG2EF + FG_MAGICF;
        float k = km - FG_MAGICF;
        float r = (y - k * FG_LN2HIF) - k * FG_LN2LOF;
        float S = fg__pow2f(km);
        float t = r * r;
        float D = 2.0f - (r - t * (1.6666625440e-1f + t * -2.7667332906e-3f));
        float Sr = (S + S) * r;
        float q = ((S - 1.0f) * D + Sr) / ((S + 1.0f) * D + Sr);
        return fg__asf(fg__asuf(q) ^ sign);
    }
    /* sigmoid in float: fg_sigmoid1's rational form with tanhf's denominator; 2^(k+26) N is
       normal for every k >= -150. */
    static inline float fg_sigmoidf1(float x) {
        float z = -fabsf(x);
        float zc = z < -104.0f ? -104.0f : z;
        float km = zc * FG_LOG2EF + FG_MAGICF;
        float k = km - FG_MAGICF;
        float r = (zc - k * FG_LN2HIF) - k * FG_LN2LOF;
        float t = r * r;
        float D = 2.0f - (r - t * (1.6666625440e-1f + t * -2.7667332906e-3f));
        float SN = (D + 2.0f * r) * fg__pow2f(km + 26.0f);   /* e D 2^26 */
        float den = D + SN * 1.4901161193847656e-08f;
        int pos = x >= 0.0f;
        float q = (pos ? D : SN) / den;
        return q * (pos ? 1.0f : 1.4901161193847656e-08f);
    }
    #define FG_DEF_VLOOP(NAME, T, FN, SUF, ATTR) \
    ATTR static void fg_v##NAME##_##T##SUF(T##_t *d, const T##_t *a, Py_ssize_t n) { \
        for (Py_ssize_t i = 0; i < n; i++) d[i] = FN(a[i]); }
    #define FG_DEF_VLOOPS(NAME, FN, FNF, SUF, ATTR) \
        FG_DEF_VLOOP(NAME, d, FN, SUF, ATTR) FG_DEF_VLOOP(NAME, f, FNF, SUF, ATTR)
    typedef double d_t;
    typedef float f_t;
    /* float64 tanh and sigmoid are left out here: their AVX2 loops are written out below */
    #define FG_DEF_ALL(SUF, ATTR) \
        FG_DEF_VLOOPS(exp, fg_exp1, fg_expf1, SUF, ATTR) \
        FG_DEF_VLOOPS(expm1, fg_expm1_1, fg_expm1f1, SUF, ATTR) \
        FG_DEF_VLOOP(tanh, f, fg_tanhf1, SUF, ATTR) \
        FG_DEF_VLOOP(sigmoid, f, fg_sigmoidf1, SUF, ATTR) \
        FG_DEF_VLOOPS(log, fg_log1, fg_logf1, SUF, ATTR) \
        FG_DEF_VLOOPS(log1p, fg_log1p1, fg_log1pf1, SUF, ATTR)
    FG_DEF_ALL(_base, )
    FG_DEF_VLOOP(tanh, d, fg_tanh1, _base, )
    FG_DEF_VLOOP(sigmoid, d, fg_sigmoid1, _base, )
    #if FG_X86_DISPATCH
    FG_DEF_ALL(_avx2, FG_AVX2)
    /* float64 tanh and sigmoid with AVX2 intrinsics: fg_tanh1's and fg_sigmoid1's algorithms,
       4 lanes at a time.  GCC's vectorisation of the scalar code spilled constants to the stack
       and split (S - 1) D + 2 S r into a multiply and an FMA: these loops are ~20% (tanh) and
       ~5-10% (sigmoid) faster in cache (measured 1.07 vs 1.30-1.43 ns/element for tanh).
       tanh works on h = r / 2 (the range reduction of |x| rather than of 2|x|, exactly r / 2),
       with the polynomial's coefficients scaled by powers of two to match, so the numerator
       (S - 1) D' + 2 S h (D' = D / 2) is one FMA with an exact product.  Both loops are
       latency-bound (a ~60-cycle chain per 4 lanes, more than the out-of-order window hides),
       so the chain is kept short (|x| is taken beside the sign rather than from it, and D is
       one FMA, u p + (1 - h), instead of 1 - (h - u p): tanh ~6% and sigmoid ~4% faster, the
       same 2.4 and 2.2 ulp against long double) and three chains run side by side (below).
       Max error 2.4 ulp
       (3.4 for fg_tanh1).  A block's last n % 4 elements go through the same 4-lane code
       (padded), so an element's result does not depend on where it sits in a block. */
    #include <immintrin.h>
    #define FG__C4(v) _mm256_set1_pd(v)
    /* Each function below computes N independent groups of 4 lanes (N = 1..FG__NMAX, a constant
       once inlined), one statement at a time across the groups: the chains are latency-bound,
       and interleaving gives the out-of-order core independent work beside each of them.
       In cache, N = 3 against N = 1: tanh 1.04 -> 0.96 ns/element, sigmoid 1.30 -> 1.05 (N = 4
       spills too many registers).  Every lane runs the same instructions whatever N is, so the
       results do not depend on it. */
    #define FG__NMAX 3
    #define FG__EACH(S) _Pragma("GCC unroll 4") for (int j = 0; j < N; j++) { S; }
    /* The range reduction both share: X = K ln2 / SC + R, |R| <= ln2 / (2 SC), with
       KM = K + FG_MAGIC (K's integer in its low bits, for FG__POW2) and ln2 in two parts. */
    #define FG__REDUCE(X, KM, K, R, SC) \
        FG__EACH(KM[j] = _mm256_fmadd_pd(X[j], FG__C4(SC * FG_LOG2E), FG__C4(FG_MAGIC))) \
        FG__EACH(K[j] = _mm256_sub_pd(KM[j], FG__C4(FG_MAGIC))) \
        FG__EACH(R[j] = _mm256_fnmadd_pd(K[j], FG__C4(FG_LN2HI / SC), X[j])) \
        FG__EACH(R[j] = _mm256_fnmadd_pd(K[j], FG__C4(FG_LN2LO / SC), R[j]))
    /* F P(t), fg__exp_den's polynomial in t = r^2, evaluated from T = t / S2 (T2 = T^2): the
       coefficients scaled by F and powers of S2 (powers of two, so exactly) */
    #define FG__EXP_DEN_POLY(T, T2, PA, PB, P, F, S2) \
        FG__EACH(PA[j] = _mm256_fmadd_pd(T[j], FG__C4((F) * (S2) * FG__EXP_P2), \
                                         FG__C4((F) * FG__EXP_P1))) \
        FG__EACH(PB[j] = _mm256_fmadd_pd(T[j], FG__C4((F) * (S2) * (S2) * (S2) * FG__EXP_P4), \
                                         FG__C4((F) * (S2) * (S2) * FG__EXP_P3))) \
        FG__EACH(PB[j] = _mm256_fmadd_pd( \
            T2[j], FG__C4((F) * (S2) * (S2) * (S2) * (S2) * FG__EXP_P5), PB[j])) \
        FG__EACH(P[j] = _mm256_fmadd_pd(T2[j], PB[j], PA[j]))
    /* 2^(K + E) from KM = K + FG_MAGIC, built in the exponent field */
    #define FG__POW2(KM, E) _mm256_castsi256_pd(_mm256_slli_epi64( \
        _mm256_add_epi64(_mm256_castpd_si256(KM), _mm256_set1_epi64x(1023 + (E))), 52))
    FG_AVX2 static inline __attribute__((always_inline)) void fg__tanh4n(
            double *d, const double *a, const int N) {
        __m256d sign[FG__NMAX], ax[FG__NMAX], km[FG__NMAX], k[FG__NMAX], h[FG__NMAX];
        __m256d S[FG__NMAX], u[FG__NMAX], u2[FG__NMAX], pa[FG__NMAX], pb[FG__NMAX];
        __m256d p[FG__NMAX], D[FG__NMAX], Sh[FG__NMAX], num[FG__NMAX], den[FG__NMAX];
        FG__EACH(ax[j] = _mm256_loadu_pd(a + 4 * j))
        FG__EACH(sign[j] = _mm256_and_pd(ax[j], FG__C4(-0.0)))
        FG__EACH(ax[j] = _mm256_andnot_pd(FG__C4(-0.0), ax[j]))   /* |x|, beside the sign */
        FG__EACH(ax[j] = _mm256_min_pd(FG__C4(20.0), ax[j]))      /* (20 < ax) ? 20 : ax: NaN passes */
        FG__REDUCE(ax, km, k, h, 2.0)                            /* h = r / 2, r of 2|x| */
        FG__EACH(S[j] = FG__POW2(km[j], 0))
        FG__EACH(u[j] = _mm256_mul_pd(h[j], h[j]))
        FG__EACH(u2[j] = _mm256_mul_pd(u[j], u[j]))
        FG__EXP_DEN_POLY(u, u2, pa, pb, p, 2.0, 4.0)              /* 2 P(t), t = r^2 = 4u */
        FG__EACH(D[j] = _mm256_fmadd_pd(u[j], p[j], _mm256_sub_pd(FG__C4(1.0), h[j])))  /* D / 2 */
        FG__EACH(Sh[j] = _mm256_mul_pd(_mm256_add_pd(S[j], S[j]), h[j]))               /* exact */
        FG__EACH(num[j] = _mm256_fmadd_pd(_mm256_sub_pd(S[j], FG__C4(1.0)), D[j], Sh[j]))
        FG__EACH(den[j] = _mm256_fmadd_pd(_mm256_add_pd(S[j], FG__C4(1.0)), D[j], Sh[j]))
        FG__EACH(_mm256_storeu_pd(d + 4 * j, _mm256_xor_pd(_mm256_div_pd(num[j], den[j]), sign[j])))
    }
    FG_AVX2 static inline __attribute__((always_inline)) void fg__sigmoid4n(
            double *d, const double *a, const int N) {
        __m256d x[FG__NMAX], z[FG__NMAX], km[FG__NMAX], k[FG__NMAX], r[FG__NMAX];
        __m256d t[FG__NMAX], t2[FG__NMAX], pa[FG__NMAX], pb[FG__NMAX], p[FG__NMAX];
        __m256d D[FG__NMAX], S[FG__NMAX], SN[FG__NMAX], den[FG__NMAX], pos[FG__NMAX];
        FG__EACH(x[j] = _mm256_loadu_pd(a + 4 * j))
        FG__EACH(z[j] = _mm256_or_pd(x[j], FG__C4(-0.0)))               /* -|x| */
        FG__EACH(z[j] = _mm256_max_pd(FG__C4(-746.0), z[j]))             /* NaN passes */
        FG__REDUCE(z, km, k, r, 1.0)
        FG__EACH(t[j] = _mm256_mul_pd(r[j], r[j]))
        FG__EACH(t2[j] = _mm256_mul_pd(t[j], t[j]))
        FG__EXP_DEN_POLY(t, t2, pa, pb, p, 1.0, 1.0)
        FG__EACH(D[j] = _mm256_fmadd_pd(t[j], p[j], _mm256_sub_pd(FG__C4(2.0), r[j])))
        FG__EACH(S[j] = FG__POW2(km[j], 54))                              /* 2^(k+54) */
        FG__EACH(SN[j] = _mm256_mul_pd(_mm256_fmadd_pd(r[j], FG__C4(2.0), D[j]), S[j]))  /* e D 2^54 */
        FG__EACH(den[j] = _mm256_fmadd_pd(SN[j], FG__C4(5.551115123125783e-17), D[j]))
        FG__EACH(pos[j] = _mm256_cmp_pd(x[j], _mm256_setzero_pd(), _CMP_GE_OQ))
        FG__EACH(_mm256_storeu_pd(d + 4 * j, _mm256_mul_pd(
            _mm256_div_pd(_mm256_blendv_pd(SN[j], D[j], pos[j]), den[j]),
            _mm256_blendv_pd(FG__C4(5.551115123125783e-17), FG__C4(1.0), pos[j]))))
    }
    #define FG_DEF_V4LOOP(NAME, F4N) \
    FG_AVX2 static void fg_v##NAME##_d_avx2(double *d, const double *a, Py_ssize_t n) { \
        Py_ssize_t i = 0; \
        for (; i + 4 * FG__NMAX <= n; i += 4 * FG__NMAX) F4N(d + i, a + i, FG__NMAX); \
        for (; i + 4 <= n; i += 4) F4N(d + i, a + i, 1); \
        if (i < n) { \
            double t[4] = {0.0, 0.0, 0.0, 0.0}; \
            memcpy(t, a + i, (size_t)(n - i) * sizeof(double)); \
            F4N(t, t, 1); \
            memcpy(d + i, t, (size_t)(n - i) * sizeof(double)); } }
    FG_DEF_V4LOOP(tanh, fg__tanh4n)
    FG_DEF_V4LOOP(sigmoid, fg__sigmoid4n)
    #endif
    /* ---- the VM's implementations: (enum suffix, op name, arity), listed once.  Their
       numbers are private to this module; the opcode table maps onto them by name. ---- */
    #define FG_VM_OPS(X) \
        X(COPY, copy, 1) X(ADD, add, 2) X(SUBTRACT, subtract, 2) \
        X(MULTIPLY, multiply, 2) X(DIVIDE, divide, 2) X(POWER, power, 2) \
        X(NEGATIVE, negative, 1) X(ABS, abs, 1) X(SQUARE, square, 1) \
        X(RECIPROCAL, reciprocal, 1) X(MAXIMUM, maximum, 2) X(MINIMUM, minimum, 2) \
        X(SIGN, sign, 1) X(FLOOR, floor, 1) X(CEIL, ceil, 1) \
        X(SQRT, sqrt, 1) X(RELU, relu, 1) X(EXP, exp, 1) \
        X(EXPM1, expm1, 1) X(LOG, log, 1) X(LOG1P, log1p, 1) \
        X(SIN, sin, 1) X(COS, cos, 1) X(TAN, tan, 1) \
        X(TANH, tanh, 1) X(SINH, sinh, 1) X(COSH, cosh, 1) \
        X(ARCTAN, arctan, 1) X(SIGMOID, sigmoid, 1) X(SOFTPLUS, softplus, 1) \
        X(ERF, erf, 1) X(LESS, less, 2) X(LESS_EQUAL, less_equal, 2) \
        X(GREATER, greater, 2) X(GREATER_EQUAL, greater_equal, 2) X(EQUAL, equal, 2) \
        X(NOT_EQUAL, not_equal, 2) X(WHERE, where, 3) X(CLIP, clip, 3) \
        X(FMA, fma, 3) X(SELECT, select, 3) X(TANH_GRAD, tanh_grad, 2) \
        X(SIGMOID_GRAD, sigmoid_grad, 2) X(NFMA, nfma, 3) X(MUL_GREATER, mul_greater, 3)
    #define FG_VM_ENUM(N, name, arity) K_##N,
    #define FG_VM_NAME(N, name, arity) #name,
    #define FG_VM_ARITY(N, name, arity) arity,
    enum { K_NONE = 0, FG_VM_OPS(FG_VM_ENUM) K_END };
    static const char *fg_vm_names[] = { "", FG_VM_OPS(FG_VM_NAME) };
    static const int fg_vm_arity[] = { 0, FG_VM_OPS(FG_VM_ARITY) };
    /* ---- the block loops of the VM's plain ("c") ops.  Written once here and compiled twice,
       baseline and AVX2, like the transcendentals above.  Never contracted into FMA
       instructions: a*b+c must round twice, exactly as the unfused NumPy ops do. ---- */
    #include "_grad_rules.h"     /* tanh_grad, sigmoid_grad, mul_greater: shared with the tape */
    #include "_fp_exact_begin.h"
    #if defined(__GNUC__) && !defined(__clang__)
    #  pragma GCC optimize("no-math-errno")
    #endif
    /* Operands are read into locals before a select so that both sides are plain loads (which
       lets the compiler if-convert and vectorise); the block registers are always readable. */
    #define FG_LOOP(EXPR) for (Py_ssize_t i = 0; i < n; i++) { \
            elem x = a[i]; (void)x; EXPR; } return 1;
    #define FG_DEF_ARITH(T, SUF, ATTR, SQRT, FLOOR, CEIL, FABS) \
    ATTR static int fg_arith_##T##SUF(int k, T *d, const T *a, const T *b, const T *c, \
                                      Py_ssize_t n) { \
        typedef T elem; \
        const T zero = 0, one = 1; \
        switch (k) { \
        case K_COPY: FG_LOOP(d[i] = x) \
        case K_ADD: FG_LOOP(d[i] = x + b[i]) \
        case K_SUBTRACT: FG_LOOP(d[i] = x - b[i]) \
        case K_MULTIPLY: FG_LOOP(d[i] = x * b[i]) \
        case K_DIVIDE: FG_LOOP(d[i] = x / b[i]) \
        case K_FMA: FG_LOOP(elem p = x * b[i]; d[i] = p + c[i]) \
        case K_NFMA: FG_LOOP(elem p = x * b[i]; d[i] = c[i] - p) \
        case K_MUL_GREATER: FG_LOOP(elem y = b[i]; elem z = c[i]; \
                                    d[i] = FG_MUL_GREATER(elem, x, y, z)) \
        case K_NEGATIVE: FG_LOOP(d[i] = -x) \
        case K_SQUARE: FG_LOOP(d[i] = x * x) \
        case K_RECIPROCAL: FG_LOOP(d[i] = one / x) \
        case K_ABS: FG_LOOP(d[i] = FABS(x)) \
        case K_SQRT: FG_LOOP(d[i] = SQRT(x)) \
        case K_FLOOR: FG_LOOP(d[i] = FLOOR(x)) \
        case K_CEIL: FG_LOOP(d[i] = CEIL(x)) \
        case K_MAXIMUM: FG_LOOP(elem y = b[i]; d[i] = (x >= y || x != x) ? x : y) \
        case K_MINIMUM: FG_LOOP(elem y = b[i]; d[i] = (x <= y || x != x) ? x : y) \
        case K_RELU: FG_LOOP(d[i] = x <= zero ? zero : x) \
        case K_SIGN: FG_LOOP(d[i] = x > zero ? one : (x < zero ? -one : (x == zero ? zero : x))) \
        case K_LESS: FG_LOOP(d[i] = x < b[i] ? one : zero) \
        case K_LESS_EQUAL: FG_LOOP(d[i] = x <= b[i] ? one : zero) \
        case K_GREATER: FG_LOOP(d[i] = x > b[i] ? one : zero) \
        case K_GREATER_EQUAL: FG_LOOP(d[i] = x >= b[i] ? one : zero) \
        case K_EQUAL: FG_LOOP(d[i] = x == b[i] ? one : zero) \
        case K_NOT_EQUAL: FG_LOOP(d[i] = x != b[i] ? one : zero) \
        case K_WHERE: case K_SELECT: FG_LOOP(elem y = b[i]; elem z = c[i]; d[i] = x != zero ? y : z) \
        case K_CLIP: FG_LOOP(elem lo = b[i]; elem hi = c[i]; \
                             x = (x >= lo || x != x) ? x : lo; d[i] = (x <= hi || x != x) ? x : hi) \
        case K_TANH_GRAD: FG_LOOP(d[i] = FG_TANH_GRAD(elem, x, b[i])) \
        case K_SIGMOID_GRAD: FG_LOOP(d[i] = FG_SIGMOID_GRAD(elem, x, b[i])) \
        default: return 0; \
        } }
    FG_DEF_ARITH(double, _base, , sqrt, floor, ceil, fabs)
    FG_DEF_ARITH(float, _base, , sqrtf, floorf, ceilf, fabsf)
    #if FG_X86_DISPATCH
    FG_DEF_ARITH(double, _avx2, FG_AVX2, sqrt, floor, ceil, fabs)
    FG_DEF_ARITH(float, _avx2, FG_AVX2, sqrtf, floorf, ceilf, fabsf)
    #endif
    #include "_fp_exact_end.h"
    #if defined(__GNUC__) && !defined(__clang__)
    #  pragma GCC pop_options
    #endif
    /* runtime dispatch: AVX2+FMA copies when the CPU has them (chosen at import; tests
       can run the baseline copy, _set_vec_isa) */
    static int fg_vec_avx2 = 0;
    static int fg_vec_init(void) {
        fg_vec_avx2 = fg_cpu_avx2_fma();
        return fg_vec_avx2;
    }
    #if FG_X86_DISPATCH
    #  define FG_DISPATCH(NAME, T) \
        static void fg_v##NAME##_##T(T##_t *d, const T##_t *a, Py_ssize_t n) { \
            if (fg_vec_avx2) fg_v##NAME##_##T##_avx2(d, a, n); else fg_v##NAME##_##T##_base(d, a, n); }
    #else
    #  define FG_DISPATCH(NAME, T) \
        static void fg_v##NAME##_##T(T##_t *d, const T##_t *a, Py_ssize_t n) { \
            fg_v##NAME##_##T##_base(d, a, n); }
    #endif
    /* Streaming (non-temporal) copy of a finished block into a large output: the output's
       cache lines are not read first (saves 1/3 of its memory traffic) nor kept in cache. */
    #if defined(__SSE2__) || defined(_M_X64)
    #  include <emmintrin.h>
    static void fg_stream_d(double *dst, const double *src, Py_ssize_t n) {
        Py_ssize_t i = 0;
        if ((((uintptr_t)dst) & 15) == 0)
            for (; i + 2 <= n; i += 2) _mm_stream_pd(dst + i, _mm_loadu_pd(src + i));
        for (; i < n; i++) dst[i] = src[i];
    }
    static void fg_stream_f(float *dst, const float *src, Py_ssize_t n) {
        Py_ssize_t i = 0;
        if ((((uintptr_t)dst) & 15) == 0)
            for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
        for (; i < n; i++) dst[i] = src[i];
    }
    static void fg_sfence(void) { _mm_sfence(); }
    #else
    static void fg_stream_d(double *dst, const double *src, Py_ssize_t n) {
        memcpy(dst, src, (size_t)n * sizeof(double)); }
    static void fg_stream_f(float *dst, const float *src, Py_ssize_t n) {
        memcpy(dst, src, (size_t)n * sizeof(float)); }
    static void fg_sfence(void) { }
    #endif
    #if FG_X86_DISPATCH
    #  define FG_DISPATCH_ARITH(T) \
        static int fg_arith_##T(int k, T *d, const T *a, const T *b, const T *c, Py_ssize_t n) { \
            return fg_vec_avx2 ? fg_arith_##T##_avx2(k, d, a, b, c, n) \
                               : fg_arith_##T##_base(k, d, a, b, c, n); }
    #else
    #  define FG_DISPATCH_ARITH(T) \
        static int fg_arith_##T(int k, T *d, const T *a, const T *b, const T *c, Py_ssize_t n) { \
            return fg_arith_##T##_base(k, d, a, b, c, n); }
    #endif
    FG_DISPATCH_ARITH(double) FG_DISPATCH_ARITH(float)
    FG_DISPATCH(exp, d) FG_DISPATCH(exp, f)
    FG_DISPATCH(expm1, d) FG_DISPATCH(expm1, f)
    FG_DISPATCH(tanh, d) FG_DISPATCH(tanh, f)
    FG_DISPATCH(sigmoid, d) FG_DISPATCH(sigmoid, f)
    FG_DISPATCH(log, d) FG_DISPATCH(log, f)
    FG_DISPATCH(log1p, d) FG_DISPATCH(log1p, f)
    """
    void fg_vexp_d(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_vexp_f(float*, const float*, Py_ssize_t) noexcept nogil
    void fg_vexpm1_d(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_vexpm1_f(float*, const float*, Py_ssize_t) noexcept nogil
    void fg_vtanh_d(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_vtanh_f(float*, const float*, Py_ssize_t) noexcept nogil
    void fg_vsigmoid_d(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_vsigmoid_f(float*, const float*, Py_ssize_t) noexcept nogil
    void fg_vlog_d(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_vlog_f(float*, const float*, Py_ssize_t) noexcept nogil
    void fg_vlog1p_d(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_vlog1p_f(float*, const float*, Py_ssize_t) noexcept nogil
    int fg_arith_double(int, double*, const double*, const double*, const double*,
                        Py_ssize_t) noexcept nogil
    int fg_arith_float(int, float*, const float*, const float*, const float*,
                       Py_ssize_t) noexcept nogil
    const char* fg_vm_names[]
    const int fg_vm_arity[]
    cdef enum:      # the implementations this module names (all of them: FG_VM_OPS above)
        K_POWER, K_EXP, K_EXPM1, K_LOG, K_LOG1P, K_SIN, K_COS, K_TAN, K_TANH, K_SINH, K_COSH,
        K_ARCTAN, K_SIGMOID, K_SOFTPLUS, K_ERF, K_END
    int fg_vec_init() noexcept nogil
    void fg_stream_d(double*, const double*, Py_ssize_t) noexcept nogil
    void fg_stream_f(float*, const float*, Py_ssize_t) noexcept nogil
    void fg_sfence() noexcept nogil
    int fg_vec_avx2


_CPU_ISA = "avx2+fma" if fg_vec_init() else "baseline"


def vec_isa():
    """Which copy of the "vec" kernels runs: ``"avx2+fma"`` or ``"baseline"``."""
    return "avx2+fma" if fg_vec_avx2 else "baseline"


def _set_vec_isa(str isa):
    """Run the ``"baseline"`` copy of the vec and arithmetic loops, or the CPU's own (``"cpu"``)
    -- for tests: on an AVX2 machine the baseline copy (and the scalar float64 tanh/sigmoid,
    which the AVX2 copy does not share) would otherwise never run.  Not thread-safe: switch
    only while no kernel runs."""
    global fg_vec_avx2
    if isa not in ("baseline", "cpu"):
        raise ValueError(f"isa must be 'baseline' or 'cpu', got {isa!r}")
    fg_vec_avx2 = 0 if isa == "baseline" else int(_CPU_ISA == "avx2+fma")

# --------------------------------------------------------------------------------------------
# The VM's implementations, in K order (K = position + 1), read from FG_VM_OPS in the C block.
# Their numbers are private; the table's opcodes map onto them by name.
# --------------------------------------------------------------------------------------------
_VM_IMPLEMENTS = tuple(fg_vm_names[k].decode() for k in range(1, K_END))
_VM_ARITY = {name: fg_vm_arity[k + 1] for k, name in enumerate(_VM_IMPLEMENTS)}
# ops that have a "vec" implementation
_VM_VEC = frozenset({"exp", "expm1", "tanh", "sigmoid", "softplus", "log", "log1p"})

cdef enum:
    MAXOP = 256

# table opcode -> VM implementation; VM implementation -> NumPy inner loops (per dtype)
cdef int _code_map[MAXOP]
cdef int _arity[MAXOP]
cdef loop_t _loop_d[MAXOP]
cdef void* _loopdata_d[MAXOP]
cdef loop_t _loop_f[MAXOP]
cdef void* _loopdata_f[MAXOP]
# the exp / log1p loops used inside composite ops (sigmoid, softplus)
cdef int MODE_C = 0
cdef int MODE_VEC = 1
cdef int MODE_UFUNC = 2


def _init_tables():
    from fastgraph.fused import opcodes as _op
    cdef int i, k
    for i in range(MAXOP):
        _code_map[i] = 0
        _arity[i] = 0
        _loop_d[i] = NULL
        _loop_f[i] = NULL
        _loopdata_d[i] = NULL
        _loopdata_f[i] = NULL
    vm_names = {name: i + 1 for i, name in enumerate(_VM_IMPLEMENTS)}
    table_names = {op.name for op in _op.OPCODES}
    missing = sorted(table_names - set(vm_names))
    extra = sorted(set(vm_names) - table_names)
    if missing or extra:
        raise ImportError(
            f"fastgraph._fused: opcode table and VM disagree; table ops the VM lacks: {missing}, "
            f"VM ops missing from the table: {extra}")
    for op in _op.OPCODES:
        if not (0 < op.code < MAXOP):
            raise ImportError(f"fastgraph._fused: opcode {op.code} of {op.name!r} out of range")
        if _VM_ARITY[op.name] != op.arity:
            raise ImportError(f"fastgraph._fused: arity of {op.name!r} differs "
                              f"(table {op.arity}, VM {_VM_ARITY[op.name]})")
        k = vm_names[op.name]
        _code_map[op.code] = k
        _arity[k] = op.arity
    # NumPy inner loops, resolved once (by VM implementation, so composites can reuse exp/log1p)
    for op in _op.OPCODES:
        if op.ufunc is None or op.arity > 2:
            continue
        uf = getattr(np, op.ufunc)
        k = vm_names[op.name]
        find_loop(uf, op.arity + 1, cnp.NPY_DOUBLE, &_loop_d[k], &_loopdata_d[k])
        find_loop(uf, op.arity + 1, cnp.NPY_FLOAT, &_loop_f[k], &_loopdata_f[k])
    # log1p is needed by softplus even if its own entry changes
    if _loop_d[K_LOG1P] == NULL:
        find_loop(np.log1p, 2, cnp.NPY_DOUBLE, &_loop_d[K_LOG1P], &_loopdata_d[K_LOG1P])
        find_loop(np.log1p, 2, cnp.NPY_FLOAT, &_loop_f[K_LOG1P], &_loopdata_f[K_LOG1P])
    if _loop_d[K_EXP] == NULL:
        find_loop(np.exp, 2, cnp.NPY_DOUBLE, &_loop_d[K_EXP], &_loopdata_d[K_EXP])
        find_loop(np.exp, 2, cnp.NPY_FLOAT, &_loop_f[K_EXP], &_loopdata_f[K_EXP])


_init_tables()


def vm_opcode_map():
    """``{table opcode number: VM implementation name}`` as the VM resolved it at import."""
    return {i: _VM_IMPLEMENTS[_code_map[i] - 1] for i in range(MAXOP) if _code_map[i]}


def vm_has_vec(name):
    """Whether the VM has a "vec" (own vectorised) implementation of op ``name``."""
    return name in _VM_VEC


def ufunc_loop_available(name, dtype):
    """Whether NumPy's inner loop for op ``name`` was found for ``dtype`` (float32/float64)."""
    cdef int k
    if name not in _VM_IMPLEMENTS:
        raise KeyError(name)
    k = _VM_IMPLEMENTS.index(name) + 1
    if np.dtype(dtype) == np.float64:
        return _loop_d[k] != NULL
    if np.dtype(dtype) == np.float32:
        return _loop_f[k] != NULL
    return False


# --------------------------------------------------------------------------------------------
# elementwise kernels on one block
# --------------------------------------------------------------------------------------------
cdef inline void _call_loop(loop_t fn, void* data, int nin, real* d, real* a, real* b,
                            Py_ssize_t n) noexcept nogil:
    cdef char* args[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    dims[0] = n
    steps[0] = sizeof(real)
    steps[1] = sizeof(real)
    steps[2] = sizeof(real)
    args[0] = <char*>a
    if nin == 1:
        args[1] = <char*>d
    else:
        args[1] = <char*>b
        args[2] = <char*>d
    fn(args, dims, steps, data)


cdef inline loop_t _loop_of(int k, real* dummy) noexcept nogil:
    if real is double:
        return _loop_d[k]
    else:
        return _loop_f[k]


cdef inline void* _loopdata_of(int k, real* dummy) noexcept nogil:
    if real is double:
        return _loopdata_d[k]
    else:
        return _loopdata_f[k]


cdef void _vexp(real* d, real* a, Py_ssize_t n) noexcept nogil:
    if real is double:
        fg_vexp_d(d, a, n)
    else:
        fg_vexp_f(d, a, n)


cdef void _transcendental(int k, int mode, real* d, real* a, Py_ssize_t n) noexcept nogil:
    """d = f_k(a) for a unary transcendental, by the requested strategy."""
    cdef Py_ssize_t i
    cdef loop_t fn = _loop_of(k, d)
    if mode == MODE_UFUNC and fn != NULL:
        _call_loop(fn, _loopdata_of(k, d), 1, d, a, <real*>NULL, n)
        return
    if mode == MODE_VEC:
        if k == K_EXP:
            _vexp(d, a, n)
            return
        if k == K_EXPM1:
            if real is double:
                fg_vexpm1_d(d, a, n)
            else:
                fg_vexpm1_f(d, a, n)
            return
        if k == K_TANH:
            if real is double:
                fg_vtanh_d(d, a, n)
            else:
                fg_vtanh_f(d, a, n)
            return
        if k == K_LOG:
            if real is double:
                fg_vlog_d(d, a, n)
            else:
                fg_vlog_f(d, a, n)
            return
        if k == K_LOG1P:
            if real is double:
                fg_vlog1p_d(d, a, n)
            else:
                fg_vlog1p_f(d, a, n)
            return
    # libm, in double
    if k == K_EXP:
        for i in range(n):
            d[i] = <real>exp(<double>a[i])
    elif k == K_EXPM1:
        for i in range(n):
            d[i] = <real>expm1(<double>a[i])
    elif k == K_LOG:
        for i in range(n):
            d[i] = <real>log(<double>a[i])
    elif k == K_LOG1P:
        for i in range(n):
            d[i] = <real>log1p(<double>a[i])
    elif k == K_SIN:
        for i in range(n):
            d[i] = <real>sin(<double>a[i])
    elif k == K_COS:
        for i in range(n):
            d[i] = <real>cos(<double>a[i])
    elif k == K_TAN:
        for i in range(n):
            d[i] = <real>tan(<double>a[i])
    elif k == K_TANH:
        for i in range(n):
            d[i] = <real>tanh(<double>a[i])
    elif k == K_SINH:
        for i in range(n):
            d[i] = <real>sinh(<double>a[i])
    elif k == K_COSH:
        for i in range(n):
            d[i] = <real>cosh(<double>a[i])
    elif k == K_ARCTAN:
        for i in range(n):
            d[i] = <real>atan(<double>a[i])
    elif k == K_ERF:
        for i in range(n):
            d[i] = <real>erf(<double>a[i])


cdef void _exec(int k, int mode, real* d, real* a, real* b, real* c,
                Py_ssize_t n) noexcept nogil:
    """One instruction on one block: d[:n] = op_k(a, b, c)."""
    cdef Py_ssize_t i
    cdef real x, e, r, zero = 0, one = 1
    cdef loop_t fn
    if mode == MODE_UFUNC and _arity[k] == 2:
        fn = _loop_of(k, d)
        if fn != NULL:
            _call_loop(fn, _loopdata_of(k, d), 2, d, a, b, n)
            return
    if real is double:
        if fg_arith_double(k, d, a, b, c, n):
            return
    else:
        if fg_arith_float(k, d, a, b, c, n):
            return
    if k == K_POWER:
        for i in range(n):
            d[i] = <real>pow(<double>a[i], <double>b[i])
    elif k == K_SIGMOID:
        if mode == MODE_VEC:
            if real is double:
                fg_vsigmoid_d(d, a, n)
            else:
                fg_vsigmoid_f(d, a, n)
        else:
            for i in range(n):
                d[i] = -fabs(a[i])
            _transcendental(K_EXP, mode, d, d, n)
            for i in range(n):
                e = d[i]
                r = one / (one + e)
                d[i] = r if a[i] >= zero else e * r
    elif k == K_SOFTPLUS:
        # log1p(exp(-|a|)) + max(a, 0), in two in-place passes over d
        for i in range(n):
            d[i] = -fabs(a[i])
        _transcendental(K_EXP, mode, d, d, n)
        _transcendental(K_LOG1P, mode, d, d, n)
        for i in range(n):
            x = a[i]
            d[i] = d[i] + (x if x > zero else zero)
    else:
        _transcendental(k, mode, d, a, n)


# --------------------------------------------------------------------------------------------
# gather / scatter of strided operands
# --------------------------------------------------------------------------------------------
cdef enum:
    MAXDIMS = 64

cdef void _gather(real* dst, real* base, const Py_ssize_t* strides, const Py_ssize_t* shape,
                  int nd, Py_ssize_t start, Py_ssize_t n, bint scatter) noexcept nogil:
    """dst[0:n] = operand[start:start+n] in flat C order (or the reverse when ``scatter``)."""
    cdef Py_ssize_t idx[MAXDIMS]
    cdef Py_ssize_t off = 0, rem = start, pos = 0, cnt, j, inner, st
    cdef int dd
    cdef real* p
    for dd in range(nd - 1, -1, -1):
        idx[dd] = rem % shape[dd]
        rem = rem // shape[dd]
        off += idx[dd] * strides[dd]
    inner = shape[nd - 1]
    st = strides[nd - 1]
    while pos < n:
        cnt = inner - idx[nd - 1]
        if cnt > n - pos:
            cnt = n - pos
        p = base + off
        if scatter:
            if st == 1:
                for j in range(cnt):
                    p[j] = dst[pos + j]
            else:
                for j in range(cnt):
                    p[j * st] = dst[pos + j]
        else:
            if st == 1:
                for j in range(cnt):
                    dst[pos + j] = p[j]
            elif st == 0:
                for j in range(cnt):
                    dst[pos + j] = p[0]
            else:
                for j in range(cnt):
                    dst[pos + j] = p[j * st]
        pos += cnt
        if pos >= n:
            break
        # advance the multi-index by cnt along the innermost dim, carrying outwards
        off += cnt * st
        idx[nd - 1] += cnt
        dd = nd - 1
        while dd > 0 and idx[dd] >= shape[dd]:
            off -= shape[dd] * strides[dd]
            idx[dd] = 0
            dd -= 1
            idx[dd] += 1
            off += strides[dd]


# --------------------------------------------------------------------------------------------
# the block interpreter
# --------------------------------------------------------------------------------------------
#: limits checked at the Python boundary: with them a thread's scratch (``nregs * block *
#: itemsize``, times the thread count) can never overflow ``size_t``
MAX_BLOCK = 1 << 20
MAX_REGS = 1 << 20

cdef enum:
    IN_UNUSED = 0
    IN_CONTIG = 1
    IN_SCALAR = 2
    IN_STRIDED = 3
    OUT_CONTIG = 0
    OUT_SCATTER = 1
    OUT_REDUCED = 2
    OUT_STREAM = 3
    RED_NONE = 0
    RED_SUM = 1
    RED_MEAN = 2
    RED_MAX = 3
    RED_MIN = 4

cdef struct Ctx:
    int nd
    Py_ssize_t* shape
    Py_ssize_t N
    Py_ssize_t B
    Py_ssize_t nblocks
    Py_ssize_t R            # reduction row length (flat), 0 when no reduction
    int nin
    int nout
    int nred
    int nregs
    int ninstr
    int* code               # ninstr x 6: k, mode, dst, a, b, c
    int* in_reg
    int* in_mode
    char** in_base
    Py_ssize_t* in_str      # nin x nd, in elements
    int* out_reg
    int* out_mode
    int* out_red            # RED_* per output
    int* out_redidx         # index among reduced outputs
    char** out_base
    Py_ssize_t* out_str     # nout x nd, in elements
    char* scratch           # nthreads x nregs x B elements (aligned)
    void** regp             # nthreads x regstride pointers (own cache lines per thread)
    int regstride
    double* head_val        # nblocks x nred
    double* tail_val
    Py_ssize_t* head_row    # nblocks
    Py_ssize_t* tail_row


cdef inline double _red_combine(int kind, double acc, double v) noexcept nogil:
    if kind == RED_MAX:
        return v if (v > acc or v != v) else acc
    if kind == RED_MIN:
        return v if (v < acc or v != v) else acc
    return acc + v


cdef double _red_block(int kind, real* v, Py_ssize_t n) noexcept nogil:
    """Reduce v[0:n] in a fixed order: sums in 16 interleaved double accumulators (element i
    into accumulator i % 16, which the compiler keeps in four AVX registers: with 4 the adds
    were one dependent chain per register and ran at ~1 element per cycle), then added
    pairwise; the tail goes into accumulator 0."""
    cdef Py_ssize_t i = 0
    cdef int j
    cdef double acc[16]
    cdef double m, x
    if kind == RED_SUM or kind == RED_MEAN:
        for j in range(16):
            acc[j] = 0
        while i + 16 <= n:
            for j in range(16):
                acc[j] += v[i + j]
            i += 16
        while i < n:
            acc[0] += v[i]
            i += 1
        for j in range(8):
            acc[j] += acc[j + 8]
        for j in range(4):
            acc[j] += acc[j + 4]
        return (acc[0] + acc[2]) + (acc[1] + acc[3])
    m = v[0]
    for i in range(1, n):
        x = v[i]
        if kind == RED_MAX:
            if x > m or x != x:
                m = x
        else:
            if x < m or x != x:
                m = x
    return m


cdef inline void _red_store(Ctx* c, int k, Py_ssize_t row, double val, real* dummy) noexcept nogil:
    if c.out_red[k] == RED_MEAN:
        val = val / <double>c.R
    (<real*>c.out_base[k])[row] = <real>val


cdef void _run_block(Ctx* c, real* scratch, int tid, Py_ssize_t b) noexcept nogil:
    cdef Py_ssize_t s = b * c.B
    cdef Py_ssize_t n = c.N - s
    cdef Py_ssize_t r0, r1, pos, row
    cdef real** regs = <real**>c.regp + tid * c.regstride
    cdef real* tscratch = scratch + <Py_ssize_t>tid * c.nregs * c.B
    cdef int i, r, k, m, ired
    cdef int* ins
    cdef real* v
    if n > c.B:
        n = c.B
    # inputs
    for i in range(c.nin):
        r = c.in_reg[i]
        m = c.in_mode[i]
        if m == IN_CONTIG:
            regs[r] = (<real*>c.in_base[i]) + s
        elif m == IN_STRIDED:
            regs[r] = tscratch + r * c.B
            _gather(regs[r], <real*>c.in_base[i], c.in_str + i * c.nd, c.shape, c.nd, s, n, False)
        # IN_SCALAR registers were filled once per thread; IN_UNUSED have no register
    # outputs written in place when contiguous
    for k in range(c.nout):
        r = c.out_reg[k]
        if c.out_mode[k] == OUT_CONTIG:
            regs[r] = (<real*>c.out_base[k]) + s
        else:
            regs[r] = tscratch + r * c.B
    # the program
    for i in range(c.ninstr):
        ins = c.code + 6 * i
        _exec(ins[0], ins[1], regs[ins[2]], regs[ins[3]],
              regs[ins[4]] if ins[4] >= 0 else <real*>NULL,
              regs[ins[5]] if ins[5] >= 0 else <real*>NULL, n)
    # write back
    for k in range(c.nout):
        m = c.out_mode[k]
        r = c.out_reg[k]
        if m == OUT_STREAM:
            if real is double:
                fg_stream_d((<double*>c.out_base[k]) + s, regs[r], n)
            else:
                fg_stream_f((<float*>c.out_base[k]) + s, regs[r], n)
        elif m == OUT_SCATTER:
            _gather(regs[r], <real*>c.out_base[k], c.out_str + k * c.nd, c.shape, c.nd, s, n, True)
        elif m == OUT_REDUCED:
            v = regs[r]
            ired = c.out_redidx[k]
            r0 = s // c.R
            r1 = (s + n - 1) // c.R
            if r0 == r1:
                c.head_val[b * c.nred + ired] = _red_block(c.out_red[k], v, n)
                c.head_row[b] = r0
                c.tail_row[b] = -1
            else:
                pos = (r0 + 1) * c.R - s
                c.head_val[b * c.nred + ired] = _red_block(c.out_red[k], v, pos)
                c.head_row[b] = r0
                for row in range(r0 + 1, r1):
                    _red_store(c, k, row, _red_block(c.out_red[k], v + pos, c.R), v)
                    pos += c.R
                c.tail_val[b * c.nred + ired] = _red_block(c.out_red[k], v + pos, n - pos)
                c.tail_row[b] = r1


cdef void _run_all(Ctx* c, real* scratch, int nthreads) noexcept nogil:
    cdef Py_ssize_t b, j, row, cur
    cdef int t, i, r, k, ired
    cdef real* reg
    cdef real val
    cdef double acc
    cdef double* accs
    # broadcast scalars: filled once per thread, as far as a block reaches (a short call
    # need not fill all of it)
    cdef Py_ssize_t fill = c.B if c.N > c.B else c.N
    for t in range(nthreads):
        for i in range(c.nin):
            if c.in_mode[i] == IN_SCALAR:
                r = c.in_reg[i]
                reg = scratch + (<Py_ssize_t>t * c.nregs + r) * c.B
                val = (<real*>c.in_base[i])[0]
                for j in range(fill):
                    reg[j] = val
                (<real**>c.regp)[t * c.regstride + r] = reg
    if nthreads <= 1:
        for b in range(c.nblocks):
            _run_block(c, scratch, 0, b)
    else:
        # guided: large contiguous chunks first, small ones at the end, so a thread that the OS
        # preempts (busy machine) does not hold everyone up.  Blocks are fixed, so results do
        # not depend on which thread ran which block.
        for b in prange(c.nblocks, schedule='guided', num_threads=nthreads):
            _run_block(c, scratch, threadid(), b)
    fg_sfence()
    if c.nred == 0:
        return
    # combine per-block partials sequentially, in block order (independent of thread count)
    for k in range(c.nout):
        if c.out_mode[k] != OUT_REDUCED:
            continue
        ired = c.out_redidx[k]
        cur = -1
        acc = 0
        for b in range(c.nblocks):
            row = c.head_row[b]
            if row == cur:
                acc = _red_combine(c.out_red[k], acc, c.head_val[b * c.nred + ired])
            else:
                if cur >= 0:
                    _red_store(c, k, cur, acc, scratch)
                cur = row
                acc = c.head_val[b * c.nred + ired]
            row = c.tail_row[b]
            if row >= 0:
                if row == cur:
                    acc = _red_combine(c.out_red[k], acc, c.tail_val[b * c.nred + ired])
                else:
                    if cur >= 0:
                        _red_store(c, k, cur, acc, scratch)
                    cur = row
                    acc = c.tail_val[b * c.nred + ired]
        if cur >= 0:
            _red_store(c, k, cur, acc, scratch)


cdef void _fill_const(real* reg, double v, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    cdef real x = <real>v
    for j in range(n):
        reg[j] = x


cdef struct Work:
    # per-thread register scratch + register-pointer tables, cached on a Program between calls
    char* raw               # malloc'd block (cap bytes); scratch = raw aligned to 64
    size_t cap
    char* scratch
    void** regp
    Py_ssize_t regp_cap     # pointers
    Py_ssize_t cfill_isz    # constants are filled for this itemsize and block ...
    Py_ssize_t cfill_block
    int cfill_nt            # ... in the first cfill_nt threads' rows
    # tables of the flat (1-D contiguous) path, sized for the program's nin/nout
    bint tab_ok
    char** in_base
    char** out_base
    int* imode
    int* omode
    int* ored
    int* oridx
    Py_ssize_t* ones


cdef inline void _work_free(Work* w) noexcept:
    free(w.raw)
    free(w.regp)
    free(w.in_base)
    free(w.out_base)
    free(w.imode)
    free(w.omode)
    free(w.ored)
    free(w.oridx)
    free(w.ones)
    w.in_base = NULL
    w.out_base = NULL
    w.imode = NULL
    w.omode = NULL
    w.ored = NULL
    w.oridx = NULL
    w.ones = NULL
    w.tab_ok = False
    w.raw = NULL
    w.regp = NULL
    w.cap = 0
    w.regp_cap = 0
    w.cfill_nt = 0


cdef int _work_prepare(Work* w, int nt, int nregs, int regstride, Py_ssize_t block,
                       Py_ssize_t isz, int nconst, int* const_reg,
                       double* const_val) except -1 nogil:
    """Make ``w`` hold scratch for ``nt`` threads (growing it when needed), point every register
    at its own scratch row and make sure the constant registers hold their values."""
    cdef size_t need = <size_t>nt * nregs * block * isz + 64
    cdef Py_ssize_t nptr = <Py_ssize_t>nt * regstride
    cdef int t, i, j
    cdef char* row
    if need > w.cap:
        free(w.raw)
        w.raw = <char*>malloc(need)
        w.cfill_nt = 0
        if w.raw == NULL:
            w.cap = 0
            with gil:
                raise MemoryError()
        w.cap = need
        w.scratch = <char*>((<uintptr_t>w.raw + 63) & ~(<uintptr_t>63))
    if nptr > w.regp_cap:
        free(w.regp)
        w.regp = <void**>malloc(sizeof(void*) * (nptr + 1))
        if w.regp == NULL:
            w.regp_cap = 0
            with gil:
                raise MemoryError()
        w.regp_cap = nptr
    if w.cfill_isz != isz or w.cfill_block != block:
        w.cfill_isz = isz
        w.cfill_block = block
        w.cfill_nt = 0
    for t in range(nt):
        for j in range(nregs):
            w.regp[t * regstride + j] = w.scratch + (<Py_ssize_t>t * nregs + j) * block * isz
    # constant registers: filled once per thread row, then kept (no instruction writes them)
    while w.cfill_nt < nt:
        t = w.cfill_nt
        for i in range(nconst):
            j = const_reg[i]
            row = w.scratch + (<Py_ssize_t>t * nregs + j) * block * isz
            if isz == 8:
                _fill_const(<double*>row, const_val[i], block)
            else:
                _fill_const(<float*>row, const_val[i], block)
        w.cfill_nt += 1
    return 0




#: iteration spaces and operand extents are limited to 2^56 elements, so that every offset
#: computed below (times an itemsize of 8) fits in a Py_ssize_t
cdef double _MAX_SPAN = 72057594037927936.0


cdef int _check_extent(cnp.ndarray arr, const cnp.int64_t[:, ::1] st, int row,
                       const cnp.int64_t[::1] shp, int nd, Py_ssize_t isz, str what,
                       int idx) except -1:
    """Raise unless every element the iteration space ``shp`` reaches through the element
    strides ``st[row]`` lies inside ``arr``'s own memory (the byte range its shape and strides
    span): :meth:`Program.run` trusts its caller's strides, and this keeps a wrong one from
    reading or writing outside the array."""
    cdef Py_ssize_t lo = 0, hi = 0, alo = 0, ahi = 0, d, s
    cdef double span = 0
    cdef int j
    for j in range(nd):
        d = shp[j] - 1
        s = st[row, j]
        span += fabs(<double>d * <double>s)
        if span > _MAX_SPAN:
            raise ValueError(f"fused kernel: {what} {idx}'s strides span too much memory")
        if s > 0:
            hi += d * s
        else:
            lo += d * s
    for j in range(cnp.PyArray_NDIM(arr)):
        d = cnp.PyArray_DIMS(arr)[j]
        if d == 0:
            raise ValueError(f"fused kernel: {what} {idx} is empty")
        s = cnp.PyArray_STRIDES(arr)[j]
        if s > 0:
            ahi += (d - 1) * s
        else:
            alo += (d - 1) * s
    ahi += isz
    if lo * isz < alo or hi * isz + isz > ahi:
        raise ValueError(f"fused kernel: the iteration space reaches outside {what} {idx} "
                         f"(its shape {(<object>arr).shape}, strides {(<object>arr).strides} bytes)")
    return 0


cdef int _work_tables(Work* w, int nin, int nout) except -1:
    cdef int m = (nin if nin > nout else nout) + 1
    cdef int i
    if w.tab_ok:
        return 0
    if w.in_base == NULL:
        w.in_base = <char**>malloc(sizeof(char*) * (nin + 1))
    if w.out_base == NULL:
        w.out_base = <char**>malloc(sizeof(char*) * (nout + 1))
    if w.imode == NULL:
        w.imode = <int*>malloc(sizeof(int) * (nin + 1))
    if w.omode == NULL:
        w.omode = <int*>malloc(sizeof(int) * (nout + 1))
    if w.ored == NULL:
        w.ored = <int*>malloc(sizeof(int) * (nout + 1))
    if w.oridx == NULL:
        w.oridx = <int*>malloc(sizeof(int) * (nout + 1))
    if w.ones == NULL:
        w.ones = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * m)
    if not (w.in_base and w.out_base and w.imode and w.omode and w.ored and w.oridx and w.ones):
        raise MemoryError()
    for i in range(m):
        w.ones[i] = 1
    for i in range(nout):
        w.ored[i] = RED_NONE
        w.oridx[i] = -1
    w.tab_ok = True
    return 0


cdef inline bint _overlap(char* a, char* b, Py_ssize_t nbytes) noexcept:
    return a < b + nbytes and b < a + nbytes


cdef inline int _check_reg(int r, int nregs, str what, int i, str part="") except -1:
    if r < 0 or r >= nregs:
        raise ValueError(f"register {r} of {what} {i}{part} out of range (nregs={nregs})")
    return 0


cdef inline bint _one_pass(int k, int mode) noexcept:
    """Whether the VM's loop for op ``k`` reads each operand element before writing that
    element of the result and never rereads it (so the result may alias an operand).  The
    non-vec sigmoid and softplus run several passes over their output."""
    return not (k == K_SOFTPLUS or (k == K_SIGMOID and mode != MODE_VEC))


cdef class Program:
    """A register program ready for the VM (built by :mod:`fastgraph.fused.kernel`).

    ``code`` is an ``(ninstr, 6)`` int array of rows ``(opcode, mode, dst, a, b, c)`` with table
    opcode numbers, ``mode`` 0 = C/libm, 1 = vec, 2 = NumPy inner loop, and register numbers
    (``-1`` for an unused operand).  ``in_reg[i]`` is input ``i``'s register (``-1``: unused),
    ``const_reg``/``const_val`` the constant registers, ``out_reg[k]`` output ``k``'s register.
    """
    cdef int* code
    cdef int ninstr
    cdef readonly int nregs
    cdef readonly int nin
    cdef readonly int nout
    cdef int* in_reg
    cdef int* out_reg
    cdef int nconst
    cdef int* const_reg
    cdef double* const_val
    # direct[k * nin + i]: output k may be written straight into input i's memory when the two
    # are the same array (in place) -- no instruction reads input i after output k's writer
    # starts, and that writer is a one-pass loop.  Otherwise in place computes in scratch.
    cdef unsigned char* direct
    # call configuration (FusedKernel.__init__ sets it through configure())
    cdef readonly Py_ssize_t block
    cdef readonly Py_ssize_t threshold
    cdef readonly Py_ssize_t stream_min
    cdef int max_threads
    cdef object nt_fn
    # cached per-thread scratch; ``busy`` while a call uses it (a second, concurrent call on
    # the same Program allocates its own, see _acquire)
    cdef Work work
    cdef bint busy

    def __cinit__(self, code, int nregs, in_reg, out_reg, const_reg, const_val):
        cdef int i, j, op, k
        memset(&self.work, 0, sizeof(Work))
        self.busy = False
        self.block = 1024
        self.threshold = 32768
        self.stream_min = -1
        self.max_threads = 64
        self.nt_fn = None
        code = np.ascontiguousarray(code, dtype=np.intc).reshape(-1, 6)
        in_reg = np.ascontiguousarray(in_reg, dtype=np.intc).ravel()
        out_reg = np.ascontiguousarray(out_reg, dtype=np.intc).ravel()
        const_reg = np.ascontiguousarray(const_reg, dtype=np.intc).ravel()
        const_val = np.ascontiguousarray(const_val, dtype=np.float64).ravel()
        if const_reg.shape[0] != const_val.shape[0]:
            raise ValueError("const_reg and const_val differ in length")
        self.ninstr = code.shape[0]
        self.nregs = nregs
        self.nin = in_reg.shape[0]
        self.nout = out_reg.shape[0]
        self.nconst = const_reg.shape[0]
        if self.nout < 1:
            raise ValueError("a program needs at least one output")
        if nregs < 0 or nregs > MAX_REGS:
            raise ValueError(f"nregs must be in 0..{MAX_REGS}, got {nregs}")
        self.code = <int*>malloc(sizeof(int) * (6 * self.ninstr + 1))
        self.in_reg = <int*>malloc(sizeof(int) * (self.nin + 1))
        self.out_reg = <int*>malloc(sizeof(int) * (self.nout + 1))
        self.const_reg = <int*>malloc(sizeof(int) * (self.nconst + 1))
        self.const_val = <double*>malloc(sizeof(double) * (self.nconst + 1))
        if not (self.code and self.in_reg and self.out_reg and self.const_reg and self.const_val):
            raise MemoryError()
        # validate with C loops over typed views: a 10,000-instruction program (bench_compile)
        # is checked in microseconds; messages are only formatted for an error
        cdef int[:, ::1] cv = code
        cdef int[::1] iv = in_reg, ov = out_reg, kv = const_reg
        cdef double[::1] vv = const_val
        cdef int r
        # per register: 0 never written, 1 written by an instruction, 2 input/constant (read-only)
        cdef unsigned char[::1] state = np.zeros(max(nregs, 1), dtype=np.uint8)
        for i in range(self.nin):
            r = iv[i]
            self.in_reg[i] = r
            if r >= 0:
                _check_reg(r, nregs, "input", i)
                state[r] = 2
        for i in range(self.nconst):
            r = kv[i]
            _check_reg(r, nregs, "constant", i)
            self.const_reg[i] = r
            self.const_val[i] = vv[i]
            state[r] = 2
        for i in range(self.ninstr):
            op = cv[i, 0]
            if op <= 0 or op >= MAXOP or _code_map[op] == 0:
                raise ValueError(f"instruction {i}: unknown opcode {op}")
            k = _code_map[op]
            if cv[i, 1] != MODE_C and cv[i, 1] != MODE_VEC and cv[i, 1] != MODE_UFUNC:
                raise ValueError(f"instruction {i}: bad mode {cv[i, 1]}")
            self.code[6 * i] = k
            self.code[6 * i + 1] = cv[i, 1]
            r = cv[i, 2]
            _check_reg(r, nregs, "instruction", i, " destination")
            self.code[6 * i + 2] = r
            for j in range(3):
                if j < _arity[k]:
                    r = cv[i, 3 + j]
                    _check_reg(r, nregs, "instruction", i, f" operand {j}")
                    if state[r] == 0:
                        raise ValueError(f"instruction {i} reads register {r} "
                                         "before it is written")
                    if r == cv[i, 2]:
                        raise ValueError(f"instruction {i} writes a register it reads")
                    self.code[6 * i + 3 + j] = r
                else:
                    self.code[6 * i + 3 + j] = -1
            if state[cv[i, 2]] == 2:
                raise ValueError(f"instruction {i} overwrites an input or constant register")
            state[cv[i, 2]] = 1
        for i in range(self.nout):
            r = ov[i]
            _check_reg(r, nregs, "output", i)
            if state[r] == 0:
                raise ValueError(f"output {i} register {r} is never written")
            # the VM points an output's register at the output array while it runs: an input's
            # or constant's register, or one shared by two outputs, would lose its value
            if state[r] == 2:
                raise ValueError(f"output {i} register {r} is an input or constant register "
                                 "(copy it into a register of its own)")
            if state[r] == 3:
                raise ValueError(f"output {i} register {r} is also an earlier output's")
            state[r] = 3
            self.out_reg[i] = r
        self._plan_direct(cv)

    cdef int _plan_direct(self, int[:, ::1] cv) except -1:
        cdef int i, j, k, r, wpos
        self.direct = <unsigned char*>malloc(self.nout * self.nin + 1)
        if self.direct == NULL:
            raise MemoryError()
        last_read = np.full(max(self.nregs, 1), -1, dtype=np.intc)
        writer = np.full(max(self.nregs, 1), -1, dtype=np.intc)
        cdef int[::1] lr = last_read, wr = writer
        for i in range(self.ninstr):
            for j in range(_arity[self.code[6 * i]]):
                lr[cv[i, 3 + j]] = i
            wr[cv[i, 2]] = i
        for k in range(self.nout):
            wpos = wr[self.out_reg[k]]
            for i in range(self.nin):
                r = self.in_reg[i]
                self.direct[k * self.nin + i] = wpos >= 0 and (
                    r < 0 or lr[r] < wpos
                    or (lr[r] == wpos and _one_pass(self.code[6 * wpos], self.code[6 * wpos + 1])))
        return 0

    def __dealloc__(self):
        _work_free(&self.work)
        free(self.code)
        free(self.in_reg)
        free(self.out_reg)
        free(self.const_reg)
        free(self.const_val)
        free(self.direct)

    def configure(self, Py_ssize_t block, Py_ssize_t threshold, Py_ssize_t stream_min=-1,
                  nt_fn=None, int max_threads=64):
        """Fixed call settings used by :meth:`fast_call` and :meth:`run_contiguous`: ``block``
        elements per block, one thread below ``threshold`` elements, non-temporal stores from
        ``stream_min`` elements (``-1``: never), ``nt_fn()`` gives the default thread count
        (``None``: 1), at most ``max_threads`` threads."""
        if block < 16 or block > MAX_BLOCK:
            raise ValueError(f"block must be in 16..{MAX_BLOCK}, got {block}")
        if max_threads < 1:
            raise ValueError("max_threads must be >= 1")
        self.block = block
        self.threshold = threshold
        self.stream_min = stream_min
        self.nt_fn = nt_fn
        self.max_threads = max_threads

    cdef inline Work* _acquire(self, Work* tmp) noexcept:
        # Called with the GIL held, so test-and-set is atomic w.r.t. other Python threads.
        if self.busy:
            memset(tmp, 0, sizeof(Work))
            return tmp
        self.busy = True
        return &self.work

    cdef inline void _release(self, Work* w) noexcept:
        if w == &self.work:
            self.busy = False
        else:
            _work_free(w)

    cdef inline int _nthreads(self, num_threads) except -1:
        cdef Py_ssize_t nt
        if num_threads is None:
            if self.nt_fn is None:
                return 1
            nt = self.nt_fn()
        else:
            if type(num_threads) is not int:  # NumPy integers too; floats, strings, bools not
                if isinstance(num_threads, bool) or not hasattr(num_threads, "__index__"):
                    raise TypeError(f"num_threads must be an integer, got "
                                    f"{type(num_threads).__name__} {num_threads!r}")
                num_threads = num_threads.__index__()
            nt = num_threads
            if nt < 1:
                raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        if nt > self.max_threads:
            nt = self.max_threads
        return <int>nt

    cdef int _exec_flat(self, Work* w, Py_ssize_t n, Py_ssize_t isz, int nthreads) except -1:
        """Run on 1-D contiguous operands whose data pointers are in ``w.in_base``/``w.out_base``
        and whose output modes (OUT_CONTIG, or OUT_SCATTER for in-place) are in ``w.omode``."""
        cdef Py_ssize_t shp = n
        cdef int i
        for i in range(self.nin):
            w.imode[i] = IN_UNUSED if self.in_reg[i] < 0 else IN_CONTIG
        return self._exec_blocks(w, 1, &shp, w.ones, w.ones, NULL, isz, nthreads)

    cdef int _exec_blocks(self, Work* w, int nd, Py_ssize_t* shape, Py_ssize_t* in_str,
                          Py_ssize_t* out_str, int* tiled, Py_ssize_t isz,
                          int nthreads) except -1:
        """The C fast paths' common runner over an ``nd``-D iteration space (``nd`` 1 or 2),
        with the input modes in ``w.imode`` (element strides ``in_str``, ``nin x nd``) and the
        outputs in ``w.out_base``/``w.omode`` (``out_str``, ``nout x nd``, for OUT_SCATTER).
        ``tiled`` (or NULL): per input, a row of ``shape[nd - 1]`` elements to repeat through its
        register once per call and thread (IN_UNUSED to the interpreter), instead of a gather per
        block -- only when the row length divides the block length.  One thread below
        ``threshold``; small calls keep the GIL (releasing it costs more than they run)."""
        cdef Ctx c
        cdef Py_ssize_t n = 1, cols = shape[nd - 1], j
        cdef int i, k, t, nt = nthreads
        cdef char* reg
        for i in range(nd):
            n *= shape[i]
        c.nd = nd
        c.shape = shape
        c.N = n
        c.B = self.block
        c.nblocks = (n + c.B - 1) // c.B
        c.R = 0
        c.nin = self.nin
        c.nout = self.nout
        c.nred = 0
        c.nregs = self.nregs
        c.ninstr = self.ninstr
        c.code = self.code
        c.in_reg = self.in_reg
        c.out_reg = self.out_reg
        c.in_mode = w.imode
        c.in_base = w.in_base
        c.in_str = in_str
        c.out_mode = w.omode
        c.out_red = w.ored
        c.out_redidx = w.oridx
        c.out_base = w.out_base
        c.out_str = out_str
        c.head_val = NULL
        c.tail_val = NULL
        c.head_row = NULL
        c.tail_row = NULL
        if self.stream_min >= 0 and n >= self.stream_min:
            for k in range(self.nout):
                if w.omode[k] == OUT_CONTIG:
                    w.omode[k] = OUT_STREAM
        if nt < 1 or n < self.threshold:
            nt = 1
        if nt > c.nblocks:
            nt = <int>c.nblocks
        c.regstride = (self.nregs + 7) & ~7
        _work_prepare(w, nt, self.nregs, c.regstride, c.B, isz, self.nconst, self.const_reg,
                      self.const_val)
        c.scratch = w.scratch
        c.regp = w.regp
        if tiled != NULL:
            for i in range(self.nin):
                if tiled[i]:
                    for t in range(nt):
                        reg = w.scratch + (<Py_ssize_t>t * self.nregs + self.in_reg[i]) * c.B * isz
                        for j in range(0, c.B if n > c.B else n, cols):
                            memcpy(reg + j * isz, w.in_base[i], cols * isz)
        if n >= 4096:
            with nogil:
                if isz == 8:
                    _run_all(&c, <double*>c.scratch, nt)
                else:
                    _run_all(&c, <float*>c.scratch, nt)
        elif isz == 8:
            _run_all(&c, <double*>c.scratch, nt)
        else:
            _run_all(&c, <float*>c.scratch, nt)
        return 0

    cdef object _bind_outputs(self, Work* w, object out, int nd, cnp.npy_intp* dims, int tn,
                              Py_ssize_t nbytes, tuple inputs, Py_ssize_t* in_str,
                              Py_ssize_t cols, const int* local=NULL):
        """The C fast paths' outputs: fresh arrays of shape ``dims`` when ``out`` is ``None``,
        else ``out`` (one exact C-contiguous native ndarray per output, of that shape and dtype
        ``tn``, disjoint from each other).  An output may be an input (the same memory: in place,
        written directly when ``self.direct`` allows, else through scratch) -- with row strides
        ``in_str`` only an input of the full shape.  Fills ``w.out_base``/``w.omode``; returns
        the result (array or tuple), or ``None`` when the general path must take the call.
        ``local[i]`` (when given) marks an input whose value the caller copied into its own C
        storage (a NumPy scalar): it cannot overlap an output."""
        cdef Py_ssize_t nin = self.nin, nout = self.nout, i, k
        cdef cnp.ndarray a
        cdef char* base
        cdef char* ib
        if out is None:
            lst = []
            for k in range(nout):
                a = <cnp.ndarray>cnp.PyArray_EMPTY(nd, dims, tn, 0)
                lst.append(a)
                w.out_base[k] = <char*>cnp.PyArray_DATA(a)
                w.omode[k] = OUT_CONTIG
            return lst[0] if nout == 1 else tuple(lst)
        if cnp.PyArray_CheckExact(out):
            if nout != 1:
                return None
            seq = (out,)
        elif type(out) is tuple or type(out) is list:
            seq = out
            if len(seq) != nout:
                return None
        else:
            return None
        for k in range(nout):
            x = seq[k]
            if not cnp.PyArray_CheckExact(x):
                return None
            a = <cnp.ndarray>x
            if (cnp.PyArray_TYPE(a) != tn or not cnp.PyArray_ISNOTSWAPPED(a)
                    or not cnp.PyArray_ISCARRAY(a) or cnp.PyArray_NDIM(a) != nd
                    or memcmp(dims, cnp.PyArray_DIMS(a), nd * sizeof(cnp.npy_intp)) != 0):
                return None
            base = <char*>cnp.PyArray_DATA(a)
            w.out_base[k] = base
            w.omode[k] = OUT_CONTIG
            for i in range(nin):
                if local != NULL and local[i]:
                    continue
                ib = w.in_base[i]
                if base < ib + cnp.PyArray_NBYTES(<cnp.ndarray>inputs[i]) and ib < base + nbytes:
                    if base != ib or (in_str != NULL and (in_str[2 * i] != cols
                                                          or in_str[2 * i + 1] != 1)):
                        return None     # partial or broadcast overlap: the general path copies
                    if not self.direct[k * nin + i]:
                        w.omode[k] = OUT_SCATTER
            for i in range(k):
                if _overlap(base, w.out_base[i], nbytes):
                    return None         # the general path raises
        return seq[0] if nout == 1 else tuple(seq)

    def fast_call(self, tuple inputs, out=None, num_threads=None):
        """``FusedKernel.__call__``'s fast path, all in C: every input an aligned, native-order,
        C-contiguous ``numpy.ndarray`` (exact type) of one float dtype and one shape; ``out``
        ``None`` (fresh outputs) or exact ndarrays of that dtype and shape, C-contiguous,
        writeable, not overlapping each other; an output may *be* an input (same memory: in
        place) but not partially overlap one.  Returns the output (or a tuple for several), or
        ``None`` when the operands need the general path.  Elementwise programs only."""
        cdef Py_ssize_t nin = self.nin, nout = self.nout, i, k, n, nbytes
        cdef int nd, tn, nt
        cdef cnp.npy_intp* dims
        cdef cnp.ndarray a0, a
        cdef Work tmp
        cdef Work* w
        cdef object x, res
        if nin == 0 or len(inputs) != nin:
            return None
        x = inputs[0]
        if not cnp.PyArray_CheckExact(x):
            return None
        a0 = <cnp.ndarray>x
        tn = cnp.PyArray_TYPE(a0)
        if tn != cnp.NPY_DOUBLE and tn != cnp.NPY_FLOAT:
            return None
        nd = cnp.PyArray_NDIM(a0)
        dims = cnp.PyArray_DIMS(a0)
        n = cnp.PyArray_SIZE(a0)
        if n == 0:
            return None
        for i in range(nin):
            x = inputs[i]
            if not cnp.PyArray_CheckExact(x):
                return None
            a = <cnp.ndarray>x
            if (cnp.PyArray_TYPE(a) != tn or not cnp.PyArray_ISNOTSWAPPED(a)
                    or not cnp.PyArray_ISCARRAY_RO(a) or cnp.PyArray_NDIM(a) != nd
                    or memcmp(dims, cnp.PyArray_DIMS(a), nd * sizeof(cnp.npy_intp)) != 0):
                return None
        nt = self._nthreads(num_threads)
        nbytes = n * (8 if tn == cnp.NPY_DOUBLE else 4)
        w = self._acquire(&tmp)
        try:
            _work_tables(w, <int>nin, <int>nout)
            for i in range(nin):
                w.in_base[i] = <char*>cnp.PyArray_DATA(<cnp.ndarray>inputs[i])
            res = self._bind_outputs(w, out, nd, dims, tn, nbytes, inputs, NULL, 0)
            if res is None:
                return None
            self._exec_flat(w, n, 8 if tn == cnp.NPY_DOUBLE else 4, nt)
            return res
        finally:
            self._release(w)

    # ---- row/column-broadcast fast path (static plans: bias rows, per-row scalars) ----------
    def bcast_call(self, tuple inputs, out, tuple shape, Py_ssize_t cols, bytes modes,
                   num_threads=None):
        """The C fast path for kernels with broadcast inputs whose broadcasting a compiled plan
        knows statically.  The iteration space is ``shape`` (the outputs' shape) seen as
        ``(rows, cols)`` in C order; ``modes[i]`` says how input ``i`` covers it: ``b"F"`` all
        ``rows * cols`` elements, ``b"S"`` one element (a scalar), ``b"R"`` ``cols`` elements
        repeated on every row (a bias row), ``b"C"`` ``rows`` elements, each repeated along its
        row (a per-row scalar, e.g. ``keepdims`` reductions).  Every input an aligned,
        native-order, C-contiguous exact ``numpy.ndarray`` of one float dtype and exactly that
        many elements -- or, in an ``S`` slot, a NumPy scalar of that dtype (plans feed 0-d
        values such as a learning rate as NumPy scalars); ``out`` as in :meth:`fast_call` (an
        output may *be* an ``F`` input, in place).  Returns the output(s), or ``None`` when the
        operands need the general path."""
        cdef Py_ssize_t nin = self.nin, nout = self.nout, i, k, n = 1, rows, nbytes, need
        cdef int nd, tn = -1, nt
        cdef cnp.npy_intp dims[32]
        cdef Py_ssize_t in_str[2 * 32]
        cdef Py_ssize_t out_str[2 * 32]
        cdef int imode[32]
        cdef int tiled[32]
        cdef int local[32]          # 1: a NumPy scalar, its value copied into sval / fval
        cdef double sval[32]
        cdef float fval[32]
        cdef Py_ssize_t space[2]
        cdef int m
        cdef cnp.ndarray a
        cdef Work tmp
        cdef Work* w
        cdef object x, res
        nd = len(shape)
        if (nin == 0 or nin > 32 or nout > 32 or len(inputs) != nin or len(modes) != nin
                or nd < 1 or nd > 32 or cols < 1):
            return None
        for i in range(nd):
            dims[i] = shape[i]
            n *= dims[i]
        if n <= 0 or n % cols != 0:
            return None
        rows = n // cols
        for i in range(nin):
            x = inputs[i]
            m = modes[i]
            local[i] = 0
            if not cnp.PyArray_CheckExact(x):
                if m != c'S' or (type(x) is not _NP_FLOAT64 and type(x) is not _NP_FLOAT32):
                    return None
                local[i] = 1        # its dtype is checked below, once the arrays give tn
                tiled[i] = 0
                imode[i] = IN_SCALAR if self.in_reg[i] >= 0 else IN_UNUSED
                in_str[2 * i] = 0
                in_str[2 * i + 1] = 0
                continue
            a = <cnp.ndarray>x
            if tn < 0:
                tn = cnp.PyArray_TYPE(a)
                if tn != cnp.NPY_DOUBLE and tn != cnp.NPY_FLOAT:
                    return None
            if (cnp.PyArray_TYPE(a) != tn or not cnp.PyArray_ISNOTSWAPPED(a)
                    or not cnp.PyArray_ISCARRAY_RO(a)):
                return None
            tiled[i] = 0
            if m == c'F':
                need = n
                imode[i] = IN_CONTIG
                in_str[2 * i] = cols
                in_str[2 * i + 1] = 1
            elif m == c'S':
                need = 1
                imode[i] = IN_SCALAR
                in_str[2 * i] = 0
                in_str[2 * i + 1] = 0
            elif m == c'R':
                need = cols
                imode[i] = IN_STRIDED
                in_str[2 * i] = 0
                in_str[2 * i + 1] = 1
                if self.block % cols == 0:
                    imode[i] = IN_UNUSED
                    tiled[i] = 1
            elif m == c'C':
                need = rows
                imode[i] = IN_STRIDED
                in_str[2 * i] = 1
                in_str[2 * i + 1] = 0
            else:
                return None
            if self.in_reg[i] < 0:
                imode[i] = IN_UNUSED
                tiled[i] = 0
            if cnp.PyArray_SIZE(a) != need:
                return None
        if tn < 0:
            return None             # no array input: nothing says the dtype
        for i in range(nin):        # a scalar of another dtype would promote: general path
            if local[i]:
                x = inputs[i]
                if type(x) is not (_NP_FLOAT64 if tn == cnp.NPY_DOUBLE else _NP_FLOAT32):
                    return None
                sval[i] = PyFloat_AsDouble(x)   # exact for both (a float32 widens exactly)
                fval[i] = <float>sval[i]
        nt = self._nthreads(num_threads)
        nbytes = n * (8 if tn == cnp.NPY_DOUBLE else 4)
        w = self._acquire(&tmp)
        try:
            _work_tables(w, <int>nin, <int>nout)
            for i in range(nin):
                if local[i]:
                    w.in_base[i] = <char*>&sval[i] if tn == cnp.NPY_DOUBLE else <char*>&fval[i]
                else:
                    w.in_base[i] = <char*>cnp.PyArray_DATA(<cnp.ndarray>inputs[i])
                w.imode[i] = imode[i]
            for k in range(nout):
                out_str[2 * k] = cols
                out_str[2 * k + 1] = 1
            res = self._bind_outputs(w, out, nd, dims, tn, nbytes, inputs, in_str, cols, local)
            if res is None:
                return None
            space[0] = rows
            space[1] = cols
            self._exec_blocks(w, 2, space, in_str, out_str, tiled,
                              8 if tn == cnp.NPY_DOUBLE else 4, nt)
            return res
        finally:
            self._release(w)

    def run_contiguous(self, inputs, outputs, num_threads=None):
        """Lean entry point for pre-validated elementwise calls (``FusedKernel.call_flat``).

        ``inputs``: a tuple/list of ``nin`` ndarrays; ``outputs``: a tuple/list of ``nout``
        ndarrays.  Every operand must be C-contiguous, aligned, native byte order, of one dtype
        (float64 or float32, taken from ``outputs[0]``) and hold exactly ``n = outputs[0].size``
        elements (shapes are not compared: the data are read as flat vectors); outputs writeable
        and not overlapping each other.  An output may be an input (same data pointer: in place);
        partial overlap with an input is an error.  Nothing is broadcast, converted or allocated;
        violations raise ``TypeError``/``ValueError`` (cheap C checks, never a fallback).
        ``num_threads``: ``None`` = the configured default; one thread below ``threshold``
        elements.  Returns ``None``."""
        cdef Py_ssize_t nin = self.nin, nout = self.nout, i, k, n, nbytes, isz
        cdef int tn, nt
        cdef cnp.ndarray a
        cdef Work tmp
        cdef Work* w
        cdef char* base
        cdef object x
        if len(inputs) != nin or len(outputs) != nout:
            raise TypeError(f"run_contiguous: this program takes {nin} input(s) and {nout} "
                            f"output(s), got {len(inputs)} and {len(outputs)}")
        x = outputs[0]
        if not cnp.PyArray_Check(x):
            raise TypeError("run_contiguous: outputs must be ndarrays")
        tn = cnp.PyArray_TYPE(<cnp.ndarray>x)
        if tn == cnp.NPY_DOUBLE:
            isz = 8
        elif tn == cnp.NPY_FLOAT:
            isz = 4
        else:
            raise TypeError(f"run_contiguous: dtype {(<cnp.ndarray>x).dtype} (need float32 "
                            "or float64)")
        n = cnp.PyArray_SIZE(<cnp.ndarray>x)
        nbytes = n * isz
        nt = self._nthreads(num_threads)
        w = self._acquire(&tmp)
        try:
            _work_tables(w, <int>nin, <int>nout)
            for i in range(nin):
                x = inputs[i]
                if not cnp.PyArray_Check(x):
                    raise TypeError(f"run_contiguous: input {i} is not an ndarray")
                a = <cnp.ndarray>x
                if (cnp.PyArray_TYPE(a) != tn or not cnp.PyArray_ISNOTSWAPPED(a)
                        or not cnp.PyArray_ISCARRAY_RO(a) or cnp.PyArray_SIZE(a) != n):
                    raise ValueError(f"run_contiguous: input {i} is not a C-contiguous aligned "
                                     f"native {(<cnp.ndarray>outputs[0]).dtype} array of {n} "
                                     "elements")
                w.in_base[i] = <char*>cnp.PyArray_DATA(a)
            for k in range(nout):
                x = outputs[k]
                if not cnp.PyArray_Check(x):
                    raise TypeError(f"run_contiguous: output {k} is not an ndarray")
                a = <cnp.ndarray>x
                if (cnp.PyArray_TYPE(a) != tn or not cnp.PyArray_ISNOTSWAPPED(a)
                        or not cnp.PyArray_ISCARRAY(a) or cnp.PyArray_SIZE(a) != n):
                    raise ValueError(f"run_contiguous: output {k} is not a writeable "
                                     f"C-contiguous aligned array like output 0")
                base = <char*>cnp.PyArray_DATA(a)
                w.out_base[k] = base
                w.omode[k] = OUT_CONTIG
                for i in range(nin):
                    if _overlap(base, w.in_base[i], nbytes):
                        if base != w.in_base[i]:
                            raise ValueError(f"run_contiguous: output {k} partially overlaps "
                                             f"input {i}")
                        if not self.direct[k * nin + i]:  # else in scratch, then written back
                            w.omode[k] = OUT_SCATTER
                for i in range(k):
                    if _overlap(base, w.out_base[i], nbytes):
                        raise ValueError(f"run_contiguous: outputs {i} and {k} overlap")
            if n > 0:
                self._exec_flat(w, n, isz, nt)
        finally:
            self._release(w)

    def run(self, bint f64, list inputs, in_strides, list outputs, out_strides, shape,
            Py_ssize_t red_len, out_red, out_defer, int nthreads, Py_ssize_t block,
            Py_ssize_t threshold, Py_ssize_t stream_min=-1):
        """Run on validated operands (see :class:`fastgraph.fused.kernel.FusedKernel`).

        ``inputs``/``outputs`` are ndarrays of the kernel dtype; ``in_strides``/``out_strides``
        ``(n, nd)`` int64 element strides in the (collapsed) iteration space ``shape``;
        ``red_len`` the flat length of one reduction row (0: no reduction); ``out_red[k]`` the
        reduction of output ``k`` (0 none, 1 sum, 2 mean, 3 max, 4 min; reduced outputs are
        C-contiguous with one element per row); ``out_defer[k]`` forces scratch + write-back
        (the output aliases an input); contiguous outputs of at least ``stream_min`` elements
        (``-1``: never) are written with non-temporal stores.  Nothing here checks shapes
        again: the caller did.
        """
        cdef cnp.int64_t[::1] shp = np.ascontiguousarray(shape, dtype=np.int64).ravel()
        cdef cnp.int64_t[:, ::1] ist = np.ascontiguousarray(in_strides, dtype=np.int64).reshape(
            len(inputs), shp.shape[0])
        cdef cnp.int64_t[:, ::1] ost = np.ascontiguousarray(out_strides, dtype=np.int64).reshape(
            len(outputs), shp.shape[0])
        cdef int[::1] ored = np.ascontiguousarray(out_red, dtype=np.intc)
        cdef int[::1] odef = np.ascontiguousarray(out_defer, dtype=np.intc)
        cdef Ctx c
        cdef int nd = shp.shape[0]
        cdef int i, j, k, t, nt, ired
        cdef Py_ssize_t N = 1, cs, itemsize = 8 if f64 else 4
        cdef bint contig, allzero
        cdef cnp.ndarray arr
        cdef Work tmp
        cdef Work* w = NULL
        if len(inputs) != self.nin or len(outputs) != self.nout:
            raise ValueError("wrong number of operands for this program")
        if nd < 1 or nd > MAXDIMS:
            raise ValueError(f"iteration rank {nd} out of range 1..{MAXDIMS}")
        if ist.shape[1] != nd or ost.shape[1] != nd or ored.shape[0] != self.nout \
                or odef.shape[0] != self.nout:
            raise ValueError("stride/flag arrays do not match the operands")
        if block < 16 or block > MAX_BLOCK:
            raise ValueError(f"block must be in 16..{MAX_BLOCK}, got {block}")
        for k in range(self.nout):
            if ored[k] < 0 or ored[k] > RED_MIN:
                raise ValueError(f"out_red[{k}]: unknown reduction code {ored[k]}")
        dt = np.float64 if f64 else np.float32
        for j in range(nd):
            if shp[j] < 1:
                raise ValueError("empty iteration spaces are handled by the caller")
            if <double>N * <double>shp[j] > _MAX_SPAN:
                raise ValueError("fused kernel: iteration space too large")
            N *= shp[j]
        for a in inputs:
            if not isinstance(a, np.ndarray) or a.dtype != dt:
                raise TypeError("VM inputs must be ndarrays of the kernel dtype")
        for a in outputs:
            if not isinstance(a, np.ndarray) or a.dtype != dt or not a.flags.writeable:
                raise TypeError("VM outputs must be writeable ndarrays of the kernel dtype")
        for i in range(self.nin):
            if self.in_reg[i] >= 0:
                _check_extent(inputs[i], ist, i, shp, nd, itemsize, "input", i)
        for k in range(self.nout):
            if ored[k] == RED_NONE:
                _check_extent(outputs[k], ost, k, shp, nd, itemsize, "output", k)
        c.nd = nd
        c.N = N
        c.B = block
        c.nblocks = (N + block - 1) // block
        c.R = red_len
        c.nin = self.nin
        c.nout = self.nout
        c.nregs = self.nregs
        c.ninstr = self.ninstr
        c.code = self.code
        c.in_reg = self.in_reg
        c.out_reg = self.out_reg
        c.nred = 0
        for k in range(self.nout):
            if ored[k] != RED_NONE:
                if red_len < 1 or N % red_len != 0:
                    raise ValueError("bad reduction row length")
                if outputs[k].size != N // red_len or not outputs[k].flags.c_contiguous:
                    raise ValueError("reduced output has the wrong size")
                c.nred += 1
        nt = nthreads if nthreads >= 1 else 1
        if N < threshold:
            nt = 1
        if nt > c.nblocks:
            nt = <int>c.nblocks
        if nt > self.max_threads:
            nt = self.max_threads
        # one allocation for all the small per-call tables
        c.shape = NULL
        c.in_mode = NULL
        c.in_base = NULL
        c.in_str = NULL
        c.out_mode = NULL
        c.out_red = NULL
        c.out_redidx = NULL
        c.out_base = NULL
        c.out_str = NULL
        c.regp = NULL
        c.head_val = NULL
        c.tail_val = NULL
        c.head_row = NULL
        c.tail_row = NULL
        try:
            c.shape = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * nd)
            c.in_mode = <int*>malloc(sizeof(int) * (self.nin + 1))
            c.in_base = <char**>malloc(sizeof(char*) * (self.nin + 1))
            c.in_str = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * (self.nin * nd + 1))
            c.out_mode = <int*>malloc(sizeof(int) * self.nout)
            c.out_red = <int*>malloc(sizeof(int) * self.nout)
            c.out_redidx = <int*>malloc(sizeof(int) * self.nout)
            c.out_base = <char**>malloc(sizeof(char*) * self.nout)
            c.out_str = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * self.nout * nd)
            c.regstride = (self.nregs + 7) & ~7
            if c.nred:
                c.head_val = <double*>malloc(sizeof(double) * c.nblocks * c.nred)
                c.tail_val = <double*>malloc(sizeof(double) * c.nblocks * c.nred)
                c.head_row = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * c.nblocks)
                c.tail_row = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * c.nblocks)
                if not (c.head_val and c.tail_val and c.head_row and c.tail_row):
                    raise MemoryError()
            if not (c.shape and c.in_mode and c.in_base and c.in_str and c.out_mode
                    and c.out_red and c.out_redidx and c.out_base and c.out_str):
                raise MemoryError()
            # per-thread scratch: the Program's cached one unless another call is using it
            w = self._acquire(&tmp)
            _work_prepare(w, nt, self.nregs, c.regstride, block, itemsize, self.nconst,
                          self.const_reg, self.const_val)
            c.scratch = w.scratch
            c.regp = w.regp
            for j in range(nd):
                c.shape[j] = shp[j]
            for i in range(self.nin):
                arr = inputs[i]
                c.in_base[i] = <char*>cnp.PyArray_DATA(arr)
                contig = True
                allzero = True
                cs = 1
                for j in range(nd - 1, -1, -1):
                    c.in_str[i * nd + j] = ist[i, j]
                    if ist[i, j] != 0 and shp[j] != 1:
                        allzero = False
                    if ist[i, j] != cs and shp[j] != 1:
                        contig = False
                    cs *= shp[j]
                if self.in_reg[i] < 0:
                    c.in_mode[i] = IN_UNUSED
                elif allzero:
                    c.in_mode[i] = IN_SCALAR
                elif contig:
                    c.in_mode[i] = IN_CONTIG
                else:
                    c.in_mode[i] = IN_STRIDED
            ired = 0
            for k in range(self.nout):
                arr = outputs[k]
                c.out_base[k] = <char*>cnp.PyArray_DATA(arr)
                c.out_red[k] = ored[k]
                c.out_redidx[k] = -1
                contig = True
                cs = 1
                for j in range(nd - 1, -1, -1):
                    c.out_str[k * nd + j] = ost[k, j]
                    if ost[k, j] != cs and shp[j] != 1:
                        contig = False
                    cs *= shp[j]
                if ored[k] != RED_NONE:
                    c.out_mode[k] = OUT_REDUCED
                    c.out_redidx[k] = ired
                    ired += 1
                elif contig and not odef[k] and stream_min >= 0 and N >= stream_min:
                    c.out_mode[k] = OUT_STREAM
                elif contig and not odef[k]:
                    c.out_mode[k] = OUT_CONTIG
                else:
                    c.out_mode[k] = OUT_SCATTER
            with nogil:
                if f64:
                    _run_all(&c, <double*>c.scratch, nt)
                else:
                    _run_all(&c, <float*>c.scratch, nt)
        finally:
            free(c.shape)
            free(c.in_mode)
            free(c.in_base)
            free(c.in_str)
            free(c.out_mode)
            free(c.out_red)
            free(c.out_redidx)
            free(c.out_base)
            free(c.out_str)
            free(c.head_val)
            free(c.tail_val)
            free(c.head_row)
            free(c.tail_row)
            if w != NULL:
                self._release(w)
        return nt
