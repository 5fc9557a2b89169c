/* The cpu path's benchmark table (make bench-cpu): the problems issue 3 sets targets
 * for, each timed against a copy of the same bytes in the same run (pairs, median of
 * the per-pair ratios: tools/pair_timing.c) and, when configure found oneDNN, against
 * oneDNN on the same data in the same run. Every result is first checked against the
 * scalar oracle bit for bit. Prints a markdown table for bench/RESULTS-cpu.md, then
 * the backward pass's and the causal operations' table (bench_train_serve.c). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_data.h"
#include "bench_train_serve.h"
#include "dwconv.h"
#include "onednn.h"
#include "pair_timing.h"

typedef struct bench_case {
    const char *name;
    int64_t batch, channels, length, kernel_size, stride, dilation, pad;
    dwconv_padding padding;
    dwconv_layout layout;
    dwconv_dtype dtype;
    dwconv_activation activation;
    int bias;
    int threads;     /* 0: the --threads value */
    double of_copy;  /* target fraction of the copy; 0: none */
    double vs_blocked; /* target speed-up over oneDNN's blocked primitive; 0: none */
} bench_case;

#define NCL DWCONV_LAYOUT_NCL
#define NLC DWCONV_LAYOUT_NLC
#define EXPLICIT DWCONV_PADDING_EXPLICIT
static const bench_case cases[] = {
    {"reference f32", 32, 512, 8192, 3, 1, 1, 1, EXPLICIT, NCL, DWCONV_F32, DWCONV_ACT_NONE, 0, 0, 0.95, 0},
    {"reference f32, 1 thread", 32, 512, 8192, 3, 1, 1, 1, EXPLICIT, NCL, DWCONV_F32, DWCONV_ACT_NONE, 0, 1, 0.95, 0},
    {"bf16", 32, 512, 8192, 3, 1, 1, 1, EXPLICIT, NCL, DWCONV_BF16, DWCONV_ACT_NONE, 0, 0, 0.85, 0},
    {"NLC f32", 32, 512, 8192, 3, 1, 1, 1, EXPLICIT, NLC, DWCONV_F32, DWCONV_ACT_NONE, 0, 0, 0.85, 0},
    {"stride 2", 32, 512, 8192, 3, 2, 1, 1, EXPLICIT, NCL, DWCONV_F32, DWCONV_ACT_NONE, 0, 0, 0.85, 0},
    {"dilation 4", 32, 512, 8192, 3, 1, 4, 4, EXPLICIT, NCL, DWCONV_F32, DWCONV_ACT_NONE, 0, 0, 0.85, 0},
    {"causal K4 silu, bias", 32, 512, 8192, 4, 1, 1, 0, DWCONV_PADDING_CAUSAL, NCL, DWCONV_F32, DWCONV_ACT_SILU, 1, 0, 0.85, 0},
    {"K31 (4x512x8192, pad 15)", 4, 512, 8192, 31, 1, 1, 15, EXPLICIT, NCL, DWCONV_F32, DWCONV_ACT_NONE, 0, 0, 0, 1.5},
    {"small 1x64x4096 (cache)", 1, 64, 4096, 3, 1, 1, 1, EXPLICIT, NCL, DWCONV_F32, DWCONV_ACT_NONE, 0, 0, 0, 0},
};
enum { CASES = sizeof cases / sizeof cases[0] };

typedef struct options {
    int threads, repeat, warmup, check, onednn;
    const char *only;  /* run the cases whose name contains this */
    double wait_quiet; /* > 0: before each case, wait until the load average is below it */
} options;

typedef struct result {
    pair_timing dwconv, plain, blocked, reordered;
    char plain_impl[96], blocked_impl[96], plain_why[128], blocked_why[128];
    int bitwise; /* -1: not checked */
    double onednn_error; /* max |oneDNN - oracle| / max |oracle| */
} result;

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--threads N (2)] [--repeat N (30)] [--warmup N (3)] [--case TEXT]\n"
            "          [--no-check] [--no-onednn] [--wait-quiet LOAD]\n"
            "--wait-quiet: on a shared machine, start each case only once the 1-minute load\n"
            "average is below LOAD and no task waits for a core (30 minutes at most), and\n"
            "run it again (three times at most) when another task took a core meanwhile\n",
            argv0);
    return 2;
}

static int parse(int argc, char **argv, options *o) {
    *o = (options){.threads = 2, .repeat = 30, .warmup = 3, .check = 1, .onednn = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-check")) o->check = 0;
        else if (!strcmp(a, "--no-onednn")) o->onednn = 0;
        else if (v && !strcmp(a, "--threads")) o->threads = atoi(v), i++;
        else if (v && !strcmp(a, "--repeat")) o->repeat = atoi(v), i++;
        else if (v && !strcmp(a, "--warmup")) o->warmup = atoi(v), i++;
        else if (v && !strcmp(a, "--case")) o->only = v, i++;
        else if (v && !strcmp(a, "--wait-quiet")) o->wait_quiet = atof(v), i++;
        else return usage(argv[0]);
    }
    return o->threads < 1 || o->repeat < 1 || o->warmup < 0 ? usage(argv[0]) : 0;
}

static dwconv_desc desc_of(const bench_case *c) {
    dwconv_desc d;
    dwconv_desc_init(&d, c->batch, c->channels, c->length, c->kernel_size);
    d.stride = c->stride, d.dilation = c->dilation;
    d.padding = c->padding;
    if (c->padding == EXPLICIT) d.pad_left = d.pad_right = c->pad;
    d.layout = c->layout;
    d.dtype = d.weight_dtype = c->dtype;
    d.activation = c->activation;
    return d;
}

/* ---- timing one problem ---- */

typedef struct forward_args {
    dwconv_context *ctx;
    const dwconv_desc *desc;
    bench_data *data;
} forward_args;

static dwconv_status run_forward(void *arg) {
    forward_args *f = arg;
    return dwconv_forward(f->ctx, f->desc, f->data->x, f->data->w, f->data->bias, f->data->y);
}

static dwconv_status run_copy(void *arg) {
    bench_data *b = arg;
    return dwconv_copy_on_backend(b->ctx, b->copy_dst, b->copy_src, b->copy_bytes);
}

/* One untimed-as-a-pair call, in ms: how many repetitions fit. */
static double one_call_ms(onednn_problem *p) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    onednn_run(p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return 1e3 * (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (double)(t1.tv_nsec - t0.tv_nsec);
}

/* oneDNN's reference kernels take seconds per call: as many pairs as fit in about ten
 * seconds (at least three), and beyond two seconds a call, that one call. */
static int time_one(const options *o, bench_data *b, onednn_problem *p, pair_timing *t) {
    double ms = one_call_ms(p);
    if (ms > 2000) {
        *t = (pair_timing){.work_ms = ms, .pairs = 1};
        return 0;
    }
    int fit = (int)(1e4 / (ms > 1e-3 ? ms : 1e-3));
    int repeat = fit < 3 ? 3 : fit < o->repeat ? fit : o->repeat;
    return pair_time(b->ctx, o->warmup, repeat, onednn_run, p, run_copy, b, "oneDNN", t);
}

/* oneDNN in one mode, stated as 1-D and as 2-D images of height 1: the faster is
 * kept, each timed against the same copy; error: its output against the oracle. */
static void time_onednn(const options *o, const dwconv_desc *d, bench_data *b, onednn_mode mode,
                        pair_timing *best, char *impl, size_t impl_size, char *why,
                        size_t why_size, double *error) {
    int64_t pl, pr;
    dwconv_desc_resolve(d, &pl, &pr, NULL);
    for (int as_2d = 0; as_2d < 2; as_2d++) {
        onednn_problem *p = onednn_create(d, pl, pr, mode, as_2d, b->x, b->w, b->bias, b->y,
                                          why, why_size);
        if (!p) continue;
        pair_timing t = {0};
        if (time_one(o, b, p, &t) == 0 &&
            (!best->pairs || t.work_ms < best->work_ms)) {
            *best = t;
            snprintf(impl, impl_size, "%s, %s", onednn_impl(p), as_2d ? "2-D" : "1-D");
        }
        if (error && b->expected) {
            double e = bench_data_error(b, d);
            if (e > *error) *error = e;
        }
        onednn_destroy(p);
    }
}

static int run_case(const options *o, const bench_case *c, dwconv_context *ctx, result *r) {
    dwconv_desc d = desc_of(c);
    int threads = c->threads ? c->threads : o->threads;
    memset(r, 0, sizeof *r);
    r->bitwise = -1;
    r->onednn_error = 0;
#ifdef _OPENMP
    omp_set_num_threads(threads); /* oneDNN runs on OpenMP's default */
#endif
    if (dwconv_context_set_threads(ctx, threads)) return 1;
    bench_data b;
    if (bench_data_make(&b, ctx, &d, c->bias, o->check)) return 1;
    forward_args f = {ctx, &d, &b};
    if (o->check) r->bitwise = bench_data_check(&b, &d, run_forward, &f);
    int rc = pair_time(ctx, o->warmup, o->repeat, run_forward, &f, run_copy, &b, c->name, &r->dwconv) != 0;
    if (!rc && o->onednn && onednn_available()) {
        char ignored[96];
        time_onednn(o, &d, &b, ONEDNN_PLAIN, &r->plain, r->plain_impl, sizeof r->plain_impl,
                    r->plain_why, sizeof r->plain_why, &r->onednn_error);
        time_onednn(o, &d, &b, ONEDNN_BLOCKED, &r->blocked, r->blocked_impl,
                    sizeof r->blocked_impl, r->blocked_why, sizeof r->blocked_why, NULL);
        time_onednn(o, &d, &b, ONEDNN_BLOCKED_REORDERS, &r->reordered, ignored, sizeof ignored,
                    r->blocked_why, sizeof r->blocked_why, NULL);
    }
    bench_data_free(&b);
    return rc;
}

/* ---- the table ---- */

static void print_header(const options *o, int argc, char **argv) {
    char when[64], model[128] = "?";
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M %Z", localtime(&now));
    bench_cpu_model(model, sizeof model);
    printf("dwconv cpu benchmark, %s\n", when);
    printf("command: ");
    for (int i = 0; i < argc; i++) printf("%s%s", argv[i], i + 1 < argc ? " " : "\n");
    printf("machine: %s; simd flavour: ", model);
    char device[128] = "";
    dwconv_device_name(DWCONV_BACKEND_CPU, 0, device, sizeof device);
    printf("%s; threads %d unless said; %d timed pairs after %d warm-up\n", device, o->threads,
           o->repeat, o->warmup);
    printf("load average at start: %s; the last column, after each row: load average and the\n"
           "share of the last 10 s some task waited for a core (/proc/pressure/cpu)\n\n",
           bench_load_average());
    printf("| problem | dwconv ms | GB/s | of copy (target) | GFLOP/s | oneDNN plain ms | "
           "oneDNN blocked ms | blocked + reorders ms | vs plain | vs blocked (target) | "
           "oracle | load |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

static void print_row(const bench_case *c, const result *r, int threads) {
    dwconv_desc d = desc_of(c);
    int64_t xn, yn, wn, L_out;
    dwconv_desc_sizes(&d, &xn, &yn, &wn, NULL);
    dwconv_desc_resolve(&d, NULL, NULL, &L_out);
    size_t es = dwconv_dtype_size(d.dtype);
    double bytes = (double)((size_t)(xn + yn) * es + (size_t)wn * es + (c->bias ? (size_t)c->channels * es : 0));
    double ms = r->dwconv.work_ms;
    double flops = 2.0 * (double)d.batch * (double)d.channels * (double)L_out * (double)d.kernel_size;
    printf("| %s%s | %.3f | %.1f | %.3f", c->name, threads == 1 && !strstr(c->name, "thread") ? ", 1 thread" : "",
           ms, bytes / (ms * 1e6), r->dwconv.ratio);
    if (c->of_copy > 0) printf(" (%.2f: %s)", c->of_copy, r->dwconv.ratio >= c->of_copy ? "met" : "missed");
    printf(" | %.1f", flops / (ms * 1e6));
    if (r->plain.pairs) printf(" | %.3f (%s)", r->plain.work_ms, r->plain_impl);
    else printf(" | %s", r->plain_why[0] ? r->plain_why : "-");
    if (r->blocked.pairs) printf(" | %.3f (%s)", r->blocked.work_ms, r->blocked_impl);
    else printf(" | %s", r->blocked_why[0] ? r->blocked_why : "-");
    if (r->reordered.pairs) printf(" | %.3f", r->reordered.work_ms);
    else printf(" | -");
    if (r->plain.pairs) printf(" | %.1fx (3x: %s)", r->plain.work_ms / ms, r->plain.work_ms >= 3 * ms ? "met" : "missed");
    else printf(" | -");
    if (r->blocked.pairs) {
        printf(" | %.2fx", r->blocked.work_ms / ms);
        if (c->vs_blocked > 0)
            printf(" (%.1fx: %s)", c->vs_blocked, r->blocked.work_ms >= c->vs_blocked * ms ? "met" : "missed");
    } else {
        printf(" | -");
    }
    printf(" | %s", r->bitwise < 0 ? "not checked" : r->bitwise ? "bitwise equal" : "DIFFERENT");
    if (r->plain.pairs) printf("; oneDNN within %.1e", r->onednn_error);
    printf(" | %s; %.1f%% |\n", bench_load_average(), bench_cpu_pressure());
    fflush(stdout);
}

/* One case's run, for bench_run_quietly. */
typedef struct case_run {
    const options *o;
    const bench_case *c;
    dwconv_context *ctx;
    result *r;
} case_run;

static int run_case_quietly(void *arg) {
    const case_run *cr = arg;
    return run_case(cr->o, cr->c, cr->ctx, cr->r);
}

int main(int argc, char **argv) {
    options o;
    if (parse(argc, argv, &o)) return 2;
    dwconv_context *ctx;
    if (dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 0)) {
        fprintf(stderr, "bench_cpu: %s\n", dwconv_last_error());
        return 1;
    }
    print_header(&o, argc, argv);
    int failed = 0;
    for (int i = 0; i < CASES; i++) {
        if (o.only && !strstr(cases[i].name, o.only)) continue;
        result r;
        case_run cr = {&o, &cases[i], ctx, &r};
        if (bench_run_quietly(o.wait_quiet, cases[i].name, run_case_quietly, &cr)) {
            fprintf(stderr, "bench_cpu: %s: %s\n", cases[i].name, dwconv_last_error());
            failed = 1;
            continue;
        }
        print_row(&cases[i], &r, cases[i].threads ? cases[i].threads : o.threads);
        failed |= r.bitwise == 0;
    }
    failed |= bench_train_serve(ctx, o.threads, o.warmup, o.repeat, o.check, o.only, o.wait_quiet);
    printf("\nload average at end: %s\n", bench_load_average());
    dwconv_context_destroy(ctx);
    return failed;
}
