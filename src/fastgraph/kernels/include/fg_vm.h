/* Everything in C that the fused-kernel VM (kernels/vm.pyx) runs on one block, in one include.
 *
 *   fg_opcodes.h           the opcodes (one X-macro row each)
 *   fg_math_scalar.h       fastgraph's transcendentals, one element at a time
 *   fg_vm_loops.h          the block loops, as templates per instruction set
 *   fg_math_baseline.h     ... compiled for the baseline instruction set
 *   fg_math_avx2.h         ... and for AVX2 + FMA (x86, GCC or clang)
 *   fg_math_avx512.h       ... and for AVX-512 F, DQ and VL (x86, GCC or clang)
 *   fg_vm_libm.h           the libm loops (compiled once)
 *   fg_vm_isa.h            the copies, and which one runs
 *   fg_stream.h            non-temporal stores of finished blocks (a copy per instruction set)
 *
 * The math and the loops are compiled with fp-contract=off: every FMA is written out, so that
 * every copy computes the same operations and so the same bits (fg_math_scalar.h).  And with
 * no-trapping-math: their branch-free selects only
 * vectorise when the compiler may assume FP compares do not trap, and nothing here reads the FP
 * exception flags, so no result changes.  Their loops start on 32-byte boundaries: the arithmetic
 * loops are a few instructions long, and one that straddles a 64-byte line ran ~1.4x slower in
 * cache (an add, float64) than the same code within one.  (Every function the loops inline is
 * defined inside the region, so that caller and callee have the same options.) */
#ifndef FG_VM_H
#define FG_VM_H
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "fg_x86_dispatch.h"
#include "fg_opcodes.h"

#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC push_options
#  pragma GCC optimize("no-trapping-math")
#  pragma GCC optimize("fp-contract=off")
#  pragma GCC optimize("align-loops=32")
#endif
#if defined(__clang__)
#  pragma STDC FP_CONTRACT OFF
#endif
#include "fg_math_scalar.h"
#include "fg_vm_loops.h"
#include "fg_math_baseline.h"
#if FG_X86_DISPATCH
#  include "fg_math_avx2.h"
#  include "fg_math_avx512.h"
#endif
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC pop_options
#endif

#include "fg_vm_libm.h"
#include "fg_stream.h"
#include "fg_vm_isa.h"
#endif
