/*
 * The GPU kernels, run on the CPU by tests/gpu_emulate.h, against the cpu backend bit
 * for bit: every kernel (forced as DWCONV_GPU_KERNEL would) over random descriptors of
 * every option, with pointers on and off 16-byte boundaries. The same code runs on
 * GPUs; this catches indexing, padding and barrier mistakes where no GPU exists.
 * Conversions differ only in that NVIDIA builds use the conversion instructions
 * (bench/gpu/conversions.cu proves them equal). Exit status: 0 pass, 1 fail, 77 skip
 * (no ucontext.h). DWCONV_TEST_QUICK=1 runs fewer descriptors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "gpu_cases.h"
extern "C" {
#include "internal.h"
}
#include "gpu_emulate.h"
#include "gpu_kernels.cuh"

namespace {

/* Host memory at a chosen distance past a 16-byte boundary. */
struct offset_buffer {
    std::vector<uint4> storage;
    void *at;
    offset_buffer(size_t bytes, size_t offset) : storage(bytes / 16 + 2) {
        at = (char *)storage.data() + offset;
    }
};

/* Runs c through kernel (a gpu_kernel_id), x, weight and bias offset by `shift`
 * elements, y by `yshift`; 0 when the result matches the cpu backend. */
int ran[GPU_KERNEL_COUNT]; /* runs per kernel actually chosen */

int run_case(const gpu_case *c, int kernel, int shift, int yshift, char *why, size_t why_size) {
    const size_t xs = dwconv_dtype_size(c->desc.dtype), ws = dwconv_dtype_size(c->desc.weight_dtype);
    offset_buffer x(c->x_bytes, shift * xs), y(c->y_bytes, yshift * xs);
    offset_buffer w(c->weight_bytes, shift * ws), bias(c->bias_bytes, shift * ws);
    memcpy(x.at, c->x, c->x_bytes);
    memcpy(w.at, c->weight, c->weight_bytes);
    if (c->bias) memcpy(bias.at, c->bias, c->bias_bytes);
    test_poison(y.at, c->y_bytes);

    dwconv_problem problem;
    if (dwconv_validate_forward(&problem, &c->desc, NULL, x.at, w.at, c->bias ? bias.at : NULL,
                                y.at, "check_gpu_emulated") != DWCONV_SUCCESS) {
        snprintf(why, why_size, "%s: %s", test_desc_string(&c->desc), dwconv_last_error());
        return -1;
    }
    gpu_conv_args a = gpu_args_make(&problem);
    gpu_launch l;
    gpu_plan_launch(kernel, &a, &l);
    ran[l.kernel]++;
    if (gpu_emulate(gpu_kernel_instance(&a, l.kernel), l.grid, l.threads, l.smem, a) != 0) {
        snprintf(why, why_size, "%s: barrier mismatch in the %s kernel",
                 test_desc_string(&c->desc), gpu_kernel_names[l.kernel]);
        return -1;
    }
    if (gpu_case_compare(c, y.at, why, why_size) == 0) return 0;
    const size_t n = strlen(why);
    snprintf(why + n, why_size - n, " [%s kernel, offsets x %d y %d]", gpu_kernel_names[l.kernel],
             shift, yshift);
    return -1;
}

} // namespace

/* Runs d through kernel (descriptor i of a series: the launch limits vary with i) at
 * three pointer offsets; returns the failures. */
int check_desc(dwconv_context *cpu, test_rng *rng, const dwconv_desc *d, int kernel, int i,
               int *runs) {
    char why[1024];
    gpu_case c;
    if (gpu_case_make(&c, d, rng, i % 3 != 0, cpu, why, sizeof why) != 0) {
        fprintf(stderr, "FAIL %s\n", why);
        return 1;
    }
    /* every other case: tiny launch limits, so blocks walk rows and tiles, and slide
     * threads take many steps */
    gpu_limits.enough_blocks = i % 2 ? 1 : 2048;
    gpu_limits.enough_threads = i % 2 ? 1 : (int64_t)1 << 19;
    gpu_limits.grid_yz = i % 4 == 1 ? 2 : 65535;
    gpu_limits.grid_x = i % 4 == 3 ? 2 : GPU_GRID_X;
    /* aligned; all one element off; y three off x (x's vectors and y's then start at
     * different offsets of a row) */
    int failures = 0;
    for (int shift = 0; shift < 3; shift++, (*runs)++)
        if (run_case(&c, kernel, shift ? 1 : 0, shift == 2 ? 3 : shift, why, sizeof why) != 0) {
            fprintf(stderr, "FAIL %s\n", why);
            failures++;
        }
    gpu_case_free(&c);
    return failures;
}

/* The bench's shapes, scaled down to rows of odd lengths around the tile sizes. */
int check_shapes(dwconv_context *cpu, test_rng *rng, int *runs) {
    static const struct {
        int64_t K, stride, dilation, pad; /* pad -1: causal */
    } shapes[] = {{3, 1, 1, 1}, {4, 1, 1, -1}, {3, 2, 1, 1}, {3, 1, 4, 4}, {3, 1, 2, 2}, {7, 1, 1, 3}};
    static const int64_t lengths[] = {1, 9, 1023, 2053, 4099};
    int failures = 0, i = 0;
    for (const auto &s : shapes)
        for (int64_t L : lengths)
            for (int dt = 0; dt < 3; dt++, i++) {
                dwconv_desc d;
                dwconv_desc_init(&d, 2, 3, L, s.K);
                d.stride = s.stride, d.dilation = s.dilation, d.dtype = (dwconv_dtype)dt;
                d.weight_dtype = i % 2 ? DWCONV_F32 : d.dtype;
                if (s.pad < 0) d.padding = DWCONV_PADDING_CAUSAL;
                else d.pad_left = d.pad_right = s.pad;
                d.padding_mode = (dwconv_padding_mode)(i % 4);
                if (dwconv_desc_resolve(&d, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
                const int ncl[] = {GPU_KERNEL_AUTO, GPU_KERNEL_NCL_LEAN, GPU_KERNEL_NCL_VECTOR};
                const int nlc[] = {GPU_KERNEL_AUTO, GPU_KERNEL_NLC_SLIDE, GPU_KERNEL_NLC};
                for (int k = 0; k < 3; k++) {
                    d.layout = DWCONV_LAYOUT_NCL;
                    failures += check_desc(cpu, rng, &d, ncl[k], i + k, runs);
                    d.layout = DWCONV_LAYOUT_NLC;
                    failures += check_desc(cpu, rng, &d, nlc[k], i + k, runs);
                }
            }
    return failures;
}

int main(void) {
#ifndef GPU_EMULATE_AVAILABLE
    printf("check_gpu_emulated: SKIP: no ucontext.h to run GPU threads on\n");
    return 77;
#endif
    dwconv_context *cpu = NULL;
    if (dwconv_context_create(&cpu, DWCONV_BACKEND_CPU, 0) != DWCONV_SUCCESS) {
        fprintf(stderr, "no cpu context: %s\n", dwconv_last_error());
        return 1;
    }
    const int per_kernel = gpu_test_quick() ? 10 : 60;
    test_rng rng = test_rng_seed(20261201);
    int failures = 0, runs = 0;
    for (int kernel = GPU_KERNEL_AUTO; kernel < GPU_KERNEL_COUNT; kernel++)
        for (int i = 0; i < per_kernel; i++) {
            dwconv_desc d = test_random_desc(&rng, 2600, 12);
            gpu_case_fit_kernel(&d, gpu_kernel_names[kernel], i);
            failures += check_desc(cpu, &rng, &d, kernel, i, &runs);
        }
    failures += check_shapes(cpu, &rng, &runs);
    dwconv_context_destroy(cpu);
    printf("%d of %d emulated runs match the cpu backend bit for bit; runs per kernel:", runs - failures,
           runs);
    for (int k = GPU_KERNEL_GENERIC; k < GPU_KERNEL_COUNT; k++) printf(" %s %d", gpu_kernel_names[k], ran[k]);
    printf("\n");
    return failures ? 1 : 0;
}
