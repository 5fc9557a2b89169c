/*
 * The backward for channel-last x, dy and dx (channels adjacent), stride 1, dilation
 * 1, K <= GPU_BWD_NLC_MAX_K (the causal models' convolutions): one thread per
 * (b, chunk of 64 outputs, channel), neighbouring threads on neighbouring channels, so
 * every load and store of a warp is one stretch of memory. Everything lives in
 * registers: the K inputs under the current output, the last K values of g (for dx),
 * the weights and the K + 1 partial sums. The thread walks its chunk's outputs in
 * order (recomputing the K - 1 outputs before the chunk first, for the dx of the
 * chunk's first inputs); output o completes input o - pad_left (the row's last output:
 * every input after it too). Row ends under non-zeros padding are the gather kernel's.
 *
 * Grid: x, strided over all (b, chunk, channel).
 */
#ifndef DWCONV_GPU_KERNEL_BWD_NLC_CUH
#define DWCONV_GPU_KERNEL_BWD_NLC_CUH

#include "gpu_bwd_common.cuh"

#define GPU_BWD_NLC_THREADS 128
#define GPU_BWD_NLC_MAX_K 8

template <int XT, int WT, int K>
__global__ __launch_bounds__(GPU_BWD_NLC_THREADS) void dwconv_bwd_nlc_kernel(gpu_bwd_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    const int64_t L = a.length, L_out = a.output_length, C = a.channels, pl = a.pad_left;
    const int64_t chunks = a.tiles, items = a.batch * chunks * C;
    const int64_t in_lo = a.edge_lo, in_hi = L - a.edge_hi;
    for (int64_t item = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; item < items;
         item += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = item % C, j = item / C % chunks, b = item / C / chunks;
        const gpu_bwd_row<XT, WT> row(a, b, c);
        raw *dx = a.dx ? (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1] : NULL;
        const int64_t dxs = a.dx_stride[2];
        float w[K], xw[K], gr[K], p[K + 1];
#pragma unroll
        for (int k = 0; k < K; k++) w[k] = row.weight(k), gr[k] = 0.0f, p[k] = 0.0f;
        p[K] = 0.0f;
        const int64_t o_begin = j * DWCONV_GRAD_CHUNK;
        const int64_t o_end = gpu_min64(o_begin + DWCONV_GRAD_CHUNK, L_out);
        const int64_t o_first = dx ? gpu_max64(0, o_begin - (K - 1)) : o_begin;
        /* the inputs under o_first, but its last */
#pragma unroll
        for (int k = 1; k < K; k++) xw[k] = row.xp(a, o_first - pl + k - 1);
        for (int64_t o = o_first; o < o_end; o++) {
            const int64_t last = o - pl + K - 1; /* the position o's last tap reads */
#pragma unroll
            for (int k = 0; k + 1 < K; k++) xw[k] = xw[k + 1];
            xw[K - 1] = last >= 0 && last < L ? gpu_elem<XT>::widen(row.x[last * row.xs]) : row.xp(a, last);
            float z = row.bias;
#pragma unroll
            for (int k = 0; k < K; k++) z = DWCONV_FMAF(xw[k], w[k], z);
            const float g = dwconv_activation_grad(a.activation, z, gpu_elem<XT>::widen(row.dy[o * row.dys]));
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
            /* the row's last output: the inputs after i0, read only by outputs up to o */
            for (int64_t i = gpu_max64(i0 + 1, in_lo); i < hi; i++) {
                const int ahead = (int)(i - i0); /* reader with tap k: output o - (k - ahead) */
                float acc = 0.0f;
#pragma unroll
                for (int k = K - 1; k >= 0; k--)
#pragma unroll
                    for (int d = 0; d < K; d++) /* constant indices: registers */
                        if (d == k - ahead && o - d >= 0) acc = DWCONV_FMAF(gr[K - 1 - d], w[k], acc);
                dx[i * dxs] = gpu_elem<XT>::narrow(acc);
            }
        }
        if (!a.sums) continue;
#pragma unroll
        for (int k = 0; k <= K; k++) a.part[gpu_bwd_part(&a, b, c, k, j)] = p[k];
    }
}

#endif /* DWCONV_GPU_KERNEL_BWD_NLC_CUH */
