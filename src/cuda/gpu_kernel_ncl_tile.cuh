/*
 * NCL, any stride, dilation, K and padding: the general tiled kernel for what the
 * vector and lattice kernels do not take (strided or dilated small K, mostly). A
 * block walks tiles_per_block consecutive tiles of GPU_TILE_OUTPUTS * blockDim.x
 * outputs, across rows (gpu_items.cuh), staging each tile's x window into shared memory
 * (gpu_window.cuh, the next tile's loads in flight during the current tile's sums)
 * with the weights as f32. Thread u computes outputs o0 + u + i * blockDim.x, so that
 * at every tap a warp reads consecutive (stride 1) or evenly spread shared-memory
 * words, and stores consecutive outputs.
 *
 * Grid: x = runs of tiles_per_block items (strided when there are more).
 */
#ifndef DWCONV_GPU_KERNEL_NCL_TILE_CUH
#define DWCONV_GPU_KERNEL_NCL_TILE_CUH

#include "gpu_args.cuh"
#include "gpu_items.cuh"
#include "gpu_window.cuh"

#define GPU_TILE_MAX_THREADS 256
#define GPU_TILE_OUTPUTS 8 /* per thread */

/* Byte offset of the f32 weights behind a window of `window` raw elements. */
static __host__ __device__ inline int64_t gpu_tile_weights_offset(int64_t window, int xsize) {
    return (window * xsize + 15) / 16 * 16;
}

/* The window of an item's inputs, only as far as existing outputs read. */
template <int XT>
static __device__ __forceinline__ gpu_window<XT> gpu_tile_window(const gpu_conv_args &a, gpu_item it,
                                                                 int64_t tile_outputs) {
    const int64_t o0 = it.tile * tile_outputs;
    const int64_t outputs = gpu_min64(tile_outputs, a.output_length - o0);
    return gpu_window_plan<XT>((const typename gpu_elem<XT>::raw *)a.x + it.row * a.length, a.length,
                               o0 * a.stride - a.pad_left,
                               (int)((outputs - 1) * a.stride + (a.kernel_size - 1) * a.dilation + 1));
}

template <int XT, int WT>
__global__ __launch_bounds__(GPU_TILE_MAX_THREADS, 4) void dwconv_ncl_tile_kernel(gpu_conv_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int R = GPU_TILE_OUTPUTS;
    const int T = blockDim.x, tid = threadIdx.x;
    const int64_t tile_outputs = (int64_t)T * R;
    raw *xs = (raw *)gpu_shared_base();
    float *ws = (float *)(gpu_shared_base() + gpu_tile_weights_offset(a.window, sizeof(raw)));
    const int64_t L = a.length, L_out = a.output_length, K = a.kernel_size;
    const int S = (int)a.stride, D = (int)a.dilation; /* the window fits shared memory */
    const int64_t total = a.batch * a.channels * a.tiles_per_row;

    for (int64_t first = (int64_t)blockIdx.x * a.tiles_per_block; first < total;
         first += (int64_t)gridDim.x * a.tiles_per_block) {
        const int64_t end = gpu_min64(first + a.tiles_per_block, total);
        gpu_item cur = gpu_item_at(first, a.tiles_per_row);
        uint4 v[GPU_WINDOW_BATCH];
        gpu_window<XT> win = gpu_tile_window<XT>(a, cur, tile_outputs);
        gpu_window_load<XT>(win, 0, tid, T, v);
        int64_t staged_row = -1; /* the row whose weights ws holds */
        for (; cur.index < end; cur = gpu_item_next(cur, a.tiles_per_row)) {
            const int64_t c = gpu_row_channel(cur.row, a.channels);
            __syncthreads(); /* the previous item's reads are done */
            gpu_window_put<XT>(win, xs, (const raw *)a.x + cur.row * L, L, a.padding_mode, tid, T, v);
            if (cur.index + 1 < end) { /* the next item's loads fly during this item's sums */
                win = gpu_tile_window<XT>(a, gpu_item_next(cur, a.tiles_per_row), tile_outputs);
                gpu_window_load<XT>(win, 0, tid, T, v);
            }
            if (staged_row != cur.row) {
                for (int64_t k = tid; k < K; k += T)
                    ws[k] = gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]);
                staged_row = cur.row;
            }
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            __syncthreads();

            float acc[R];
#pragma unroll
            for (int i = 0; i < R; i++) acc[i] = bias;
            for (int k = 0; k < (int)K; k++) {
                const float wk = ws[k];
                const int base = tid * S + k * D;
#pragma unroll
                for (int i = 0; i < R; i++)
                    acc[i] = DWCONV_FMAF(gpu_elem<XT>::widen(xs[base + i * T * S]), wk, acc[i]);
            }
            gpu_activate_all<R>(a.activation, acc);
            raw *yrow = (raw *)a.y + cur.row * L_out;
            const int64_t o0 = cur.tile * tile_outputs;
#pragma unroll
            for (int i = 0; i < R; i++) {
                const int64_t o = o0 + tid + (int64_t)i * T;
                if (o < L_out) yrow[o] = gpu_elem<XT>::narrow(acc[i]);
            }
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_NCL_TILE_CUH */
