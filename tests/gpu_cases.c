#include "gpu_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_families.h"
#include "internal.h"
#include "reference.h"

/* Random values straight from the generator up to this many elements, repeats of
 * them beyond (an odd length, so rows do not line up with the repeats). */
#define GPU_CASE_RANDOM_BLOCK 1000003

static void fill(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n) {
    const int64_t block = n < GPU_CASE_RANDOM_BLOCK ? n : GPU_CASE_RANDOM_BLOCK;
    test_fill_random(rng, dtype, data, block);
    const size_t size = dwconv_dtype_size(dtype);
    for (int64_t done = block; done < n;) {
        const int64_t m = n - done < done ? n - done : done;
        memcpy((char *)data + (size_t)done * size, data, (size_t)m * size);
        done += m;
    }
}

/* ---- strides ---- */

/* Positions adjacent: contiguous, padded rows, a channel slice of a larger tensor,
 * or the batch inside the channels. */
static void channel_first(test_rng *rng, int64_t B, int64_t C, int64_t n, int64_t s[3]) {
    const int64_t pad = test_rng_range(rng, 1, 9), gap = test_rng_range(rng, 0, 7);
    s[2] = 1;
    switch (test_rng_range(rng, 0, 3)) {
    case 0: s[1] = n, s[0] = C * n; break;
    case 1: s[1] = n + pad, s[0] = C * (n + pad) + gap; break;
    case 2: s[1] = n, s[0] = (C + pad) * n; break;
    default: s[0] = n + gap, s[1] = B * (n + gap) + pad; break;
    }
}

/* Channels adjacent: contiguous, a channel slice of a (B, n, C_total) tensor (what
 * Mamba-2 convolves), padded batch entries, or the batch inside the positions. */
static void channel_last(test_rng *rng, int64_t B, int64_t C, int64_t n, int64_t s[3]) {
    const int64_t extra = test_rng_range(rng, 1, 9), gap = test_rng_range(rng, 1, 7);
    s[1] = 1;
    switch (test_rng_range(rng, 0, 3)) {
    case 0: s[2] = C, s[0] = n * C; break;
    case 1: s[2] = C + extra, s[0] = n * (C + extra); break;
    case 2: s[2] = C + extra - 1, s[0] = n * (C + extra - 1) + gap; break;
    default: s[0] = C + extra - 1, s[2] = B * (C + extra - 1); break;
    }
}

static void class_strides(test_rng *rng, int cls, int64_t B, int64_t C, int64_t n, int64_t s[3]) {
    if (cls == GPU_CHANNEL_LAST) channel_last(rng, B, C, n, s);
    else channel_first(rng, B, C, n, s);
}

void gpu_case_strides(test_rng *rng, const dwconv_desc *d, int cls, int64_t xs[3],
                      int64_t ys[3]) {
    int64_t L_out = 1;
    dwconv_desc_resolve(d, NULL, NULL, &L_out);
    const int64_t B = d->batch, C = d->channels;
    if (cls == GPU_CASE_ANY_STRIDES) cls = (int)test_rng_range(rng, -1, 1);
    if (cls != GPU_MIXED) {
        class_strides(rng, cls, B, C, d->length, xs);
        class_strides(rng, cls, B, C, L_out, ys);
        return;
    }
    switch (test_rng_range(rng, 0, 2)) {
    case 0: /* each in its own class */
        channel_first(rng, B, C, d->length, xs);
        channel_last(rng, B, C, L_out, ys);
        break;
    case 1:
        channel_last(rng, B, C, d->length, xs);
        channel_first(rng, B, C, L_out, ys);
        break;
    default: /* neither: every other position */
        xs[2] = 2, xs[1] = 2 * d->length, xs[0] = 2 * C * d->length;
        ys[2] = 2, ys[1] = 2 * L_out, ys[0] = 2 * C * L_out;
        break;
    }
}

/* Elements from offset 0 to one past the last element of a (B, C, n) tensor. */
static int64_t extent(int64_t B, int64_t C, int64_t n, const int64_t s[3]) {
    return (B - 1) * s[0] + (C - 1) * s[1] + (n - 1) * s[2] + 1;
}

static void default_strides(const dwconv_desc *d, int64_t n, int64_t s[3]) {
    if (d->layout == DWCONV_LAYOUT_NLC) s[0] = n * d->channels, s[1] = 1, s[2] = d->channels;
    else s[0] = n * d->channels, s[1] = n, s[2] = 1;
}

/* The forward problem the core builds for desc with these strides, on the given
 * host pointers; 0 or -1. */
static int build_problem(dwconv_problem *p, const dwconv_desc *d, const int64_t xs[3],
                         const int64_t ys[3], const void *x, const void *w, const void *b,
                         void *y) {
    int64_t strides[4][3];
    memset(strides, 0, sizeof strides);
    memcpy(strides[DWCONV_TENSOR_X], xs, sizeof strides[0]);
    memcpy(strides[DWCONV_TENSOR_Y], ys, sizeof strides[0]);
    dwconv_layout_options opt = {(const int64_t(*)[3])strides, -1};
    return dwconv_validate_forward(p, d, &opt, x, w, b, y, "gpu_cases") == DWCONV_SUCCESS ? 0 : -1;
}

/* ---- cases ---- */

int gpu_case_make(gpu_case *c, const dwconv_desc *desc, const int64_t *xs, const int64_t *ys,
                  test_rng *rng, int with_bias, dwconv_context *cpu, char *why, size_t why_size) {
    memset(c, 0, sizeof *c);
    c->desc = *desc;
    int64_t x_count = 0, y_count = 0, bias_elements = 0;
    if (dwconv_desc_sizes(desc, &x_count, &y_count, &c->weight_elements, &bias_elements) !=
            DWCONV_SUCCESS ||
        dwconv_desc_resolve(desc, NULL, NULL, &c->output_length) != DWCONV_SUCCESS) {
        snprintf(why, why_size, "invalid descriptor: %s", dwconv_last_error());
        return -1;
    }
    const int64_t B = desc->batch, C = desc->channels;
    if (xs) memcpy(c->x_stride, xs, sizeof c->x_stride);
    else default_strides(desc, desc->length, c->x_stride);
    if (ys) memcpy(c->y_stride, ys, sizeof c->y_stride);
    else default_strides(desc, c->output_length, c->y_stride);
    c->x_elements = extent(B, C, desc->length, c->x_stride);
    c->y_elements = extent(B, C, c->output_length, c->y_stride);
    c->x_bytes = test_bytes(desc->dtype, c->x_elements);
    c->y_bytes = test_bytes(desc->dtype, c->y_elements);
    c->weight_bytes = test_bytes(desc->weight_dtype, c->weight_elements);
    c->bias_bytes = with_bias ? test_bytes(desc->weight_dtype, bias_elements) : 0;
    c->x = malloc(c->x_bytes);
    c->weight = malloc(c->weight_bytes);
    c->bias = with_bias ? malloc(c->bias_bytes) : NULL;
    c->expected = malloc(c->y_bytes);
    void *values = c->x_elements == x_count ? c->x : malloc(test_bytes(desc->dtype, x_count));
    if (!c->x || !c->weight || (with_bias && !c->bias) || !c->expected || !values) {
        snprintf(why, why_size, "out of host memory for %s", test_desc_string(desc));
        if (values != c->x) free(values);
        gpu_case_free(c);
        return -1;
    }
    fill(rng, desc->dtype, values, x_count);
    if (values != c->x) { /* scattered to x's elements, the gaps poisoned */
        const size_t size = dwconv_dtype_size(desc->dtype);
        test_poison(c->x, c->x_bytes);
        int64_t i = 0;
        for (int64_t b = 0; b < B; b++)
            for (int64_t ch = 0; ch < C; ch++)
                for (int64_t l = 0; l < desc->length; l++, i++)
                    memcpy((char *)c->x + (size_t)(b * c->x_stride[0] + ch * c->x_stride[1] +
                                                   l * c->x_stride[2]) * size,
                           (const char *)values + (size_t)i * size, size);
        free(values);
    }
    test_fill_random(rng, desc->weight_dtype, c->weight, c->weight_elements);
    if (with_bias) test_fill_random(rng, desc->weight_dtype, c->bias, bias_elements);
    if (gpu_case_expect(c, cpu, why, why_size) != 0) {
        gpu_case_free(c);
        return -1;
    }
    return 0;
}

int gpu_case_expect(gpu_case *c, dwconv_context *cpu, char *why, size_t why_size) {
    const dwconv_desc *desc = &c->desc;
    test_poison(c->expected, c->y_bytes);
    dwconv_plan *plan = NULL;
    dwconv_status st = dwconv_plan_create(&plan, cpu, desc);
    if (!st) st = dwconv_plan_set_strides(plan, DWCONV_TENSOR_X, c->x_stride[0], c->x_stride[1],
                                          c->x_stride[2]);
    if (!st) st = dwconv_plan_set_strides(plan, DWCONV_TENSOR_Y, c->y_stride[0], c->y_stride[1],
                                          c->y_stride[2]);
    if (!st) st = dwconv_plan_forward(plan, c->x, c->weight, c->bias, c->expected);
    if (st) {
        snprintf(why, why_size, "cpu backend failed on %s: %s", test_desc_string(desc),
                 dwconv_last_error());
        dwconv_plan_destroy(plan);
        return -1;
    }
    dwconv_plan_destroy(plan);
    return 0;
}

void gpu_case_free(gpu_case *c) {
    free(c->x);
    free(c->weight);
    free(c->bias);
    free(c->expected);
    memset(c, 0, sizeof *c);
}

/* The scalar reference's verdict on y where it differs from expected (small cases). */
static const char *reference_verdict(const gpu_case *c, const void *y) {
    if (c->y_bytes >= ((size_t)1 << 26)) return "not asked (large)";
    void *ref = malloc(c->y_bytes);
    dwconv_problem p;
    char msg[DWCONV_MSG_SIZE];
    const char *verdict = "unavailable";
    if (ref && build_problem(&p, &c->desc, c->x_stride, c->y_stride, c->x, c->weight, c->bias,
                             ref) == 0) {
        test_poison(ref, c->y_bytes);
        if (dwconv_reference_run(&p, msg) == DWCONV_SUCCESS)
            verdict = memcmp(ref, y, c->y_bytes) == 0             ? "agrees with the GPU"
                      : memcmp(ref, c->expected, c->y_bytes) == 0 ? "agrees with the cpu backend"
                                                                  : "agrees with neither";
    }
    free(ref);
    return verdict;
}

int gpu_case_compare(const gpu_case *c, const void *y, char *why, size_t why_size) {
    if (memcmp(y, c->expected, c->y_bytes) == 0) return 0;
    const size_t size = dwconv_dtype_size(c->desc.dtype);
    const int64_t i = test_first_difference(y, c->expected, size, c->y_elements);
    const int64_t *s = c->y_stride;
    int64_t at[3] = {-1, -1, -1}; /* (b, c, o) of element i, if it is one */
    for (int64_t b = 0; b < c->desc.batch && at[0] < 0; b++)
        for (int64_t ch = 0; ch < c->desc.channels && at[0] < 0; ch++) {
            const int64_t rest = i - b * s[0] - ch * s[1];
            if (rest >= 0 && rest % s[2] == 0 && rest / s[2] < c->output_length)
                at[0] = b, at[1] = ch, at[2] = rest / s[2];
        }
    char where[96];
    if (at[0] >= 0)
        snprintf(where, sizeof where, "(b %lld, c %lld, o %lld)", (long long)at[0],
                 (long long)at[1], (long long)at[2]);
    else
        snprintf(where, sizeof where, "(a gap between y's elements)");
    snprintf(why, why_size, "%s%s y strides (%lld, %lld, %lld): element %lld %s is %.9g%s, cpu "
             "says %.9g; the reference %s",
             test_desc_string(&c->desc), c->bias_bytes ? " bias" : "", (long long)s[0],
             (long long)s[1], (long long)s[2], (long long)i, where, test_get(c->desc.dtype, y, i),
             test_untouched((const char *)y + (size_t)i * size, size) ? " (never written)" : "",
             test_get(c->desc.dtype, c->expected, i), reference_verdict(c, y));
    return -1;
}

int gpu_guards_intact(const void *at, size_t bytes, size_t before, size_t after,
                      const char *what, char *why, size_t why_size) {
    const int below = !test_untouched((const char *)at - before, before);
    const int above = !test_untouched((const char *)at + bytes, after);
    if (!below && !above) return 0;
    snprintf(why, why_size, "%s: written %s its %zu bytes", what,
             below && above ? "before and after" : below ? "before" : "after", bytes);
    return -1;
}

int gpu_case_guards(const gpu_case *c, const unsigned char *y_at, char *why, size_t why_size) {
    char what[512];
    snprintf(what, sizeof what, "%s: y", test_desc_string(&c->desc));
    return gpu_guards_intact(y_at, c->y_bytes, GPU_CASE_GUARD, GPU_CASE_GUARD, what, why, why_size);
}

/* ---- the families' predicate ---- */

int gpu_case_problem(dwconv_problem *p, const gpu_case *c, const void *x, const void *weight,
                     const void *bias, void *y) {
    return build_problem(p, &c->desc, c->x_stride, c->y_stride, x, weight, bias, y);
}

int gpu_case_applies(const dwconv_desc *d, const int64_t xs[3], const int64_t ys[3], int family) {
    /* the core never dereferences these: distinct addresses far apart */
    const uintptr_t far = (uintptr_t)1 << 40;
    dwconv_problem p;
    if (build_problem(&p, d, xs, ys, (void *)far, (void *)(3 * far), (void *)(4 * far),
                      (void *)(2 * far)) != 0)
        return 0;
    const gpu_conv_args a = gpu_args_make(&p);
    return gpu_family_applies(family, &a);
}

int gpu_case_fit(dwconv_desc *d, int64_t xs[3], int64_t ys[3], int family, test_rng *rng, int i) {
    const gpu_family_rule *r = gpu_family(family);
    const int cls = r->layout == GPU_ANY_LAYOUT ? GPU_CASE_ANY_STRIDES : r->layout;
    if (i % 4 == 3 || family == GPU_FAMILY_AUTO || family == GPU_FAMILY_GENERIC) {
        gpu_case_strides(rng, d, GPU_CASE_ANY_STRIDES, xs, ys);
        return gpu_case_applies(d, xs, ys, family);
    }
    static const int64_t steps[] = {1, 1, 1, 2, 3, 4}; /* stride or dilation */
    for (int attempt = 0; attempt < 200; attempt++) {
        dwconv_desc f = *d;
        const int64_t k_max = r->k_max < r->k_min + 40 ? r->k_max : r->k_min + 40;
        f.kernel_size = test_rng_range(rng, r->k_min, k_max);
        f.stride = steps[test_rng_range(rng, 0, 5)];
        f.dilation = test_rng_range(rng, 0, 3) == 0 ? f.stride : steps[test_rng_range(rng, 0, 5)];
        if (f.padding == DWCONV_PADDING_SAME) f.stride = 1;
        if (f.padding == DWCONV_PADDING_EXPLICIT) { /* keep the padding within limits */
            f.pad_left %= f.dilation * (f.kernel_size - 1) + 2;
            f.pad_right %= f.dilation * (f.kernel_size - 1) + 2;
        }
        if (dwconv_desc_resolve(&f, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
        int64_t fx[3], fy[3];
        gpu_case_strides(rng, &f, cls, fx, fy);
        if (gpu_case_applies(&f, fx, fy, family)) {
            *d = f;
            memcpy(xs, fx, sizeof fx);
            memcpy(ys, fy, sizeof fy);
            return 1;
        }
    }
    gpu_case_strides(rng, d, cls, xs, ys);
    return gpu_case_applies(d, xs, ys, family);
}
