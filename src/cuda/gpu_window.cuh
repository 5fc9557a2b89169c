/*
 * Staging a window of one x row into shared memory, raw (unconverted): xs[e] holds
 * padded position w0 + e for e in [0, n). It runs in two halves so that a kernel can
 * overlap the loads of its next tile with the arithmetic of the current one:
 *   gpu_window_load  issues the 16-byte loads of the first GPU_WINDOW_BATCH * T
 *                    vectors into registers (any thread count T),
 *   gpu_window_put   stores them (and loads and stores any further vectors), then
 *                    fills the edges element by element.
 * The vectors are the 16-byte-aligned ones that cover the window and lie wholly
 * inside the row, so interior tiles need no element loads at all; only near the row's
 * ends do the padding mode and partial vectors go element by element. Shared memory
 * is written one element at a time at whatever offset the window starts: every later
 * read of the window is then aligned, for at most a 4-way bank conflict per store.
 */
#ifndef DWCONV_GPU_WINDOW_CUH
#define DWCONV_GPU_WINDOW_CUH

#include "gpu_elements.cuh"

/* Vectors per thread in flight ahead of use: a thread's share of the tile kernel's
 * window is gpu_tile_outputs * stride elements (32 bytes at stride 1, 16 * stride at
 * 16-bit and 32 * stride at f32 beyond), i.e. a few vectors. */
#define GPU_WINDOW_BATCH 5

/* One window: where its whole vectors are, and what is left to do element-wise.
 * Offsets inside the window are ints (a window fits in shared memory). */
template <int DT> struct gpu_window {
    const typename gpu_elem<DT>::raw *vectors; /* the first whole vector */
    int count;       /* whole aligned vectors inside the row covering the window */
    int first;       /* window offset of the first one (may be negative) */
    int n;           /* the window: padded positions [w0, w0 + n) */
    int64_t w0;
    int64_t lo, hi;  /* the window's part inside the row */
};

template <int DT>
static __device__ __forceinline__ gpu_window<DT> gpu_window_plan(const typename gpu_elem<DT>::raw *row,
                                                                 int64_t length, int64_t w0, int n) {
    const int V = gpu_vec_width<DT>::value;
    gpu_window<DT> w;
    w.w0 = w0, w.n = n, w.count = 0, w.first = 0, w.vectors = row;
    w.lo = gpu_max64(w0, 0), w.hi = gpu_min64(w0 + n, length);
    if (w.lo >= w.hi) return w;
    const int mis = gpu_misalignment<DT>(row, 0); /* position p is aligned when (p + mis) % V == 0 */
    int64_t first = w.lo - (w.lo + mis) % V;       /* the vector holding lo */
    if (first < 0) first += V;                     /* it starts before the row */
    int64_t end = w.hi + (V - (w.hi + mis) % V) % V; /* past the vector holding hi-1 */
    if (end > length) end -= V;                    /* it runs past the row */
    if (end > first) {
        w.vectors = row + first;
        w.count = (int)((end - first) / V);
        w.first = (int)(first - w0);
    }
    return w;
}

template <int DT>
static __device__ __forceinline__ void gpu_window_load(const gpu_window<DT> &w, int from, int tid,
                                                       int T, uint4 *v) {
    const int V = gpu_vec_width<DT>::value;
#pragma unroll
    for (int i = 0; i < GPU_WINDOW_BATCH; i++) {
        const int q = from + tid + i * T;
        if (q < w.count) v[i] = gpu_load16(w.vectors + (int64_t)q * V);
    }
}

/* The elements of loaded vectors that fall in the window, into xs. */
template <int DT>
static __device__ __forceinline__ void gpu_window_store(const gpu_window<DT> &w,
                                                        typename gpu_elem<DT>::raw *xs, int from,
                                                        int tid, int T, const uint4 *v) {
    const int V = gpu_vec_width<DT>::value;
#pragma unroll
    for (int i = 0; i < GPU_WINDOW_BATCH; i++) {
        const int q = from + tid + i * T;
        if (q >= w.count) continue;
        const int e0 = w.first + q * V;
        if (e0 >= 0 && e0 + V <= w.n) {
#pragma unroll
            for (int j = 0; j < V; j++) xs[e0 + j] = gpu_vec_get<DT>(v[i], j);
        } else { /* the window's first or last vector */
#pragma unroll
            for (int j = 0; j < V; j++)
                if ((unsigned)(e0 + j) < (unsigned)w.n) xs[e0 + j] = gpu_vec_get<DT>(v[i], j);
        }
    }
}

template <int DT>
static __device__ __forceinline__ void gpu_window_put(const gpu_window<DT> &w,
                                                      typename gpu_elem<DT>::raw *xs,
                                                      const typename gpu_elem<DT>::raw *row,
                                                      int64_t length, int mode, int tid, int T,
                                                      uint4 *v) {
    const int V = gpu_vec_width<DT>::value;
    gpu_window_store<DT>(w, xs, 0, tid, T, v);
    for (int from = GPU_WINDOW_BATCH * T; from < w.count; from += GPU_WINDOW_BATCH * T) {
        gpu_window_load<DT>(w, from, tid, T, v); /* windows larger than one batch */
        gpu_window_store<DT>(w, xs, from, tid, T, v);
    }
    /* Near the row's ends only: padding, and the row's elements no whole vector covers. */
    const int lo = (int)(w.lo - w.w0), hi = (int)(w.hi - w.w0);
    if (lo <= 0 && hi >= w.n && w.count > 0 && w.first <= 0 && w.first + w.count * V >= w.n)
        return; /* an interior window */
    for (int e = tid; e < (lo < w.n ? lo : w.n); e += T)
        xs[e] = gpu_padded_raw<DT>(row, length, mode, w.w0 + e);
    for (int e = (hi > lo ? hi : lo) + tid; e < w.n; e += T)
        xs[e] = gpu_padded_raw<DT>(row, length, mode, w.w0 + e);
    const int covered_lo = w.count ? (w.first > lo ? w.first : lo) : hi;
    const int covered_hi = w.count ? (w.first + w.count * V < hi ? w.first + w.count * V : hi) : hi;
    for (int e = lo + tid; e < covered_lo; e += T) xs[e] = row[w.w0 + e];
    for (int e = covered_hi + tid; e < hi; e += T) xs[e] = row[w.w0 + e];
}

#endif /* DWCONV_GPU_WINDOW_CUH */
