/* Run-time ISA dispatch, declared once for every module that has it: on x86 with GCC or clang
 * a loop may be compiled again for a wider instruction set, with that set's target attribute,
 * and chosen at run time when the CPU has it; elsewhere FG_X86_DISPATCH is 0 and only the
 * baseline copy exists.  Each module keeps its own switch (tests force the baseline copy).
 *   FG_AVX2, fg_cpu_avx2_fma()   AVX2 + FMA (Haswell and later)
 *   FG_AVX512, fg_cpu_avx512()   AVX-512 F, DQ and VL, with AVX2 + FMA (Skylake-X, Zen 4 and
 *                                later), 512-bit vectors preferred where the compiler
 *                                vectorises (its generic tuning would stay at 256)
 * A wider set is one more attribute and check here.  __builtin_cpu_supports also checks that the
 * OS saves the registers (XCR0), so a set it reports is one the program may use. */
#ifndef FG_X86_DISPATCH_H
#define FG_X86_DISPATCH_H
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#  define FG_X86_DISPATCH 1
#  define FG_AVX2 __attribute__((target("avx2,fma")))   /* the second copy's target */
#  define FG_AVX512 __attribute__((target( \
        "avx512f,avx512dq,avx512vl,avx2,fma,prefer-vector-width=512")))
static int fg_cpu_avx2_fma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
static inline int fg_cpu_avx512(void) {
    __builtin_cpu_init();
    return fg_cpu_avx2_fma() && __builtin_cpu_supports("avx512f")
           && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}
#else
#  define FG_X86_DISPATCH 0
static int fg_cpu_avx2_fma(void) { return 0; }
static inline int fg_cpu_avx512(void) { return 0; }
#endif
#endif
