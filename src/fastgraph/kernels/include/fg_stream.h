/* Streaming (non-temporal) copy of a finished block into a large output: the output's cache
 * lines are not read first (saves 1/3 of its memory traffic) nor kept in cache.  fg_sfence()
 * after the last one makes them visible to other threads.  Plain copies where SSE2 is missing.
 * One copy per instruction set, like the VM's loops (fg_vm_isa.h picks the running one:
 * fg_stream_d, fg_stream_f): 16-byte stores in the baseline copy, 32 and 64 in the AVX2 and
 * AVX-512 ones (after 16-byte stores up to the first such boundary), so a cache line takes one
 * store instead of four.  A copy moves the same bits whatever its width. */
#ifndef FG_STREAM_H
#define FG_STREAM_H
#include <stdint.h>
#include <string.h>
#include "fg_prefetch.h"
#include "fg_x86_dispatch.h"
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
static void fg_stream_d_base(double *dst, const double *src, Py_ssize_t n) {
    Py_ssize_t i = 0;
    if ((((uintptr_t)dst) & 15) == 0)
        for (; i + 2 <= n; i += 2) _mm_stream_pd(dst + i, _mm_loadu_pd(src + i));
    for (; i < n; i++) dst[i] = src[i];
}
static void fg_stream_f_base(float *dst, const float *src, Py_ssize_t n) {
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
static void fg_stream_d_base(double *dst, const double *src, Py_ssize_t n) {
    memcpy(dst, src, (size_t)n * sizeof(double)); }
static void fg_stream_f_base(float *dst, const float *src, Py_ssize_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float)); }
static void fg_sfence(void) { }
static void fg_probe_4r1w(double *d, const double *a, const double *b, const double *c,
                          const double *e, Py_ssize_t lo, Py_ssize_t hi) {
    for (Py_ssize_t i = lo; i < hi; i++) d[i] = (a[i] + b[i]) + (c[i] + e[i]); }
#endif
#if FG_X86_DISPATCH
#  include <immintrin.h>
/* The wide copies: 16-byte stores while dst + i is not on a W-byte boundary, W-byte stores, then
   the 16-byte and scalar tail of the baseline copy.  A dst that is not 16-byte aligned is copied
   element by element, as the baseline copy does. */
#define FG__STREAM_WIDE(SUF, ATTR, W, PD, PS) \
ATTR static void fg_stream_d##SUF(double *dst, const double *src, Py_ssize_t n) { \
    Py_ssize_t i = 0; \
    if ((((uintptr_t)dst) & 15) == 0) { \
        for (; i + 2 <= n && (((uintptr_t)(dst + i)) & (W - 1)); i += 2) \
            _mm_stream_pd(dst + i, _mm_loadu_pd(src + i)); \
        for (; i + W / 8 <= n; i += W / 8) PD(dst + i, src + i); \
        for (; i + 2 <= n; i += 2) _mm_stream_pd(dst + i, _mm_loadu_pd(src + i)); \
    } \
    for (; i < n; i++) dst[i] = src[i]; } \
ATTR static void fg_stream_f##SUF(float *dst, const float *src, Py_ssize_t n) { \
    Py_ssize_t i = 0; \
    if ((((uintptr_t)dst) & 15) == 0) { \
        for (; i + 4 <= n && (((uintptr_t)(dst + i)) & (W - 1)); i += 4) \
            _mm_stream_ps(dst + i, _mm_loadu_ps(src + i)); \
        for (; i + W / 4 <= n; i += W / 4) PS(dst + i, src + i); \
        for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i)); \
    } \
    for (; i < n; i++) dst[i] = src[i]; }
#define FG__ST256D(d, s) _mm256_stream_pd(d, _mm256_loadu_pd(s))
#define FG__ST256S(d, s) _mm256_stream_ps(d, _mm256_loadu_ps(s))
#define FG__ST512D(d, s) _mm512_stream_pd(d, _mm512_loadu_pd(s))
#define FG__ST512S(d, s) _mm512_stream_ps(d, _mm512_loadu_ps(s))
FG__STREAM_WIDE(_avx2, FG_AVX2, 32, FG__ST256D, FG__ST256S)
FG__STREAM_WIDE(_avx512, FG_AVX512, 64, FG__ST512D, FG__ST512S)
#undef FG__ST512S
#undef FG__ST512D
#undef FG__ST256S
#undef FG__ST256D
#undef FG__STREAM_WIDE
#endif
#endif
