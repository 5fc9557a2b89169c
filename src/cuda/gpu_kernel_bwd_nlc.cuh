/*
 * The backward for channel-last x, dy and dx (channels adjacent), stride 1, dilation
 * 1, K <= GPU_BWD_NLC_MAX_K (the causal models' convolutions): one warp per
 * (b, chunk of 64 outputs, 32 channels), a lane per channel. The warp first stages
 * x under the chunk's outputs and dy of them in shared memory, rows of 32 channels as
 * stored, with 4-byte asynchronous copies (the whole chunk in flight at once, no
 * registers held; positions outside the row by the padding mode or the state). Then
 * each lane walks its channel's outputs in order, reading its column (neighbouring
 * lanes, neighbouring words: no bank conflicts), with in registers the K inputs under
 * the current output, the last K values of g (for dx), the weights and the K + 1
 * partial sums; it recomputes the K - 1 outputs before the chunk first, for the dx of
 * the chunk's first inputs. Output o completes input o - pad_left (the row's last
 * output: every input after it too); dx goes straight out, a warp's stores adjacent.
 * Row ends under non-zeros padding are the gather kernel's.
 *
 * Grid: x, strided over all (b, chunk, group of 32 channels).
 */
#ifndef DWCONV_GPU_KERNEL_BWD_NLC_CUH
#define DWCONV_GPU_KERNEL_BWD_NLC_CUH

#include "gpu_bwd_common.cuh"

#define GPU_BWD_NLC_MAX_K 8
/* rows staged at most: x under the chunk and the K - 1 outputs before it, dy of them
 * (sized to the instance's K: more blocks fit an SM at small K) */
#define GPU_BWD_NLC_X_ROWS(K) (DWCONV_GRAD_CHUNK + 2 * ((K) - 1))
#define GPU_BWD_NLC_DY_ROWS(K) (DWCONV_GRAD_CHUNK + (K) - 1)

/* Shared memory of the nlc kernel for K taps of element size `bytes`. */
GPU_HD size_t gpu_bwd_nlc_smem(int64_t K, size_t bytes) {
    return (size_t)(GPU_BWD_NLC_X_ROWS(K) + GPU_BWD_NLC_DY_ROWS(K)) * GPU_WARP * bytes;
}

/* Rows [0, rows) of one operand (row r: position first + r; channels c0 .. c0 + 31)
 * into stage[r * GPU_WARP + lane], whole 4-byte words by asynchronous copies where
 * every element of the word exists and the word is aligned; the others element by
 * element from value(channel, position) (0 past the last channel). */
template <int XT, class F>
static __device__ __forceinline__ void gpu_bwd_nlc_stage(typename gpu_elem<XT>::raw *stage, const void *base,
                                                         const int64_t *stride, int64_t b, int64_t c0,
                                                         int64_t first, int rows, int64_t n, int64_t C,
                                                         int lane, F value) {
    typedef typename gpu_elem<XT>::raw raw;
    /* a lane's word: channels c .. c + EPW - 1 of rows r0, r0 + step, ... (f32: one row
     * a pass; 16-bit: two), its addresses advanced rather than recomputed */
    const int EPW = 4 / (int)sizeof(raw), per_row = GPU_WARP / EPW, step = GPU_WARP / per_row;
    const int ch = lane % per_row * EPW, r0 = lane / per_row;
    const int64_t c = c0 + ch;
    const bool whole = c + EPW <= C; /* every channel of the word exists */
    const raw *src = (const raw *)base + b * stride[0] + c * stride[1] + (first + r0) * stride[2];
    raw *to = stage + r0 * GPU_WARP + ch;
    for (int r = r0; r < rows; r += step, src += step * stride[2], to += step * GPU_WARP) {
        const int64_t pos = first + r;
        if (whole && pos >= 0 && pos < n && ((uintptr_t)src & 3) == 0) {
            gpu_copy4_async(to, src);
        } else {
#pragma unroll
            for (int h = 0; h < EPW; h++) to[h] = c + h < C ? value(c + h, pos) : (raw)0;
        }
    }
}

/* Launch bounds: 16 one-warp blocks an SM leave 128 registers, which the K = 8
 * instances need (at 64, ptxas's own choice, they spill). */
template <int XT, int WT, int K>
__global__ GPU_LAUNCH_BOUNDS(GPU_WARP, GPU_SM_BLOCKS_AT_MOST(16)) void dwconv_bwd_nlc_kernel(gpu_bwd_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    const int lane = threadIdx.x;
    raw *xst = (raw *)gpu_shared_base(), *dst = xst + GPU_BWD_NLC_X_ROWS(K) * GPU_WARP;
    const int64_t L = a.length, L_out = a.output_length, C = a.channels, pl = a.pad_left;
    const int64_t chunks = a.tiles, groups = (C + GPU_WARP - 1) / GPU_WARP;
    const int64_t tasks = a.batch * chunks * groups;
    const int64_t in_lo = a.edge_lo, in_hi = L - a.edge_hi;
    for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
        const int64_t c0 = task % groups * GPU_WARP, j = task / groups % chunks, b = task / groups / chunks;
        const int64_t c = c0 + lane;
        const int64_t o_begin = j * DWCONV_GRAD_CHUNK;
        const int64_t o_end = gpu_min64(o_begin + DWCONV_GRAD_CHUNK, L_out);
        const int64_t o_first = a.dx ? gpu_max64(0, o_begin - (K - 1)) : o_begin;
        const int outs = (int)(o_end - o_first);
        gpu_sync_warp(); /* the previous task's reads are done */
        gpu_bwd_nlc_stage<XT>(xst, a.x, a.x_stride, b, c0, o_first - pl, outs + K - 1, L, C, lane,
                              [&](int64_t ch, int64_t pos) { return gpu_bwd_row<XT, WT>(a, b, ch).xr(a, pos); });
        gpu_bwd_nlc_stage<XT>(dst, a.dy, a.dy_stride, b, c0, o_first, outs, L_out, C, lane,
                              [&](int64_t ch, int64_t pos) {
                                  return ((const raw *)a.dy)[b * a.dy_stride[0] + ch * a.dy_stride[1] + pos * a.dy_stride[2]];
                              });
        gpu_copy_wait();
        gpu_sync_warp();
        if (c >= C) continue;
        const gpu_bwd_row<XT, WT> row(a, b, c);
        raw *dx = a.dx ? (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1] : NULL;
        const int64_t dxs = a.dx_stride[2];
        const raw *xcol = xst + lane, *dcol = dst + lane; /* row r: [r * GPU_WARP] */
        float w[K], xw[K], gr[K], p[K + 1];
#pragma unroll
        for (int k = 0; k < K; k++) w[k] = row.weight(k), gr[k] = 0.0f, p[k] = 0.0f;
        p[K] = 0.0f;
        /* the inputs under o_first, but its last */
#pragma unroll
        for (int k = 1; k < K; k++) xw[k] = gpu_elem<XT>::widen(xcol[(k - 1) * GPU_WARP]);
#pragma unroll 4
        for (int r = 0; r < outs; r++) {
            const int64_t o = o_first + r;
#pragma unroll
            for (int k = 0; k + 1 < K; k++) xw[k] = xw[k + 1];
            xw[K - 1] = gpu_elem<XT>::widen(xcol[(r + K - 1) * GPU_WARP]); /* position o - pl + K - 1 */
            float z = row.bias;
#pragma unroll
            for (int k = 0; k < K; k++) z = DWCONV_FMAF(xw[k], w[k], z);
            const float g = gpu_activation_grad(a.activation, z, gpu_elem<XT>::widen(dcol[r * GPU_WARP]));
#pragma unroll
            for (int k = 0; k + 1 < K; k++) gr[k] = gr[k + 1];
            gr[K - 1] = g; /* gr[K - 1 - d]: g of output o - d */
            if (o < o_begin) continue;
            if (a.sums) {
#pragma unroll
                for (int k = 0; k < K; k++) p[k] = DWCONV_FMAF(g, xw[k], p[k]);
                p[K] = p[K] + g;
            }
            if (!dx) continue;
            /* input i's readers: outputs i + pl - k, k falling (outputs rising) */
            const int64_t hi = o == L_out - 1 ? in_hi : gpu_min64(o - pl + 1, in_hi);
            const int64_t i0 = o - pl; /* its reader with tap k is output o - k */
            if (i0 >= in_lo && i0 < hi) {
                float acc = 0.0f;
#pragma unroll
                for (int k = K - 1; k >= 0; k--)
                    if (o - k >= 0) acc = DWCONV_FMAF(gr[K - 1 - k], w[k], acc);
                dx[i0 * dxs] = gpu_elem<XT>::narrow(acc);
            }
        }
        /* the row's last output (the chunk's last, g's window still holds it): the
         * inputs after its i0, read only by outputs up to it (input i0 + ahead by
         * tap k through output o - (k - ahead)); the row's last input is i0 + K - 1 -
         * pad_right, so `ahead` < K, a compile-time count: the window stays in registers */
        if (dx && o_end == L_out) {
            const int64_t o = L_out - 1, i0 = o - pl;
#pragma unroll
            for (int ahead = 1; ahead < K; ahead++) {
                const int64_t i = i0 + ahead;
                if (i < in_lo || i >= in_hi) continue;
                float acc = 0.0f;
#pragma unroll
                for (int k = K - 1; k >= ahead; k--)
                    if (o - (k - ahead) >= 0) acc = DWCONV_FMAF(gr[K - 1 - (k - ahead)], w[k], acc);
                dx[i * dxs] = gpu_elem<XT>::narrow(acc);
            }
        }
        if (!a.sums) continue;
#pragma unroll
        for (int k = 0; k <= K; k++) a.part[gpu_bwd_part(&a, b, c, k, j)] = p[k];
    }
}

#endif /* DWCONV_GPU_KERNEL_BWD_NLC_CUH */
