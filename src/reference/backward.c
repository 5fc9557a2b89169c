/* The backward operation as the contract writes it (docs/numerics.md, "The backward
 * pass"): g from the recomputed pre-activation, dx by scattering g*w in increasing
 * (output, tap) order, dweight and dbias by chunks and the fixed tree; with causal
 * states, the state is the row's extension to the left. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "dwconv_elements.h"
#include "dwconv_grad.h"
#include "dwconv_indexing.h"
#include "reference.h"

/* Where padded (or state-extended) position j of row (b, c) gets its gradient: an
 * index into the row's accumulators, which hold [state (S), x (L)], or -1 (a zero). */
static int64_t gradient_slot(const dwconv_problem *p, int64_t j) {
    const int64_t S = p->state_length; /* 0 but for the causal backward */
    if (S > 0 && j < 0) return S + j;  /* causal: the state before the row */
    int64_t i = dwconv_source_index(p->desc.padding_mode, j, p->desc.length);
    return i < 0 ? -1 : S + i;
}

dwconv_status dwconv_ref_backward(const dwconv_problem *p, char *msg) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *w = &p->operand[DWCONV_ROLE_WEIGHT], *dy = &p->operand[DWCONV_ROLE_DY];
    const dwconv_operand *dx = &p->operand[DWCONV_ROLE_DX], *dw = &p->operand[DWCONV_ROLE_DWEIGHT];
    const dwconv_operand *db = &p->operand[DWCONV_ROLE_DBIAS];
    const dwconv_operand *dstate_in = &p->operand[DWCONV_ROLE_DSTATE_IN];
    const dwconv_operand *dstate_out = &p->operand[DWCONV_ROLE_DSTATE_OUT];
    const int64_t B = d->batch, C = d->channels, K = d->kernel_size, L = d->length;
    const int64_t L_out = p->output_length, chunks = dwconv_grad_chunks(L_out);
    const int64_t S = p->state_length; /* 0 but for the causal backward */
    /* per row: g, the gradient accumulators of [state, x], chunk partials (K + 1 per
     * chunk); per channel: row sums (K + 1 per row) */
    float *g = malloc(sizeof(float) * (size_t)L_out);
    float *acc = malloc(sizeof(float) * (size_t)(S + L));
    float *part = malloc(sizeof(float) * (size_t)chunks * (size_t)(K + 1));
    float *rows = malloc(sizeof(float) * (size_t)B * (size_t)(K + 1));
    float *tree = malloc(sizeof(float) * (size_t)(chunks > B ? chunks : B));
    if (!g || !acc || !part || !rows || !tree) {
        free(g), free(acc), free(part), free(rows), free(tree);
        snprintf(msg, DWCONV_MSG_SIZE, "out of host memory for the reference's scratch");
        return DWCONV_ERROR_OUT_OF_MEMORY;
    }
    for (int64_t c = 0; c < C; c++) {
        for (int64_t b = 0; b < B; b++) {
            for (int64_t o = 0; o < L_out; o++)
                g[o] = dwconv_activation_grad(
                    d->activation, dwconv_ref_preactivation(p, b, c, o),
                    dwconv_load(d->dtype, dy->data, dwconv_ref_at(dy, b, c, o)));
            /* dx: every (o, k) in increasing order adds g[o]*w[k] where it read */
            for (int64_t i = 0; i < S + L; i++) acc[i] = 0.0f;
            for (int64_t o = 0; o < L_out; o++)
                for (int64_t k = 0; k < K; k++) {
                    int64_t at = gradient_slot(p, o * d->stride + k * d->dilation - d->pad_left);
                    if (at >= 0)
                        acc[at] = DWCONV_FMAF(g[o], dwconv_load(d->weight_dtype, w->data, c * K + k),
                                              acc[at]);
                }
            if (dstate_out->data) /* the gradient arriving at final_states: the last S inputs */
                for (int64_t s = 0; s < S; s++)
                    acc[L + s] = acc[L + s] +
                                 dwconv_load(d->dtype, dstate_out->data, (b * C + c) * S + s);
            if (dx->data)
                for (int64_t i = 0; i < L; i++)
                    dwconv_store(d->dtype, dx->data, dwconv_ref_at(dx, b, c, i), acc[S + i]);
            if (dstate_in->data)
                for (int64_t s = 0; s < S; s++)
                    dwconv_store(d->dtype, dstate_in->data, (b * C + c) * S + s, acc[s]);
            /* dweight, dbias: chunk partials, then this row's tree */
            for (int64_t j = 0; j < chunks; j++) {
                float *pj = part + j * (K + 1);
                for (int64_t k = 0; k <= K; k++) pj[k] = 0.0f;
                int64_t end = (j + 1) * DWCONV_GRAD_CHUNK < L_out ? (j + 1) * DWCONV_GRAD_CHUNK : L_out;
                for (int64_t o = j * DWCONV_GRAD_CHUNK; o < end; o++) {
                    for (int64_t k = 0; k < K; k++)
                        pj[k] = DWCONV_FMAF(
                            g[o], dwconv_ref_tap(p, b, c, o, o * d->stride + k * d->dilation - d->pad_left),
                            pj[k]);
                    pj[K] = pj[K] + g[o];
                }
            }
            for (int64_t k = 0; k <= K; k++) {
                for (int64_t j = 0; j < chunks; j++) tree[j] = part[j * (K + 1) + k];
                rows[b * (K + 1) + k] = dwconv_grad_tree(tree, chunks);
            }
        }
        for (int64_t k = 0; k <= K; k++) { /* the rows' tree */
            for (int64_t b = 0; b < B; b++) tree[b] = rows[b * (K + 1) + k];
            float total = dwconv_grad_tree(tree, B);
            if (k < K && dw->data) dwconv_store(p->grad_dtype, dw->data, c * K + k, total);
            if (k == K && db->data) dwconv_store(p->grad_dtype, db->data, c, total);
        }
    }
    free(g), free(acc), free(part), free(rows), free(tree);
    return DWCONV_SUCCESS;
}
