/*
 * The channel-first backward for wide kernels: K above the warp kernel's
 * (GPU_BWD_WARP_MAX_K) up to GPU_BWD_WIDE_MAX_K, stride and dilation 1 (conformer's
 * K31, K15), K known at run time only. Tiles, lanes and phases as in the warp kernel
 * (gpu_kernel_bwd_ncl_warp.cuh): blocks of one warp, a tile of GPU_WARP chunks of 64
 * outputs of a row, a lane per chunk. There a chunk's window and its K chains live in
 * registers; with K in the tens they do not fit, so here every sum runs in register
 * blocks (a few outputs by a few taps) over f32 copies in shared memory:
 *
 *   X column L (L = -1 .. 31): inputs [64 L, 64 L + 64 + span) of the tile (relative to
 *     x0 = t0 - pad_left), everything lane L's outputs read: each lane reads only its
 *     own column, the next lane's first span inputs repeated at its end. Column -1
 *     serves the span outputs before the tile (readers of its first inputs);
 *   G column L (L = 0 .. 31): g of outputs [64 L - span, 64 L + 64): what lane L's
 *     inputs' dx reads, the previous lane's last span values repeated at its start
 *     (column 0: the outputs before the tile);
 *
 * columns an odd number of words apart, so that lanes reading the same slot of their
 * columns hit distinct banks, and a lane's reads are its column's base plus constants.
 * Per tile:
 *   1. stage the weights (and reversed), x into the X columns and dy into the G
 *      columns, widened (f32: 4-byte asynchronous copies inside the row), positions
 *      outside the row by the padding mode (or the causal state);
 *   2. with an activation, g over dy in place: z of each output by register blocks
 *      of GPU_WIDE_RUN outputs by GPU_WIDE_TAPS taps (each z an fmaf chain in
 *      k order), the outputs before the tile a lane each; then each lane's column
 *      start from the previous column;
 *   3. dweight and dbias: the chunk's chains GPU_BWD_WIDE_CHAINS taps at a time
 *      (each an fmaf chain in output order), the tile's tree of each tap through a
 *      small shared array;
 *   4. dx of the lane's inputs: input i sums g[i - k] w[k], k falling, which is the
 *      same register-blocked sum as z over the G column with the weights reversed;
 *      into the lane's X column (x is dead there);
 *   5. dx out, coalesced, for the inputs all of whose readers exist (the gather kernel
 *      takes the rest: gpu_bwd_warp_edges).
 *
 * Grid: x = tiles of all rows, strided.
 */
#ifndef DWCONV_GPU_KERNEL_BWD_NCL_WIDE_CUH
#define DWCONV_GPU_KERNEL_BWD_NCL_WIDE_CUH

#include "gpu_bwd_common.cuh"
#include "gpu_kernel_bwd_ncl_warp.cuh"
#include "gpu_wide_sums.cuh"

#define GPU_BWD_WIDE_MAX_K 64   /* K at most: a column holds 64 + K - 1 slots */
#define GPU_BWD_WIDE_CHAINS 16  /* dweight chains of a register block */
#define GPU_BWD_WIDE_CHAIN_RUN 16 /* outputs a chain block reads at once */
#define GPU_BWD_WIDE_MIN_BLOCKS 8 /* resident an SM (shared memory: 27 KB at K 31) */

static_assert(GPU_WIDE_CHUNK == DWCONV_GRAD_CHUNK, "a lane's run of outputs is one chunk of the sums");

/* The shared memory in words: the X and G columns, the weights and the reversed
 * weights (K padded with zeros to whole tap blocks, 16-byte aligned), and the chain
 * partials of one register block (a row of GPU_WARP + 1 per chain, the bias's last). */
typedef struct gpu_bwd_wide_layout {
    int column;            /* words from one column to the next: odd */
    int g_at, w_at, wr_at, p_at, words;
} gpu_bwd_wide_layout;

GPU_HD gpu_bwd_wide_layout gpu_bwd_wide_layout_of(int64_t K) {
    gpu_bwd_wide_layout l;
    const int64_t k = K < GPU_BWD_WIDE_MAX_K ? K : GPU_BWD_WIDE_MAX_K;
    l.column = gpu_wide_column(k - 1);
    l.g_at = (GPU_WARP + 1) * l.column;
    l.w_at = (l.g_at + GPU_WARP * l.column + 3) / 4 * 4;
    l.wr_at = l.w_at + gpu_wide_taps(k);
    l.p_at = l.wr_at + gpu_wide_taps(k);
    l.words = l.p_at + (GPU_BWD_WIDE_CHAINS + 1) * (GPU_WARP + 1);
    return l;
}

/* p[c] (c < C, k0 + c < K) = its value then the fmaf chain over outputs j < n, in
 * order, of g[j] * x[j + k0 + c]: C taps' chains over one chunk, GPU_BWD_WIDE_CHAIN_RUN
 * outputs at a time; with bias, pb = its value then the sum of g[j], in order (the
 * bias's chain, with the first block of taps). */
template <int C>
static __device__ __forceinline__ void gpu_bwd_wide_chains(const float *g, const float *x, int n, int k0, int K,
                                                           float *p, bool bias, float &pb) {
    const int R = GPU_BWD_WIDE_CHAIN_RUN;
    const int taps = K - k0 < C ? K - k0 : C;
    int j0 = 0;
    for (; j0 + R <= n; j0 += R) {
        float gv[R], xw[R + C - 1];
#pragma unroll
        for (int r = 0; r < R; r++) gv[r] = g[j0 + r];
        if (bias) {
#pragma unroll
            for (int j = 0; j < R; j++) pb = pb + gv[j];
        }
        if (taps == C) {
#pragma unroll
            for (int r = 0; r < R + C - 1; r++) xw[r] = x[j0 + k0 + r];
#pragma unroll
            for (int j = 0; j < R; j++)
#pragma unroll
                for (int c = 0; c < C; c++) p[c] = DWCONV_FMAF(gv[j], xw[j + c], p[c]);
        } else { /* fewer taps: a branch per chain, the same for every lane */
#pragma unroll
            for (int r = 0; r < R + C - 1; r++)
                if (r < R - 1 + taps) xw[r] = x[j0 + k0 + r];
#pragma unroll
            for (int c = 0; c < C; c++)
                if (c < taps) {
#pragma unroll
                    for (int j = 0; j < R; j++) p[c] = DWCONV_FMAF(gv[j], xw[j + c], p[c]);
                }
        }
    }
    for (; j0 < n; j0++) {
        const float gv = g[j0];
        if (bias) pb = pb + gv;
#pragma unroll
        for (int c = 0; c < C; c++)
            if (c < taps) p[c] = DWCONV_FMAF(gv, x[j0 + k0 + c], p[c]);
    }
}

/* Up to 8 values in flight a lane: f(i, v) for v = value(i), i = first + lane + u *
 * GPU_WARP below end (16-bit staging: plain loads, widened). A whole batch does no
 * bounds test per value, and value() must not branch, so a lane issues all 8 loads
 * before the first widening waits on memory (a test per value made each load a branch
 * of its own, its widening waiting right after it: ncu, bench/RESULTS-gpu.md run O);
 * what is left after the whole batches goes a value at a time. */
template <class V, class F>
static __device__ __forceinline__ void gpu_bwd_wide_batched(int first, int end, int lane, V value, F f) {
    const int B = 8;
    int i0 = first + lane;
    for (; i0 + (B - 1) * GPU_WARP < end; i0 += B * GPU_WARP) {
        float v[B];
#pragma unroll
        for (int u = 0; u < B; u++) v[u] = value(i0 + u * GPU_WARP);
#pragma unroll
        for (int u = 0; u < B; u++) f(i0 + u * GPU_WARP, v[u]);
    }
    for (; i0 < end; i0 += GPU_WARP) f(i0, value(i0));
}

template <int XT, int WT>
__global__ GPU_LAUNCH_BOUNDS(GPU_WARP, GPU_SM_BLOCKS_AT_MOST(GPU_BWD_WIDE_MIN_BLOCKS)) void dwconv_bwd_ncl_wide_kernel(gpu_bwd_args a) {
    const int lane = threadIdx.x, K = (int)a.kernel_size, SPAN = K - 1;
    const gpu_bwd_wide_layout lay = gpu_bwd_wide_layout_of(K);
    const int W = lay.column;
    float *sm = (float *)gpu_shared_base();
    float *xc = sm, *gc = sm + lay.g_at; /* X column L at xc + (L + 1) W, G column L at gc + L W */
    float *ws = sm + lay.w_at, *wr = sm + lay.wr_at, *ps = sm + lay.p_at;
    float *xl = xc + (lane + 1) * W, *gl = gc + lane * W; /* the lane's columns */
    const int64_t L = a.length, L_out = a.output_length, pad = a.pad_left;
    const int64_t tasks = a.batch * a.channels * a.tiles;
    const bool act = a.activation != DWCONV_ACT_NONE, need_x = act || a.sums;
    for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
        const int64_t tile = task % a.tiles, bc = task / a.tiles;
        const int64_t c = bc % a.channels, b = bc / a.channels;
        const gpu_bwd_row<XT, WT> row(a, b, c);
        const int64_t t0 = tile * GPU_BWD_WARP_OUTPUTS, x0 = t0 - pad; /* element 0 of dy, x */
        const int n_out = (int)gpu_min64(GPU_BWD_WARP_OUTPUTS, L_out - t0);
        const int n = (int)gpu_max64(0, gpu_min64(DWCONV_GRAD_CHUNK, n_out - lane * DWCONV_GRAD_CHUNK));
        const int front = (int)gpu_min64(SPAN, t0); /* outputs before the tile that exist */

        gpu_sync_warp(); /* the previous tile's reads are done */
        /* 1. weights; x rel [-front, n_out + span) into the X columns; dy of outputs
         * [-front, n_out) into the G columns */
        for (int k = lane; k < gpu_wide_taps(K); k += GPU_WARP) {
            const float v = k < K ? row.weight(k) : 0.0f;
            ws[k] = v;
            if (k < K) wr[K - 1 - k] = v;
            else wr[k] = 0.0f;
        }
        /* rel r: X column r / 64 at slot r % 64, and the previous column at 64 + r % 64
         * where that is below 64 + span */
        auto x_slots = [&](int r, float *&first, float *&second) {
            const int col = r >> 6, s = r & 63; /* floor, for negative r too */
            first = col < GPU_WARP ? xc + (col + 1) * W + s : NULL;
            second = s < SPAN && col >= 0 ? xc + col * W + 64 + s : NULL;
        };
        /* output t: G column t / 64 at slot span + t % 64, and the next column at
         * t % 64 - (64 - span) where that is not negative */
        auto g_slots = [&](int t, float *&first, float *&second) {
            const int col = t >> 6, s = t & 63;
            first = col >= 0 ? gc + col * W + SPAN + s : NULL;
            second = s >= 64 - SPAN && col + 1 < GPU_WARP ? gc + (col + 1) * W + s - (64 - SPAN) : NULL;
        };
        const int x_end = need_x ? n_out + SPAN : -front;
        if (XT == DWCONV_F32) { /* column by column: runs of adjacent positions */
            for (int col = -1; col < GPU_WARP; col++) {
                const int r0 = 64 * col > -front ? 64 * col : -front;
                const int r1 = 64 * col + 64 + SPAN < x_end ? 64 * col + 64 + SPAN : x_end;
                float *to = xc + (col + 1) * W - 64 * col; /* to[r]: rel r's slot */
                if (x0 + r0 >= 0 && x0 + r1 <= L) { /* inside the row: no test an element */
                    for (int r = r0 + lane; r < r1; r += GPU_WARP) gpu_copy4_async(to + r, row.x + (x0 + r));
                } else {
                    for (int r = r0 + lane; r < r1; r += GPU_WARP) {
                        const int64_t pos = x0 + r;
                        if (pos >= 0 && pos < L) gpu_copy4_async(to + r, row.x + pos);
                        else to[r] = row.xp(a, pos);
                    }
                }
            }
            for (int col = 0; col < GPU_WARP; col++) {
                const int t_lo = 64 * col - SPAN > -front ? 64 * col - SPAN : -front;
                const int t_hi = 64 * col + 64 < n_out ? 64 * col + 64 : n_out;
                float *to = gc + col * W + SPAN;
                for (int t = t_lo + lane; t < t_hi; t += GPU_WARP) gpu_copy4_async(to + (t - 64 * col), row.dy + (t0 + t));
            }
            gpu_copy_wait();
        } else { /* 16-bit: loads widened, batched */
            auto x_store = [&](int r, float v) {
                float *s1, *s2;
                x_slots(r, s1, s2);
                if (s1) *s1 = v;
                if (s2) *s2 = v;
            };
            auto g_store = [&](int t, float v) {
                float *s1, *s2;
                g_slots(t, s1, s2);
                if (s1) *s1 = v;
                if (s2) *s2 = v;
            };
            /* rel positions [in_lo, in_hi) lie in the row: loads with no test; the
             * others by the padding mode */
            const int in_lo = (int)gpu_min64(gpu_max64(-front, -x0), x_end);
            const int in_hi = (int)gpu_max64(gpu_min64(x_end, L - x0), in_lo);
            for (int r = -front + lane; r < in_lo; r += GPU_WARP) x_store(r, row.xp(a, x0 + r));
            gpu_bwd_wide_batched(in_lo, in_hi, lane, [&](int r) { return gpu_elem<XT>::widen(row.x[x0 + r]); }, x_store);
            for (int r = in_hi + lane; r < x_end; r += GPU_WARP) x_store(r, row.xp(a, x0 + r));
            gpu_bwd_wide_batched(-front, n_out, lane, [&](int t) { return gpu_elem<XT>::widen(row.dy[t0 + t]); }, g_store);
        }
        gpu_sync_warp();

        /* 2. g over dy in place: the lane's outputs, then the ones before the tile;
         * then the column's start from the previous column */
        if (act) {
            gpu_wide_run(xl, ws, K, n, row.bias, [&](int j, float z) {
                float *g = gl + SPAN + j;
                *g = gpu_activation_grad(a.activation, z, *g);
            });
            for (int s = SPAN - front + lane; s < SPAN; s += GPU_WARP) { /* output s - span, column 0 */
                float *g = gc + s;
                *g = gpu_activation_grad(a.activation, gpu_wide_sum(xc + 64 - SPAN + s, ws, K, row.bias), *g);
            }
            gpu_sync_warp();
            if (lane > 0 && n > 0)
                for (int s = 0; s < SPAN; s++) gl[s] = gl[s - W + 64];
        }

        /* 3. the chunk's chains, GPU_BWD_WIDE_CHAINS taps at a time, and each tap's tree
         * over the tile's chunks (dbias: with the first block, as tap K) */
        if (a.sums) {
            static_assert(GPU_BWD_WIDE_CHAINS < GPU_WARP, "a lane for each chain's tree and one for the bias's");
            const int C = GPU_BWD_WIDE_CHAINS, chunks = (n_out + DWCONV_GRAD_CHUNK - 1) / DWCONV_GRAD_CHUNK;
            for (int k0 = 0; k0 < K; k0 += C) {
                if (n > 0) {
                    float p[C];
#pragma unroll
                    for (int j = 0; j < C; j++) p[j] = 0.0f;
                    float pb = 0.0f;
                    gpu_bwd_wide_chains<C>(gl + SPAN, xl, n, k0, K, p, k0 == 0, pb);
#pragma unroll
                    for (int j = 0; j < C; j++) ps[j * (GPU_WARP + 1) + lane] = p[j];
                    if (k0 == 0) ps[C * (GPU_WARP + 1) + lane] = pb;
                }
                gpu_sync_warp();
                if (lane < C ? k0 + lane < K : lane == C && k0 == 0) /* a tap, or the bias */
                    a.part[gpu_bwd_part(&a, b, c, lane < C ? k0 + lane : K, tile)] =
                        dwconv_grad_tree(ps + lane * (GPU_WARP + 1), chunks);
                gpu_sync_warp();
            }
        }

        /* 4. dx of the lane's inputs 64 lane + i, i < n (the readers of the others lie
         * past the row): the G column against the reversed weights, into the X column */
        if (a.dx) {
            gpu_wide_run(gl, wr, K, n, 0.0f, [&](int i, float v) { xl[i] = v; });
            gpu_sync_warp();
            /* 5. inputs x0 + d, d in [lo, hi): the tile's (the last tile's run on to the
             * row's end) but the gather kernel's row ends. Those whose readers all
             * exist, [full, n_out), from the columns; the others (zeros padding: the
             * readers past either end of the row are left out) one chain a lane over
             * the G columns */
            typedef typename gpu_elem<XT>::raw raw;
            raw *dx = (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1];
            const int end = t0 + n_out == L_out ? n_out + SPAN : n_out, full = SPAN - front;
            const int lo = (int)gpu_min64(gpu_max64(0, a.edge_lo - x0), end); /* 64-bit until clamped */
            const int hi = (int)gpu_max64(gpu_min64(end, L - a.edge_hi - x0), lo);
            for (int d = (lo > full ? lo : full) + lane; d < (hi < n_out ? hi : n_out); d += GPU_WARP)
                dx[x0 + d] = gpu_elem<XT>::narrow(xc[((d >> 6) + 1) * W + (d & 63)]);
            auto ends = [&](int from, int to) {
                for (int d = from + lane; d < to; d += GPU_WARP) {
                    float acc = 0.0f;
                    for (int t = (d - SPAN > -front ? d - SPAN : -front); t <= d && t < n_out; t++) /* k = d - t falls */
                        acc = DWCONV_FMAF(t >= 0 ? gc[(t >> 6) * W + SPAN + (t & 63)] : gc[t + SPAN], ws[d - t], acc);
                    dx[x0 + d] = gpu_elem<XT>::narrow(acc);
                }
            };
            ends(lo, full < hi ? full : hi);
            ends(lo > n_out ? lo : n_out, hi);
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_BWD_NCL_WIDE_CUH */
