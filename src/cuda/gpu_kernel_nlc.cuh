/*
 * Channel-last (channels adjacent; positions and batch entries anywhere), any option.
 * A thread owns one 16-byte vector of consecutive channels and gpu_nlc_run(V)
 * consecutive output positions; a warp's loads and stores
 * are whole 16-byte vectors side by side along the channels, so every access is
 * coalesced. Taps re-read rows the same thread (or its block) read a moment before,
 * from L1. The weights of the block's channels are staged transposed, as f32, in
 * shared memory, GPU_NLC_TAPS taps at a time, so one 16-byte shared load serves a
 * tap of a whole channel vector.
 *
 * Where a channel vector is partial (C not a multiple of the vector width) or the
 * positions do not all start on 16-byte boundaries (vector_x / vector_y false), the
 * same code loads and stores element by element instead.
 */
#ifndef DWCONV_GPU_KERNEL_NLC_CUH
#define DWCONV_GPU_KERNEL_NLC_CUH

#include "gpu_elements.cuh"
#include "gpu_families.h"
#include "gpu_carried.cuh"

/* One channel vector of x at element offset at (channels c .. c+V-1, of which
 * `valid` exist), widened; zeros past the valid ones. */
template <int DT>
static __device__ __forceinline__ void gpu_nlc_load(const void *x, int64_t at, int valid,
                                                    int vector, float *out) {
    typedef typename gpu_elem<DT>::raw raw;
    const int V = gpu_vec_width<DT>::value;
    if (vector && valid == V) {
        gpu_vec_widen<DT>(gpu_load16((const raw *)x + at), out);
        return;
    }
#pragma unroll
    for (int i = 0; i < V; i++) out[i] = i < valid ? gpu_elem<DT>::widen(((const raw *)x)[at + i]) : 0.0f;
}

/* Weights of taps [kc, kc + taps) of channels [cblock, cblock + bc), as f32, into
 * ws[tap][channel] (channels past C get 0). */
template <int WT>
static __device__ __forceinline__ void gpu_nlc_stage_weights(float *ws, const void *weight, int64_t C,
                                                             int64_t K, int64_t cblock, int bc,
                                                             int64_t kc, int taps, int tid) {
    typedef typename gpu_elem<WT>::raw wraw;
    for (int e = tid; e < taps * bc; e += GPU_NLC_THREADS) {
        const int64_t cc = cblock + e % bc;
        ws[e] = cc < C ? gpu_elem<WT>::widen(((const wraw *)weight)[cc * K + kc + e / bc]) : 0.0f;
    }
}

/* Starts moving into L1 the rows [first_pos, first_pos + rows) of this thread's
 * channel vector (rows `step` elements apart): the taps then find them there instead
 * of missing one tap after another. */
template <int XT>
static __device__ __forceinline__ void gpu_nlc_prefetch(const typename gpu_elem<XT>::raw *xb,
                                                        int64_t L, int64_t step, int64_t c,
                                                        int64_t first_pos, int64_t rows) {
    for (int64_t j = gpu_max64(0, -first_pos); j < rows && first_pos + j < L; j++)
        gpu_prefetch_l1(xb + (first_pos + j) * step + c);
}

template <int XT, int WT>
__global__ __launch_bounds__(GPU_NLC_THREADS) void dwconv_nlc_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<WT>::raw wraw;
    typedef typename gpu_elem<XT>::raw raw;
    const int V = gpu_vec_width<XT>::value, R = GPU_NLC_ACCUMULATORS / V;
    const int TC = a.channel_threads, TR = GPU_NLC_THREADS / TC;
    const int tid = threadIdx.x, cx = tid % TC, ry = tid / TC;
    const int64_t C = a.channels, L = a.length, L_out = a.output_length, K = a.kernel_size;
    const int64_t S = a.stride, D = a.dilation;
    const int bc = TC * V; /* channels of a block */
    const int64_t channel_blocks = (C + bc - 1) / bc;
    const int64_t pt_begin = (int64_t)blockIdx.x * a.tiles_per_block;
    const int64_t pt_end = gpu_min64(pt_begin + a.tiles_per_block, a.tiles_per_row);
    float *ws = (float *)gpu_shared_base(); /* [GPU_NLC_TAPS][bc] */

    /* x: position tiles, y: channel blocks, z: batch (each strided) */
    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t cb = blockIdx.y; cb < channel_blocks; cb += gridDim.y) {
            const int64_t cblock = cb * bc, c = cblock + (int64_t)cx * V;
            const int valid = (int)gpu_max64(0, gpu_min64(V, C - c));
            const raw *xb = (const raw *)a.x + b * a.x_stride[0];
            const int64_t xstep = a.x_stride[2], ystep = a.y_stride[2]; /* between positions */
            int64_t staged = -1; /* first tap of the weights in ws */
            /* rows a tile's taps read, at most GPU_NLC_PREFETCH of them ahead */
            const int64_t rows = gpu_min64((R - 1) * S + (K - 1) * D + 1, GPU_NLC_PREFETCH);
            if (valid) gpu_nlc_prefetch<XT>(xb, L, xstep, c, (pt_begin * TR + ry) * R * S - a.pad_left, rows);
            for (int64_t pt = pt_begin; pt < pt_end; pt++) {
                const int64_t ob = (pt * TR + ry) * R; /* first output position */
                const int64_t first_pos = ob * S - a.pad_left;
                if (valid && pt + 1 < pt_end) /* the next tile's rows, during this one */
                    gpu_nlc_prefetch<XT>(xb, L, xstep, c, first_pos + TR * R * S, rows);
                const int interior = first_pos >= 0 && (ob + R - 1) * S + (K - 1) * D - a.pad_left < L;
                float acc[R][V];
#pragma unroll
                for (int i = 0; i < V; i++) {
                    const float bias = a.bias && i < valid
                                           ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c + i])
                                           : 0.0f;
#pragma unroll
                    for (int r = 0; r < R; r++) acc[r][i] = bias;
                }
                for (int64_t kc = 0; kc < K; kc += GPU_NLC_TAPS) {
                    const int taps = (int)gpu_min64(GPU_NLC_TAPS, K - kc);
                    if (staged != kc) { /* with K <= GPU_NLC_TAPS, once per block and row */
                        __syncthreads();
                        gpu_nlc_stage_weights<WT>(ws, a.weight, C, K, cblock, bc, kc, taps, tid);
                        __syncthreads();
                        staged = kc;
                    }
                    for (int kk = 0; kk < taps; kk++) {
                        float w[V];
#pragma unroll
                        for (int i = 0; i < V; i += 4) {
                            const float4 f = *(const float4 *)(ws + kk * bc + cx * V + i);
                            w[i] = f.x, w[i + 1] = f.y, w[i + 2] = f.z, w[i + 3] = f.w;
                        }
                        const int64_t tap = (kc + kk) * D + first_pos;
                        float xv[R][V]; /* all R loads in flight before the first fma */
#pragma unroll
                        for (int r = 0; r < R; r++) {
                            int64_t pos = tap + r * S;
                            if (!interior) {
                                pos = dwconv_source_index(a.padding_mode, pos, L);
                                if (pos >= L) pos = -1;
                            }
                            gpu_nlc_load<XT>(xb, pos * xstep + c, pos >= 0 ? valid : 0, a.vector_x, xv[r]);
                        }
#pragma unroll
                        for (int r = 0; r < R; r++)
#pragma unroll
                            for (int i = 0; i < V; i++) acc[r][i] = DWCONV_FMAF(xv[r][i], w[i], acc[r][i]);
                    }
                }
                if (valid == 0) continue;
#pragma unroll
                for (int r = 0; r < R; r++) {
                    if (ob + r >= L_out) break;
                    float *out = acc[r];
                    gpu_activate_all<V, XT>(a.activation, out);
                    const int64_t at = b * a.y_stride[0] + (ob + r) * ystep + c;
                    if (a.vector_y) gpu_store_vector<XT>(a.y, at, out, 0, valid);
                    else gpu_store_elements<XT>(a.y, at, out, 0, valid);
                }
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NLC_CUH */
