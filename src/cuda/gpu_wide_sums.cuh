/*
 * The sums of the backward's wide kernel (gpu_kernel_bwd_ncl_wide.cuh): a run of
 * consecutive outputs, each an fmaf chain over
 * K taps in order, from a lane's own column of f32 values in shared memory, in register
 * blocks: per block of GPU_WIDE_TAPS taps, a window of R + GPU_WIDE_TAPS - 1 values and
 * the block's weights (two 16-byte loads) feed R GPU_WIDE_TAPS fmas. The column's reads
 * are its base plus constants.
 */
#ifndef DWCONV_GPU_WIDE_SUMS_CUH
#define DWCONV_GPU_WIDE_SUMS_CUH

#include "gpu_elements.cuh"
#include "gpu_families.h"

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

#endif /* DWCONV_GPU_WIDE_SUMS_CUH */
