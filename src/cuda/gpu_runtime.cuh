/*
 * What every part of the GPU module shares: the context's state, the device scope,
 * failures as status + message, and the checks of operands the core cannot make.
 * Included by gpu_module.cu (CUDA names; HIP maps them through hip_compat.h).
 */
#ifndef DWCONV_GPU_RUNTIME_CUH
#define DWCONV_GPU_RUNTIME_CUH

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dwconv_index_rules.h"
#include "dwconv_module.h"

#ifndef DWCONV_GPU_NAME
#define DWCONV_GPU_NAME "cuda"
#define DWCONV_GPU_RUNTIME "CUDA"
#define DWCONV_PTR_TYPE(attr) ((attr).type)
#define DWCONV_PTR_MANAGED(attr) ((attr).type == cudaMemoryTypeManaged)
/* the legacy default stream, whatever default the caller's code was built with */
#define DWCONV_GPU_DEFAULT_STREAM cudaStreamLegacy
#endif
#ifndef DWCONV_GPU_ARCHS
#define DWCONV_GPU_ARCHS "" /* unknown: every device is assumed to run the module */
#endif

/* Allocations a context has verified for check_pointer (gpu_pointers.cuh). */
#define GPU_RANGE_CACHE 16
typedef struct gpu_range {
    uintptr_t base, end; /* [base, end); both 0: unused */
} gpu_range;

typedef struct gpu_state {
    int device;
    cudaStream_t stream; /* the caller's, or NULL: the legacy default stream */
    cudaEvent_t start, stop;
    int timing;
    int forced_kernel; /* enum gpu_family_id, from DWCONV_GPU_KERNEL */
    int strict_kernel; /* DWCONV_GPU_KERNEL_STRICT: a forced family that does not apply
                          refuses the problem */
    /* Device scratch for reductions, grown by gpu_scratch and kept: after the first
     * call that needs it, no call allocates (CUDA graph capture stays legal). */
    void *scratch;
    size_t scratch_bytes;
    /* Where kernels that check device-resident index arrays record the first
     * violation: host memory mapped into the device's address space, read (and
     * cleared) by synchronize once the stream's work is done. */
    dwconv_index_violation *violation;
    gpu_range ranges[GPU_RANGE_CACHE];
    int range_next; /* the slot the next verified allocation takes */
} gpu_state;

/* The stream the context's work goes to. */
static cudaStream_t gpu_stream(const gpu_state *s) {
    return s->stream ? s->stream : DWCONV_GPU_DEFAULT_STREAM;
}

/* Makes `device` current for a scope and gives the caller's current device back at
 * its end, as cuBLAS and cuDNN do: a library call must not move the caller's work to
 * another device. cudaGetDevice creates no context, so the check is cheap. */
struct gpu_device_scope {
    int previous;
    cudaError_t err;
    explicit gpu_device_scope(int device) : previous(-1) {
        int current = 0;
        err = cudaGetDevice(&current);
        if (err == cudaSuccess && current != device) {
            err = cudaSetDevice(device);
            if (err == cudaSuccess) previous = current;
        }
    }
    ~gpu_device_scope() {
        if (previous >= 0) (void)cudaSetDevice(previous);
    }
};

/* A failed runtime call: the message names the call and the runtime's words. The
 * source spells calls cudaX; a HIP build calls hipX (hip_compat.h maps the names one
 * to one), so the message says what the user's runtime actually ran. */
static dwconv_status gpu_fail(cudaError_t err, const char *what, char *msg) {
    const char *rest = strncmp(what, "cuda", 4) == 0 ? what + 4 : NULL;
    snprintf(msg, DWCONV_MSG_SIZE, "%s%s: %s: %s", rest ? DWCONV_GPU_NAME : "", rest ? rest : what,
             cudaGetErrorName(err), cudaGetErrorString(err));
    return err == cudaErrorMemoryAllocation ? DWCONV_ERROR_OUT_OF_MEMORY : DWCONV_ERROR_DEVICE;
}

#define GPU_TRY(call, msg)                                                          \
    do {                                                                            \
        cudaError_t err_ = (call);                                                  \
        if (err_ != cudaSuccess) return gpu_fail(err_, #call, (msg));               \
    } while (0)

/* Opens a gpu_device_scope on s's device named `scope`, or returns its failure. */
#define GPU_ON_DEVICE(scope, s, msg)                                                \
    gpu_device_scope scope((s)->device);                                            \
    if (scope.err != cudaSuccess) return gpu_fail(scope.err, "cudaSetDevice", (msg))

/* Every kernel reads and writes whole elements; memory that is not aligned to its
 * element size cannot be used (the cpu backend would take it). */
static dwconv_status check_element_alignment(const void *p, int dtype, const char *what,
                                             char *msg) {
    const size_t size = (size_t)gpu_dtype_size(dtype);
    if (!p || (uintptr_t)p % size == 0) return DWCONV_SUCCESS;
    snprintf(msg, DWCONV_MSG_SIZE, "%s (%p) is not aligned to its %zu-byte elements", what, p,
             size);
    return DWCONV_ERROR_BAD_POINTER;
}

/* Every operand's alignment, for the kernels' typed accesses. */
static dwconv_status gpu_check_alignment(const dwconv_problem *p, char *msg) {
    static const char *const names[DWCONV_ROLE_COUNT] = {
        "x", "weight", "bias", "y", "dy", "dx", "dweight", "dbias", "initial_states",
        "final_states", "conv_state", "cache_seqlens", "state_indices", "cu_seqlens",
        "seq_idx", "dfinal_states", "dinitial_states"};
    for (int r = 0; r < DWCONV_ROLE_COUNT; r++) {
        const dwconv_operand *t = &p->operand[r];
        dwconv_status st = check_element_alignment(t->data, t->dtype, names[r], msg);
        if (st) return st;
    }
    return DWCONV_SUCCESS;
}

/* At least `bytes` of the context's scratch. Growing it frees the old block
 * (cudaFree waits for the device, so no queued kernel still uses it). */
static dwconv_status gpu_scratch(gpu_state *s, size_t bytes, void **scratch, char *msg) {
    if (bytes > s->scratch_bytes) {
        if (s->scratch) GPU_TRY(cudaFree(s->scratch), msg);
        s->scratch = NULL;
        s->scratch_bytes = 0;
        cudaError_t err = cudaMalloc(&s->scratch, bytes);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            s->scratch = NULL;
            snprintf(msg, DWCONV_MSG_SIZE, "%zu bytes of device scratch: %s", bytes,
                     cudaGetErrorString(err));
            return err == cudaErrorMemoryAllocation ? DWCONV_ERROR_OUT_OF_MEMORY
                                                    : DWCONV_ERROR_DEVICE;
        }
        s->scratch_bytes = bytes;
    }
    *scratch = s->scratch;
    return DWCONV_SUCCESS;
}

/* Launches kernel on the context's stream; a failure says which kernel and how. */
static dwconv_status gpu_launch_kernel(gpu_state *s, const void *kernel, const char *name,
                                       const int64_t grid[3], int threads, size_t smem,
                                       void **params, char *msg) {
    const dim3 g((unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]);
    cudaError_t err = cudaLaunchKernel(kernel, g, dim3((unsigned)threads), params, smem,
                                       gpu_stream(s));
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err == cudaSuccess) return DWCONV_SUCCESS;
    (void)cudaGetLastError(); /* a failed launch is not sticky: later calls may work */
    snprintf(msg, DWCONV_MSG_SIZE, "launching the %s kernel (%lldx%lldx%lld blocks of %d "
             "threads, %zu bytes of shared memory): %s: %s", name, (long long)grid[0],
             (long long)grid[1], (long long)grid[2], threads, smem, cudaGetErrorName(err),
             cudaGetErrorString(err));
    return err == cudaErrorMemoryAllocation ? DWCONV_ERROR_OUT_OF_MEMORY : DWCONV_ERROR_DEVICE;
}

#endif /* DWCONV_GPU_RUNTIME_CUH */
