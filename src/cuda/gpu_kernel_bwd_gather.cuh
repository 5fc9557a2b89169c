/*
 * dx of single inputs, any option: one thread per (b, c, input) of the inputs the plan
 * leaves to it (a few at each end of a row under reflect, replicate or circular
 * padding, whose readers lie anywhere in the row; or every input when the chunk
 * kernel's ring does not fit; the causal backward's state positions and the last S
 * inputs, which the gradient of the final state reaches). The thread finds the
 * padded positions that map to its input (at most three ranges), the outputs that read
 * them, and walks those outputs in increasing order and, in each, the taps that read
 * the ranges (by interval, not by testing all K) in increasing order: exactly the
 * contract's chain. Each reader's g is recomputed where it is first needed.
 *
 * Grid: x, strided over all (b, c, input).
 */
#ifndef DWCONV_GPU_KERNEL_BWD_GATHER_CUH
#define DWCONV_GPU_KERNEL_BWD_GATHER_CUH

#include "gpu_bwd_common.cuh"

#define GPU_BWD_GATHER_THREADS 128

/* Outputs [lo, hi] whose taps may read padded positions [first, last], a range within
 * those some output reads ([-pad_left, the last output's last tap]). */
static __device__ __forceinline__ void gpu_bwd_readers(const gpu_bwd_args &a, int64_t first,
                                                       int64_t last, int64_t *lo, int64_t *hi) {
    *lo = 1, *hi = 0; /* empty */
    if (first > last) return;
    const int64_t v = first + a.pad_left - a.span; /* an output starting here reads first last */
    *lo = v <= 0 ? 0 : (v + a.stride - 1) / a.stride;
    *hi = gpu_min64((last + a.pad_left) / a.stride, a.output_length - 1);
}

/* The taps k in [0, K) of an output whose tap 0 reads j0 that read padded positions
 * [first, last] (within those some output reads, as above): [*ka, *kb], empty where
 * *ka > *kb. The rounding up adds nothing to lo: K = 1 allows any dilation. */
static __device__ __forceinline__ void gpu_bwd_taps_reading(int64_t j0, int64_t first, int64_t last,
                                                            int64_t dilation, int64_t K, int64_t *ka,
                                                            int64_t *kb) {
    int64_t lo = first - j0, hi = last - j0; /* k * dilation in [lo, hi] */
    if (dilation != 1) {
        lo = lo <= 0 ? 0 : lo / dilation + (lo % dilation != 0);
        hi = hi < 0 ? -1 : hi / dilation;
    }
    *ka = gpu_max64(lo, 0), *kb = gpu_min64(hi, K - 1);
}

/* idx[0..2] ordered by key[idx[.]], ties kept in index order. */
static __device__ __forceinline__ void gpu_order3(const int64_t key[3], int idx[3]) {
    idx[0] = 0, idx[1] = 1, idx[2] = 2;
    for (int x = 1; x < 3; x++)
        for (int y = x; y > 0 && key[idx[y]] < key[idx[y - 1]]; y--) {
            const int t = idx[y];
            idx[y] = idx[y - 1], idx[y - 1] = t;
        }
}

template <int XT, int WT>
__global__ __launch_bounds__(GPU_BWD_GATHER_THREADS) void dwconv_bwd_gather_kernel(gpu_bwd_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    const int64_t L = a.length, C = a.channels, K = a.kernel_size;
    const int64_t SP = a.state_positions, S = a.state_length;
    const int64_t n = SP + a.edge_lo + a.edge_hi; /* positions per row */
    const int64_t items = a.batch * C * n;
    for (int64_t item = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; item < items;
         item += (int64_t)gridDim.x * blockDim.x) {
        int64_t b, c, q;
        if (a.channels_inner) {
            c = item % C, q = item / C % n, b = item / C / n;
        } else {
            q = item % n, c = item / n % C, b = item / n / C;
        }
        /* i < 0: a state position (the causal backward's dstate_in) */
        const int64_t i = q < SP ? q - SP : q - SP < a.edge_lo ? q - SP : L - a.edge_hi + (q - SP - a.edge_lo);
        const gpu_bwd_row<XT, WT> row(a, b, c);
        /* the padded positions that map to i: itself, and the padding mode's */
        int64_t first[3] = {i, 0, 0}, last[3] = {i, -1, -1};
        switch (a.padding_mode) {
        case DWCONV_PAD_REFLECT:
            if (i >= 1) first[1] = last[1] = -i;
            if (i <= L - 2) first[2] = last[2] = 2 * (L - 1) - i;
            break;
        case DWCONV_PAD_REPLICATE:
            if (i == 0) first[1] = INT64_MIN, last[1] = -1;
            if (i == L - 1) first[2] = L, last[2] = INT64_MAX;
            break;
        case DWCONV_PAD_CIRCULAR:
            first[1] = last[1] = i - L;
            first[2] = last[2] = i + L;
            break;
        default: break;
        }
        /* each range within the positions some output reads: no arithmetic below sees
         * replicate's unbounded ends, however large the padding */
        const int64_t jmax = (a.output_length - 1) * a.stride - a.pad_left + a.span;
        int64_t lo[3], hi[3];
        for (int r = 0; r < 3; r++) {
            first[r] = gpu_max64(first[r], -a.pad_left), last[r] = gpu_min64(last[r], jmax);
            gpu_bwd_readers(a, first[r], last[r], &lo[r], &hi[r]);
        }
        /* every reader once, in increasing order: the ranges by their readers' starts;
         * each reader's taps in increasing order: the ranges by position (the three are
         * disjoint, so their taps are too, in the same order for every reader) */
        int order[3], by_pos[3];
        gpu_order3(lo, order), gpu_order3(first, by_pos);
        float acc = 0.0f;
        int64_t next = 0; /* outputs below this are done */
        for (int r = 0; r < 3; r++) {
            const int64_t end = hi[order[r]];
            if (lo[order[r]] > end) continue; /* no reader */
            for (int64_t o = gpu_max64(lo[order[r]], next); o <= end; o++) {
                const int64_t j0 = o * a.stride - a.pad_left;
                float g = 0.0f;
                bool have_g = false;
                for (int p = 0; p < 3; p++) { /* only the taps that read the ranges, not all K */
                    int64_t ka, kb;
                    gpu_bwd_taps_reading(j0, first[by_pos[p]], last[by_pos[p]], a.dilation, K, &ka, &kb);
                    for (int64_t k = ka; k <= kb; k++) {
                        const int64_t j = j0 + k * a.dilation; /* before the row: the state's */
                        if ((S > 0 && j < 0 ? j : dwconv_source_index(a.padding_mode, j, L)) != i) continue;
                        if (!have_g) g = row.g(a, o), have_g = true;
                        acc = DWCONV_FMAF(g, row.weight(k), acc);
                    }
                }
            }
            next = gpu_max64(next, end + 1);
        }
        const int64_t state_row = (b * C + c) * S;
        if (a.dstate_out && i + S >= L) /* the gradient arriving at the final state, last */
            acc = acc + gpu_elem<XT>::widen(((const raw *)a.dstate_out)[state_row + i + S - L]);
        if (i < 0) {
            ((raw *)a.dstate_in)[state_row + S + i] = gpu_elem<XT>::narrow(acc);
        } else {
            raw *dx = (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1];
            dx[i * a.dx_stride[2]] = gpu_elem<XT>::narrow(acc);
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_BWD_GATHER_CUH */
