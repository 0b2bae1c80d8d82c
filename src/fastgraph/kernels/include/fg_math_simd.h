/* float64 tanh and sigmoid written once in vector operations, for every instruction set with
 * vectors and FMA: the header of an instruction set (fg_math_avx2.h) defines the operations below
 * and includes fg_math_isa.h, which includes this file, which defines fg_vtanh_d<FGV_SUF>, fg_vsigmoid_d<FGV_SUF> and
 * fg_vtanh_fma_d<FGV_SUF> (tanh(a * b + c): the tanh_fma superinstruction).  Every
 * instruction set so computes the same polynomial with the same FMAs, in the same order: the
 * same bits, whatever the vector width.
 *
 *   FGV_SUF, FGV_ATTR  the functions' name suffix and target attribute
 *   FGV_LANES          doubles per vector; FGV_NMAX independent vectors in flight (see below)
 *   FGV_T, FGV_MASK_T  the vector and comparison-mask types
 *   FGV_LOAD(p) FGV_STORE(p, v) FGV_SET1(x) FGV_ZERO()           unaligned loads and stores
 *   FGV_ADD FGV_SUB FGV_MUL FGV_DIV FGV_MIN FGV_MAX (a, b)       IEEE lane-wise; MIN/MAX return
 *                                                                b when either is NaN
 *   FGV_FMADD(a, b, c) = a b + c, FGV_FNMADD(a, b, c) = c - a b  one rounding
 *   FGV_AND FGV_ANDNOT FGV_OR FGV_XOR (a, b)                     bitwise; ANDNOT = ~a & b
 *   FGV_POW2(km, e)        2^(k + e) from km = k + FG_MAGIC_d, built in the exponent field
 *   FGV_GE(a, b)           mask of a >= b (ordered, quiet); FGV_BLEND(a, b, m): b where m
 *
 * The algorithms are fg_tanh_d's and fg_sigmoid_d's (fg_math_scalar_generic.h).  GCC's
 * vectorisation of the scalar code spilled constants to the stack and split (S - 1) D + 2 S r
 * into a multiply and an FMA: these loops are ~20% (tanh) and ~5-10% (sigmoid) faster in cache.
 * tanh works on h = r / 2 (the range reduction of |x| rather than of 2|x|, exactly r / 2), with
 * the polynomial's coefficients scaled by powers of two to match, so the numerator
 * (S - 1) D' + 2 S h (D' = D / 2) is one FMA with an exact product.  Both are latency-bound
 * (a ~60-cycle chain per vector, more than the out-of-order window hides), so the chain is kept
 * short (|x| is taken beside the sign rather than from it, and D is one FMA, u p + (1 - h),
 * instead of 1 - (h - u p)) and FGV_NMAX chains run side by side, one statement at a time
 * across them.  Max error 2.4 ulp (tanh) and 2.2 ulp (sigmoid) against long double.  A block's
 * last n % FGV_LANES elements go through the same code (padded), so an element's result does not
 * depend on where it sits in a block, nor on FGV_NMAX.  No include guard: once per instruction
 * set (from fg_math_isa.h), and the FGV_ operations are undefined at the end, ready for the
 * next one. */
#define FGV__NAME(name) FG__XCAT(name, FGV_SUF)
#define FGV__C(v) FGV_SET1(v)
#define FGV__EACH(S) _Pragma("GCC unroll 4") for (int j = 0; j < N; j++) { S; }
/* X = K ln2 / SC + R, |R| <= ln2 / (2 SC), with KM = K + FG_MAGIC_d */
#define FGV__REDUCE(X, KM, K, R, SC) \
    FGV__EACH(KM[j] = FGV_FMADD(X[j], FGV__C(SC * FG_LOG2E_d), FGV__C(FG_MAGIC_d))) \
    FGV__EACH(K[j] = FGV_SUB(KM[j], FGV__C(FG_MAGIC_d))) \
    FGV__EACH(R[j] = FGV_FNMADD(K[j], FGV__C(FG_LN2HI_d / SC), X[j])) \
    FGV__EACH(R[j] = FGV_FNMADD(K[j], FGV__C(FG_LN2LO_d / SC), R[j]))
/* F P(t), fg__exp_den_d's polynomial in t = r^2, evaluated from T = t / S2 (T2 = T^2): the
   coefficients scaled by F and powers of S2 (powers of two, so exactly) */
#define FGV__EXP_DEN_POLY(T, T2, PA, PB, P, F, S2) \
    FGV__EACH(PA[j] = FGV_FMADD(T[j], FGV__C((F) * (S2) * FG__EXP_P2), FGV__C((F) * FG__EXP_P1))) \
    FGV__EACH(PB[j] = FGV_FMADD(T[j], FGV__C((F) * (S2) * (S2) * (S2) * FG__EXP_P4), \
                                FGV__C((F) * (S2) * (S2) * FG__EXP_P3))) \
    FGV__EACH(PB[j] = FGV_FMADD( \
        T2[j], FGV__C((F) * (S2) * (S2) * (S2) * (S2) * FG__EXP_P5), PB[j])) \
    FGV__EACH(P[j] = FGV_FMADD(T2[j], PB[j], PA[j]))

/* N (1..FGV_NMAX, a constant once inlined) vectors of tanh from a to d; with FMA (a constant
   too) of tanh(a * b + c), the product and the sum rounded apart as the unfused ops do */
FGV_ATTR static inline __attribute__((always_inline)) void FGV__NAME(fg__tanh_vn)(
        double *d, const double *a, const double *b, const double *c, const int N,
        const int FMA) {
    FGV_T sign[FGV_NMAX], ax[FGV_NMAX], km[FGV_NMAX], k[FGV_NMAX], h[FGV_NMAX];
    FGV_T S[FGV_NMAX], u[FGV_NMAX], u2[FGV_NMAX], pa[FGV_NMAX], pb[FGV_NMAX];
    FGV_T p[FGV_NMAX], D[FGV_NMAX], Sh[FGV_NMAX], num[FGV_NMAX], den[FGV_NMAX];
    FGV__EACH(ax[j] = FGV_LOAD(a + FGV_LANES * j))
    if (FMA) {
        FGV__EACH(ax[j] = FGV_MUL(ax[j], FGV_LOAD(b + FGV_LANES * j)))
        FGV__EACH(ax[j] = FGV_ADD(ax[j], FGV_LOAD(c + FGV_LANES * j)))
    }
    FGV__EACH(sign[j] = FGV_AND(ax[j], FGV__C(-0.0)))
    FGV__EACH(ax[j] = FGV_ANDNOT(FGV__C(-0.0), ax[j]))      /* |x|, beside the sign */
    FGV__EACH(ax[j] = FGV_MIN(FGV__C(20.0), ax[j]))         /* (20 < ax) ? 20 : ax: NaN passes */
    FGV__REDUCE(ax, km, k, h, 2.0)                          /* h = r / 2, r of 2|x| */
    FGV__EACH(S[j] = FGV_POW2(km[j], 0))
    FGV__EACH(u[j] = FGV_MUL(h[j], h[j]))
    FGV__EACH(u2[j] = FGV_MUL(u[j], u[j]))
    FGV__EXP_DEN_POLY(u, u2, pa, pb, p, 2.0, 4.0)           /* 2 P(t), t = r^2 = 4u */
    FGV__EACH(D[j] = FGV_FMADD(u[j], p[j], FGV_SUB(FGV__C(1.0), h[j])))     /* D / 2 */
    FGV__EACH(Sh[j] = FGV_MUL(FGV_ADD(S[j], S[j]), h[j]))                   /* exact */
    FGV__EACH(num[j] = FGV_FMADD(FGV_SUB(S[j], FGV__C(1.0)), D[j], Sh[j]))
    FGV__EACH(den[j] = FGV_FMADD(FGV_ADD(S[j], FGV__C(1.0)), D[j], Sh[j]))
    FGV__EACH(FGV_STORE(d + FGV_LANES * j, FGV_XOR(FGV_DIV(num[j], den[j]), sign[j])))
}

/* N vectors of sigmoid from a to d */
FGV_ATTR static inline __attribute__((always_inline)) void FGV__NAME(fg__sigmoid_vn)(
        double *d, const double *a, const int N) {
    FGV_T x[FGV_NMAX], z[FGV_NMAX], km[FGV_NMAX], k[FGV_NMAX], r[FGV_NMAX];
    FGV_T t[FGV_NMAX], t2[FGV_NMAX], pa[FGV_NMAX], pb[FGV_NMAX], p[FGV_NMAX];
    FGV_T D[FGV_NMAX], S[FGV_NMAX], SN[FGV_NMAX], den[FGV_NMAX];
    FGV_MASK_T pos[FGV_NMAX];
    FGV__EACH(x[j] = FGV_LOAD(a + FGV_LANES * j))
    FGV__EACH(z[j] = FGV_OR(x[j], FGV__C(-0.0)))                            /* -|x| */
    /* EXP_LO from SIGMOID_ZERO down: 0 there, as unfused (NaN passes) */
    FGV__EACH(z[j] = FGV_BLEND(z[j], FGV__C(FG_EXP_LO_d),
                               FGV_GE(FGV__C(FG_SIGMOID_ZERO_d), z[j])))
    FGV__REDUCE(z, km, k, r, 1.0)
    FGV__EACH(t[j] = FGV_MUL(r[j], r[j]))
    FGV__EACH(t2[j] = FGV_MUL(t[j], t[j]))
    FGV__EXP_DEN_POLY(t, t2, pa, pb, p, 1.0, 1.0)
    FGV__EACH(D[j] = FGV_FMADD(t[j], p[j], FGV_SUB(FGV__C(2.0), r[j])))
    FGV__EACH(S[j] = FGV_POW2(km[j], 54))                                   /* 2^(k+54) */
    FGV__EACH(SN[j] = FGV_MUL(FGV_FMADD(r[j], FGV__C(2.0), D[j]), S[j]))    /* e D 2^54 */
    FGV__EACH(den[j] = FGV_FMADD(SN[j], FGV__C(FG_SIGMOID_UNSHIFT_d), D[j]))
    FGV__EACH(pos[j] = FGV_GE(x[j], FGV_ZERO()))
    FGV__EACH(FGV_STORE(d + FGV_LANES * j, FGV_MUL(
        FGV_DIV(FGV_BLEND(SN[j], D[j], pos[j]), den[j]),
        FGV_BLEND(FGV__C(FG_SIGMOID_UNSHIFT_d), FGV__C(1.0), pos[j]))))
}

/* The block loop: FGV_NMAX vectors at a time, then one, then the padded rest */
#define FGV__LOOP(NAME, BLOCK) \
FGV_ATTR static void FGV__NAME(fg_v##NAME##_d)(double *d, const double *a, Py_ssize_t n) { \
    Py_ssize_t i = 0; \
    for (; i + FGV_LANES * FGV_NMAX <= n; i += FGV_LANES * FGV_NMAX) \
        BLOCK(d + i, a + i, FGV_NMAX); \
    for (; i + FGV_LANES <= n; i += FGV_LANES) BLOCK(d + i, a + i, 1); \
    if (i < n) { \
        double t[FGV_LANES] = {0.0}; \
        memcpy(t, a + i, (size_t)(n - i) * sizeof(double)); \
        BLOCK(t, t, 1); \
        memcpy(d + i, t, (size_t)(n - i) * sizeof(double)); } }
#define FGV__TANH(D, A, N) FGV__NAME(fg__tanh_vn)(D, A, NULL, NULL, N, 0)
FGV__LOOP(tanh, FGV__TANH)
FGV__LOOP(sigmoid, FGV__NAME(fg__sigmoid_vn))
/* tanh(a * b + c) (the tanh_fma superinstruction): the same loop over three operands; the
   padded rest pads all three */
FGV_ATTR static void FGV__NAME(fg_vtanh_fma_d)(double *d, const double *a, const double *b,
                                              const double *c, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + FGV_LANES * FGV_NMAX <= n; i += FGV_LANES * FGV_NMAX)
        FGV__NAME(fg__tanh_vn)(d + i, a + i, b + i, c + i, FGV_NMAX, 1);
    for (; i + FGV_LANES <= n; i += FGV_LANES)
        FGV__NAME(fg__tanh_vn)(d + i, a + i, b + i, c + i, 1, 1);
    if (i < n) {
        double t[FGV_LANES] = {0.0}, tb[FGV_LANES] = {0.0}, tc[FGV_LANES] = {0.0};
        memcpy(t, a + i, (size_t)(n - i) * sizeof(double));
        memcpy(tb, b + i, (size_t)(n - i) * sizeof(double));
        memcpy(tc, c + i, (size_t)(n - i) * sizeof(double));
        FGV__NAME(fg__tanh_vn)(t, t, tb, tc, 1, 1);
        memcpy(d + i, t, (size_t)(n - i) * sizeof(double)); } }

#undef FGV__TANH
#undef FGV__LOOP
#undef FGV__EXP_DEN_POLY
#undef FGV__REDUCE
#undef FGV__EACH
#undef FGV__C
#undef FGV__NAME
#undef FGV_BLEND
#undef FGV_GE
#undef FGV_POW2
#undef FGV_XOR
#undef FGV_OR
#undef FGV_ANDNOT
#undef FGV_AND
#undef FGV_FNMADD
#undef FGV_FMADD
#undef FGV_MAX
#undef FGV_MIN
#undef FGV_DIV
#undef FGV_MUL
#undef FGV_SUB
#undef FGV_ADD
#undef FGV_ZERO
#undef FGV_SET1
#undef FGV_STORE
#undef FGV_LOAD
#undef FGV_MASK_T
#undef FGV_T
#undef FGV_NMAX
#undef FGV_LANES
