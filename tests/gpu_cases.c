#include "gpu_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int gpu_case_make(gpu_case *c, const dwconv_desc *desc, test_rng *rng, int with_bias,
                  dwconv_context *cpu, char *why, size_t why_size) {
    memset(c, 0, sizeof *c);
    c->desc = *desc;
    int64_t bias_elements = 0;
    if (dwconv_desc_sizes(desc, &c->x_elements, &c->y_elements, &c->weight_elements,
                          &bias_elements) != DWCONV_SUCCESS ||
        dwconv_desc_resolve(desc, NULL, NULL, &c->output_length) != DWCONV_SUCCESS) {
        snprintf(why, why_size, "invalid descriptor: %s", dwconv_last_error());
        return -1;
    }
    c->x_bytes = test_bytes(desc->dtype, c->x_elements);
    c->y_bytes = test_bytes(desc->dtype, c->y_elements);
    c->weight_bytes = test_bytes(desc->weight_dtype, c->weight_elements);
    c->bias_bytes = with_bias ? test_bytes(desc->weight_dtype, bias_elements) : 0;
    c->x = malloc(c->x_bytes);
    c->weight = malloc(c->weight_bytes);
    c->bias = with_bias ? malloc(c->bias_bytes) : NULL;
    c->expected = malloc(c->y_bytes);
    if (!c->x || !c->weight || (with_bias && !c->bias) || !c->expected) {
        snprintf(why, why_size, "out of host memory for %s", test_desc_string(desc));
        gpu_case_free(c);
        return -1;
    }
    fill(rng, desc->dtype, c->x, c->x_elements);
    test_fill_random(rng, desc->weight_dtype, c->weight, c->weight_elements);
    if (with_bias) test_fill_random(rng, desc->weight_dtype, c->bias, bias_elements);
    test_poison(c->expected, c->y_bytes);
    if (dwconv_forward(cpu, desc, c->x, c->weight, c->bias, c->expected) != DWCONV_SUCCESS) {
        snprintf(why, why_size, "cpu backend failed on %s: %s", test_desc_string(desc),
                 dwconv_last_error());
        gpu_case_free(c);
        return -1;
    }
    return 0;
}

void gpu_case_free(gpu_case *c) {
    free(c->x);
    free(c->weight);
    free(c->bias);
    free(c->expected);
    memset(c, 0, sizeof *c);
}

int gpu_case_compare(const gpu_case *c, const void *y, char *why, size_t why_size) {
    if (memcmp(y, c->expected, c->y_bytes) == 0) return 0;
    const size_t size = dwconv_dtype_size(c->desc.dtype);
    const int64_t i = test_first_difference(y, c->expected, size, c->y_elements);
    const int64_t C = c->desc.channels, L_out = c->output_length;
    int64_t b, ch, o;
    if (c->desc.layout == DWCONV_LAYOUT_NCL) b = i / (C * L_out), ch = i / L_out % C, o = i % L_out;
    else b = i / (C * L_out), o = i / C % L_out, ch = i % C;
    snprintf(why, why_size, "%s%s: output %lld (b %lld, c %lld, o %lld) is %.9g%s, cpu says %.9g",
             test_desc_string(&c->desc), c->bias_bytes ? " bias" : "", (long long)i, (long long)b,
             (long long)ch, (long long)o, test_get(c->desc.dtype, y, i),
             test_untouched((const char *)y + (size_t)i * size, size) ? " (never written)" : "",
             test_get(c->desc.dtype, c->expected, i));
    return -1;
}

/* Names of the kernels for stride 1, dilation 1, K <= 8 only, and their layout. */
static int small_k_kernel(const char *kernel, dwconv_layout *layout) {
    if (strcmp(kernel, "vector") == 0 || strcmp(kernel, "lean") == 0) *layout = DWCONV_LAYOUT_NCL;
    else if (strcmp(kernel, "slide") == 0) *layout = DWCONV_LAYOUT_NLC;
    else return 0;
    return 1;
}

void gpu_case_fit_kernel(dwconv_desc *d, const char *kernel, int i) {
    dwconv_desc fitted = *d;
    if (strcmp(kernel, "nlc") == 0) fitted.layout = DWCONV_LAYOUT_NLC;
    else if (strcmp(kernel, "auto") != 0 && strcmp(kernel, "generic") != 0)
        fitted.layout = DWCONV_LAYOUT_NCL;
    if (strcmp(kernel, "lattice") == 0 && i % 2 == 0) fitted.dilation = fitted.stride * (1 + i % 3);
    if (small_k_kernel(kernel, &fitted.layout) && i % 4 != 3) { /* every 4th: a fallback */
        fitted.stride = fitted.dilation = 1;
        fitted.kernel_size = 1 + (fitted.kernel_size - 1) % 8;
        if (strcmp(kernel, "lean") == 0 && i % 4 == 2) { /* its strided, dilated K = 3 */
            fitted.kernel_size = 3;
            if (i % 12 == 2) fitted.stride = 2;
            else fitted.dilation = i % 12 == 6 ? 2 : 4;
        }
        if (fitted.padding == DWCONV_PADDING_EXPLICIT) { /* keep the padding within limits */
            fitted.pad_left %= fitted.dilation * (fitted.kernel_size - 1) + 2;
            fitted.pad_right %= fitted.dilation * (fitted.kernel_size - 1) + 2;
        }
    }
    if (dwconv_desc_resolve(&fitted, NULL, NULL, NULL) == DWCONV_SUCCESS) *d = fitted;
}

int gpu_test_quick(void) {
    const char *quick = getenv("DWCONV_TEST_QUICK");
    return quick && *quick && strcmp(quick, "0") != 0;
}
