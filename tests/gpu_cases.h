/* Test problems for the GPU suites: strided host buffers filled from a seeded
 * generator, the cpu backend's result as the oracle, a bitwise comparison that says
 * where and how a result differs, and the kernel families' own predicate
 * (src/cuda/gpu_families.h) to say which family a problem must run. Shared by
 * tests/check_gpu.c (a real device) and tests/check_gpu_emulated.cc (the kernels run
 * on the CPU). */
#ifndef DWCONV_TESTS_GPU_CASES_H
#define DWCONV_TESTS_GPU_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv.h"
#include "dwconv_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "test_util.h" /* plain C declarations */

/* Bytes of poison before and after every output buffer, checked after each run. */
#define GPU_CASE_GUARD 256

typedef struct gpu_case {
    dwconv_desc desc;
    int64_t x_stride[3], y_stride[3]; /* element strides (batch, channel, position) */
    int64_t x_elements, y_elements;   /* elements of the extents x and y span */
    int64_t weight_elements, output_length;
    size_t x_bytes, y_bytes, weight_bytes, bias_bytes; /* x, y: extents; bias 0: none */
    void *x, *weight, *bias, *expected; /* host memory; the gaps of x and of expected
                                           between their elements hold the poison */
} gpu_case;

/* Which strides gpu_case_strides draws: the layout classes of src/cuda/gpu_args.cuh
 * (GPU_CHANNEL_FIRST 0, GPU_CHANNEL_LAST 1, GPU_MIXED -1), or any of them. */
#define GPU_CASE_ANY_STRIDES 2

/* Strides of x and y for desc of one class: contiguous, padded rows or positions,
 * channel slices of a larger tensor, batch inside channels; mixed: x and y of
 * different classes, or neither. */
void gpu_case_strides(test_rng *rng, const dwconv_desc *desc, int cls, int64_t xs[3],
                      int64_t ys[3]);

/* Allocates and fills x (its elements; gaps poisoned), weight and (if with_bias) bias,
 * and computes expected with the cpu backend through a plan with these strides
 * (NULL: contiguous in desc.layout). Large contiguous x is filled by repeating a
 * random block, which keeps 2^31-element cases quick. Returns 0, or -1 with a
 * message. */
int gpu_case_make(gpu_case *c, const dwconv_desc *desc, const int64_t *xs, const int64_t *ys,
                  test_rng *rng, int with_bias, dwconv_context *cpu, char *why, size_t why_size);
void gpu_case_free(gpu_case *c);

/* Computes c's expected again (after a caller changed its x, weight or bias): 0, or -1
 * with a message (c is left to the caller to free). */
int gpu_case_expect(gpu_case *c, dwconv_context *cpu, char *why, size_t why_size);

/* 0 when y (the whole extent) equals expected bit for bit; else -1 and why names the
 * first differing byte's output (b, c, o) or gap, both values, whether y still holds
 * the poison there, and what the scalar reference says. */
int gpu_case_compare(const gpu_case *c, const void *y, char *why, size_t why_size);

/* 0 when the `before` bytes before and the `after` bytes after the `bytes` at `at`
 * still hold the poison; else -1 and why says on which side of `what` a write landed.
 * Every GPU suite, real or emulated, checks its outputs' guards with it. */
int gpu_guards_intact(const void *at, size_t bytes, size_t before, size_t after,
                      const char *what, char *why, size_t why_size);

/* gpu_guards_intact for the GPU_CASE_GUARD bytes on each side of y_at (the extent of
 * c's y). */
int gpu_case_guards(const gpu_case *c, const unsigned char *y_at, char *why, size_t why_size);

/* The forward problem the core builds for c on the given buffers (host memory, or
 * device memory: the core reads neither); 0, or -1 with the core's message in
 * dwconv_last_error(). */
int gpu_case_problem(dwconv_problem *p, const gpu_case *c, const void *x, const void *weight,
                     const void *bias, void *y);

/* Whether family (a gpu_family_id) applies to desc with these strides: the registry's
 * own predicate (gpu_family_applies) on the problem the core builds. */
int gpu_case_applies(const dwconv_desc *desc, const int64_t xs[3], const int64_t ys[3],
                     int family);

/* Makes desc and strides (drawn in place) a case `family` applies to, by redrawing K
 * within its range, stride, dilation and strides of its layout class until its
 * predicate says yes; every fourth i (i % 4 == 3) keeps desc and draws strides of any
 * class, so that cases it does not apply to check the fallback. Returns whether the
 * family applies to the result. */
int gpu_case_fit(dwconv_desc *desc, int64_t xs[3], int64_t ys[3], int family, test_rng *rng,
                 int i);

#ifdef __cplusplus
}
#endif
#endif
