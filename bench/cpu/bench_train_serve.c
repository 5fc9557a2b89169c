/* The cpu benchmark's second table: the backward pass, the decode update and the
 * prefill with carried states, each timed against a copy of the bytes it must move
 * (read and written once) in the same run, as the forward's table is. Each result is
 * first checked bit for bit against an oracle: dwconv_reference_backward, or, for
 * the causal operations, dwconv_reference_forward over each sequence's history and
 * new inputs laid end to end (a causal output is a valid-padding output there). */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_data.h"
#include "bench_train_serve.h"

typedef enum { BACKWARD, DECODE, PREFILL } operation;

typedef struct serve_case {
    const char *name;
    operation op;
    int64_t batch, channels, length, kernel_size;
    dwconv_activation activation;
    int bias;
    double of_copy; /* target fraction of the copy; 0: none */
} serve_case;

static const serve_case cases[] = {
    {"backward 8x64x8192 K3 pad 1, dx + dweight", BACKWARD, 8, 64, 8192, 3, DWCONV_ACT_NONE, 0, 0.8},
    {"backward 8x64x8192 K3 pad 1 silu, dx + dweight + dbias", BACKWARD, 8, 64, 8192, 3, DWCONV_ACT_SILU, 1, 0},
    {"backward 32x512x8192 K3 pad 1, dx + dweight", BACKWARD, 32, 512, 8192, 3, DWCONV_ACT_NONE, 0, 0},
    {"backward 4x512x8192 K31 pad 15, dx + dweight", BACKWARD, 4, 512, 8192, 31, DWCONV_ACT_NONE, 0, 0},
    {"decode B64 C5120 K4, 1 token", DECODE, 64, 5120, 1, 4, DWCONV_ACT_NONE, 0, 0.8},
    {"decode B64 C5120 K4 silu, bias, 1 token", DECODE, 64, 5120, 1, 4, DWCONV_ACT_SILU, 1, 0},
    {"prefill with states 8x512x4096 K4 silu, bias", PREFILL, 8, 512, 4096, 4, DWCONV_ACT_SILU, 1, 0},
};
enum { CASES = sizeof cases / sizeof cases[0] };

typedef struct serve_data {
    dwconv_context *ctx;
    dwconv_desc desc;
    const serve_case *c;
    void *x, *w, *bias, *dy, *dx, *dw, *state, *final, *y;
    size_t x_bytes, y_bytes, state_bytes;
    void *copy_src, *copy_dst;
    size_t copy_bytes;
} serve_data;

static dwconv_status run_case(void *arg) {
    serve_data *s = arg;
    const dwconv_desc *d = &s->desc;
    switch (s->c->op) {
    case BACKWARD:
        return dwconv_backward(s->ctx, d, s->x, s->w, s->bias, s->dy, s->dx, s->dw,
                               s->c->bias ? (float *)s->dw + d->channels * d->kernel_size : NULL);
    case DECODE:
        return dwconv_causal_update(s->ctx, d, s->x, s->state, d->batch, d->kernel_size - 1, s->w,
                                    s->bias, NULL, NULL, s->y);
    default:
        return dwconv_causal_forward(s->ctx, d, s->x, s->w, s->bias, s->state, s->final, s->y);
    }
}

static dwconv_status run_copy(void *arg) {
    serve_data *s = arg;
    return dwconv_copy_on_backend(s->ctx, s->copy_dst, s->copy_src, s->copy_bytes);
}

static void *buffer(serve_data *s, size_t bytes, uint64_t seed) {
    void *p = NULL;
    if (dwconv_malloc(s->ctx, &p, bytes)) return NULL;
    bench_fill(p, DWCONV_F32, (int64_t)(bytes / 4), seed);
    return p;
}

/* The oracle's view of a causal case: per sequence, its state then its new inputs. */
static int check_causal(serve_data *s, const void *state_before) {
    const dwconv_desc *d = &s->desc;
    const int64_t B = d->batch, C = d->channels, L = d->length, S = d->kernel_size - 1;
    float *joined = malloc(sizeof(float) * (size_t)(B * C * (S + L)));
    float *y = malloc(s->y_bytes);
    if (!joined || !y) return free(joined), free(y), 0;
    for (int64_t r = 0; r < B * C; r++) {
        memcpy(joined + r * (S + L), (const float *)state_before + r * S, sizeof(float) * (size_t)S);
        memcpy(joined + r * (S + L) + S, (const float *)s->x + r * L, sizeof(float) * (size_t)L);
    }
    dwconv_desc valid = *d;
    valid.length = S + L;
    valid.padding = DWCONV_PADDING_EXPLICIT;
    valid.pad_left = valid.pad_right = 0;
    int ok = dwconv_reference_forward(&valid, joined, s->w, s->bias, y) == DWCONV_SUCCESS &&
             memcmp(y, s->y, s->y_bytes) == 0;
    const float *after = s->c->op == DECODE ? s->state : s->final;
    for (int64_t r = 0; ok && r < B * C; r++) /* the new state: the last S inputs */
        ok = memcmp(after + r * S, joined + r * (S + L) + L, sizeof(float) * (size_t)S) == 0;
    free(joined), free(y);
    return ok;
}

static int check_backward(serve_data *s) {
    const dwconv_desc *d = &s->desc;
    size_t dw_bytes = sizeof(float) * (size_t)(d->channels * d->kernel_size);
    float *dx = malloc(s->x_bytes), *dw = malloc(dw_bytes);
    int ok = dx && dw &&
             dwconv_reference_backward(d, s->x, s->w, s->bias, s->dy, dx, dw, NULL) == DWCONV_SUCCESS &&
             run_case(s) == DWCONV_SUCCESS && memcmp(dx, s->dx, s->x_bytes) == 0 &&
             memcmp(dw, s->dw, dw_bytes) == 0;
    free(dx), free(dw);
    return ok;
}

static int prepare(serve_data *s, dwconv_context *ctx, const serve_case *c) {
    memset(s, 0, sizeof *s);
    s->ctx = ctx, s->c = c;
    dwconv_desc_init(&s->desc, c->batch, c->channels, c->length, c->kernel_size);
    s->desc.activation = c->activation;
    if (c->op == BACKWARD) s->desc.pad_left = s->desc.pad_right = (c->kernel_size - 1) / 2; /* "same" */
    else s->desc.padding = DWCONV_PADDING_CAUSAL;
    const int64_t B = c->batch, C = c->channels, L = c->length, K = c->kernel_size;
    s->x_bytes = sizeof(float) * (size_t)(B * C * L);
    s->y_bytes = s->x_bytes; /* stride 1, "same" length in every case here */
    s->state_bytes = sizeof(float) * (size_t)(B * C * (K - 1));
    s->x = buffer(s, s->x_bytes, 1), s->w = buffer(s, sizeof(float) * (size_t)(C * K), 2);
    if (!s->x || !s->w) return 1;
    if (c->bias && !(s->bias = buffer(s, sizeof(float) * (size_t)C, 3))) return 1;
    size_t moved; /* bytes read plus bytes written, once each */
    if (c->op == BACKWARD) {
        s->dy = buffer(s, s->y_bytes, 4), s->dx = buffer(s, s->x_bytes, 5);
        s->dw = buffer(s, sizeof(float) * (size_t)(C * K + C), 6);
        if (!s->dy || !s->dx || !s->dw) return 1;
        moved = s->x_bytes + s->y_bytes + s->x_bytes; /* x, dy read; dx written */
    } else {
        s->state = buffer(s, s->state_bytes, 7), s->y = buffer(s, s->y_bytes, 8);
        if (!s->state || !s->y) return 1;
        if (c->op == PREFILL && !(s->final = buffer(s, s->state_bytes, 9))) return 1;
        moved = s->x_bytes + s->y_bytes + 2 * s->state_bytes; /* state read and written */
    }
    s->copy_bytes = (moved + 1) / 2;
    s->copy_src = buffer(s, s->copy_bytes, 10), s->copy_dst = buffer(s, s->copy_bytes, 11);
    return !s->copy_src || !s->copy_dst;
}

static void release(serve_data *s) {
    void *all[] = {s->x, s->w, s->bias, s->dy, s->dx, s->dw, s->state, s->final, s->y,
                   s->copy_src, s->copy_dst};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dwconv_free(s->ctx, all[i]);
}

/* One case timed against its copy, for bench_run_quietly. */
typedef struct timed_case {
    dwconv_context *ctx;
    int warmup, repeat;
    serve_data *s;
    const char *name;
    pair_timing *t;
} timed_case;

static int time_case(void *arg) {
    const timed_case *tc = arg;
    return pair_time(tc->ctx, tc->warmup, tc->repeat, run_case, tc->s, run_copy, tc->s, tc->name, tc->t);
}

int bench_train_serve(dwconv_context *ctx, int threads, int warmup, int repeat, int check,
                      const char *only, double wait_quiet) {
    int failed = 0, header = 0;
    for (int i = 0; i < CASES; i++) {
        const serve_case *c = &cases[i];
        if (only && !strstr(c->name, only)) continue;
        if (!header) {
            printf("\n| problem (f32, %d threads) | ms | GB/s moved | copy of those bytes ms | "
                   "of copy (target) | oracle | load |\n|---|---|---|---|---|---|---|\n", threads);
            header = 1;
        }
        serve_data s;
        if (dwconv_context_set_threads(ctx, threads) || prepare(&s, ctx, c)) {
            fprintf(stderr, "bench_cpu: %s: %s\n", c->name, dwconv_last_error());
            release(&s);
            failed = 1;
            continue;
        }
        int bitwise = -1;
        if (check && c->op == BACKWARD) {
            bitwise = check_backward(&s);
        } else if (check) {
            void *before = malloc(s.state_bytes);
            if (before) memcpy(before, s.state, s.state_bytes);
            bitwise = before && run_case(&s) == DWCONV_SUCCESS && check_causal(&s, before);
            free(before);
        }
        pair_timing t;
        timed_case tc = {ctx, warmup, repeat, &s, c->name, &t};
        if (bench_run_quietly(wait_quiet, c->name, time_case, &tc)) {
            fprintf(stderr, "bench_cpu: %s: %s\n", c->name, dwconv_last_error());
            failed = 1;
        } else {
            printf("| %s | %.3f | %.1f | %.3f | %.3f", c->name, t.work_ms,
                   2.0 * (double)s.copy_bytes / (t.work_ms * 1e6), t.copy_ms, t.ratio);
            if (c->of_copy > 0) printf(" (%.2f: %s)", c->of_copy, t.ratio >= c->of_copy ? "met" : "missed");
            printf(" | %s | %s; %.1f%% |\n",
                   bitwise < 0 ? "not checked" : bitwise ? "bitwise equal" : "DIFFERENT",
                   bench_load_average(), bench_cpu_pressure());
            fflush(stdout);
        }
        failed |= bitwise == 0;
        release(&s);
    }
    return failed;
}
