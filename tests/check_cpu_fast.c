/*
 * The fast cpu path against the scalar oracle, bit for bit: for every SIMD flavour
 * this build and this processor run, and 1, 2, 3, 7 and the default number of threads
 * (tests/cpu_cases.h),
 *   - hundreds of random descriptors (test_random_desc: every option drawn);
 *   - targeted shapes: long rows, K = 31 and 64, stride 2, dilation 4, causal K4
 *     silu, NLC with C not a multiple of 16, every padding mode on long rows;
 *   - f16/bf16 with subnormal and huge values, NaN and infinity inputs;
 *   - misaligned x and y, x fenced by unreadable pages (an over-read faults) and y by
 *     poisoned guard bytes (an over-write is seen);
 *   - the flavour choice (DWCONV_CPU_SIMD) and OUT_OF_MEMORY leaving y untouched.
 *
 * Inputs are random floats, not exact small integers: the sums round, so only the
 * same operations in the same order give the same bits.
 *
 * DWCONV_TEST_QUICK=1 runs a quarter of the random descriptors (the sanitizer builds).
 * DWCONV_TEST_SEED=n in the environment changes the base seed (failure messages name
 * the descriptor, the flavour and the thread count).
 */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core_check.h"
#include "cpu.h"
#include "cpu_cases.h"
#include "dwconv.h"
#include "fast.h"
#include "internal.h"
#include "kernels.h"
#include "test_util.h"

enum { GUARD = 64 }; /* poisoned bytes around y */

static uint64_t base_seed(void) { return cpu_case_seed(20261201u); }

/* ---- x between unreadable pages ------------------------------------------------------ */

typedef struct fenced {
    char *map;
    size_t map_bytes;
    void *data;
} fenced;

/* bytes of data, touching the page after it (at_end) or the page before it. */
static fenced fenced_alloc(size_t bytes, int at_end) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), inner = (bytes + page - 1) / page * page;
    fenced f = {.map_bytes = inner + 2 * page};
    f.map = mmap(NULL, f.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_msg(f.map != MAP_FAILED, "mmap of %zu bytes failed", f.map_bytes);
    ck_assert_int_eq(mprotect(f.map, page, PROT_NONE), 0);
    ck_assert_int_eq(mprotect(f.map + page + inner, page, PROT_NONE), 0);
    f.data = at_end ? f.map + page + inner - bytes : f.map + page;
    return f;
}

static void fenced_free(fenced *f) { munmap(f->map, f->map_bytes); }

/* ---- one problem: inputs, the oracle's output, a poisoned output ---------------------- */

typedef struct problem {
    dwconv_problem plan; /* the forward's, on these buffers */
    int64_t x_elements, y_elements, weight_elements;
    fenced x;
    char *w, *bias, *y_block, *expected;
    void *y;
    size_t y_bytes;
    int nan_loose; /* a NaN output need only be a NaN: see nan_inputs_dense */
} problem;

typedef void (*filler)(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n);

/* y_offset: elements y is shifted from an aligned address. */
static void problem_make(problem *p, const dwconv_desc *desc, int with_bias, test_rng *rng,
                         filler fill_x, filler fill_w, int x_at_end, int y_offset) {
    memset(p, 0, sizeof *p);
    ck_assert_int_eq(dwconv_desc_sizes(desc, &p->x_elements, &p->y_elements, &p->weight_elements,
                                       NULL), DWCONV_SUCCESS);
    const size_t es = dwconv_dtype_size(desc->dtype), ws = dwconv_dtype_size(desc->weight_dtype);
    p->x = fenced_alloc((size_t)p->x_elements * es, x_at_end);
    fill_x(rng, desc->dtype, p->x.data, p->x_elements);
    p->w = malloc((size_t)p->weight_elements * ws);
    p->bias = malloc((size_t)desc->channels * ws);
    ck_assert(p->w && p->bias);
    fill_w(rng, desc->weight_dtype, p->w, p->weight_elements);
    test_fill_random(rng, desc->weight_dtype, p->bias, desc->channels);
    p->y_bytes = (size_t)p->y_elements * es;
    size_t shift = (size_t)y_offset * es;
    p->y_block = aligned_alloc(64, (p->y_bytes + shift + 2 * GUARD + 63) / 64 * 64);
    p->expected = malloc(p->y_bytes);
    ck_assert(p->y_block && p->expected);
    p->y = p->y_block + GUARD + shift;
    ck_assert_int_eq(dwconv_reference_forward(desc, p->x.data, p->w, with_bias ? p->bias : NULL,
                                              p->expected), DWCONV_SUCCESS);
    ck_assert_int_eq(dwconv_validate_forward(&p->plan, desc, NULL, p->x.data, p->w,
                                             with_bias ? p->bias : NULL, p->y, "check_cpu_fast"),
                     DWCONV_SUCCESS);
}

static void problem_free(problem *p) {
    fenced_free(&p->x);
    free(p->w), free(p->bias), free(p->y_block), free(p->expected);
}

/* Runs one flavour on some threads (a cpu_case_each_fn on a problem); the message says
 * what differed. */
static void expect_oracle(const dwconv_cpu_kernels *k, int threads, void *arg) {
    problem *p = arg;
    const dwconv_desc *d = &p->plan.desc;
    size_t es = dwconv_dtype_size(d->dtype);
    test_poison(p->y_block, (size_t)((char *)p->y - p->y_block) + p->y_bytes + GUARD);
    dwconv_status st = dwconv_cpu_fast_with(k, &p->plan, threads);
    EXPECT(st == DWCONV_SUCCESS, "%s, %s, %d threads: status %d", test_desc_string(d), k->name,
           threads, (int)st);
    EXPECT(test_untouched(p->y_block, (size_t)((char *)p->y - p->y_block)) &&
               test_untouched((char *)p->y + p->y_bytes, GUARD),
           "%s, %s, %d threads: wrote outside y", test_desc_string(d), k->name, threads);
    int64_t n = p->y_elements;
    for (int64_t i = 0; i < n; i++) {
        const char *got = (const char *)p->y + (size_t)i * es, *want = p->expected + (size_t)i * es;
        if (memcmp(got, want, es) == 0) continue;
        float g = test_get(d->dtype, p->y, i), e = test_get(d->dtype, p->expected, i);
        if (p->nan_loose && g != g && e != e) continue; /* see nan_inputs */
        ck_abort_msg("%s, %s, %d threads: y[%lld] = %a, the oracle says %a", test_desc_string(d),
                     k->name, threads, (long long)i, (double)g, (double)e);
    }
}

/* Every available flavour, every thread count. */
static void expect_all(const dwconv_desc *desc, int with_bias, test_rng *rng, filler fill_x,
                       filler fill_w, int x_at_end, int y_offset, int nan_loose) {
    problem p;
    problem_make(&p, desc, with_bias, rng, fill_x, fill_w, x_at_end, y_offset);
    p.nan_loose = nan_loose;
    cpu_case_each(expect_oracle, &p);
    problem_free(&p);
}

static void expect_plain(const dwconv_desc *desc, int with_bias, uint64_t seed) {
    test_rng rng = test_rng_seed(seed);
    expect_all(desc, with_bias, &rng, test_fill_random, test_fill_random, (int)(seed & 1),
               (int)(seed % 7), 0);
}

static dwconv_desc shape(int64_t B, int64_t C, int64_t L, int64_t K) {
    dwconv_desc d;
    dwconv_desc_init(&d, B, C, L, K);
    return d;
}

/* ---- random descriptors ---------------------------------------------------------------- */

static void random_descriptors(uint64_t seed, int count, int64_t max_length, int64_t max_channels) {
    test_rng rng = test_rng_seed(seed);
    for (int n = 0; n < count; n++) {
        dwconv_desc d = test_random_desc(&rng, max_length, max_channels);
        int with_bias = (int)test_rng_range(&rng, 0, 1);
        expect_all(&d, with_bias, &rng, test_fill_random, test_fill_random, n & 1,
                   (int)test_rng_range(&rng, 0, 15), 0);
    }
}

/* DWCONV_TEST_QUICK=1 (the sanitizer builds): a quarter of the random descriptors */
START_TEST(random_small) {
    random_descriptors(base_seed() + (uint64_t)_i * 1000003u, test_quick() ? 15 : 60, 300, 40);
}
END_TEST

/* rows long enough for the direct stretch and several tiles */
START_TEST(random_long) {
    random_descriptors(base_seed() + 77u + (uint64_t)_i * 1000003u, test_quick() ? 4 : 15, 5000, 6);
}
END_TEST

/* ---- targeted shapes -------------------------------------------------------------------- */

START_TEST(long_rows) { /* few rows: the rows are split between threads */
    dwconv_desc d = shape(1, 2, 100003, 3);
    d.pad_left = d.pad_right = 1;
    expect_plain(&d, 1, 1);
    d.dtype = d.weight_dtype = DWCONV_BF16;
    expect_plain(&d, 0, 2);
}
END_TEST

/* Outputs larger than the last-level cache: stored around the caches (streamed). The
 * cache is taken as 16 MiB, so that the 40 MB outputs stream on any machine (some
 * report hundreds of MiB). */
START_TEST(large_outputs) {
    dwconv_cpu_set_cache_bytes(16l << 20);
    dwconv_desc d = shape(1, 5, 2000003, 3); /* 40 MB of f32, rows at odd alignments */
    d.pad_left = 1, d.pad_right = 2;
    expect_plain(&d, 1, 40);
    d.dtype = d.weight_dtype = DWCONV_BF16;
    d.length = 4000037; /* 40 MB of bf16: read straight (K = 5) and staged (K = 9) */
    d.kernel_size = 5, d.pad_left = d.pad_right = 2;
    expect_plain(&d, 0, 41);
    d.dtype = d.weight_dtype = DWCONV_F16;
    d.kernel_size = 9, d.pad_left = d.pad_right = 4;
    expect_plain(&d, 1, 43);
    d = shape(2, 64, 80000, 4); /* NLC rows of 256 bytes */
    d.layout = DWCONV_LAYOUT_NLC;
    d.padding = DWCONV_PADDING_CAUSAL;
    d.activation = DWCONV_ACT_SILU;
    expect_plain(&d, 1, 42);
    dwconv_cpu_set_cache_bytes(0);
}
END_TEST

START_TEST(long_kernels) {
    static const int64_t kernels[] = {16, 17, 31, 32, 33, 64};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        dwconv_desc d = shape(2, 3, 3001, kernels[i]);
        d.padding = DWCONV_PADDING_SAME;
        expect_plain(&d, 1, 10 + i);
        d.padding = DWCONV_PADDING_EXPLICIT;
        d.pad_left = d.pad_right = kernels[i] / 2;
        d.dtype = DWCONV_F16;
        expect_plain(&d, 0, 20 + i);
        d.dtype = DWCONV_F32;
        d.layout = DWCONV_LAYOUT_NLC;
        expect_plain(&d, 1, 30 + i);
    }
}
END_TEST

START_TEST(stride_and_dilation) {
    static const int64_t steps[][2] = {{2, 1}, {1, 4}, {2, 2}, {3, 2}, {4, 1}, {5, 3}, {2, 7}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        for (int layout = 0; layout < 2; layout++)
            for (int dtype = 0; dtype < 3; dtype++) {
                dwconv_desc d = shape(2, 19, 2049, 3);
                d.stride = steps[i][0], d.dilation = steps[i][1];
                d.pad_left = d.dilation, d.pad_right = d.dilation + 1;
                d.layout = (dwconv_layout)layout;
                d.dtype = (dwconv_dtype)dtype;
                expect_plain(&d, dtype != 1, 100 + i * 8 + (size_t)(layout * 3 + dtype));
            }
}
END_TEST

START_TEST(causal_silu) {
    for (int layout = 0; layout < 2; layout++)
        for (int dtype = 0; dtype < 3; dtype++) {
            dwconv_desc d = shape(2, 40, 1500, 4);
            d.padding = DWCONV_PADDING_CAUSAL;
            d.activation = DWCONV_ACT_SILU;
            d.layout = (dwconv_layout)layout;
            d.dtype = d.weight_dtype = (dwconv_dtype)dtype;
            expect_plain(&d, 1, 200 + (uint64_t)(layout * 3 + dtype));
        }
}
END_TEST

START_TEST(nlc_channel_tails) {
    static const int64_t channels[] = {1, 2, 5, 15, 17, 31, 100};
    for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++)
        for (int dtype = 0; dtype < 3; dtype++) {
            dwconv_desc d = shape(2, channels[i], 333, 5);
            d.layout = DWCONV_LAYOUT_NLC;
            d.padding = DWCONV_PADDING_SAME;
            d.activation = DWCONV_ACT_RELU;
            d.dtype = (dwconv_dtype)dtype;
            expect_plain(&d, 1, 300 + i * 3 + (size_t)dtype);
        }
}
END_TEST

START_TEST(padding_modes) {
    for (int mode = 0; mode < 4; mode++)
        for (int layout = 0; layout < 2; layout++) {
            dwconv_desc d = shape(1, 3, 4099, 7);
            d.padding_mode = (dwconv_padding_mode)mode;
            d.pad_left = 6, d.pad_right = 5;
            d.dilation = 2;
            d.layout = (dwconv_layout)layout;
            expect_plain(&d, 1, 400 + (uint64_t)(mode * 2 + layout));
            d.dilation = 1, d.kernel_size = 31, d.pad_left = 20, d.pad_right = 9;
            expect_plain(&d, 0, 410 + (uint64_t)(mode * 2 + layout));
        }
}
END_TEST

START_TEST(short_rows) { /* L < K, L_out of one or two, kernel wider than any vector */
    static const int64_t lengths[] = {1, 2, 3, 15, 16, 17};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        for (int layout = 0; layout < 2; layout++) {
            dwconv_desc d = shape(3, 5, lengths[i], 20);
            d.pad_left = 12, d.pad_right = 9;
            d.layout = (dwconv_layout)layout;
            expect_plain(&d, 1, 500 + i * 2 + (size_t)layout);
        }
}
END_TEST

/* ---- special values ---------------------------------------------------------------------- */

/* Random values with subnormals of the dtype and huge ones (products overflow to
 * infinity; inf - inf makes x86's one default NaN), but no NaN inputs: see below. */
static void fill_extremes(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = test_rng_next(rng);
        uint16_t h = (uint16_t)r;
        switch (r >> 60) {
        case 0: h &= 0x83ffu; break;                            /* f16 subnormal or zero */
        case 1: h = (uint16_t)((h & 0x807fu) | 0x0000u); break; /* bf16 subnormal */
        case 2: h = (uint16_t)((h & 0x83ffu) | 0x7800u); break; /* f16 near 2^15 */
        case 3: /* bf16 near 2^126; as f16 that would be a NaN: f16 near 65504 instead */
            h = dtype == DWCONV_F16 ? (uint16_t)((h & 0x83ffu) | 0x7800u)
                                    : (uint16_t)((h & 0x807fu) | 0x7e80u);
            break;
        default: h = (uint16_t)((h & 0x8fffu) | 0x3000u); break; /* ordinary */
        }
        if (dtype == DWCONV_F32) {
            uint32_t u = (uint32_t)h << 16 | (uint32_t)((r >> 16) & 0xffffu);
            if ((r >> 60) == 0) u >>= 8; /* f32 subnormals too */
            memcpy((float *)data + i, &u, 4);
        } else {
            ((uint16_t *)data)[i] = h;
        }
    }
}

START_TEST(subnormal_and_huge) {
    for (int dtype = 0; dtype < 3; dtype++)
        for (int layout = 0; layout < 2; layout++)
            for (int act = 0; act < 3; act++) {
                dwconv_desc d = shape(2, 21, 777, 3);
                d.pad_left = 1, d.pad_right = 2;
                d.dtype = d.weight_dtype = (dwconv_dtype)dtype;
                d.layout = (dwconv_layout)layout;
                d.activation = (dwconv_activation)act;
                test_rng rng = test_rng_seed(base_seed() + 600 + (uint64_t)(dtype * 9 + layout * 3 + act));
                expect_all(&d, 1, &rng, fill_extremes, fill_extremes, layout, dtype, 0);
            }
}
END_TEST

static int64_t nan_spacing = 1; /* at least this many elements between special values */

/* Random values, and every so often a NaN (with its own payload) or an infinity. */
static void fill_specials(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n) {
    test_fill_random(rng, dtype, data, n);
    for (int64_t i = test_rng_range(rng, 0, nan_spacing); i < n;
         i += nan_spacing + test_rng_range(rng, 0, nan_spacing)) {
        uint64_t r = test_rng_next(rng);
        uint32_t sign = (uint32_t)(r & 1) << 31;
        uint32_t bits = (r >> 1) % 3 == 0 ? sign | 0x7f800000u                       /* inf */
                                          : sign | 0x7fc00000u | (uint32_t)(r >> 40 & 0x3f0000u); /* NaN */
        float f;
        memcpy(&f, &bits, 4);
        if (dtype == DWCONV_F32) ((float *)data)[i] = f;
        else ((uint16_t *)data)[i] = dtype == DWCONV_BF16 ? (uint16_t)(bits >> 16)
                                                          : (uint16_t)((bits >> 16 & 0x8000u) | 0x7c00u | (bits >> 13 & 0x3ffu));
    }
}

/* One NaN or infinity per output's taps: the result is determined by IEEE 754 (the
 * NaN's payload is kept, inf * w and inf - inf are exact rules), so every bit must
 * agree. */
START_TEST(nan_inputs_sparse) {
    for (int dtype = 0; dtype < 3; dtype++)
        for (int layout = 0; layout < 2; layout++)
            for (int act = 0; act < 3; act++) {
                dwconv_desc d = shape(2, 18, 901, 5);
                d.padding = DWCONV_PADDING_SAME;
                d.dtype = (dwconv_dtype)dtype;
                d.layout = (dwconv_layout)layout;
                d.activation = (dwconv_activation)act;
                nan_spacing = layout == DWCONV_LAYOUT_NCL ? 8 : 8 * d.channels;
                test_rng rng = test_rng_seed(base_seed() + 700 + (uint64_t)(dtype * 9 + layout * 3 + act));
                expect_all(&d, 1, &rng, fill_specials, test_fill_random, 1, 3, 0);
            }
}
END_TEST

static int64_t weights_per_channel = 1;

/* f32 weights with one NaN per channel whose payload fills all 22 bits: a NaN that
 * reaches y with low bits set must still round to a NaN, not carry into the exponent. */
static void fill_nan_weights(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n) {
    test_fill_random(rng, dtype, data, n);
    if (dtype != DWCONV_F32) return;
    for (int64_t c = 0; c < n / weights_per_channel; c++) {
        uint64_t r = test_rng_next(rng);
        uint32_t bits = (uint32_t)(r & 1) << 31 | 0x7fc00000u | (uint32_t)(r >> 20 & 0x3fffffu);
        memcpy((float *)data + c * weights_per_channel + (int64_t)(r >> 50) % weights_per_channel,
               &bits, 4);
    }
}

START_TEST(nan_weights) {
    for (int dtype = 0; dtype < 3; dtype++)
        for (int layout = 0; layout < 2; layout++) {
            dwconv_desc d = shape(2, 33, 500, 6);
            d.pad_left = 3, d.pad_right = 2;
            d.dtype = (dwconv_dtype)dtype;
            d.layout = (dwconv_layout)layout;
            d.activation = (dwconv_activation)((dtype + layout) % 3);
            weights_per_channel = d.kernel_size;
            test_rng rng = test_rng_seed(base_seed() + 750 + (uint64_t)(dtype * 2 + layout));
            expect_all(&d, 1, &rng, test_fill_random, fill_nan_weights, layout, 1, 0);
        }
}
END_TEST

/* Dense NaNs and infinities: where two NaNs meet in one fma, IEEE 754 leaves open
 * which payload survives, and x86 picks by operand position, which the compiler
 * chooses. So a NaN output must be NaN in both; every other output agrees bitwise. */
START_TEST(nan_inputs_dense) {
    for (int dtype = 0; dtype < 3; dtype++)
        for (int layout = 0; layout < 2; layout++) {
            dwconv_desc d = shape(2, 18, 901, 7);
            d.padding = DWCONV_PADDING_SAME;
            d.dtype = (dwconv_dtype)dtype;
            d.layout = (dwconv_layout)layout;
            d.activation = DWCONV_ACT_SILU;
            nan_spacing = 1;
            test_rng rng = test_rng_seed(base_seed() + 800 + (uint64_t)(dtype * 2 + layout));
            expect_all(&d, 1, &rng, fill_specials, test_fill_random, 0, 5, 1);
        }
}
END_TEST

/* ---- the flavour choice and memory failures ------------------------------------------- */

START_TEST(flavour_lookup) {
    const dwconv_cpu_kernels *k = NULL;
    char why[256] = "";
    ck_assert_int_eq(dwconv_cpu_kernels_find("generic", &k, why, sizeof why), DWCONV_SUCCESS);
    ck_assert_str_eq(k->name, "generic");
    ck_assert_int_eq(dwconv_cpu_kernels_find("auto", &k, why, sizeof why), DWCONV_SUCCESS);
    ck_assert_int_eq(dwconv_cpu_kernels_find("avx9", &k, why, sizeof why), DWCONV_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(why, "avx9") != NULL, "message: %s", why);
#ifndef DWCONV_HAVE_AVX512
    ck_assert_int_eq(dwconv_cpu_kernels_find("avx512", &k, why, sizeof why), DWCONV_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(why, "not in this build") != NULL, "message: %s", why);
#endif
    /* auto is the first of avx512, avx2, generic that runs here */
    const dwconv_cpu_kernels *list[CPU_CASE_FLAVOURS], *best = NULL;
    ck_assert_int_ge(cpu_case_flavours(list), 1);
    dwconv_cpu_kernels_find(NULL, &best, why, sizeof why);
    ck_assert_str_eq(best->name, list[cpu_case_flavours(list) - 1]->name);
}
END_TEST

/* DWCONV_CPU_SIMD is read once per process: these run in a fresh child (main forces
 * CK_FORK). */
START_TEST(environment_override) {
    const char *request = _i == 0 ? "avx9" : "generic";
    setenv("DWCONV_CPU_SIMD", request, 1);
    dwconv_context *ctx;
    ck_assert_int_eq(dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 0), DWCONV_SUCCESS);
    dwconv_desc d = shape(1, 2, 50, 3);
    float x[100], w[6] = {1, 2, 3, 4, 5, 6}, y[96];
    for (int i = 0; i < 100; i++) x[i] = (float)i;
    test_poison(y, sizeof y);
    dwconv_status st = dwconv_forward(ctx, &d, x, w, NULL, y);
    if (_i == 0) {
        ck_assert_int_eq(st, DWCONV_ERROR_UNSUPPORTED);
        ck_assert_msg(strstr(dwconv_last_error(), "DWCONV_CPU_SIMD=avx9") != NULL, "message: %s",
                      dwconv_last_error());
        ck_assert(test_untouched(y, sizeof y));
        ck_assert_msg(strstr(dwconv_cpu_simd_name(), "none") != NULL, "%s", dwconv_cpu_simd_name());
    } else {
        ck_assert_int_eq(st, DWCONV_SUCCESS);
        ck_assert_str_eq(dwconv_cpu_simd_name(), "generic");
    }
    dwconv_context_destroy(ctx);
}
END_TEST

static size_t address_space_in_use(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* The forward problem of d on the given buffers, as dwconv_forward validates it. */
static dwconv_problem forward_problem(const dwconv_desc *d, const void *x, const void *w,
                                      void *y) {
    dwconv_problem p;
    ck_assert_int_eq(dwconv_validate_forward(&p, d, NULL, x, w, NULL, y, "test"),
                     DWCONV_SUCCESS);
    return p;
}

/* Descriptors whose scratch needs tens or hundreds of MB, under an address-space
 * limit: the fast path must fail before it writes anything. */
START_TEST(out_of_memory_leaves_y) {
    size_t in_use = address_space_in_use();
    ck_assert_msg(in_use, "needs /proc/self/statm to set an address-space limit");
    for (int layout = 0; layout < 2; layout++) {
        dwconv_desc d = shape(1, 1, 8 << 20, 8 << 20);
        d.dtype = d.weight_dtype = DWCONV_BF16;
        d.layout = (dwconv_layout)layout;
        if (layout == DWCONV_LAYOUT_NCL) { /* 8M bf16 taps widened to 32 MB of f32 */
        } else { /* 4M taps: 512 MB of row pointers */
            d.channels = 2, d.length = 16, d.kernel_size = 4 << 20;
            d.pad_left = d.pad_right = 2 << 20;
        }
        int64_t xn, yn, wn;
        ck_assert_int_eq(dwconv_desc_sizes(&d, &xn, &yn, &wn, NULL), DWCONV_SUCCESS);
        uint16_t *x = calloc((size_t)xn, 2), *w = calloc((size_t)wn, 2);
        uint16_t *y = malloc((size_t)yn * 2);
        ck_assert(x && w && y);
        test_poison(y, (size_t)yn * 2);
        dwconv_problem p = forward_problem(&d, x, w, y);
        struct rlimit old, tight;
        getrlimit(RLIMIT_AS, &old);
        tight = old;
        tight.rlim_cur = address_space_in_use() + ((size_t)16 << 20);
        ck_assert_int_eq(setrlimit(RLIMIT_AS, &tight), 0);
        dwconv_status st = dwconv_cpu_fast(&p, 1);
        setrlimit(RLIMIT_AS, &old);
        ck_assert_int_eq(st, DWCONV_ERROR_OUT_OF_MEMORY);
        ck_assert(test_untouched(y, (size_t)yn * 2));
        free(x), free(w), free(y);
    }
}
END_TEST

/* Scratch and time follow the data, not dilation*(K-1): taps 2^30 apart over two
 * inputs, or 65535 apart over one, need no staging of the span (they took 8 GiB and
 * seconds in 0.1). Under an address-space limit of 64 MB more than in use, they run
 * and equal the oracle. */
START_TEST(huge_span_costs_only_the_work) {
    ck_assert_msg(address_space_in_use(), "needs /proc/self/statm to set a limit");
    dwconv_desc cases[2];
    cases[0] = shape(1, 1, 2, 2);
    cases[0].dilation = (int64_t)1 << 30;
    cases[0].padding = DWCONV_PADDING_SAME;
    cases[1] = shape(127, 31, 1, 30);
    cases[1].dilation = 65535;
    cases[1].padding = DWCONV_PADDING_SAME;
    for (int i = 0; i < 2; i++) {
        const dwconv_desc *d = &cases[i];
        int64_t xn, yn, wn;
        ck_assert_int_eq(dwconv_desc_sizes(d, &xn, &yn, &wn, NULL), DWCONV_SUCCESS);
        float *x = malloc((size_t)xn * 4), *w = malloc((size_t)wn * 4);
        float *y = malloc((size_t)yn * 4), *want = malloc((size_t)yn * 4);
        ck_assert(x && w && y && want);
        for (int64_t k = 0; k < xn; k++) x[k] = (float)(k % 7) - 3.0f;
        for (int64_t k = 0; k < wn; k++) w[k] = 0.5f * (float)(k % 5);
        ck_assert_int_eq(dwconv_reference_forward(d, x, w, NULL, want), DWCONV_SUCCESS);
        dwconv_problem p = forward_problem(d, x, w, y);
        struct rlimit old, tight;
        getrlimit(RLIMIT_AS, &old);
        tight = old;
        tight.rlim_cur = address_space_in_use() + ((size_t)64 << 20);
        ck_assert_int_eq(setrlimit(RLIMIT_AS, &tight), 0);
        dwconv_status st = dwconv_cpu_fast(&p, 2);
        setrlimit(RLIMIT_AS, &old);
        ck_assert_int_eq(st, DWCONV_SUCCESS);
        ck_assert_msg(test_first_difference(y, want, 4, yn) < 0, "case %d differs", i);
        free(x), free(w), free(y), free(want);
    }
}
END_TEST

/* Scratch of exabytes, or of sizes that overflow 64 bits (they saturate): OUT_OF_MEMORY,
 * never a short block. */
START_TEST(scratch_size_overflow) {
    for (int layout = 0; layout < 2; layout++) {
        dwconv_desc d = shape(1, 1, 1, 2);
        d.dilation = (int64_t)1 << 59; /* one phase reaching 2^59 inputs, on each thread */
        d.pad_left = d.pad_right = (int64_t)1 << 59;
        d.layout = (dwconv_layout)layout;
        if (layout == DWCONV_LAYOUT_NLC) { /* 2^58 taps: 2^64 bytes of row pointers */
            d.channels = 2, d.dilation = 1, d.kernel_size = (int64_t)1 << 58;
            d.pad_left = d.pad_right = (int64_t)1 << 57;
        }
        float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, y[16];
        /* shaped as validated, but on buffers far too small (an overlap check would
         * refuse them): the scratch must fail first */
        dwconv_problem p;
        ck_assert_int_eq(dwconv_problem_init(&p, DWCONV_OP_FORWARD, &d, "test"), DWCONV_SUCCESS);
        ck_assert_int_eq(dwconv_set_conv_shapes(&p, NULL, 0, "test"), DWCONV_SUCCESS);
        p.operand[DWCONV_ROLE_X].data = x;
        p.operand[DWCONV_ROLE_WEIGHT].data = w;
        p.operand[DWCONV_ROLE_Y].data = y;
        test_poison(y, sizeof y);
        /* nothing may be read or written: the buffers are far too small on purpose */
        ck_assert_int_eq(dwconv_cpu_fast(&p, 2), DWCONV_ERROR_OUT_OF_MEMORY);
        ck_assert(test_untouched(y, sizeof y));
    }
}
END_TEST

/* Strides far beyond the input (issue 9): B1 C1 L1 K8, stride 2^63 - 1, pads 1/6
 * replicate passed validation, then a ceiling division overflowed and the staging
 * wrote before its buffer, in every flavour (x[0] overwritten). One output each. */
START_TEST(huge_strides) {
    for (int layout = 0; layout < 2; layout++) {
        dwconv_desc d = shape(1, 1, 1, 8);
        d.stride = INT64_MAX, d.pad_left = 1, d.pad_right = 6;
        d.padding_mode = DWCONV_PAD_REPLICATE;
        d.layout = (dwconv_layout)layout;
        expect_plain(&d, 1, 60 + (uint64_t)layout); /* x against its fence's end */
        expect_plain(&d, 0, 62 + (uint64_t)layout); /* and its start */
        d = shape(2, 5, 1, 8);
        d.stride = INT64_MAX, d.pad_left = 1, d.pad_right = 6;
        d.padding_mode = DWCONV_PAD_REPLICATE;
        d.layout = (dwconv_layout)layout;
        d.dtype = d.weight_dtype = DWCONV_F16;
        expect_plain(&d, 1, 64);
        d = shape(1, 3, 10, 3);
        d.stride = INT64_MAX / 2, d.pad_left = d.pad_right = 9;
        d.padding_mode = DWCONV_PAD_REFLECT;
        d.layout = (dwconv_layout)layout;
        expect_plain(&d, 0, 65);
    }
}
END_TEST

static Suite *cpu_fast_suite(void) {
    Suite *s = suite_create("cpu_fast");
    TCase *random = tcase_create("random");
    tcase_set_timeout(random, 600);
    tcase_add_loop_test(random, random_small, 0, 5);
    tcase_add_loop_test(random, random_long, 0, 2);
    suite_add_tcase(s, random);

    TCase *shapes = tcase_create("shapes");
    tcase_set_timeout(shapes, 600);
    tcase_add_test(shapes, long_rows);
    tcase_add_test(shapes, large_outputs);
    tcase_add_test(shapes, long_kernels);
    tcase_add_test(shapes, stride_and_dilation);
    tcase_add_test(shapes, causal_silu);
    tcase_add_test(shapes, nlc_channel_tails);
    tcase_add_test(shapes, padding_modes);
    tcase_add_test(shapes, short_rows);
    tcase_add_test(shapes, huge_strides);
    suite_add_tcase(s, shapes);

    TCase *values = tcase_create("values");
    tcase_set_timeout(values, 600);
    tcase_add_test(values, subnormal_and_huge);
    tcase_add_test(values, nan_inputs_sparse);
    tcase_add_test(values, nan_weights);
    tcase_add_test(values, nan_inputs_dense);
    suite_add_tcase(s, values);

    TCase *choice = tcase_create("choice");
    tcase_add_test(choice, flavour_lookup);
    tcase_add_loop_test(choice, environment_override, 0, 2);
    tcase_add_test(choice, out_of_memory_leaves_y);
    tcase_add_test(choice, scratch_size_overflow);
    tcase_add_test(choice, huge_span_costs_only_the_work);
    suite_add_tcase(s, choice);
    return s;
}

int main(void) {
    /* every test in a child of its own, whatever CK_FORK says: some read DWCONV_CPU_SIMD
     * (once per process) or set an address-space limit */
    return core_run(cpu_fast_suite(), 1);
}
