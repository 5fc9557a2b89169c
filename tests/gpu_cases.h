/* Test problems for the GPU suites: host buffers filled from a seeded generator, the
 * cpu backend's result as the oracle, and a bitwise comparison that says where and
 * how a result differs. Shared by tests/check_gpu.c (a real device) and
 * tests/check_gpu_emulated.cc (the kernels run on the CPU). */
#ifndef DWCONV_TESTS_GPU_CASES_H
#define DWCONV_TESTS_GPU_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "test_util.h" /* plain C declarations */

typedef struct gpu_case {
    dwconv_desc desc;
    int64_t x_elements, y_elements, weight_elements, output_length;
    size_t x_bytes, y_bytes, weight_bytes, bias_bytes; /* bias_bytes 0: no bias */
    void *x, *weight, *bias, *expected;                /* host memory */
} gpu_case;

/* Allocates and fills x, weight and (if with_bias) bias, and computes expected with
 * dwconv_forward on cpu (a cpu context). Large x is filled by repeating a random
 * block, which keeps 2^31-element cases quick. Returns 0, or -1 with a message. */
int gpu_case_make(gpu_case *c, const dwconv_desc *desc, test_rng *rng, int with_bias,
                  dwconv_context *cpu, char *why, size_t why_size);
void gpu_case_free(gpu_case *c);

/* 0 when y equals expected bit for bit; else -1 and why names the first differing
 * output (b, c, o), both values, and whether y still holds the poison there. */
int gpu_case_compare(const gpu_case *c, const void *y, char *why, size_t why_size);

/* Adjusts a random descriptor so that the kernel named as DWCONV_GPU_KERNEL names it
 * ("vector", "tile", "lattice", "nlc", "lean", "slide"; others unchanged) applies to
 * it: its layout; for lattice a dilation that is a multiple of the stride in every
 * other case; for vector, lean and slide stride 1, dilation 1 and K <= 8 in three
 * cases of four (lean: one of them K = 3 strided or dilated; the fourth checks that
 * they fall back). */
void gpu_case_fit_kernel(dwconv_desc *desc, const char *kernel, int i);

/* Environment knob for slow tools (compute-sanitizer): DWCONV_TEST_QUICK=1 scales
 * random-case counts down and skips the 2^31-element cases. */
int gpu_test_quick(void);

#ifdef __cplusplus
}
#endif
#endif
