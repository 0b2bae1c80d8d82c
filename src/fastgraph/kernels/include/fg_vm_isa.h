/* Which instruction set's copy of the VM's loops runs, chosen at run time.
 *
 * FG_VM_ISAS lists the copies, best first: (suffix, name, check).  Each copy is the functions
 * fg_arith_<P><suffix> and fg_v<op>_<P><suffix> of its header (fg_math_avx2.h, ...); the check
 * says whether the CPU runs it.  fg_vm_isa_best() picks the first the CPU has; tests switch to
 * another (fg_vm_isa_set) to run every copy.  Switch only while no kernel runs: every block
 * reads fg_vm_active.  Adding an instruction set: its header (included by fg_vm.h), its target
 * attribute and check (fg_x86_dispatch.h), and its row here.  Every copy computes the same bits
 * (fg_math_scalar.h, fg_math_simd.h), so which one runs changes only the speed. */
#ifndef FG_VM_ISA_H
#define FG_VM_ISA_H
#include "fg_opcodes.h"
#include "fg_stream.h"

typedef void (*fg_vloop_d)(double *, const double *, Py_ssize_t);
typedef void (*fg_vloop_f)(float *, const float *, Py_ssize_t);
typedef struct {
    const char *name;
    int (*supported)(void);
    int (*arith_d)(int, double *, const double *, const double *, const double *, Py_ssize_t);
    int (*arith_f)(int, float *, const float *, const float *, const float *, Py_ssize_t);
    fg_vloop_d vec_d[FG_OP_END];        /* by opcode; NULL: no vec loop */
    fg_vloop_f vec_f[FG_OP_END];
    fg_vloop_d stream_d;                /* streaming stores of finished blocks (fg_stream.h) */
    fg_vloop_f stream_f;
} fg_vm_isa;

static int fg_cpu_baseline(void) { return 1; }
#if FG_X86_DISPATCH
#  define FG__VM_ISAS_X86(X) X(_avx512, "avx512", fg_cpu_avx512) \
                             X(_avx2, "avx2+fma", fg_cpu_avx2_fma)
#else
#  define FG__VM_ISAS_X86(X)
#endif
#define FG_VM_ISAS(X) FG__VM_ISAS_X86(X) X(_base, "baseline", fg_cpu_baseline)

/* the ops with a vec loop: every copy has all of them */
#define FG_VEC_OPS(X, SUF) X(EXP, exp, SUF) X(EXPM1, expm1, SUF) X(TANH, tanh, SUF) \
    X(SIGMOID, sigmoid, SUF) X(LOG, log, SUF) X(LOG1P, log1p, SUF) X(SIN, sin, SUF) \
    X(COS, cos, SUF)
#define FG__VEC_D(OP, op, SUF) [FG_OP_##OP] = fg_v##op##_d##SUF,
#define FG__VEC_F(OP, op, SUF) [FG_OP_##OP] = fg_v##op##_f##SUF,
#define FG__ISA_ROW(SUF, NAME, CHECK) {NAME, CHECK, fg_arith_d##SUF, fg_arith_f##SUF, \
    {FG_VEC_OPS(FG__VEC_D, SUF)}, {FG_VEC_OPS(FG__VEC_F, SUF)}, fg_stream_d##SUF, fg_stream_f##SUF},
static const fg_vm_isa fg_vm_isas[] = { FG_VM_ISAS(FG__ISA_ROW) };
#undef FG__ISA_ROW
#undef FG__VEC_F
#undef FG__VEC_D
enum { FG_VM_NISAS = sizeof(fg_vm_isas) / sizeof(fg_vm_isas[0]) };

static const fg_vm_isa *fg_vm_active = &fg_vm_isas[FG_VM_NISAS - 1];    /* baseline */

static int fg_vm_isa_best(void) {
    for (int i = 0; i < FG_VM_NISAS; i++)
        if (fg_vm_isas[i].supported()) return i;
    return FG_VM_NISAS - 1;
}
static int fg_vm_isa_count(void) { return FG_VM_NISAS; }
static const char *fg_vm_isa_name(int i) { return fg_vm_isas[i].name; }
static int fg_vm_isa_supported(int i) { return fg_vm_isas[i].supported(); }
static int fg_vm_isa_current(void) { return (int)(fg_vm_active - fg_vm_isas); }
static void fg_vm_isa_set(int i) { fg_vm_active = &fg_vm_isas[i]; }
static int fg_vm_has_vec(int k) { return fg_vm_isas[FG_VM_NISAS - 1].vec_d[k] != NULL; }

/* one instruction on one block, in the current copy: 0 when it has no such loop */
static inline int fg_vm_arith_d(int k, double *d, const double *a, const double *b,
                                const double *c, Py_ssize_t n) {
    return fg_vm_active->arith_d(k, d, a, b, c, n); }
static inline int fg_vm_arith_f(int k, float *d, const float *a, const float *b,
                                const float *c, Py_ssize_t n) {
    return fg_vm_active->arith_f(k, d, a, b, c, n); }
static inline int fg_vm_vec_d(int k, double *d, const double *a, Py_ssize_t n) {
    fg_vloop_d f = fg_vm_active->vec_d[k];
    if (f == NULL) return 0;
    f(d, a, n);
    return 1; }
/* the current copy's streaming stores: d[0:n] = a[0:n], the lines not kept in cache */
static inline void fg_stream_d(double *d, const double *a, Py_ssize_t n) {
    fg_vm_active->stream_d(d, a, n); }
static inline void fg_stream_f(float *d, const float *a, Py_ssize_t n) {
    fg_vm_active->stream_f(d, a, n); }
static inline int fg_vm_vec_f(int k, float *d, const float *a, Py_ssize_t n) {
    fg_vloop_f f = fg_vm_active->vec_f[k];
    if (f == NULL) return 0;
    f(d, a, n);
    return 1; }

#endif
