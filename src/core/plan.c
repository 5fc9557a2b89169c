/* Descriptor defaults and validation: the one place every entry point and every
 * backend gets its shape checks from. */
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

static const char *padding_mode_name(dwconv_padding_mode mode) {
    static const char *const names[] = {"zeros", "reflect", "replicate", "circular"};
    return names[mode];
}

/* product of three non-negative values, or -1 when it does not fit in int64_t */
static int64_t checked_product(int64_t a, int64_t b, int64_t c) {
    int64_t ab, abc;
    if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return -1;
    return abc;
}

static dwconv_status check_enums(const dwconv_desc *d, const char *who) {
    if ((unsigned)d->dtype > DWCONV_BF16)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE, "%s: dtype %d is not a dwconv_dtype", who,
                           (int)d->dtype);
    if ((unsigned)d->weight_dtype > DWCONV_BF16)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE, "%s: weight_dtype %d is not a dwconv_dtype",
                           who, (int)d->weight_dtype);
    if (d->weight_dtype != DWCONV_F32 && d->weight_dtype != d->dtype)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                           "%s: weight_dtype must be F32 or the same as dtype", who);
    if ((unsigned)d->layout > DWCONV_LAYOUT_NLC)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE, "%s: layout %d is not a dwconv_layout", who,
                           (int)d->layout);
    if ((unsigned)d->padding > DWCONV_PADDING_CAUSAL)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE, "%s: padding %d is not a dwconv_padding",
                           who, (int)d->padding);
    if ((unsigned)d->padding_mode > DWCONV_PAD_CIRCULAR)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                           "%s: padding_mode %d is not a dwconv_padding_mode", who,
                           (int)d->padding_mode);
    if ((unsigned)d->activation > DWCONV_ACT_SILU)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                           "%s: activation %d is not a dwconv_activation", who, (int)d->activation);
    return DWCONV_SUCCESS;
}

static dwconv_status check_sizes(const dwconv_desc *d, const char *who) {
    const struct { const char *name; int64_t value, min; } fields[] = {
        {"batch", d->batch, 1},       {"channels", d->channels, 1},
        {"length", d->length, 1},     {"kernel_size", d->kernel_size, 1},
        {"stride", d->stride, 1},     {"dilation", d->dilation, 1},
        {"pad_left", d->pad_left, 0}, {"pad_right", d->pad_right, 0},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].value < fields[i].min)
            return dwconv_fail(DWCONV_ERROR_INVALID_VALUE, "%s: %s is %lld, must be >= %lld", who,
                               fields[i].name, (long long)fields[i].value,
                               (long long)fields[i].min);
    return DWCONV_SUCCESS;
}

/* Fills plan->desc's pad_left/pad_right from the preset; span = dilation*(K-1). */
static dwconv_status resolve_padding(const dwconv_desc *d, int64_t span, dwconv_plan *plan,
                                     const char *who) {
    if (d->padding == DWCONV_PADDING_EXPLICIT) return DWCONV_SUCCESS;
    const char *preset = d->padding == DWCONV_PADDING_SAME ? "SAME" : "CAUSAL";
    if (d->pad_left != 0 || d->pad_right != 0)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                           "%s: pad_left and pad_right must be 0 with padding %s (the preset "
                           "computes them)", who, preset);
    if (d->padding == DWCONV_PADDING_SAME) {
        if (d->stride != 1)
            return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                               "%s: padding SAME needs stride 1 (stride is %lld)", who,
                               (long long)d->stride);
        plan->desc.pad_left = span / 2;
        plan->desc.pad_right = span - span / 2;
    } else {
        plan->desc.pad_left = span;
        plan->desc.pad_right = 0;
    }
    plan->desc.padding = DWCONV_PADDING_EXPLICIT;
    return DWCONV_SUCCESS;
}

static dwconv_status check_padding_limit(const dwconv_desc *d, const char *who) {
    int64_t limit; /* largest pad allowed on one side */
    switch (d->padding_mode) {
    case DWCONV_PAD_REFLECT: limit = d->length - 1; break;
    case DWCONV_PAD_CIRCULAR: limit = d->length; break;
    default: return DWCONV_SUCCESS;
    }
    const char *rule = d->padding_mode == DWCONV_PAD_REFLECT ? "<" : "<=";
    if (d->pad_left > limit || d->pad_right > limit)
        return dwconv_fail(DWCONV_ERROR_PADDING_TOO_LARGE,
                           "%s: %s padding needs pad_left (%lld) and pad_right (%lld) %s length "
                           "(%lld)", who, padding_mode_name(d->padding_mode),
                           (long long)d->pad_left, (long long)d->pad_right, rule,
                           (long long)d->length);
    return DWCONV_SUCCESS;
}

static dwconv_status byte_count(int64_t elements, dwconv_dtype dtype, size_t *bytes,
                                const char *tensor, const char *who) {
    int64_t b;
    if (__builtin_mul_overflow(elements, (int64_t)dwconv_dtype_size(dtype), &b) ||
        (uint64_t)b > SIZE_MAX)
        return dwconv_fail(DWCONV_ERROR_SIZE_OVERFLOW, "%s: %s needs more bytes than fit in size_t",
                           who, tensor);
    *bytes = (size_t)b;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_plan_make(const dwconv_desc *desc, dwconv_plan *plan, const char *who) {
    dwconv_status st;
    if (!desc) return dwconv_fail(DWCONV_ERROR_NULL_POINTER, "%s: desc is NULL", who);
    if ((st = check_enums(desc, who)) || (st = check_sizes(desc, who))) return st;

    *plan = (dwconv_plan){.desc = *desc};
    dwconv_desc *d = &plan->desc;
    int64_t span, padded;
    if (__builtin_mul_overflow(d->dilation, d->kernel_size - 1, &span))
        return dwconv_fail(DWCONV_ERROR_SIZE_OVERFLOW,
                           "%s: dilation*(kernel_size-1) does not fit in 64 bits", who);
    if ((st = resolve_padding(desc, span, plan, who))) return st;
    if (__builtin_add_overflow(d->length, d->pad_left, &padded) ||
        __builtin_add_overflow(padded, d->pad_right, &padded))
        return dwconv_fail(DWCONV_ERROR_SIZE_OVERFLOW,
                           "%s: length + pad_left + pad_right does not fit in 64 bits", who);
    if (padded - 1 < span)
        return dwconv_fail(DWCONV_ERROR_EMPTY_OUTPUT,
                           "%s: the padded input (%lld) is shorter than the kernel's span "
                           "dilation*(kernel_size-1)+1 (%lld): no output", who,
                           (long long)padded, (long long)span + 1);
    if ((st = check_padding_limit(d, who))) return st;
    plan->output_length = (padded - span - 1) / d->stride + 1;

    plan->x_elements = checked_product(d->batch, d->channels, d->length);
    plan->y_elements = checked_product(d->batch, d->channels, plan->output_length);
    plan->weight_elements = checked_product(d->channels, d->kernel_size, 1);
    const char *too_many = plan->x_elements < 0        ? "x has batch*channels*length"
                           : plan->y_elements < 0      ? "y has batch*channels*L_out"
                           : plan->weight_elements < 0 ? "weight has channels*kernel_size"
                                                       : NULL;
    if (too_many)
        return dwconv_fail(DWCONV_ERROR_SIZE_OVERFLOW,
                           "%s: %s elements, more than fit in 64 bits", who, too_many);
    if ((st = byte_count(plan->x_elements, d->dtype, &plan->x_bytes, "x", who)) ||
        (st = byte_count(plan->y_elements, d->dtype, &plan->y_bytes, "y", who)) ||
        (st = byte_count(plan->weight_elements, d->weight_dtype, &plan->weight_bytes, "weight",
                         who)) ||
        (st = byte_count(d->channels, d->weight_dtype, &plan->bias_bytes, "bias", who)))
        return st;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_desc_resolve(const dwconv_desc *desc, int64_t *pad_left,
                                  int64_t *pad_right, int64_t *output_length) {
    dwconv_clear_error();
    dwconv_plan plan;
    dwconv_status st = dwconv_plan_make(desc, &plan, "dwconv_desc_resolve");
    if (st) return st;
    if (pad_left) *pad_left = plan.desc.pad_left;
    if (pad_right) *pad_right = plan.desc.pad_right;
    if (output_length) *output_length = plan.output_length;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_desc_sizes(const dwconv_desc *desc, int64_t *x_elements,
                                int64_t *y_elements, int64_t *weight_elements,
                                int64_t *bias_elements) {
    dwconv_clear_error();
    dwconv_plan plan;
    dwconv_status st = dwconv_plan_make(desc, &plan, "dwconv_desc_sizes");
    if (st) return st;
    if (x_elements) *x_elements = plan.x_elements;
    if (y_elements) *y_elements = plan.y_elements;
    if (weight_elements) *weight_elements = plan.weight_elements;
    if (bias_elements) *bias_elements = plan.desc.channels;
    return DWCONV_SUCCESS;
}
