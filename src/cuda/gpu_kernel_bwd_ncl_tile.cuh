/*
 * The backward for channel-first x, dy and dx (positions adjacent), any K, stride,
 * dilation and padding: one block per tile of tile_chunks chunks of 64 outputs of one
 * row, every value read from memory once, coalesced:
 *   1. stage the tile's padded input window (f32; 16-byte loads inside the row) and
 *      the weights in shared memory;
 *   2. g of the tile's outputs and of the `halo` outputs before it (their dx readers),
 *      one output per thread in turn (dy read straight from memory), into shared memory;
 *   3. at once: the first threads run the weight and bias chains, one (chunk, 8 taps)
 *      each, an fmaf chain over the chunk's 64 outputs in order; the other threads sum
 *      dx of the tile's inputs (those whose last reader is in the tile; the row ends
 *      under non-zeros padding are the gather kernel's), one input per thread in turn;
 *   4. per tap, the tree of the tile's chunk partials (an aligned power-of-two group of
 *      the row's chunks: the same bits as the whole tree) into the context scratch.
 * Shared words are indexed e + e / 64, so that the chain threads, 64 outputs apart,
 * read distinct banks.
 *
 * Grid: x = tiles along a row, y = channels, z = batch (each strided).
 */
#ifndef DWCONV_GPU_KERNEL_BWD_NCL_TILE_CUH
#define DWCONV_GPU_KERNEL_BWD_NCL_TILE_CUH

#include "gpu_bwd_common.cuh"

#define GPU_BWD_TILE_THREADS 256
#define GPU_BWD_TILE_MAX_CHUNKS 32 /* chunks of a tile at most: one warp of chains a tap block */
#define GPU_BWD_TILE_TAPS 8        /* taps of one chain thread (4 for K <= 4) */

/* Shared word of element e: one spare word every 64. */
GPU_HD int gpu_bwd_word(int e) { return e + (e >> 6); }

/* The tile's shared memory, in words: window, g, weights, chunk partials. */
typedef struct gpu_bwd_tile_layout {
    int window, outputs;   /* elements of the input window and of g (halo + tile) */
    int g_at, w_at, p_at;  /* word offsets */
    int words;
} gpu_bwd_tile_layout;

GPU_HD gpu_bwd_tile_layout gpu_bwd_tile_layout_of(int64_t tile_chunks, int64_t halo, int64_t K,
                                                   int64_t S, int64_t D) {
    gpu_bwd_tile_layout t;
    const int64_t outputs = tile_chunks * DWCONV_GRAD_CHUNK + halo;
    const int64_t window = (outputs - 1) * S + D * (K - 1) + 1;
    const int64_t big = (int64_t)1 << 24; /* too large for any block: not used */
    t.outputs = (int)(outputs < big ? outputs : big);
    t.window = (int)(window < big ? window : big);
    t.g_at = gpu_bwd_word(t.window) + 1;
    t.w_at = t.g_at + gpu_bwd_word(t.outputs) + 1;
    const int64_t K1 = K < big ? K : big;
    t.p_at = t.w_at + (int)K1;
    t.words = t.p_at + (int)((K1 + 1) * tile_chunks);
    return t;
}

/* Where tile `tile` of a row lies: its first output o0, the output of g slot 0 (q0,
 * the halo's first), the position of window slot 0 (w0), and its chunks (the row's
 * last tile may hold fewer than TC). */
struct gpu_bwd_tile_place {
    int64_t o0, q0, w0;
    int chunks;
    __device__ __forceinline__ gpu_bwd_tile_place(const gpu_bwd_args &a, int64_t tile, int TC, int H, int S) {
        o0 = tile * TC * DWCONV_GRAD_CHUNK, q0 = o0 - H, w0 = q0 * S - a.pad_left;
        chunks = (int)gpu_min64(TC, (a.output_length - o0 + DWCONV_GRAD_CHUNK - 1) / DWCONV_GRAD_CHUNK);
    }
};

/* One chain thread: the fmaf chains of taps [k0, k0 + TAPS) (and with k0 = 0 the
 * bias's sum) over one chunk's outputs, in order, into ps[k * TC + chunk]. */
template <int TAPS>
static __device__ __forceinline__ void gpu_bwd_tile_chain(const float *xs, const float *gs, float *ps,
                                                          int64_t K, int S, int D, int TC, int chunk,
                                                          int k0, int q_first, int m_end) {
    float p[TAPS], pb = 0.0f;
#pragma unroll
    for (int j = 0; j < TAPS; j++) p[j] = 0.0f;
    for (int m = 0; m < m_end; m++) {
        const int q = q_first + m;
        const float g = gs[gpu_bwd_word(q)];
#pragma unroll
        for (int j = 0; j < TAPS; j++)
            if (k0 + j < K) p[j] = DWCONV_FMAF(g, xs[gpu_bwd_word(q * S + (k0 + j) * D)], p[j]);
        pb = pb + g;
    }
#pragma unroll
    for (int j = 0; j < TAPS; j++)
        if (k0 + j < K) ps[(k0 + j) * TC + chunk] = p[j];
    if (k0 == 0) ps[K * TC + chunk] = pb;
}

template <int XT, int WT>
__global__ __launch_bounds__(GPU_BWD_TILE_THREADS) void dwconv_bwd_ncl_tile_kernel(gpu_bwd_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    const int T = blockDim.x, tid = threadIdx.x;
    const int64_t K = a.kernel_size, L = a.length, L_out = a.output_length;
    const int S = (int)a.stride, D = (int)a.dilation, H = (int)a.halo, TC = (int)a.tile_chunks;
    const gpu_bwd_tile_layout lay = gpu_bwd_tile_layout_of(TC, H, K, S, D);
    float *sm = (float *)gpu_shared_base();
    float *xs = sm, *gs = sm + lay.g_at, *ws = sm + lay.w_at, *ps = sm + lay.p_at;
    const int taps = K <= 4 ? 4 : GPU_BWD_TILE_TAPS; /* of a chain thread */
    const int kblocks = (int)((K + taps - 1) / taps);
    const int chain_items = a.sums ? kblocks * TC : 0;
    /* chain threads: whole warps' worth, at most half the block; the rest sum dx */
    int chain_threads = (chain_items + 31) / 32 * 32;
    if (chain_threads > T / 2) chain_threads = T / 2;
    const int dx_threads = a.dx ? T - chain_threads : 0;

    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = blockIdx.y; c < a.channels; c += gridDim.y)
            for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
                const gpu_bwd_row<XT, WT> row(a, b, c);
                const gpu_bwd_tile_place at(a, tile, TC, H, S);
                const int64_t o0 = at.o0, q0 = at.q0, w0 = at.w0;
                const int chunks_here = at.chunks;
                __syncthreads(); /* the previous tile's reads are done */
                /* 1. the window and the weights */
                if (w0 >= 0 && w0 + lay.window <= L) {
                    /* whole 16-byte vectors inside the window, element loads at its ends */
                    const int V = gpu_vec_width<XT>::value;
                    const raw *xw = row.x + w0;
                    const int head = (int)gpu_min64((V - gpu_misalignment<XT>(xw, 0)) % V, lay.window);
                    const int vectors = (lay.window - head) / V;
                    for (int v = tid; v < vectors; v += T) {
                        float f[gpu_vec_width<XT>::value];
                        gpu_vec_widen<XT>(gpu_load16(xw + head + v * V), f);
#pragma unroll
                        for (int j = 0; j < gpu_vec_width<XT>::value; j++) xs[gpu_bwd_word(head + v * V + j)] = f[j];
                    }
                    const int tail = head + vectors * V, ends = head + lay.window - tail;
                    for (int q = tid; q < ends; q += T) {
                        const int e = q < head ? q : tail + (q - head);
                        xs[gpu_bwd_word(e)] = gpu_elem<XT>::widen(xw[e]);
                    }
                } else {
                    for (int e = tid; e < lay.window; e += T) xs[gpu_bwd_word(e)] = row.xp(a, w0 + e);
                }
                for (int k = tid; k < K; k += T) ws[k] = row.weight(k);
                __syncthreads();
                /* 2. g */
                for (int q = tid; q < lay.outputs; q += T) {
                    const int64_t o = q0 + q;
                    if (o < 0 || o >= L_out) continue;
                    float z = row.bias;
                    for (int k = 0; k < (int)K; k++) z = DWCONV_FMAF(xs[gpu_bwd_word(q * S + k * D)], ws[k], z);
                    gs[gpu_bwd_word(q)] = gpu_activation_grad(a.activation, z, gpu_elem<XT>::widen(row.dy[o]));
                }
                __syncthreads();
                /* 3a. the chains: item = k block * TC + chunk */
                for (int item = tid; item < chain_items && tid < chain_threads; item += chain_threads) {
                    const int chunk = item % TC, k0 = item / TC * taps;
                    if (chunk >= chunks_here) continue;
                    const int m_end = (int)gpu_min64(DWCONV_GRAD_CHUNK, L_out - o0 - chunk * DWCONV_GRAD_CHUNK);
                    const int q_first = H + chunk * DWCONV_GRAD_CHUNK;
                    if (taps == 4) gpu_bwd_tile_chain<4>(xs, gs, ps, K, S, D, TC, chunk, k0, q_first, m_end);
                    else gpu_bwd_tile_chain<GPU_BWD_TILE_TAPS>(xs, gs, ps, K, S, D, TC, chunk, k0, q_first, m_end);
                }
                /* 3b. dx of the inputs whose last reader is in this tile */
                if (tid >= chain_threads && dx_threads) {
                    raw *dx = (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1];
                    int64_t lo = tile == 0 ? 0 : o0 * S - a.pad_left;
                    int64_t hi = tile == a.tiles - 1 ? L : (o0 + (int64_t)TC * DWCONV_GRAD_CHUNK) * S - a.pad_left;
                    lo = gpu_max64(lo, a.edge_lo), hi = gpu_min64(hi, L - a.edge_hi);
                    /* tap k of g slot q reads window slot q S + k D: input i (slot e)
                     * from slot q = (e - k D) / S where that divides; k falls, q rises */
                    const int span = (int)((K - 1) * D);
                    for (int64_t i = lo + (tid - chain_threads); i < hi; i += dx_threads) {
                        const int e = (int)(i - w0) - span; /* k = K - 1 */
                        int qa = S == 1 ? e : e >= 0 ? e / S : -((-e + S - 1) / S); /* floor */
                        int qb = e - qa * S;
                        const int step_a = D / S, step_b = D % S;
                        float acc = 0.0f;
                        for (int k = (int)K - 1; k >= 0; k--) {
                            if (qb == 0 && qa >= 0 && q0 + qa < L_out && q0 + qa >= 0)
                                acc = DWCONV_FMAF(gs[gpu_bwd_word(qa)], ws[k], acc);
                            qb += step_b, qa += step_a;
                            if (qb >= S) qb -= S, qa++;
                        }
                        dx[i] = gpu_elem<XT>::narrow(acc);
                    }
                }
                if (!a.sums) continue;
                __syncthreads();
                /* 4. the tile's tree per tap */
                for (int k = tid; k <= K; k += T) {
                    gpu_tree_stack stack;
                    for (int j = 0; j < chunks_here; j++) stack.push(ps[k * TC + j]);
                    a.part[gpu_bwd_part(&a, b, c, k, tile)] = stack.total();
                }
            }
}

#endif /* DWCONV_GPU_KERNEL_BWD_NCL_TILE_CUH */
