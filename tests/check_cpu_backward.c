/*
 * The cpu backward pass (src/cpu/backward.c) against the scalar oracle, bit for bit,
 * for every SIMD flavour this build and processor run and 1, 2, 3, 7 and the default
 * number of threads (cpu_cases.h): dx, dweight and dbias each asked for or not, every
 * option of random descriptors (K, stride, dilation, pads, the four padding modes,
 * bias, relu/silu, dtypes, NCL/NLC), strided x, dy and dx, f32 gradients, the causal
 * backward with its states; guard bytes around every buffer, inputs unchanged. It
 * also checks which path ran: the staged rows (and the vector dx) where they fit, the
 * per-output rows for a span far beyond the row, and the backend's route to it.
 *
 * Inputs are random floats: only the same operations in the same order give the same
 * bits. DWCONV_TEST_SEED=n changes the base seed.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_check.h"
#include "cpu_cases.h"
#include "dwconv.h"
#include "fast.h"
#include "internal.h"
#include "test_util.h"

static uint64_t base_seed(void) { return cpu_case_seed(20261212u); }

typedef struct grad_options {
    int dx, dweight, dbias, bias, grad_f32;
    int strided; /* x: every other position; dy: gaps between rows; dx: a channel slice */
} grad_options;

static int64_t extent(const int64_t s[3], int64_t B, int64_t C, int64_t L) {
    return (B - 1) * s[0] + (C - 1) * s[1] + (L - 1) * s[2] + 1;
}

static const char *describe(const dwconv_desc *d, grad_options o) {
    static char text[512];
    snprintf(text, sizeof text, "%s; dx %d dweight %d dbias %d bias %d grad_f32 %d strided %d",
             test_desc_string(d), o.dx, o.dweight, o.dbias, o.bias, o.grad_f32, o.strided);
    return text;
}

/* Runs one backward on every flavour and thread count; returns the paths of the last. */
static int expect_backward(const dwconv_desc *d, grad_options o, uint64_t seed) {
    test_rng rng = test_rng_seed(seed);
    int64_t x_elements, y_elements, L_out;
    ck_assert_int_eq(dwconv_desc_sizes(d, &x_elements, &y_elements, NULL, NULL), DWCONV_SUCCESS);
    ck_assert_int_eq(dwconv_desc_resolve(d, NULL, NULL, &L_out), DWCONV_SUCCESS);
    const int64_t B = d->batch, C = d->channels, L = d->length, K = d->kernel_size;
    int64_t strides[4][3] = {{0}};
    int64_t x_n = x_elements, dy_n = y_elements, dx_n = x_elements;
    if (o.strided) {
        const int64_t xs[3] = {C * L * 2 + 7, L * 2, 2}, dys[3] = {C * (L_out + 3), L_out + 3, 1};
        const int64_t dxs[3] = {L * (C + 2), 1, C + 2};
        memcpy(strides[DWCONV_TENSOR_X], xs, sizeof xs);
        memcpy(strides[DWCONV_TENSOR_DY], dys, sizeof dys);
        memcpy(strides[DWCONV_TENSOR_DX], dxs, sizeof dxs);
        x_n = extent(xs, B, C, L), dy_n = extent(dys, B, C, L_out), dx_n = extent(dxs, B, C, L);
    }
    const dwconv_layout_options opt = {(const int64_t(*)[3])strides,
                                       o.grad_f32 ? DWCONV_F32 : -1};
    const dwconv_dtype grad = o.grad_f32 ? DWCONV_F32 : d->weight_dtype;
    cpu_case c = {0};
    void *x = cpu_case_random(&c, &rng, d->dtype, x_n);
    void *w = cpu_case_random(&c, &rng, d->weight_dtype, C * K);
    void *bias = o.bias ? cpu_case_random(&c, &rng, d->weight_dtype, C) : NULL;
    void *dy = cpu_case_random(&c, &rng, d->dtype, dy_n);
    void *dx = o.dx ? cpu_case_poisoned(&c, test_bytes(d->dtype, dx_n)) : NULL;
    void *dw = o.dweight ? cpu_case_poisoned(&c, test_bytes(grad, C * K)) : NULL;
    void *db = o.dbias ? cpu_case_poisoned(&c, test_bytes(grad, C)) : NULL;
    dwconv_status st = dwconv_validate_backward(&c.p, d, &opt, x, w, bias, dy, dx, dw, db,
                                                "check_cpu_backward");
    ck_assert_msg(st == DWCONV_SUCCESS, "%s: validation %d", describe(d, o), (int)st);
    cpu_case_expect_all(&c, dwconv_cpu_backward_with, describe(d, o));
    cpu_case_free(&c);
    return dwconv_cpu_last_paths();
}

static grad_options random_options(test_rng *rng) {
    grad_options o;
    do {
        o.dx = (int)test_rng_range(rng, 0, 1);
        o.dweight = (int)test_rng_range(rng, 0, 1);
        o.dbias = (int)test_rng_range(rng, 0, 1);
    } while (!o.dx && !o.dweight && !o.dbias);
    o.bias = (int)test_rng_range(rng, 0, 1);
    o.grad_f32 = (int)test_rng_range(rng, 0, 1);
    o.strided = test_rng_range(rng, 0, 3) == 0;
    return o;
}

static const grad_options everything = {1, 1, 1, 1, 0, 0};

static dwconv_desc shape(int64_t B, int64_t C, int64_t L, int64_t K) {
    dwconv_desc d;
    dwconv_desc_init(&d, B, C, L, K);
    return d;
}

/* ---- random descriptors ---------------------------------------------------------- */

static void random_descriptors(uint64_t seed, int count, int64_t max_length, int64_t max_channels) {
    test_rng rng = test_rng_seed(seed);
    for (int n = 0; n < count; n++) {
        dwconv_desc d = test_random_desc(&rng, max_length, max_channels);
        expect_backward(&d, random_options(&rng), test_rng_next(&rng));
    }
}

START_TEST(random_small) { random_descriptors(base_seed() + (uint64_t)_i * 1000003u, 40, 300, 12); }
END_TEST

/* rows of several chunks and vectors, all four padding modes */
START_TEST(random_long) { random_descriptors(base_seed() + 91u + (uint64_t)_i * 1000003u, 12, 3000, 4); }
END_TEST

/* ---- targeted shapes and paths --------------------------------------------------- */

/* The benchmark's kind: the staged rows and the vector dx must run. */
START_TEST(long_rows_fast_path) {
    dwconv_desc d = shape(2, 3, 4099, 3);
    d.pad_left = d.pad_right = 1;
    int paths = expect_backward(&d, everything, 1);
    ck_assert_msg(paths & DWCONV_CPU_PATH_STAGED_ROWS, "the staged rows did not run");
    ck_assert_msg(paths & DWCONV_CPU_PATH_VECTOR_DX, "dx's interior was not vectorised");
    ck_assert_msg(paths & DWCONV_CPU_PATH_DIRECT_X, "x was staged whole");
    for (int act = 0; act < 3; act++)
        for (int dtype = 0; dtype < 3; dtype++) {
            d.activation = (dwconv_activation)act;
            d.dtype = d.weight_dtype = (dwconv_dtype)dtype;
            d.layout = (dwconv_layout)(act == 1);
            grad_options o = {1, 1, 1, act != 2, dtype == 2, act == 2};
            paths = expect_backward(&d, o, 2 + (uint64_t)(act * 3 + dtype));
            ck_assert(paths & DWCONV_CPU_PATH_STAGED_ROWS);
        }
}
END_TEST

START_TEST(padding_modes_and_steps) {
    static const int64_t steps[][2] = {{1, 1}, {1, 3}, {2, 1}, {2, 2}, {3, 1}, {4, 5}};
    for (int mode = 0; mode < 4; mode++)
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            dwconv_desc d = shape(2, 2, 700 + (int64_t)i, 5);
            d.padding_mode = (dwconv_padding_mode)mode;
            d.stride = steps[i][0], d.dilation = steps[i][1];
            d.pad_left = 2 * d.dilation + 1, d.pad_right = d.dilation;
            d.activation = (dwconv_activation)(i % 3);
            grad_options o = {1, 1, 1, (int)(i & 1), 0, (int)(i % 3 == 0)};
            int paths = expect_backward(&d, o, 100 + (uint64_t)(mode * 10) + i);
            ck_assert(paths & DWCONV_CPU_PATH_STAGED_ROWS);
        }
}
END_TEST

/* K from 1 to past two vectors of taps, with the weight gradient alone */
START_TEST(kernel_sizes) {
    for (int64_t K = 1; K <= 34; K += (K < 18 ? 1 : 8)) {
        dwconv_desc d = shape(3, 2, 1000, K);
        d.padding = DWCONV_PADDING_SAME;
        grad_options o = {K % 2 == 0, 1, K % 3 == 0, 1, 0, 0};
        expect_backward(&d, o, 200 + (uint64_t)K);
    }
}
END_TEST

/* Rows of whole groups of a vector's lanes of chunks and more, so that every branch of
 * the vector weight gradient runs: adjacent taps (K <= 4) in registers, the others
 * through transposed copies; the middle of the row read where it lies (stride 1, the
 * longer rows) or the row staged whole; with and without dbias. */
START_TEST(weight_gradient_groups) {
    static const int64_t steps[][2] = {{1, 1}, {1, 2}, {1, 7}, {2, 1}, {3, 2}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        for (int64_t K = 1; K <= 6; K++) {
            const int64_t s = steps[i][0], dil = steps[i][1];
            dwconv_desc d = shape(2, 2, s == 1 ? 3300 + 7 * K : 1100 * s + K, K);
            d.stride = s, d.dilation = dil;
            d.pad_left = dil * (K - 1) / 2 + (int64_t)(i % 2), d.pad_right = dil * (K - 1) / 2;
            grad_options o = {(int)(K % 2), 1, (int)((K + (int64_t)i) % 2), 1, 0, 0};
            expect_backward(&d, o, 700 + 10 * (uint64_t)i + (uint64_t)K);
        }
}
END_TEST

/* A span far beyond the row: rows are computed output by output, not staged. */
START_TEST(huge_span) {
    dwconv_desc d = shape(2, 3, 9, 3);
    d.dilation = 100000;
    d.pad_left = d.pad_right = 100000;
    d.activation = DWCONV_ACT_SILU;
    int paths = expect_backward(&d, everything, 300);
    ck_assert_msg(!(paths & DWCONV_CPU_PATH_STAGED_ROWS), "a huge span was staged");
}
END_TEST

/* An f32 dx larger than the last-level cache is summed where it lies and stored around
 * the caches from each row's first 64-byte boundary: with the cache taken as 1 MiB,
 * dx of a few MiB takes that path on any machine (rows at odd alignments, silu). */
START_TEST(streamed_dx) {
    dwconv_cpu_set_cache_bytes(1l << 20);
    dwconv_desc d = shape(2, 3, 100003, 3);
    d.pad_left = d.pad_right = 1;
    int paths = expect_backward(&d, everything, 400);
    ck_assert_msg(paths & DWCONV_CPU_PATH_STREAMED_DX, "dx was not streamed");
    d.length = 100017, d.kernel_size = 5, d.pad_left = 4, d.pad_right = 0;
    d.activation = DWCONV_ACT_SILU;
    paths = expect_backward(&d, everything, 401);
    ck_assert_msg(paths & DWCONV_CPU_PATH_STREAMED_DX, "dx was not streamed");
    dwconv_cpu_set_cache_bytes(0);
}
END_TEST

/* Rows of fewer outputs than a chunk, a vector or the kernel. */
START_TEST(short_rows) {
    for (int64_t L = 1; L <= 9; L++)
        for (int mode = 0; mode < 4; mode++) {
            dwconv_desc d = shape(3, 2, L, 3);
            d.padding_mode = (dwconv_padding_mode)mode;
            d.pad_left = L > 1 ? 1 : 0, d.pad_right = L > 2 ? 2 : 0;
            if (mode == DWCONV_PAD_ZEROS) d.pad_left = d.pad_right = 2;
            int64_t L_out;
            if (dwconv_desc_resolve(&d, NULL, NULL, &L_out) != DWCONV_SUCCESS) continue;
            expect_backward(&d, everything, 400 + (uint64_t)(L * 4 + mode));
        }
}
END_TEST

/* ---- the causal backward: states in, their gradients in and out ------------------- */

static void expect_causal_backward(const dwconv_desc *d, int initial, int dfinal, int dinitial,
                                   grad_options o, uint64_t seed) {
    test_rng rng = test_rng_seed(seed);
    int64_t x_elements, y_elements;
    ck_assert_int_eq(dwconv_desc_sizes(d, &x_elements, &y_elements, NULL, NULL), DWCONV_SUCCESS);
    const int64_t B = d->batch, C = d->channels, K = d->kernel_size, S = d->dilation * (K - 1);
    cpu_case c = {0};
    void *x = cpu_case_random(&c, &rng, d->dtype, x_elements);
    void *w = cpu_case_random(&c, &rng, d->weight_dtype, C * K);
    void *bias = o.bias ? cpu_case_random(&c, &rng, d->weight_dtype, C) : NULL;
    void *init = initial ? cpu_case_random(&c, &rng, d->dtype, B * C * S) : NULL;
    void *dy = cpu_case_random(&c, &rng, d->dtype, y_elements);
    void *dfin = dfinal ? cpu_case_random(&c, &rng, d->dtype, B * C * S) : NULL;
    void *dx = o.dx ? cpu_case_poisoned(&c, test_bytes(d->dtype, x_elements)) : NULL;
    void *dw = o.dweight ? cpu_case_poisoned(&c, test_bytes(d->weight_dtype, C * K)) : NULL;
    void *db = o.dbias ? cpu_case_poisoned(&c, test_bytes(d->weight_dtype, C)) : NULL;
    void *dinit = dinitial ? cpu_case_poisoned(&c, test_bytes(d->dtype, B * C * S)) : NULL;
    if (!dx && !dw && !db && !dinit) return;
    dwconv_status st = dwconv_validate_causal_backward(&c.p, d, x, w, bias, init, dy, dfin, dx, dw,
                                                       db, dinit, "check_cpu_backward");
    char what[600];
    snprintf(what, sizeof what, "causal backward, initial %d dfinal %d dinitial %d, %s", initial,
             dfinal, dinitial, describe(d, o));
    ck_assert_msg(st == DWCONV_SUCCESS, "%s: validation %d", what, (int)st);
    cpu_case_expect_all(&c, dwconv_cpu_backward_with, what);
    cpu_case_free(&c);
}

START_TEST(causal_backward) {
    test_rng rng = test_rng_seed(base_seed() + 500u);
    for (int n = 0; n < 40; n++) {
        int64_t L = test_rng_range(&rng, 0, 3) == 0 ? test_rng_range(&rng, 1, 6)
                                                   : test_rng_range(&rng, 1, 2000);
        dwconv_desc d = shape(test_rng_range(&rng, 1, 3), test_rng_range(&rng, 1, 5), L,
                              test_rng_range(&rng, 1, 6));
        d.padding = DWCONV_PADDING_CAUSAL;
        d.dilation = test_rng_range(&rng, 0, 2) == 0 ? test_rng_range(&rng, 2, 5) : 1;
        d.layout = (dwconv_layout)test_rng_range(&rng, 0, 1);
        d.dtype = (dwconv_dtype)test_rng_range(&rng, 0, 2);
        d.weight_dtype = test_rng_range(&rng, 0, 1) ? DWCONV_F32 : d.dtype;
        d.activation = (dwconv_activation)test_rng_range(&rng, 0, 2);
        grad_options o = random_options(&rng);
        expect_causal_backward(&d, (int)test_rng_range(&rng, 0, 1), (int)test_rng_range(&rng, 0, 1),
                               (int)test_rng_range(&rng, 0, 1), o, test_rng_next(&rng));
    }
}
END_TEST

/* ---- the backend's route: dwconv_backward on a cpu context runs this path ---------- */

START_TEST(public_route) {
    dwconv_desc d = shape(4, 8, 3000, 4);
    d.padding = DWCONV_PADDING_SAME;
    d.activation = DWCONV_ACT_RELU;
    int64_t xn, yn;
    ck_assert_int_eq(dwconv_desc_sizes(&d, &xn, &yn, NULL, NULL), DWCONV_SUCCESS);
    test_rng rng = test_rng_seed(600);
    float *x = malloc(sizeof(float) * (size_t)xn), *dy = malloc(sizeof(float) * (size_t)yn);
    float w[32], bias[8], dw[2][32], db[2][8];
    float *dx[2] = {malloc(sizeof(float) * (size_t)xn), malloc(sizeof(float) * (size_t)xn)};
    ck_assert(x && dy && dx[0] && dx[1]);
    test_fill_random(&rng, DWCONV_F32, x, xn);
    test_fill_random(&rng, DWCONV_F32, dy, yn);
    test_fill_random(&rng, DWCONV_F32, w, 32);
    test_fill_random(&rng, DWCONV_F32, bias, 8);
    ck_assert_int_eq(dwconv_reference_backward(&d, x, w, bias, dy, dx[0], dw[0], db[0]), DWCONV_SUCCESS);
    dwconv_context *ctx;
    ck_assert_int_eq(dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 0), DWCONV_SUCCESS);
    for (int threads = 1; threads <= 3; threads++) {
        ck_assert_int_eq(dwconv_context_set_threads(ctx, threads), DWCONV_SUCCESS);
        dwconv_cpu_set_last_paths(0);
        ck_assert_int_eq(dwconv_backward(ctx, &d, x, w, bias, dy, dx[1], dw[1], db[1]), DWCONV_SUCCESS);
        ck_assert(dwconv_cpu_last_paths() & DWCONV_CPU_PATH_STAGED_ROWS);
        ck_assert(memcmp(dx[0], dx[1], sizeof(float) * (size_t)xn) == 0);
        ck_assert(memcmp(dw[0], dw[1], sizeof dw[0]) == 0 && memcmp(db[0], db[1], sizeof db[0]) == 0);
    }
    dwconv_context_destroy(ctx);
    free(x), free(dy), free(dx[0]), free(dx[1]);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cpu_backward");
    TCase *tc = tcase_create("oracle");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, random_small, 0, 4);
    tcase_add_loop_test(tc, random_long, 0, 2);
    tcase_add_test(tc, long_rows_fast_path);
    tcase_add_test(tc, padding_modes_and_steps);
    tcase_add_test(tc, kernel_sizes);
    tcase_add_test(tc, weight_gradient_groups);
    tcase_add_test(tc, huge_span);
    tcase_add_test(tc, streamed_dx);
    tcase_add_test(tc, short_rows);
    tcase_add_test(tc, causal_backward);
    tcase_add_test(tc, public_route);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return core_run(suite(), 0); }
