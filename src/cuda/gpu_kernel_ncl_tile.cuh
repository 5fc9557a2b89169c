/*
 * Channel-first (positions adjacent; rows anywhere), any stride, dilation, K and
 * padding: the general tiled kernel for what lean and lattice do not take (strided or
 * dilated K, mostly). A block (the smallest of 32 to 256 threads whose tile covers the
 * row, gpu_launch.cuh) walks up to tiles_per_block tiles of a.tile_span consecutive
 * outputs of one row (gpu_tile_span), staging each tile's x window into shared
 * memory (gpu_window.cuh, the next tile's loads in flight during the current tile's
 * sums) with the weights as f32. Thread u computes outputs o0 + u + i * blockDim.x, so
 * that at every tap a warp reads consecutive (stride 1) or evenly spread shared-memory
 * words, and stores consecutive outputs. Where the stride divides the dilation, the
 * threads sum runs of one phase instead (gpu_tile_runs: one shared load a tap for
 * GPU_TILE_RUN outputs rather than one an output and tap).
 *
 * Grid: x = chunks of tiles along the row, y = channels, z = batch (each strided).
 */
#ifndef DWCONV_GPU_KERNEL_NCL_TILE_CUH
#define DWCONV_GPU_KERNEL_NCL_TILE_CUH

#include "gpu_families.h"
#include "gpu_carried.cuh"
#include "gpu_window.cuh"

/* The block's barrier: a warp barrier in blocks of one warp (no block barrier to wait
 * at: every warp streams at its own pace), else a block barrier. */
static __device__ __forceinline__ void gpu_tile_sync(int threads) {
    if (threads == GPU_WARP) gpu_sync_warp();
    else __syncthreads();
}

/* Stride dividing dilation: outputs P = D / S apart read window offsets D apart, so a
 * thread sums a run of R = GPU_TILE_RUN outputs t0 + P i of one phase from R values in
 * registers that slide one place a tap (tap k of output t0 + P i is window offset
 * t0 S + D (i + k)), in the order of the loop below (bias, then taps ascending). The
 * tile's n_out outputs (of a span of whole runs of every phase) go to ys, to be stored
 * consecutive; n: the window staged. */
template <int XT>
static __device__ __forceinline__ void gpu_tile_runs(const typename gpu_elem<XT>::raw *xs, const float *ws,
                                                     typename gpu_elem<XT>::raw *ys, int K, int S, int D,
                                                     int span, int n_out, int n, float bias, int activation,
                                                     int tid, int T) {
    const int R = GPU_TILE_RUN, P = D / S, runs = span / R;
    for (int item = tid; item < runs; item += T) {
        const int t0 = item % P + P * R * (item / P);
        if (t0 >= n_out) continue;
        float win[R], acc[R];
#pragma unroll
        for (int i = 0; i < R; i++) {
            const int q = t0 * S + D * i;
            win[i] = q < n ? gpu_elem<XT>::widen(xs[q]) : 0.0f; /* past it: outputs not stored */
            acc[i] = bias;
        }
        for (int k = 0; k < K; k++) {
            const float wk = ws[k];
#pragma unroll
            for (int i = 0; i < R; i++) acc[i] = DWCONV_FMAF(win[i], wk, acc[i]);
#pragma unroll
            for (int i = 0; i + 1 < R; i++) win[i] = win[i + 1];
            const int q = t0 * S + D * (k + R);
            win[R - 1] = q < n ? gpu_elem<XT>::widen(xs[q]) : 0.0f;
        }
        gpu_activate_all<R, XT>(activation, acc);
#pragma unroll
        for (int i = 0; i < R; i++)
            if (t0 + P * i < n_out) ys[t0 + P * i] = gpu_elem<XT>::narrow(acc[i]);
    }
}

/* Any stride and dilation: thread u sums outputs o0 + u + i T (i < gpu_tile_outputs),
 * GPU_TILE_GROUP at a time (16 accumulators spilled; ptxas -v, sm_90), each from its
 * own shared loads, and stores them. */
template <int XT>
static __device__ __forceinline__ void gpu_tile_spread(const typename gpu_elem<XT>::raw *xs, const float *ws,
                                                       typename gpu_elem<XT>::raw *yrow, int64_t o0,
                                                       int64_t L_out, int K, int S, int D, float bias,
                                                       int activation, int tid, int T) {
    const int R = gpu_tile_outputs((int)sizeof(*xs), S), G = GPU_TILE_GROUP;
    for (int h = 0; h < R; h += G) {
        float acc[G];
#pragma unroll
        for (int i = 0; i < G; i++) acc[i] = bias;
        for (int k = 0; k < K; k++) {
            const float wk = ws[k];
            const int base = (tid + h * T) * S + k * D;
#pragma unroll
            for (int i = 0; i < G; i++)
                acc[i] = DWCONV_FMAF(gpu_elem<XT>::widen(xs[base + i * T * S]), wk, acc[i]);
        }
        gpu_activate_all<G, XT>(activation, acc);
#pragma unroll
        for (int i = 0; i < G; i++) {
            const int64_t o = o0 + tid + (int64_t)(h + i) * T;
            if (o < L_out) yrow[o] = gpu_elem<XT>::narrow(acc[i]);
        }
    }
}

/* PHASED: gpu_tile_phased(stride, dilation), the runs of gpu_tile_runs (an instance of
 * its own: 64 registers hold either path, not both; ptxas -v, sm_90). */
template <int XT, int WT, bool PHASED>
__global__ GPU_LAUNCH_BOUNDS(GPU_TILE_MAX_THREADS, 4) void dwconv_ncl_tile_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int T = blockDim.x, tid = threadIdx.x;
    const int64_t tile_outputs = a.tile_span;
    const int64_t L = a.length, L_out = a.output_length, K = a.kernel_size;
    const int S = (int)a.stride, D = (int)a.dilation; /* the window fits shared memory */
    raw *xs = (raw *)gpu_shared_base();
    float *ws = (float *)(gpu_shared_base() + gpu_tile_weights_offset(a.window, sizeof(raw)));
    raw *ys = (raw *)(gpu_shared_base() + gpu_tile_outputs_offset(a.window, sizeof(raw), K));
    const int64_t t_begin = (int64_t)blockIdx.x * a.tiles_per_block;
    const int64_t t_end = gpu_min64(t_begin + a.tiles_per_block, a.tiles_per_row);

    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = blockIdx.y; c < a.channels; c += gridDim.y) {
            const raw *xrow = (const raw *)a.x + b * a.x_stride[0] + c * a.x_stride[1];
            raw *yrow = (raw *)a.y + b * a.y_stride[0] + c * a.y_stride[1];
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            /* a tile stages only what its existing outputs read (the last tile of a row) */
#define GPU_TILE_WINDOW(o0) \
    ((int)gpu_min64(a.window, (gpu_min64(tile_outputs, L_out - (o0)) - 1) * a.stride + (K - 1) * a.dilation + 1))
            uint4 v[GPU_WINDOW_BATCH];
            gpu_window<XT> win = gpu_window_plan<XT>(xrow, L, t_begin * tile_outputs * a.stride - a.pad_left,
                                                     GPU_TILE_WINDOW(t_begin * tile_outputs));
            gpu_window_load<XT>(win, 0, tid, T, v);
            gpu_tile_sync(T); /* the previous row's weights are no longer read */
            for (int64_t k = tid; k < K; k += T)
                ws[k] = gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]);
            for (int64_t t = t_begin; t < t_end; t++) {
                const int64_t o0 = t * tile_outputs;
                gpu_tile_sync(T); /* the previous tile's reads are done */
                gpu_window_put<XT>(win, xs, xrow, L, a.padding_mode, tid, T, v);
                if (t + 1 < t_end) {
                    win = gpu_window_plan<XT>(xrow, L, (o0 + tile_outputs) * a.stride - a.pad_left,
                                              GPU_TILE_WINDOW(o0 + tile_outputs));
                    gpu_window_load<XT>(win, 0, tid, T, v);
                }
                gpu_tile_sync(T);

                if (PHASED) {
                    const int n_out = (int)gpu_min64(tile_outputs, L_out - o0);
                    gpu_tile_runs<XT>(xs, ws, ys, (int)K, S, D, (int)tile_outputs, n_out, GPU_TILE_WINDOW(o0),
                                      bias, a.activation, tid, T);
                    gpu_tile_sync(T);
                    for (int u = tid; u < n_out; u += T) yrow[o0 + u] = ys[u];
                } else {
                    gpu_tile_spread<XT>(xs, ws, yrow, o0, L_out, (int)K, S, D, bias, a.activation, tid, T);
                }
            }
        }
#undef GPU_TILE_WINDOW
}

#endif /* DWCONV_GPU_KERNEL_NCL_TILE_CUH */
