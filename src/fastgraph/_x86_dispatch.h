/* Run-time ISA dispatch, declared once for every module that has it: on x86 with GCC or clang
 * a loop may be compiled a second time for Haswell (AVX2 + FMA) with FG_AVX2 and chosen when
 * fg_cpu_avx2_fma() finds both on the CPU; elsewhere FG_X86_DISPATCH is 0 and only the
 * baseline copy exists.  Each module keeps its own switch (tests force the baseline copy). */
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
