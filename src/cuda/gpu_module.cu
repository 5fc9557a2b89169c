/*
 * The GPU backend module: one source for CUDA and HIP (src/hip/module.hip includes it
 * after hip_compat.h maps the runtime's names). It exports only the entry symbol;
 * every failure becomes a status and a message, never an abort.
 */
#include <stdlib.h>

#include "dwconv_module.h"
#include "gpu_kernels.cuh"
#include "gpu_runtime.cuh"
#include "gpu_pointers.cuh"


static int gpu_device_count(char *msg) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        gpu_fail(err, "cudaGetDeviceCount", msg);
        return 0;
    }
    if (n == 0) snprintf(msg, DWCONV_MSG_SIZE, "the " DWCONV_GPU_RUNTIME " runtime sees no device");
    return n;
}

static dwconv_status gpu_device_name(int device, char *name, size_t size, char *msg) {
    cudaDeviceProp prop;
    GPU_TRY(cudaGetDeviceProperties(&prop, device), msg);
    snprintf(name, size, "%s (%d.%d, %d multiprocessors, %.0f GiB)", prop.name, prop.major,
             prop.minor, prop.multiProcessorCount, (double)prop.totalGlobalMem / (1 << 30));
    return DWCONV_SUCCESS;
}

#include "gpu_device_check.cuh"

/* DWCONV_GPU_KERNEL=<a family of the registry, or auto> forces a forward family
 * wherever it applies (tests run every family over the same descriptors; the bench
 * compares); DWCONV_GPU_KERNEL_STRICT=1 makes a forced family that does not apply
 * refuse the problem (UNSUPPORTED) instead of leaving it to the choice. */
static dwconv_status gpu_forced_kernel(int *kernel, int *strict, char *msg) {
    const char *name = getenv("DWCONV_GPU_KERNEL"), *s = getenv("DWCONV_GPU_KERNEL_STRICT");
    *kernel = GPU_FAMILY_AUTO;
    *strict = s && *s && strcmp(s, "0") != 0;
    if (!name || !*name) return DWCONV_SUCCESS;
    if ((*kernel = gpu_family_by_name(name)) >= 0) return DWCONV_SUCCESS;
    *kernel = GPU_FAMILY_AUTO;
    int n = snprintf(msg, DWCONV_MSG_SIZE, "DWCONV_GPU_KERNEL='%s' is not one of", name);
    for (int k = 0; k < GPU_FAMILY_COUNT && n > 0 && n < DWCONV_MSG_SIZE; k++)
        n += snprintf(msg + n, DWCONV_MSG_SIZE - n, "%s %s", k ? "," : "", gpu_family(k)->name);
    return DWCONV_ERROR_INVALID_VALUE;
}

/* The bf16 silu's rough path (gpu_elements.cuh) on this device: only where it was
 * proven, compute capability 9.0. */
static cudaError_t gpu_silu_rough_mark(int device) {
#ifdef DWCONV_GPU_IS_HIP
    (void)device;
    return cudaSuccess;
#else
    int major = 0, minor = 0;
    cudaError_t err = gpu_compute_capability(device, &major, &minor);
    const gpu_tie_window w =
        GPU_TIE_WINDOW(major == 9 && minor == 0 ? GPU_SILU_ROUGH_ULPS : GPU_SILU_ROUGH_UNPROVEN);
    if (err == cudaSuccess) err = cudaMemcpyToSymbol(gpu_silu_tie_window, &w, sizeof w);
    return err;
#endif
}

static dwconv_status gpu_context_create(int device, void **state, char *msg) {
    int forced, strict;
    dwconv_status forced_status = gpu_forced_kernel(&forced, &strict, msg);
    if (forced_status != DWCONV_SUCCESS) return forced_status;
    gpu_state *s = (gpu_state *)calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, DWCONV_MSG_SIZE, "out of host memory");
        return DWCONV_ERROR_OUT_OF_MEMORY;
    }
    s->device = device;
    s->forced_kernel = forced;
    s->strict_kernel = strict;
    gpu_device_scope scope(device);
    cudaError_t err = scope.err;
    if (err == cudaSuccess) err = cudaEventCreate(&s->start);
    if (err == cudaSuccess) err = cudaEventCreate(&s->stop);
    if (err == cudaSuccess) err = gpu_silu_rough_mark(device);
    if (err == cudaSuccess) /* last: the failure path below frees no host memory */
        err = cudaHostAlloc((void **)&s->violation, sizeof *s->violation, cudaHostAllocMapped);
    if (err != cudaSuccess) {
        dwconv_status st = gpu_fail(err, "creating the context's events and flags", msg);
        if (s->stop) (void)cudaEventDestroy(s->stop);
        if (s->start) (void)cudaEventDestroy(s->start);
        free(s);
        return st;
    }
    memset(s->violation, 0, sizeof *s->violation);
    *state = s;
    return DWCONV_SUCCESS;
}

static void gpu_context_destroy(void *state) {
    gpu_state *s = (gpu_state *)state;
    /* nothing can be reported from here: best effort */
    {
        gpu_device_scope scope(s->device);
        (void)cudaStreamSynchronize(gpu_stream(s));
        (void)cudaEventDestroy(s->start);
        (void)cudaEventDestroy(s->stop);
        (void)cudaFreeHost(s->violation);
        if (s->scratch) (void)cudaFree(s->scratch);
    }
    free(s);
}

static dwconv_status gpu_set_stream(void *state, void *stream, char *msg) {
    (void)msg;
    ((gpu_state *)state)->stream = (cudaStream_t)stream;
    return DWCONV_SUCCESS;
}

static void *gpu_get_stream(void *state) { return (void *)((gpu_state *)state)->stream; }

static dwconv_status gpu_set_threads(void *state, int threads, char *msg) {
    (void)state, (void)threads;
    snprintf(msg, DWCONV_MSG_SIZE, "thread counts apply to the cpu backend only");
    return DWCONV_ERROR_UNSUPPORTED;
}

/* The runtime, and the forward's kernel families from the registry (the forced one
 * marked). */
static void gpu_describe(void *state, char *text, size_t size) {
    const gpu_state *s = (const gpu_state *)state;
    int runtime = 0, driver = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    (void)cudaDriverGetVersion(&driver);
    int n = snprintf(text, size, DWCONV_GPU_RUNTIME " runtime %d, driver %d; forward kernels:",
                     runtime, driver);
    for (int f = GPU_FAMILY_AUTO + 1; f < GPU_FAMILY_COUNT && n > 0 && (size_t)n < size; f++)
        n += snprintf(text + n, size - n, " %s%s", gpu_family(f)->name,
                      s && s->forced_kernel == f ? " (forced)" : "");
}

static dwconv_status gpu_mem_alloc(void *state, void **ptr, size_t bytes, char *msg) {
    GPU_ON_DEVICE(scope, (gpu_state *)state, msg);
    cudaError_t err = cudaMalloc(ptr, bytes);
    if (err != cudaSuccess) {
        *ptr = NULL;
        (void)cudaGetLastError(); /* not sticky: clear it so later calls do not see it */
        snprintf(msg, DWCONV_MSG_SIZE, DWCONV_GPU_NAME "Malloc of %zu bytes: %s", bytes,
                 cudaGetErrorString(err));
        return err == cudaErrorMemoryAllocation ? DWCONV_ERROR_OUT_OF_MEMORY : DWCONV_ERROR_DEVICE;
    }
    gpu_range_remember((gpu_state *)state, (uintptr_t)*ptr, bytes); /* its own: verified */
    return DWCONV_SUCCESS;
}

static dwconv_status gpu_mem_free(void *state, void *ptr, char *msg) {
    GPU_ON_DEVICE(scope, (gpu_state *)state, msg);
    gpu_range_forget((gpu_state *)state, (uintptr_t)ptr);
    GPU_TRY(cudaFree(ptr), msg);
    return DWCONV_SUCCESS;
}

/* Copies that touch host memory return when the data has arrived (the caller may
 * reuse or read its buffer at once); copies on the device are stream-ordered. */
static dwconv_status gpu_copy(gpu_state *s, void *dst, const void *src, size_t bytes,
                              cudaMemcpyKind kind, int wait, char *msg) {
    GPU_ON_DEVICE(scope, s, msg);
    GPU_TRY(cudaMemcpyAsync(dst, src, bytes, kind, gpu_stream(s)), msg);
    if (wait) GPU_TRY(cudaStreamSynchronize(gpu_stream(s)), msg);
    return DWCONV_SUCCESS;
}

static dwconv_status gpu_copy_to_backend(void *state, void *dst, const void *src, size_t bytes,
                                         char *msg) {
    return gpu_copy((gpu_state *)state, dst, src, bytes, cudaMemcpyHostToDevice, 1, msg);
}

static dwconv_status gpu_copy_to_host(void *state, void *dst, const void *src, size_t bytes,
                                      char *msg) {
    return gpu_copy((gpu_state *)state, dst, src, bytes, cudaMemcpyDeviceToHost, 1, msg);
}

static dwconv_status gpu_copy_on_backend(void *state, void *dst, const void *src, size_t bytes,
                                         char *msg) {
    return gpu_copy((gpu_state *)state, dst, src, bytes, cudaMemcpyDeviceToDevice, 0, msg);
}

static dwconv_status gpu_synchronize(void *state, char *msg) {
    gpu_state *s = (gpu_state *)state;
    GPU_ON_DEVICE(scope, s, msg);
    GPU_TRY(cudaStreamSynchronize(gpu_stream(s)), msg);
    /* a call whose device-resident indices broke a rule wrote nothing: say which */
    volatile dwconv_index_violation *v = s->violation;
    if (v->code != DWCONV_INDEX_OK) {
        dwconv_index_violation seen = {v->code, v->value, v->at, v->other};
        memset((void *)s->violation, 0, sizeof *s->violation);
        char rule[DWCONV_MSG_SIZE - 64];
        dwconv_index_message(&seen, rule, sizeof rule);
        snprintf(msg, DWCONV_MSG_SIZE, "an earlier call wrote nothing: %s", rule);
        return DWCONV_ERROR_INVALID_VALUE;
    }
    return DWCONV_SUCCESS;
}

#include "gpu_op_backward.cuh"
#include "gpu_op_causal.cuh"
#include "gpu_op_forward.cuh"

/* The one route of a problem through this module, by operation: supports and run
 * both ask it, so a precondition and its check are the same code. */
static dwconv_status gpu_route(gpu_state *s, const dwconv_problem *p, int launch, char *msg) {
    switch (p->op) {
    case DWCONV_OP_FORWARD: return gpu_op_forward(s, p, launch, msg);
    case DWCONV_OP_BACKWARD: return gpu_op_backward(s, p, launch, msg);
    case DWCONV_OP_CAUSAL_FORWARD:
    case DWCONV_OP_CAUSAL_UPDATE: return gpu_op_causal(s, p, launch, msg);
    default: break;
    }
    snprintf(msg, DWCONV_MSG_SIZE, "operation %d is not a dwconv operation", (int)p->op);
    return DWCONV_ERROR_INVALID_VALUE;
}

static dwconv_status gpu_supports(void *state, const dwconv_problem *p, char *msg) {
    return gpu_route((gpu_state *)state, p, 0, msg);
}

static dwconv_status gpu_run(void *state, const dwconv_problem *p, char *msg) {
    gpu_state *s = (gpu_state *)state;
    dwconv_status st = gpu_check_alignment(p, msg);
    if (st) return st;
    GPU_ON_DEVICE(scope, s, msg);
    return gpu_route(s, p, 1, msg);
}

static dwconv_status gpu_timer_start(void *state, char *msg) {
    gpu_state *s = (gpu_state *)state;
    GPU_ON_DEVICE(scope, s, msg);
    GPU_TRY(cudaEventRecord(s->start, gpu_stream(s)), msg);
    s->timing = 1;
    return DWCONV_SUCCESS;
}

static dwconv_status gpu_timer_stop(void *state, double *ms, char *msg) {
    gpu_state *s = (gpu_state *)state;
    if (!s->timing) {
        snprintf(msg, DWCONV_MSG_SIZE, "the timer was not started");
        return DWCONV_ERROR_INVALID_VALUE;
    }
    s->timing = 0;
    float elapsed = 0.0f;
    GPU_ON_DEVICE(scope, s, msg);
    GPU_TRY(cudaEventRecord(s->stop, gpu_stream(s)), msg);
    GPU_TRY(cudaEventSynchronize(s->stop), msg);
    GPU_TRY(cudaEventElapsedTime(&elapsed, s->start, s->stop), msg);
    *ms = elapsed;
    return DWCONV_SUCCESS;
}

static const dwconv_module_ops gpu_ops = {
    DWCONV_MODULE_ABI_VERSION,
    sizeof(dwconv_module_ops),
    DWCONV_GPU_NAME,
    gpu_device_count,
    gpu_device_name,
    gpu_context_create,
    gpu_context_destroy,
    gpu_describe,
    gpu_mem_alloc,
    gpu_mem_free,
    gpu_copy_to_backend,
    gpu_copy_to_host,
    gpu_copy_on_backend,
    gpu_synchronize,
    gpu_check_pointer,
    gpu_supports,
    gpu_run,
    gpu_device_check,
    gpu_set_stream,
    gpu_get_stream,
    gpu_set_threads,
    gpu_timer_start,
    gpu_timer_stop,
};

extern "C" __attribute__((visibility("default"))) const dwconv_module_ops *
dwconv_module_entry(void) {
    return &gpu_ops;
}
