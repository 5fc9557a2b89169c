/* Backward test problems for the GPU suites: strided host inputs from a seeded
 * generator, any subset of dx, dweight and dbias wanted, and the scalar reference's
 * result (dwconv_reference_run on the same problem) as the oracle, the gaps of dx's
 * extent left as poison; a bitwise comparison that says where a result differs.
 * Shared by tests/check_gpu_backward_emulated.cc (the kernels on the CPU) and
 * tests/check_gpu_backward.c (a real device). */
#ifndef DWCONV_TESTS_GPU_BWD_CASES_H
#define DWCONV_TESTS_GPU_BWD_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv.h"
#include "dwconv_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "test_util.h"

/* The backward outputs, by index. */
enum { GPU_BWD_DX = 0, GPU_BWD_DW = 1, GPU_BWD_DB = 2, GPU_BWD_DSTATE = 3, GPU_BWD_OUTPUTS = 4 };

typedef struct gpu_bwd_case {
    dwconv_desc desc;
    int64_t x_stride[3], dy_stride[3], dx_stride[3];
    int grad_dtype;
    int causal; /* dwconv_causal_backward: contiguous operands, grad dtype = weight dtype */
    size_t x_bytes, dy_bytes, weight_bytes, bias_bytes; /* bias 0: none */
    size_t state_bytes, dstate_out_bytes;               /* causal: 0: not given */
    size_t out_bytes[GPU_BWD_OUTPUTS];                  /* 0: not wanted */
    void *x, *dy, *weight, *bias, *state, *dstate_out;
    void *expected[GPU_BWD_OUTPUTS]; /* poison where the reference writes nothing */
} gpu_bwd_case;

/* Draws strides for desc (x, dy and dx each of the class cls: GPU_CHANNEL_FIRST,
 * GPU_CHANNEL_LAST, GPU_MIXED, or GPU_CASE_ANY_STRIDES), the gradient dtype, bias or
 * not, and which outputs are wanted (`wanted`: a mask of 1 << GPU_BWD_*, 0: drawn),
 * fills the inputs and computes the expected outputs. 0, or -1 with why. */
int gpu_bwd_case_make(gpu_bwd_case *c, const dwconv_desc *desc, int cls, int wanted,
                      test_rng *rng, char *why, size_t why_size);
void gpu_bwd_case_free(gpu_bwd_case *c);

/* The same for dwconv_causal_backward (desc causal): initial_states and dfinal_states
 * given or not (drawn), dinitial_states wanted or not (`wanted` may hold
 * 1 << GPU_BWD_DSTATE). */
int gpu_bwd_case_make_causal(gpu_bwd_case *c, const dwconv_desc *desc, int wanted,
                             test_rng *rng, char *why, size_t why_size);

/* New random inputs for c (the same shapes, strides and outputs) and their expected
 * outputs; 0, or -1 with why. */
int gpu_bwd_case_refill(gpu_bwd_case *c, test_rng *rng, char *why, size_t why_size);

/* The problem the core builds for c on these buffers (host or device memory: the core
 * reads neither); a NULL output is not wanted. 0, or -1 (dwconv_last_error says why). */
int gpu_bwd_case_problem(dwconv_problem *p, const gpu_bwd_case *c, const void *x,
                         const void *weight, const void *bias, const void *dy,
                         const void *state, const void *dstate_out,
                         void *const out[GPU_BWD_OUTPUTS]);

/* 0 when out (the wanted outputs' extents) equals the expected bits; else -1 and why
 * names the output, the first differing element and both values. */
int gpu_bwd_case_compare(const gpu_bwd_case *c, void *const out[GPU_BWD_OUTPUTS], char *why,
                         size_t why_size);

/* A one-line description of c for messages. */
const char *gpu_bwd_case_string(const gpu_bwd_case *c);

#ifdef __cplusplus
}
#endif
#endif
