/*
 * The GPU kernels, run on the CPU by tests/gpu_emulate.h, against the cpu backend bit
 * for bit: every family of the registry (forced as DWCONV_GPU_KERNEL would) over random
 * descriptors of every option and strided x and y of every class (padded rows,
 * channel slices, mixed), with pointers on and off 16-byte boundaries. The same code
 * runs on GPUs; this catches indexing, padding and barrier mistakes where no GPU
 * exists. It fails when a forced family that applies (the registry's own predicate)
 * does not run, when a family ran on fewer than half of the cases fitted to it, when a
 * kernel writes beside y (poisoned guards and gaps), touches memory past its inputs
 * (inaccessible pages) or beside its shared memory (gpu_emulate.h). Conversions differ
 * only in that NVIDIA builds use the conversion instructions (bench/gpu/conversions.cu
 * proves them equal). Exit status: 0 pass, 1 fail, 77 skip (no ucontext.h).
 * DWCONV_TEST_QUICK=1 runs fewer descriptors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_cases.h"
extern "C" {
#include "internal.h"
}
#include "gpu_emulate.h"
#include "gpu_kernels.cuh"

namespace {

int ran[GPU_FAMILY_COUNT];    /* runs per family actually chosen */
int fitted[GPU_FAMILY_COUNT]; /* cases each forced family applies to */

/* Runs c through family (a gpu_family_id; AUTO: the choice) with x, weight and bias
 * offset by `shift` elements, y by `yshift`; 0 when the result matches the cpu backend
 * and nothing beside y was written. */
int run_case(const gpu_case *c, int family, int shift, int yshift, char *why, size_t why_size) {
    const size_t xs = dwconv_dtype_size(c->desc.dtype), ws = dwconv_dtype_size(c->desc.weight_dtype);
    gpu_emulate_buffer x(c->x_bytes, shift * xs, 0), w(c->weight_bytes, shift * ws, 0);
    gpu_emulate_buffer bias(c->bias_bytes, shift * ws, 0);
    gpu_emulate_buffer y(c->y_bytes, yshift * xs, GPU_CASE_GUARD); /* poisoned */
    if (!x.at || !w.at || !bias.at || !y.at) {
        snprintf(why, why_size, "%s: no memory for the buffers", test_desc_string(&c->desc));
        return -1;
    }
    memcpy(x.at, c->x, c->x_bytes);
    memcpy(w.at, c->weight, c->weight_bytes);
    if (c->bias) memcpy(bias.at, c->bias, c->bias_bytes);

    dwconv_problem problem;
    if (gpu_case_problem(&problem, c, x.at, w.at, c->bias ? bias.at : NULL, y.at) != 0) {
        snprintf(why, why_size, "%s: %s", test_desc_string(&c->desc), dwconv_last_error());
        return -1;
    }
    gpu_conv_args a = gpu_args_make(&problem);
    gpu_launch l;
    gpu_plan_launch(family, &a, &l);
    ran[l.family]++;
    const char *name = gpu_family(l.family)->name;
    const int applies = gpu_family_applies(family, &a);
    if (family != GPU_FAMILY_AUTO && applies != (l.family == family)) {
        snprintf(why, why_size, "%s: forced %s %s, but %s ran", test_desc_string(&c->desc),
                 gpu_family(family)->name, applies ? "applies" : "does not apply", name);
        return -1;
    }
    const gpu_kernel_fn kernel = gpu_family_instance(l.family, &a);
    if (!kernel) {
        snprintf(why, why_size, "%s: the %s family applies but has no instance",
                 test_desc_string(&c->desc), name);
        return -1;
    }
    if (gpu_emulate(kernel, l.grid, l.threads, l.smem, a) != 0) {
        snprintf(why, why_size, "%s: the %s kernel failed in the emulator (above)",
                 test_desc_string(&c->desc), name);
        return -1;
    }
    if (gpu_case_compare(c, y.at, why, why_size) == 0 &&
        gpu_case_guards(c, y.at, why, why_size) == 0)
        return 0;
    const size_t n = strlen(why);
    snprintf(why + n, why_size - n, " [%s kernel, offsets x %d y %d]", name, shift, yshift);
    return -1;
}

} // namespace

/* Runs d with strides xs, ys through family (descriptor i of a series: the launch
 * limits vary with i) at three pointer offsets; returns the failures. */
int check_desc(dwconv_context *cpu, test_rng *rng, const dwconv_desc *d, const int64_t *xs,
               const int64_t *ys, int family, int i, int *runs) {
    char why[1024];
    gpu_case c;
    if (gpu_case_make(&c, d, xs, ys, rng, i % 3 != 0, cpu, why, sizeof why) != 0) {
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
        if (run_case(&c, family, shift ? 1 : 0, shift == 2 ? 3 : shift, why, sizeof why) != 0) {
            fprintf(stderr, "FAIL %s\n", why);
            failures++;
        }
    gpu_case_free(&c);
    return failures;
}

/* The bench's shapes, scaled down to rows of odd lengths around the tile sizes, each
 * contiguous and strided, through the choice and the families of its layout; then
 * large K through the families for it. */
int check_shapes(dwconv_context *cpu, test_rng *rng, int *runs) {
    static const struct {
        int64_t K, stride, dilation, pad; /* pad -1: causal */
    } shapes[] = {{3, 1, 1, 1}, {4, 1, 1, -1}, {3, 2, 1, 1}, {3, 1, 4, 4}, {3, 1, 2, 2}, {7, 1, 1, 3},
                  {5, 1, 2, 4}, {7, 1, 2, 6}};
    static const int64_t lengths[] = {1, 9, 1023, 2053, 4099};
    static const int first[] = {GPU_FAMILY_AUTO, GPU_FAMILY_LEAN, GPU_FAMILY_TILE};
    static const int last[] = {GPU_FAMILY_AUTO, GPU_FAMILY_SLIDE, GPU_FAMILY_NLC};
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
                for (int k = 0; k < 3; k++) {
                    int64_t xs[3], ys[3];
                    d.layout = DWCONV_LAYOUT_NCL;
                    failures += check_desc(cpu, rng, &d, NULL, NULL, first[k], i + k, runs);
                    gpu_case_strides(rng, &d, GPU_CHANNEL_FIRST, xs, ys);
                    failures += check_desc(cpu, rng, &d, xs, ys, first[k], i + k + 1, runs);
                    d.layout = DWCONV_LAYOUT_NLC;
                    failures += check_desc(cpu, rng, &d, NULL, NULL, last[k], i + k, runs);
                    gpu_case_strides(rng, &d, GPU_CHANNEL_LAST, xs, ys);
                    failures += check_desc(cpu, rng, &d, xs, ys, last[k], i + k + 1, runs);
                }
            }
    /* large K, past the taps a block stages at once (column) and several chunks */
    static const int64_t large_k[] = {9, 31, 70, 135};
    for (int64_t K : large_k)
        for (int dt = 0; dt < 3; dt++, i++) {
            dwconv_desc d;
            dwconv_desc_init(&d, 2, i % 2 ? 37 : 5, 700, K);
            d.dtype = (dwconv_dtype)dt, d.weight_dtype = i % 3 ? DWCONV_F32 : d.dtype;
            d.padding = i % 2 ? DWCONV_PADDING_SAME : DWCONV_PADDING_CAUSAL;
            d.padding_mode = d.padding == DWCONV_PADDING_SAME ? (dwconv_padding_mode)(i % 4)
                                                              : DWCONV_PAD_ZEROS;
            d.activation = (dwconv_activation)(i % 3);
            int64_t xs[3], ys[3];
            d.layout = DWCONV_LAYOUT_NCL;
            failures += check_desc(cpu, rng, &d, NULL, NULL, GPU_FAMILY_LATTICE, i, runs);
            d.layout = DWCONV_LAYOUT_NLC;
            failures += check_desc(cpu, rng, &d, NULL, NULL, GPU_FAMILY_COLUMN, i, runs);
            gpu_case_strides(rng, &d, GPU_CHANNEL_LAST, xs, ys);
            failures += check_desc(cpu, rng, &d, xs, ys, GPU_FAMILY_AUTO, i + 1, runs);
        }
    /* slide at a dilation, on whole channel vectors (C 24: 6 f32 vectors, 3 of 16 bits):
     * runs of one phase, rows a dilation apart, the row's ends by every padding mode */
    static const struct {
        int64_t K, D, L;
    } dilated[] = {{2, 2, 61}, {4, 3, 517}, {7, 2, 1030}, {3, 5, 14}, {8, 4, 333}};
    for (const auto &r : dilated)
        for (int dt = 0; dt < 3; dt++, i++) {
            dwconv_desc d;
            dwconv_desc_init(&d, 2, 24, r.L, r.K);
            d.dtype = (dwconv_dtype)dt, d.weight_dtype = i % 2 ? DWCONV_F32 : d.dtype;
            d.dilation = r.D, d.layout = DWCONV_LAYOUT_NLC;
            d.padding = i % 3 == 0 ? DWCONV_PADDING_CAUSAL : DWCONV_PADDING_SAME;
            d.padding_mode = d.padding == DWCONV_PADDING_SAME ? (dwconv_padding_mode)(i % 4) : DWCONV_PAD_ZEROS;
            d.activation = (dwconv_activation)(i % 3);
            if (dwconv_desc_resolve(&d, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
            failures += check_desc(cpu, rng, &d, NULL, NULL, GPU_FAMILY_SLIDE, i, runs);
            failures += check_desc(cpu, rng, &d, NULL, NULL, GPU_FAMILY_AUTO, i + 1, runs);
        }
    /* rows of several lattice tiles: the next tile's points carried over and fetched
     * during the sums, or (more taps than a tile) staged again; points a dilation apart */
    static const struct {
        int64_t C, L, K, D;
    } long_rows[] = {{3, 5000, 31, 1}, {2, 4500, 70, 1}, {1, 4300, 2060, 1}, {1, 4200, 256, 1},
                     {2, 9000, 17, 2}};
    for (const auto &r : long_rows)
        for (int dt = 0; dt < 3; dt += 2, i++) {
            dwconv_desc d;
            dwconv_desc_init(&d, 2, r.C, r.L, r.K);
            d.dtype = d.weight_dtype = (dwconv_dtype)dt, d.activation = (dwconv_activation)(i % 3);
            d.stride = d.dilation = r.D;
            if (r.D == 1) d.padding = DWCONV_PADDING_SAME, d.padding_mode = (dwconv_padding_mode)(i % 4);
            else d.pad_left = r.K, d.pad_right = 3;
            if (dwconv_desc_resolve(&d, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
            failures += check_desc(cpu, rng, &d, NULL, NULL, GPU_FAMILY_LATTICE, 2 * i + 1, runs);
        }
    return failures;
}

/* The emulator's own warp barrier: a warp exchanges values through shared memory
 * behind it in every thread order, and a barrier that one lane skips, or that a warp
 * reaches while another waits at a block barrier, is reported (launch -1). */
int check_warp_barrier(void) {
    int failures = 0;
    const int64_t grid[3] = {1, 1, 1};
    bool exchanged = true;
    const int ok = gpu_emulate_launch([&] {
        int *s = (int *)gpu_emulated_shared();
        const int t = (int)threadIdx.x, lane = t % 32;
        s[t] = t;
        __syncwarp();
        exchanged &= s[t - lane + (lane + 1) % 32] == t - lane + (lane + 1) % 32;
    }, grid, 64, 64 * sizeof(int));
    if (ok != 0 || !exchanged) {
        fprintf(stderr, "FAIL the emulator's warp barrier did not order a warp's shared memory\n");
        failures++;
    }
    fprintf(stderr, "(expected: two reports of barriers some threads skip)\n");
    if (gpu_emulate_launch([] { if (threadIdx.x != 3) __syncwarp(); }, grid, 64, 0) != -1) {
        fprintf(stderr, "FAIL a warp barrier one lane skips was not reported\n");
        failures++;
    }
    if (gpu_emulate_launch([] { if (threadIdx.x < 32) __syncwarp(); else __syncthreads(); }, grid, 64, 0) != -1) {
        fprintf(stderr, "FAIL a warp barrier beside a block barrier was not reported\n");
        failures++;
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
    const int per_family = test_quick() ? 12 : 60;
    test_rng rng = test_rng_seed(20261201);
    int failures = 0, runs = 0;
    for (int f = GPU_FAMILY_AUTO; f < GPU_FAMILY_COUNT; f++) {
        for (int i = 0; i < per_family; i++) {
            dwconv_desc d = test_random_desc(&rng, 2600, 12);
            int64_t xs[3], ys[3];
            fitted[f] += gpu_case_fit(&d, xs, ys, f, &rng, i);
            failures += check_desc(cpu, &rng, &d, xs, ys, f, i, &runs);
        }
        /* three cases in four are fitted to a forced family: most of them must fit */
        if (f != GPU_FAMILY_AUTO && fitted[f] < per_family / 2) {
            fprintf(stderr, "FAIL the %s family applied to only %d of %d cases fitted to it\n",
                    gpu_family(f)->name, fitted[f], per_family);
            failures++;
        }
    }
    failures += check_shapes(cpu, &rng, &runs);
    failures += check_warp_barrier();
    dwconv_context_destroy(cpu);
    printf("%d of %d emulated runs match the cpu backend bit for bit; runs per family:",
           runs - failures, runs);
    for (int f = GPU_FAMILY_AUTO + 1; f < GPU_FAMILY_COUNT; f++)
        printf(" %s %d (forced on %d fitting cases)", gpu_family(f)->name, ran[f], fitted[f]);
    printf("\n");
    return failures ? 1 : 0;
}
