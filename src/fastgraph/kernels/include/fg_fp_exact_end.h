/* End a region opened by _fp_exact_begin.h. */
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC pop_options
#endif
