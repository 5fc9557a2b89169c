/* The cpu backend's table: host memory, OpenMP copies, the fast path. Always present,
 * so every program has a backend that works. */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu.h"
#include "fast.h"
#include "reference.h"

typedef struct cpu_state {
    int threads; /* 0: OpenMP's default */
    double timer_start_ms;
} cpu_state;

static int cpu_device_count(char *msg) {
    (void)msg;
    return 1;
}

static dwconv_status cpu_device_name(int device, char *name, size_t size, char *msg) {
    (void)device, (void)msg;
    snprintf(name, size, "host CPU (%s kernels)", dwconv_cpu_simd_name());
    return DWCONV_SUCCESS;
}

static dwconv_status cpu_context_create(int device, void **state, char *msg) {
    (void)device;
    cpu_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, DWCONV_MSG_SIZE, "out of host memory");
        return DWCONV_ERROR_OUT_OF_MEMORY;
    }
    *state = s;
    return DWCONV_SUCCESS;
}

static void cpu_context_destroy(void *state) { free(state); }

static dwconv_status cpu_set_stream(void *state, void *stream, char *msg) {
    (void)state;
    if (!stream) return DWCONV_SUCCESS;
    snprintf(msg, DWCONV_MSG_SIZE, "the cpu backend has no streams: only NULL is accepted");
    return DWCONV_ERROR_UNSUPPORTED;
}

static void *cpu_get_stream(void *state) {
    (void)state;
    return NULL;
}

static int effective_threads(const cpu_state *s) {
#ifdef _OPENMP
    return s->threads > 0 ? s->threads : omp_get_max_threads();
#else
    (void)s;
    return 1;
#endif
}

static dwconv_status cpu_set_threads(void *state, int threads, char *msg) {
    (void)msg;
    ((cpu_state *)state)->threads = threads;
    return DWCONV_SUCCESS;
}

static void cpu_describe(void *state, char *text, size_t size) {
    snprintf(text, size, "simd %s, %d OpenMP thread(s)%s", dwconv_cpu_simd_name(),
             effective_threads(state),
#ifdef _OPENMP
             ""
#else
             " (built without OpenMP)"
#endif
    );
}

static dwconv_status cpu_mem_alloc(void *state, void **ptr, size_t bytes, char *msg) {
    (void)state;
    size_t rounded = (bytes + 63) / 64 * 64; /* aligned_alloc wants a multiple */
    *ptr = rounded >= bytes ? aligned_alloc(64, rounded) : NULL;
    if (!*ptr) {
        snprintf(msg, DWCONV_MSG_SIZE, "cannot allocate %zu bytes of host memory", bytes);
        return DWCONV_ERROR_OUT_OF_MEMORY;
    }
    return DWCONV_SUCCESS;
}

static dwconv_status cpu_mem_free(void *state, void *ptr, char *msg) {
    (void)state, (void)msg;
    free(ptr);
    return DWCONV_SUCCESS;
}

/* One thread's share of a copy. A copy larger than the last-level cache goes around
 * the caches (non-temporal stores, baseline SSE2 on x86-64), as the convolution's own
 * large outputs do: a plain memcpy would first read every destination line, and a
 * ceiling that pays that read is no ceiling. */
static void copy_chunk(char *dst, const char *src, size_t n, int stream) {
#if defined(__SSE2__)
    if (stream) {
        size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
        if (head > n) head = n;
        memcpy(dst, src, head);
        size_t i = head;
        for (; i + 64 <= n; i += 64)
            for (int j = 0; j < 64; j += 16)
                _mm_stream_si128((__m128i *)(dst + i + j),
                                 _mm_loadu_si128((const __m128i *)(src + i + j)));
        memcpy(dst + i, src + i, n - i);
        _mm_sfence(); /* streamed stores are weakly ordered: make them visible */
        return;
    }
#endif
    (void)stream;
    memcpy(dst, src, n);
}

/* The same threads that run the convolution share the copy, so a copy is the fair
 * ceiling for it (the benchmarks' denominator). */
static dwconv_status cpu_copy(void *state, void *dst, const void *src, size_t bytes, char *msg) {
    (void)msg;
    /* bytes / 16: a copied byte costs about a sixteenth of a tap product */
    int nt = dwconv_cpu_thread_count(((cpu_state *)state)->threads, (double)bytes / 16);
    int stream = dwconv_cpu_streams(bytes);
    const size_t chunk = (size_t)1 << 20;
    const int64_t chunks = (int64_t)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t i = 0; i < chunks; i++) {
        size_t at = (size_t)i * chunk, n = bytes - at < chunk ? bytes - at : chunk;
        copy_chunk((char *)dst + at, (const char *)src + at, n, stream);
    }
    return DWCONV_SUCCESS;
}

static dwconv_status cpu_synchronize(void *state, char *msg) {
    (void)state, (void)msg;
    return DWCONV_SUCCESS;
}

static dwconv_status cpu_check_pointer(void *state, const void *ptr, size_t bytes,
                                       const char *what, char *msg) {
    (void)state, (void)ptr, (void)bytes, (void)what, (void)msg;
    return DWCONV_SUCCESS; /* any host memory will do; nothing more can be checked */
}

/* The one route of a problem through this backend, by operation. The index arrays of
 * the causal operations are host memory here: checked before anything is written. */
static dwconv_status cpu_run(void *state, const dwconv_problem *p, char *msg) {
    const int threads = ((cpu_state *)state)->threads;
    dwconv_status st;
    switch (p->op) {
    case DWCONV_OP_FORWARD: st = dwconv_cpu_fast(p, threads); break;
    case DWCONV_OP_BACKWARD: return dwconv_cpu_backward(p, threads, msg);
    case DWCONV_OP_CAUSAL_FORWARD:
    case DWCONV_OP_CAUSAL_UPDATE:
        if ((st = dwconv_ref_check_indices(p, msg))) return st;
        return dwconv_cpu_causal(p, threads, msg);
    default:
        snprintf(msg, DWCONV_MSG_SIZE, "operation %d is not a dwconv operation", (int)p->op);
        return DWCONV_ERROR_INVALID_VALUE;
    }
    if (st == DWCONV_ERROR_UNSUPPORTED) snprintf(msg, DWCONV_MSG_SIZE, "%s", dwconv_cpu_simd_error());
    else if (st) snprintf(msg, DWCONV_MSG_SIZE, "cannot allocate the cpu path's scratch memory");
    return st;
}

static dwconv_status cpu_supports(void *state, const dwconv_problem *p, char *msg) {
    (void)state, (void)p, (void)msg;
    return DWCONV_SUCCESS; /* every operation, every option */
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static dwconv_status cpu_timer_start(void *state, char *msg) {
    (void)msg;
    ((cpu_state *)state)->timer_start_ms = now_ms();
    return DWCONV_SUCCESS;
}

static dwconv_status cpu_timer_stop(void *state, double *ms, char *msg) {
    (void)msg;
    *ms = now_ms() - ((cpu_state *)state)->timer_start_ms;
    return DWCONV_SUCCESS;
}

static const dwconv_module_ops cpu_ops = {
    .abi_version = DWCONV_MODULE_ABI_VERSION,
    .ops_size = sizeof(dwconv_module_ops),
    .name = "cpu",
    .device_count = cpu_device_count,
    .device_name = cpu_device_name,
    .context_create = cpu_context_create,
    .context_destroy = cpu_context_destroy,
    .describe = cpu_describe,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .copy_to_backend = cpu_copy,
    .copy_to_host = cpu_copy,
    .copy_on_backend = cpu_copy,
    .synchronize = cpu_synchronize,
    .check_pointer = cpu_check_pointer,
    .supports = cpu_supports,
    .run = cpu_run,
    .device_check = NULL, /* the core's stub: the host can always run */
    .set_stream = cpu_set_stream,
    .get_stream = cpu_get_stream,
    .set_threads = cpu_set_threads,
    .timer_start = cpu_timer_start,
    .timer_stop = cpu_timer_stop,
};

const dwconv_module_ops *dwconv_cpu_ops(void) { return &cpu_ops; }
