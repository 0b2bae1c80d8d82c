/* Begin a region of C loops that must round exactly as NumPy's unfused operations do: a * b + c
 * is never contracted into one FMA instruction.  Close it with _fp_exact_end.h.  (No include
 * guard: a file may open and close several regions.) */
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC push_options
#  pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#  pragma STDC FP_CONTRACT OFF
#endif
