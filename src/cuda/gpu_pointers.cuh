/*
 * Whether a buffer is memory this context's device can use (the module's check_pointer),
 * without a driver query on every call. Included by gpu_module.cu.
 *
 * The rule: a buffer [p, p + bytes) is accepted at once when it lies inside an
 * allocation this context has verified. An allocation is verified, and remembered
 * (the last GPU_RANGE_CACHE per context, oldest forgotten first), when dwconv_malloc
 * makes it on the context, or when a call first passes a pointer into it and the
 * runtime reports it as memory of the context's device or managed memory, the driver
 * giving its base and size (cuMemGetAddressRange, hipMemGetAddressRange). dwconv_free
 * through the context forgets the allocation it frees, and so does the context's end.
 * Memory freed by other means (cudaFree, a framework's allocator releasing a segment)
 * stays trusted until newer allocations displace it: its addresses must not be passed
 * to this context again once they belong to another device or to host memory. Where the
 * driver gives no range, or the buffer runs past it, every call checks the buffer's
 * first and last byte as it did before (nothing is remembered).
 */
#ifndef DWCONV_GPU_POINTERS_CUH
#define DWCONV_GPU_POINTERS_CUH

#include <stdint.h>

#ifndef DWCONV_GPU_IS_HIP
#include <cuda.h> /* the driver's types only: its functions come through the runtime */
#endif

/* The driver's range query: base and size of the allocation holding p; 0 on success. */
typedef int (*gpu_range_query_fn)(uintptr_t p, uintptr_t *base, size_t *size);

#ifdef DWCONV_GPU_IS_HIP
static int gpu_range_query(uintptr_t p, uintptr_t *base, size_t *size) {
    hipDeviceptr_t b = 0;
    if (hipMemGetAddressRange(&b, size, (hipDeviceptr_t)p) != hipSuccess) {
        (void)hipGetLastError();
        return -1;
    }
    *base = (uintptr_t)b;
    return 0;
}
static gpu_range_query_fn gpu_range_query_get(void) { return gpu_range_query; }
#else
typedef CUresult (*gpu_cu_range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr p);
/* Resolved by the first call that needs it, in any thread (atomically: contexts of
 * different threads may race to set the same value), or NULL. */
static gpu_cu_range_fn gpu_cu_range;

static int gpu_range_query(uintptr_t p, uintptr_t *base, size_t *size) {
    CUdeviceptr b = 0;
    const gpu_cu_range_fn fn = __atomic_load_n(&gpu_cu_range, __ATOMIC_ACQUIRE);
    if (fn(&b, size, (CUdeviceptr)p) != CUDA_SUCCESS) return -1;
    *base = (uintptr_t)b;
    return 0;
}

/* cuMemGetAddressRange through the runtime's entry-point query, so that the module
 * links only the static runtime, not libcuda; NULL where the driver lacks it. */
static gpu_range_query_fn gpu_range_query_get(void) {
    if (!__atomic_load_n(&gpu_cu_range, __ATOMIC_ACQUIRE)) {
        void *fn = NULL;
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
        cudaError_t err = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000,
                                                           cudaEnableDefault, &found);
#else
        cudaError_t err = cudaGetDriverEntryPoint("cuMemGetAddressRange", &fn, cudaEnableDefault,
                                                  &found);
#endif
        if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            return NULL;
        }
        __atomic_store_n(&gpu_cu_range, (gpu_cu_range_fn)fn, __ATOMIC_RELEASE);
    }
    return gpu_range_query;
}
#endif

/* Whether [p, p + bytes) lies in an allocation s has verified. */
static int gpu_range_known(const gpu_state *s, uintptr_t p, size_t bytes) {
    for (int i = 0; i < GPU_RANGE_CACHE; i++) {
        const gpu_range *r = &s->ranges[i];
        if (p >= r->base && p < r->end && bytes <= r->end - p) return 1;
    }
    return 0;
}

static void gpu_range_remember(gpu_state *s, uintptr_t base, size_t size) {
    gpu_range *r = &s->ranges[s->range_next];
    r->base = base, r->end = base + size;
    s->range_next = (s->range_next + 1) % GPU_RANGE_CACHE;
}

/* Forgets the allocation that starts at base (dwconv_free). */
static void gpu_range_forget(gpu_state *s, uintptr_t base) {
    for (int i = 0; i < GPU_RANGE_CACHE; i++)
        if (s->ranges[i].base == base) s->ranges[i].base = s->ranges[i].end = 0;
}

/* Device memory of this context's device, or managed memory: the runtime's verdict on
 * one byte, `which` ("first", "last") naming it in the message. */
static dwconv_status check_address(gpu_state *s, const void *p, const char *what,
                                   const char *which, char *msg) {
    cudaPointerAttributes attr;
    memset(&attr, 0, sizeof attr);
    cudaError_t err = cudaPointerGetAttributes(&attr, p);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(msg, DWCONV_MSG_SIZE, "%s: the %s byte is not memory the " DWCONV_GPU_RUNTIME
                 " runtime knows (%s): allocate it with dwconv_malloc", what, which,
                 cudaGetErrorString(err));
        return DWCONV_ERROR_BAD_POINTER;
    }
    if (DWCONV_PTR_MANAGED(attr)) return DWCONV_SUCCESS;
    switch (DWCONV_PTR_TYPE(attr)) {
    case cudaMemoryTypeDevice:
        if (attr.device == s->device) return DWCONV_SUCCESS;
        snprintf(msg, DWCONV_MSG_SIZE, "%s is memory of device %d, but this context runs on "
                 "device %d", what, attr.device, s->device);
        return DWCONV_ERROR_BAD_POINTER;
    default:
        snprintf(msg, DWCONV_MSG_SIZE, "%s: the %s byte is host memory, not memory of device %d: "
                 "allocate it with dwconv_malloc and copy with dwconv_copy_to_backend", what,
                 which, s->device);
        return DWCONV_ERROR_BAD_POINTER;
    }
}

/* The module's check_pointer: the rule above. */
static dwconv_status gpu_check_pointer(void *state, const void *ptr, size_t bytes,
                                       const char *what, char *msg) {
    gpu_state *s = (gpu_state *)state;
    const uintptr_t p = (uintptr_t)ptr;
    if (gpu_range_known(s, p, bytes)) return DWCONV_SUCCESS;
    dwconv_status st = check_address(s, ptr, what, "first", msg);
    if (st != DWCONV_SUCCESS) return st;
    const gpu_range_query_fn query = gpu_range_query_get();
    uintptr_t base = 0;
    size_t size = 0;
    if (query && query(p, &base, &size) == 0 && p >= base && p - base < size &&
        bytes <= size - (p - base)) {
        gpu_range_remember(s, base, size);
        return DWCONV_SUCCESS;
    }
    return bytes > 1 ? check_address(s, (const char *)ptr + bytes - 1, what, "last", msg)
                     : DWCONV_SUCCESS;
}

#endif /* DWCONV_GPU_POINTERS_CUH */
