/* Streaming (non-temporal) copy of a finished block into a large output: the output's cache
 * lines are not read first (saves 1/3 of its memory traffic) nor kept in cache.  fg_sfence()
 * after the last one makes them visible to other threads.  Plain copies where SSE2 is missing. */
#ifndef FG_STREAM_H
#define FG_STREAM_H
#include <stdint.h>
#include <string.h>
#include "fg_prefetch.h"
/* Prefetch hints for the part [lo, hi) (bytes, relative to p) of a span, one per cache line. */
static inline void fg_prefetch_part(const char *p, Py_ssize_t lo, Py_ssize_t hi) {
    for (Py_ssize_t o = lo & ~(Py_ssize_t)63; o < hi; o += 64) FG_PREFETCH_L2(p + o);
}
/* ... of a span about to be written */
static inline void fg_prefetch_part_w(const char *p, Py_ssize_t lo, Py_ssize_t hi) {
    for (Py_ssize_t o = lo & ~(Py_ssize_t)63; o < hi; o += 64) FG_PREFETCH_L2_W(p + o);
}
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
/* d[lo:hi] = (a + b) + (c + e), streamed: the memory-bandwidth probe of the fused benchmark
   (4 reads and 1 write per element, the fused forward's traffic, and nothing else) */
static void fg_probe_4r1w(double *d, const double *a, const double *b, const double *c,
                          const double *e, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t i = lo;
    if ((((uintptr_t)(d + i)) & 15) == 0)
        for (; i + 2 <= hi; i += 2)
            _mm_stream_pd(d + i, _mm_add_pd(_mm_add_pd(_mm_loadu_pd(a + i), _mm_loadu_pd(b + i)),
                                            _mm_add_pd(_mm_loadu_pd(c + i), _mm_loadu_pd(e + i))));
    for (; i < hi; i++) d[i] = (a[i] + b[i]) + (c[i] + e[i]);
}
#else
static void fg_stream_d(double *dst, const double *src, Py_ssize_t n) {
    memcpy(dst, src, (size_t)n * sizeof(double)); }
static void fg_stream_f(float *dst, const float *src, Py_ssize_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float)); }
static void fg_sfence(void) { }
static void fg_probe_4r1w(double *d, const double *a, const double *b, const double *c,
                          const double *e, Py_ssize_t lo, Py_ssize_t hi) {
    for (Py_ssize_t i = lo; i < hi; i++) d[i] = (a[i] + b[i]) + (c[i] + e[i]); }
#endif
#endif
