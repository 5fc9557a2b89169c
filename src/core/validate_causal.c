/* The causal operations' validators: carried states (chunked prefill), packed
 * variable-length sequences, and the decode update. (The causal backward is in
 * validate_backward.c.) */
#include <config.h>

#include "internal.h"

dwconv_status dwconv_set_states(dwconv_problem *p, dwconv_role role, int written, int64_t count,
                                int64_t length, const char *who) {
    int64_t elements;
    DWCONV_REQUIRE(!__builtin_mul_overflow(count, p->desc.channels, &elements) &&
                       !__builtin_mul_overflow(elements, length, &elements),
                   DWCONV_ERROR_SIZE_OVERFLOW, "%s: %s has more elements than fit in 64 bits",
                   who, dwconv_role_name(role));
    return dwconv_set_flat(p, role, p->desc.dtype, written, elements, who);
}

static const dwconv_role in_place_states[] = {DWCONV_ROLE_STATE_OUT, DWCONV_ROLE_STATE_IN,
                                              DWCONV_ROLE_COUNT};

dwconv_status dwconv_validate_causal_forward(dwconv_problem *p, const dwconv_desc *desc,
                                             const void *x, const void *weight,
                                             const void *bias, const int32_t *cu_seqlens,
                                             const int32_t *seq_idx, int64_t sequences,
                                             const void *initial_states, void *final_states,
                                             void *y, const char *who) {
    dwconv_status st;
    DWCONV_REQUIRE(desc, DWCONV_ERROR_NULL_POINTER, "%s: desc is NULL", who);
    DWCONV_REQUIRE(x, DWCONV_ERROR_NULL_POINTER, "%s: x is NULL", who);
    DWCONV_REQUIRE(weight, DWCONV_ERROR_NULL_POINTER, "%s: weight is NULL", who);
    DWCONV_REQUIRE(y, DWCONV_ERROR_NULL_POINTER, "%s: y is NULL", who);
    if ((st = dwconv_problem_init(p, DWCONV_OP_CAUSAL_FORWARD, desc, who)) ||
        (st = dwconv_check_causal(p, who)) || (st = dwconv_set_conv_shapes(p, NULL, 0, who)))
        return st;
    p->state_length = p->span;
    p->state_count = p->desc.batch;
    if (cu_seqlens || seq_idx) { /* packed sequences */
        DWCONV_REQUIRE(!(cu_seqlens && seq_idx), DWCONV_ERROR_INVALID_VALUE,
                       "%s: give cu_seqlens or seq_idx, not both", who);
        if (cu_seqlens) {
            DWCONV_REQUIRE(p->desc.batch == 1, DWCONV_ERROR_INVALID_VALUE,
                           "%s: with cu_seqlens the sequences are packed along L: batch must "
                           "be 1 (it is %lld)", who, (long long)p->desc.batch);
            DWCONV_REQUIRE(sequences >= 1 && sequences < INT32_MAX, DWCONV_ERROR_INVALID_VALUE,
                           "%s: sequences is %lld, must be in [1, 2^31 - 2] with cu_seqlens",
                           who, (long long)sequences);
            p->state_count = sequences;
            if ((st = dwconv_set_flat(p, DWCONV_ROLE_CU_SEQLENS, DWCONV_I32, 0, sequences + 1,
                                      who)))
                return st;
            dwconv_attach(p, DWCONV_ROLE_CU_SEQLENS, cu_seqlens, 1, who);
        } else {
            DWCONV_REQUIRE(sequences == 0 && !initial_states && !final_states,
                           DWCONV_ERROR_INVALID_VALUE,
                           "%s: with seq_idx, states are not available: pass sequences = 0 "
                           "and NULL initial_states and final_states (use cu_seqlens for "
                           "states)", who);
            int64_t positions;
            DWCONV_REQUIRE(!__builtin_mul_overflow(p->desc.batch, p->desc.length, &positions),
                           DWCONV_ERROR_SIZE_OVERFLOW, "%s: seq_idx has more elements than "
                           "fit in 64 bits", who);
            if ((st = dwconv_set_flat(p, DWCONV_ROLE_SEQ_IDX, DWCONV_I32, 0, positions, who)))
                return st;
            dwconv_attach(p, DWCONV_ROLE_SEQ_IDX, seq_idx, 1, who);
        }
    } else {
        DWCONV_REQUIRE(sequences == 0, DWCONV_ERROR_INVALID_VALUE,
                       "%s: sequences is %lld without cu_seqlens (must be 0)", who,
                       (long long)sequences);
    }
    if ((st = dwconv_set_states(p, DWCONV_ROLE_STATE_IN, 0, p->state_count, p->state_length, who)) ||
        (st = dwconv_set_states(p, DWCONV_ROLE_STATE_OUT, 1, p->state_count, p->state_length, who)))
        return st;
    dwconv_attach(p, DWCONV_ROLE_X, x, 1, who);
    dwconv_attach(p, DWCONV_ROLE_WEIGHT, weight, 1, who);
    dwconv_attach(p, DWCONV_ROLE_BIAS, bias, 0, who);
    dwconv_attach(p, DWCONV_ROLE_Y, y, 1, who);
    dwconv_attach(p, DWCONV_ROLE_STATE_IN, initial_states, 0, who);
    dwconv_attach(p, DWCONV_ROLE_STATE_OUT, final_states, 0, who);
    return dwconv_check_overlaps(p, in_place_states, who);
}

dwconv_status dwconv_validate_causal_update(dwconv_problem *p, const dwconv_desc *desc,
                                            const void *x, void *conv_state, int64_t pool_size,
                                            int64_t state_length, const void *weight,
                                            const void *bias, const int32_t *cache_seqlens,
                                            const int32_t *state_indices, void *y,
                                            const char *who) {
    dwconv_status st;
    DWCONV_REQUIRE(desc, DWCONV_ERROR_NULL_POINTER, "%s: desc is NULL", who);
    DWCONV_REQUIRE(x, DWCONV_ERROR_NULL_POINTER, "%s: x is NULL", who);
    DWCONV_REQUIRE(weight, DWCONV_ERROR_NULL_POINTER, "%s: weight is NULL", who);
    DWCONV_REQUIRE(y, DWCONV_ERROR_NULL_POINTER, "%s: y is NULL", who);
    if ((st = dwconv_problem_init(p, DWCONV_OP_CAUSAL_UPDATE, desc, who)) ||
        (st = dwconv_check_causal(p, who)) || (st = dwconv_set_conv_shapes(p, NULL, 0, who)))
        return st;
    DWCONV_REQUIRE(state_length >= p->span, DWCONV_ERROR_INVALID_VALUE,
                   "%s: state_length is %lld, shorter than dilation*(kernel_size-1) = %lld",
                   who, (long long)state_length, (long long)p->span);
    DWCONV_REQUIRE(pool_size >= 1 && pool_size <= INT32_MAX, DWCONV_ERROR_INVALID_VALUE,
                   "%s: pool_size is %lld, must be in [1, 2^31 - 1]", who, (long long)pool_size);
    DWCONV_REQUIRE(state_indices || pool_size >= p->desc.batch, DWCONV_ERROR_INVALID_VALUE,
                   "%s: without state_indices sequence b uses slot b: pool_size (%lld) must be "
                   ">= batch (%lld)", who, (long long)pool_size, (long long)p->desc.batch);
    p->state_length = state_length;
    p->state_count = pool_size;
    if ((st = dwconv_set_states(p, DWCONV_ROLE_STATE, 1, pool_size, state_length, who)) ||
        (st = dwconv_set_flat(p, DWCONV_ROLE_CACHE_SEQLENS, DWCONV_I32, 0, p->desc.batch, who)) ||
        (st = dwconv_set_flat(p, DWCONV_ROLE_STATE_INDICES, DWCONV_I32, 0, p->desc.batch, who)))
        return st;
    dwconv_attach(p, DWCONV_ROLE_X, x, 1, who);
    dwconv_attach(p, DWCONV_ROLE_WEIGHT, weight, 1, who);
    dwconv_attach(p, DWCONV_ROLE_BIAS, bias, 0, who);
    dwconv_attach(p, DWCONV_ROLE_Y, y, 1, who);
    /* a zero-length state (K = 1) is never touched: NULL is fine then */
    if ((st = dwconv_attach(p, DWCONV_ROLE_STATE, conv_state, state_length > 0, who))) return st;
    dwconv_attach(p, DWCONV_ROLE_CACHE_SEQLENS, cache_seqlens, 0, who);
    dwconv_attach(p, DWCONV_ROLE_STATE_INDICES, state_indices, 0, who);
    return dwconv_check_overlaps(p, NULL, who);
}
