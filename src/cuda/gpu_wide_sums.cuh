/*
 * The sums of the backward's wide kernel (gpu_kernel_bwd_ncl_wide.cuh), and its traits:
 * a lane per run of GPU_WIDE_CHUNK outputs, its values in a shared column of its own;
 * a run's outputs each an fmaf chain over K taps in order, in register blocks of
 * GPU_WIDE_RUN outputs: per block of GPU_WIDE_TAPS taps, a window of R + GPU_WIDE_TAPS - 1
 * values and the block's weights (two 16-byte loads) feed R GPU_WIDE_TAPS fmas, the
 * column's reads its base plus constants. (A forward family on the same columns
 * measured slower than lattice: bench/RESULTS-gpu.md, run K.)
 */
#ifndef DWCONV_GPU_WIDE_SUMS_CUH
#define DWCONV_GPU_WIDE_SUMS_CUH

#include "gpu_elements.cuh"
#include "gpu_families.h"

#define GPU_WIDE_CHUNK 64
#define GPU_WIDE_RUN 16
#define GPU_WIDE_TAPS 8
/* Words from one lane's column to the next: a run's points (GPU_WIDE_CHUNK + span),
 * odd, so that lanes reading the same slot of their columns hit distinct banks. */
GPU_HD int gpu_wide_column(int64_t span) { return (int)(GPU_WIDE_CHUNK + span) | 1; }
/* K padded to whole tap blocks (weights staged with zeros past K, never used). */
GPU_HD int gpu_wide_taps(int64_t K) { return (int)((K + GPU_WIDE_TAPS - 1) / GPU_WIDE_TAPS * GPU_WIDE_TAPS); }

/* acc[j] (j < R) = its value then the fmaf chain over taps t = 0 .. K - 1 of
 * src[j + t] * w[t]: R consecutive outputs' sums, GPU_WIDE_TAPS taps a window of
 * R + GPU_WIDE_TAPS - 1 slots in registers. w: 16-byte aligned, zero-padded to
 * whole tap blocks (the padding is read, never used). */
template <int R>
static __device__ __forceinline__ void gpu_wide_sums(const float *src, const float *w, int K, float *acc) {
    const int TB = GPU_WIDE_TAPS;
    for (int t0 = 0; t0 < K; t0 += TB) {
        float wv[TB], xw[R + TB - 1];
#pragma unroll
        for (int r = 0; r < TB / 4; r++) {
            const float4 f = *(const float4 *)(w + t0 + 4 * r);
            wv[4 * r] = f.x, wv[4 * r + 1] = f.y, wv[4 * r + 2] = f.z, wv[4 * r + 3] = f.w;
        }
        if (t0 + TB <= K) {
#pragma unroll
            for (int r = 0; r < R + TB - 1; r++) xw[r] = src[t0 + r];
#pragma unroll
            for (int kk = 0; kk < TB; kk++)
#pragma unroll
                for (int j = 0; j < R; j++) acc[j] = DWCONV_FMAF(xw[j + kk], wv[kk], acc[j]);
        } else { /* the last, partial block: only slots below R - 1 + K - t0 are read */
#pragma unroll
            for (int r = 0; r < R + TB - 1; r++)
                if (r < R - 1 + K - t0) xw[r] = src[t0 + r];
#pragma unroll
            for (int kk = 0; kk < TB; kk++)
                if (t0 + kk < K) {
#pragma unroll
                    for (int j = 0; j < R; j++) acc[j] = DWCONV_FMAF(xw[j + kk], wv[kk], acc[j]);
                }
        }
    }
}

/* The same for n < R outputs (a chunk's last few), one at a time. */
static __device__ __forceinline__ float gpu_wide_sum(const float *src, const float *w, int K, float acc) {
    for (int t = 0; t < K; t++) acc = DWCONV_FMAF(src[t], w[t], acc);
    return acc;
}

/* put(j, sum) for each of n consecutive outputs j, every sum starting from init: whole
 * register blocks of GPU_WIDE_RUN, then the last few one at a time. */
template <class F>
static __device__ __forceinline__ void gpu_wide_run(const float *src, const float *w, int K, int n, float init,
                                                    F put) {
    const int R = GPU_WIDE_RUN;
    int j0 = 0;
    for (; j0 + R <= n; j0 += R) {
        float acc[R];
#pragma unroll
        for (int j = 0; j < R; j++) acc[j] = init;
        gpu_wide_sums<R>(src + j0, w, K, acc);
#pragma unroll
        for (int j = 0; j < R; j++) put(j0 + j, acc[j]);
    }
    for (; j0 < n; j0++) put(j0, gpu_wide_sum(src + j0, w, K, init));
}

#endif /* DWCONV_GPU_WIDE_SUMS_CUH */
