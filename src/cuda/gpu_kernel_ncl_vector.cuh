/*
 * NCL, stride 1, dilation 1, K <= GPU_VECTOR_MAX_K (the bandwidth-bound common case:
 * the reference problem, causal and "same" convolutions). A block walks up to
 * tiles_per_block tiles of GPU_VECTOR_TILE(XT) outputs of one (b, c) row; each thread
 * computes GPU_VECTOR_VPT 16-byte vectors of consecutive outputs per tile. The tile's
 * inputs plus the K-1 halo are staged into shared memory (gpu_window.cuh), the next
 * tile's 16-byte loads already in flight while the current tile is computed; each
 * thread reads its window with aligned 16-byte shared loads, keeps the K weights in
 * registers, and fuses bias, activation and rounding into one 16-byte store.
 *
 * Tiles start where y's 16-byte vectors start (hy below), so every whole output
 * vector is stored aligned whatever the row length or the pointer's offset; the input
 * window's misalignment is absorbed by the staging stores.
 *
 * Grid: x = chunks of tiles along the row, y = channels, z = batch (each strided).
 */
#ifndef DWCONV_GPU_KERNEL_NCL_VECTOR_CUH
#define DWCONV_GPU_KERNEL_NCL_VECTOR_CUH

#include "gpu_args.cuh"
#include "gpu_window.cuh"

#define GPU_VECTOR_THREADS 256
#define GPU_VECTOR_MAX_K 8
#define GPU_VECTOR_TILE(XT) (GPU_VECTOR_THREADS * GPU_VECTOR_VPT * gpu_vec_width<XT>::value)

/* 16-byte reads that cover one output vector's window of V + K - 1 inputs. */
template <int XT, int K> struct gpu_vector_reads {
    enum { value = (gpu_vec_width<XT>::value + K - 1 + gpu_vec_width<XT>::value - 1) /
                   gpu_vec_width<XT>::value };
};

/* Shared memory the kernel needs: the staged window and the zeroed over-read. */
template <int XT, int K> struct gpu_vector_smem {
    enum { elements = GPU_VECTOR_TILE(XT) + (gpu_vector_reads<XT, K>::value - 1) *
                                                gpu_vec_width<XT>::value,
           bytes = elements * (int)sizeof(typename gpu_elem<XT>::raw) };
};

/* Computes one output vector at window offset vec * V and stores outputs [os, os+V). */
template <int XT, int K>
static __device__ __forceinline__ void gpu_vector_output(const typename gpu_elem<XT>::raw *xs,
                                                         int vec, const float *w, float bias,
                                                         int activation, void *y, int64_t at,
                                                         int64_t os, int64_t L_out) {
    const int V = gpu_vec_width<XT>::value, READS = gpu_vector_reads<XT, K>::value;
    float xv[READS * V];
#pragma unroll
    for (int r = 0; r < READS; r++) gpu_vec_widen<XT>(((const uint4 *)(xs + vec * V))[r], xv + r * V);
    float out[V];
#pragma unroll
    for (int i = 0; i < V; i++) {
        float acc = bias;
#pragma unroll
        for (int k = 0; k < K; k++) acc = DWCONV_FMAF(xv[i + k], w[k], acc);
        out[i] = acc;
    }
    gpu_activate_all<V>(activation, out);
    gpu_store_vector<XT>(y, at, out, os < 0 ? (int)-os : 0, L_out - os < V ? (int)(L_out - os) : V);
}

template <int XT, int WT, int K>
__global__ __launch_bounds__(GPU_VECTOR_THREADS, 3) void dwconv_ncl_vector_kernel(gpu_conv_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int V = gpu_vec_width<XT>::value, T = GPU_VECTOR_THREADS, TILE = GPU_VECTOR_TILE(XT);
    const int staged = TILE + K - 1;
    raw *xs = (raw *)gpu_shared_base();
    const int tid = threadIdx.x;
    const int64_t L = a.length, L_out = a.output_length;
    const int64_t t_begin = (int64_t)blockIdx.x * a.tiles_per_block;
    const int64_t t_end = gpu_min64(t_begin + a.tiles_per_block, a.tiles_per_row);

    /* The over-read past the window only feeds outputs that are never stored; zero it
     * once all the same. */
    for (int e = staged + tid; e < gpu_vector_smem<XT, K>::elements; e += T) xs[e] = 0;

    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = blockIdx.y; c < a.channels; c += gridDim.y) {
            const int64_t row = b * a.channels + c;
            const raw *xrow = (const raw *)a.x + row * L;
            float w[K];
#pragma unroll
            for (int k = 0; k < K; k++) w[k] = gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]);
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            const int64_t o_first = -(int64_t)gpu_misalignment<XT>(a.y, row * L_out);
            /* rows starting on a vector boundary may need one tile less */
            const int64_t t_stop = gpu_min64(t_end, (L_out - 1 - o_first) / TILE + 1);
            if (t_begin >= t_stop) continue; /* the same for the whole block */

            /* a tile stages only what its existing outputs read (short rows, last tiles) */
#define GPU_VECTOR_STAGED(o0) ((int)gpu_min64(staged, L_out - (o0) + K - 1))
            uint4 v[GPU_WINDOW_BATCH];
            gpu_window<XT> win = gpu_window_plan<XT>(xrow, L, o_first + t_begin * TILE - a.pad_left,
                                                     GPU_VECTOR_STAGED(o_first + t_begin * TILE));
            gpu_window_load<XT>(win, 0, tid, T, v);
            for (int64_t t = t_begin; t < t_stop; t++) {
                const int64_t o0 = o_first + t * TILE;
                __syncthreads(); /* the previous tile's reads are done */
                gpu_window_put<XT>(win, xs, xrow, L, a.padding_mode, tid, T, v);
                if (t + 1 < t_stop) { /* the next tile's loads fly during this tile's sums */
                    win = gpu_window_plan<XT>(xrow, L, o0 + TILE - a.pad_left, GPU_VECTOR_STAGED(o0 + TILE));
                    gpu_window_load<XT>(win, 0, tid, T, v);
                }
                __syncthreads();
#pragma unroll
                for (int i = 0; i < GPU_VECTOR_VPT; i++) {
                    const int vec = tid + i * T;
                    const int64_t os = o0 + (int64_t)vec * V;
                    if (os < L_out && os + V > 0)
                        gpu_vector_output<XT, K>(xs, vec, w, bias, a.activation, a.y,
                                                 row * L_out + os, os, L_out);
                }
            }
        }
#undef GPU_VECTOR_STAGED
}

#endif /* DWCONV_GPU_KERNEL_NCL_VECTOR_CUH */
