/* The descriptor's public helpers: defaults, and what it resolves to (the checks
 * themselves are problem.c's, shared with every operation). */
#include <config.h>

#include <stdint.h>

#include "internal.h"

dwconv_status dwconv_desc_init(dwconv_desc *desc, int64_t batch, int64_t channels,
                               int64_t length, int64_t kernel_size) {
    dwconv_clear_error();
    if (!desc) return dwconv_fail(DWCONV_ERROR_NULL_POINTER, "dwconv_desc_init: desc is NULL");
    *desc = (dwconv_desc){
        .batch = batch,
        .channels = channels,
        .length = length,
        .kernel_size = kernel_size,
        .stride = 1,
        .dilation = 1,
        .pad_left = 0,
        .pad_right = 0,
        .padding = DWCONV_PADDING_EXPLICIT,
        .padding_mode = DWCONV_PAD_ZEROS,
        .layout = DWCONV_LAYOUT_NCL,
        .dtype = DWCONV_F32,
        .weight_dtype = DWCONV_F32,
        .activation = DWCONV_ACT_NONE,
    };
    return DWCONV_SUCCESS;
}

size_t dwconv_dtype_size(dwconv_dtype dtype) {
    switch (dtype) {
    case DWCONV_F32: return 4;
    case DWCONV_F16:
    case DWCONV_BF16: return 2;
    }
    return 0;
}

/* The forward's geometry and shapes: what every check of the descriptor alone covers. */
static dwconv_status shape(dwconv_problem *p, const dwconv_desc *desc, const char *who) {
    dwconv_status st = dwconv_problem_init(p, DWCONV_OP_FORWARD, desc, who);
    return st ? st : dwconv_set_conv_shapes(p, NULL, 0, who);
}

dwconv_status dwconv_desc_resolve(const dwconv_desc *desc, int64_t *pad_left,
                                  int64_t *pad_right, int64_t *output_length) {
    dwconv_clear_error();
    dwconv_problem p;
    dwconv_status st = shape(&p, desc, "dwconv_desc_resolve");
    if (st) return st;
    if (pad_left) *pad_left = p.desc.pad_left;
    if (pad_right) *pad_right = p.desc.pad_right;
    if (output_length) *output_length = p.output_length;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_desc_sizes(const dwconv_desc *desc, int64_t *x_elements,
                                int64_t *y_elements, int64_t *weight_elements,
                                int64_t *bias_elements) {
    dwconv_clear_error();
    dwconv_problem p;
    dwconv_status st = shape(&p, desc, "dwconv_desc_sizes");
    if (st) return st;
    const dwconv_desc *d = &p.desc;
    /* the shapes fit 64 bits: the extents were checked */
    if (x_elements) *x_elements = d->batch * d->channels * d->length;
    if (y_elements) *y_elements = d->batch * d->channels * p.output_length;
    if (weight_elements) *weight_elements = d->channels * d->kernel_size;
    if (bias_elements) *bias_elements = d->channels;
    return DWCONV_SUCCESS;
}
