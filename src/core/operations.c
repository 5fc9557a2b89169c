/* The operations' public entry points: validate (validate_*.c), then run on the
 * context's backend (run.c) or, for the reference entry points, on the oracle. */
#include <config.h>

#include "internal.h"
#include "reference.h"

#define REQUIRE_CONTEXT(ctx, who)                                                        \
    DWCONV_REQUIRE(ctx, DWCONV_ERROR_NULL_POINTER, "%s: context is NULL", who)

/* The oracle of a validated problem, with its reason when it has none for it. */
static dwconv_status run_reference(const dwconv_problem *p, const char *who) {
    char msg[DWCONV_MSG_SIZE] = "";
    dwconv_status st = dwconv_reference_run(p, msg);
    return st ? dwconv_fail(st, "%s: %s", who, msg) : DWCONV_SUCCESS;
}

dwconv_status dwconv_forward(dwconv_context *context, const dwconv_desc *desc, const void *x,
                             const void *weight, const void *bias, void *y) {
    static const char who[] = "dwconv_forward";
    dwconv_clear_error();
    REQUIRE_CONTEXT(context, who);
    dwconv_problem p;
    dwconv_status st = dwconv_validate_forward(&p, desc, NULL, x, weight, bias, y, who);
    return st ? st : dwconv_run(context, &p, who);
}

dwconv_status dwconv_reference_forward(const dwconv_desc *desc, const void *x,
                                       const void *weight, const void *bias, void *y) {
    static const char who[] = "dwconv_reference_forward";
    dwconv_clear_error();
    dwconv_problem p;
    dwconv_status st = dwconv_validate_forward(&p, desc, NULL, x, weight, bias, y, who);
    return st ? st : run_reference(&p, who);
}

dwconv_status dwconv_backward(dwconv_context *context, const dwconv_desc *desc, const void *x,
                              const void *weight, const void *bias, const void *dy, void *dx,
                              void *dweight, void *dbias) {
    static const char who[] = "dwconv_backward";
    dwconv_clear_error();
    REQUIRE_CONTEXT(context, who);
    dwconv_problem p;
    dwconv_status st =
        dwconv_validate_backward(&p, desc, NULL, x, weight, bias, dy, dx, dweight, dbias, who);
    return st ? st : dwconv_run(context, &p, who);
}

dwconv_status dwconv_reference_backward(const dwconv_desc *desc, const void *x,
                                        const void *weight, const void *bias, const void *dy,
                                        void *dx, void *dweight, void *dbias) {
    static const char who[] = "dwconv_reference_backward";
    dwconv_clear_error();
    dwconv_problem p;
    dwconv_status st =
        dwconv_validate_backward(&p, desc, NULL, x, weight, bias, dy, dx, dweight, dbias, who);
    return st ? st : run_reference(&p, who);
}

dwconv_status dwconv_causal_forward(dwconv_context *context, const dwconv_desc *desc,
                                    const void *x, const void *weight, const void *bias,
                                    const void *initial_states, void *final_states, void *y) {
    static const char who[] = "dwconv_causal_forward";
    dwconv_clear_error();
    REQUIRE_CONTEXT(context, who);
    dwconv_problem p;
    dwconv_status st = dwconv_validate_causal_forward(&p, desc, x, weight, bias, NULL, NULL, 0,
                                                      initial_states, final_states, y, who);
    return st ? st : dwconv_run(context, &p, who);
}

dwconv_status dwconv_causal_varlen_forward(dwconv_context *context, const dwconv_desc *desc,
                                           const void *x, const void *weight, const void *bias,
                                           const int32_t *cu_seqlens, const int32_t *seq_idx,
                                           int64_t sequences, const void *initial_states,
                                           void *final_states, void *y) {
    static const char who[] = "dwconv_causal_varlen_forward";
    dwconv_clear_error();
    REQUIRE_CONTEXT(context, who);
    DWCONV_REQUIRE(cu_seqlens || seq_idx, DWCONV_ERROR_NULL_POINTER,
                   "%s: cu_seqlens and seq_idx are both NULL (give one; or call "
                   "dwconv_causal_forward)", who);
    dwconv_problem p;
    dwconv_status st =
        dwconv_validate_causal_forward(&p, desc, x, weight, bias, cu_seqlens, seq_idx, sequences,
                                       initial_states, final_states, y, who);
    return st ? st : dwconv_run(context, &p, who);
}

dwconv_status dwconv_causal_update(dwconv_context *context, const dwconv_desc *desc,
                                   const void *x, void *conv_state, int64_t pool_size,
                                   int64_t state_length, const void *weight, const void *bias,
                                   const int32_t *cache_seqlens, const int32_t *state_indices,
                                   void *y) {
    static const char who[] = "dwconv_causal_update";
    dwconv_clear_error();
    REQUIRE_CONTEXT(context, who);
    dwconv_problem p;
    dwconv_status st = dwconv_validate_causal_update(&p, desc, x, conv_state, pool_size,
                                                     state_length, weight, bias, cache_seqlens,
                                                     state_indices, y, who);
    return st ? st : dwconv_run(context, &p, who);
}

dwconv_status dwconv_causal_backward(dwconv_context *context, const dwconv_desc *desc,
                                     const void *x, const void *weight, const void *bias,
                                     const void *initial_states, const void *dy,
                                     const void *dfinal_states, void *dx, void *dweight,
                                     void *dbias, void *dinitial_states) {
    static const char who[] = "dwconv_causal_backward";
    dwconv_clear_error();
    REQUIRE_CONTEXT(context, who);
    dwconv_problem p;
    dwconv_status st = dwconv_validate_causal_backward(&p, desc, x, weight, bias, initial_states,
                                                       dy, dfinal_states, dx, dweight, dbias,
                                                       dinitial_states, who);
    return st ? st : dwconv_run(context, &p, who);
}
