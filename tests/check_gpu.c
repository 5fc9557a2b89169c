/*
 * The GPU backend suite, written once for whichever GPU backend this machine has
 * (cuda, else hip; exit 77 = skip when neither has a device). Every result is
 * compared bit for bit with the cpu backend, the GPU output poisoned first.
 *
 * Runs without forking (GPU runtimes do not survive a fork of an initialised
 * process). DWCONV_TEST_QUICK=1 shrinks it for compute-sanitizer (tests/gpu_cases.h).
 * DWCONV_GPU_KERNEL is set per test to run every kernel over the same descriptors.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_cases.h"

static dwconv_backend gpu_backend;
static int gpu_devices;
static dwconv_context *cpu;

static const char *const kernels[] = {"auto", "generic", "vector", "tile",
                                      "lattice", "nlc", "lean", "slide"};
enum { KERNELS = sizeof kernels / sizeof kernels[0] };

/* A context on device 0 whose forward uses `kernel` wherever it applies. */
static dwconv_context *gpu_context(const char *kernel) {
    setenv("DWCONV_GPU_KERNEL", kernel, 1);
    dwconv_context *ctx = NULL;
    dwconv_status st = dwconv_context_create(&ctx, gpu_backend, 0);
    unsetenv("DWCONV_GPU_KERNEL");
    ck_assert_msg(st == DWCONV_SUCCESS, "context: %s", dwconv_last_error());
    return ctx;
}

/* Device memory of `bytes` plus 16 spare bytes, so buffers can start off boundaries. */
static void *gpu_alloc(dwconv_context *ctx, size_t bytes) {
    void *p = NULL;
    ck_assert_msg(dwconv_malloc(ctx, &p, bytes + 16) == DWCONV_SUCCESS, "dwconv_malloc(%zu): %s",
                  bytes + 16, dwconv_last_error());
    return p;
}

/* Runs c on the GPU with every buffer `shift` elements past dwconv_malloc's alignment;
 * 0 when the result matches the cpu backend, else why says where. */
static int run_case(dwconv_context *ctx, const gpu_case *c, int shift, char *why, size_t n) {
    const size_t xs = dwconv_dtype_size(c->desc.dtype) * shift;
    const size_t ws = dwconv_dtype_size(c->desc.weight_dtype) * shift;
    char *x = gpu_alloc(ctx, c->x_bytes), *y = gpu_alloc(ctx, c->y_bytes);
    char *w = gpu_alloc(ctx, c->weight_bytes), *b = c->bias ? gpu_alloc(ctx, c->bias_bytes) : NULL;
    void *host_y = malloc(c->y_bytes);
    ck_assert_msg(host_y != NULL, "out of host memory");
    test_poison(host_y, c->y_bytes);
    ck_assert(dwconv_copy_to_backend(ctx, x + xs, c->x, c->x_bytes) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(ctx, w + ws, c->weight, c->weight_bytes) == DWCONV_SUCCESS);
    if (b) ck_assert(dwconv_copy_to_backend(ctx, b + ws, c->bias, c->bias_bytes) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(ctx, y + xs, host_y, c->y_bytes) == DWCONV_SUCCESS);

    dwconv_status st = dwconv_forward(ctx, &c->desc, x + xs, w + ws, b ? b + ws : NULL, y + xs);
    ck_assert_msg(st == DWCONV_SUCCESS, "%s: %s", test_desc_string(&c->desc), dwconv_last_error());
    ck_assert_msg(dwconv_synchronize(ctx) == DWCONV_SUCCESS, "%s", dwconv_last_error());
    ck_assert(dwconv_copy_to_host(ctx, host_y, y + xs, c->y_bytes) == DWCONV_SUCCESS);
    int result = gpu_case_compare(c, host_y, why, n);
    if (result != 0 && c->y_bytes < ((size_t)1 << 26)) { /* who is wrong? ask the oracle */
        void *ref = malloc(c->y_bytes);
        if (ref && dwconv_reference_forward(&c->desc, c->x, c->weight, c->bias, ref) ==
                       DWCONV_SUCCESS) {
            const size_t used = strlen(why);
            snprintf(why + used, n - used, "; the reference agrees with %s",
                     memcmp(ref, host_y, c->y_bytes) == 0          ? "the GPU"
                     : memcmp(ref, c->expected, c->y_bytes) == 0 ? "the cpu backend"
                                                                 : "neither");
        }
        free(ref);
    }
    free(host_y);
    dwconv_free(ctx, x), dwconv_free(ctx, y), dwconv_free(ctx, w), dwconv_free(ctx, b);
    return result;
}

/* Makes the case for desc and checks it on ctx; fails the test on a difference. */
static void check_desc(dwconv_context *ctx, const dwconv_desc *d, test_rng *rng, int bias,
                       int shift) {
    gpu_case c;
    char why[1024];
    ck_assert_msg(gpu_case_make(&c, d, rng, bias, cpu, why, sizeof why) == 0, "%s", why);
    const int result = run_case(ctx, &c, shift, why, sizeof why);
    gpu_case_free(&c);
    ck_assert_msg(result == 0, "%s (offset %d elements)", why, shift);
}

/* ---- random descriptors, through every kernel ---- */

START_TEST(random_descriptors) {
    const char *kernel = kernels[_i];
    const int count = (_i == 0 ? 300 : 100) / (gpu_test_quick() ? 10 : 1);
    dwconv_context *ctx = gpu_context(kernel);
    test_rng rng = test_rng_seed(4000 + (uint64_t)_i);
    for (int i = 0; i < count; i++) {
        dwconv_desc d = test_random_desc(&rng, 3000, 24);
        gpu_case_fit_kernel(&d, kernel, i);
        check_desc(ctx, &d, &rng, i % 3 != 0, i % 2);
    }
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
    const int q = gpu_test_quick(); /* small sizes for compute-sanitizer */
    dwconv_context *ctx = gpu_context("auto");
    test_rng rng = test_rng_seed(77);
    dwconv_desc d;

    /* the reference problem: 32x512x8192, K3, pad 1, f32 */
    d = shape(q ? 1 : 32, q ? 8 : 512, 8192, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.pad_left = d.pad_right = 1;
    check_desc(ctx, &d, &rng, 0, 0);
    /* causal K4 with bias, B4 C5120: f32, bf16 with f32 weights, bf16 NLC with silu */
    d = shape(q ? 1 : 4, q ? 64 : 5120, 4096, 4, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.padding = DWCONV_PADDING_CAUSAL;
    check_desc(ctx, &d, &rng, 1, 0);
    d.dtype = DWCONV_BF16;
    check_desc(ctx, &d, &rng, 1, 0);
    d.layout = DWCONV_LAYOUT_NLC, d.weight_dtype = DWCONV_BF16, d.activation = DWCONV_ACT_SILU;
    check_desc(ctx, &d, &rng, 1, 0);
    /* K31, stride 2, dilation 4 (the lattice kernel, two phases) */
    d = shape(2, q ? 8 : 64, 4096, 31, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.stride = 2, d.dilation = 4, d.pad_left = d.pad_right = 60;
    check_desc(ctx, &d, &rng, 1, 0);
    d.dtype = DWCONV_F16, d.activation = DWCONV_ACT_RELU;
    check_desc(ctx, &d, &rng, 1, 1);
    /* K64 and K128 ("same"), both layouts */
    for (int K = 64; K <= 128; K *= 2)
        for (int layout = 0; layout < 2; layout++) {
            d = shape(q ? 1 : 2, q ? 8 : 48, 5000, K, DWCONV_BF16, (dwconv_layout)layout);
            d.padding = DWCONV_PADDING_SAME, d.weight_dtype = DWCONV_F32;
            check_desc(ctx, &d, &rng, 1, layout);
        }
    /* NLC with C not a multiple of the vector width, each dtype */
    for (int dt = 0; dt < 3; dt++) {
        d = shape(3, dt == 0 ? 6 : 13 + 87 * (dt - 1), 777, 5, (dwconv_dtype)dt, DWCONV_LAYOUT_NLC);
        d.padding = DWCONV_PADDING_SAME, d.padding_mode = DWCONV_PAD_REFLECT;
        check_desc(ctx, &d, &rng, 1, 0);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* Misaligned (one element past a boundary) and odd-sized buffers in every dtype and
 * layout, each fast kernel forced. */
START_TEST(misaligned_and_odd) {
    test_rng rng = test_rng_seed(31337);
    for (int k = 0; k < KERNELS; k++) {
        dwconv_context *ctx = gpu_context(kernels[k]);
        for (int dt = 0; dt < 3; dt++)
            for (int layout = 0; layout < 2; layout++) {
                dwconv_desc d = shape(3, 7, 2049 + 2 * dt, k == 4 ? 13 : 3, (dwconv_dtype)dt,
                                      (dwconv_layout)layout);
                d.padding = DWCONV_PADDING_SAME;
                d.weight_dtype = layout ? DWCONV_F32 : d.dtype;
                check_desc(ctx, &d, &rng, 1, 1);
            }
        dwconv_context_destroy(ctx);
    }
}
END_TEST

/* More than 2^31 elements: 64-bit indexing everywhere, offsets past 4 GiB. */
START_TEST(over_two_billion_elements) {
    if (gpu_test_quick()) return;
    dwconv_context *ctx = gpu_context("auto");
    test_rng rng = test_rng_seed(2147483649u);
    dwconv_desc d = shape(1, 2, ((int64_t)1 << 30) + 3, 3, DWCONV_F16, DWCONV_LAYOUT_NCL);
    d.pad_left = d.pad_right = 1;
    check_desc(ctx, &d, &rng, 1, 0);
    d = shape(1, 8, ((int64_t)1 << 28) + 1, 4, DWCONV_BF16, DWCONV_LAYOUT_NLC);
    d.padding = DWCONV_PADDING_CAUSAL;
    check_desc(ctx, &d, &rng, 1, 0);
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- errors: clear statuses, and the context keeps working ---- */

START_TEST(host_pointer_is_rejected) {
    dwconv_context *ctx = gpu_context("auto");
    dwconv_desc d = shape(1, 4, 64, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    float host[4 * 64];
    char *x = gpu_alloc(ctx, sizeof host), *y = gpu_alloc(ctx, sizeof host);
    void *w = gpu_alloc(ctx, 12 * sizeof(float));
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

START_TEST(other_device_pointer_is_rejected) {
    if (gpu_devices < 2) {
        printf("check_gpu: one device: the other-device pointer test does not apply\n");
        return;
    }
    dwconv_context *ctx0 = gpu_context("auto"), *ctx1 = NULL;
    ck_assert(dwconv_context_create(&ctx1, gpu_backend, 1) == DWCONV_SUCCESS);
    dwconv_desc d = shape(1, 4, 64, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    void *x1 = gpu_alloc(ctx1, 4 * 64 * 4), *y0 = gpu_alloc(ctx0, 4 * 64 * 4);
    void *w0 = gpu_alloc(ctx0, 12 * 4);
    ck_assert_int_eq(dwconv_forward(ctx0, &d, x1, w0, NULL, y0), DWCONV_ERROR_BAD_POINTER);
    ck_assert_ptr_nonnull(strstr(dwconv_last_error(), "device 1"));
    dwconv_free(ctx1, x1), dwconv_free(ctx0, y0), dwconv_free(ctx0, w0);
    dwconv_context_destroy(ctx1), dwconv_context_destroy(ctx0);
}
END_TEST

START_TEST(out_of_memory_then_working) {
    dwconv_context *ctx = gpu_context("auto");
    void *p = (void *)1;
    ck_assert_int_eq(dwconv_malloc(ctx, &p, (size_t)1 << 50), DWCONV_ERROR_OUT_OF_MEMORY);
    ck_assert_ptr_null(p);
    ck_assert(strlen(dwconv_last_error()) > 0);
    test_rng rng = test_rng_seed(5);
    dwconv_desc d = shape(2, 5, 3000, 4, DWCONV_BF16, DWCONV_LAYOUT_NCL);
    check_desc(ctx, &d, &rng, 1, 0);
    dwconv_context_destroy(ctx);
}
END_TEST

/* The caller's stream (here another context's) orders the work: its results are
 * ready once that stream has finished. */
START_TEST(caller_stream) {
    dwconv_context *owner = gpu_context("auto"), *ctx = gpu_context("auto");
    void *stream = NULL, *got = NULL;
    ck_assert(dwconv_context_get_stream(owner, &stream) == DWCONV_SUCCESS && stream);
    ck_assert(dwconv_context_set_stream(ctx, stream) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_get_stream(ctx, &got) == DWCONV_SUCCESS);
    ck_assert_ptr_eq(got, stream);

    test_rng rng = test_rng_seed(11);
    dwconv_desc d = shape(4, 64, 5000, 3, DWCONV_F32, DWCONV_LAYOUT_NCL);
    d.padding = DWCONV_PADDING_SAME;
    gpu_case c;
    char why[1024];
    ck_assert_msg(gpu_case_make(&c, &d, &rng, 1, cpu, why, sizeof why) == 0, "%s", why);
    void *x = gpu_alloc(ctx, c.x_bytes), *y = gpu_alloc(ctx, c.y_bytes);
    void *w = gpu_alloc(ctx, c.weight_bytes), *b = gpu_alloc(ctx, c.bias_bytes);
    void *host_y = malloc(c.y_bytes);
    ck_assert(dwconv_copy_to_backend(ctx, x, c.x, c.x_bytes) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(ctx, w, c.weight, c.weight_bytes) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(ctx, b, c.bias, c.bias_bytes) == DWCONV_SUCCESS);
    ck_assert(dwconv_forward(ctx, &d, x, w, b, y) == DWCONV_SUCCESS);
    /* ordered on the owner's stream: the owner's copy sees the finished result */
    ck_assert(dwconv_copy_to_host(owner, host_y, y, c.y_bytes) == DWCONV_SUCCESS);
    ck_assert_msg(gpu_case_compare(&c, host_y, why, sizeof why) == 0, "%s", why);

    ck_assert(dwconv_context_set_stream(ctx, NULL) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_get_stream(ctx, &got) == DWCONV_SUCCESS);
    ck_assert_ptr_ne(got, stream);
    free(host_y);
    dwconv_free(ctx, x), dwconv_free(ctx, y), dwconv_free(ctx, w), dwconv_free(ctx, b);
    gpu_case_free(&c);
    dwconv_context_destroy(ctx), dwconv_context_destroy(owner);
}
END_TEST

/* The first GPU backend with a device, or 0 (with the reasons printed). */
static int find_gpu(void) {
    const dwconv_backend order[] = {DWCONV_BACKEND_CUDA, DWCONV_BACKEND_HIP};
    for (int i = 0; i < 2; i++) {
        dwconv_backend_report r;
        if (dwconv_backend_query(order[i], &r) == DWCONV_SUCCESS && r.device_count > 0) {
            gpu_backend = order[i], gpu_devices = r.device_count;
            char name[256] = "";
            dwconv_device_name(gpu_backend, 0, name, sizeof name);
            printf("check_gpu: %s, %d device(s), device 0: %s\n", dwconv_backend_name(gpu_backend),
                   gpu_devices, name);
            return 1;
        }
        printf("check_gpu: %s: %s\n", dwconv_backend_name(order[i]), r.detail);
    }
    return 0;
}

int main(void) {
    if (!find_gpu()) {
        printf("check_gpu: SKIP: no GPU backend has a device here\n");
        return 77;
    }
    if (dwconv_context_create(&cpu, DWCONV_BACKEND_CPU, 0) != DWCONV_SUCCESS) {
        printf("check_gpu: no cpu context: %s\n", dwconv_last_error());
        return 1;
    }
    Suite *s = suite_create("gpu");
    TCase *t = tcase_create("bitwise");
    tcase_set_timeout(t, 0);
    tcase_add_loop_test(t, random_descriptors, 0, KERNELS);
    tcase_add_test(t, targeted_shapes);
    tcase_add_test(t, misaligned_and_odd);
    tcase_add_test(t, over_two_billion_elements);
    suite_add_tcase(s, t);
    t = tcase_create("errors");
    tcase_add_test(t, host_pointer_is_rejected);
    tcase_add_test(t, other_device_pointer_is_rejected);
    tcase_add_test(t, out_of_memory_then_working);
    tcase_add_test(t, caller_stream);
    suite_add_tcase(s, t);

    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* GPU runtimes must not see a fork */
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    dwconv_context_destroy(cpu);
    return failed ? 1 : 0;
}
