/* dwconv bench: one convolution, timed against a copy of the same bytes on the same
 * backend (pairs: the ratio is what travels between machines), its result checked
 * bit for bit against the scalar oracle before anything is timed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_options.h"
#include "json_out.h"
#include "pair_timing.h"
#include "tool.h"

typedef struct tensor {
    void *host;   /* the data as generated */
    void *device; /* the backend's copy */
    size_t bytes;
} tensor;

typedef struct bench_run {
    bench_options opt;
    dwconv_context *ctx;
    dwconv_backend backend;
    int64_t pad_left, pad_right, output_length;
    tensor x, w, bias, y;
    void *copy_src, *copy_dst; /* the copy's buffers: x and y when they are large enough */
    size_t copy_bytes;
    int own_copy_src, own_copy_dst;
    double max_abs_err;
    int bitwise_equal;
    int64_t mismatches;
} bench_run;

/* ---- data ---- */

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float load_value(dwconv_dtype dtype, const void *data, size_t i) {
    if (dtype == DWCONV_F32) return ((const float *)data)[i];
    uint16_t h = ((const uint16_t *)data)[i];
    if (dtype == DWCONV_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    /* f16: exact through ldexp */
    int e = (h >> 10) & 31, m = h & 1023;
    float mag = e == 31 ? (m ? NAN : INFINITY) : e ? ldexpf((float)(m | 1024), e - 25)
                                                   : ldexpf((float)m, -24);
    return h & 0x8000 ? -mag : mag;
}

/* Uniform values in (-1, 1), never zero-heavy, in any dtype. Values are built from
 * their bits so that no rounding question arises: 1.m * 2^-e with a random sign. */
static void fill_random(uint64_t *state, dwconv_dtype dtype, void *data, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next_random(state);
        if (dtype == DWCONV_F32) {
            uint32_t bits = (uint32_t)(r & 0x807fffffu) | ((uint32_t)(120 + (r >> 32) % 7) << 23);
            memcpy((float *)data + i, &bits, 4);
        } else if (dtype == DWCONV_BF16) {
            ((uint16_t *)data)[i] = (uint16_t)((r & 0x807f) | ((120 + (r >> 32) % 7) << 7));
        } else {
            ((uint16_t *)data)[i] = (uint16_t)((r & 0x83ff) | ((8 + (r >> 32) % 7) << 10));
        }
    }
}

static int fail(bench_run *run, const char *what) {
    fprintf(stderr, "dwconv bench: %s: %s\n", what, dwconv_last_error());
    (void)run;
    return 1;
}

static int make_tensor(bench_run *run, tensor *t, size_t bytes, dwconv_dtype dtype,
                       uint64_t *seed, const char *name) {
    t->bytes = bytes;
    t->host = malloc(bytes);
    if (!t->host) {
        fprintf(stderr, "dwconv bench: cannot allocate %zu bytes of host memory for %s\n", bytes, name);
        return 1;
    }
    if (dwconv_malloc(run->ctx, &t->device, bytes)) return fail(run, name);
    if (dtype != (dwconv_dtype)-1) {
        fill_random(seed, dtype, t->host, bytes / dwconv_dtype_size(dtype));
        if (dwconv_copy_to_backend(run->ctx, t->device, t->host, bytes)) return fail(run, name);
    }
    return 0;
}

static void free_tensor(dwconv_context *ctx, tensor *t) {
    free(t->host);
    if (ctx) dwconv_free(ctx, t->device);
}

/* ---- the work being timed ---- */

static dwconv_status run_forward(void *arg) {
    bench_run *r = arg;
    return dwconv_forward(r->ctx, &r->opt.desc, r->x.device, r->w.device,
                          r->opt.bias ? r->bias.device : NULL, r->y.device);
}

static dwconv_status run_copy(void *arg) {
    bench_run *r = arg;
    return dwconv_copy_on_backend(r->ctx, r->copy_dst, r->copy_src, r->copy_bytes);
}

/* ---- setup, check, report ---- */

static int setup(bench_run *r) {
    const dwconv_desc *d = &r->opt.desc;
    int64_t xn, yn, wn, bn;
    /* The flags describe the problem and the thread count: refusals are usage errors (2). */
    if (dwconv_desc_resolve(d, &r->pad_left, &r->pad_right, &r->output_length) ||
        dwconv_desc_sizes(d, &xn, &yn, &wn, &bn)) {
        fail(r, "invalid problem");
        return 2;
    }
    if (dwconv_context_create(&r->ctx, r->opt.backend, r->opt.device)) return fail(r, "backend");
    dwconv_context_backend(r->ctx, &r->backend);
    if (r->opt.threads && dwconv_context_set_threads(r->ctx, r->opt.threads)) {
        fail(r, "--threads");
        return 2;
    }
    uint64_t seed = r->opt.seed;
    size_t es = dwconv_dtype_size(d->dtype), ws = dwconv_dtype_size(d->weight_dtype);
    if (make_tensor(r, &r->x, (size_t)xn * es, d->dtype, &seed, "x") ||
        make_tensor(r, &r->w, (size_t)wn * ws, d->weight_dtype, &seed, "weight") ||
        (r->opt.bias && make_tensor(r, &r->bias, (size_t)bn * ws, d->weight_dtype, &seed, "bias")) ||
        make_tensor(r, &r->y, (size_t)yn * es, (dwconv_dtype)-1, &seed, "y"))
        return 1;
    /* The ceiling moves the same bytes: half read, half written. */
    size_t moved = r->x.bytes + r->y.bytes + r->w.bytes + r->bias.bytes;
    r->copy_bytes = (moved + 1) / 2;
    r->copy_src = r->x.device, r->copy_dst = r->y.device;
    if (r->x.bytes < r->copy_bytes) {
        if (dwconv_malloc(r->ctx, &r->copy_src, r->copy_bytes)) return fail(r, "copy source");
        r->own_copy_src = 1;
        if (dwconv_copy_on_backend(r->ctx, r->copy_src, r->x.device, r->x.bytes))
            return fail(r, "copy source");
    }
    if (r->y.bytes < r->copy_bytes) {
        if (dwconv_malloc(r->ctx, &r->copy_dst, r->copy_bytes)) return fail(r, "copy target");
        r->own_copy_dst = 1;
    }
    return 0;
}

/* y is poisoned, computed once, and compared with the oracle bit for bit. */
static int check(bench_run *r) {
    const dwconv_desc *d = &r->opt.desc;
    size_t n = r->y.bytes / dwconv_dtype_size(d->dtype);
    void *expected = malloc(r->y.bytes);
    if (!expected) {
        fprintf(stderr, "dwconv bench: no host memory for the oracle's output\n");
        return 1;
    }
    memset(r->y.host, 0xA5, r->y.bytes);
    int rc = 0;
    if (dwconv_copy_to_backend(r->ctx, r->y.device, r->y.host, r->y.bytes) || run_forward(r) ||
        dwconv_synchronize(r->ctx) || dwconv_copy_to_host(r->ctx, r->y.host, r->y.device, r->y.bytes))
        rc = fail(r, "checked run");
    if (!rc && isatty(STDERR_FILENO)) fprintf(stderr, "checking against the scalar oracle...");
    if (!rc && dwconv_reference_forward(d, r->x.host, r->w.host, r->opt.bias ? r->bias.host : NULL,
                                        expected))
        rc = fail(r, "oracle");
    if (!rc && isatty(STDERR_FILENO)) fprintf(stderr, "\r%40s\r", "");
    if (!rc) {
        size_t es = dwconv_dtype_size(d->dtype);
        r->max_abs_err = 0;
        r->mismatches = 0;
        for (size_t i = 0; i < n; i++) {
            if (memcmp((char *)r->y.host + i * es, (char *)expected + i * es, es) == 0) continue;
            r->mismatches++;
            double err = fabs((double)load_value(d->dtype, r->y.host, i) -
                              (double)load_value(d->dtype, expected, i));
            if (!(err <= r->max_abs_err)) r->max_abs_err = err; /* NaN wins */
        }
        r->bitwise_equal = r->mismatches == 0;
    }
    free(expected);
    return rc;
}

/* One JSON object on one line: names and strings escaped, numbers that are not finite
 * (a NaN error, a zero time) written as null. */
static void report_json(const bench_run *r, const pair_timing *t, double bytes, double gbs,
                        double copy_gbs, const char *device) {
    const dwconv_desc *d = &r->opt.desc;
    printf("{\"backend\": ");
    json_string(stdout, dwconv_backend_name(r->backend));
    printf(", \"device\": ");
    json_string(stdout, device);
    printf(", \"batch\": %lld, \"channels\": %lld, \"length\": %lld, \"kernel_size\": %lld, "
           "\"stride\": %lld, \"dilation\": %lld, \"padding\": \"%s\", \"pad_left\": %lld, "
           "\"pad_right\": %lld, \"padding_mode\": \"%s\", \"layout\": \"%s\", \"dtype\": \"%s\", "
           "\"weight_dtype\": \"%s\", \"bias\": %s, \"activation\": \"%s\", "
           "\"output_length\": %lld, \"threads\": %d, \"repeat\": %d, \"bytes\": %.0f",
           (long long)d->batch, (long long)d->channels, (long long)d->length,
           (long long)d->kernel_size, (long long)d->stride, (long long)d->dilation,
           name_of_padding(d->padding), (long long)r->pad_left, (long long)r->pad_right,
           name_of_padding_mode(d->padding_mode), name_of_layout(d->layout),
           name_of_dtype(d->dtype), name_of_dtype(d->weight_dtype), r->opt.bias ? "true" : "false",
           name_of_activation(d->activation), (long long)r->output_length, r->opt.threads,
           t->pairs, bytes);
    printf(", \"median_ms\": "), json_number(stdout, "%.6f", t->work_ms);
    printf(", \"gb_per_s\": "), json_number(stdout, "%.3f", gbs);
    printf(", \"copy_median_ms\": "), json_number(stdout, "%.6f", t->copy_ms);
    printf(", \"copy_gb_per_s\": "), json_number(stdout, "%.3f", copy_gbs);
    printf(", \"fraction_of_copy\": "), json_number(stdout, "%.4f", t->ratio);
    printf(", \"checked\": %s, \"max_abs_err\": ", r->opt.check ? "true" : "false");
    /* null when unchecked, or when the error is not a number (bitwise_equal says false) */
    json_number(stdout, "%g", r->opt.check ? r->max_abs_err : NAN);
    printf(", \"bitwise_equal\": %s}\n",
           !r->opt.check ? "null" : r->bitwise_equal ? "true" : "false");
}

static void report(const bench_run *r, const pair_timing *t) {
    const dwconv_desc *d = &r->opt.desc;
    double bytes = (double)(r->x.bytes + r->y.bytes + r->w.bytes + r->bias.bytes);
    double gbs = bytes / (t->work_ms * 1e6), copy_gbs = 2.0 * (double)r->copy_bytes / (t->copy_ms * 1e6);
    char device[256] = "";
    dwconv_device_name(r->backend, r->opt.device, device, sizeof device);
    if (r->opt.json) {
        report_json(r, t, bytes, gbs, copy_gbs, device);
        return;
    }
    printf("dwconv bench on %s (%s)\n", dwconv_backend_name(r->backend), device);
    printf("  problem   x %lldx%lldx%lld %s %s, K %lld, stride %lld, dilation %lld, pad %lld/%lld "
           "%s (%s), bias %s, activation %s -> L_out %lld\n",
           (long long)d->batch, (long long)d->channels, (long long)d->length,
           name_of_layout(d->layout), name_of_dtype(d->dtype), (long long)d->kernel_size,
           (long long)d->stride, (long long)d->dilation, (long long)r->pad_left,
           (long long)r->pad_right, name_of_padding_mode(d->padding_mode),
           name_of_padding(d->padding), r->opt.bias ? "yes" : "no",
           name_of_activation(d->activation), (long long)r->output_length);
    printf("  median    %.4f ms over %d repetitions, %.1f GB/s (%.1f MB moved)\n", t->work_ms,
           t->pairs, gbs, bytes / 1e6);
    printf("  copy      %.4f ms, %.1f GB/s (same bytes, same backend, paired)\n", t->copy_ms, copy_gbs);
    printf("  fraction  %.3f of the copy (median of per-pair ratios)\n", t->ratio);
    if (r->opt.check)
        printf("  oracle    %s (max abs err %g, %lld elements differ)\n",
               r->bitwise_equal ? "bitwise equal" : "DIFFERENT", r->max_abs_err,
               (long long)r->mismatches);
    else
        printf("  oracle    not checked (--no-check)\n");
}

static void teardown(bench_run *r) {
    if (r->own_copy_src) dwconv_free(r->ctx, r->copy_src);
    if (r->own_copy_dst) dwconv_free(r->ctx, r->copy_dst);
    free_tensor(r->ctx, &r->x), free_tensor(r->ctx, &r->w), free_tensor(r->ctx, &r->bias),
        free_tensor(r->ctx, &r->y);
    dwconv_context_destroy(r->ctx);
}

int cmd_bench(int argc, char **argv) {
    bench_run r;
    memset(&r, 0, sizeof r);
    int rc = bench_parse(argc, argv, &r.opt);
    if (rc) return rc == 1 ? 0 : 2;
    rc = setup(&r);
    if (!rc && r.opt.check) rc = check(&r);
    pair_timing t = {0};
    if (!rc && pair_time(r.ctx, r.opt.warmup, r.opt.repeat, run_forward, &r, run_copy, &r,
                         "dwconv bench", &t))
        rc = fail(&r, "timed run");
    if (!rc) report(&r, &t);
    if (!rc && r.opt.check && !r.bitwise_equal) {
        fprintf(stderr, "dwconv bench: the result differs from the scalar oracle\n");
        rc = 1;
    }
    teardown(&r);
    return rc;
}
