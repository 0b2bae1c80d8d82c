/* exp, expm1, tanh and sigmoid in one precision, written once: fg_math_scalar.h includes this
 * twice, with FG_P = d (double) and f (float).  FG_T is the type, FG_K(NAME) the precision's
 * constant FG_NAME_P, FG_F(name) its function name_P.  No include guard, on purpose. */
#define FG_T FG__XCAT(fg_real_, FG_P)
#define FG_U FG__XCAT(fg_bits_, FG_P)
#define FG_K(NAME) FG__XCAT(FG_##NAME##_, FG_P)
#define FG_F(name) FG__XCAT(name##_, FG_P)
/* x = k ln2 + r (km = k + MAGIC): the range reduction all four share.  The constants are negated,
   never K: negating a NaN flips its sign, which the vector copies' FNMADD does not (every NaN in
   these functions is the input's, with its sign, whichever operand an FMA propagates). */
#define FG__FMA(a, b, c) FG__XCAT(FG_FMA_, FG_P)(a, b, c)
#define FG__REDUCE(X, KM, K, R) \
    FG_T KM = FG__FMA((X), FG_K(LOG2E), FG_K(MAGIC)); \
    FG_T K = KM - FG_K(MAGIC); \
    FG_T R = FG__FMA(K, -FG_K(LN2LO), FG__FMA(K, -FG_K(LN2HI), (X)));
/* 2^k = 2^k1 2^k2 with k1 = k/2 rounded: each factor stays normal down to the smallest
   subnormal result (K1M, K2M as km) */
#define FG__HALVES(K, K1M, K2M) \
    FG_T K1M = FG__FMA(K, (FG_T)0.5, FG_K(MAGIC)); \
    FG_T K2M = (K - (K1M - FG_K(MAGIC))) + FG_K(MAGIC);

static inline FG_T FG_F(fg_exp)(FG_T x) {
    FG_T xc = x < FG_K(EXP_LO) ? FG_K(EXP_LO) : (x > FG_K(EXP_HI) ? FG_K(EXP_HI) : x);
    FG__REDUCE(xc, km, k, r)
    FG__HALVES(k, k1m, k2m)
    FG_T y = (FG_F(fg__expm1_poly)(r) + (FG_T)1) * FG_F(fg__pow2)(k1m) * FG_F(fg__pow2)(k2m);
    y = x > FG_K(EXP_OVER) ? INFINITY : y;       /* NaN propagates through the polynomial */
    return x < FG_K(EXP_UNDER) ? (FG_T)0 : y;
}

static inline FG_T FG_F(fg_expm1)(FG_T x) {
    FG_T xc = x < FG_K(EXP_LO) ? FG_K(EXP_LO) : (x > FG_K(EXP_HI) ? FG_K(EXP_HI) : x);
    FG__REDUCE(xc, km, k, r)
    FG__HALVES(k, k1m, k2m)
    FG_T q = FG_F(fg__expm1_poly)(r);
    FG_T s1 = FG_F(fg__pow2)(k1m), s2 = FG_F(fg__pow2)(k2m);
    FG_T S = s1 * s2;
    FG_T small = FG__FMA(q, S, S - (FG_T)1);     /* exact 2^k - 1 up to BIG */
    FG_T big = ((q + (FG_T)1) * s1) * s2;
    FG_T y = x > FG_K(EXPM1_BIG) ? big : small;
    y = x > FG_K(EXP_OVER) ? INFINITY : y;
    return x == (FG_T)0 ? x : y;                 /* keeps the sign of zero */
}

/* tanh(x) = sign(x) e / (e + 2), e = expm1(2|x|) = S N / D - 1 (S = 2^k), so
   tanh = (S N - D) / (S N + D) = ((S - 1) D + 2 S r) / ((S + 1) D + 2 S r): one division, and
   for k = 0 the numerator is exactly 2r (no cancellation near 0).  Max error 3 ulp (against
   long double).  The sign is split off and put back with integer ops (2 instructions, not 3),
   and the clamp is written so that it compiles to one min instruction (NaN passes through). */
static inline FG_T FG_F(fg_tanh)(FG_T x) {
    FG_U sign = FG_F(fg__bits)(x) & FG_K(SIGN);
    FG_T ax = FG_F(fg__from_bits)(FG_F(fg__bits)(x) ^ sign);
    FG_T y = ax + ax;
    y = FG_K(TANH_CLAMP) < y ? FG_K(TANH_CLAMP) : y;
    FG__REDUCE(y, km, k, r)
    FG_T S = FG_F(fg__pow2)(km);
    FG_T D = FG_F(fg__exp_den)(r);
    FG_T Sr = (S + S) * r;
    FG_T q = FG__FMA(S - (FG_T)1, D, Sr) / FG__FMA(S + (FG_T)1, D, Sr);
    return FG_F(fg__from_bits)(FG_F(fg__bits)(q) ^ sign);
}

/* sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e) otherwise, with e = exp(-|x|) = S N / D in
   tanh's rational form, so sigmoid = D / (D + S N) or S N / (D + S N): one division and the
   short polynomial.  Max error 2 ulp (against long double); 0 from SIGMOID_ZERO down, as the
   unfused op gives. */
static inline FG_T FG_F(fg_sigmoid)(FG_T x) {
    FG_T z = -FG_K(FABS)(x);
    FG_T zc = z <= FG_K(SIGMOID_ZERO) ? FG_K(EXP_LO) : z;       /* 0 from SIGMOID_ZERO down */
    FG__REDUCE(zc, km, k, r)
    FG_T D = FG_F(fg__exp_den)(r);
    FG_T SN = FG__FMA(r, (FG_T)2, D) * FG_F(fg__pow2)(km + FG_K(SIGMOID_SHIFT)); /* e D 2^SHIFT */
    FG_T den = FG__FMA(SN, FG_K(SIGMOID_UNSHIFT), D);                           /* D (1 + e) */
    int pos = x >= (FG_T)0;
    FG_T q = (pos ? D : SN) / den;
    return q * (pos ? (FG_T)1 : FG_K(SIGMOID_UNSHIFT));
}

#undef FG__HALVES
#undef FG__REDUCE
#undef FG__FMA
#undef FG_F
#undef FG_K
#undef FG_U
#undef FG_T
