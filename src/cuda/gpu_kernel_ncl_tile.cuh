/*
 * NCL, any stride, dilation, K and padding: the general tiled kernel for what the
 * vector and lattice kernels do not take (strided or dilated small K, mostly). A
 * block stages the x window of GPU_TILE_OUTPUTS * blockDim.x consecutive outputs of
 * one row into shared memory (gpu_window.cuh) with the weights as f32; thread u then
 * computes outputs o0 + u + i * blockDim.x, so that at every tap a warp reads
 * consecutive (stride 1) or evenly spread shared-memory words, and stores
 * consecutive outputs.
 */
#ifndef DWCONV_GPU_KERNEL_NCL_TILE_CUH
#define DWCONV_GPU_KERNEL_NCL_TILE_CUH

#include "gpu_args.cuh"
#include "gpu_window.cuh"

#define GPU_TILE_MAX_THREADS 256
#define GPU_TILE_OUTPUTS 8 /* per thread */

/* Byte offset of the f32 weights behind a window of `window` raw elements. */
static __host__ __device__ inline int64_t gpu_tile_weights_offset(int64_t window, int xsize) {
    return (window * xsize + 15) / 16 * 16;
}

template <int XT, int WT>
__global__ __launch_bounds__(GPU_TILE_MAX_THREADS) void dwconv_ncl_tile_kernel(gpu_conv_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int R = GPU_TILE_OUTPUTS;
    const int T = blockDim.x, tid = threadIdx.x;
    const int64_t tile_outputs = (int64_t)T * R;
    raw *xs = (raw *)gpu_shared_base();
    float *ws = (float *)(gpu_shared_base() + gpu_tile_weights_offset(a.window, sizeof(raw)));
    const int64_t L = a.length, L_out = a.output_length, K = a.kernel_size;
    const int S = (int)a.stride, D = (int)a.dilation; /* the window fits shared memory */

    for (int64_t tile = blockIdx.x; tile < a.total_tiles; tile += gridDim.x) {
        const int64_t row = tile / a.tiles_per_row;
        const int64_t o0 = (tile - row * a.tiles_per_row) * tile_outputs;
        const int64_t c = row % a.channels;

        __syncthreads(); /* the previous tile's reads are done */
        gpu_stage_row<XT>(xs, (const raw *)a.x + row * L, L, a.padding_mode,
                          o0 * a.stride - a.pad_left, a.window, tid, T);
        for (int64_t k = tid; k < K; k += T)
            ws[k] = gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]);
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
        raw *yrow = (raw *)a.y + row * L_out;
#pragma unroll
        for (int i = 0; i < R; i++) {
            const int64_t o = o0 + tid + (int64_t)i * T;
            if (o < L_out) yrow[o] = gpu_elem<XT>::narrow(dwconv_activate(a.activation, acc[i]));
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_NCL_TILE_CUH */
