/*
 * NCL, stride 1, dilation 1, K <= GPU_VECTOR_MAX_K (the bandwidth-bound common case:
 * the reference problem, causal and "same" convolutions). A block walks
 * tiles_per_block consecutive tiles of GPU_VECTOR_TILE(XT) outputs, across rows
 * (gpu_items.cuh); each thread computes GPU_VECTOR_VPT 16-byte vectors of consecutive
 * outputs per tile. The tile's
 * inputs plus the K-1 halo are staged into shared memory (gpu_window.cuh), the next
 * tile's 16-byte loads already in flight while the current tile is computed; each
 * thread reads its window with aligned 16-byte shared loads, keeps the K weights in
 * registers, and fuses bias, activation and rounding into one 16-byte store.
 *
 * Tiles start where y's 16-byte vectors start (hy below), so every whole output
 * vector is stored aligned whatever the row length or the pointer's offset; the input
 * window's misalignment is absorbed by the staging stores.
 *
 * Grid: x = runs of tiles_per_block items (strided when there are more).
 */
#ifndef DWCONV_GPU_KERNEL_NCL_VECTOR_CUH
#define DWCONV_GPU_KERNEL_NCL_VECTOR_CUH

#include "gpu_args.cuh"
#include "gpu_items.cuh"
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

/* First output of a tile: tiles start on y's vector boundaries, up to V - 1 outputs
 * before the row. */
template <int XT>
static __device__ __forceinline__ int64_t gpu_vector_o0(const gpu_conv_args &a, gpu_item it) {
    return it.tile * GPU_VECTOR_TILE(XT) - gpu_misalignment<XT>(a.y, it.row * a.output_length);
}

/* The window of the tile's inputs, only as far as existing outputs read. */
template <int XT, int K>
static __device__ __forceinline__ gpu_window<XT> gpu_vector_window(const gpu_conv_args &a, gpu_item it) {
    const int64_t o0 = gpu_vector_o0<XT>(a, it);
    return gpu_window_plan<XT>((const typename gpu_elem<XT>::raw *)a.x + it.row * a.length, a.length,
                               o0 - a.pad_left,
                               (int)gpu_min64(GPU_VECTOR_TILE(XT) + K - 1, a.output_length - o0 + K - 1));
}

/* The next item of [it.index, end) with outputs (rows that start on a vector boundary
 * may have one tile less than tiles_per_row). */
template <int XT>
static __device__ __forceinline__ gpu_item gpu_vector_skip(const gpu_conv_args &a, gpu_item it, int64_t end) {
    while (it.index < end && gpu_vector_o0<XT>(a, it) >= a.output_length)
        it = gpu_item_next(it, a.tiles_per_row);
    return it;
}

template <int XT, int WT, int K>
__global__ __launch_bounds__(GPU_VECTOR_THREADS, 4) void dwconv_ncl_vector_kernel(gpu_conv_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int V = gpu_vec_width<XT>::value, T = GPU_VECTOR_THREADS;
    raw *xs = (raw *)gpu_shared_base();
    const int tid = threadIdx.x;
    const int64_t L = a.length, L_out = a.output_length;
    const int64_t total = a.batch * a.channels * a.tiles_per_row;

    /* The over-read past the window only feeds outputs that are never stored; zero it
     * once all the same. */
    for (int e = GPU_VECTOR_TILE(XT) + K - 1 + tid; e < gpu_vector_smem<XT, K>::elements; e += T) xs[e] = 0;

    for (int64_t first = (int64_t)blockIdx.x * a.tiles_per_block; first < total;
         first += (int64_t)gridDim.x * a.tiles_per_block) {
        const int64_t end = gpu_min64(first + a.tiles_per_block, total);
        gpu_item cur = gpu_vector_skip<XT>(a, gpu_item_at(first, a.tiles_per_row), end);
        uint4 v[GPU_WINDOW_BATCH];
        gpu_window<XT> win;
        if (cur.index < end) {
            win = gpu_vector_window<XT, K>(a, cur);
            gpu_window_load<XT>(win, 0, tid, T, v);
        }
        while (cur.index < end) { /* the same for the whole block */
            const gpu_item next = gpu_vector_skip<XT>(a, gpu_item_next(cur, a.tiles_per_row), end);
            __syncthreads(); /* the previous item's reads are done */
            gpu_window_put<XT>(win, xs, (const raw *)a.x + cur.row * L, L, a.padding_mode, tid, T, v);
            if (next.index < end) { /* the next item's loads fly during this item's sums */
                win = gpu_vector_window<XT, K>(a, next);
                gpu_window_load<XT>(win, 0, tid, T, v);
            }
            const int64_t c = gpu_row_channel(cur.row, a.channels);
            float w[K];
#pragma unroll
            for (int k = 0; k < K; k++) w[k] = gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]);
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            const int64_t o0 = gpu_vector_o0<XT>(a, cur);
            __syncthreads();
#pragma unroll
            for (int i = 0; i < GPU_VECTOR_VPT; i++) {
                const int vec = tid + i * T;
                const int64_t os = o0 + (int64_t)vec * V;
                if (os < L_out && os + V > 0)
                    gpu_vector_output<XT, K>(xs, vec, w, bias, a.activation, a.y,
                                             cur.row * L_out + os, os, L_out);
            }
            cur = next;
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_NCL_VECTOR_CUH */
