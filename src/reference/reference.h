/* The scalar reference: every operation written out as plainly as the numerical
 * contract (docs/numerics.md) says, one thread. It is the oracle every backend is
 * tested against, so it stays simple; the core links it (dwconv_reference_*), and so
 * do the cpu backend and the tests. */
#ifndef DWCONV_REFERENCE_H
#define DWCONV_REFERENCE_H

#include <stdint.h>

#include "dwconv_module.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs a validated problem on host memory. UNSUPPORTED, with why in msg, for an
 * operation the reference does not have; for index arrays it validates their
 * contents first (INVALID_VALUE with the message, nothing written). */
dwconv_status dwconv_reference_run(const dwconv_problem *p, char *msg);

/* ---- pieces the operations share (and the cpu backend reuses) ---- */

/* Element offset of (b, c, l) in a (B, C, *) operand. */
static inline int64_t dwconv_ref_at(const dwconv_operand *t, int64_t b, int64_t c, int64_t l) {
    return b * t->stride[0] + c * t->stride[1] + l * t->stride[2];
}

/* What the input reads at (padded) position j for output o of row (b, c): x, the
 * padding mode's value, a carried state before the row, or, for packed sequences, 0
 * or the sequence's state where j lies before the sequence of o. */
float dwconv_ref_tap(const dwconv_problem *p, int64_t b, int64_t c, int64_t o, int64_t j);

/* The pre-activation sum of forward output (b, c, o), exactly as the contract says
 * (bias, then one fmaf per tap in k order). */
float dwconv_ref_preactivation(const dwconv_problem *p, int64_t b, int64_t c, int64_t o);

/* Forward outputs of rows [r0, r1), row = b*C + c (the cpu backend splits the strided
 * case over threads with this). */
void dwconv_ref_forward_rows(const dwconv_problem *p, int64_t r0, int64_t r1);

/* Each operation. Those that need scratch return OUT_OF_MEMORY (nothing written)
 * without it; those with index arrays check them first (INVALID_VALUE and why). */
void dwconv_ref_forward(const dwconv_problem *p);
dwconv_status dwconv_ref_backward(const dwconv_problem *p, char *msg);
dwconv_status dwconv_ref_causal_forward(const dwconv_problem *p, char *msg);
dwconv_status dwconv_ref_causal_update(const dwconv_problem *p, char *msg);

/* The index arrays' rules, for every implementation that reads them on the host:
 * SUCCESS, or INVALID_VALUE with the first offending entry in msg. */
dwconv_status dwconv_ref_check_indices(const dwconv_problem *p, char *msg);

#ifdef __cplusplus
}
#endif
#endif
