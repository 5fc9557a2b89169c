/*
 * Channel-last (channels adjacent; positions and batch entries anywhere), stride 1,
 * dilation 1, any K: the arithmetic-bound channel-last kernel (large K). A thread owns
 * one channel and a run of GPU_COLUMN_RUN consecutive output positions. The x rows its
 * run reads for GPU_COLUMN_CHUNK taps sit in registers as f32 and slide by a chunk at
 * a time, the next chunk's rows in flight during this chunk's fmas: each x element is
 * loaded once per run and feeds up to GPU_COLUMN_RUN fmas, and each fma needs no other
 * load than its weight, one shared load per tap for the whole run. Each output's fmas
 * still run k = 0, 1, ... in order.
 *
 * The weights of the block's channels are staged transposed, as f32, in shared memory,
 * up to GPU_COLUMN_STAGE taps at a time (a block reuses them across its tiles when all
 * taps fit). Lanes take neighbouring channels, so every load and store of a warp is one
 * contiguous piece of a row (whatever the dtype: no vectors, no alignment needed).
 *
 * Grid: x = position tiles (GPU_COLUMN_THREADS / a.channel_threads runs each), y =
 * channel blocks (a.channel_threads channels), z = batch (each strided).
 */
#ifndef DWCONV_GPU_KERNEL_NLC_COLUMN_CUH
#define DWCONV_GPU_KERNEL_NLC_COLUMN_CUH

#include "gpu_elements.cuh"
#include "gpu_families.h"
#include "gpu_carried.cuh"

/* x at row pos (this thread's channel at xb, rows `step` apart) as f32, padded; 0 past
 * the channels (valid false) and past the padded row (rows only unstored sums or
 * skipped taps read). The runs near a row's ends take this path; the others load
 * plainly. */
template <int XT>
static __device__ __forceinline__ float gpu_column_load(const typename gpu_elem<XT>::raw *xb,
                                                        int64_t L, int64_t step, int mode,
                                                        int64_t pos, bool valid) {
    pos = dwconv_source_index(mode, pos, L);
    return valid && pos >= 0 && pos < L ? gpu_elem<XT>::widen(xb[pos * step]) : 0.0f;
}

template <int XT, int WT>
__global__ GPU_LAUNCH_BOUNDS(GPU_COLUMN_THREADS, GPU_COLUMN_MIN_BLOCKS) void dwconv_nlc_column_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int R = GPU_COLUMN_RUN, KC = GPU_COLUMN_CHUNK, W = R + KC - 1;
    const int TC = a.channel_threads, TR = GPU_COLUMN_THREADS / TC;
    const int tid = threadIdx.x, cx = tid % TC, ry = tid / TC;
    const int64_t C = a.channels, L = a.length, L_out = a.output_length, K = a.kernel_size;
    const int64_t stage = gpu_column_stage(K);
    const int64_t pt_begin = (int64_t)blockIdx.x * a.tiles_per_block;
    const int64_t pt_end = gpu_min64(pt_begin + a.tiles_per_block, a.tiles_per_row);
    float *ws = (float *)gpu_shared_base(); /* [stage taps][TC channels] */

    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t cb = blockIdx.y; cb * TC < C; cb += gridDim.y) {
            const int64_t c = cb * TC + cx;
            const bool valid = c < C;
            const raw *xb = (const raw *)a.x + b * a.x_stride[0] + c;
            const int64_t xstep = a.x_stride[2];
            const float bias = a.bias && valid ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            int64_t staged = -1; /* first tap of the weights in ws */
            for (int64_t pt = pt_begin; pt < pt_end; pt++) {
                const int64_t ob = (pt * TR + ry) * R; /* first output position */
                const int64_t p0 = ob - a.pad_left;    /* the row of its first tap */
                /* every row the run loads lies in the row: plain loads, rows xstep apart */
                const bool plain = valid && p0 >= 0 && p0 + K + R + KC - 2 < L;
                const raw *row = plain ? xb + p0 * xstep : xb; /* the next row to load */
                float acc[R];
#pragma unroll
                for (int r = 0; r < R; r++) acc[r] = bias;
                float win[W], next[KC];
                if (plain) {
#pragma unroll
                    for (int e = 0; e < W; e++, row += xstep) win[e] = gpu_elem<XT>::widen(*row);
                } else {
#pragma unroll
                    for (int e = 0; e < W; e++)
                        win[e] = gpu_column_load<XT>(xb, L, xstep, a.padding_mode, p0 + e, valid);
                }
                for (int64_t k0 = 0; k0 < K; k0 += stage) {
                    if (staged != k0) { /* with K <= stage: once per block and row */
                        __syncthreads();
                        for (int e = tid; e < stage * TC; e += GPU_COLUMN_THREADS) {
                            const int64_t cc = cb * TC + e % TC, k = k0 + e / TC;
                            ws[e] = cc < C && k < K
                                        ? gpu_elem<WT>::widen(((const wraw *)a.weight)[cc * K + k])
                                        : 0.0f;
                        }
                        __syncthreads();
                        staged = k0;
                    }
                    const int64_t k_end = gpu_min64(k0 + stage, K);
                    for (int64_t kc = k0; kc < k_end; kc += KC) {
                        /* the next chunk's new rows, in flight during this chunk */
                        if (kc + KC >= K) {
#pragma unroll
                            for (int i = 0; i < KC; i++) next[i] = 0.0f;
                        } else if (plain) {
#pragma unroll
                            for (int i = 0; i < KC; i++, row += xstep) next[i] = gpu_elem<XT>::widen(*row);
                        } else {
#pragma unroll
                            for (int i = 0; i < KC; i++)
                                next[i] = gpu_column_load<XT>(xb, L, xstep, a.padding_mode,
                                                              p0 + kc + W + i, valid);
                        }
                        const float *wk = ws + (kc - k0) * TC + cx;
                        if (kc + KC <= K) {
#pragma unroll
                            for (int kk = 0; kk < KC; kk++) {
                                const float w = wk[kk * TC];
#pragma unroll
                                for (int r = 0; r < R; r++) acc[r] = DWCONV_FMAF(win[r + kk], w, acc[r]);
                            }
                        } else { /* the last, partial chunk */
#pragma unroll
                            for (int kk = 0; kk < KC; kk++)
                                if (kc + kk < K) {
                                    const float w = wk[kk * TC];
#pragma unroll
                                    for (int r = 0; r < R; r++)
                                        acc[r] = DWCONV_FMAF(win[r + kk], w, acc[r]);
                                }
                        }
#pragma unroll
                        for (int e = 0; e < R - 1; e++) win[e] = win[e + KC];
#pragma unroll
                        for (int i = 0; i < KC; i++) win[R - 1 + i] = next[i];
                    }
                }
                if (!valid) continue;
                gpu_activate_all<R, XT>(a.activation, acc);
                raw *yb = (raw *)a.y + b * a.y_stride[0] + c;
#pragma unroll
                for (int r = 0; r < R; r++)
                    if (ob + r < L_out) yb[(ob + r) * a.y_stride[2]] = gpu_elem<XT>::narrow(acc[r]);
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NLC_COLUMN_CUH */
