/*
 * The public API around the operation: version, descriptor helpers (defaults, the
 * padding presets against PyTorch's rules, sizes), dtype sizes, backend names, and a
 * cpu context: threads, streams, memory, copies, synchronize, timer.
 */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core_check.h"
#include "dwconv.h"
#include "test_util.h"

/* ---- version ------------------------------------------------------------------------- */

START_TEST(version) {
    ck_assert_int_eq(dwconv_version(), DWCONV_VERSION);
    ck_assert_int_eq(DWCONV_VERSION, DWCONV_VERSION_MAJOR * 10000 + DWCONV_VERSION_MINOR * 100 +
                                         DWCONV_VERSION_PATCH);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", DWCONV_VERSION_MAJOR, DWCONV_VERSION_MINOR,
             DWCONV_VERSION_PATCH);
    ck_assert_str_eq(dwconv_version_string(), want);
    ck_assert_str_eq(dwconv_version_string(), PACKAGE_VERSION);
}
END_TEST

/* ---- descriptors ----------------------------------------------------------------------- */

START_TEST(desc_init_defaults) {
    dwconv_desc d;
    memset(&d, 0x5a, sizeof d);
    ck_assert(dwconv_desc_init(&d, 2, 3, 5, 7) == DWCONV_SUCCESS);
    ck_assert(d.batch == 2 && d.channels == 3 && d.length == 5 && d.kernel_size == 7);
    ck_assert(d.stride == 1 && d.dilation == 1 && d.pad_left == 0 && d.pad_right == 0);
    ck_assert(d.padding == DWCONV_PADDING_EXPLICIT);
    ck_assert(d.padding_mode == DWCONV_PAD_ZEROS);
    ck_assert(d.layout == DWCONV_LAYOUT_NCL);
    ck_assert(d.dtype == DWCONV_F32 && d.weight_dtype == DWCONV_F32);
    ck_assert(d.activation == DWCONV_ACT_NONE);
    /* init stores the sizes as given; validation is the job of the functions using it */
    ck_assert(dwconv_desc_init(&d, 0, -1, 0, 0) == DWCONV_SUCCESS);
    ck_assert(d.batch == 0 && d.channels == -1);
}
END_TEST

/* PyTorch's padding='same' (torch/nn/modules/conv.py): total = dilation*(K-1),
 * left = total // 2, right = total - left; L_out = L at stride 1. Causal: all on the
 * left; L_out = floor((L-1)/stride) + 1. */
START_TEST(desc_resolve_presets) {
    static const struct { int64_t kernel, dilation, left, right; } same[] = {
        {1, 1, 0, 0}, {2, 1, 0, 1}, {3, 1, 1, 1}, {4, 1, 1, 2}, {5, 1, 2, 2},
        {4, 3, 4, 5}, {3, 2, 2, 2}, {2, 5, 2, 3}, {6, 2, 5, 5}, {8, 7, 24, 25},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        dwconv_desc d;
        dwconv_desc_init(&d, 1, 1, 50, same[i].kernel);
        d.dilation = same[i].dilation;
        d.padding = DWCONV_PADDING_SAME;
        int64_t pl = -1, pr = -1, lo = -1;
        ck_assert_msg(dwconv_desc_resolve(&d, &pl, &pr, &lo) == DWCONV_SUCCESS, "%s",
                      dwconv_last_error());
        ck_assert_msg(pl == same[i].left && pr == same[i].right && lo == 50,
                      "same K=%lld dilation %lld: %lld/%lld L_out %lld, want %lld/%lld 50",
                      (long long)same[i].kernel, (long long)same[i].dilation, (long long)pl,
                      (long long)pr, (long long)lo, (long long)same[i].left,
                      (long long)same[i].right);
    }
    test_rng rng = test_rng_seed(7);
    for (int i = 0; i < 500; i++) {
        dwconv_desc d;
        dwconv_desc_init(&d, 1, 1, test_rng_range(&rng, 1, 100), test_rng_range(&rng, 1, 9));
        d.dilation = test_rng_range(&rng, 1, 5);
        d.stride = test_rng_range(&rng, 1, 4);
        d.padding = DWCONV_PADDING_CAUSAL;
        int64_t pl = -1, pr = -1, lo = -1, total = d.dilation * (d.kernel_size - 1);
        ck_assert_msg(dwconv_desc_resolve(&d, &pl, &pr, &lo) == DWCONV_SUCCESS, "%s: %s",
                      test_desc_string(&d), dwconv_last_error());
        ck_assert_msg(pl == total && pr == 0 && lo == (d.length - 1) / d.stride + 1,
                      "%s: %lld/%lld L_out %lld", test_desc_string(&d), (long long)pl,
                      (long long)pr, (long long)lo);
        d.padding = DWCONV_PADDING_SAME, d.stride = 1;
        ck_assert(dwconv_desc_resolve(&d, &pl, &pr, &lo) == DWCONV_SUCCESS);
        ck_assert_msg(pl == total / 2 && pr == total - total / 2 && lo == d.length,
                      "%s: %lld/%lld L_out %lld", test_desc_string(&d), (long long)pl,
                      (long long)pr, (long long)lo);
    }
    /* explicit pads come back as given; every output pointer may be NULL */
    dwconv_desc d;
    dwconv_desc_init(&d, 1, 1, 10, 3);
    d.pad_left = 4, d.pad_right = 1;
    int64_t pl = -1, pr = -1, lo = -1;
    ck_assert(dwconv_desc_resolve(&d, &pl, &pr, &lo) == DWCONV_SUCCESS);
    ck_assert(pl == 4 && pr == 1 && lo == 13);
    ck_assert(dwconv_desc_resolve(&d, NULL, NULL, NULL) == DWCONV_SUCCESS);
}
END_TEST

START_TEST(desc_sizes) {
    dwconv_desc d;
    dwconv_desc_init(&d, 3, 5, 11, 4);
    d.stride = 2, d.pad_right = 2, d.dtype = d.weight_dtype = DWCONV_BF16;
    int64_t nx = -1, ny = -1, nw = -1, nb = -1;
    ck_assert(dwconv_desc_sizes(&d, &nx, &ny, &nw, &nb) == DWCONV_SUCCESS);
    /* L_out = floor((11 + 2 - 3 - 1) / 2) + 1 = 5 */
    ck_assert(nx == 3 * 5 * 11 && ny == 3 * 5 * 5 && nw == 5 * 4 && nb == 5);
    ck_assert(dwconv_desc_sizes(&d, NULL, NULL, NULL, NULL) == DWCONV_SUCCESS);
    ck_assert(dwconv_desc_sizes(&d, NULL, &ny, NULL, NULL) == DWCONV_SUCCESS && ny == 75);
    d.layout = DWCONV_LAYOUT_NLC; /* counts do not depend on the layout */
    ck_assert(dwconv_desc_sizes(&d, &nx, &ny, &nw, &nb) == DWCONV_SUCCESS);
    ck_assert(nx == 165 && ny == 75 && nw == 20 && nb == 5);
}
END_TEST

START_TEST(dtype_size) {
    ck_assert_uint_eq(dwconv_dtype_size(DWCONV_F32), 4);
    ck_assert_uint_eq(dwconv_dtype_size(DWCONV_F16), 2);
    ck_assert_uint_eq(dwconv_dtype_size(DWCONV_BF16), 2);
    ck_assert_uint_eq(dwconv_dtype_size((dwconv_dtype)3), 0);
    ck_assert_uint_eq(dwconv_dtype_size((dwconv_dtype)-1), 0);
}
END_TEST

/* ---- backend names ---------------------------------------------------------------------- */

START_TEST(backend_names) {
    static const struct { dwconv_backend backend; const char *name; } names[] = {
        {DWCONV_BACKEND_AUTO, "auto"},
        {DWCONV_BACKEND_CPU, "cpu"},
        {DWCONV_BACKEND_CUDA, "cuda"},
        {DWCONV_BACKEND_HIP, "hip"},
    };
    for (size_t i = 0; i < 4; i++) {
        dwconv_backend b = (dwconv_backend)99;
        ck_assert_str_eq(dwconv_backend_name(names[i].backend), names[i].name);
        ck_assert(dwconv_backend_parse(names[i].name, &b) == DWCONV_SUCCESS);
        ck_assert_int_eq(b, names[i].backend);
    }
    ck_assert_str_eq(dwconv_backend_name((dwconv_backend)4), "?");
    ck_assert_str_eq(dwconv_backend_name((dwconv_backend)-1), "?");
    const char *bad[] = {"", "gpu", "cpux", "cud", "bogus"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dwconv_backend b = DWCONV_BACKEND_HIP;
        ck_assert_msg(dwconv_backend_parse(bad[i], &b) == DWCONV_ERROR_INVALID_VALUE,
                      "'%s' parsed", bad[i]);
        ck_assert(b == DWCONV_BACKEND_HIP); /* untouched on failure */
        ck_assert(strstr(dwconv_last_error(), "dwconv_backend_parse"));
    }
    dwconv_backend b;
    ck_assert(dwconv_backend_parse(NULL, &b) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_backend_parse("cpu", NULL) == DWCONV_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(cpu_backend_report) {
    dwconv_backend_report r;
    memset(&r, 0x5a, sizeof r);
    ck_assert(dwconv_backend_query(DWCONV_BACKEND_CPU, &r) == DWCONV_SUCCESS);
    ck_assert(r.backend == DWCONV_BACKEND_CPU && r.built == 1 && r.loaded == 1);
    ck_assert_int_eq(r.device_count, 1);
    ck_assert_str_eq(r.module_path, "");
    ck_assert(memchr(r.detail, '\0', sizeof r.detail) && r.detail[0]);
    char name[128];
    ck_assert(dwconv_device_name(DWCONV_BACKEND_CPU, 0, name, sizeof name) == DWCONV_SUCCESS);
    ck_assert(memchr(name, '\0', sizeof name) && name[0]);
    char tiny[4]; /* truncated, still terminated */
    ck_assert(dwconv_device_name(DWCONV_BACKEND_CPU, 0, tiny, sizeof tiny) == DWCONV_SUCCESS);
    ck_assert(memchr(tiny, '\0', sizeof tiny));
}
END_TEST

/* ---- the cpu context ---------------------------------------------------------------------- */

static dwconv_context *ctx;

static void setup(void) {
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 0) == DWCONV_SUCCESS);
    ck_assert(ctx);
}

static void teardown(void) { ck_assert(dwconv_context_destroy(ctx) == DWCONV_SUCCESS); }

START_TEST(context_settings) {
    dwconv_backend b = DWCONV_BACKEND_AUTO;
    ck_assert(dwconv_context_backend(ctx, &b) == DWCONV_SUCCESS && b == DWCONV_BACKEND_CPU);
    ck_assert(dwconv_context_backend(NULL, &b) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_context_backend(ctx, NULL) == DWCONV_ERROR_NULL_POINTER);

    ck_assert(dwconv_context_set_threads(ctx, 1) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_set_threads(ctx, 3) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_set_threads(ctx, 0) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_set_threads(ctx, -1) == DWCONV_ERROR_INVALID_VALUE);
    ck_assert(strstr(dwconv_last_error(), "threads"));
    /* counts the OpenMP runtime cannot start (100000 overflowed its stack in 0.1) */
    ck_assert(dwconv_context_set_threads(ctx, DWCONV_MAX_THREADS) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_set_threads(ctx, DWCONV_MAX_THREADS + 1) ==
              DWCONV_ERROR_INVALID_VALUE);
    ck_assert(dwconv_context_set_threads(ctx, 100000) == DWCONV_ERROR_INVALID_VALUE);
    ck_assert(dwconv_context_set_threads(ctx, INT32_MAX) == DWCONV_ERROR_INVALID_VALUE);
    ck_assert_msg(strstr(dwconv_last_error(), "must be in [0, 1024]"), "%s", dwconv_last_error());
    ck_assert(dwconv_context_set_threads(NULL, 1) == DWCONV_ERROR_NULL_POINTER);

    int not_a_stream;
    void *stream = &not_a_stream;
    ck_assert(dwconv_context_set_stream(ctx, &not_a_stream) == DWCONV_ERROR_UNSUPPORTED);
    ck_assert(strstr(dwconv_last_error(), "dwconv_context_set_stream"));
    ck_assert(dwconv_context_set_stream(ctx, NULL) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_get_stream(ctx, &stream) == DWCONV_SUCCESS && stream == NULL);
    ck_assert(dwconv_context_get_stream(ctx, NULL) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_context_get_stream(NULL, &stream) == DWCONV_ERROR_NULL_POINTER);

    ck_assert(dwconv_synchronize(ctx) == DWCONV_SUCCESS);
    ck_assert(dwconv_synchronize(NULL) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_context_destroy(NULL) == DWCONV_SUCCESS);
}
END_TEST

START_TEST(memory) {
    void *p = &p; /* a failed call leaves it as it was */
    ck_assert(dwconv_malloc(ctx, &p, 0) == DWCONV_ERROR_INVALID_VALUE);
    ck_assert(p == &p);
    ck_assert(strstr(dwconv_last_error(), "bytes"));
    ck_assert(dwconv_malloc(ctx, &p, SIZE_MAX) == DWCONV_ERROR_SIZE_OVERFLOW);
    ck_assert(dwconv_malloc(ctx, NULL, 8) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_malloc(NULL, &p, 8) == DWCONV_ERROR_NULL_POINTER);
    const size_t sizes[] = {1, 3, 64, 1000, (size_t)3 << 20}; /* the last spans copy chunks */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        ck_assert(dwconv_malloc(ctx, &p, sizes[i]) == DWCONV_SUCCESS && p);
        ck_assert_msg((uintptr_t)p % 64 == 0, "%zu bytes at %p: not 64-byte aligned", sizes[i], p);
        memset(p, 0x11, sizes[i]); /* all of it is usable */
        ck_assert(dwconv_free(ctx, p) == DWCONV_SUCCESS);
    }
    ck_assert(dwconv_free(ctx, NULL) == DWCONV_SUCCESS);
    ck_assert(dwconv_free(NULL, NULL) == DWCONV_ERROR_NULL_POINTER);
}
END_TEST

/* host -> backend -> backend -> host gives the bytes back; nothing past them moves. */
START_TEST(copies) {
    const size_t n = ((size_t)2 << 20) + 77; /* more than one of the cpu copy's chunks */
    unsigned char *host = malloc(n), *back = malloc(n + 64);
    void *a = NULL, *b = NULL;
    ck_assert(host && back);
    test_rng rng = test_rng_seed(11);
    for (size_t i = 0; i < n; i++) host[i] = (unsigned char)test_rng_next(&rng);
    ck_assert(dwconv_malloc(ctx, &a, n) == DWCONV_SUCCESS);
    ck_assert(dwconv_malloc(ctx, &b, n) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(ctx, a, host, n) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_on_backend(ctx, b, a, n) == DWCONV_SUCCESS);
    test_poison(back, n + 64);
    ck_assert(dwconv_copy_to_host(ctx, back, b, n) == DWCONV_SUCCESS);
    ck_assert(dwconv_synchronize(ctx) == DWCONV_SUCCESS);
    ck_assert_msg(memcmp(host, back, n) == 0, "the round trip changed byte %lld",
                  (long long)test_first_difference(host, back, 1, (int64_t)n));
    ck_assert(test_untouched(back + n, 64));
    /* a size that runs past the end of the address space: refused, nothing copied
     * (0.1 wrapped the pointer addition and reported success) */
    test_poison(back, 64);
    ck_assert(dwconv_copy_to_host(ctx, back, b, SIZE_MAX) == DWCONV_ERROR_SIZE_OVERFLOW);
    ck_assert(dwconv_copy_on_backend(ctx, a, b, SIZE_MAX - 8) == DWCONV_ERROR_SIZE_OVERFLOW);
    ck_assert(test_untouched(back, 64));
    /* zero bytes: nothing to do, even between overlapping places */
    ck_assert(dwconv_copy_on_backend(ctx, a, a, 0) == DWCONV_SUCCESS);
    /* overlap is refused, and nothing moves */
    test_poison(b, n);
    ck_assert(dwconv_copy_on_backend(ctx, b, (unsigned char *)b + 1, 16) == DWCONV_ERROR_ALIASING);
    ck_assert(dwconv_copy_on_backend(ctx, (unsigned char *)b + 8, b, 16) == DWCONV_ERROR_ALIASING);
    ck_assert(dwconv_copy_on_backend(ctx, b, b, 16) == DWCONV_ERROR_ALIASING);
    ck_assert(strstr(dwconv_last_error(), "overlap"));
    ck_assert(dwconv_copy_to_host(ctx, back, back + 4, 8) == DWCONV_ERROR_ALIASING);
    ck_assert(dwconv_copy_to_backend(ctx, b, (unsigned char *)b + 15, 16) == DWCONV_ERROR_ALIASING);
    ck_assert(test_untouched(b, n));
    /* adjacent is not overlapping */
    ck_assert(dwconv_copy_on_backend(ctx, b, (unsigned char *)b + 16, 16) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(NULL, a, host, 8) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_copy_to_backend(ctx, NULL, host, 8) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_copy_to_host(ctx, back, NULL, 8) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_free(ctx, a) == DWCONV_SUCCESS && dwconv_free(ctx, b) == DWCONV_SUCCESS);
    free(host), free(back);
}
END_TEST

/* A copy larger than the last-level cache takes the streaming path (non-temporal
 * stores): still every byte, from any alignment, to any alignment. */
START_TEST(large_copy) {
    long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (llc <= 0) llc = 32l << 20; /* what the library assumes when it cannot ask */
    if (llc > (1l << 30)) {
        printf("large_copy: skipped: a %ld-byte cache makes the copy too large for a test\n", llc);
        return;
    }
    const size_t n = (size_t)llc + ((size_t)1 << 20) + 77;
    unsigned char *src = NULL, *dst = NULL;
    ck_assert(dwconv_malloc(ctx, (void **)&src, n + 16) == DWCONV_SUCCESS);
    ck_assert(dwconv_malloc(ctx, (void **)&dst, n + 16) == DWCONV_SUCCESS);
    for (size_t i = 0; i < n + 16; i++) src[i] = (unsigned char)(i * 131 + (i >> 13));
    const size_t offsets[][2] = {{0, 0}, {3, 0}, {0, 5}, {7, 9}}; /* src, dst */
    for (size_t t = 0; t < sizeof offsets / sizeof offsets[0]; t++) {
        size_t so = offsets[t][0], d = offsets[t][1], len = n - 16;
        test_poison(dst, n + 16);
        ck_assert(dwconv_copy_on_backend(ctx, dst + d, src + so, len) == DWCONV_SUCCESS);
        ck_assert_msg(memcmp(dst + d, src + so, len) == 0, "offsets %zu/%zu: byte %lld differs", so,
                      d, (long long)test_first_difference(dst + d, src + so, 1, (int64_t)len));
        ck_assert(test_untouched(dst, d) && test_untouched(dst + d + len, n + 16 - d - len));
    }
    dwconv_free(ctx, src), dwconv_free(ctx, dst);
}
END_TEST

START_TEST(timer) {
    double ms = -1;
    ck_assert(dwconv_timer_start(ctx) == DWCONV_SUCCESS);
    ck_assert(dwconv_timer_stop(ctx, &ms) == DWCONV_SUCCESS);
    ck_assert_msg(ms >= 0 && ms < 1000, "an empty interval took %g ms", ms);
    /* it measures: a 20 ms sleep between start and stop shows */
    ck_assert(dwconv_timer_start(ctx) == DWCONV_SUCCESS);
    struct timespec pause = {0, 20 * 1000 * 1000};
    while (nanosleep(&pause, &pause) != 0) continue;
    ck_assert(dwconv_timer_stop(ctx, &ms) == DWCONV_SUCCESS);
    ck_assert_msg(ms >= 19.9 && ms < 10000, "a 20 ms sleep measured %g ms", ms);
    ck_assert(dwconv_timer_start(NULL) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_timer_stop(NULL, &ms) == DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_timer_stop(ctx, NULL) == DWCONV_ERROR_NULL_POINTER);
}
END_TEST

/* dwconv_forward on memory from dwconv_malloc, set threads or not: every thread count
 * gives the bits of dwconv_reference_forward. */
START_TEST(forward_on_context_memory) {
    test_rng rng = test_rng_seed(31);
    for (int n = 0; n < 40; n++) {
        dwconv_desc d = test_random_desc(&rng, 300, 8);
        int64_t nx, ny, nw, nb;
        ck_assert(dwconv_desc_sizes(&d, &nx, &ny, &nw, &nb) == DWCONV_SUCCESS);
        size_t bx = test_bytes(d.dtype, nx), by = test_bytes(d.dtype, ny);
        size_t bw = test_bytes(d.weight_dtype, nw), bb = test_bytes(d.weight_dtype, nb);
        void *x, *w, *bias, *y;
        unsigned char *want = malloc(by);
        ck_assert(want);
        ck_assert(dwconv_malloc(ctx, &x, bx) == DWCONV_SUCCESS);
        ck_assert(dwconv_malloc(ctx, &w, bw) == DWCONV_SUCCESS);
        ck_assert(dwconv_malloc(ctx, &bias, bb) == DWCONV_SUCCESS);
        ck_assert(dwconv_malloc(ctx, &y, by) == DWCONV_SUCCESS);
        test_fill_random(&rng, d.dtype, x, nx);
        test_fill_random(&rng, d.weight_dtype, w, nw);
        test_fill_random(&rng, d.weight_dtype, bias, nb);
        ck_assert(dwconv_reference_forward(&d, x, w, bias, want) == DWCONV_SUCCESS);
        for (int threads = 0; threads <= 3; threads++) {
            test_poison(y, by);
            ck_assert(dwconv_context_set_threads(ctx, threads) == DWCONV_SUCCESS);
            ck_assert(dwconv_forward(ctx, &d, x, w, bias, y) == DWCONV_SUCCESS);
            ck_assert(dwconv_synchronize(ctx) == DWCONV_SUCCESS);
            int64_t at = test_first_difference(y, want, dwconv_dtype_size(d.dtype), ny);
            ck_assert_msg(at < 0, "case %d, %d threads: %s: y element %lld differs", n, threads,
                          test_desc_string(&d), (long long)at);
        }
        dwconv_free(ctx, x), dwconv_free(ctx, w), dwconv_free(ctx, bias), dwconv_free(ctx, y);
        free(want);
    }
}
END_TEST

/* Messages stay one line and within their buffer, whatever the input: an
 * environment value with a newline, a span of 2^63 - 1 (its +1 overflowed in 0.1). */
START_TEST(messages_one_line) {
    ck_assert(setenv("DWCONV_BACKEND", "cp\nu\tx", 1) == 0);
    dwconv_context *other = NULL;
    ck_assert(dwconv_context_create(&other, DWCONV_BACKEND_AUTO, 0) == DWCONV_ERROR_INVALID_VALUE);
    unsetenv("DWCONV_BACKEND");
    const char *msg = dwconv_last_error();
    ck_assert_msg(!strchr(msg, '\n') && !strchr(msg, '\t') && strstr(msg, "cp?u?x"), "%s", msg);

    dwconv_desc d;
    dwconv_desc_init(&d, 1, 1, 4, 2);
    d.dilation = INT64_MAX;
    ck_assert(dwconv_desc_resolve(&d, NULL, NULL, NULL) == DWCONV_ERROR_EMPTY_OUTPUT);
    ck_assert_msg(strstr(dwconv_last_error(), "(2^63)"), "%s", dwconv_last_error());
    d.dilation = INT64_MAX / 2, d.kernel_size = 3; /* span 2^63 - 2: its +1 fits */
    ck_assert(dwconv_desc_resolve(&d, NULL, NULL, NULL) == DWCONV_ERROR_EMPTY_OUTPUT);
    ck_assert_msg(strstr(dwconv_last_error(), "9223372036854775807"), "%s", dwconv_last_error());
}
END_TEST

/* A forward in a child forked after a multi-threaded forward returns (OpenMP's
 * threads do not survive fork: 0.1 waited for them forever), with the right bits. */
START_TEST(forward_after_fork) {
    dwconv_desc d;
    dwconv_desc_init(&d, 4, 64, 4096, 3);
    d.pad_left = d.pad_right = 1;
    int64_t nx, ny, nw;
    ck_assert(dwconv_desc_sizes(&d, &nx, &ny, &nw, NULL) == DWCONV_SUCCESS);
    float *x = malloc((size_t)nx * 4), *w = malloc((size_t)nw * 4);
    float *y = malloc((size_t)ny * 4), *want = malloc((size_t)ny * 4);
    ck_assert(x && w && y && want);
    test_rng rng = test_rng_seed(5);
    test_fill_random(&rng, DWCONV_F32, x, nx);
    test_fill_random(&rng, DWCONV_F32, w, nw);
    ck_assert(dwconv_reference_forward(&d, x, w, NULL, want) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_set_threads(ctx, 2) == DWCONV_SUCCESS);
    ck_assert(dwconv_forward(ctx, &d, x, w, NULL, y) == DWCONV_SUCCESS); /* threads start */
    fflush(NULL);
    pid_t child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        test_poison(y, (size_t)ny * 4);
        int ok = dwconv_forward(ctx, &d, x, w, NULL, y) == DWCONV_SUCCESS &&
                 test_first_difference(y, want, 4, ny) < 0;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    pid_t done = 0;
    for (int waited = 0; waited < 200 && !done; waited++) { /* 20 s at most */
        done = waitpid(child, &status, WNOHANG);
        if (!done) usleep(100 * 1000);
    }
    if (!done) kill(child, SIGKILL), waitpid(child, &status, 0);
    ck_assert_msg(done == child, "the forward in the forked child never returned");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the forward in the forked child failed or gave other bits");
    free(x), free(w), free(y), free(want);
}
END_TEST

int main(void) {
    Suite *s = suite_create("api");
    TCase *tc = core_tcase(s, "version", 0, NULL, NULL);
    tcase_add_test(tc, version);

    tc = core_tcase(s, "descriptor", 0, NULL, NULL);
    tcase_add_test(tc, desc_init_defaults);
    tcase_add_test(tc, desc_resolve_presets);
    tcase_add_test(tc, desc_sizes);
    tcase_add_test(tc, dtype_size);

    tc = core_tcase(s, "backend", 0, NULL, NULL);
    tcase_add_test(tc, backend_names);
    tcase_add_test(tc, messages_one_line);
    tcase_add_test(tc, cpu_backend_report);

    tc = core_tcase(s, "cpu_context", 30, setup, teardown);
    tcase_add_test(tc, context_settings);
    tcase_add_test(tc, memory);
    tcase_add_test(tc, copies);
    tcase_add_test(tc, large_copy);
    tcase_add_test(tc, timer);
    tcase_add_test(tc, forward_after_fork);
    tcase_add_test(tc, forward_on_context_memory);
    return core_run(s, 0);
}
