/* What the GPU suites on a real device (check_gpu, check_gpu_causal, check_gpu_backward)
 * share: finding the GPU backend, contexts and device memory that fail the test when
 * refused, outputs with poisoned guards on each side, stream capture, and main's run
 * without forking. These use Check, so they stay apart from tests/gpu_cases.c, which
 * the emulated suites (built without Check) link too. */
#ifndef DWCONV_TESTS_GPU_DEVICE_H
#define DWCONV_TESTS_GPU_DEVICE_H

#include <check.h>
#include <stddef.h>

#include "dwconv.h"
#include "gpu_graph.h"

/* For main: the first GPU backend with a device (cuda, else hip) and its device
 * count (devices may be NULL), printed under `program` (which later messages start
 * with too); 0 when none has one, each one's reason and a SKIP line printed. */
int gpu_device_find(const char *program, dwconv_backend *backend, int *devices);

/* A context on device 0 (asserts). kernel: a forward family to use wherever it applies
 * (DWCONV_GPU_KERNEL; NULL: the backend's choice), strict: and refuse where it does not
 * (DWCONV_GPU_KERNEL_STRICT). */
dwconv_context *gpu_device_context(dwconv_backend backend, const char *kernel, int strict);

/* Device memory of exactly `bytes` (asserts). */
void *gpu_device_alloc(dwconv_context *ctx, size_t bytes);

/* An input on the device: `shift` bytes of nothing, then a copy of host's `bytes`,
 * ending where the allocation ends (compute-sanitizer sees a read past it). */
char *gpu_device_input(dwconv_context *ctx, const void *host, size_t bytes, size_t shift);

/* An output on the device, `shift` bytes past GPU_CASE_GUARD bytes and followed by as
 * many, the whole span poisoned; and its copy on the host. */
typedef struct gpu_guarded {
    dwconv_context *ctx;
    size_t bytes, span;
    char *dev;           /* the span on the device */
    unsigned char *host; /* the span on the host */
    void *at;            /* the output on the device */
    unsigned char *got;  /* the output in the host copy (after gpu_guarded_fetch) */
} gpu_guarded;

void gpu_guarded_make(gpu_guarded *g, dwconv_context *ctx, size_t bytes, size_t shift);
/* Poisons the span again, on the host and the device. */
void gpu_guarded_poison(gpu_guarded *g);
/* Copies the span to the host (the work synchronised first). */
void gpu_guarded_fetch(gpu_guarded *g);
/* 0 when every fetched byte of the span but the output's still holds the poison; else -1
 * and why says on which side of `what`. */
int gpu_guarded_intact(const gpu_guarded *g, const char *what, char *why, size_t why_size);
void gpu_guarded_free(gpu_guarded *g);

/* Stream capture into a graph and its replay (tests/gpu_graph.h), asserting each step:
 * the graph functions and a stream of the caller's; a capture begun on it; its end,
 * where `st` is what the captured call returned (it must have succeeded and done
 * nothing a capture forbids), giving the graph; a replay waited for. */
void gpu_device_stream(dwconv_backend backend, gpu_graph_api **api, void **stream);
void gpu_device_capture_begin(gpu_graph_api *api, void *stream);
void *gpu_device_capture_end(gpu_graph_api *api, void *stream, dwconv_status st);
void gpu_device_replay(gpu_graph_api *api, void *exec, void *stream);

/* For main: whether the graph functions load here (why: the reason not). */
int gpu_device_graphs(dwconv_backend backend, char *why, size_t why_size);
/* Adds test to t, or prints that it is skipped (skip: why, or NULL to add it). */
void gpu_device_add(TCase *t, const TTest *test, const char *name, const char *skip);
/* Runs s without forking (GPU runtimes do not survive a fork of an initialised
 * process): main's exit status. */
int gpu_device_run(Suite *s);

#endif
