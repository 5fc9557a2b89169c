/*
 * The channel-first backward's common case: K, stride S and dilation D known at
 * compile time (K <= 8 at S = D = 1, and the forward lean's stepped K of span (K - 1) D
 * at most GPU_BWD_WARP_MAX_SPAN: K 3 at stride 2, K 3 at D 2 and 4, K 5 at D 2),
 * positions adjacent (the reference problem, causal and "same" convolutions), in
 * blocks of one warp. The contract sums dweight and dbias per chunk of 64 outputs,
 * each an fmaf chain in output order, so here each lane owns one chunk and runs its
 * chains itself, in registers, while it computes g: no chain threads that the rest of
 * a block waits for, no block barriers.
 *
 * A tile is GPU_WARP chunks of one row: outputs t0 .. t0 + 2047 and the inputs from
 * x0 = t0 S - pad_left on that they read. Per tile:
 *   1. stage x of the tile's window and dy of its outputs (and of the NP = span / S
 *      outputs before it), as stored, with 4-byte asynchronous copies, so that the
 *      whole tile is in flight at once without registers; positions outside the row by
 *      the padding mode (or the causal state). Shared memory holds each in blocks of a
 *      lane's chunk (64 S inputs, 64 outputs), one spare word after each, so that
 *      lanes a block apart read distinct banks. 16-bit blocks start where x's (dy's)
 *      4-byte words do, one element before the chunk when the row position is odd:
 *      each lane realigns its pairs with a funnel shift;
 *   2. g: each lane over its chunk, the window sliding through registers, into a
 *      region of f32 blocks (dy's own for f32), the chunk's K weight chains and bias
 *      sum on the way. Lanes 0..NP-1 first recompute g of the outputs before the tile
 *      (readers of its first inputs);
 *   3. dx: each lane over its chunk again, g of outputs m - NP .. m in registers:
 *      input x0 + m S + s (s < S) from the taps k with (s - k D) a multiple of S,
 *      k falling (outputs rising: the contract's chain), written as x's dtype over
 *      the lane's own inputs in x's region (x is dead);
 *   4. dx out, coalesced, for the inputs all of whose readers exist (the gather
 *      kernel takes the row ends: gpu_bwd_warp_edges);
 *   5. the tile's tree of the chunk partials, one lane per tap.
 *
 * Grid: x = tiles of all rows, strided.
 */
#ifndef DWCONV_GPU_KERNEL_BWD_NCL_WARP_CUH
#define DWCONV_GPU_KERNEL_BWD_NCL_WARP_CUH

#include "gpu_bwd_common.cuh"

#define GPU_BWD_WARP_MAX_K 8     /* K at dilation 1 */
/* (K - 1) D of the dilated instances at most: K 7 at D 2 (span 12) took hipcc more than
 * 5 minutes for one instance (spans up to 8, 2 seconds) */
#define GPU_BWD_WARP_MAX_SPAN 8
#define GPU_BWD_WARP_OUTPUTS (GPU_WARP * DWCONV_GRAD_CHUNK) /* a tile */
#define GPU_BWD_WARP_FRONT 16 /* words before block 0: its elements -15 .. -1 and a spare */

/* The word of 4-byte unit u (from -15 on) of a region of blocks of BE elements, EPW
 * elements a word: P = BE / EPW words a block and a spare, so unit u of block floor(u /
 * P) lies u + floor(u / P) words from block 0 (u + P > 0: a division of positives,
 * by a power of two, a shift). */
template <int EPW, int BE = DWCONV_GRAD_CHUNK> GPU_HD int gpu_bwd_warp_word(int u) {
    const int per_block = BE / EPW;
    return GPU_BWD_WARP_FRONT + u + (u + per_block) / per_block - 1;
}

/* Whether (K, S, D) is one of the stepped instances (stride or dilation above 1). */
#define GPU_BWD_WARP_MAX_S 2
#define GPU_BWD_WARP_STEPPED(K_, S_, D_) \
    (((S_) > 1 || (D_) > 1) && (S_) <= GPU_BWD_WARP_MAX_S && ((K_) - 1) * (D_) <= GPU_BWD_WARP_MAX_SPAN)

/* Words of the regions: staged x (blocks of 64 S elements, -15 .. S tile + span + 2:
 * a pair past what the lanes use), staged dy (-15 .. tile + 1), and for 16-bit dtypes
 * g (f32, -15 .. tile). */
template <int EPW, int BE> GPU_HD int gpu_bwd_warp_words(int last_element) {
    return (gpu_bwd_warp_word<EPW, BE>(last_element / EPW) + 4) / 4 * 4;
}
template <int XT, int S> struct gpu_bwd_warp_smem {
    enum { EPW = 4 / (int)sizeof(typename gpu_elem<XT>::raw), XBE = S * DWCONV_GRAD_CHUNK };
    static __host__ __device__ int x_words() {
        return gpu_bwd_warp_words<EPW, XBE>(S * GPU_BWD_WARP_OUTPUTS + GPU_BWD_WARP_MAX_SPAN + 2);
    }
    static __host__ __device__ int dy_words() { return gpu_bwd_warp_words<EPW, DWCONV_GRAD_CHUNK>(GPU_BWD_WARP_OUTPUTS + 1); }
    static __host__ __device__ int g_words() {
        return EPW == 1 ? 0 : gpu_bwd_warp_words<1, DWCONV_GRAD_CHUNK>(GPU_BWD_WARP_OUTPUTS);
    }
    static __host__ __device__ size_t bytes() { return (size_t)(x_words() + dy_words() + g_words()) * 4; }
};

/* Units [u0, u1) of a staged region (unit 0's element 0 at row position unit0), one
 * word at a time: an asynchronous copy where every element of the word lies in [0, n)
 * of the row, else element by element from value(position). */
template <int XT, int BE, class F>
static __device__ __forceinline__ void gpu_bwd_warp_units(uint32_t *region, const typename gpu_elem<XT>::raw *row,
                                                          int64_t unit0, int u0, int u1, int64_t n, int lane,
                                                          F value) {
    typedef typename gpu_elem<XT>::raw raw;
    const int EPW = 4 / (int)sizeof(raw);
    for (int u = u0 + lane; u < u1; u += GPU_WARP) {
        const int64_t at = unit0 + (int64_t)u * EPW; /* row position of the word's element 0 */
        uint32_t *to = region + gpu_bwd_warp_word<EPW, BE>(u);
        if (at >= 0 && at + EPW <= n) {
            gpu_copy4_async(to, row + at);
        } else {
#pragma unroll
            for (int h = 0; h < EPW; h++) ((raw *)to)[h] = value(at + h);
        }
    }
}

/* Elements [lo, hi) of a row segment (element 0 at row position p0, parity: the
 * element offset of p0 inside its 4-byte word) into a staged region of blocks of BE
 * elements, whole words by asynchronous copies where every element of the word lies
 * in [0, n) of the row, the others element by element from value(position). The
 * blocks whose words all lie inside the segment and the row (all but a tile's ends)
 * are copied by a loop of their own, without a test or an index computation per word. */
template <int XT, int BE, class F>
static __device__ __forceinline__ void gpu_bwd_warp_stage(uint32_t *region, const typename gpu_elem<XT>::raw *row,
                                                          int64_t p0, int parity, int lo, int hi, int64_t n,
                                                          int lane, F value) {
    typedef typename gpu_elem<XT>::raw raw;
    const int EPW = 4 / (int)sizeof(raw), P = BE / EPW; /* words a block */
    const int u_lo = (lo + parity) / EPW - ((lo + parity) % EPW < 0), u_hi = (hi + parity + EPW - 1) / EPW;
    const int64_t unit0 = p0 - parity; /* row position of unit 0's element 0 */
    /* whole blocks [b_lo, b_hi): inside [u_lo, u_hi) (u_lo > -P) and the row */
    int b_lo = (u_lo + 2 * P - 1) / P - 1, b_hi = u_hi / P;
    if (unit0 < 0) /* (at most b_hi + 1: an int) */
        b_lo = (int)gpu_min64(gpu_max64(b_lo, (-unit0 + BE - 1) / BE), b_hi + 1);
    b_hi = (int)gpu_min64(b_hi, n < unit0 ? 0 : (n - unit0) / BE);
    if (b_hi < b_lo) b_hi = b_lo;
    const raw *from = row + (unit0 + (int64_t)b_lo * BE) + lane * EPW;
    uint32_t *to = region + gpu_bwd_warp_word<EPW, BE>(b_lo * P) + lane;
    for (int block = b_lo; block < b_hi; block++, from += BE, to += P + 1) {
#pragma unroll
        for (int r = 0; r < P; r += GPU_WARP) gpu_copy4_async(to + r, from + r * EPW);
    }
    gpu_bwd_warp_units<XT, BE>(region, row, unit0, u_lo, b_lo * P < u_hi ? b_lo * P : u_hi, n, lane, value);
    gpu_bwd_warp_units<XT, BE>(region, row, unit0, b_hi * P > u_lo ? b_hi * P : u_lo, u_hi, n, lane, value);
}

/* Element e (from -15 on) of a staged region of blocks of BE elements, as stored. */
template <int XT, int BE>
static __device__ __forceinline__ typename gpu_elem<XT>::raw *gpu_bwd_warp_at(uint32_t *region, int parity, int e) {
    typedef typename gpu_elem<XT>::raw raw;
    const int EPW = 4 / (int)sizeof(raw), ep = e + parity;
    const int u = ep / EPW - (ep % EPW < 0), h = ep - u * EPW;
    return (raw *)(region + gpu_bwd_warp_word<EPW, BE>(u)) + h;
}
/* ... widened. */
template <int XT, int BE>
static __device__ __forceinline__ float gpu_bwd_warp_elem(const uint32_t *region, int parity, int e) {
    return gpu_elem<XT>::widen(*gpu_bwd_warp_at<XT, BE>((uint32_t *)region, parity, e));
}

/* A lane's chunk of a staged region of blocks of BE elements, read two elements at a
 * time in order: pair q is elements 2q and 2q + 1 of the chunk (element BE on: the
 * next block, past a spare word). f32: one element a word. 16-bit: words in order,
 * the pair shifted out of the last two (the chunk starts `parity` elements into its
 * block). */
template <int XT, int BE> struct gpu_bwd_warp_run {
    typedef typename gpu_elem<XT>::raw raw;
    const uint32_t *at;
    int shift;
    uint32_t last;
    __device__ __forceinline__ gpu_bwd_warp_run(const uint32_t *block, int parity)
        : at(block), shift(16 * parity), last(block[0]) {}
    __device__ __forceinline__ void pair(int q, float &a, float &b) {
        const int j = q + 1, per_block = BE / 2;
        const uint32_t next = at[j + (j >= per_block)];
        const uint32_t v = (uint32_t)((((uint64_t)next << 32) | last) >> shift);
        last = next;
        a = gpu_elem<XT>::widen((raw)(v & 0xffffu)), b = gpu_elem<XT>::widen((raw)(v >> 16));
    }
};
template <int BE> struct gpu_bwd_warp_run<DWCONV_F32, BE> {
    const float *at;
    __device__ __forceinline__ gpu_bwd_warp_run(const uint32_t *block, int) : at((const float *)block) {}
    __device__ __forceinline__ void pair(int q, float &a, float &b) {
        const int e = 2 * q;
        a = at[e + (e >= BE)], b = at[e + 1 + (e + 1 >= BE)];
    }
};

/* One output of phase 2: z over the window xw (tap k at xw[k D]), g from dy into *g,
 * the chains p (p[K]: the bias's sum). */
template <int K, int D>
static __device__ __forceinline__ void gpu_bwd_warp_output(const float *xw, const float *w, float bias,
                                                           int activation, float dy, float *g, float *p) {
    float z = bias;
#pragma unroll
    for (int k = 0; k < K; k++) z = DWCONV_FMAF(xw[k * D], w[k], z);
    const float gv = dwconv_activation_grad(activation, z, dy);
    *g = gv;
#pragma unroll
    for (int k = 0; k < K; k++) p[k] = DWCONV_FMAF(gv, xw[k * D], p[k]);
    p[K] = p[K] + gv;
}

/* Phase 2 for a whole chunk, activation ACT: the window's pairs loaded as the outputs
 * reach them (outputs 2j and 2j + 1 read up to element (2j + 1) S + span, in pair
 * last(j) below: S pairs more each step). */
template <int XT, int K, int S, int D, int ACT>
static __device__ __forceinline__ void gpu_bwd_warp_chunk(gpu_bwd_warp_run<XT, S * DWCONV_GRAD_CHUNK> xr,
                                                          gpu_bwd_warp_run<XT, DWCONV_GRAD_CHUNK> dr,
                                                          float *gl, const float *w, float bias, float *p) {
#define GPU_BWD_WARP_LAST_PAIR(j) (((2 * (j) + 1) * S + (K - 1) * D) / 2)
    float xe[2 * GPU_BWD_WARP_LAST_PAIR(DWCONV_GRAD_CHUNK / 2 - 1) + 2];
#pragma unroll
    for (int j = 0; j < DWCONV_GRAD_CHUNK / 2; j++) {
        if (j == 0) {
#pragma unroll
            for (int q = 0; q <= GPU_BWD_WARP_LAST_PAIR(0); q++) xr.pair(q, xe[2 * q], xe[2 * q + 1]);
        } else { /* last(j) - last(j - 1) = S: loops of constant trips (hipcc unrolls no other) */
#pragma unroll
            for (int i = 1; i <= S; i++) {
                const int q = GPU_BWD_WARP_LAST_PAIR(j - 1) + i;
                xr.pair(q, xe[2 * q], xe[2 * q + 1]);
            }
        }
        float d0, d1;
        dr.pair(j, d0, d1);
        gpu_bwd_warp_output<K, D>(xe + 2 * j * S, w, bias, ACT, d0, gl + 2 * j, p);
        gpu_bwd_warp_output<K, D>(xe + (2 * j + 1) * S, w, bias, ACT, d1, gl + 2 * j + 1, p);
    }
#undef GPU_BWD_WARP_LAST_PAIR
}

/* Inputs [edge_lo, L - edge_hi) of a row are this kernel's (plan), the rest the gather
 * kernel's: besides the padding mode's ends and the final state's positions, the
 * inputs read by an output outside the row ([0, span - pad_left) and
 * [L_out S - pad_left, L)), whose chains are shorter. */
static inline void gpu_bwd_warp_edges(gpu_bwd_args *a) {
    if (!a->dx) return;
    const int64_t L = a->length;
    int64_t lo = a->span - a->pad_left, hi = L - (a->output_length * a->stride - a->pad_left);
    lo = lo > a->edge_lo ? lo : a->edge_lo;
    hi = hi > a->edge_hi ? hi : a->edge_hi;
    a->edge_lo = lo < 0 ? 0 : lo > L ? L : lo;
    a->edge_hi = hi < 0 ? 0 : hi > L - a->edge_lo ? L - a->edge_lo : hi;
}

template <int XT, int WT, int K, int S, int D>
__global__ __launch_bounds__(GPU_WARP) void dwconv_bwd_ncl_warp_kernel(gpu_bwd_args a) {
    typedef typename gpu_elem<XT>::raw raw;
    typedef gpu_bwd_warp_smem<XT, S> smem;
    const int lane = threadIdx.x, EPW = smem::EPW, XBE = smem::XBE, SPAN = (K - 1) * D;
    const int NP = SPAN / S; /* outputs before the tile whose g the tile's inputs need */
    uint32_t *xs = (uint32_t *)gpu_shared_base(), *ds = xs + smem::x_words(); /* x, then dx */
    float *gs = EPW == 1 ? (float *)ds : (float *)(ds + smem::dy_words()); /* g */
    const int64_t L = a.length, L_out = a.output_length, pad = a.pad_left;
    const int64_t tasks = a.batch * a.channels * a.tiles;
    for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
        const int64_t tile = task % a.tiles, bc = task / a.tiles;
        const int64_t c = bc % a.channels, b = bc / a.channels;
        const gpu_bwd_row<XT, WT> row(a, b, c);
        const int64_t t0 = tile * GPU_BWD_WARP_OUTPUTS, x0 = t0 * S - pad; /* element 0 of dy, x */
        const int n_out = (int)gpu_min64(GPU_BWD_WARP_OUTPUTS, L_out - t0);
        const int xpar = gpu_misalignment<XT>(row.x, x0) % EPW, dpar = gpu_misalignment<XT>(row.dy, t0) % EPW;
        float w[K];
#pragma unroll
        for (int k = 0; k < K; k++) w[k] = row.weight(k);

        gpu_sync_warp(); /* the previous tile's reads are done */
        /* 1. x elements [-NP S, (n_out - 1) S + span], dy [-NP, n_out) (not before the row) */
        gpu_bwd_warp_stage<XT, XBE>(xs, row.x, x0, xpar, -NP * S, (n_out - 1) * S + SPAN + 1, L, lane,
                                    [&](int64_t j) { return row.xr(a, j); });
        gpu_bwd_warp_stage<XT, DWCONV_GRAD_CHUNK>(ds, row.dy, t0, dpar, (int)gpu_max64(-NP, -t0), n_out, L_out, lane,
                                                  [&](int64_t j) { return j >= 0 && j < L_out ? row.dy[j] : (raw)0; });
        gpu_copy_wait();
        gpu_sync_warp();

        /* 2. g of the NP outputs before the tile, then each lane's chunk */
        if (lane < NP && t0 + lane - NP >= 0) {
            const int d = lane - NP;
            float z = row.bias;
#pragma unroll
            for (int k = 0; k < K; k++) {
                const float xv = gpu_bwd_warp_elem<XT, XBE>(xs, xpar, d * S + k * D);
                z = DWCONV_FMAF(xv, w[k], z);
            }
            gs[gpu_bwd_warp_word<1>(d)] =
                dwconv_activation_grad(a.activation, z, gpu_bwd_warp_elem<XT, DWCONV_GRAD_CHUNK>(ds, dpar, d));
        }
        const int c0 = lane * DWCONV_GRAD_CHUNK, n = n_out - c0; /* outputs of the lane's chunk */
        float *gl = gs + gpu_bwd_warp_word<1>(c0);
        float p[K + 1] = {};
        if (n >= DWCONV_GRAD_CHUNK) {
            const gpu_bwd_warp_run<XT, XBE> xr(xs + gpu_bwd_warp_word<EPW, XBE>(c0 * S / EPW), xpar);
            const gpu_bwd_warp_run<XT, DWCONV_GRAD_CHUNK> dr(ds + gpu_bwd_warp_word<EPW>(c0 / EPW), dpar);
            if (a.activation == DWCONV_ACT_SILU) gpu_bwd_warp_chunk<XT, K, S, D, DWCONV_ACT_SILU>(xr, dr, gl, w, row.bias, p);
            else if (a.activation == DWCONV_ACT_RELU) gpu_bwd_warp_chunk<XT, K, S, D, DWCONV_ACT_RELU>(xr, dr, gl, w, row.bias, p);
            else gpu_bwd_warp_chunk<XT, K, S, D, DWCONV_ACT_NONE>(xr, dr, gl, w, row.bias, p);
        } else {
#pragma unroll 1
            for (int m = 0; m < n; m++) { /* the row's last chunk, shorter */
                float xw[SPAN + 1];
#pragma unroll
                for (int k = 0; k < K; k++) xw[k * D] = gpu_bwd_warp_elem<XT, XBE>(xs, xpar, (c0 + m) * S + k * D);
                gpu_bwd_warp_output<K, D>(xw, w, row.bias, a.activation,
                                          gpu_bwd_warp_elem<XT, DWCONV_GRAD_CHUNK>(ds, dpar, c0 + m), gl + m, p);
            }
        }
        gpu_sync_warp(); /* every g is written, x and dy are read */

        /* 3. dx over the lane's inputs in x's region, g of the NP outputs before the
         * chunk (the previous lane's, or the tile's first) first */
        if (a.dx) {
            if (n > 0) {
                float gw[NP + 1]; /* gw[NP + r]: g of output m + r, r in [-NP, 0] */
#pragma unroll
                for (int j = 1; j <= NP; j++) gw[NP + 1 - j] = gl[-1 - j]; /* element -j: a spare word between */
#pragma unroll 16
                for (int m = 0; m < DWCONV_GRAD_CHUNK; m++) {
#pragma unroll
                    for (int i = 0; i < NP; i++) gw[i] = gw[i + 1];
                    gw[NP] = gl[m];
#pragma unroll
                    for (int s = 0; s < S; s++) {
                        float acc = 0.0f;
#pragma unroll
                        for (int k = K - 1; k >= 0; k--)
                            if ((s - k * D) % S == 0) acc = DWCONV_FMAF(gw[NP + (s - k * D) / S], w[k], acc);
                        *gpu_bwd_warp_at<XT, XBE>(xs, xpar, (c0 + m) * S + s) = gpu_elem<XT>::narrow(acc);
                    }
                }
            }
            gpu_sync_warp();
            /* 4. inputs x0 + d, d in [lo, hi) */
            raw *dx = (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1];
            const int lo = (int)gpu_min64(gpu_max64(0, a.edge_lo - x0), n_out * S); /* 64-bit until clamped */
            const int hi = (int)gpu_max64(gpu_min64(n_out * S, L - a.edge_hi - x0), lo);
            for (int d = lo + lane; d < hi; d += GPU_WARP) dx[x0 + d] = *gpu_bwd_warp_at<XT, XBE>(xs, xpar, d);
        }

        /* 5. the tile's tree: lane k of tap k over the chunk partials (g is dead) */
        if (a.sums) {
            const int chunks = (n_out + DWCONV_GRAD_CHUNK - 1) / DWCONV_GRAD_CHUNK;
            float *ps = gs; /* ps[k * (GPU_WARP + 1) + chunk] */
            if (n > 0) {
#pragma unroll
                for (int k = 0; k <= K; k++) ps[k * (GPU_WARP + 1) + lane] = p[k];
            }
            gpu_sync_warp();
            if (lane <= K) {
                const float sum = dwconv_grad_tree(ps + lane * (GPU_WARP + 1), chunks);
                a.part[gpu_bwd_part(&a, b, c, lane, tile)] = sum;
            }
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_BWD_NCL_WARP_CUH */
