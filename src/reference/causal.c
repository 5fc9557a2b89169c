/* The causal operations as docs/api.md defines them: the forward with carried states
 * and packed sequences (its outputs are dwconv_ref_tap's), the final states, and the
 * decode update. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "dwconv_elements.h"
#include "dwconv_index_rules.h"
#include "reference.h"

static const int32_t *indices(const dwconv_problem *p, dwconv_role role) {
    return (const int32_t *)p->operand[role].data;
}

static dwconv_status violated(dwconv_index_violation v, char *msg) {
    dwconv_index_message(&v, msg, DWCONV_MSG_SIZE);
    return DWCONV_ERROR_INVALID_VALUE;
}

dwconv_status dwconv_ref_check_indices(const dwconv_problem *p, char *msg) {
    const int64_t B = p->desc.batch, N = p->state_count;
    const int32_t *cu = indices(p, DWCONV_ROLE_CU_SEQLENS);
    for (int64_t n = 0; cu && n <= N; n++) {
        dwconv_index_violation v = dwconv_check_cu_seqlens(cu, n, N, p->desc.length);
        if (v.code) return violated(v, msg);
    }
    const int32_t *slot = indices(p, DWCONV_ROLE_STATE_INDICES);
    for (int64_t b = 0; slot && b < B; b++) {
        dwconv_index_violation v = dwconv_check_slot(slot, b, N);
        if (v.code) return violated(v, msg);
    }
    for (int64_t b = 0; slot && b < B; b++) /* two sequences, one state: which wins? */
        for (int64_t e = b + 1; slot[b] >= 0 && e < B; e++)
            if (slot[e] == slot[b])
                return violated((dwconv_index_violation){DWCONV_INDEX_SLOT_TWICE, slot[b], e, b},
                                msg);
    const int32_t *seen = indices(p, DWCONV_ROLE_CACHE_SEQLENS);
    for (int64_t b = 0; seen && b < B; b++) {
        dwconv_index_violation v = dwconv_check_seqlen(seen, b);
        if (v.code) return violated(v, msg);
    }
    return DWCONV_SUCCESS;
}

/* The last S inputs of each sequence's history (its initial state, then its part of
 * x), into final_states; a sequence shorter than S keeps part of its initial state.
 * history holds S floats; each state is read whole before it is written, so
 * final_states may be initial_states. */
static void final_states(const dwconv_problem *p, float *history) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X];
    const dwconv_operand *in = &p->operand[DWCONV_ROLE_STATE_IN];
    void *out = p->operand[DWCONV_ROLE_STATE_OUT].data;
    const int64_t S = p->state_length, C = d->channels;
    const int32_t *cu = indices(p, DWCONV_ROLE_CU_SEQLENS);
    for (int64_t n = 0; out && n < p->state_count; n++) {
        const int64_t b = cu ? 0 : n, start = cu ? cu[n] : 0, end = cu ? cu[n + 1] : d->length;
        for (int64_t c = 0; c < C; c++) {
            for (int64_t s = 0; s < S; s++) { /* input end - S + s of the history */
                int64_t j = end - S + s;
                history[s] = j >= start ? dwconv_load(d->dtype, x->data, dwconv_ref_at(x, b, c, j))
                             : in->data ? dwconv_load(d->dtype, in->data, (n * C + c) * S + S + (j - start))
                                        : 0.0f;
            }
            for (int64_t s = 0; s < S; s++) dwconv_store(d->dtype, out, (n * C + c) * S + s, history[s]);
        }
    }
}

static dwconv_status no_scratch(char *msg) {
    snprintf(msg, DWCONV_MSG_SIZE, "out of host memory for the reference's scratch");
    return DWCONV_ERROR_OUT_OF_MEMORY;
}

dwconv_status dwconv_ref_causal_forward(const dwconv_problem *p, char *msg) {
    dwconv_status st = dwconv_ref_check_indices(p, msg);
    if (st) return st;
    float *history = malloc(sizeof(float) * (size_t)(p->state_length + 1));
    if (!history) return no_scratch(msg);
    /* the outputs first: they read the initial states, which final_states may replace */
    dwconv_ref_forward(p);
    final_states(p, history);
    free(history);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_ref_causal_update(const dwconv_problem *p, char *msg) {
    dwconv_status st = dwconv_ref_check_indices(p, msg);
    if (st) return st;
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X], *y = &p->operand[DWCONV_ROLE_Y];
    const dwconv_operand *w = &p->operand[DWCONV_ROLE_WEIGHT], *bias = &p->operand[DWCONV_ROLE_BIAS];
    void *pool = p->operand[DWCONV_ROLE_STATE].data;
    const int32_t *slot = indices(p, DWCONV_ROLE_STATE_INDICES);
    const int32_t *seen = indices(p, DWCONV_ROLE_CACHE_SEQLENS);
    const int64_t C = d->channels, K = d->kernel_size, T = d->length, P = p->state_length;
    const int64_t span = p->span;
    float *in = malloc(sizeof(float) * (size_t)(P + T)); /* one channel's history + tokens */
    if (!in) return no_scratch(msg);
    for (int64_t b = 0; b < d->batch; b++) {
        const int64_t s = slot ? slot[b] : b;
        if (s < 0) continue; /* a padding entry */
        for (int64_t c = 0; c < C; c++) {
            const int64_t base = (s * C + c) * P;
            /* in[P + t] is token t; in[P + t'] for t' < 0 is the input t' before it */
            for (int64_t i = 0; i < P; i++) { /* (P > 0 here) */
                int64_t at = seen ? (((int64_t)seen[b] - P + i) % P + P) % P : i;
                in[i] = dwconv_load(d->dtype, pool, base + at);
            }
            for (int64_t t = 0; t < T; t++)
                in[P + t] = dwconv_load(d->dtype, x->data, dwconv_ref_at(x, b, c, t));
            const float b0 = bias->data ? dwconv_load(d->weight_dtype, bias->data, c) : 0.0f;
            for (int64_t t = 0; t < T; t++) {
                float acc = b0;
                for (int64_t k = 0; k < K; k++)
                    acc = DWCONV_FMAF(in[P + t - span + k * d->dilation],
                                      dwconv_load(d->weight_dtype, w->data, c * K + k), acc);
                dwconv_store(d->dtype, y->data, dwconv_ref_at(y, b, c, t),
                             dwconv_activate(d->activation, acc));
            }
            /* the new state: the last P inputs (shift register), or the tokens written
             * at their places (circular) */
            for (int64_t i = 0; !seen && i < P; i++) dwconv_store(d->dtype, pool, base + i, in[T + i]);
            for (int64_t t = 0; seen && P > 0 && t < T; t++)
                dwconv_store(d->dtype, pool, base + ((int64_t)seen[b] + t) % P, in[P + t]);
        }
    }
    free(in);
    return DWCONV_SUCCESS;
}
