/*
 * The backward's general kernel: one thread per (b, c, chunk of DWCONV_GRAD_CHUNK
 * outputs), any option, any strides. It walks its chunk's outputs in increasing order
 * (the weight and bias partial sums are then plain fmaf chains in the contract's
 * order), recomputing each output's g; it keeps the last halo + 1 g values in a ring
 * (shared memory, one slot column per thread), so that an input's dx can be summed as
 * soon as its last reader's g is known: an input belongs to the chunk of its last
 * reader, and the chunk first recomputes the g of the halo outputs before it. dx of
 * inputs near the row's ends under a non-zeros padding mode (and all of it, when the
 * ring does not fit) is the gather kernel's: their readers lie anywhere in the row.
 *
 * Threads side by side take neighbouring channels where dy's channels lie closer
 * than its positions (channel-last: every load of a warp is one line), else
 * neighbouring chunks. Grid: x, strided over all (b, c, chunk).
 */
#ifndef DWCONV_GPU_KERNEL_BWD_CHUNK_CUH
#define DWCONV_GPU_KERNEL_BWD_CHUNK_CUH

#include "gpu_bwd_common.cuh"

/* Threads of a chunk-kernel block. */
#define GPU_BWD_CHUNK_THREADS 128

template <int XT, int WT>
__global__ __launch_bounds__(GPU_BWD_CHUNK_THREADS) void dwconv_bwd_chunk_kernel(gpu_bwd_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    const int T = blockDim.x, tid = threadIdx.x;
    const int64_t K = a.kernel_size, S = a.stride, L = a.length, L_out = a.output_length;
    const int64_t C = a.channels, chunks = a.tiles, rows = a.batch * C;
    const int RG = a.ring;
    float *ring = (float *)gpu_shared_base() + tid;     /* ring[e * T] */
    float *shared_part = ring + (int64_t)RG * T;        /* [k * T] */
    const int64_t items = rows * chunks;
    /* divmod(k D, S) for k = K - 1, and its step from k to k - 1 */
    const int64_t last_a = (K - 1) * a.dilation / S, last_b = (K - 1) * a.dilation % S;
    const int64_t step_a = a.dilation / S, step_b = a.dilation % S;
    for (int64_t item = (int64_t)blockIdx.x * T + tid; item < items; item += (int64_t)gridDim.x * T) {
        int64_t b, c, j;
        if (a.channels_inner) {
            c = item % C, j = item / C % chunks, b = item / C / chunks;
        } else {
            j = item % chunks, c = item / chunks % C, b = item / chunks / C;
        }
        const gpu_bwd_row<XT, WT> row(a, b, c);
        raw *dx = a.dx ? (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1] : NULL;
        /* the partial sums: in shared memory, or in this chunk's own scratch slots */
        float *part = a.partials_shared ? shared_part
                                        : a.part + gpu_bwd_part(&a, b, c, 0, j);
        const int64_t part_step = a.partials_shared ? T : a.batch * chunks * C;
        if (a.sums)
            for (int64_t k = 0; k <= K; k++) part[k * part_step] = 0.0f;

        const int64_t o_begin = j * DWCONV_GRAD_CHUNK;
        const int64_t o_end = gpu_min64(o_begin + DWCONV_GRAD_CHUNK, L_out);
        const int64_t o_first = dx && RG ? gpu_max64(0, o_begin - a.halo) : o_begin;
        const int64_t in_lo = a.edge_lo, in_hi = L - a.edge_hi; /* dx of these inputs here */
        int slot = 0; /* o's ring slot */
        for (int64_t o = o_first; o < o_end; o++, slot = slot + 1 == RG ? 0 : slot + 1) {
            const float g = row.g(a, o);
            const int64_t j0 = o * S - a.pad_left;
            if (o >= o_begin && a.sums) {
                if (a.dweight)
                    for (int64_t k = 0; k < K; k++)
                        part[k * part_step] =
                            DWCONV_FMAF(g, row.xp(a, j0 + k * a.dilation), part[k * part_step]);
                part[K * part_step] = part[K * part_step] + g;
            }
            if (!dx || !RG) continue;
            ring[slot * T] = g;
            if (o < o_begin) continue;
            /* the inputs whose last reader is o (the row's last output: all the rest) */
            const int64_t lo = gpu_max64(j0, in_lo);
            const int64_t hi = o == L_out - 1 ? in_hi : gpu_min64(j0 + S, in_hi);
            for (int64_t i = lo; i < hi; i++) {
                /* tap k reads i from output o - a when k D = a S + (i - j0): walk k down
                 * (outputs up) with a, b = divmod(k D, S) updated without a division */
                const int64_t r0 = i - j0;
                int64_t ka = last_a, kb = last_b;
                float acc = 0.0f;
                for (int64_t k = K - 1; k >= 0; k--) {
                    if (r0 < S ? kb == r0 && ka <= o : (r0 - kb) % S == 0 && (r0 - kb) / S <= ka) {
                        const int64_t back = ka - (r0 - kb) / S; /* outputs before o */
                        if (back <= o) {
                            const int e = slot - (int)back;
                            acc = DWCONV_FMAF(ring[(e < 0 ? e + RG : e) * T], row.weight(k), acc);
                        }
                    }
                    kb -= step_b, ka -= step_a;
                    if (kb < 0) kb += S, ka--;
                }
                dx[i * a.dx_stride[2]] = gpu_elem<XT>::narrow(acc);
            }
        }
        if (a.sums && a.partials_shared)
            for (int64_t k = 0; k <= K; k++)
                a.part[gpu_bwd_part(&a, b, c, k, j)] = part[k * T];
    }
}

#endif /* DWCONV_GPU_KERNEL_BWD_CHUNK_CUH */
