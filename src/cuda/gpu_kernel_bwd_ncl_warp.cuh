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
 *   2. one pass of each lane over its chunk, the window sliding through registers:
 *      g of each output (the chunk's K weight chains and bias sum on the way); f32
 *      keeps it over its own dy (3 below); 16-bit dtypes take dx in the pass: g
 *      enters a window of the last NP + 1 values of g in registers, which then holds every
 *      reader of the S inputs from that output's first on: their dx, taps k falling
 *      (outputs rising: the contract's chain), as x's dtype over the lane's own inputs
 *      in x's region. Each lane first recomputes g of the NP outputs before its chunk
 *      (from the previous lane's block of x and dy, or the staged front of the tile),
 *      and the warp syncs before any dx is written. No lane writes what another still
 *      reads: the first span - S + 1 inputs of a chunk (the previous lane's last
 *      outputs read them) wait in registers;
 *   3. after a warp sync, those inputs' dx into x's region too; f32: each lane's dx
 *      in a pass of its own over its chunk's g, in the same order;
 *   4. dx out, coalesced, for the inputs all of whose readers exist (the gather
 *      kernel takes the row ends: gpu_bwd_warp_edges);
 *   5. the tile's tree of the chunk partials, one lane per tap, over dy's region.
 * No region of g: shared memory is x's and dy's regions only (f32's g over dy).
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
 * a pair past what the lanes use; dx over it), staged dy (-15 .. tile + 1; the tile's
 * tree of partials over it). */
template <int EPW, int BE> GPU_HD int gpu_bwd_warp_words(int last_element) {
    return (gpu_bwd_warp_word<EPW, BE>(last_element / EPW) + 4) / 4 * 4;
}
template <int XT, int S> struct gpu_bwd_warp_smem {
    enum { EPW = 4 / (int)sizeof(typename gpu_elem<XT>::raw), XBE = S * DWCONV_GRAD_CHUNK };
    static __host__ __device__ int x_words() {
        return gpu_bwd_warp_words<EPW, XBE>(S * GPU_BWD_WARP_OUTPUTS + GPU_BWD_WARP_MAX_SPAN + 2);
    }
    static __host__ __device__ int dy_words() { return gpu_bwd_warp_words<EPW, DWCONV_GRAD_CHUNK>(GPU_BWD_WARP_OUTPUTS + 1); }
    static __host__ __device__ size_t bytes() { return (size_t)(x_words() + dy_words()) * 4; }
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

/* One output: z over the window xw (tap k at xw[k D]), its g from dy, the chains p
 * (p[K]: the bias's sum). */
template <int K, int D>
static __device__ __forceinline__ float gpu_bwd_warp_output(const float *xw, const float *w, float bias,
                                                            int activation, float dy, float *p) {
    float z = bias;
#pragma unroll
    for (int k = 0; k < K; k++) z = DWCONV_FMAF(xw[k * D], w[k], z);
    const float gv = gpu_activation_grad(activation, z, dy);
#pragma unroll
    for (int k = 0; k < K; k++) p[k] = DWCONV_FMAF(gv, xw[k * D], p[k]);
    p[K] = p[K] + gv;
    return gv;
}

/* 16-bit dtypes (FUSED): dx of a lane's inputs as its pass completes them: input
 * e0 + i (i < S * 64) into x's region over the lane's own x, except the first HEAD (the
 * previous lane's last outputs still read them), which wait in registers until every
 * lane has passed (flush). f32: the pass keeps each g over its own dy (gl) and dx
 * takes a pass of its own (gpu_bwd_warp_dx_pass): with dx in the pass f32 ran
 * slower on several cases, 16-bit dtypes (whose g needed a region of its own) faster
 * (bench/RESULTS-gpu.md, runs K and L). */
template <int XT, int K, int S, int D> struct gpu_bwd_warp_dx {
    typedef typename gpu_elem<XT>::raw raw;
    enum {
        SPAN = (K - 1) * D, XBE = S * DWCONV_GRAD_CHUNK, EPW = 4 / (int)sizeof(raw), FUSED = EPW > 1,
        /* the previous lane's window reaches input SPAN - S of this chunk, and its pair
         * reads go three elements further (the next word is loaded before its pair is
         * shifted out): all kept, so that no word another lane still reads is written
         * before the sync */
        HEAD_READ = SPAN - S + 1 + 3,
        HEAD = FUSED && HEAD_READ > 0 ? HEAD_READ : 0
    };
    raw *at; /* input e0: its block's start, past the parity */
    int xpar;
    bool on; /* dx wanted */
    float *gl; /* f32: g of the chunk's outputs, over their dy */
    float head[HEAD > 0 ? HEAD : 1];

    /* e0: a block's first element. Stores address from it: through gpu_bwd_warp_at
     * each store's address came from its element index anew, and ptxas held those
     * addresses live across the pass. */
    __device__ __forceinline__ gpu_bwd_warp_dx(uint32_t *xs, int xpar_, int e0, bool on_, float *gl_)
        : at((raw *)(xs + gpu_bwd_warp_word<EPW, XBE>(e0 / EPW)) + xpar_), xpar(xpar_), on(on_), gl(gl_), head() {}
    /* input e0 + i: the next block's past the spare word (16-bit, odd parity, the last) */
    __device__ __forceinline__ void store(int i, float v) {
        at[i + (i + xpar >= XBE ? EPW : 0)] = gpu_elem<XT>::narrow(v);
    }
    /* KEEP: i known at compile time (else i is past the head) */
    template <bool KEEP> __device__ __forceinline__ void put(int i, float v) {
        if (KEEP && i < HEAD) head[i] = v;
        else store(i, v);
    }
    /* after a warp sync: the inputs kept, of the `count` the lane completed */
    __device__ __forceinline__ void flush(int count) {
#pragma unroll
        for (int i = 0; i < HEAD; i++)
            if (i < count) store(i, head[i]);
    }
};

/* g of output m enters g's window gw (gw[NP + r]: g of output m + r, r in [-NP, 0]),
 * which then holds every reader of the S inputs from m S on: their dx, taps k falling
 * (outputs rising: the contract's chain), to put(s, dx of input m S + s). */
template <int K, int S, int D, class F>
static __device__ __forceinline__ void gpu_bwd_warp_dx_of(float *gw, float g, const float *w, F put) {
    const int NP = (K - 1) * D / S;
#pragma unroll
    for (int i = 0; i < NP; i++) gw[i] = gw[i + 1];
    gw[NP] = g;
#pragma unroll
    for (int s = 0; s < S; s++) {
        float acc = 0.0f;
#pragma unroll
        for (int k = K - 1; k >= 0; k--)
            if ((s - k * D) % S == 0) acc = DWCONV_FMAF(gw[NP + (s - k * D) / S], w[k], acc);
        put(s, acc);
    }
}

/* One output m of a lane's chunk: its g (the chains on the way); 16-bit: the dx it
 * completes (gpu_bwd_warp_dx_of), f32: g kept over its dy for the dx pass. */
template <int XT, int K, int S, int D, bool KEEP>
static __device__ __forceinline__ void gpu_bwd_warp_step(const float *xw, float dy, int m, const float *w,
                                                         float bias, int activation, float *gw, float *p,
                                                         gpu_bwd_warp_dx<XT, K, S, D> &dx) {
    const float g = gpu_bwd_warp_output<K, D>(xw, w, bias, activation, dy, p);
    if (!dx.FUSED) {
        dx.gl[m] = g; /* dy[m] is read */
        return;
    }
    if (dx.on) gpu_bwd_warp_dx_of<K, S, D>(gw, g, w, [&](int s, float v) { dx.template put<KEEP>(m * S + s, v); });
}

/* f32's dx pass over a lane's chunk (its inputs, in x's region), g of its outputs and
 * of the NP before it from gl (the previous lane's, or the tile's front): input m S + s
 * from the taps k with (s - k D) a multiple of S, k falling (outputs rising: the
 * contract's chain). */
template <int XT, int K, int S, int D>
static __device__ __forceinline__ void gpu_bwd_warp_dx_pass(gpu_bwd_warp_dx<XT, K, S, D> &dx, const float *w) {
    const int NP = (K - 1) * D / S;
    float gw[NP + 1]; /* gw[NP + r]: g of output m + r, r in [-NP, 0] */
#pragma unroll
    for (int j = 1; j <= NP; j++) gw[NP + 1 - j] = dx.gl[-1 - j]; /* element -j: a spare word between */
#pragma unroll 16
    for (int m = 0; m < DWCONV_GRAD_CHUNK; m++)
        gpu_bwd_warp_dx_of<K, S, D>(gw, dx.gl[m], w, [&](int s, float v) { dx.store(m * S + s, v); });
}

/* g of the tile's output e (from -15 on) from the staged x and dy, read one element
 * at a time. */
template <int XT, int K, int S, int D>
static __device__ __forceinline__ float gpu_bwd_warp_staged_g(const uint32_t *xs, int xpar, const uint32_t *ds,
                                                              int dpar, int e, const float *w, float bias,
                                                              int activation) {
    float z = bias;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const float xv = gpu_bwd_warp_elem<XT, S * DWCONV_GRAD_CHUNK>(xs, xpar, e * S + k * D);
        z = DWCONV_FMAF(xv, w[k], z);
    }
    return gpu_activation_grad(activation, z, gpu_bwd_warp_elem<XT, DWCONV_GRAD_CHUNK>(ds, dpar, e));
}

/* g of the NP outputs before a lane's chunk (c0 - NP .. c0 - 1 of the tile; 0 before
 * the row), recomputed from the staged x and dy, into gw[1 .. NP] (its first step
 * slides them down). */
template <int XT, int K, int S, int D>
static __device__ __forceinline__ void gpu_bwd_warp_before(const uint32_t *xs, int xpar, const uint32_t *ds,
                                                           int dpar, int c0, int64_t t0, const float *w,
                                                           float bias, int activation, float *gw) {
    const int NP = (K - 1) * D / S;
#pragma unroll
    for (int d = -NP; d < 0; d++)
        gw[NP + 1 + d] = t0 + c0 + d >= 0
                             ? gpu_bwd_warp_staged_g<XT, K, S, D>(xs, xpar, ds, dpar, c0 + d, w, bias, activation)
                             : 0.0f;
}

/* The pass over a whole chunk, activation ACT: the window's pairs loaded as the
 * outputs reach them (outputs 2j and 2j + 1 read up to element (2j + 1) S + span, in
 * pair last(j) below: S pairs more each step). Pairs [J0, J1) here: the chunk in two
 * loops, as hip-clang unrolls a loop fully only below a size, which one loop over
 * all the pairs outgrew with dx in the pass (the window then in scratch). */
#define GPU_BWD_WARP_LAST_PAIR(j) (((2 * (j) + 1) * S + (K - 1) * D) / 2)
template <int XT, int K, int S, int D, int ACT, int J0, int J1>
static __device__ __forceinline__ void gpu_bwd_warp_pairs(gpu_bwd_warp_run<XT, S * DWCONV_GRAD_CHUNK> &xr,
                                                          gpu_bwd_warp_run<XT, DWCONV_GRAD_CHUNK> &dr, float *xe,
                                                          const float *w, float bias, float *gw, float *p,
                                                          gpu_bwd_warp_dx<XT, K, S, D> &dx) {
#pragma unroll
    for (int j = J0; j < J1; j++) {
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
        gpu_bwd_warp_step<XT, K, S, D, true>(xe + 2 * j * S, d0, 2 * j, w, bias, ACT, gw, p, dx);
        gpu_bwd_warp_step<XT, K, S, D, true>(xe + (2 * j + 1) * S, d1, 2 * j + 1, w, bias, ACT, gw, p, dx);
    }
}
template <int XT, int K, int S, int D, int ACT>
static __device__ __forceinline__ void gpu_bwd_warp_chunk(gpu_bwd_warp_run<XT, S * DWCONV_GRAD_CHUNK> xr,
                                                          gpu_bwd_warp_run<XT, DWCONV_GRAD_CHUNK> dr,
                                                          const float *w, float bias, float *gw, float *p,
                                                          gpu_bwd_warp_dx<XT, K, S, D> &dx) {
    const int PAIRS = DWCONV_GRAD_CHUNK / 2;
    float xe[2 * GPU_BWD_WARP_LAST_PAIR(PAIRS - 1) + 2];
    gpu_bwd_warp_pairs<XT, K, S, D, ACT, 0, PAIRS / 2>(xr, dr, xe, w, bias, gw, p, dx);
    gpu_bwd_warp_pairs<XT, K, S, D, ACT, PAIRS / 2, PAIRS>(xr, dr, xe, w, bias, gw, p, dx);
}
#undef GPU_BWD_WARP_LAST_PAIR

/* One output m of a lane's chunk read from the staged regions one element at a time
 * (the row's last chunk, shorter). */
template <int XT, int K, int S, int D, bool KEEP>
static __device__ __forceinline__ void gpu_bwd_warp_staged_step(const uint32_t *xs, int xpar, const uint32_t *ds,
                                                                int dpar, int c0, int m, const float *w,
                                                                float bias, int activation, float *gw, float *p,
                                                                gpu_bwd_warp_dx<XT, K, S, D> &dx) {
    float xw[(K - 1) * D + 1];
#pragma unroll
    for (int k = 0; k < K; k++) xw[k * D] = gpu_bwd_warp_elem<XT, S * DWCONV_GRAD_CHUNK>(xs, xpar, (c0 + m) * S + k * D);
    const float dy = gpu_bwd_warp_elem<XT, DWCONV_GRAD_CHUNK>(ds, dpar, c0 + m);
    gpu_bwd_warp_step<XT, K, S, D, KEEP>(xw, dy, m, w, bias, activation, gw, p, dx);
}

/* The pass over the row's last chunk, n < 64 outputs: the outputs that complete head
 * inputs unrolled (the head's index known: registers), the rest a loop. */
template <int XT, int K, int S, int D>
static __device__ __forceinline__ void gpu_bwd_warp_short(const uint32_t *xs, int xpar, const uint32_t *ds,
                                                          int dpar, int c0, int n, const float *w, float bias,
                                                          int activation, float *gw, float *p,
                                                          gpu_bwd_warp_dx<XT, K, S, D> &dx) {
    const int M_HEAD = (gpu_bwd_warp_dx<XT, K, S, D>::HEAD + S - 1) / S;
#pragma unroll
    for (int m = 0; m < M_HEAD; m++)
        if (m < n) gpu_bwd_warp_staged_step<XT, K, S, D, true>(xs, xpar, ds, dpar, c0, m, w, bias, activation, gw, p, dx);
#pragma unroll 1
    for (int m = M_HEAD; m < n; m++)
        gpu_bwd_warp_staged_step<XT, K, S, D, false>(xs, xpar, ds, dpar, c0, m, w, bias, activation, gw, p, dx);
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
    uint32_t *xs = (uint32_t *)gpu_shared_base(), *ds = xs + smem::x_words(); /* x (then dx), dy */
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

        /* 2. each lane's pass over its chunk: g of the NP outputs before it first */
        const int c0 = lane * DWCONV_GRAD_CHUNK, n = n_out - c0; /* outputs of the lane's chunk */
        float p[K + 1] = {};
        gpu_bwd_warp_dx<XT, K, S, D> dx(xs, xpar, c0 * S, a.dx != NULL, EPW == 1 ? (float *)ds + gpu_bwd_warp_word<1>(c0) : NULL);
        float gw[NP + 1];
        if (dx.FUSED) {
            if (n > 0) gpu_bwd_warp_before<XT, K, S, D>(xs, xpar, ds, dpar, c0, t0, w, row.bias, a.activation, gw);
            gpu_sync_warp(); /* the recomputes' reads of the previous lane's x are done */
        } else if (lane < NP && t0 + lane - NP >= 0) { /* f32: g of the NP outputs before the tile, over their dy */
            ((float *)ds)[gpu_bwd_warp_word<1>(lane - NP)] =
                gpu_bwd_warp_staged_g<XT, K, S, D>(xs, xpar, ds, dpar, lane - NP, w, row.bias, a.activation);
        }
        if (n > 0) {
            if (n >= DWCONV_GRAD_CHUNK) {
                const gpu_bwd_warp_run<XT, XBE> xr(xs + gpu_bwd_warp_word<EPW, XBE>(c0 * S / EPW), xpar);
                const gpu_bwd_warp_run<XT, DWCONV_GRAD_CHUNK> dr(ds + gpu_bwd_warp_word<EPW>(c0 / EPW), dpar);
                if (a.activation == DWCONV_ACT_SILU) gpu_bwd_warp_chunk<XT, K, S, D, DWCONV_ACT_SILU>(xr, dr, w, row.bias, gw, p, dx);
                else if (a.activation == DWCONV_ACT_RELU) gpu_bwd_warp_chunk<XT, K, S, D, DWCONV_ACT_RELU>(xr, dr, w, row.bias, gw, p, dx);
                else gpu_bwd_warp_chunk<XT, K, S, D, DWCONV_ACT_NONE>(xr, dr, w, row.bias, gw, p, dx);
            } else {
                gpu_bwd_warp_short<XT, K, S, D>(xs, xpar, ds, dpar, c0, n, w, row.bias, a.activation, gw, p, dx);
            }
        }
        gpu_sync_warp(); /* every lane's reads of x and dy are done */

        if (a.dx) {
            /* 3. the inputs kept in registers (16-bit), or f32's dx pass */
            if (n > 0) {
                if (dx.FUSED) dx.flush((int)gpu_min64(n, DWCONV_GRAD_CHUNK) * S);
                else gpu_bwd_warp_dx_pass<XT, K, S, D>(dx, w);
            }
            gpu_sync_warp();
            /* 4. inputs x0 + d, d in [lo, hi) */
            raw *dxo = (raw *)a.dx + b * a.dx_stride[0] + c * a.dx_stride[1];
            const int lo = (int)gpu_min64(gpu_max64(0, a.edge_lo - x0), n_out * S); /* 64-bit until clamped */
            const int hi = (int)gpu_max64(gpu_min64(n_out * S, L - a.edge_hi - x0), lo);
            for (int d = lo + lane; d < hi; d += GPU_WARP) dxo[x0 + d] = *gpu_bwd_warp_at<XT, XBE>(xs, xpar, d);
        }

        /* 5. the tile's tree: lane k of tap k over the chunk partials (dy is dead) */
        if (a.sums) {
            const int chunks = (n_out + DWCONV_GRAD_CHUNK - 1) / DWCONV_GRAD_CHUNK;
            float *ps = (float *)ds; /* ps[k * (GPU_WARP + 1) + chunk] */
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
