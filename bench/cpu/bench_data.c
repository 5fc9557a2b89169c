/* The bench's buffers: see bench_data.h. */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_data.h"
#include "dwconv_numerics.h" /* the exact f16/bf16 widening */

enum { CHUNK = 1 << 16 }; /* elements per independently seeded piece */

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Values of magnitude in [2^-7, 1) with random signs, built from bits (no zeros, no
 * rounding question); each chunk seeded by its index, so threads do not matter. */
void bench_fill(void *data, dwconv_dtype dtype, int64_t n, uint64_t seed) {
    const int64_t chunks = (n + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
        uint64_t state = seed * 0x100000001b3ull + (uint64_t)c;
        int64_t end = (c + 1) * CHUNK < n ? (c + 1) * CHUNK : n;
        for (int64_t i = c * CHUNK; i < end; i++) {
            uint64_t r = splitmix(&state);
            uint32_t bits = (uint32_t)(r & 0x807fffffu) | (uint32_t)(120 + (r >> 32) % 7) << 23;
            if (dtype == DWCONV_F32) memcpy((float *)data + i, &bits, 4);
            else if (dtype == DWCONV_BF16) ((uint16_t *)data)[i] = (uint16_t)(bits >> 16);
            else ((uint16_t *)data)[i] = (uint16_t)((r & 0x83ffu) | (8 + (r >> 32) % 7) << 10);
        }
    }
}

static int fail(const char *what) {
    fprintf(stderr, "bench_cpu: %s: %s\n", what, dwconv_last_error());
    return 1;
}

static int allocate(bench_data *b, void **ptr, size_t bytes, const char *what) {
    if (dwconv_malloc(b->ctx, ptr, bytes)) return fail(what);
    memset(*ptr, 0xA5, bytes); /* touched before timing (first touch costs seconds) */
    return 0;
}

int bench_data_make(bench_data *b, dwconv_context *ctx, const dwconv_desc *d, int bias,
                    int check) {
    memset(b, 0, sizeof *b);
    b->ctx = ctx;
    int64_t xn, yn, wn, bn;
    if (dwconv_desc_sizes(d, &xn, &yn, &wn, &bn)) return fail("descriptor");
    size_t es = dwconv_dtype_size(d->dtype), ws = dwconv_dtype_size(d->weight_dtype);
    b->x_bytes = (size_t)xn * es, b->y_bytes = (size_t)yn * es, b->w_bytes = (size_t)wn * ws;
    b->bias_bytes = bias ? (size_t)bn * ws : 0;
    if (allocate(b, &b->x, b->x_bytes, "x") || allocate(b, &b->y, b->y_bytes, "y") ||
        allocate(b, &b->w, b->w_bytes, "weight") ||
        (bias && allocate(b, &b->bias, b->bias_bytes, "bias")))
        return 1;
    bench_fill(b->x, d->dtype, xn, 1), bench_fill(b->w, d->weight_dtype, wn, 2);
    if (bias) bench_fill(b->bias, d->weight_dtype, bn, 3);

    b->copy_bytes = (b->x_bytes + b->y_bytes + b->w_bytes + b->bias_bytes + 1) / 2;
    b->copy_src = b->x, b->copy_dst = b->y;
    if (b->x_bytes < b->copy_bytes && allocate(b, &b->copy_src, b->copy_bytes, "copy source"))
        return 1;
    if (b->y_bytes < b->copy_bytes && allocate(b, &b->copy_dst, b->copy_bytes, "copy target"))
        return 1;
    if (check) {
        b->expected = malloc(b->y_bytes);
        if (!b->expected) return fail("the oracle's output");
        if (dwconv_reference_forward(d, b->x, b->w, b->bias, b->expected)) return fail("oracle");
    }
    return 0;
}

void bench_data_free(bench_data *b) {
    if (b->copy_src != b->x) dwconv_free(b->ctx, b->copy_src);
    if (b->copy_dst != b->y) dwconv_free(b->ctx, b->copy_dst);
    dwconv_free(b->ctx, b->x), dwconv_free(b->ctx, b->y), dwconv_free(b->ctx, b->w);
    dwconv_free(b->ctx, b->bias);
    free(b->expected);
}

int bench_data_check(bench_data *b, const dwconv_desc *d, timed_fn run, void *arg) {
    (void)d;
    memset(b->y, 0xA5, b->y_bytes);
    if (run(arg)) return 0;
    return memcmp(b->y, b->expected, b->y_bytes) == 0;
}

static double value(dwconv_dtype dtype, const void *data, size_t i) {
    if (dtype == DWCONV_F32) return ((const float *)data)[i];
    uint16_t h = ((const uint16_t *)data)[i];
    return dtype == DWCONV_BF16 ? dwconv_bf16_to_f32(h) : dwconv_f16_to_f32(h);
}

double bench_data_error(const bench_data *b, const dwconv_desc *d) {
    size_t n = b->y_bytes / dwconv_dtype_size(d->dtype);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double e = value(d->dtype, b->expected, i), diff = fabs(value(d->dtype, b->y, i) - e);
        if (fabs(e) > scale) scale = fabs(e);
        if (diff > worst) worst = diff;
    }
    return scale > 0 ? worst / scale : worst;
}

void bench_cpu_model(char *model, size_t size) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(model, size, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f) fclose(f);
}

const char *bench_load_average(void) {
    static char text[64] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    double a, b, c;
    if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(text, sizeof text, "%.2f %.2f %.2f", a, b, c);
    if (f) fclose(f);
    return text;
}

double bench_cpu_pressure(void) {
    FILE *f = fopen("/proc/pressure/cpu", "r");
    double some = -1;
    if (f && fscanf(f, "some avg10=%lf", &some) != 1) some = -1;
    if (f) fclose(f);
    return some;
}

enum { QUIET_PRESSURE = 2, DISTURBED_PRESSURE = 10, ATTEMPTS = 3 };

static void wait_quiet(double load) {
    for (int waited = 0; waited < 1800; waited += 10) {
        if (atof(bench_load_average()) < load && bench_cpu_pressure() < QUIET_PRESSURE) return;
        struct timespec ten = {10, 0};
        nanosleep(&ten, NULL);
    }
}

int bench_run_quietly(double load, const char *name, int (*run)(void *), void *arg) {
    int rc = 0;
    for (int attempt = 0; attempt < (load > 0 ? ATTEMPTS : 1); attempt++) {
        if (load > 0) wait_quiet(load);
        if ((rc = run(arg)) || !(load > 0 && bench_cpu_pressure() > DISTURBED_PRESSURE)) break;
        fprintf(stderr, "bench_cpu: %s: another task took a core, again\n", name);
    }
    return rc;
}
