/*
 * The channel-first backward's common case: stride 1, dilation 1, K <= 8 known at
 * compile time (the reference problem, causal and "same" convolutions). The same tile,
 * shared layout, phases and bits as gpu_kernel_bwd_ncl_tile.cuh, in fewer instructions
 * per output: the tile kernel is bound by instruction issue (bench/RESULTS-gpu.md,
 * run F) on its run-time tap loops, 64-bit index arithmetic and the stride/dilation
 * stepping of every dx tap. Here the taps unroll, indices are 32-bit slots of the
 * tile, x and dy are staged in one pass (GPU_BWD_STAGE_BATCH vectors of each per
 * thread at once), and:
 *   2. g: one output per thread in turn, its K window values at constant offsets;
 *   3a. one chain thread per chunk runs the K weight chains and the bias sum together,
 *       the window sliding through registers (one new shared load per output);
 *   3b. dx: one input per thread in turn, its K readers at constant offsets, the
 *       bounds tested only in the row's first and last tiles.
 *
 * Grid: x = tiles along a row, y = channels, z = batch (each strided).
 */
#ifndef DWCONV_GPU_KERNEL_BWD_NCL_LEAN_CUH
#define DWCONV_GPU_KERNEL_BWD_NCL_LEAN_CUH

#include "gpu_kernel_bwd_ncl_tile.cuh"

#define GPU_BWD_LEAN_MAX_K 8
#define GPU_BWD_STAGE_BATCH 2 /* 16-byte loads of each span a thread has in flight while staging */
/* At most 64 registers: 4 blocks of 256 threads per SM. */
#define GPU_BWD_LEAN_MIN_BLOCKS 4

/* Elements [lo, hi) of a row (raw pointer at position 0, positions adjacent), bound
 * for the shared words gpu_bwd_word(p - base): whole 16-byte vectors between the
 * row's vector boundaries, single elements at the two ends. */
template <int XT> struct gpu_bwd_span {
    typedef typename gpu_elem<XT>::raw raw;
    const raw *row, *first; /* first: the first whole vector */
    int64_t lo;
    int n, off, head, vectors;

    __device__ __forceinline__ gpu_bwd_span(const raw *r, int64_t l, int64_t hi, int64_t base)
        : row(r), lo(l) {
        const int V = gpu_vec_width<XT>::value;
        n = hi > lo ? (int)(hi - lo) : 0, off = (int)(lo - base);
        head = (V - gpu_misalignment<XT>(row, lo)) % V;
        if (head > n) head = n;
        vectors = (n - head) / V;
        first = row + lo + head;
    }

    /* vector v, widened, into dst */
    __device__ __forceinline__ void put(float *dst, int v, const uint4 &r) const {
        float f[gpu_vec_width<XT>::value];
        gpu_vec_widen<XT>(r, f);
        const int e = off + head + v * gpu_vec_width<XT>::value;
#pragma unroll
        for (int j = 0; j < gpu_vec_width<XT>::value; j++) dst[gpu_bwd_word(e + j)] = f[j];
    }

    /* the single elements at the two ends, one per thread in turn */
    __device__ __forceinline__ void put_ends(float *dst, int T, int tid) const {
        const int tail = head + vectors * gpu_vec_width<XT>::value, ends = head + n - tail;
        for (int q = tid; q < ends; q += T) {
            const int e = q < head ? q : tail + (q - head);
            dst[gpu_bwd_word(off + e)] = gpu_elem<XT>::widen(row[lo + e]);
        }
    }
};

/* Two spans (the window of x, the dy of the outputs) into shared memory in one pass: a
 * thread issues GPU_BWD_STAGE_BATCH vector loads of each before it stores any, so the
 * block waits for memory once, not once per span. */
template <int XT>
static __device__ __forceinline__ void gpu_bwd_stage(const gpu_bwd_span<XT> &a, float *da,
                                                     const gpu_bwd_span<XT> &b, float *db, int T, int tid) {
    const int most = a.vectors > b.vectors ? a.vectors : b.vectors;
    for (int v0 = tid; v0 < most; v0 += GPU_BWD_STAGE_BATCH * T) {
        uint4 ra[GPU_BWD_STAGE_BATCH], rb[GPU_BWD_STAGE_BATCH];
#pragma unroll
        for (int u = 0; u < GPU_BWD_STAGE_BATCH; u++) {
            const int v = v0 + u * T;
            if (v < a.vectors) ra[u] = gpu_load16(a.first + (int64_t)v * gpu_vec_width<XT>::value);
            if (v < b.vectors) rb[u] = gpu_load16(b.first + (int64_t)v * gpu_vec_width<XT>::value);
        }
#pragma unroll
        for (int u = 0; u < GPU_BWD_STAGE_BATCH; u++) {
            const int v = v0 + u * T;
            if (v < a.vectors) a.put(da, v, ra[u]);
            if (v < b.vectors) b.put(db, v, rb[u]);
        }
    }
    a.put_ends(da, T, tid);
    b.put_ends(db, T, tid);
}

/* One chunk's chain: the K weight sums and the bias sum over outputs q_first ..
 * q_first + n - 1 (g slots; window slot q + k under tap k), in order. FULL: n is
 * DWCONV_GRAD_CHUNK, known here, so the walk unrolls. */
template <int K, bool FULL>
static __device__ __forceinline__ void gpu_bwd_lean_chain(const float *xs, const float *gs, float *ps, int TC,
                                                          int chunk, int q_first, int n) {
    float p[K], pb = 0.0f, xw[K];
#pragma unroll
    for (int k = 0; k < K; k++) p[k] = 0.0f;
#pragma unroll
    for (int k = 0; k + 1 < K; k++) xw[k + 1] = xs[gpu_bwd_word(q_first + k)];
#pragma unroll 8
    for (int m = 0; m < (FULL ? DWCONV_GRAD_CHUNK : n); m++) {
        const int q = q_first + m;
#pragma unroll
        for (int k = 0; k + 1 < K; k++) xw[k] = xw[k + 1];
        xw[K - 1] = xs[gpu_bwd_word(q + K - 1)];
        const float g = gs[gpu_bwd_word(q)];
#pragma unroll
        for (int k = 0; k < K; k++) p[k] = DWCONV_FMAF(g, xw[k], p[k]);
        pb = pb + g;
    }
#pragma unroll
    for (int k = 0; k < K; k++) ps[k * TC + chunk] = p[k];
    ps[K * TC + chunk] = pb;
}

template <int XT, int WT, int K>
__global__ __launch_bounds__(GPU_BWD_TILE_THREADS, GPU_BWD_LEAN_MIN_BLOCKS) void dwconv_bwd_ncl_lean_kernel(gpu_bwd_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    const int T = blockDim.x, tid = threadIdx.x;
    const int64_t L = a.length, L_out = a.output_length;
    const int H = K - 1, TC = (int)a.tile_chunks;
    const gpu_bwd_tile_layout lay = gpu_bwd_tile_layout_of(TC, H, K, 1, 1);
    float *sm = (float *)gpu_shared_base();
    float *xs = sm, *gs = sm + lay.g_at, *ws = sm + lay.w_at, *ps = sm + lay.p_at;
    /* chain threads: one per chunk, whole warps; the rest sum dx */
    const int chain_threads = a.sums ? (TC + 31) / 32 * 32 : 0;
    const int dx_threads = a.dx ? T - chain_threads : 0;

    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = blockIdx.y; c < a.channels; c += gridDim.y)
            for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
                const gpu_bwd_row<XT, WT> row(a, b, c);
                const gpu_bwd_tile_place at(a, tile, TC, H, 1);
                const int64_t o0 = at.o0, q0 = at.q0, w0 = at.w0;
                const int chunks_here = at.chunks;
                __syncthreads(); /* the previous tile's reads are done */
                /* 1. the window, dy of the outputs, the weights */
                const int64_t in_lo = gpu_max64(w0, 0), in_hi = gpu_max64(in_lo, gpu_min64(w0 + lay.window, L));
                gpu_bwd_stage<XT>(gpu_bwd_span<XT>(row.x, in_lo, in_hi, w0), xs,
                                  gpu_bwd_span<XT>(row.dy, gpu_max64(q0, 0), gpu_min64(q0 + lay.outputs, L_out), q0),
                                  gs, T, tid);
                { /* window positions outside the row: the padding mode (or the state) */
                    const int left = (int)(in_lo - w0), right = (int)(w0 + lay.window - in_hi);
                    for (int q = tid; q < left + right; q += T) {
                        const int e = q < left ? q : (int)(in_hi - w0) + (q - left);
                        xs[gpu_bwd_word(e)] = row.xp(a, w0 + e);
                    }
                }
                if (tid < K) ws[tid] = row.weight(tid);
                __syncthreads();
                float w[K];
#pragma unroll
                for (int k = 0; k < K; k++) w[k] = ws[k];
                /* 2. g, over the staged dy: slots [q_lo, q_hi) hold outputs */
                const int q_lo = (int)gpu_max64(0, -q0), q_hi = (int)gpu_min64(lay.outputs, L_out - q0);
                for (int q = q_lo + tid; q < q_hi; q += T) {
                    float z = row.bias;
#pragma unroll
                    for (int k = 0; k < K; k++) z = DWCONV_FMAF(xs[gpu_bwd_word(q + k)], w[k], z);
                    gs[gpu_bwd_word(q)] = dwconv_activation_grad(a.activation, z, gs[gpu_bwd_word(q)]);
                }
                __syncthreads();
                /* 3a. the chains: thread = chunk */
                if (tid < chain_threads && tid < chunks_here) {
                    const int q_first = H + tid * DWCONV_GRAD_CHUNK;
                    const int n = (int)gpu_min64(DWCONV_GRAD_CHUNK, L_out - o0 - (int64_t)tid * DWCONV_GRAD_CHUNK);
                    if (n == DWCONV_GRAD_CHUNK) gpu_bwd_lean_chain<K, true>(xs, gs, ps, TC, tid, q_first, n);
                    else gpu_bwd_lean_chain<K, false>(xs, gs, ps, TC, tid, q_first, n);
                }
                /* 3b. dx of the inputs whose last reader is in this tile: input i's
                 * reader with tap k is output i + pad_left - k, g slot e - k for i at
                 * window slot e */
                if (tid >= chain_threads && dx_threads) {
                    raw *dx = (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1];
                    int64_t lo = tile == 0 ? 0 : o0 - a.pad_left;
                    int64_t hi = tile == a.tiles - 1 ? L : o0 + (int64_t)TC * DWCONV_GRAD_CHUNK - a.pad_left;
                    lo = gpu_max64(lo, a.edge_lo), hi = gpu_min64(hi, L - a.edge_hi);
                    const int n = (int)gpu_max64(0, hi - lo), e0 = (int)(lo - w0);
                    /* every reader exists unless the tile holds a row end */
                    const bool inside = q0 + e0 - H >= 0 && q0 + e0 + n - 1 < L_out;
                    for (int j = tid - chain_threads; j < n; j += dx_threads) {
                        const int e = e0 + j;
                        float acc = 0.0f;
#pragma unroll
                        for (int k = K - 1; k >= 0; k--) {
                            const int q = e - k;
                            if (inside || (q0 + q >= 0 && q0 + q < L_out))
                                acc = DWCONV_FMAF(gs[gpu_bwd_word(q)], w[k], acc);
                        }
                        dx[lo + j] = gpu_elem<XT>::narrow(acc);
                    }
                }
                if (!a.sums) continue;
                __syncthreads();
                /* 4. the tile's tree per tap, in place, then its sums out */
                for (int step = 1; step < chunks_here; step *= 2) {
                    const int pairs = (chunks_here + 2 * step - 1) / (2 * step);
                    for (int item = tid; item < (K + 1) * pairs; item += T) {
                        const int k = item / pairs, i = item % pairs * 2 * step;
                        if (i + step < chunks_here) ps[k * TC + i] = ps[k * TC + i] + ps[k * TC + i + step];
                    }
                    __syncthreads();
                }
                if (tid <= K) a.part[gpu_bwd_part(&a, b, c, tid, tile)] = ps[tid * TC];
            }
}

#endif /* DWCONV_GPU_KERNEL_BWD_NCL_LEAN_CUH */
