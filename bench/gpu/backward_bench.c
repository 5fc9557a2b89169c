/*
 * Times dwconv_backward on the GPU backend against a device copy of the same traffic
 * (x and dy read, dx written: a copy of (x + dy + dx) / 2 bytes moves as much).
 *
 *   cc -O2 -Iinclude bench/gpu/backward_bench.c -Lsrc/.libs -ldwconv -o /tmp/backward_bench
 *   DWCONV_MODULE_PATH=$PWD/src/.libs/dwconv LD_LIBRARY_PATH=src/.libs /tmp/backward_bench \
 *       B C L K [stride dilation pad_left pad_right mode act dtype layout outputs]
 *
 * mode: zeros reflect replicate circular; act: none relu silu; dtype: f32 f16 bf16;
 * layout: ncl nlc; outputs: any of x w b (dx, dweight, dbias), e.g. "xw". pad_left -1:
 * causal. Prints the median of 20 timed calls after 3 warm-up calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwconv.h"

#define CHECK(call)                                                                     \
    do {                                                                                \
        if ((call) != DWCONV_SUCCESS) {                                                 \
            fprintf(stderr, "%s: %s\n", #call, dwconv_last_error());                    \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static int pick(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    fprintf(stderr, "unknown '%s'\n", s);
    exit(2);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s B C L K [stride dilation pad_left pad_right mode act dtype layout outputs]\n", argv[0]);
        return 2;
    }
    static const char *const modes[] = {"zeros", "reflect", "replicate", "circular"};
    static const char *const acts[] = {"none", "relu", "silu"};
    static const char *const types[] = {"f32", "f16", "bf16"};
    static const char *const layouts[] = {"ncl", "nlc"};
    dwconv_desc d;
    dwconv_desc_init(&d, atoll(argv[1]), atoll(argv[2]), atoll(argv[3]), atoll(argv[4]));
    if (argc > 5) d.stride = atoll(argv[5]);
    if (argc > 6) d.dilation = atoll(argv[6]);
    if (argc > 8) {
        if (atoll(argv[7]) < 0) d.padding = DWCONV_PADDING_CAUSAL;
        else d.pad_left = atoll(argv[7]), d.pad_right = atoll(argv[8]);
    }
    if (argc > 9) d.padding_mode = (dwconv_padding_mode)pick(argv[9], modes, 4);
    if (argc > 10) d.activation = (dwconv_activation)pick(argv[10], acts, 3);
    if (argc > 11) d.dtype = d.weight_dtype = (dwconv_dtype)pick(argv[11], types, 3);
    if (argc > 12) d.layout = (dwconv_layout)pick(argv[12], layouts, 2);
    const char *outputs = argc > 13 ? argv[13] : "xw";
    int64_t nx, ny, nw, nb, L_out;
    CHECK(dwconv_desc_sizes(&d, &nx, &ny, &nw, &nb));
    CHECK(dwconv_desc_resolve(&d, NULL, NULL, &L_out));
    dwconv_context *ctx;
    CHECK(dwconv_context_create(&ctx, DWCONV_BACKEND_CUDA, 0));
    const size_t es = dwconv_dtype_size(d.dtype), ws = dwconv_dtype_size(d.weight_dtype);
    void *x, *dy, *w, *b, *dx = NULL, *dw = NULL, *db = NULL, *copy_a, *copy_b;
    CHECK(dwconv_malloc(ctx, &x, nx * es));
    CHECK(dwconv_malloc(ctx, &dy, ny * es));
    CHECK(dwconv_malloc(ctx, &w, nw * ws));
    CHECK(dwconv_malloc(ctx, &b, nb * ws));
    if (strchr(outputs, 'x')) CHECK(dwconv_malloc(ctx, &dx, nx * es));
    if (strchr(outputs, 'w')) CHECK(dwconv_malloc(ctx, &dw, nw * ws));
    if (strchr(outputs, 'b')) CHECK(dwconv_malloc(ctx, &db, nb * ws));
    /* inputs: small values (a byte pattern that is a modest float in every dtype) */
    const size_t host_bytes = (nx > ny ? nx : ny) * es;
    unsigned char *host = malloc(host_bytes);
    for (size_t i = 0; i < host_bytes; i++) host[i] = (unsigned char)(i % 2 ? 0x3c : 0x11 + i % 7);
    CHECK(dwconv_copy_to_backend(ctx, x, host, nx * es));
    CHECK(dwconv_copy_to_backend(ctx, dy, host, ny * es));
    CHECK(dwconv_copy_to_backend(ctx, w, host, nw * ws));
    CHECK(dwconv_copy_to_backend(ctx, b, host, nb * ws));
    const size_t traffic = (nx + ny + (dx ? nx : 0)) * es;
    CHECK(dwconv_malloc(ctx, &copy_a, traffic / 2 + 16));
    CHECK(dwconv_malloc(ctx, &copy_b, traffic / 2 + 16));
    double t_bwd[20], t_copy[20];
    for (int i = 0; i < 23; i++) {
        double ms = 0;
        CHECK(dwconv_timer_start(ctx));
        CHECK(dwconv_backward(ctx, &d, x, w, b, dy, dx, dw, db));
        CHECK(dwconv_timer_stop(ctx, &ms));
        if (i >= 3) t_bwd[i - 3] = ms;
        CHECK(dwconv_timer_start(ctx));
        CHECK(dwconv_copy_on_backend(ctx, copy_b, copy_a, traffic / 2));
        CHECK(dwconv_timer_stop(ctx, &ms));
        if (i >= 3) t_copy[i - 3] = ms;
    }
    qsort(t_bwd, 20, sizeof(double), cmp);
    qsort(t_copy, 20, sizeof(double), cmp);
    printf("B%lld C%lld L%lld K%lld s%lld d%lld pad %lld/%lld %s %s %s %s outputs %s: backward "
           "%.3f ms (%.0f GB/s of x, dy, dx), copy of the same traffic %.3f ms: %.2f of the copy\n",
           (long long)d.batch, (long long)d.channels, (long long)d.length, (long long)d.kernel_size,
           (long long)d.stride, (long long)d.dilation, (long long)d.pad_left, (long long)d.pad_right,
           modes[d.padding_mode], acts[d.activation], types[d.dtype], layouts[d.layout], outputs,
           t_bwd[10], traffic / t_bwd[10] / 1e6, t_copy[10], t_copy[10] / t_bwd[10]);
    dwconv_context_destroy(ctx);
    free(host);
    return 0;
}
