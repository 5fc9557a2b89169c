/*
 * Staging a window of one x row into shared memory, raw (unconverted): xs[e] holds
 * padded position w0 + e for e in [0, count). The part inside [0, L) is read with
 * 16-byte loads from the first 16-byte boundary on (any row, any pointer offset);
 * the rest follows the padding mode. The shared-memory stores are one element each,
 * at whatever offset the window starts: that keeps every later read of the window
 * aligned, and costs at most a 4-way bank conflict on a store per element.
 */
#ifndef DWCONV_GPU_WINDOW_CUH
#define DWCONV_GPU_WINDOW_CUH

#include "gpu_elements.cuh"

/* Vectors per thread loaded before any is stored: loads in flight per thread. */
#define GPU_STAGE_BATCH 4

template <int DT>
static __device__ __forceinline__ void gpu_stage_load(const uint4 *src, int64_t q0, int64_t vectors,
                                                      int nthreads, uint4 *v) {
#pragma unroll
    for (int j = 0; j < GPU_STAGE_BATCH; j++) {
        const int64_t q = q0 + (int64_t)j * nthreads;
        if (q < vectors) v[j] = src[q];
    }
}

template <int DT>
static __device__ __forceinline__ void gpu_stage_store(typename gpu_elem<DT>::raw *dst, int64_t q0,
                                                       int64_t vectors, int nthreads,
                                                       const uint4 *v) {
    const int V = gpu_vec_width<DT>::value;
#pragma unroll
    for (int j = 0; j < GPU_STAGE_BATCH; j++) {
        const int64_t q = q0 + (int64_t)j * nthreads;
        if (q < vectors) {
#pragma unroll
            for (int i = 0; i < V; i++) dst[q * V + i] = gpu_vec_get<DT>(v[j], i);
        }
    }
}

template <int DT>
static __device__ __forceinline__ void gpu_stage_row(typename gpu_elem<DT>::raw *xs,
                                                     const typename gpu_elem<DT>::raw *row,
                                                     int64_t length, int mode, int64_t w0,
                                                     int64_t count, int tid, int nthreads) {
    typedef typename gpu_elem<DT>::raw raw;
    const int V = gpu_vec_width<DT>::value;
    const int64_t lo = gpu_max64(w0, 0), hi = gpu_min64(w0 + count, length);
    if (lo >= hi) { /* all padding */
        for (int64_t e = tid; e < count; e += nthreads)
            xs[e] = gpu_padded_raw<DT>(row, length, mode, w0 + e);
        return;
    }
    const int64_t n = hi - lo;
    int64_t head = (V - gpu_misalignment<DT>(row, lo)) % V;
    if (head > n) head = n;
    const int64_t vectors = (n - head) / V;
    raw *dst = xs + (lo - w0);
    const raw *src = row + lo;
    const uint4 *vsrc = (const uint4 *)(src + head);
    raw *vdst = dst + head;
    const int64_t batch = (int64_t)GPU_STAGE_BATCH * nthreads;

    /* The first batch of vectors is in flight while the scalar parts load. */
    uint4 v[GPU_STAGE_BATCH];
    gpu_stage_load<DT>(vsrc, tid, vectors, nthreads, v);
    for (int64_t e = tid; e < lo - w0; e += nthreads)
        xs[e] = gpu_padded_raw<DT>(row, length, mode, w0 + e);
    for (int64_t e = hi - w0 + tid; e < count; e += nthreads)
        xs[e] = gpu_padded_raw<DT>(row, length, mode, w0 + e);
    for (int64_t e = tid; e < head; e += nthreads) dst[e] = src[e];
    for (int64_t e = head + vectors * V + tid; e < n; e += nthreads) dst[e] = src[e];
    gpu_stage_store<DT>(vdst, tid, vectors, nthreads, v);
    for (int64_t q0 = tid + batch; q0 < vectors; q0 += batch) {
        gpu_stage_load<DT>(vsrc, q0, vectors, nthreads, v);
        gpu_stage_store<DT>(vdst, q0, vectors, nthreads, v);
    }
}

#endif /* DWCONV_GPU_WINDOW_CUH */
