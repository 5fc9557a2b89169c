/*
 * Channel-first (positions adjacent; rows anywhere), small K, a compile-time stride S
 * and dilation D (S = D = 1 for K <= GPU_LEAN_MAX_K; a few strided or dilated K = 3
 * instances, GPU_LEAN_STEPPED): the bandwidth-bound common case (the reference
 * problem, causal and "same" convolutions) in few instructions per output, which
 * 2-byte dtypes need (an SM must produce twice as many of their outputs per clock as
 * f32 ones).
 *
 * A tile is GPU_LEAN_VPT * T output vectors of one (b, c) row, computed by T lanes
 * of one logical warp (T = a.row_threads: GPU_WARP, or 8 or 16 for rows that a smaller
 * tile covers, several rows to a warp then). Its lanes load the tile's x vectors
 * (16-byte aligned in x; S per output vector plus a halo of a few) straight from
 * global memory, all in flight at once, and store each whole into the tile's own
 * shared memory: one store per vector, no element staging. After a warp barrier each
 * lane reads its output vectors' windows back (16-byte shared loads) and takes the
 * taps out of registers at compile-time offsets: the window's offset m inside its
 * first vector is the same for a whole row, so one chain of uniform branches per tile
 * picks the instance for it. Weights live in registers; bias, activation and rounding
 * end in one 16-byte store: tiles start where y's 16-byte vectors start, so every
 * whole output vector is stored aligned whatever the row length, strides or the
 * pointer's offset. Only vectors that cross a row's ends load element by element,
 * with the padding mode. The row starts (b * batch stride + c * channel stride) may
 * be anywhere: m and the first tile are per row.
 *
 * Why warps and not blocks: with a block barrier between staging and compute, a
 * block's warps wait for each other's loads and the SM's memory pipe idles between
 * phases; warp-sized tiles keep loads of some warps in flight while others compute
 * (bench/RESULTS-gpu.md, run H: the 16-bit reference problem gained most).
 *
 * Carried states (a causal forward, gpu_args.cuh): the positions before 0 load from
 * the row's state instead of the padding, and the row's first tile (the only one that
 * reads the state: a tile is longer than any span lean takes) writes the final state
 * after its warp barrier, an entry a lane.
 *
 * Grid: x = blocks of consecutive tasks, striding over the rest.
 */
#ifndef DWCONV_GPU_KERNEL_NCL_LEAN_CUH
#define DWCONV_GPU_KERNEL_NCL_LEAN_CUH

#include "gpu_elements.cuh"
#include "gpu_carried.cuh"
#include "gpu_families.h"

/* Blocks per SM the register budget aims at. Blocks of one warp: 32, the most an SM
 * holds (64 registers, which one-warp blocks fit: the tile's row, offsets and bounds
 * are the same in every lane, and the compiler keeps them in uniform registers); 24
 * (80 registers) where 64 spill more than a few words: stride 2, K 8. Short rows
 * (each lane holds its own row's values, uniform or not): blocks of
 * GPU_LEAN_ROWS_BLOCK threads, 6 (80 registers), 4 at stride 2. ptxas -v (sm_90): at
 * most 128 bytes spilled at these. Where an SM holds fewer blocks, that many
 * (GPU_SM_BLOCKS_AT_MOST, gpu_portable.cuh). */
#define GPU_LEAN_MIN_BLOCKS(K, S, ROWS) \
    ((ROWS) ? ((S) > 1 ? 4 : 6) : GPU_SM_BLOCKS_AT_MOST((S) > 1 || (K) > 7 ? 24 : 32))

/* Whether the x vector at row positions [p, p + V) lies inside the row (one 16-byte
 * load), or crosses an end of it (gpu_lean_edge). */
template <int XT> static __device__ __forceinline__ bool gpu_lean_inside(int64_t p, int64_t L) {
    return p >= 0 && p + gpu_vec_width<XT>::value <= L;
}

/* The x vector at row positions [p, p + V) that crosses an end of the row, element by
 * element as the padding mode reads them, or, with a carried state (before: the row's
 * state_in + S), positions [-S, 0) from it. Kept apart from the 16-byte loads so that
 * their loop stays small: the kernel loads these after all the others. */
template <int XT>
static __device__ __forceinline__ uint4 gpu_lean_edge(const typename gpu_elem<XT>::raw *xrow,
                                                      int64_t L, int mode, int64_t p,
                                                      const typename gpu_elem<XT>::raw *before,
                                                      int64_t S) {
    typedef typename gpu_elem<XT>::raw raw;
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

/* Output vector j of the tile (outputs o0 + j * V ..), if it exists, its window at
 * offset M; activation ACT. */
template <int XT, int K, int S, int D, int ACT, int M>
static __device__ __forceinline__ void gpu_lean_output(const uint4 *xs, int j, const float *w,
                                                       float bias, typename gpu_elem<XT>::raw *yrow,
                                                       int64_t o0, int64_t L_out) {
    const int V = gpu_vec_width<XT>::value;
    const int64_t os = o0 + (int64_t)j * V;
    if (os >= L_out) return;
    float xv[V * K];
    gpu_lean_window<XT, K, S, D, M>(xs, j, xv);
    float out[V];
#pragma unroll
    for (int n = 0; n < V; n++) {
        float acc = bias;
#pragma unroll
        for (int k = 0; k < K; k++) acc = DWCONV_FMAF(xv[n * K + k], w[k], acc);
        out[n] = acc;
    }
    gpu_activate_fixed<ACT, V, XT>(out);
    if (os >= 0 && os + V <= L_out) gpu_store16(yrow + os, gpu_vec_narrow<XT>(out)); /* aligned */
    else gpu_store_elements<XT>(yrow, os, out, os < 0 ? (int)-os : 0, L_out - os < V ? (int)(L_out - os) : V);
}

/* A lane's output vectors of the tile (tid + i * T), for a run-time window offset m in
 * [0, M]: a chain of uniform branches once per tile picks the instance (only the
 * windows depend on m). */
template <int XT, int K, int S, int D, int ACT, int M> struct gpu_lean_pick {
    static __device__ __forceinline__ void outputs(int m, const uint4 *xs, int tid, int T, const float *w,
                                                   float bias, typename gpu_elem<XT>::raw *yrow,
                                                   int64_t o0, int64_t L_out) {
        if (m == M) {
            /* one vector at a time: unrolled, their windows' loads interleave and the
             * f32 and stride-2 instances spill (ptxas -v; slower, bench/RESULTS-gpu.md
             * run H), and silu's, a little faster unrolled, double the module's code */
#pragma unroll 1
            for (int i = 0; i < GPU_LEAN_VPT; i++)
                gpu_lean_output<XT, K, S, D, ACT, M>(xs, tid + i * T, w, bias, yrow, o0, L_out);
        } else {
            gpu_lean_pick<XT, K, S, D, ACT, M - 1>::outputs(m, xs, tid, T, w, bias, yrow, o0, L_out);
        }
    }
};
template <int XT, int K, int S, int D, int ACT> struct gpu_lean_pick<XT, K, S, D, ACT, -1> {
    static __device__ __forceinline__ void outputs(int, const uint4 *, int, int, const float *, float,
                                                   typename gpu_elem<XT>::raw *, int64_t, int64_t) {}
};

/* The tile's outputs with activation ACT. */
template <int XT, int K, int S, int D, int ACT>
static __device__ __forceinline__ void gpu_lean_outputs(const uint4 *xs, int m, int tid, int T,
                                                        const float *w, float bias,
                                                        typename gpu_elem<XT>::raw *yrow,
                                                        int64_t o0, int64_t L_out) {
    gpu_lean_pick<XT, K, S, D, ACT, gpu_vec_width<XT>::value - 1>::outputs(m, xs, tid, T, w, bias, yrow,
                                                                            o0, L_out);
}

/* The tile's outputs with the instance's activation: SILU's own instance, or none and
 * relu by one branch per tile (so that silu's registers and code are not theirs). */
template <int XT, int K, int S, int D, bool SILU>
static __device__ __forceinline__ void gpu_lean_tile(const gpu_conv_args &a, const uint4 *xs, int m, int tid,
                                                     int T, const float *w, float bias,
                                                     typename gpu_elem<XT>::raw *yrow, int64_t o0) {
    if (SILU)
        gpu_lean_outputs<XT, K, S, D, DWCONV_ACT_SILU>(xs, m, tid, T, w, bias, yrow, o0, a.output_length);
    else if (a.activation == DWCONV_ACT_RELU)
        gpu_lean_outputs<XT, K, S, D, DWCONV_ACT_RELU>(xs, m, tid, T, w, bias, yrow, o0, a.output_length);
    else
        gpu_lean_outputs<XT, K, S, D, DWCONV_ACT_NONE>(xs, m, tid, T, w, bias, yrow, o0, a.output_length);
}

/* Batch entry, channel and chunk of task `task` (chunks of a row numbered along it,
 * rows batch-major): 32-bit divisions where the numbers fit, as they nearly always do. */
static __device__ __forceinline__ void gpu_lean_task(int64_t task, int64_t row_chunks,
                                                     int64_t channels, int64_t tasks,
                                                     int64_t *b, int64_t *c, int64_t *k) {
    if (tasks <= (int64_t)UINT32_MAX) {
        const uint32_t r = (uint32_t)task / (uint32_t)row_chunks;
        *k = (uint32_t)task - r * (uint32_t)row_chunks;
        *b = r / (uint32_t)channels, *c = r - (uint32_t)*b * (uint32_t)channels;
    } else {
        const int64_t r = task / row_chunks;
        *k = task - r * row_chunks;
        *b = r / channels, *c = r - *b * channels;
    }
}

/* ROWS: tiles of a.row_threads lanes (8 or 16), one short row each, several rows in
 * each warp of a block of GPU_LEAN_ROWS_BLOCK threads; else blocks of one warp, tiles
 * of the whole warp (T = GPU_WARP at compile time, which keeps a tile's values
 * uniform), a chunk of
 * a.tiles_per_block consecutive tiles along a row per task, the row's setup (offsets,
 * weights) once per chunk. Tasks are numbered row by row over the whole problem and
 * a warp takes consecutive ones; its lanes stage and read back only their own shared
 * memory, with warp barriers, so that every warp streams at its own pace. Every lane
 * of the warp runs the loops alike (a group without a tile idles through them), as
 * the warp barrier needs. SILU: the instance for silu; the other takes no activation
 * and relu (one branch per tile), so that silu's registers and code are not the
 * others'. */
/* Weight (or bias) i as f32: the weight dtype is f32 or x's (the core has checked), a
 * run-time choice made once per task, so that it needs no instances of its own. */
template <int XT>
static __device__ __forceinline__ float gpu_lean_weight(const gpu_conv_args &a, const void *w, int64_t i) {
    return a.weight_dtype == DWCONV_F32 ? gpu_elem<DWCONV_F32>::widen(((const uint32_t *)w)[i])
                                        : gpu_elem<XT>::widen(((const typename gpu_elem<XT>::raw *)w)[i]);
}

/* x vectors [0, needed) that the tile at o0 reads: those under its existing outputs
 * (none if it has none), x vector 0 being m elements before its first window. */
template <int XT, int K, int S, int D>
static __device__ __forceinline__ int gpu_lean_needed(bool active, int64_t o0, int64_t L_out,
                                                      int64_t tile_outputs, int m) {
    const int V = gpu_vec_width<XT>::value;
    return active ? (int)(((gpu_min64(L_out - o0, tile_outputs) - 1) * S + (K - 1) * D + m) / V) + 1 : 0;
}
/* The end of row (b, c)'s carried state (positions [-state_length, 0) before the row,
 * for gpu_lean_edge), or NULL without states. */
template <int XT>
static __device__ __forceinline__ const typename gpu_elem<XT>::raw *gpu_lean_state_end(const gpu_conv_args &a,
                                                                                       int64_t b, int64_t c) {
    const int64_t SL = a.state_length;
    return a.state_in ? (const typename gpu_elem<XT>::raw *)a.state_in + (b * a.channels + c) * SL + SL : NULL;
}

/* The task's tiles [t_begin, t_end) of one whole-warp row (GPU_LEAN_PIPELINED): each
 * tile's x vectors staged by 16-byte asynchronous copies (the row ends element by
 * element) into one of two buffers, tile t + 1's copies issued before tile t computes,
 * so that a warp's loads stay in flight through its arithmetic without registers. The
 * same windows and outputs as the register path. */
template <int XT, int K, int S, int D, bool SILU>
static __device__ __forceinline__ void gpu_lean_pipelined(const gpu_conv_args &a, uint4 *xs, bool have,
                                                          int64_t b, int64_t c,
                                                          const typename gpu_elem<XT>::raw *xrow,
                                                          typename gpu_elem<XT>::raw *yrow, const float *w,
                                                          float bias, int64_t o_first, int m,
                                                          int64_t t_begin, int64_t t_end) {
    typedef typename gpu_elem<XT>::raw raw;
    const int V = gpu_vec_width<XT>::value, T = GPU_WARP, tid = threadIdx.x;
    const int64_t L = a.length, L_out = a.output_length, tile_outputs = (int64_t)T * GPU_LEAN_VPT * V;
    uint4 *const other = xs + gpu_lean_staged(T, V, K, S, D);
    const raw *before = gpu_lean_state_end<XT>(a, b, c);
    /* x vectors [0, needed) of tile t into buf */
    auto stage = [&](int64_t t, uint4 *buf) {
        const int64_t o0 = o_first + t * tile_outputs, x0 = o0 * S - a.pad_left - m;
        const int needed = gpu_lean_needed<XT, K, S, D>(have && o0 < L_out, o0, L_out, tile_outputs, m);
        for (int q = tid; q < needed; q += T) {
            const int64_t p = x0 + (int64_t)q * V;
            if (gpu_lean_inside<XT>(p, L)) gpu_copy16_async(buf + q, xrow + p);
            else buf[q] = gpu_lean_edge<XT>(xrow, L, a.padding_mode, p, before, a.state_length);
        }
    };
    if (t_begin < t_end) stage(t_begin, xs);
    gpu_copy_commit();
    for (int64_t t = t_begin; t < t_end; t++) {
        const bool odd = (t - t_begin) & 1;
        if (t + 1 < t_end) stage(t + 1, odd ? xs : other);
        gpu_copy_commit(); /* (empty after the last tile: the wait below still leaves one group) */
        gpu_copy_wait_but_newest(); /* tile t's copies */
        gpu_sync_warp();
        /* the row's first tile is the only one that reads its state: its loads are done */
        if (a.state_out && have && t == 0) gpu_final_state_lanes<XT>(a, b * a.channels + c, xrow, 1, tid, T);
        const int64_t o0 = o_first + t * tile_outputs;
        const uint4 *buf = odd ? other : xs;
        if (have && o0 < L_out) gpu_lean_tile<XT, K, S, D, SILU>(a, buf, m, tid, T, w, bias, yrow, o0);
        gpu_sync_warp(); /* buf is read: tile t + 2 may be staged there */
    }
}

template <int XT, int K, int S = 1, int D = 1, bool ROWS = false, bool SILU = false>
__global__ GPU_LAUNCH_BOUNDS(ROWS ? GPU_LEAN_ROWS_BLOCK : GPU_WARP, GPU_LEAN_MIN_BLOCKS(K, S, ROWS))
void dwconv_ncl_lean_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<XT>::raw raw;
    const int V = gpu_vec_width<XT>::value;
    const int T = ROWS ? a.row_threads : GPU_WARP;
    const int tid = ROWS ? threadIdx.x % T : threadIdx.x, group = ROWS ? threadIdx.x / T : 0;
    const int groups = ROWS ? blockDim.x / T : 1, warp_groups = ROWS ? GPU_WARP / T : 1;
    const int vectors = T * GPU_LEAN_VPT;
    uint4 *xs = (uint4 *)gpu_shared_base() + group * gpu_lean_staged(T, V, K, S, D);
    const int64_t L = a.length, L_out = a.output_length;
    const int64_t tile_outputs = (int64_t)vectors * V;
    const int64_t chunk = ROWS ? 1 : a.tiles_per_block; /* tiles per task (ROWS: one a row) */
    const int64_t row_chunks = (a.tiles_per_row + chunk - 1) / chunk;
    const int64_t tasks = row_chunks * a.channels * a.batch;
    const int64_t step = (int64_t)gridDim.x * groups;

    /* w0: the task of the warp's first group (the same in every lane of the warp) */
    for (int64_t w0 = (int64_t)blockIdx.x * groups + group - group % warp_groups; w0 < tasks; w0 += step) {
        const int64_t task = w0 + group % warp_groups;
        const bool have = task < tasks;
        int64_t b = 0, c = 0, k = 0;
        if (have) gpu_lean_task(task, row_chunks, a.channels, tasks, &b, &c, &k);
        const int64_t xoff = b * a.x_stride[0] + c * a.x_stride[1];
        const int64_t yoff = b * a.y_stride[0] + c * a.y_stride[1];
        const raw *xrow = (const raw *)a.x + xoff;
        raw *yrow = (raw *)a.y + yoff;
        float w[K];
#pragma unroll
        for (int i = 0; i < K; i++) w[i] = gpu_lean_weight<XT>(a, a.weight, c * K + i);
        const float bias = a.bias ? gpu_lean_weight<XT>(a, a.bias, c) : 0.0f;
        /* tiles start on y's vector boundaries; x's vectors lie m elements earlier
         * than the tiles' windows, the same m for every tile of the row */
        const int64_t o_first = -(int64_t)gpu_misalignment<XT>(a.y, yoff);
        const int m = gpu_misalignment<XT>(a.x, xoff + o_first * S - a.pad_left);
        const int64_t t_begin = k * chunk, t_end = gpu_min64(t_begin + chunk, a.tiles_per_row);
        if constexpr (GPU_LEAN_PIPELINED(S, ROWS)) {
            gpu_lean_pipelined<XT, K, S, D, SILU>(a, xs, have, b, c, xrow, yrow, w, bias, o_first, m, t_begin, t_end);
        } else {
            for (int64_t t = t_begin; t < t_end; t++) { /* ROWS: once (chunk and tiles_per_row are 1) */
                const int64_t o0 = o_first + t * tile_outputs;
                const bool active = have && o0 < L_out; /* the last tile of a row may be empty */
                const int64_t x0 = o0 * S - a.pad_left - m; /* row position of x vector 0 */
                const int needed = gpu_lean_needed<XT, K, S, D>(active, o0, L_out, tile_outputs, m);
                /* S vectors per output vector, all in flight at once, then the halo (a few
                 * vectors: fewer than T); registers hold them only until they are stored.
                 * Bit i of edges: vector i crosses a row end (bit S * VPT: the halo's). */
                const int OWN = S * GPU_LEAN_VPT; /* own[OWN]: the halo's */
                uint4 own[OWN + 1];
                const int halo = S * vectors + tid;
#define GPU_LEAN_SLOT(i) ((i) < OWN ? tid + (i) * T : halo) /* x vector of own[i] */
                unsigned edges = 0;
#pragma unroll
                for (int i = 0; i <= OWN; i++) {
                    const int q = GPU_LEAN_SLOT(i);
                    const int64_t p = x0 + (int64_t)q * V;
                    if (q < needed) {
                        if (gpu_lean_inside<XT>(p, L)) own[i] = gpu_load16(xrow + p);
                        else edges |= 1u << i;
                    }
                }
                gpu_sync_warp(); /* the warp's previous tiles are read */
#pragma unroll
                for (int i = 0; i <= OWN; i++) {
                    const int q = GPU_LEAN_SLOT(i);
                    if (q < needed && !(edges >> i & 1)) xs[q] = own[i];
                }
                if (edges) { /* after the stores, so that own[] is dead: the rare path's registers */
                    const raw *before = gpu_lean_state_end<XT>(a, b, c);
#pragma unroll
                    for (int i = 0; i <= OWN; i++) {
                        const int q = GPU_LEAN_SLOT(i);
                        if (edges >> i & 1)
                            xs[q] = gpu_lean_edge<XT>(xrow, L, a.padding_mode, x0 + (int64_t)q * V, before,
                                                      a.state_length);
                    }
                }
#undef GPU_LEAN_SLOT
                gpu_sync_warp();
                /* the row's first tile is the only one that reads its state (a tile is
                 * longer than S): its loads are done */
                if (a.state_out && have && t == 0)
                    gpu_final_state_lanes<XT>(a, b * a.channels + c, xrow, 1, tid, T);
                if (active) gpu_lean_tile<XT, K, S, D, SILU>(a, xs, m, tid, T, w, bias, yrow, o0);
            }
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_NCL_LEAN_CUH */
