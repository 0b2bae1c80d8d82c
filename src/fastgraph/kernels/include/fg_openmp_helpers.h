/* OpenMP shims: the real runtime when compiled with OpenMP, serial stand-ins otherwise.
 *
 * Cython's prange already degrades to a plain loop without _OPENMP; this header does the same
 * for the runtime functions, so FASTGRAPH_OPENMP=0 builds compile and run single-threaded. */
#ifndef FASTGRAPH_OPENMP_HELPERS_H
#define FASTGRAPH_OPENMP_HELPERS_H

#ifdef _OPENMP
#include <omp.h>
#define FG_OPENMP_ENABLED 1
static inline int fg_omp_get_max_threads(void) { return omp_get_max_threads(); }
static inline int fg_omp_get_thread_num(void) { return omp_get_thread_num(); }
static inline int fg_omp_get_num_threads(void) { return omp_get_num_threads(); }
static inline void fg_omp_set_num_threads(int n) { omp_set_num_threads(n); }
#else
#define FG_OPENMP_ENABLED 0
static inline int fg_omp_get_max_threads(void) { return 1; }
static inline int fg_omp_get_thread_num(void) { return 0; }
static inline int fg_omp_get_num_threads(void) { return 1; }
static inline void fg_omp_set_num_threads(int n) { (void)n; }
#endif

#endif
