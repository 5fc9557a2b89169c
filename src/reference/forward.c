/* The forward operation (and the causal forward with states and packed sequences), as
 * the contract writes it: every output on its own. */
#include <config.h>

#include "dwconv_elements.h"
#include "dwconv_indexing.h"
#include "reference.h"

/* The sequence of packed position o: its number and first position (cu_seqlens is
 * validated: non-decreasing, from 0 to L). */
static int64_t sequence_of(const dwconv_problem *p, int64_t o, int64_t *start) {
    const int32_t *cu = p->operand[DWCONV_ROLE_CU_SEQLENS].data;
    int64_t lo = 0, hi = p->state_count; /* the last n with cu[n] <= o */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (cu[mid] <= o) lo = mid;
        else hi = mid;
    }
    *start = cu[lo];
    return lo;
}

float dwconv_ref_tap(const dwconv_problem *p, int64_t b, int64_t c, int64_t o, int64_t j) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X];
    const dwconv_operand *state = &p->operand[DWCONV_ROLE_STATE_IN];
    const int64_t S = p->state_length;
    if (p->operand[DWCONV_ROLE_CU_SEQLENS].data) { /* packed: the sequence's own history */
        int64_t start, n = sequence_of(p, o, &start);
        if (j >= start) return dwconv_load(d->dtype, x->data, dwconv_ref_at(x, b, c, j));
        if (!state->data) return 0.0f;
        return dwconv_load(d->dtype, state->data, (n * d->channels + c) * S + S + (j - start));
    }
    if (p->operand[DWCONV_ROLE_SEQ_IDX].data) { /* ids: taps of another sequence read 0 */
        const int32_t *id = (const int32_t *)p->operand[DWCONV_ROLE_SEQ_IDX].data + b * d->length;
        if (j < 0 || id[j] != id[o]) return 0.0f;
        return dwconv_load(d->dtype, x->data, dwconv_ref_at(x, b, c, j));
    }
    if (j < 0 && state->data) /* a carried state stands before the row */
        return dwconv_load(d->dtype, state->data, (b * d->channels + c) * S + S + j);
    int64_t i = dwconv_source_index(d->padding_mode, j, d->length);
    return i < 0 ? 0.0f : dwconv_load(d->dtype, x->data, dwconv_ref_at(x, b, c, i));
}

float dwconv_ref_preactivation(const dwconv_problem *p, int64_t b, int64_t c, int64_t o) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *w = &p->operand[DWCONV_ROLE_WEIGHT];
    const dwconv_operand *bias = &p->operand[DWCONV_ROLE_BIAS];
    const int64_t K = d->kernel_size;
    float acc = bias->data ? dwconv_load(d->weight_dtype, bias->data, c) : 0.0f;
    for (int64_t k = 0; k < K; k++) {
        float xv = dwconv_ref_tap(p, b, c, o, o * d->stride + k * d->dilation - d->pad_left);
        acc = DWCONV_FMAF(xv, dwconv_load(d->weight_dtype, w->data, c * K + k), acc);
    }
    return acc;
}

void dwconv_ref_forward_rows(const dwconv_problem *p, int64_t r0, int64_t r1) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *y = &p->operand[DWCONV_ROLE_Y];
    for (int64_t r = r0; r < r1; r++) {
        const int64_t b = r / d->channels, c = r % d->channels;
        for (int64_t o = 0; o < p->output_length; o++)
            dwconv_store(d->dtype, y->data, dwconv_ref_at(y, b, c, o),
                         dwconv_activate(d->activation, dwconv_ref_preactivation(p, b, c, o)));
    }
}

void dwconv_ref_forward(const dwconv_problem *p) {
    dwconv_ref_forward_rows(p, 0, p->desc.batch * p->desc.channels);
}
