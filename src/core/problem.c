/* The checks every operation shares: the descriptor's geometry, operand shapes and
 * extents, and overlaps. The per-operation validators (validate_*.c) are built from
 * these, so a rule is written once. */
#include <config.h>

#include <stdint.h>
#include <string.h>

#include "internal.h"

static const char *padding_mode_name(dwconv_padding_mode mode) {
    static const char *const names[] = {"zeros", "reflect", "replicate", "circular"};
    return names[mode];
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

/* Resolves a padding preset into p->desc's pads; span = dilation*(K-1). */
static dwconv_status resolve_padding(dwconv_problem *p, const char *who) {
    dwconv_desc *d = &p->desc;
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
        d->pad_left = p->span / 2;
        d->pad_right = p->span - p->span / 2;
    } else {
        d->pad_left = p->span;
        d->pad_right = 0;
    }
    d->padding = DWCONV_PADDING_EXPLICIT;
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

dwconv_status dwconv_problem_init(dwconv_problem *p, dwconv_op op, const dwconv_desc *desc,
                                  const char *who) {
    dwconv_status st;
    DWCONV_REQUIRE(desc, DWCONV_ERROR_NULL_POINTER, "%s: desc is NULL", who);
    if ((st = check_enums(desc, who)) || (st = check_sizes(desc, who))) return st;

    memset(p, 0, sizeof *p);
    p->op = op;
    p->desc = *desc;
    p->grad_dtype = desc->weight_dtype;
    dwconv_desc *d = &p->desc;
    int64_t padded;
    DWCONV_REQUIRE(!__builtin_mul_overflow(d->dilation, d->kernel_size - 1, &p->span),
                   DWCONV_ERROR_SIZE_OVERFLOW,
                   "%s: dilation*(kernel_size-1) does not fit in 64 bits", who);
    if ((st = resolve_padding(p, who))) return st;
    DWCONV_REQUIRE(!__builtin_add_overflow(d->length, d->pad_left, &padded) &&
                       !__builtin_add_overflow(padded, d->pad_right, &padded),
                   DWCONV_ERROR_SIZE_OVERFLOW,
                   "%s: length + pad_left + pad_right does not fit in 64 bits", who);
    /* span + 1 may not fit: compare padded - 1 with span instead */
    if (padded - 1 < p->span) {
        if (p->span == INT64_MAX)
            return dwconv_fail(DWCONV_ERROR_EMPTY_OUTPUT,
                               "%s: the padded input (%lld) is shorter than the kernel's span "
                               "dilation*(kernel_size-1)+1 (2^63): no output", who,
                               (long long)padded);
        return dwconv_fail(DWCONV_ERROR_EMPTY_OUTPUT,
                           "%s: the padded input (%lld) is shorter than the kernel's span "
                           "dilation*(kernel_size-1)+1 (%lld): no output", who,
                           (long long)padded, (long long)p->span + 1);
    }
    if ((st = check_padding_limit(d, who))) return st;
    p->output_length = (padded - 1 - p->span) / d->stride + 1;
    for (int r = 0; r < DWCONV_ROLE_COUNT; r++) p->operand[r].dtype = -1;
    return DWCONV_SUCCESS;
}

const char *dwconv_role_name(dwconv_role role) {
    static const char *const names[DWCONV_ROLE_COUNT] = {
        [DWCONV_ROLE_X] = "x",
        [DWCONV_ROLE_WEIGHT] = "weight",
        [DWCONV_ROLE_BIAS] = "bias",
        [DWCONV_ROLE_Y] = "y",
        [DWCONV_ROLE_DY] = "dy",
        [DWCONV_ROLE_DX] = "dx",
        [DWCONV_ROLE_DWEIGHT] = "dweight",
        [DWCONV_ROLE_DBIAS] = "dbias",
        [DWCONV_ROLE_STATE_IN] = "initial_states",
        [DWCONV_ROLE_STATE_OUT] = "final_states",
        [DWCONV_ROLE_STATE] = "conv_state",
        [DWCONV_ROLE_CACHE_SEQLENS] = "cache_seqlens",
        [DWCONV_ROLE_STATE_INDICES] = "state_indices",
        [DWCONV_ROLE_CU_SEQLENS] = "cu_seqlens",
        [DWCONV_ROLE_SEQ_IDX] = "seq_idx",
        [DWCONV_ROLE_DSTATE_OUT] = "dfinal_states",
        [DWCONV_ROLE_DSTATE_IN] = "dinitial_states",
    };
    return (unsigned)role < DWCONV_ROLE_COUNT ? names[role] : "?";
}

static size_t element_size(int dtype) {
    return dtype == DWCONV_I32 ? 4 : dwconv_dtype_size((dwconv_dtype)dtype);
}

void dwconv_default_strides(dwconv_layout layout, int64_t channels, int64_t n, int64_t stride[3]) {
    /* callers have checked that channels * n fits */
    if (layout == DWCONV_LAYOUT_NLC) {
        stride[DWCONV_DIM_BATCH] = n * channels;
        stride[DWCONV_DIM_CHANNEL] = 1;
        stride[DWCONV_DIM_POSITION] = channels;
    } else {
        stride[DWCONV_DIM_BATCH] = channels * n;
        stride[DWCONV_DIM_CHANNEL] = n;
        stride[DWCONV_DIM_POSITION] = 1;
    }
}

/* bytes = (sum (size_i - 1) * stride_i + 1) * elem, or SIZE_OVERFLOW */
static dwconv_status extent_bytes(const int64_t size[3], const int64_t stride[3], size_t elem,
                                  size_t *bytes, const char *name, const char *who) {
    int64_t last = 0, term, total;
    for (int i = 0; i < 3; i++)
        if (__builtin_mul_overflow(size[i] - 1, stride[i], &term) ||
            __builtin_add_overflow(last, term, &last))
            return dwconv_fail(DWCONV_ERROR_SIZE_OVERFLOW,
                               "%s: %s has more elements (or reaches farther) than fit in 64 "
                               "bits", who, name);
    if (__builtin_add_overflow(last, 1, &total) ||
        __builtin_mul_overflow(total, (int64_t)elem, &total) || (uint64_t)total > SIZE_MAX)
        return dwconv_fail(DWCONV_ERROR_SIZE_OVERFLOW,
                           "%s: %s needs more bytes than fit in size_t", who, name);
    *bytes = (size_t)total;
    return DWCONV_SUCCESS;
}

/* Whether the strides keep every element at its own address: ordered by stride, each
 * dimension of size > 1 must step past everything the smaller ones reach. */
static int strides_distinct(const int64_t size[3], const int64_t stride[3]) {
    int order[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (stride[order[j]] < stride[order[i]]) {
                int t = order[i];
                order[i] = order[j], order[j] = t;
            }
    int64_t reach = 0; /* largest offset the smaller dimensions reach */
    for (int i = 0; i < 3; i++) {
        int dim = order[i];
        if (size[dim] == 1) continue;
        if (stride[dim] <= reach) return 0;
        reach += (size[dim] - 1) * stride[dim]; /* fits: extent_bytes checked */
    }
    return 1;
}

dwconv_status dwconv_set_strided(dwconv_problem *p, dwconv_role role, int dtype, int written,
                                 int64_t n, const int64_t stride[3], const char *who) {
    const char *name = dwconv_role_name(role);
    for (int i = 0; i < 3; i++)
        DWCONV_REQUIRE(stride[i] >= 1, DWCONV_ERROR_INVALID_VALUE,
                       "%s: %s's %s stride is %lld, must be >= 1", who, name,
                       i == 0 ? "batch" : i == 1 ? "channel" : "position", (long long)stride[i]);
    const int64_t size[3] = {p->desc.batch, p->desc.channels, n};
    dwconv_operand *t = &p->operand[role];
    dwconv_status st = extent_bytes(size, stride, element_size(dtype), &t->bytes, name, who);
    if (st) return st;
    DWCONV_REQUIRE(!written || strides_distinct(size, stride), DWCONV_ERROR_INVALID_VALUE,
                   "%s: %s's strides (%lld, %lld, %lld) put two elements at one address", who,
                   name, (long long)stride[0], (long long)stride[1], (long long)stride[2]);
    t->dtype = dtype;
    t->written = written;
    memcpy(t->stride, stride, sizeof t->stride);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_set_flat(dwconv_problem *p, dwconv_role role, int dtype, int written,
                              int64_t elements, const char *who) {
    const int64_t size[3] = {1, 1, elements}, stride[3] = {1, 1, 1};
    dwconv_operand *t = &p->operand[role];
    dwconv_status st = extent_bytes(size, stride, element_size(dtype), &t->bytes,
                                    dwconv_role_name(role), who);
    if (st) return st;
    t->dtype = dtype;
    t->written = written;
    t->stride[0] = t->stride[1] = t->stride[2] = 1;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_attach(dwconv_problem *p, dwconv_role role, const void *ptr, int required,
                            const char *who) {
    DWCONV_REQUIRE(ptr || !required, DWCONV_ERROR_NULL_POINTER, "%s: %s is NULL", who,
                   dwconv_role_name(role));
    p->operand[role].data = (void *)ptr;
    return DWCONV_SUCCESS;
}

int dwconv_ranges_overlap(const void *a, size_t an, const void *b, size_t bn) {
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return an > 0 && bn > 0 && a0 < b0 + bn && b0 < a0 + an;
}

static int pair_allowed(const dwconv_role *allowed, int a, int b) {
    for (; allowed && allowed[0] != DWCONV_ROLE_COUNT; allowed += 2)
        if (((int)allowed[0] == a && (int)allowed[1] == b) || ((int)allowed[0] == b && (int)allowed[1] == a))
            return 1;
    return 0;
}

dwconv_status dwconv_check_overlaps(const dwconv_problem *p, const dwconv_role *allowed,
                                    const char *who) {
    for (int w = 0; w < DWCONV_ROLE_COUNT; w++) {
        const dwconv_operand *out = &p->operand[w];
        if (!out->data || !out->written) continue;
        for (int r = 0; r < DWCONV_ROLE_COUNT; r++) {
            const dwconv_operand *other = &p->operand[r];
            if (r == w || !other->data || (other->written && r < w)) continue;
            if (!dwconv_ranges_overlap(out->data, out->bytes, other->data, other->bytes)) continue;
            if (pair_allowed(allowed, w, r) && out->data == other->data &&
                out->bytes == other->bytes)
                continue;
            if (w == DWCONV_ROLE_Y && r == DWCONV_ROLE_X)
                return dwconv_fail(DWCONV_ERROR_ALIASING,
                                   "%s: y overlaps x (in-place convolution is not supported)",
                                   who);
            return dwconv_fail(DWCONV_ERROR_ALIASING, "%s: %s overlaps %s", who,
                               dwconv_role_name((dwconv_role)w), dwconv_role_name((dwconv_role)r));
        }
    }
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_check_causal(const dwconv_problem *p, const char *who) {
    const dwconv_desc *d = &p->desc;
    DWCONV_REQUIRE(d->stride == 1, DWCONV_ERROR_INVALID_VALUE,
                   "%s: needs stride 1 (stride is %lld)", who, (long long)d->stride);
    DWCONV_REQUIRE(d->pad_left == p->span && d->pad_right == 0, DWCONV_ERROR_INVALID_VALUE,
                   "%s: needs causal padding (pad_left = dilation*(kernel_size-1) = %lld, "
                   "pad_right = 0; padding CAUSAL sets them), not %lld and %lld", who,
                   (long long)p->span, (long long)d->pad_left, (long long)d->pad_right);
    DWCONV_REQUIRE(d->padding_mode == DWCONV_PAD_ZEROS, DWCONV_ERROR_INVALID_VALUE,
                   "%s: needs padding_mode ZEROS (a state continues a sequence; %s padding "
                   "has no meaning there)", who, padding_mode_name(d->padding_mode));
    return DWCONV_SUCCESS;
}

/* The strides of tensor `which` (a dwconv_tensor): the options' or the layout's. */
static void tensor_strides(const dwconv_problem *p, const dwconv_layout_options *opt,
                           dwconv_tensor which, int64_t n, int64_t stride[3]) {
    if (opt && opt->strides && opt->strides[which][0] > 0) {
        for (int i = 0; i < 3; i++) stride[i] = opt->strides[which][i];
        return;
    }
    dwconv_default_strides(p->desc.layout, p->desc.channels, n, stride);
}

dwconv_status dwconv_set_conv_shapes(dwconv_problem *p, const dwconv_layout_options *opt,
                                int with_gradients, const char *who) {
    const dwconv_desc *d = &p->desc;
    int64_t xs[3], ys[3], cl, cl_out, ck;
    dwconv_status st;
    /* the default strides need C*L (and B*C*L, through the extent) to fit */
    const char *too_many = __builtin_mul_overflow(d->channels, d->length, &cl) ? "x"
                           : __builtin_mul_overflow(d->channels, p->output_length, &cl_out) ? "y"
                           : __builtin_mul_overflow(d->channels, d->kernel_size, &ck) ? "weight"
                                                                                    : NULL;
    DWCONV_REQUIRE(!too_many, DWCONV_ERROR_SIZE_OVERFLOW,
                   "%s: %s has more elements than fit in 64 bits", who, too_many);
    tensor_strides(p, opt, DWCONV_TENSOR_X, d->length, xs);
    tensor_strides(p, opt, DWCONV_TENSOR_Y, p->output_length, ys);
    if ((st = dwconv_set_strided(p, DWCONV_ROLE_X, d->dtype, 0, d->length, xs, who)) ||
        (st = dwconv_set_flat(p, DWCONV_ROLE_WEIGHT, d->weight_dtype, 0, ck, who)) ||
        (st = dwconv_set_flat(p, DWCONV_ROLE_BIAS, d->weight_dtype, 0, d->channels, who)))
        return st;
    if (!with_gradients) return dwconv_set_strided(p, DWCONV_ROLE_Y, d->dtype, 1,
                                                    p->output_length, ys, who);
    int64_t dxs[3], dys[3];
    tensor_strides(p, opt, DWCONV_TENSOR_DX, d->length, dxs);
    tensor_strides(p, opt, DWCONV_TENSOR_DY, p->output_length, dys);
    if ((st = dwconv_set_strided(p, DWCONV_ROLE_DY, d->dtype, 0, p->output_length, dys, who)) ||
        (st = dwconv_set_strided(p, DWCONV_ROLE_DX, d->dtype, 1, d->length, dxs, who)) ||
        (st = dwconv_set_flat(p, DWCONV_ROLE_DWEIGHT, p->grad_dtype, 1, ck, who)) ||
        (st = dwconv_set_flat(p, DWCONV_ROLE_DBIAS, p->grad_dtype, 1, d->channels, who)))
        return st;
    return DWCONV_SUCCESS;
}
