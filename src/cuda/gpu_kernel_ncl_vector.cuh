/*
 * NCL, stride 1, dilation 1, K <= GPU_VECTOR_MAX_K (the bandwidth-bound common case:
 * the reference problem, causal and "same" convolutions). A block computes a tile of
 * GPU_VECTOR_TILE outputs of one (b, c) row; each thread one or two 16-byte vectors
 * of consecutive outputs. The block stages the tile's inputs plus the K-1 halo into
 * shared memory once (16-byte global loads); each thread then reads its window with
 * aligned 16-byte shared loads, keeps the K weights in registers, and fuses bias,
 * activation and rounding into one 16-byte store.
 *
 * Tiles start where y's 16-byte vectors start (hy below), so every whole output
 * vector is stored aligned whatever the row length or the pointer's offset; the input
 * window's misalignment is absorbed by the staging stores (gpu_window.cuh).
 */
#ifndef DWCONV_GPU_KERNEL_NCL_VECTOR_CUH
#define DWCONV_GPU_KERNEL_NCL_VECTOR_CUH

#include "gpu_args.cuh"
#include "gpu_window.cuh"

#define GPU_VECTOR_THREADS 256
#define GPU_VECTOR_TILE 2048 /* outputs per tile: 256 threads x 8 outputs */
#define GPU_VECTOR_MAX_K 8

/* 16-byte reads that cover one output vector's window of V + K - 1 inputs. */
template <int XT, int K> struct gpu_vector_reads {
    enum { value = (gpu_vec_width<XT>::value + K - 1 + gpu_vec_width<XT>::value - 1) /
                   gpu_vec_width<XT>::value };
};

/* Shared memory the kernel needs: the staged window and the zeroed over-read. */
template <int XT, int K> struct gpu_vector_smem {
    enum { elements = GPU_VECTOR_TILE + (gpu_vector_reads<XT, K>::value - 1) *
                                            gpu_vec_width<XT>::value,
           bytes = elements * (int)sizeof(typename gpu_elem<XT>::raw) };
};

template <int XT, int WT, int K>
__global__ __launch_bounds__(GPU_VECTOR_THREADS) void dwconv_ncl_vector_kernel(gpu_conv_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int V = gpu_vec_width<XT>::value;
    const int VPT = GPU_VECTOR_TILE / (GPU_VECTOR_THREADS * V); /* vectors per thread */
    const int READS = gpu_vector_reads<XT, K>::value;
    const int staged = GPU_VECTOR_TILE + K - 1;
    raw *xs = (raw *)gpu_shared_base();
    const int tid = threadIdx.x;
    const int64_t L = a.length, L_out = a.output_length;

    /* The over-read past the window is never used in a sum; zero it once. */
    for (int e = staged + tid; e < gpu_vector_smem<XT, K>::elements; e += GPU_VECTOR_THREADS)
        xs[e] = 0;

    for (int64_t tile = blockIdx.x; tile < a.total_tiles; tile += gridDim.x) {
        const int64_t row = tile / a.tiles_per_row;
        const int64_t t = tile - row * a.tiles_per_row;
        const int64_t c = row % a.channels;
        const int hy = gpu_misalignment<XT>(a.y, row * L_out);
        const int64_t o0 = t * GPU_VECTOR_TILE - hy;
        if (o0 >= L_out) continue; /* the same for the whole block */

        __syncthreads(); /* the previous tile's reads are done */
        gpu_stage_row<XT>(xs, (const raw *)a.x + row * L, L, a.padding_mode, o0 - a.pad_left,
                          staged, tid, GPU_VECTOR_THREADS);
        float w[K];
#pragma unroll
        for (int k = 0; k < K; k++) w[k] = gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]);
        const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
        __syncthreads();

#pragma unroll
        for (int v = 0; v < VPT; v++) {
            const int vec = tid + v * GPU_VECTOR_THREADS;
            const int64_t os = o0 + (int64_t)vec * V;
            if (os >= L_out || os + V <= 0) continue;
            float xv[READS * V];
#pragma unroll
            for (int r = 0; r < READS; r++)
                gpu_vec_widen<XT>(((const uint4 *)(xs + vec * V))[r], xv + r * V);
            float out[V];
#pragma unroll
            for (int i = 0; i < V; i++) {
                float acc = bias;
#pragma unroll
                for (int k = 0; k < K; k++) acc = DWCONV_FMAF(xv[i + k], w[k], acc);
                out[i] = dwconv_activate(a.activation, acc);
            }
            gpu_store_vector<XT>(a.y, row * L_out + os, out, os < 0 ? (int)-os : 0,
                                 L_out - os < V ? (int)(L_out - os) : V);
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_NCL_VECTOR_CUH */
