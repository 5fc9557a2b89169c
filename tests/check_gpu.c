/*
 * The GPU backend suite, written once for whichever GPU backend this machine has
 * (cuda, else hip; exit 77 = skip when neither has a device). Every result is
 * compared bit for bit with the cpu backend, the GPU output and GPU_CASE_GUARD bytes
 * on each side of it poisoned first and checked after; inputs are allocated to their
 * exact size, so compute-sanitizer sees a read past them. Each family of the registry
 * (src/cuda/gpu_families.h) is forced strictly (DWCONV_GPU_KERNEL_STRICT): a case the
 * family's predicate accepts must run it, any other must be refused.
 *
 * Runs without forking (GPU runtimes do not survive a fork of an initialised
 * process). DWCONV_TEST_QUICK=1 shrinks it for compute-sanitizer (tests/gpu_cases.h).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwconv_numerics.h"
#include "gpu_cases.h"
#include "gpu_device.h"
#include "gpu_families.h"
#include "gpu_graph.h"

static dwconv_backend gpu_backend;
static int gpu_devices;
static dwconv_context *cpu;

/* A context on device 0 whose forward uses `family` (a gpu_family_id) wherever it
 * applies; strict: and refuses what it does not apply to. */
static dwconv_context *gpu_context(int family, int strict) {
    return gpu_device_context(gpu_backend, gpu_family(family)->name, strict);
}

/* The message of run_case's call (later calls clear dwconv_last_error). */
static char run_error[1024];

/* Runs c through ctx with every buffer `shift` elements past dwconv_malloc's
 * alignment, through a plan with c's strides (or dwconv_forward where they are the
 * descriptor's own and plain is set). Returns the call's status; on SUCCESS also
 * compares y and its guards, and fails the test on a difference. */
static dwconv_status run_case(dwconv_context *ctx, const gpu_case *c, int shift, int plain) {
    char why[1024];
    const size_t xs = dwconv_dtype_size(c->desc.dtype) * shift;
    const size_t ws = dwconv_dtype_size(c->desc.weight_dtype) * shift;
    char *x = gpu_device_input(ctx, c->x, c->x_bytes, xs);
    char *w = gpu_device_input(ctx, c->weight, c->weight_bytes, ws);
    char *b = c->bias ? gpu_device_input(ctx, c->bias, c->bias_bytes, ws) : NULL;
    gpu_guarded y;
    gpu_guarded_make(&y, ctx, c->y_bytes, xs);
    void *yc = y.at, *xc = x + xs, *wc = w + ws, *bc = b ? b + ws : NULL;

    dwconv_status st;
    if (plain) {
        st = dwconv_forward(ctx, &c->desc, xc, wc, bc, yc);
    } else {
        dwconv_plan *plan = NULL;
        ck_assert_msg(dwconv_plan_create(&plan, ctx, &c->desc) == DWCONV_SUCCESS, "plan: %s",
                      dwconv_last_error());
        ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_X, c->x_stride[0], c->x_stride[1],
                                          c->x_stride[2]) == DWCONV_SUCCESS);
        ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_Y, c->y_stride[0], c->y_stride[1],
                                          c->y_stride[2]) == DWCONV_SUCCESS);
        st = dwconv_plan_forward(plan, xc, wc, bc, yc);
        dwconv_plan_destroy(plan);
    }
    snprintf(run_error, sizeof run_error, "%s", dwconv_last_error());
    if (st == DWCONV_SUCCESS) {
        ck_assert_msg(dwconv_synchronize(ctx) == DWCONV_SUCCESS, "%s", dwconv_last_error());
        gpu_guarded_fetch(&y);
        ck_assert_msg(gpu_case_compare(c, y.got, why, sizeof why) == 0, "%s (offset %d elements)",
                      why, shift);
        char what[600];
        snprintf(what, sizeof what, "%s: y", test_desc_string(&c->desc));
        ck_assert_msg(gpu_guarded_intact(&y, what, why, sizeof why) == 0, "%s (offset %d elements)",
                      why, shift);
    } else { /* a refused call writes nothing */
        ck_assert(dwconv_synchronize(ctx) == DWCONV_SUCCESS);
        gpu_guarded_fetch(&y);
        ck_assert_msg(test_untouched(y.host, y.span), "%s: refused, but y was written",
                      test_desc_string(&c->desc));
    }
    gpu_guarded_free(&y);
    dwconv_free(ctx, x), dwconv_free(ctx, w), dwconv_free(ctx, b);
    return st;
}

/* Makes the case for desc and strides (NULL: the descriptor's own) and checks it on
 * ctx, which must run it. */
static void check_desc(dwconv_context *ctx, const dwconv_desc *d, const int64_t *xs,
                       const int64_t *ys, test_rng *rng, int bias, int shift) {
    gpu_case c;
    char why[1024];
    ck_assert_msg(gpu_case_make(&c, d, xs, ys, rng, bias, cpu, why, sizeof why) == 0, "%s", why);
    const dwconv_status st = run_case(ctx, &c, shift, xs == NULL);
    ck_assert_msg(st == DWCONV_SUCCESS, "%s: %s", test_desc_string(d), run_error);
    gpu_case_free(&c);
}

/* ---- random descriptors and strides, through every family ---- */

START_TEST(random_descriptors) {
    const int family = _i;
    const int count = (family == GPU_FAMILY_AUTO ? 300 : 100) / (test_quick() ? 10 : 1);
    dwconv_context *ctx = gpu_context(family, 1);
    test_rng rng = test_rng_seed(4000 + (uint64_t)family);
    int fitted = 0;
    for (int i = 0; i < count; i++) {
        dwconv_desc d = test_random_desc(&rng, 3000, 24);
        int64_t xs[3], ys[3];
        const int applies = gpu_case_fit(&d, xs, ys, family, &rng, i);
        fitted += applies;
        gpu_case c;
        char why[1024];
        ck_assert_msg(gpu_case_make(&c, &d, xs, ys, &rng, i % 3 != 0, cpu, why, sizeof why) == 0,
                      "%s", why);
        const dwconv_status st = run_case(ctx, &c, i % 2, 0);
        /* the registry's predicate says what a strictly forced family must do */
        if (family == GPU_FAMILY_AUTO || applies)
            ck_assert_msg(st == DWCONV_SUCCESS, "%s: %s", test_desc_string(&d), run_error);
        else
            ck_assert_msg(st == DWCONV_ERROR_UNSUPPORTED, "%s: forced %s does not apply, yet the "
                          "call returned %d (%s)", test_desc_string(&d), gpu_family(family)->name,
                          st, run_error);
        gpu_case_free(&c);
    }
    /* three cases in four are fitted to a forced family: most of them must fit */
    ck_assert_msg(family == GPU_FAMILY_AUTO || fitted >= count / 2,
                  "the %s family applied to only %d of %d cases", gpu_family(family)->name, fitted,
                  count);
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- the shapes that matter, and the edges of the fast paths ---- */

static dwconv_desc shape(int64_t B, int64_t C, int64_t L, int64_t K, dwconv_dtype dtype,
                         dwconv_layout layout) {
    dwconv_desc d;
    dwconv_desc_init(&d, B, C, L, K);
    d.dtype = d.weight_dtype = dtype;
    d.layout = layout;
    return d;
}

START_TEST(targeted_shapes) {
    const int q = test_quick(); /* small sizes for compute-sanitizer */
    dwconv_context *ctx = gpu_context(GPU_FAMILY_AUTO, 0);
    test_rng rng = test_rng_seed(77);
    dwconv_desc d;

    /* the reference problem: 32x512x8192, K3, pad 1, f32 */
    d = shape(q ? 1 : 32, q ? 8 : 512, 8192, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.pad_left = d.pad_right = 1;
    check_desc(ctx, &d, NULL, NULL, &rng, 0, 0);
    /* causal K4 with bias, B4 C5120: f32, bf16 with f32 weights, bf16 NLC with silu */
    d = shape(q ? 1 : 4, q ? 64 : 5120, 4096, 4, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.padding = DWCONV_PADDING_CAUSAL;
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 0);
    d.dtype = DWCONV_BF16;
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 0);
    d.layout = DWCONV_LAYOUT_NLC, d.weight_dtype = DWCONV_BF16, d.activation = DWCONV_ACT_SILU;
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 0);
    /* the same as Mamba-2 convolves it: a channel slice of a (B, L, 2 C + 64) projection */
    {
        const int64_t Ct = 2 * d.channels + 64, xs[3] = {d.length * Ct, 1, Ct};
        check_desc(ctx, &d, xs, xs, &rng, 1, 1);
    }
    /* K31, stride 2, dilation 4 (tile), and K31 with dilation == stride (lattice) */
    d = shape(2, q ? 8 : 64, 4096, 31, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.stride = 2, d.dilation = 4, d.pad_left = d.pad_right = 60;
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 0);
    d.dtype = DWCONV_F16, d.activation = DWCONV_ACT_RELU;
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 1);
    d.stride = d.dilation = 2;
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 1);
    /* K64 and K128 ("same"), both layouts, rows padded */
    for (int K = 64; K <= 128; K *= 2)
        for (int layout = 0; layout < 2; layout++) {
            d = shape(q ? 1 : 2, q ? 8 : 48, 5000, K, DWCONV_BF16, (dwconv_layout)layout);
            d.padding = DWCONV_PADDING_SAME, d.weight_dtype = DWCONV_F32;
            check_desc(ctx, &d, NULL, NULL, &rng, 1, layout);
            int64_t xs[3], ys[3];
            gpu_case_strides(&rng, &d, layout, xs, ys);
            check_desc(ctx, &d, xs, ys, &rng, 1, layout);
        }
    /* NLC with C not a multiple of the vector width, each dtype */
    for (int dt = 0; dt < 3; dt++) {
        d = shape(3, dt == 0 ? 6 : 13 + 87 * (dt - 1), 777, 5, (dwconv_dtype)dt, DWCONV_LAYOUT_NLC);
        d.padding = DWCONV_PADDING_SAME, d.padding_mode = DWCONV_PAD_REFLECT;
        check_desc(ctx, &d, NULL, NULL, &rng, 1, 0);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* Misaligned (one element past a boundary) and odd-sized buffers in every dtype and
 * layout, each family forced where it applies. */
START_TEST(misaligned_and_odd) {
    test_rng rng = test_rng_seed(31337);
    for (int f = GPU_FAMILY_AUTO; f < GPU_FAMILY_COUNT; f++) {
        dwconv_context *ctx = gpu_context(f, 0);
        for (int dt = 0; dt < 3; dt++)
            for (int layout = 0; layout < 2; layout++) {
                dwconv_desc d = shape(3, 7, 2049 + 2 * dt, f == GPU_FAMILY_LATTICE ? 13 : 3,
                                      (dwconv_dtype)dt, (dwconv_layout)layout);
                d.padding = DWCONV_PADDING_SAME;
                d.weight_dtype = layout ? DWCONV_F32 : d.dtype;
                check_desc(ctx, &d, NULL, NULL, &rng, 1, 1);
            }
        dwconv_context_destroy(ctx);
    }
}
END_TEST

/* silu rounded to a 16-bit output where the contract's value lies next to a rounding
 * boundary of that type. The CUDA kernels' bf16 path rounds a cheaper approximation
 * of silu wherever that gives the same bf16, and must take the contract's silu here
 * (src/cuda/gpu_elements.cuh, gpu_activate_fixed; bench/gpu/silu_exhaustive.cu counts
 * the floats that would round to another bf16 without that test). Pre-activations
 * z drawn on the host so that silu(z) +- 2^-20 of itself (8 to 16 units in its last
 * place) rounds two ways; x = 1, no bias and weights (0, .., 0, z_c) make every output
 * of channel c silu(z_c) exactly (causal padding: the last tap reads x[o]); through
 * every family that runs the shape, both layouts, bf16 and f16. */
static float silu_near_tie(test_rng *rng, dwconv_dtype dtype) {
    for (;;) {
        const float range = test_rng_next(rng) % 8 ? 16.0f : 86.0f;
        const float z = range * test_rng_float(rng), y = dwconv_silu(z);
        const float lo = y - fabsf(y) * 0x1p-20f, hi = y + fabsf(y) * 0x1p-20f;
        const int two_ways = dtype == DWCONV_BF16 ? dwconv_f32_to_bf16(lo) != dwconv_f32_to_bf16(hi)
                                                  : dwconv_f32_to_f16(lo) != dwconv_f32_to_f16(hi);
        if (two_ways) return z;
    }
}

START_TEST(silu_near_rounding_ties) {
    const int64_t C = test_quick() ? 128 : 2048;
    test_rng rng = test_rng_seed(20261206);
    for (int f = GPU_FAMILY_AUTO; f < GPU_FAMILY_COUNT; f++) {
        dwconv_context *ctx = gpu_context(f, 0);
        for (int dt = DWCONV_F16; dt <= DWCONV_BF16; dt++)
            for (int layout = 0; layout < 2; layout++) {
                dwconv_desc d = shape(1, C, f == GPU_FAMILY_AUTO ? 4096 : 300, 4, (dwconv_dtype)dt,
                                      (dwconv_layout)layout);
                d.padding = DWCONV_PADDING_CAUSAL, d.weight_dtype = DWCONV_F32;
                d.activation = DWCONV_ACT_SILU;
                gpu_case c;
                char why[1024];
                ck_assert_msg(gpu_case_make(&c, &d, NULL, NULL, &rng, 0, cpu, why, sizeof why) == 0,
                              "%s", why);
                const uint16_t one = dt == DWCONV_BF16 ? 0x3f80 : 0x3c00;
                for (int64_t i = 0; i < c.x_elements; i++) ((uint16_t *)c.x)[i] = one;
                float *w = (float *)c.weight;
                for (int64_t ch = 0; ch < C; ch++) {
                    for (int k = 0; k < 3; k++) w[ch * 4 + k] = 0.0f;
                    w[ch * 4 + 3] = silu_near_tie(&rng, (dwconv_dtype)dt);
                }
                ck_assert_msg(gpu_case_expect(&c, cpu, why, sizeof why) == 0, "%s", why);
                const dwconv_status st = run_case(ctx, &c, 0, 1);
                ck_assert_msg(st == DWCONV_SUCCESS, "%s: %s", test_desc_string(&d), run_error);
                gpu_case_free(&c);
            }
        dwconv_context_destroy(ctx);
    }
}
END_TEST

/* More than 2^31 elements: 64-bit indexing everywhere, offsets past 4 GiB (not in the
 * quick suite). */
START_TEST(over_two_billion_elements) {
    dwconv_context *ctx = gpu_context(GPU_FAMILY_AUTO, 0);
    test_rng rng = test_rng_seed(2147483649u);
    dwconv_desc d = shape(1, 2, ((int64_t)1 << 30) + 3, 3, DWCONV_F16, DWCONV_LAYOUT_NCL);
    d.pad_left = d.pad_right = 1;
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 0);
    d = shape(1, 8, ((int64_t)1 << 28) + 1, 4, DWCONV_BF16, DWCONV_LAYOUT_NLC);
    d.padding = DWCONV_PADDING_CAUSAL;
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 0);
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- errors: clear statuses, and the context keeps working ---- */

START_TEST(host_pointer_is_rejected) {
    dwconv_context *ctx = gpu_context(GPU_FAMILY_AUTO, 0);
    dwconv_desc d = shape(1, 4, 64, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    float host[4 * 64];
    /* x has room past its end: x + 1 must be refused for its alignment alone, not as
     * an x that runs into the next allocation (y may follow x, an ALIASING error) */
    char *x = gpu_device_alloc(ctx, sizeof host + 64), *y = gpu_device_alloc(ctx, sizeof host);
    void *w = gpu_device_alloc(ctx, 12 * sizeof(float));
    test_poison(host, sizeof host);
    ck_assert_int_eq(dwconv_forward(ctx, &d, host, w, NULL, y), DWCONV_ERROR_BAD_POINTER);
    ck_assert_ptr_nonnull(strstr(dwconv_last_error(), "host memory"));
    ck_assert_int_eq(dwconv_forward(ctx, &d, x, w, NULL, host), DWCONV_ERROR_BAD_POINTER);
    ck_assert_msg(test_untouched(host, sizeof host), "y in host memory was written");
    /* device memory, but not on a 4-byte element boundary */
    ck_assert_int_eq(dwconv_forward(ctx, &d, x + 1, w, NULL, y), DWCONV_ERROR_BAD_POINTER);
    ck_assert_ptr_nonnull(strstr(dwconv_last_error(), "aligned"));
    dwconv_free(ctx, x), dwconv_free(ctx, y), dwconv_free(ctx, w);
    dwconv_context_destroy(ctx);
}
END_TEST

/* The context remembers the allocations it has verified (gpu_pointers.cuh); freeing
 * one through it forgets it, so a call on the freed memory is refused, not run. */
START_TEST(freed_memory_is_rejected) {
    dwconv_context *ctx = gpu_context(GPU_FAMILY_AUTO, 0);
    test_rng rng = test_rng_seed(12);
    dwconv_desc d = shape(1, 4, 64, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    gpu_case c;
    char why[1024];
    ck_assert_msg(gpu_case_make(&c, &d, NULL, NULL, &rng, 0, cpu, why, sizeof why) == 0, "%s", why);
    char *x = gpu_device_input(ctx, c.x, c.x_bytes, 0);
    char *w = gpu_device_input(ctx, c.weight, c.weight_bytes, 0);
    char *y = gpu_device_alloc(ctx, c.y_bytes);
    ck_assert(dwconv_forward(ctx, &d, x, w, NULL, y) == DWCONV_SUCCESS);
    ck_assert(dwconv_synchronize(ctx) == DWCONV_SUCCESS);
    ck_assert(dwconv_free(ctx, x) == DWCONV_SUCCESS);
    ck_assert_int_eq(dwconv_forward(ctx, &d, x, w, NULL, y), DWCONV_ERROR_BAD_POINTER);
    dwconv_free(ctx, y), dwconv_free(ctx, w);
    gpu_case_free(&c);
    dwconv_context_destroy(ctx);
}
END_TEST

/* Registered only with two devices or more. */
START_TEST(other_device_pointer_is_rejected) {
    dwconv_context *ctx0 = gpu_context(GPU_FAMILY_AUTO, 0), *ctx1 = NULL;
    ck_assert(dwconv_context_create(&ctx1, gpu_backend, 1) == DWCONV_SUCCESS);
    dwconv_desc d = shape(1, 4, 64, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    void *x1 = gpu_device_alloc(ctx1, 4 * 64 * 4), *y0 = gpu_device_alloc(ctx0, 4 * 64 * 4);
    void *w0 = gpu_device_alloc(ctx0, 12 * 4);
    ck_assert_int_eq(dwconv_forward(ctx0, &d, x1, w0, NULL, y0), DWCONV_ERROR_BAD_POINTER);
    ck_assert_ptr_nonnull(strstr(dwconv_last_error(), "device 1"));
    dwconv_free(ctx1, x1), dwconv_free(ctx0, y0), dwconv_free(ctx0, w0);
    dwconv_context_destroy(ctx1), dwconv_context_destroy(ctx0);
}
END_TEST

START_TEST(out_of_memory_then_working) {
    dwconv_context *ctx = gpu_context(GPU_FAMILY_AUTO, 0);
    void *p = (void *)1;
    ck_assert_int_eq(dwconv_malloc(ctx, &p, (size_t)1 << 50), DWCONV_ERROR_OUT_OF_MEMORY);
    ck_assert_ptr_eq(p, (void *)1); /* a failed call leaves its outputs untouched */
    ck_assert(strlen(dwconv_last_error()) > 0);
    test_rng rng = test_rng_seed(5);
    dwconv_desc d = shape(2, 5, 3000, 4, DWCONV_BF16, DWCONV_LAYOUT_NCL);
    check_desc(ctx, &d, NULL, NULL, &rng, 1, 0);
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- the caller's stream, and CUDA/HIP graph capture (registered where the
 * runtime's graph functions load: tests/gpu_graph.h) ---- */

/* A case on the device, exact-sized. */
typedef struct device_case {
    gpu_case c;
    char *x, *w, *b, *y;
    void *host_y;
} device_case;

static void device_case_make(device_case *dc, dwconv_context *ctx, const dwconv_desc *d,
                             test_rng *rng) {
    char why[1024];
    ck_assert_msg(gpu_case_make(&dc->c, d, NULL, NULL, rng, 1, cpu, why, sizeof why) == 0, "%s", why);
    dc->x = gpu_device_input(ctx, dc->c.x, dc->c.x_bytes, 0);
    dc->w = gpu_device_input(ctx, dc->c.weight, dc->c.weight_bytes, 0);
    dc->b = gpu_device_input(ctx, dc->c.bias, dc->c.bias_bytes, 0);
    dc->y = gpu_device_alloc(ctx, dc->c.y_bytes);
    dc->host_y = malloc(dc->c.y_bytes);
    ck_assert(dc->host_y != NULL);
}

/* Poisons y on the device (a copy: never while capturing). */
static void device_case_poison(device_case *dc, dwconv_context *ctx) {
    test_poison(dc->host_y, dc->c.y_bytes);
    ck_assert(dwconv_copy_to_backend(ctx, dc->y, dc->host_y, dc->c.y_bytes) == DWCONV_SUCCESS);
}

/* Fails the test unless the device's y equals the case's expected result. */
static void device_case_check(device_case *dc, dwconv_context *ctx, const char *when) {
    char why[1024];
    ck_assert(dwconv_copy_to_host(ctx, dc->host_y, dc->y, dc->c.y_bytes) == DWCONV_SUCCESS);
    ck_assert_msg(gpu_case_compare(&dc->c, dc->host_y, why, sizeof why) == 0, "%s: %s", when, why);
}

static void device_case_free(device_case *dc, dwconv_context *ctx) {
    dwconv_free(ctx, dc->x), dwconv_free(ctx, dc->w), dwconv_free(ctx, dc->b);
    dwconv_free(ctx, dc->y);
    free(dc->host_y);
    gpu_case_free(&dc->c);
}

/* The caller's stream orders the work: its results are ready once that stream has
 * finished, and the context goes back to the default stream on NULL. */
START_TEST(caller_stream) {
    char why[256];
    gpu_graph_api *api = NULL;
    void *stream = NULL, *got = NULL;
    gpu_device_stream(gpu_backend, &api, &stream);
    dwconv_context *ctx = gpu_context(GPU_FAMILY_AUTO, 0);
    ck_assert(dwconv_context_set_stream(ctx, stream) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_get_stream(ctx, &got) == DWCONV_SUCCESS);
    ck_assert_ptr_eq(got, stream);

    test_rng rng = test_rng_seed(11);
    dwconv_desc d = shape(4, 64, 5000, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.padding = DWCONV_PADDING_SAME;
    device_case dc;
    device_case_make(&dc, ctx, &d, &rng);
    device_case_poison(&dc, ctx);
    ck_assert(dwconv_forward(ctx, &d, dc.x, dc.w, dc.b, dc.y) == DWCONV_SUCCESS);
    ck_assert_msg(gpu_graph_wait(api, stream, why, sizeof why) == 0, "%s", why);
    device_case_check(&dc, ctx, "after the caller's stream finished");

    ck_assert(dwconv_context_set_stream(ctx, NULL) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_get_stream(ctx, &got) == DWCONV_SUCCESS);
    ck_assert_ptr_null(got);
    device_case_free(&dc, ctx);
    dwconv_context_destroy(ctx);
    gpu_graph_free(api, NULL, stream);
    gpu_graph_close(api);
}
END_TEST

/* dwconv_plan_forward captured on the caller's stream into a graph: the capture runs
 * nothing (y keeps its poison), the replay gives the cpu backend's bits, and a replay
 * after new inputs were copied into the same buffers gives the new result. */
START_TEST(graph_capture_replays_bitwise) {
    gpu_graph_api *api = NULL;
    void *stream = NULL;
    gpu_device_stream(gpu_backend, &api, &stream);
    dwconv_context *ctx = gpu_context(GPU_FAMILY_AUTO, 0);
    test_rng rng = test_rng_seed(2026);
    /* the small problem of the bench, with bias and silu */
    dwconv_desc d = shape(1, 512, 8192, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.pad_left = d.pad_right = 1, d.activation = DWCONV_ACT_SILU;
    device_case dc;
    device_case_make(&dc, ctx, &d, &rng);
    dwconv_plan *plan = NULL;
    ck_assert(dwconv_plan_create(&plan, ctx, &d) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_set_stream(ctx, stream) == DWCONV_SUCCESS);
    device_case_poison(&dc, ctx);

    gpu_device_capture_begin(api, stream);
    const dwconv_status st = dwconv_plan_forward(plan, dc.x, dc.w, dc.b, dc.y);
    void *exec = gpu_device_capture_end(api, stream, st);
    ck_assert(dwconv_copy_to_host(ctx, dc.host_y, dc.y, dc.c.y_bytes) == DWCONV_SUCCESS);
    ck_assert_msg(test_untouched(dc.host_y, dc.c.y_bytes), "the capture ran the kernel");

    gpu_device_replay(api, exec, stream);
    device_case_check(&dc, ctx, "first replay");

    /* new inputs in the same buffers: the replay reads them */
    gpu_case next;
    char msg[1024];
    ck_assert_msg(gpu_case_make(&next, &d, NULL, NULL, &rng, 1, cpu, msg, sizeof msg) == 0, "%s", msg);
    ck_assert(dwconv_copy_to_backend(ctx, dc.x, next.x, next.x_bytes) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(ctx, dc.w, next.weight, next.weight_bytes) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(ctx, dc.b, next.bias, next.bias_bytes) == DWCONV_SUCCESS);
    gpu_case_free(&dc.c);
    dc.c = next;
    device_case_poison(&dc, ctx);
    gpu_device_replay(api, exec, stream);
    device_case_check(&dc, ctx, "replay with new inputs");

    ck_assert(dwconv_context_set_stream(ctx, NULL) == DWCONV_SUCCESS);
    dwconv_plan_destroy(plan);
    device_case_free(&dc, ctx);
    dwconv_context_destroy(ctx);
    gpu_graph_free(api, exec, stream);
    gpu_graph_close(api);
}
END_TEST

int main(void) {
    if (!gpu_device_find("check_gpu", &gpu_backend, &gpu_devices)) return 77;
    if (dwconv_context_create(&cpu, DWCONV_BACKEND_CPU, 0) != DWCONV_SUCCESS) {
        printf("check_gpu: no cpu context: %s\n", dwconv_last_error());
        return 1;
    }
    char graph_why[256];
    const int graphs = gpu_device_graphs(gpu_backend, graph_why, sizeof graph_why);

    Suite *s = suite_create("gpu");
    TCase *t = tcase_create("bitwise");
    tcase_set_timeout(t, 0);
    tcase_add_loop_test(t, random_descriptors, GPU_FAMILY_AUTO, GPU_FAMILY_COUNT);
    tcase_add_test(t, targeted_shapes);
    tcase_add_test(t, misaligned_and_odd);
    tcase_add_test(t, silu_near_rounding_ties);
    gpu_device_add(t, over_two_billion_elements, "over_two_billion_elements",
                   test_quick() ? "DWCONV_TEST_QUICK is set" : NULL);
    suite_add_tcase(s, t);
    t = tcase_create("errors");
    tcase_add_test(t, host_pointer_is_rejected);
    tcase_add_test(t, freed_memory_is_rejected);
    gpu_device_add(t, other_device_pointer_is_rejected, "other_device_pointer_is_rejected",
                   gpu_devices < 2 ? "one device" : NULL);
    tcase_add_test(t, out_of_memory_then_working);
    suite_add_tcase(s, t);
    t = tcase_create("streams");
    tcase_set_timeout(t, 0);
    gpu_device_add(t, caller_stream, "caller_stream", graphs ? NULL : graph_why);
    gpu_device_add(t, graph_capture_replays_bitwise, "graph_capture_replays_bitwise",
                   graphs ? NULL : graph_why);
    suite_add_tcase(s, t);

    const int status = gpu_device_run(s);
    dwconv_context_destroy(cpu);
    return status;
}
