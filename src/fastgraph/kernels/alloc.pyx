# cython: language_level=3
"""A caching data allocator for NumPy arrays (``PyDataMem_Handler``), used around plan execution.

Every fresh 80 MB array costs ~23 ms of page faults here (glibc returns large blocks to the OS with
``munmap`` when they are freed, and maps new ones on the next allocation).  This handler keeps
freed *large* blocks (>= ``min_cached`` bytes, 1 MiB by default) in a small size-keyed cache with a
total cap, protected by a lock, and hands them out again on the next allocation of the same size:
already-mapped memory, no faults.  Small blocks go straight to ``malloc``/``free``.

It is installed only while a compiled plan runs (:func:`enter` / :func:`exit`, NumPy's context
variable, so other threads and code outside plans are unaffected); every array allocated then
remembers the handler and returns its block to the cache when the caller drops it -- whenever and
in whatever thread that happens.

Blocks carry a 64-byte header holding their capacity, so ``free`` never trusts the size NumPy
passes; data is 64-byte aligned.  ``calloc`` zeroes reused blocks; ``realloc`` copies.
"""

cimport numpy as cnp

cnp.import_array()

cdef extern from *:
    """
    #include <stdlib.h>
    #include <string.h>
    #include <stdint.h>
    #include "pythread.h"
    #ifdef __linux__
    #include <sys/mman.h>
    #endif

    #define FG_HDR 64
    #define FG_SLOTS 32
    #define FG_MAGIC 0x66676d656d626c6bULL

    /* base: what malloc/calloc returned (calloc's block is over-allocated by 64 bytes so the
       header, and the data after it, can start on a 64-byte boundary) */
    typedef struct { size_t cap; uint64_t magic; void *base; } fg_hdr_t;

    static void fg_release(void *h) { free(((fg_hdr_t *)h)->base); }

    static PyThread_type_lock fg_lock = NULL;
    static void *fg_blocks[FG_SLOTS];     /* header pointers, most recent last */
    static size_t fg_sizes[FG_SLOTS];
    static int fg_n = 0;
    static size_t fg_total = 0;
    static size_t fg_limit = (size_t)1 << 30;          /* 1 GiB */
    static size_t fg_min = (size_t)1 << 20;            /* 1 MiB */
    static size_t fg_hits = 0, fg_misses = 0, fg_returned = 0, fg_released = 0;

    static void *fg_raw_alloc(size_t size, int zero) {
        void *base = NULL;
        char *h;
        if (size > SIZE_MAX - FG_HDR - 64) return NULL;
        if (zero) {   /* calloc keeps fresh pages lazily zeroed; it aligns only to 16 bytes */
            base = calloc(1, size + FG_HDR + 64);
        } else if (posix_memalign(&base, 64, size + FG_HDR) != 0) {
            base = NULL;
        }
        if (base == NULL) return NULL;
        h = (char *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (size >= ((size_t)4 << 20)) {   /* as NumPy's own allocator: ask for huge pages */
            uintptr_t a = ((uintptr_t)base + 4095) & ~(uintptr_t)4095;
            uintptr_t e = ((uintptr_t)base + size + FG_HDR) & ~(uintptr_t)4095;
            if (e > a) madvise((void *)a, e - a, MADV_HUGEPAGE);
        }
    #endif
        ((fg_hdr_t *)h)->cap = size;
        ((fg_hdr_t *)h)->magic = FG_MAGIC;
        ((fg_hdr_t *)h)->base = base;
        return h + FG_HDR;
    }

    /* a cached block of exactly `size` bytes, or NULL */
    static void *fg_take(size_t size) {
        void *base = NULL;
        int i;
        if (size < fg_min || fg_lock == NULL) return NULL;
        PyThread_acquire_lock(fg_lock, WAIT_LOCK);
        for (i = fg_n - 1; i >= 0; i--) {
            if (fg_sizes[i] == size) {
                base = fg_blocks[i];
                fg_total -= size;
                fg_n--;
                memmove(fg_blocks + i, fg_blocks + i + 1, (fg_n - i) * sizeof(void *));
                memmove(fg_sizes + i, fg_sizes + i + 1, (fg_n - i) * sizeof(size_t));
                break;
            }
        }
        if (base != NULL) fg_hits++; else fg_misses++;
        PyThread_release_lock(fg_lock);
        return base == NULL ? NULL : (char *)base + FG_HDR;
    }

    static void *fg_malloc(void *ctx, size_t size) {
        void *p = fg_take(size);
        return p != NULL ? p : fg_raw_alloc(size, 0);
    }

    static void *fg_calloc(void *ctx, size_t nelem, size_t elsize) {
        size_t size;
        void *p;
        if (elsize != 0 && nelem > SIZE_MAX / elsize) return NULL;
        size = nelem * elsize;
        p = fg_take(size);
        if (p != NULL) {
            memset(p, 0, size);
            return p;
        }
        return fg_raw_alloc(size, 1);
    }

    static void fg_free(void *ctx, void *ptr, size_t size_hint) {
        fg_hdr_t *h;
        size_t cap;
        void *evict[FG_SLOTS];
        int ne = 0, i;
        if (ptr == NULL) return;
        h = (fg_hdr_t *)((char *)ptr - FG_HDR);
        cap = h->cap;
        if (cap < fg_min || cap > fg_limit || fg_lock == NULL) {
            fg_release(h);
            return;
        }
        PyThread_acquire_lock(fg_lock, WAIT_LOCK);
        /* make room: drop the oldest blocks */
        while (fg_n > 0 && (fg_n >= FG_SLOTS || fg_total + cap > fg_limit)) {
            evict[ne++] = fg_blocks[0];
            fg_total -= fg_sizes[0];
            fg_n--;
            memmove(fg_blocks, fg_blocks + 1, fg_n * sizeof(void *));
            memmove(fg_sizes, fg_sizes + 1, fg_n * sizeof(size_t));
        }
        fg_blocks[fg_n] = h;
        fg_sizes[fg_n] = cap;
        fg_n++;
        fg_total += cap;
        fg_returned++;
        fg_released += ne;
        PyThread_release_lock(fg_lock);
        for (i = 0; i < ne; i++) fg_release(evict[i]);
    }

    static void *fg_realloc(void *ctx, void *ptr, size_t new_size) {
        void *p;
        size_t old;
        if (ptr == NULL) return fg_malloc(ctx, new_size);
        old = ((fg_hdr_t *)((char *)ptr - FG_HDR))->cap;
        if (new_size <= old && old < fg_min) return ptr;   /* small: shrink in place */
        p = fg_malloc(ctx, new_size);
        if (p == NULL) return NULL;                        /* the old block stays valid */
        memcpy(p, ptr, old < new_size ? old : new_size);
        fg_free(ctx, ptr, old);
        return p;
    }

    static void fg_trim(void) {
        void *evict[FG_SLOTS];
        int ne, i;
        if (fg_lock == NULL) return;
        PyThread_acquire_lock(fg_lock, WAIT_LOCK);
        ne = fg_n;
        for (i = 0; i < ne; i++) evict[i] = fg_blocks[i];
        fg_released += ne;
        fg_n = 0;
        fg_total = 0;
        PyThread_release_lock(fg_lock);
        for (i = 0; i < ne; i++) fg_release(evict[i]);
    }

    static PyDataMem_Handler fg_handler = {
        "fastgraph_cache",
        1,
        {NULL, fg_malloc, fg_calloc, fg_realloc, fg_free}
    };

    static int fg_init(void) {
        if (fg_lock == NULL) fg_lock = PyThread_allocate_lock();
        return fg_lock == NULL ? -1 : 0;
    }

    /* in a forked child the lock may have been held by a thread that no longer exists */
    static void fg_after_fork(void) {
        fg_lock = PyThread_allocate_lock();
    }

    static PyObject *fg_capsule(void) {
        return PyCapsule_New(&fg_handler, "mem_handler", NULL);
    }
    """
    int fg_init()
    void fg_after_fork()
    object fg_capsule()
    void fg_trim() nogil
    size_t fg_total, fg_limit, fg_min, fg_hits, fg_misses, fg_returned, fg_released
    int fg_n
    object PyDataMem_SetHandler(object handler)


if fg_init() != 0:
    raise MemoryError("fastgraph.kernels.alloc: cannot allocate the cache lock")


def _after_fork_in_child():
    fg_after_fork()


import os as _os
if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_after_fork_in_child)

#: the handler capsule (``"mem_handler"``), usable with NumPy's handler API
HANDLER = fg_capsule()


def enter():
    """Install the caching handler for this thread/context; returns a token for :func:`exit`."""
    return PyDataMem_SetHandler(HANDLER)


def exit(token):
    """Restore the handler that was current before :func:`enter` returned ``token``."""
    PyDataMem_SetHandler(token)


class cached:
    """``with fastgraph.kernels.alloc.cached():`` -- arrays allocated inside use the caching handler."""

    def __enter__(self):
        self._tok = PyDataMem_SetHandler(HANDLER)
        return self

    def __exit__(self, *exc):
        PyDataMem_SetHandler(self._tok)
        return False


def trim():
    """Free every cached block (back to the OS)."""
    fg_trim()


def set_limits(limit=None, min_cached=None):
    """Total bytes the cache may hold (default 1 GiB) and the smallest block it keeps (1 MiB)."""
    global fg_limit, fg_min
    if limit is not None:
        fg_limit = <size_t>max(0, int(limit))
    if min_cached is not None:
        fg_min = <size_t>max(1, int(min_cached))
    if limit is not None:
        fg_trim()


def stats():
    """``dict``: cached blocks and bytes, limits, hits, misses, blocks returned and released."""
    return {"blocks": fg_n, "bytes": fg_total, "limit": fg_limit, "min_cached": fg_min,
            "hits": fg_hits, "misses": fg_misses, "returned": fg_returned,
            "released": fg_released}
