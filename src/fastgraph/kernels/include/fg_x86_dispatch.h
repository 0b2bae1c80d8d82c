/* Run-time ISA dispatch, declared once for every module that has it: on x86 with GCC or clang
 * a loop may be compiled again for a wider instruction set, with that set's target attribute,
 * and chosen at run time when the CPU has it; elsewhere FG_X86_DISPATCH is 0 and only the
 * baseline copy exists.  Each module keeps its own switch (tests force the baseline copy).
 *   FG_AVX2, fg_cpu_avx2_fma()   AVX2 + FMA (Haswell and later)
 * A wider set is one more attribute and check here. */
#ifndef FG_X86_DISPATCH_H
#define FG_X86_DISPATCH_H
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#  define FG_X86_DISPATCH 1
#  define FG_AVX2 __attribute__((target("avx2,fma")))   /* the second copy's target */
static int fg_cpu_avx2_fma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
#  define FG_X86_DISPATCH 0
static int fg_cpu_avx2_fma(void) { return 0; }
#endif
#endif
