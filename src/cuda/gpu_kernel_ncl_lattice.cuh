/*
 * Channel-first (positions adjacent; rows anywhere), K >= GPU_LATTICE_MIN_K, dilation
 * equal to the stride: the arithmetic-bound kernel. Output o reads positions
 *     o*stride - pad + k*dilation = dilation*(o + k) - pad,
 * a plain stride-1, dilation-1 convolution over the lattice Q[n] = xp[dilation*n - pad].
 * A block stages GPU_LATTICE_THREADS * GPU_LATTICE_RUN outputs' lattice as f32 into
 * shared memory, and each thread computes GPU_LATTICE_RUN consecutive j with a
 * register window that slides over GPU_LATTICE_CHUNK taps at a time: per chunk eight
 * 16-byte shared loads of x and four of weights feed 256 fmas, so the FMA pipe, not
 * shared memory, is the limit. Each output's fmas still run k = 0, 1, ... in order.
 *
 * Shared layout: 4 spare floats after every 32 (gpu_lattice_slot), so 16-byte loads
 * stay aligned and the 8 threads of a quarter-warp, 16 floats apart, hit distinct banks.
 */
#ifndef DWCONV_GPU_KERNEL_NCL_LATTICE_CUH
#define DWCONV_GPU_KERNEL_NCL_LATTICE_CUH

#include "gpu_elements.cuh"
#include "gpu_families.h"

/* Q[n] = f32 of padded position p0 + dilation * n, n < points, into slot(n). */
template <int XT>
static __device__ __forceinline__ void gpu_lattice_stage(float *q, const typename gpu_elem<XT>::raw *xrow,
                                                         int64_t L, int mode, int64_t p0,
                                                         int64_t dilation, int64_t points, int tid) {
    const int T = GPU_LATTICE_THREADS, B = GPU_LATTICE_STAGE_BATCH;
    if (p0 >= 0 && p0 + dilation * (points - 1) < L) { /* no padding: plain loads */
        for (int64_t n0 = tid; n0 < points; n0 += B * T) {
            float v[B];
#pragma unroll
            for (int u = 0; u < B; u++)
                if (n0 + u * T < points) v[u] = gpu_elem<XT>::widen(xrow[p0 + dilation * (n0 + u * T)]);
#pragma unroll
            for (int u = 0; u < B; u++)
                if (n0 + u * T < points) q[gpu_lattice_slot(n0 + u * T)] = v[u];
        }
        return;
    }
    for (int64_t n0 = tid; n0 < points; n0 += B * T) { /* B loads in flight per thread */
        float v[B];
#pragma unroll
        for (int u = 0; u < B; u++) {
            const int64_t n = n0 + u * T;
            v[u] = n < points ? gpu_elem<XT>::widen(gpu_padded_raw<XT>(xrow, L, mode, p0 + dilation * n))
                              : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < B; u++)
            if (n0 + u * T < points) q[gpu_lattice_slot(n0 + u * T)] = v[u];
    }
}

/* acc[i] = the fma chain of output base + i over the K taps, from slot(base + i + k). */
static __device__ __forceinline__ void gpu_lattice_sums(const float *q, const float *ws, int base,
                                                        int K, float *acc) {
    const int R = GPU_LATTICE_RUN, KB = GPU_LATTICE_CHUNK;
    for (int kc = 0; kc < K; kc += KB) {
        float xw[R + KB], w[KB];
#pragma unroll
        for (int r = 0; r < (R + KB) / 4; r++) {
            const float4 f = *(const float4 *)(q + gpu_lattice_slot(base + kc + 4 * r));
            xw[4 * r] = f.x, xw[4 * r + 1] = f.y, xw[4 * r + 2] = f.z, xw[4 * r + 3] = f.w;
        }
#pragma unroll
        for (int r = 0; r < KB / 4; r++) {
            const float4 f = *(const float4 *)(ws + kc + 4 * r);
            w[4 * r] = f.x, w[4 * r + 1] = f.y, w[4 * r + 2] = f.z, w[4 * r + 3] = f.w;
        }
        if (kc + KB <= K) {
#pragma unroll
            for (int kk = 0; kk < KB; kk++)
#pragma unroll
                for (int i = 0; i < R; i++) acc[i] = DWCONV_FMAF(xw[i + kk], w[kk], acc[i]);
        } else {
#pragma unroll
            for (int kk = 0; kk < KB; kk++)
                if (kc + kk < K) {
#pragma unroll
                    for (int i = 0; i < R; i++) acc[i] = DWCONV_FMAF(xw[i + kk], w[kk], acc[i]);
                }
        }
    }
}

template <int XT, int WT>
__global__ __launch_bounds__(GPU_LATTICE_THREADS) void dwconv_ncl_lattice_kernel(gpu_conv_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int T = GPU_LATTICE_THREADS, R = GPU_LATTICE_RUN;
    const int V = gpu_vec_width<XT>::value;
    const int tid = threadIdx.x, base = tid * R;
    const int64_t L = a.length, L_out = a.output_length, K = a.kernel_size;
    const int64_t points = gpu_lattice_points(K);
    float *q = (float *)gpu_shared_base();
    float *ws = (float *)(gpu_shared_base() + gpu_lattice_weights_offset(K));

    /* x: tiles along the row, y: channels, z: batch (each strided) */
    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = blockIdx.y; c < a.channels; c += gridDim.y) {
            const int64_t xoff = b * a.x_stride[0] + c * a.x_stride[1];
            const int64_t yoff = b * a.y_stride[0] + c * a.y_stride[1];
            /* runs start on y's 16-byte boundaries */
            const int hy = gpu_misalignment<XT>(a.y, yoff);
            for (int64_t t = blockIdx.x; t < a.tiles_per_row; t += gridDim.x) {
                const int64_t j0 = t * T * R - hy;
                if (j0 >= L_out) break; /* the same for the whole block */

                __syncthreads(); /* the previous tile's reads are done */
                /* only what existing outputs read; later points only feed unstored sums */
                gpu_lattice_stage<XT>(q, (const raw *)a.x + xoff, L, a.padding_mode,
                                      a.dilation * j0 - a.pad_left, a.dilation,
                                      gpu_min64(points, L_out - j0 + K - 1), tid);
                for (int64_t k = tid; k < points - T * R; k += T)
                    ws[k] = k < K ? gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]) : 0.0f;
                const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
                __syncthreads();

                float acc[R];
#pragma unroll
                for (int i = 0; i < R; i++) acc[i] = bias;
                gpu_lattice_sums(q, ws, base, (int)K, acc);
                gpu_activate_all<R>(a.activation, acc);

                /* consecutive outputs: whole aligned vectors where possible */
                const int64_t jr = j0 + base; /* this thread's first output */
                const int64_t first = gpu_max64(0, -jr), last = gpu_min64(R, L_out - jr);
#pragma unroll
                for (int s = 0; s < R / V; s++)
                    if (s * V + V > first && s * V < last)
                        gpu_store_vector<XT>(a.y, yoff + jr + s * V, acc + s * V,
                                             (int)gpu_max64(first - s * V, 0),
                                             (int)gpu_min64(last - s * V, V));
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NCL_LATTICE_CUH */
