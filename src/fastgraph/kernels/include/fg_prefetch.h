/* Software prefetch hints for the irregular loops in kernels/toposort.pyx (no-ops where unsupported).
 * A prefetch is only a hint: an inexact or stale address costs nothing but a wasted load. */
#ifndef FASTGRAPH_PREFETCH_H
#define FASTGRAPH_PREFETCH_H
#ifndef FG_PREFETCH_LOCALITY
#define FG_PREFETCH_LOCALITY 2
#endif
#if defined(__GNUC__) || defined(__clang__)
#define FG_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
#define FG_PREFETCH_W(p) __builtin_prefetch((const void *)(p), 1, 3)
#define FG_PREFETCH_L2(p) __builtin_prefetch((const void *)(p), 0, FG_PREFETCH_LOCALITY)
#define FG_PREFETCH_L2_W(p) __builtin_prefetch((const void *)(p), 1, FG_PREFETCH_LOCALITY)
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#include <xmmintrin.h>
#define FG_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#define FG_PREFETCH_W(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#define FG_PREFETCH_L2(p) _mm_prefetch((const char *)(p), _MM_HINT_T1)
#define FG_PREFETCH_L2_W(p) _mm_prefetch((const char *)(p), _MM_HINT_T1)
#else
#define FG_PREFETCH(p) ((void)0)
#define FG_PREFETCH_W(p) ((void)0)
#define FG_PREFETCH_L2(p) ((void)0)
#define FG_PREFETCH_L2_W(p) ((void)0)
#endif
#endif
