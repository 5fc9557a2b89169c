#include "pair_timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *values, int n) {
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

static dwconv_status timed(dwconv_context *ctx, timed_fn fn, void *arg, double *ms) {
    dwconv_status st = dwconv_timer_start(ctx);
    if (!st) st = fn(arg);
    if (!st) st = dwconv_timer_stop(ctx, ms);
    return st;
}

dwconv_status pair_time(dwconv_context *context, int warmup, int repeat, timed_fn work,
                        void *work_arg, timed_fn copy, void *copy_arg, const char *progress_label,
                        pair_timing *result) {
    int show = progress_label && isatty(STDERR_FILENO);
    double *work_ms = calloc((size_t)repeat, sizeof *work_ms);
    double *copy_ms = calloc((size_t)repeat, sizeof *copy_ms);
    double *ratios = calloc((size_t)repeat, sizeof *ratios);
    dwconv_status st = work_ms && copy_ms && ratios ? DWCONV_SUCCESS : DWCONV_ERROR_OUT_OF_MEMORY;
    for (int i = 0; !st && i < warmup + repeat; i++) {
        double w = 0, c = 0;
        st = timed(context, work, work_arg, &w);
        if (!st) st = timed(context, copy, copy_arg, &c);
        if (!st && i >= warmup) {
            work_ms[i - warmup] = w;
            copy_ms[i - warmup] = c;
            ratios[i - warmup] = c / w;
        }
        if (show) fprintf(stderr, "\r%s: %d/%d%s", progress_label, i + 1, warmup + repeat,
                          i < warmup ? " (warm-up)" : "          ");
    }
    if (show) fprintf(stderr, "\r%*s\r", 60, "");
    if (!st) {
        result->work_ms = median(work_ms, repeat);
        result->copy_ms = median(copy_ms, repeat);
        result->ratio = median(ratios, repeat);
        result->pairs = repeat;
    }
    free(work_ms), free(copy_ms), free(ratios);
    return st;
}
