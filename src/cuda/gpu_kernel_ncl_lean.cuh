/*
 * Channel-first (positions adjacent; rows anywhere), small K, a compile-time stride S
 * and dilation D (S = D = 1 for K <= GPU_LEAN_MAX_K; a few strided or dilated K = 3
 * instances, GPU_LEAN_STEPPED): the bandwidth-bound common case (the reference
 * problem, causal and "same" convolutions) in few instructions per output, which
 * 2-byte dtypes need (an SM must produce twice as many of their outputs per clock as
 * f32 ones).
 *
 * A block computes one tile of GPU_LEAN_VPT * blockDim.x output vectors of one (b, c)
 * row. Its threads load the tile's x vectors (16-byte aligned in x; S per output
 * vector plus a halo of a few) straight from global memory, all in flight at once,
 * and store each whole into shared memory: one store per vector, no element staging.
 * After one barrier each thread reads its output vectors' windows back (16-byte
 * shared loads) and takes the taps out of registers at compile-time offsets: the
 * window's offset m inside its first vector is the same for a whole row, so one
 * chain of uniform branches per output vector picks the instance for it. Weights live
 * in registers; bias, activation and rounding end in one 16-byte store: tiles start
 * where y's 16-byte vectors start, so every whole output vector is stored aligned
 * whatever the row length, strides or the pointer's offset. Only vectors that cross a
 * row's ends load element by element, with the padding mode. The row starts (b * batch
 * stride + c * channel stride) may be anywhere: m and the first tile are per row.
 *
 * Short rows (ROWS): a block holds several rows, a.row_threads threads each (at least
 * GPU_LEAN_ROW_THREADS, more than a halo's vectors), one tile per row.
 *
 * Carried states (a causal forward, gpu_args.cuh): the positions before 0 load from
 * the row's state instead of the padding, and the row's first tile (the only one that
 * reads the state: a tile is longer than any span lean takes) writes the final state
 * from one thread after the staging barrier.
 *
 * Grid: x = tiles along the row, y = channels (groups of rows with ROWS), z = batch
 * (each strided).
 */
#ifndef DWCONV_GPU_KERNEL_NCL_LEAN_CUH
#define DWCONV_GPU_KERNEL_NCL_LEAN_CUH

#include "gpu_elements.cuh"
#include "gpu_carried.cuh"
#include "gpu_families.h"

/* Blocks per SM the register budget aims at: 5 (48 registers) where that costs no
 * spills (ptxas -v), else 4; stride 2 keeps twice the loads in flight: 3. */
#define GPU_LEAN_MIN_BLOCKS(K, S, D) ((S) > 1 ? 3 : (D) == 1 && (K) <= 5 ? 5 : 4)
/* Short rows' blocks (GPU_LEAN_ROWS_BLOCK threads): 64 registers, which their
 * per-group indexing needs to spill no more than one row per block does. */
#define GPU_LEAN_ROWS_MIN_BLOCKS 8

/* x vector at row positions [p, p + V): whole when inside the row, else element by
 * element as the padding mode reads them, or, with a carried state (before: the row's
 * state_in + S), positions [-S, 0) from it. */
template <int XT>
static __device__ __forceinline__ uint4 gpu_lean_load(const typename gpu_elem<XT>::raw *xrow,
                                                      int64_t L, int mode, int64_t p,
                                                      const typename gpu_elem<XT>::raw *before,
                                                      int64_t S) {
    typedef typename gpu_elem<XT>::raw raw;
    if (p >= 0 && p + gpu_vec_width<XT>::value <= L) return gpu_load16(xrow + p);
    raw e[gpu_vec_width<XT>::value];
#pragma unroll
    for (int j = 0; j < gpu_vec_width<XT>::value; j++)
        e[j] = before && p + j < 0 ? (p + j >= -S ? before[p + j] : (raw)0)
                                   : gpu_padded_raw<XT>(xrow, L, mode, p + j);
    return gpu_vec_pack<XT>(e);
}

/* The window of output vector j for window offset M: tap k of output n is element
 * M + n * S + k * D of the x vectors from j * S on, into xv[n * K + k]. */
template <int XT, int K, int S, int D, int M>
static __device__ __forceinline__ void gpu_lean_window(const uint4 *xs, int j, float *xv) {
    const int V = gpu_vec_width<XT>::value, NV = (M + (V - 1) * S + (K - 1) * D) / V + 1;
    uint4 v[NV];
#pragma unroll
    for (int r = 0; r < NV; r++) v[r] = xs[j * S + r];
#pragma unroll
    for (int n = 0; n < V; n++)
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int e = M + n * S + k * D;
            xv[n * K + k] = gpu_elem<XT>::widen(gpu_vec_get<XT>(v[e / V], e % V));
        }
}

/* gpu_lean_window<.., m> for a run-time m in [0, M]: a chain of uniform branches
 * (only this part depends on m, so the sums and stores exist once). */
template <int XT, int K, int S, int D, int M> struct gpu_lean_pick {
    static __device__ __forceinline__ void window(int m, const uint4 *xs, int j, float *xv) {
        if (m == M) gpu_lean_window<XT, K, S, D, M>(xs, j, xv);
        else gpu_lean_pick<XT, K, S, D, M - 1>::window(m, xs, j, xv);
    }
};
template <int XT, int K, int S, int D> struct gpu_lean_pick<XT, K, S, D, 0> {
    static __device__ __forceinline__ void window(int, const uint4 *xs, int j, float *xv) {
        gpu_lean_window<XT, K, S, D, 0>(xs, j, xv);
    }
};

/* Output vector j of the tile (outputs o0 + j * V ..), if it exists. */
template <int XT, int K, int S, int D>
static __device__ __forceinline__ void gpu_lean_output(const uint4 *xs, int m, int j,
                                                       const float *w, float bias, int activation,
                                                       typename gpu_elem<XT>::raw *yrow,
                                                       int64_t o0, int64_t L_out) {
    const int V = gpu_vec_width<XT>::value;
    const int64_t os = o0 + (int64_t)j * V;
    if (os >= L_out) return;
    float xv[V * K];
    gpu_lean_pick<XT, K, S, D, V - 1>::window(m, xs, j, xv);
    float out[V];
#pragma unroll
    for (int n = 0; n < V; n++) {
        float acc = bias;
#pragma unroll
        for (int k = 0; k < K; k++) acc = DWCONV_FMAF(xv[n * K + k], w[k], acc);
        out[n] = acc;
    }
    gpu_activate_all<V>(activation, out);
    gpu_store_vector<XT>(yrow, os, out, os < 0 ? (int)-os : 0, L_out - os < V ? (int)(L_out - os) : V);
}

/* ROWS: short rows, a.row_threads threads per row and blockDim.x / a.row_threads rows
 * per block, one tile each (gpu_lean_geometry); else one row per block, walking its
 * tiles. */
template <int XT, int WT, int K, int S = 1, int D = 1, bool ROWS = false>
__global__ __launch_bounds__(ROWS ? GPU_LEAN_ROWS_BLOCK : GPU_LEAN_MAX_THREADS,
                             ROWS ? GPU_LEAN_ROWS_MIN_BLOCKS : GPU_LEAN_MIN_BLOCKS(K, S, D))
void dwconv_ncl_lean_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int V = gpu_vec_width<XT>::value;
    const int T = ROWS ? a.row_threads : blockDim.x, RB = ROWS ? blockDim.x / T : 1;
    const int tid = ROWS ? threadIdx.x % T : threadIdx.x, group = ROWS ? threadIdx.x / T : 0;
    const int vectors = T * GPU_LEAN_VPT;
    /* the tile's x vectors (a group's own part of them with ROWS) */
    uint4 *xs = (uint4 *)gpu_shared_base() + (ROWS ? group * gpu_lean_staged(T, V, K, S, D) : 0);
    const int64_t L = a.length, L_out = a.output_length;
    const int64_t tile_outputs = (int64_t)vectors * V;
    bool first = true;

    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t cg = blockIdx.y; cg * RB < a.channels; cg += gridDim.y) {
            const bool row = !ROWS || cg * RB + group < a.channels; /* a group past C idles */
            const int64_t c = row ? cg * RB + group : a.channels - 1;
            const int64_t xoff = b * a.x_stride[0] + c * a.x_stride[1];
            const int64_t yoff = b * a.y_stride[0] + c * a.y_stride[1];
            const raw *xrow = (const raw *)a.x + xoff;
            raw *yrow = (raw *)a.y + yoff;
            const int64_t SL = a.state_length; /* 0 without states (S is the stride) */
            const raw *before = a.state_in ? (const raw *)a.state_in + (b * a.channels + c) * SL + SL : NULL;
            float w[K];
#pragma unroll
            for (int k = 0; k < K; k++) w[k] = gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]);
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            /* tiles start on y's vector boundaries; x's vectors lie m elements earlier
             * than the tiles' windows, the same m for every tile of the row */
            const int64_t o_first = -(int64_t)gpu_misalignment<XT>(a.y, yoff);
            const int m = gpu_misalignment<XT>(a.x, xoff + o_first * S - a.pad_left);
            for (int64_t t = blockIdx.x; t < a.tiles_per_row; t += gridDim.x) {
                const int64_t o0 = o_first + t * tile_outputs;
                if (!ROWS && o0 >= L_out) break; /* the same for the whole block */
                const bool active = row && o0 < L_out; /* with ROWS: one tile, o0 <= 0 */
                const int64_t x0 = o0 * S - a.pad_left - m; /* row position of x vector 0 */
                /* x vectors the tile's existing outputs read */
                const int needed = active ? (int)(((gpu_min64(L_out - o0, tile_outputs) - 1) * S +
                                                   (K - 1) * D + m) / V) + 1
                                          : 0;
                if (!first) __syncthreads(); /* the previous tile's reads are done */
                first = false;
                /* S vectors per output vector, all in flight at once, then the halo
                 * (a few vectors: fewer than T); registers hold them only until they
                 * are stored, so that many blocks fit an SM */
                uint4 own[S * GPU_LEAN_VPT];
#pragma unroll
                for (int i = 0; i < S * GPU_LEAN_VPT; i++) {
                    const int q = tid + i * T;
                    if (q < needed) own[i] = gpu_lean_load<XT>(xrow, L, a.padding_mode, x0 + (int64_t)q * V, before, SL);
                }
                const int halo = S * vectors + tid;
                if (halo < needed)
                    xs[halo] = gpu_lean_load<XT>(xrow, L, a.padding_mode, x0 + (int64_t)halo * V, before, SL);
#pragma unroll
                for (int i = 0; i < S * GPU_LEAN_VPT; i++)
                    if (tid + i * T < needed) xs[tid + i * T] = own[i];
                __syncthreads();
                /* the row's first tile is the only one that reads its state (a tile is
                 * longer than S): after the barrier above its reads are done */
                if (a.state_out && row && t == 0 && tid == 0) gpu_final_state<XT>(a, b * a.channels + c, xrow, 1);
                if (active)
                    for (int i = 0; i < GPU_LEAN_VPT; i++) /* left to the compiler: a large body */
                        gpu_lean_output<XT, K, S, D>(xs, m, tid + i * T, w, bias, a.activation, yrow, o0, L_out);
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NCL_LEAN_CUH */
