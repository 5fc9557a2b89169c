#include "op_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

dwconv_backend op_backend(void) {
    const char *name = getenv("DWCONV_TEST_BACKEND");
    dwconv_backend b = DWCONV_BACKEND_CPU;
    if (name && *name && dwconv_backend_parse(name, &b) != DWCONV_SUCCESS) {
        fprintf(stderr, "DWCONV_TEST_BACKEND=%s is not a backend name\n", name);
        exit(EXIT_FAILURE);
    }
    return b;
}

int op_backend_usable(char *why, size_t why_size) {
    dwconv_backend b = op_backend();
    snprintf(why, why_size, "ok");
    if (b == DWCONV_BACKEND_CPU) return 1;
    int fds[2];
    if (pipe(fds) != 0) return 0;
    pid_t pid = fork();
    if (pid == 0) { /* the child may start the runtime: it dies right after */
        close(fds[0]);
        dwconv_backend_report r;
        int ok = dwconv_backend_query(b, &r) == DWCONV_SUCCESS && r.device_count > 0;
        ssize_t w = write(fds[1], r.detail, strnlen(r.detail, sizeof r.detail));
        (void)w;
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    ssize_t n = pid > 0 ? read(fds[0], why, why_size - 1) : -1;
    why[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int status = 0;
    if (pid <= 0 || waitpid(pid, &status, 0) != pid) return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

dwconv_context *op_context(void) {
    dwconv_context *ctx = NULL;
    dwconv_status st = dwconv_context_create(&ctx, op_backend(), 0);
    ck_assert_msg(st == DWCONV_SUCCESS, "context on %s: %s", dwconv_backend_name(op_backend()),
                  dwconv_last_error());
    return ctx;
}

int op_run(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- memory with guards ---------------------------------------------------------- */

void *op_put(op_arena *a, const void *host, size_t bytes) {
    ck_assert_msg(a->count < (int)(sizeof a->block / sizeof a->block[0]), "arena full");
    size_t total = bytes + 2 * OP_GUARD;
    char *img = malloc(total), *base = NULL;
    ck_assert(img);
    test_poison(img, total);
    if (host) memcpy(img + OP_GUARD, host, bytes);
    ck_assert_msg(dwconv_malloc(a->ctx, (void **)&base, total) == DWCONV_SUCCESS,
                  "dwconv_malloc(%zu): %s", total, dwconv_last_error());
    ck_assert_msg(dwconv_copy_to_backend(a->ctx, base, img, total) == DWCONV_SUCCESS,
                  "copy to backend: %s", dwconv_last_error());
    free(img);
    a->block[a->count].base = base;
    a->block[a->count].bytes = bytes;
    a->count++;
    return base + OP_GUARD;
}

static int find_block(const op_arena *a, const void *dev) {
    for (int i = 0; i < a->count; i++)
        if (a->block[i].base + OP_GUARD == (const char *)dev) return i;
    ck_abort_msg("not a block of this arena");
    return -1;
}

/* Reads block i whole into a fresh host image, asserting its guards. */
static char *read_block(op_arena *a, int i) {
    size_t total = a->block[i].bytes + 2 * OP_GUARD;
    char *img = malloc(total);
    ck_assert(img);
    ck_assert_msg(dwconv_synchronize(a->ctx) == DWCONV_SUCCESS, "synchronize: %s",
                  dwconv_last_error());
    ck_assert_msg(dwconv_copy_to_host(a->ctx, img, a->block[i].base, total) == DWCONV_SUCCESS,
                  "copy to host: %s", dwconv_last_error());
    ck_assert_msg(test_untouched(img, OP_GUARD) &&
                      test_untouched(img + OP_GUARD + a->block[i].bytes, OP_GUARD),
                  "a guard of block %d (%zu bytes) was written", i, a->block[i].bytes);
    return img;
}

void op_get(op_arena *a, void *host, const void *dev, size_t bytes) {
    int i = find_block(a, dev);
    ck_assert(bytes <= a->block[i].bytes);
    char *img = read_block(a, i);
    memcpy(host, img + OP_GUARD, bytes);
    free(img);
}

void op_release_last(op_arena *a, int n) {
    ck_assert(n <= a->count);
    for (int i = a->count - n; i < a->count; i++) {
        free(read_block(a, i));
        dwconv_free(a->ctx, a->block[i].base);
    }
    a->count -= n;
}

void op_release(op_arena *a) { op_release_last(a, a->count); }

/* ---- elements, by this file's own code ------------------------------------------- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double f16_value(uint16_t h) {
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return sign ? -v : v;
}

double op_decode(dwconv_dtype dtype, const void *data, int64_t i) {
    if (dtype == DWCONV_F32) return ((const float *)data)[i];
    uint16_t h = ((const uint16_t *)data)[i];
    return dtype == DWCONV_BF16 ? bits_f32((uint32_t)h << 16) : f16_value(h);
}

/* f32 to binary16, nearest even: the exact value is compared with its two f16
 * neighbours (float64 holds every f32 and f16 value and their midpoints exactly). */
static uint16_t f16_round(float f) {
    uint16_t sign = (f32_bits(f) >> 16) & 0x8000;
    double a = fabs((double)f);
    if (isnan(f)) return sign | 0x7e00;
    if (a >= 65520.0) return sign | 0x7c00; /* 65504 + half an ulp and up: infinity */
    /* the f16 step at a: 2^-24 below 2^-14, else 2^(e - 10) */
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    double step = a < ldexp(1, -14) ? ldexp(1, -24) : ldexp(1, e - 1 - 10);
    double q = a / step, lo = floor(q); /* exact: step is a power of two */
    double r = q - lo;
    if (r > 0.5 || (r == 0.5 && fmod(lo, 2.0) != 0)) lo += 1;
    double v = lo * step;
    /* re-encode v (a multiple of its step, maybe just past a binade) */
    if (v < ldexp(1, -14)) return sign | (uint16_t)(v / ldexp(1, -24));
    frexp(v, &e);
    int biased = e - 1 + 15;
    uint16_t mant = (uint16_t)(v / ldexp(1, e - 1 - 10) - 1024);
    return sign | (uint16_t)(biased << 10) | mant;
}

static uint16_t bf16_round(float f) {
    uint32_t u = f32_bits(f);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

void op_store_f32(dwconv_dtype dtype, void *data, int64_t i, float v) {
    if (dtype == DWCONV_F32) ((float *)data)[i] = v;
    else ((uint16_t *)data)[i] = dtype == DWCONV_BF16 ? bf16_round(v) : f16_round(v);
}

void op_random_value(test_rng *rng, dwconv_dtype dtype, void *data, int64_t i, int lo, int hi) {
    uint64_t r = test_rng_next(rng);
    int zero = (r & 63) == 0, sign = (r >> 6) & 1;
    int e = (int)test_rng_range(rng, lo, hi - 1); /* value in [2^e, 2^(e+1)) */
    uint32_t mant = (uint32_t)(r >> 8);
    if (dtype == DWCONV_F32) {
        uint32_t u = zero ? 0 : ((uint32_t)(e + 127) << 23) | (mant & 0x7fffff);
        ((float *)data)[i] = bits_f32(u | (uint32_t)sign << 31);
    } else if (dtype == DWCONV_BF16) {
        uint32_t u = zero ? 0 : ((uint32_t)(e + 127) << 7) | (mant & 0x7f);
        ((uint16_t *)data)[i] = (uint16_t)(u | (uint32_t)sign << 15);
    } else {
        uint32_t u = zero ? 0 : ((uint32_t)(e + 15) << 10) | (mant & 0x3ff);
        ((uint16_t *)data)[i] = (uint16_t)(u | (uint32_t)sign << 15);
    }
}

double op_unit_roundoff(dwconv_dtype dtype) {
    return dtype == DWCONV_F32 ? ldexp(1, -24) : dtype == DWCONV_F16 ? ldexp(1, -11) : ldexp(1, -8);
}

double op_tiny(dwconv_dtype dtype) {
    return dtype == DWCONV_F32 ? ldexp(1, -150) : dtype == DWCONV_F16 ? ldexp(1, -25) : ldexp(1, -134);
}

void op_expect_refusal(dwconv_status got, dwconv_status want, const char *who,
                       const char *what) {
    const char *msg = dwconv_last_error();
    ck_assert_msg(got == want, "%s: status %s, expected %s (message: %s)", what,
                  dwconv_status_string(got), dwconv_status_string(want), msg);
    ck_assert_msg(msg && strstr(msg, who), "%s: the message \"%s\" does not name %s", what,
                  msg ? msg : "(null)", who);
    ck_assert_msg(!strchr(msg, '\n'), "%s: the message is not one line: %s", what, msg);
}
