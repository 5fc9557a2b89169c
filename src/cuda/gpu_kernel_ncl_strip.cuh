/*
 * Channel-first (positions adjacent; rows anywhere), K <= GPU_STRIP_MAX_K (a template
 * argument), any stride, dilation and padding: the taps straight from global memory
 * (the L1 cache keeps what neighbouring outputs share), the weights in registers.
 * The choice gives it short rows (gpu_launch.cuh, GPU_STRIP_ROW), where a staged
 * window of vectors idles most of its lanes and the generic kernel spends hundreds of
 * instructions an output on its indices (bench/RESULTS-gpu.md, run U); it is correct
 * for every channel-first problem in its K range.
 *
 * A tile is GPU_STRIP_RUN * T consecutive outputs of one (b, c) row, T = a.row_threads
 * lanes (4 to 32: the fewest whose tile covers a short row, so that several rows
 * share a warp); lane u computes outputs o0 + u + i T, so that every tap's loads and
 * the stores of a warp are consecutive positions (or stride apart). The activation
 * runs once for a lane's GPU_STRIP_RUN outputs (one branch, not one per output).
 *
 * Grid: x = chunks of tiles_per_block tiles along the row (covering it: gpu_set_grid),
 * y = groups of blockDim.x / T rows of channels, z = batch (y and z strided).
 */
#ifndef DWCONV_GPU_KERNEL_NCL_STRIP_CUH
#define DWCONV_GPU_KERNEL_NCL_STRIP_CUH

#include "gpu_families.h"
#include "gpu_carried.cuh"
#include "gpu_elements.cuh"

template <int XT, int WT, int K>
__global__ GPU_LAUNCH_BOUNDS(GPU_STRIP_THREADS, GPU_STRIP_MIN_BLOCKS) void dwconv_ncl_strip_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int R = GPU_STRIP_RUN;
    const int T = a.row_threads, rows = blockDim.x / T;
    const int lane = threadIdx.x % T, group = threadIdx.x / T;
    const int64_t L = a.length, L_out = a.output_length, S = a.stride, D = a.dilation;
    const int64_t span = (K - 1) * D, tile_outputs = (int64_t)T * R;
    const int64_t t_begin = (int64_t)blockIdx.x * a.tiles_per_block; /* the grid covers the row */
    const int64_t t_end = gpu_min64(t_begin + a.tiles_per_block, a.tiles_per_row);

    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = (int64_t)blockIdx.y * rows + group; c < a.channels; c += (int64_t)gridDim.y * rows) {
            const raw *xrow = (const raw *)a.x + b * a.x_stride[0] + c * a.x_stride[1];
            raw *yrow = (raw *)a.y + b * a.y_stride[0] + c * a.y_stride[1];
            const wraw *wrow = (const wraw *)a.weight + c * K;
            float w[K];
#pragma unroll
            for (int k = 0; k < K; k++) w[k] = gpu_elem<WT>::widen(wrow[k]);
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            for (int64_t t = t_begin; t < t_end; t++) {
                const int64_t o0 = t * tile_outputs + lane;
                /* every tap of the lane's outputs loaded before any sum: a branch does
                 * not wait on a load, a sum does, so the R * K loads are in flight at
                 * once rather than one output's at a time */
                raw e[R][K];
#pragma unroll
                for (int i = 0; i < R; i++) {
                    const int64_t o = o0 + (int64_t)i * T, first = o * S - a.pad_left;
                    if (o < L_out && first >= 0 && first + span < L) {
#pragma unroll
                        for (int k = 0; k < K; k++) e[i][k] = xrow[first + k * D];
                    } else {
#pragma unroll
                        for (int k = 0; k < K; k++)
                            e[i][k] = o < L_out ? gpu_padded_raw<XT>(xrow, L, a.padding_mode, first + k * D)
                                                : (raw)0;
                    }
                }
                float out[R];
#pragma unroll
                for (int i = 0; i < R; i++) {
                    float acc = bias;
#pragma unroll
                    for (int k = 0; k < K; k++) acc = DWCONV_FMAF(gpu_elem<XT>::widen(e[i][k]), w[k], acc);
                    out[i] = acc;
                }
                gpu_activate_all<R, XT>(a.activation, out);
#pragma unroll
                for (int i = 0; i < R; i++) {
                    const int64_t o = o0 + (int64_t)i * T;
                    if (o < L_out) yrow[o] = gpu_elem<XT>::narrow(out[i]);
                }
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NCL_STRIP_CUH */
