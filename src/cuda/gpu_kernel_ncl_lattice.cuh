/*
 * NCL, K >= 9, dilation a multiple of stride: the arithmetic-bound kernel. With
 * m = dilation / stride, output o = phase + m * j reads positions
 *     (phase + m*j)*stride - pad + k*dilation = phase*stride - pad + dilation*(j + k),
 * so within one phase the convolution is a plain stride-1, dilation-1 one over the
 * lattice Q[n] = xp[phase*stride - pad + dilation*(j0 + n)]. A block takes one phase
 * of a row: it stages GPU_LATTICE_THREADS * GPU_LATTICE_RUN outputs' lattice as f32
 * into shared memory, and each thread computes GPU_LATTICE_RUN consecutive j with a
 * register window that slides over GPU_LATTICE_CHUNK taps at a time: per chunk eight
 * 16-byte shared loads of x and four of weights feed 256 fmas, so the FMA pipe, not
 * shared memory, is the limit. Each output's fmas still run k = 0, 1, ... in order.
 *
 * Shared layout: 4 spare floats after every 32 (gpu_lattice_slot), so 16-byte loads
 * stay aligned and the 8 threads of a quarter-warp, 16 floats apart, hit distinct banks.
 */
#ifndef DWCONV_GPU_KERNEL_NCL_LATTICE_CUH
#define DWCONV_GPU_KERNEL_NCL_LATTICE_CUH

#include "gpu_args.cuh"
#include "gpu_elements.cuh"

#define GPU_LATTICE_THREADS 128
#define GPU_LATTICE_RUN 16  /* consecutive outputs of a phase per thread */
#define GPU_LATTICE_CHUNK 16 /* taps per register window */
#define GPU_LATTICE_MIN_K 9
#define GPU_LATTICE_STAGE_BATCH 16 /* loads in flight per thread while staging */

static __host__ __device__ inline int64_t gpu_lattice_slot(int64_t n) { return n + 4 * (n >> 5); }

/* Lattice points a tile stages (taps padded to whole chunks), and the bytes of shared
 * memory for them plus the weights. */
static __host__ __device__ inline int64_t gpu_lattice_points(int64_t K) {
    const int64_t Kpad = (K + GPU_LATTICE_CHUNK - 1) / GPU_LATTICE_CHUNK * GPU_LATTICE_CHUNK;
    return (int64_t)GPU_LATTICE_THREADS * GPU_LATTICE_RUN + Kpad;
}
static __host__ __device__ inline int64_t gpu_lattice_weights_offset(int64_t K) {
    return (gpu_lattice_slot(gpu_lattice_points(K)) + 4) * 4;
}
static __host__ __device__ inline int64_t gpu_lattice_smem(int64_t K) {
    return gpu_lattice_weights_offset(K) +
           (K + GPU_LATTICE_CHUNK - 1) / GPU_LATTICE_CHUNK * GPU_LATTICE_CHUNK * 4;
}

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
    const int64_t L = a.length, L_out = a.output_length, K = a.kernel_size, m = a.phases;
    const int64_t points = gpu_lattice_points(K);
    float *q = (float *)gpu_shared_base();
    float *ws = (float *)(gpu_shared_base() + gpu_lattice_weights_offset(K));

    /* x: tile and phase, phase fastest, so that blocks of neighbouring phases read the
     * same sectors together; y: channels; z: batch (each strided) */
    const int64_t jt = blockIdx.x / (uint32_t)m, phase = blockIdx.x - jt * m;
    const int64_t count = (L_out - phase + m - 1) / m; /* outputs of this phase */
    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = blockIdx.y; c < a.channels; c += gridDim.y) {
            const int64_t row = b * a.channels + c;
            /* with one phase, runs start on y's 16-byte boundaries */
            const int hy = m == 1 ? gpu_misalignment<XT>(a.y, row * L_out) : 0;
            const int64_t j0 = jt * T * R - hy;
            if (j0 >= count) continue; /* the same for the whole block */

            __syncthreads(); /* the previous row's reads are done */
            /* only what existing outputs read; later points only feed unstored sums */
            gpu_lattice_stage<XT>(q, (const raw *)a.x + row * L, L, a.padding_mode,
                                  phase * a.stride - a.pad_left + a.dilation * j0, a.dilation,
                                  gpu_min64(points, count - j0 + K - 1), tid);
            for (int64_t k = tid; k < points - T * R; k += T)
                ws[k] = k < K ? gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]) : 0.0f;
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            __syncthreads();

            float acc[R];
#pragma unroll
            for (int i = 0; i < R; i++) acc[i] = bias;
            gpu_lattice_sums(q, ws, base, (int)K, acc);
            gpu_activate_all<R>(a.activation, acc);

            const int64_t jr = j0 + base; /* this thread's first j */
            const int64_t first = gpu_max64(0, -jr), last = gpu_min64(R, count - jr);
            if (m == 1) { /* consecutive outputs: whole aligned vectors where possible */
#pragma unroll
                for (int s = 0; s < R / V; s++)
                    if (s * V + V > first && s * V < last)
                        gpu_store_vector<XT>(a.y, row * L_out + jr + s * V, acc + s * V,
                                             (int)gpu_max64(first - s * V, 0),
                                             (int)gpu_min64(last - s * V, V));
            } else {
                raw *yrow = (raw *)a.y + row * L_out;
#pragma unroll
                for (int i = 0; i < R; i++)
                    if (i >= first && i < last) yrow[phase + m * (jr + i)] = gpu_elem<XT>::narrow(acc[i]);
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NCL_LATTICE_CUH */
