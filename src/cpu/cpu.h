/* The cpu backend's internal interface: the scalar reference (the oracle) and the
 * fast OpenMP path. Both follow the numerical contract and agree bit for bit. */
#ifndef DWCONV_CPU_H
#define DWCONV_CPU_H

#include "dwconv_module.h"

/* One output y[b, c, o], computed exactly as the contract says, any options. */
float dwconv_cpu_output(const dwconv_plan *plan, const void *x, const void *weight,
                        const void *bias, int64_t b, int64_t c, int64_t o);

/* Obviously right: every output through dwconv_cpu_output, one thread. */
void dwconv_cpu_reference(const dwconv_plan *plan, const void *x, const void *weight,
                          const void *bias, void *y);

/* The fast path: threads OpenMP threads (0: OpenMP's default). Returns
 * DWCONV_ERROR_OUT_OF_MEMORY (nothing written) if its scratch cannot be allocated,
 * DWCONV_ERROR_UNSUPPORTED (nothing written) if DWCONV_CPU_SIMD cannot be met. */
dwconv_status dwconv_cpu_fast(const dwconv_plan *plan, const void *x, const void *weight,
                              const void *bias, void *y, int threads);

/* The SIMD flavour the fast path uses on this CPU ("generic", ...). */
const char *dwconv_cpu_simd_name(void);

/* Why the fast path returns DWCONV_ERROR_UNSUPPORTED (DWCONV_CPU_SIMD asks for a
 * flavour this build or processor lacks), or "" when it runs. */
const char *dwconv_cpu_simd_error(void);

#endif
