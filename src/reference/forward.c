/* The forward operation, as the contract writes it: every output on its own. */
#include <config.h>

#include "dwconv_elements.h"
#include "dwconv_indexing.h"
#include "reference.h"

float dwconv_ref_preactivation(const dwconv_problem *p, int64_t b, int64_t c, int64_t o) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X], *w = &p->operand[DWCONV_ROLE_WEIGHT];
    const dwconv_operand *bias = &p->operand[DWCONV_ROLE_BIAS];
    const int64_t K = d->kernel_size;
    float acc = bias->data ? dwconv_load(d->weight_dtype, bias->data, c) : 0.0f;
    for (int64_t k = 0; k < K; k++) {
        int64_t i = dwconv_source_index(d->padding_mode,
                                        o * d->stride + k * d->dilation - d->pad_left, d->length);
        float xv = i >= 0 ? dwconv_load(d->dtype, x->data, dwconv_ref_at(x, b, c, i)) : 0.0f;
        acc = DWCONV_FMAF(xv, dwconv_load(d->weight_dtype, w->data, c * K + k), acc);
    }
    return acc;
}

void dwconv_ref_forward_rows(const dwconv_problem *p, int64_t b0, int64_t b1) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *y = &p->operand[DWCONV_ROLE_Y];
    for (int64_t b = b0; b < b1; b++)
        for (int64_t c = 0; c < d->channels; c++)
            for (int64_t o = 0; o < p->output_length; o++)
                dwconv_store(d->dtype, y->data, dwconv_ref_at(y, b, c, o),
                             dwconv_activate(d->activation, dwconv_ref_preactivation(p, b, c, o)));
}

void dwconv_ref_forward(const dwconv_problem *p) { dwconv_ref_forward_rows(p, 0, p->desc.batch); }
