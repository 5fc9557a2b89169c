/*
 * Device time of the causal operations at the serving shapes of issue 13, on the
 * first CUDA/HIP device: each figure is the mean of `reps` calls between the context's
 * timer events (after warm-up), and, for the decode, also the mean per call of a graph
 * that holds 100 calls, replayed (no launch gaps: the device time itself).
 *   decode      B64 C5120 K4, one token, slot b, shift register (bf16, f32)
 *   decode4     the same with 4 tokens, a pool of 256 slots, circular (bf16, f32)
 *   prefill     B4 C5120 L4096 K4 bf16 NCL and NLC: one plain causal call against 4
 *               chunks of 1024 carrying states in place, and a copy of x's bytes in
 *               one call against 4 (the floor chunking sets)
 *   varlen      64 sequences of random lengths 1..4096, C2048 K4 bf16 NLC, states in
 *               place, against a device copy of x's bytes (read + write) and against
 *               one plain causal row of the same positions
 * Build in a dwconv build tree (the device tool's remote does):
 *   cc -O2 -Iinclude -Itests bench/gpu/causal_bench.c tests/gpu_graph.c \
 *      src/.libs/libdwconv.so -ldl -o /tmp/causal_bench
 *   DWCONV_MODULE_PATH=$PWD/src/.libs/dwconv /tmp/causal_bench [decode|prefill|varlen|all] [silu|relu]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwconv.h"
#include "gpu_graph.h"
#include "bench_try.h"

static dwconv_context *ctx;
static dwconv_activation act; /* argv[2]: none (default), relu or silu */


static void *device(size_t bytes, unsigned seed) {
    void *p = NULL;
    TRY(dwconv_malloc(ctx, &p, bytes));
    unsigned short *h = malloc(bytes);
    for (size_t i = 0; i < bytes / 2; i++) { /* small bf16 / f16-ish values; f32 halves */
        seed = seed * 1103515245u + 12345u;
        h[i] = (unsigned short)(0x3c00 | ((seed >> 16) & 0x3ff));
    }
    TRY(dwconv_copy_to_backend(ctx, p, h, bytes));
    free(h);
    return p;
}

typedef void (*call_fn)(void *arg);

/* Mean device milliseconds per call over reps calls (after 10 warm-up calls). */
static double timed(call_fn f, void *arg, int reps) {
    for (int i = 0; i < 10; i++) f(arg);
    TRY(dwconv_synchronize(ctx));
    double ms = 0;
    TRY(dwconv_timer_start(ctx));
    for (int i = 0; i < reps; i++) f(arg);
    TRY(dwconv_timer_stop(ctx, &ms));
    TRY(dwconv_synchronize(ctx));
    return ms / reps;
}

/* Mean milliseconds per call of a graph holding 100 calls, replayed 20 times. */
static double graphed(call_fn f, void *arg) {
    char why[256];
    gpu_graph_api *api = NULL;
    void *stream = NULL, *exec = NULL;
    if (gpu_graph_open(&api, DWCONV_BACKEND_CUDA, 0, why, sizeof why) ||
        gpu_graph_stream(api, &stream, why, sizeof why)) {
        fprintf(stderr, "no graphs: %s\n", why);
        return -1;
    }
    TRY(dwconv_context_set_stream(ctx, stream));
    f(arg); /* scratch grown outside the capture */
    TRY(dwconv_synchronize(ctx));
    if (gpu_graph_begin(api, stream, why, sizeof why)) return -1;
    for (int i = 0; i < 100; i++) f(arg);
    if (gpu_graph_end(api, stream, &exec, why, sizeof why)) {
        fprintf(stderr, "capture: %s\n", why);
        return -1;
    }
    gpu_graph_launch(api, exec, stream, why, sizeof why);
    gpu_graph_wait(api, stream, why, sizeof why);
    double ms = 0;
    TRY(dwconv_timer_start(ctx));
    for (int i = 0; i < 20; i++) gpu_graph_launch(api, exec, stream, why, sizeof why);
    TRY(dwconv_timer_stop(ctx, &ms));
    TRY(dwconv_synchronize(ctx));
    TRY(dwconv_context_set_stream(ctx, NULL));
    gpu_graph_free(api, exec, stream);
    gpu_graph_close(api);
    return ms / 2000;
}

typedef struct decode_args {
    dwconv_desc d;
    void *x, *state, *w, *b, *y;
    int32_t *seen, *slots;
    int64_t pool;
} decode_args;

static void decode_call(void *p) {
    decode_args *a = p;
    TRY(dwconv_causal_update(ctx, &a->d, a->x, a->state, a->pool, 3, a->w, a->b, a->seen,
                             a->slots, a->y));
}

static void decode(dwconv_dtype dt, int tokens) {
    decode_args a;
    const int64_t B = 64, C = 5120, K = 4;
    dwconv_desc_init(&a.d, B, C, tokens, K);
    a.d.padding = DWCONV_PADDING_CAUSAL, a.d.dtype = a.d.weight_dtype = dt;
    a.d.activation = act;
    const size_t es = dt == DWCONV_F32 ? 4 : 2;
    a.pool = tokens == 1 ? B : 4 * B;
    a.x = device(B * C * tokens * es, 1), a.y = device(B * C * tokens * es, 2);
    a.w = device(C * K * es, 3), a.b = device(C * es, 4);
    a.state = device(a.pool * C * 3 * es, 5);
    a.seen = NULL, a.slots = NULL;
    if (tokens > 1) {
        int32_t slots[64], seen[64];
        for (int b = 0; b < 64; b++) slots[b] = (b * 37) % 256, seen[b] = b * 11;
        TRY(dwconv_malloc(ctx, (void **)&a.slots, sizeof slots));
        TRY(dwconv_malloc(ctx, (void **)&a.seen, sizeof seen));
        TRY(dwconv_copy_to_backend(ctx, a.slots, slots, sizeof slots));
        TRY(dwconv_copy_to_backend(ctx, a.seen, seen, sizeof seen));
    }
    const double t = timed(decode_call, &a, 1000), g = graphed(decode_call, &a);
    printf("decode B64 C5120 K4 %s T%d pool %lld%s: %.2f us per call (stream), %.2f us (graph)\n",
           dt == DWCONV_F32 ? "f32" : "bf16", tokens, (long long)a.pool,
           tokens > 1 ? " circular, slots" : "", t * 1e3, g * 1e3);
    dwconv_free(ctx, a.x), dwconv_free(ctx, a.y), dwconv_free(ctx, a.w), dwconv_free(ctx, a.b);
    dwconv_free(ctx, a.state), dwconv_free(ctx, a.seen), dwconv_free(ctx, a.slots);
}

typedef struct prefill_args {
    dwconv_desc whole, part;
    void *x, *w, *b, *y, *state;
    size_t chunk_bytes;
} prefill_args;

static void prefill_one(void *p) {
    prefill_args *a = p;
    TRY(dwconv_causal_forward(ctx, &a->whole, a->x, a->w, a->b, NULL, NULL, a->y));
}

/* 4 chunks (NCL: chunks of separate buffers laid out as B C Lc; the bench reuses
 * x's first bytes for each, the timing does not depend on the values). */
static void prefill_chunks(void *p) {
    prefill_args *a = p;
    for (int k = 0; k < 4; k++)
        TRY(dwconv_causal_forward(ctx, &a->part, (char *)a->x + k * a->chunk_bytes, a->w, a->b,
                                  k ? a->state : NULL, a->state, (char *)a->y + k * a->chunk_bytes));
}

/* The same 4 chunks without states: what chunking alone costs. */
static void prefill_chunks_plain(void *p) {
    prefill_args *a = p;
    for (int k = 0; k < 4; k++)
        TRY(dwconv_causal_forward(ctx, &a->part, (char *)a->x + k * a->chunk_bytes, a->w, a->b,
                                  NULL, NULL, (char *)a->y + k * a->chunk_bytes));
}

/* The floor chunking itself sets: x's bytes copied in one call against the same bytes
 * in 4 calls (each call's launch, ramp and tail paid 4 times). */
static void prefill_copy_one(void *p) {
    prefill_args *a = p;
    TRY(dwconv_copy_on_backend(ctx, a->y, a->x, 4 * a->chunk_bytes));
}

static void prefill_copy_chunks(void *p) {
    prefill_args *a = p;
    for (int k = 0; k < 4; k++)
        TRY(dwconv_copy_on_backend(ctx, (char *)a->y + k * a->chunk_bytes,
                                   (char *)a->x + k * a->chunk_bytes, a->chunk_bytes));
}

static void prefill(dwconv_layout layout) {
    prefill_args a;
    const int64_t B = 4, C = 5120, L = 4096, K = 4;
    dwconv_desc_init(&a.whole, B, C, L, K);
    a.whole.padding = DWCONV_PADDING_CAUSAL, a.whole.dtype = a.whole.weight_dtype = DWCONV_BF16;
    a.whole.layout = layout, a.whole.activation = act;
    a.part = a.whole, a.part.length = L / 4;
    a.chunk_bytes = (size_t)(B * C * L / 4) * 2;
    a.x = device(B * C * L * 2, 6), a.y = device(B * C * L * 2, 7);
    a.w = device(C * K * 2, 8), a.b = device(C * 2, 9), a.state = device(B * C * 3 * 2, 10);
    const double one = timed(prefill_one, &a, 50), four = timed(prefill_chunks, &a, 50);
    const double plain = timed(prefill_chunks_plain, &a, 50);
    const double copy1 = timed(prefill_copy_one, &a, 50), copy4 = timed(prefill_copy_chunks, &a, 50);
    printf("prefill B4 C5120 L4096 K4 bf16 %s: one call %.2f us, 4 chunks with states in place "
           "%.2f us (%.3fx), 4 chunks without states %.2f us (%.3fx); a copy of x's bytes "
           "%.2f us, in 4 copies %.2f us (%.3fx)\n", layout ? "NLC" : "NCL",
           one * 1e3, four * 1e3, four / one, plain * 1e3, plain / one, copy1 * 1e3, copy4 * 1e3,
           copy4 / copy1);
    dwconv_free(ctx, a.x), dwconv_free(ctx, a.y), dwconv_free(ctx, a.w), dwconv_free(ctx, a.b);
    dwconv_free(ctx, a.state);
}

typedef struct varlen_args {
    dwconv_desc d;
    void *x, *w, *b, *y, *state;
    int32_t *cu;
    int64_t N;
    size_t bytes;
} varlen_args;

static void varlen_call(void *p) {
    varlen_args *a = p;
    TRY(dwconv_causal_varlen_forward(ctx, &a->d, a->x, a->w, a->b, a->cu, NULL, a->N, a->state,
                                     a->state, a->y));
}

/* The same positions as one plain causal row (no sequences, no states): what the
 * forward family alone costs on this shape. */
static void varlen_plain_call(void *p) {
    varlen_args *a = p;
    TRY(dwconv_causal_forward(ctx, &a->d, a->x, a->w, a->b, NULL, NULL, a->y));
}

static void copy_call(void *p) {
    varlen_args *a = p;
    TRY(dwconv_copy_on_backend(ctx, a->y, a->x, a->bytes));
}

static void varlen(void) {
    varlen_args a;
    int32_t cu[65];
    unsigned seed = 13;
    cu[0] = 0;
    for (int n = 0; n < 64; n++) {
        seed = seed * 1103515245u + 12345u;
        cu[n + 1] = cu[n] + 1 + (int32_t)((seed >> 8) % 4096);
    }
    a.N = 64;
    const int64_t C = 2048, K = 4, L = cu[64];
    dwconv_desc_init(&a.d, 1, C, L, K);
    a.d.padding = DWCONV_PADDING_CAUSAL, a.d.dtype = a.d.weight_dtype = DWCONV_BF16;
    a.d.layout = DWCONV_LAYOUT_NLC, a.d.activation = act;
    a.bytes = (size_t)(C * L) * 2;
    a.x = device(a.bytes, 11), a.y = device(a.bytes, 12);
    a.w = device(C * K * 2, 13), a.b = device(C * 2, 14), a.state = device(64 * C * 3 * 2, 15);
    TRY(dwconv_malloc(ctx, (void **)&a.cu, sizeof cu));
    TRY(dwconv_copy_to_backend(ctx, a.cu, cu, sizeof cu));
    const double conv = timed(varlen_call, &a, 50), copy = timed(copy_call, &a, 50);
    const double plain = timed(varlen_plain_call, &a, 50);
    printf("varlen 64 sequences (L %lld) C2048 K4 bf16 NLC, states in place: %.2f us; copy "
           "%.2f us; copy / conv %.3f; one plain row of the same positions %.2f us (copy / "
           "plain %.3f)\n", (long long)L, conv * 1e3, copy * 1e3, copy / conv, plain * 1e3,
           copy / plain);
    dwconv_free(ctx, a.x), dwconv_free(ctx, a.y), dwconv_free(ctx, a.w), dwconv_free(ctx, a.b);
    dwconv_free(ctx, a.state), dwconv_free(ctx, a.cu);
}

int main(int argc, char **argv) {
    TRY(dwconv_context_create(&ctx, DWCONV_BACKEND_CUDA, 0));
    const char *only = argc > 1 ? argv[1] : "";
    act = argc > 2 && strcmp(argv[2], "silu") == 0   ? DWCONV_ACT_SILU
          : argc > 2 && strcmp(argv[2], "relu") == 0 ? DWCONV_ACT_RELU
                                                      : DWCONV_ACT_NONE;
    printf("activation %s\n", act == DWCONV_ACT_SILU ? "silu" : act == DWCONV_ACT_RELU ? "relu" : "none");
    if (strcmp(only, "all") == 0) only = "";
    if (!*only || strstr(only, "decode")) {
        decode(DWCONV_BF16, 1), decode(DWCONV_F32, 1);
        decode(DWCONV_BF16, 4), decode(DWCONV_F32, 4);
    }
    if (!*only || strstr(only, "prefill")) prefill(DWCONV_LAYOUT_NCL), prefill(DWCONV_LAYOUT_NLC);
    if (!*only || strstr(only, "varlen")) varlen();
    dwconv_context_destroy(ctx);
    return 0;
}
