/* The cpu backend's interface to the core: its table, and what the tests and the
 * tool reach directly. Everything follows the numerical contract and agrees bit for
 * bit with the reference (src/reference). */
#ifndef DWCONV_CPU_H
#define DWCONV_CPU_H

#include "dwconv_module.h"

/* The compiled-in cpu backend (backend.c). */
const dwconv_module_ops *dwconv_cpu_ops(void);

/* The fast path for a validated problem on host memory: threads OpenMP threads at
 * most (0: OpenMP's default). Returns DWCONV_ERROR_OUT_OF_MEMORY (nothing written)
 * if its scratch cannot be allocated, DWCONV_ERROR_UNSUPPORTED (nothing written) if
 * DWCONV_CPU_SIMD cannot be met or the operation is not one it has. */
dwconv_status dwconv_cpu_fast(const dwconv_problem *p, int threads);

/* The backward pass (backward.c) and the causal operations (causal.c) on host
 * memory, threads as above; a failure says why in msg, nothing written. */
dwconv_status dwconv_cpu_backward(const dwconv_problem *p, int threads, char *msg);
dwconv_status dwconv_cpu_causal(const dwconv_problem *p, int threads, char *msg);

/* The SIMD flavour the fast path uses on this CPU ("generic", ...). */
const char *dwconv_cpu_simd_name(void);

/* Why the fast path returns DWCONV_ERROR_UNSUPPORTED (DWCONV_CPU_SIMD asks for a
 * flavour this build or processor lacks), or "" when it runs. */
const char *dwconv_cpu_simd_error(void);

#endif
