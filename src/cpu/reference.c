/* The scalar reference: the contract written out as plainly as possible. It is the
 * oracle every other implementation is compared with, so it stays simple. */
#include <config.h>

#include "cpu.h"
#include "dwconv_indexing.h"
#include "elements.h"

float dwconv_cpu_output(const dwconv_plan *plan, const void *x, const void *weight,
                        const void *bias, int64_t b, int64_t c, int64_t o) {
    const dwconv_desc *d = &plan->desc;
    const int64_t C = d->channels, L = d->length, K = d->kernel_size;
    float acc = bias ? dwconv_load(d->weight_dtype, bias, c) : 0.0f;
    for (int64_t k = 0; k < K; k++) {
        int64_t i = dwconv_source_index(d->padding_mode,
                                        o * d->stride + k * d->dilation - d->pad_left, L);
        float xv = 0.0f;
        if (i >= 0) {
            int64_t at = d->layout == DWCONV_LAYOUT_NCL ? (b * C + c) * L + i : (b * L + i) * C + c;
            xv = dwconv_load(d->dtype, x, at);
        }
        acc = DWCONV_FMAF(xv, dwconv_load(d->weight_dtype, weight, c * K + k), acc);
    }
    return dwconv_activate(d->activation, acc);
}

void dwconv_cpu_reference(const dwconv_plan *plan, const void *x, const void *weight,
                          const void *bias, void *y) {
    const dwconv_desc *d = &plan->desc;
    const int64_t C = d->channels, L_out = plan->output_length;
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t o = 0; o < L_out; o++) {
                int64_t at = d->layout == DWCONV_LAYOUT_NCL ? (b * C + c) * L_out + o
                                                            : (b * L_out + o) * C + c;
                dwconv_store(d->dtype, y, at,
                             dwconv_cpu_output(plan, x, weight, bias, b, c, o));
            }
}
