/* See gpu_device.h. */
#include "gpu_device.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpu_cases.h"

static const char *program = "gpu"; /* what messages start with: gpu_device_find's */

int gpu_device_find(const char *name, dwconv_backend *backend, int *devices) {
    program = name;
    const dwconv_backend order[] = {DWCONV_BACKEND_CUDA, DWCONV_BACKEND_HIP};
    for (int i = 0; i < 2; i++) {
        dwconv_backend_report r;
        if (dwconv_backend_query(order[i], &r) == DWCONV_SUCCESS && r.device_count > 0) {
            *backend = order[i];
            if (devices) *devices = r.device_count;
            char device[256] = "";
            dwconv_device_name(order[i], 0, device, sizeof device);
            printf("%s: %s, %d device(s), device 0: %s\n", program, dwconv_backend_name(order[i]),
                   r.device_count, device);
            return 1;
        }
        printf("%s: %s: %s\n", program, dwconv_backend_name(order[i]), r.detail);
    }
    printf("%s: SKIP: no GPU backend has a device here\n", program);
    return 0;
}

dwconv_context *gpu_device_context(dwconv_backend backend, const char *kernel, int strict) {
    if (kernel) setenv("DWCONV_GPU_KERNEL", kernel, 1);
    if (strict) setenv("DWCONV_GPU_KERNEL_STRICT", "1", 1);
    dwconv_context *ctx = NULL;
    dwconv_status st = dwconv_context_create(&ctx, backend, 0);
    /* unset before asserting: the tests share one process */
    unsetenv("DWCONV_GPU_KERNEL");
    unsetenv("DWCONV_GPU_KERNEL_STRICT");
    ck_assert_msg(st == DWCONV_SUCCESS, "context: %s", dwconv_last_error());
    return ctx;
}

void *gpu_device_alloc(dwconv_context *ctx, size_t bytes) {
    void *p = NULL;
    ck_assert_msg(dwconv_malloc(ctx, &p, bytes) == DWCONV_SUCCESS, "dwconv_malloc(%zu): %s",
                  bytes, dwconv_last_error());
    return p;
}

char *gpu_device_input(dwconv_context *ctx, const void *host, size_t bytes, size_t shift) {
    char *p = gpu_device_alloc(ctx, shift + bytes);
    ck_assert(dwconv_copy_to_backend(ctx, p + shift, host, bytes) == DWCONV_SUCCESS);
    return p;
}

/* ---- guarded outputs ---- */

void gpu_guarded_make(gpu_guarded *g, dwconv_context *ctx, size_t bytes, size_t shift) {
    g->ctx = ctx, g->bytes = bytes;
    g->span = GPU_CASE_GUARD + shift + bytes + GPU_CASE_GUARD;
    g->dev = gpu_device_alloc(ctx, g->span);
    g->host = malloc(g->span);
    ck_assert_msg(g->host != NULL, "out of host memory");
    g->at = g->dev + GPU_CASE_GUARD + shift;
    g->got = g->host + GPU_CASE_GUARD + shift;
    gpu_guarded_poison(g);
}

void gpu_guarded_poison(gpu_guarded *g) {
    test_poison(g->host, g->span);
    ck_assert(dwconv_copy_to_backend(g->ctx, g->dev, g->host, g->span) == DWCONV_SUCCESS);
}

void gpu_guarded_fetch(gpu_guarded *g) {
    ck_assert(dwconv_copy_to_host(g->ctx, g->host, g->dev, g->span) == DWCONV_SUCCESS);
}

int gpu_guarded_intact(const gpu_guarded *g, const char *what, char *why, size_t why_size) {
    const size_t before = (size_t)(g->got - g->host);
    return gpu_guards_intact(g->got, g->bytes, before, g->span - before - g->bytes, what, why,
                             why_size);
}

void gpu_guarded_free(gpu_guarded *g) {
    dwconv_free(g->ctx, g->dev);
    free(g->host);
}

/* ---- stream capture ---- */

void gpu_device_stream(dwconv_backend backend, gpu_graph_api **api, void **stream) {
    char why[256];
    ck_assert_msg(gpu_graph_open(api, backend, 0, why, sizeof why) == 0, "%s", why);
    ck_assert_msg(gpu_graph_stream(*api, stream, why, sizeof why) == 0, "%s", why);
}

void gpu_device_capture_begin(gpu_graph_api *api, void *stream) {
    char why[256];
    ck_assert_msg(gpu_graph_begin(api, stream, why, sizeof why) == 0, "%s", why);
}

void *gpu_device_capture_end(gpu_graph_api *api, void *stream, dwconv_status st) {
    char why[256];
    void *exec = NULL;
    const int ended = gpu_graph_end(api, stream, &exec, why, sizeof why);
    ck_assert_msg(st == DWCONV_SUCCESS, "captured call: %s", dwconv_last_error());
    ck_assert_msg(ended == 0, "%s (the call did something a capture does not allow)", why);
    return exec;
}

void gpu_device_replay(gpu_graph_api *api, void *exec, void *stream) {
    char why[256];
    ck_assert_msg(gpu_graph_launch(api, exec, stream, why, sizeof why) == 0, "%s", why);
    ck_assert_msg(gpu_graph_wait(api, stream, why, sizeof why) == 0, "%s", why);
}

/* ---- main ---- */

int gpu_device_graphs(dwconv_backend backend, char *why, size_t why_size) {
    gpu_graph_api *api = NULL;
    const int graphs = gpu_graph_open(&api, backend, 0, why, why_size) == 0;
    gpu_graph_close(api);
    return graphs;
}

void gpu_device_add(TCase *t, const TTest *test, const char *name, const char *skip) {
    if (skip) printf("%s: SKIP %s: %s\n", program, name, skip);
    else tcase_add_test(t, test);
}

int gpu_device_run(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* GPU runtimes must not see a fork */
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
