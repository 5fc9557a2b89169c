/*
 * The decode update (DWCONV_OP_CAUSAL_UPDATE): T new tokens of B sequences against a
 * pool of states, updated in place. One thread per (sequence, channel) does all of
 * that pair's work: its T outputs, then its state, so the in-place update needs no
 * barrier (slots are distinct, checked first) and reads every old value it needs
 * before it writes one. Threads side by side take neighbouring channels: x and y are
 * contiguous across them in NLC and, for T = 1, in NCL; the states are S elements
 * apart. Grid: x = channel blocks, y = sequences (both strided).
 *
 * The arithmetic is the reference's (src/reference/causal.c): acc from the bias, one
 * fmaf per tap in k order, the activation, one rounding; the state is moved raw.
 *
 * Two bodies share that prologue: the window (KT > 0: K = KT <= GPU_UPDATE_WINDOW_MAX,
 * dilation 1, serving's case) holds the K - 1 inputs before the current token in
 * registers, so each state element is read once and each token once; the general
 * body (KT = 0: any K, dilation, state length) reads every tap's input where it lies.
 */
#ifndef DWCONV_GPU_KERNEL_CAUSAL_UPDATE_CUH
#define DWCONV_GPU_KERNEL_CAUSAL_UPDATE_CUH

#include "gpu_kernel_causal_check.cuh"

#define GPU_UPDATE_THREADS 128
#define GPU_UPDATE_TAPS 8       /* general body: weights a thread keeps in registers */
#define GPU_UPDATE_WINDOW_MAX 4 /* the window's largest K (Mamba's 4, and 2, 3) */
#define GPU_UPDATE_WINDOW_NAME "causal update (window)" /* its plan steps, for the tests */
#define GPU_UPDATE_QUADS_NAME "causal update (window, quads)"

/* Which body a decode of K taps at dilation D takes: KT = K for the window, else 0. */
GPU_HD int gpu_update_window_taps(int64_t K, int64_t D) {
    return D == 1 && K >= 2 && K <= GPU_UPDATE_WINDOW_MAX ? (int)K : 0;
}

/* Where a decode thread's inputs lie: its tokens (x, stride xs) and its state row of P
 * elements, in shift-register form (input q < 0 at P + q) or circular (input 0 of the
 * new tokens at head). Input q counts from the first new token. */
template <typename xraw>
struct gpu_update_row {
    const xraw *x;
    int64_t xs;
    xraw *state;
    int64_t P, head;
    bool circular;
    __device__ __forceinline__ int64_t place(int64_t q) const { /* -P <= q < 0 */
        if (!circular) return P + q;
        return head + q < 0 ? head + q + P : head + q;
    }
    __device__ __forceinline__ xraw input(int64_t q) const { return q >= 0 ? x[q * xs] : state[place(q)]; }
    /* The state after the T new tokens. Shift register: input i + T moves to i, in
     * increasing i, so every read precedes its write. Circular: each token at its
     * place; a later token wins a place. */
    __device__ __forceinline__ void write_state(int64_t T) const {
        if (!circular) {
            for (int64_t i = 0; i < P; i++) state[i] = input(i + T - P);
        } else if (P > 0) {
            for (int64_t t = 0, at = head; t < T; t++, at = at + 1 == P ? 0 : at + 1) state[at] = x[t * xs];
        }
    }
};

/* The general body: any K, dilation and state length. The first GPU_UPDATE_TAPS
 * weights in registers (the taps stay in k order). */
template <int XT, int WT>
static __device__ __forceinline__ void gpu_update_general(const gpu_causal_args &a,
                                                          const gpu_update_row<typename gpu_elem<XT>::raw> &r,
                                                          const typename gpu_elem<WT>::raw *wc, float b0,
                                                          typename gpu_elem<XT>::raw *yr) {
    const int64_t K = a.kernel_size, T = a.length, D = a.dilation, span = a.span;
    float wk[GPU_UPDATE_TAPS];
#pragma unroll
    for (int k = 0; k < GPU_UPDATE_TAPS; k++) wk[k] = k < K ? gpu_elem<WT>::widen(wc[k]) : 0.0f;
    for (int64_t t = 0; t < T; t++) {
        float acc = b0;
#pragma unroll
        for (int k = 0; k < GPU_UPDATE_TAPS; k++) {
            if (k >= K) break;
            acc = DWCONV_FMAF(gpu_elem<XT>::widen(r.input(t - span + k * D)), wk[k], acc);
        }
        for (int64_t k = GPU_UPDATE_TAPS; k < K; k++)
            acc = DWCONV_FMAF(gpu_elem<XT>::widen(r.input(t - span + k * D)), gpu_elem<WT>::widen(wc[k]), acc);
        gpu_activate_all<1, XT>(a.activation, &acc);
        yr[t * a.y_stride[2]] = gpu_elem<XT>::narrow(acc);
    }
    r.write_state(T);
}

/* The window: K = KT taps at dilation 1, for GPU_UPDATE_WINDOW_CHANNELS channels a
 * thread (blockDim apart, so neighbouring threads still take neighbouring channels):
 * the KT - 1 inputs before the current token live in registers (read from the state
 * once), each token is read once, and every channel's loads are issued before any of
 * its arithmetic (their rows never overlap), so that one thread keeps several memory
 * requests in flight: a decode is a chain of dependent latencies, not of bytes (4
 * channels a thread ran fastest of 1, 2 and 4: bench/RESULTS-gpu.md run G).
 *
 * Where a channel's new tokens lie side by side in x and y (channel-first, rows
 * aligned) and come in fours, each four moves as one vector: a warp's loads and stores
 * then cover whole sectors, where token by token each of its stores touched every
 * sector of the warp's span again (the decode of 4 tokens was bound by L2 traffic,
 * bench/RESULTS-gpu.md run M). A state of exactly KT - 1 inputs, the usual one, is
 * written from the window, not read back from x: always as a shift register, in
 * circular form by the quad instance only. */
#define GPU_UPDATE_WINDOW_CHANNELS 4
#define GPU_UPDATE_QUAD 4 /* tokens a vector holds */
#define GPU_UPDATE_QUAD_CHANNELS 2 /* channels whose quads are in flight at once */
#define GPU_WINDOW_EACH _Pragma("unroll") for (int j = 0; j < GPU_UPDATE_WINDOW_CHANNELS; j++)

/* GPU_UPDATE_QUAD raw elements, aligned so that they move as one load or store. */
template <typename raw> struct alignas(GPU_UPDATE_QUAD * sizeof(raw)) gpu_update_quad {
    raw e[GPU_UPDATE_QUAD];
};

/* Whether every (batch, channel) row of a decode operand of `size`-byte elements starts
 * on a quad boundary. */
GPU_HD bool gpu_update_quad_rows(const void *p, const int64_t *stride, int size) {
    return (uintptr_t)p % (GPU_UPDATE_QUAD * size) == 0 && stride[DWCONV_DIM_BATCH] % GPU_UPDATE_QUAD == 0 &&
           stride[DWCONV_DIM_CHANNEL] % GPU_UPDATE_QUAD == 0;
}

/* Whether a decode's tokens move in quads: channel-first rows of whole quads, aligned
 * (the host picks the window's instance by it). */
GPU_HD bool gpu_update_quads(const gpu_causal_args *a) {
    const int size = gpu_dtype_size(a->dtype);
    return a->length % GPU_UPDATE_QUAD == 0 && a->x_stride[DWCONV_DIM_POSITION] == 1 &&
           a->y_stride[DWCONV_DIM_POSITION] == 1 && gpu_update_quad_rows(a->x, a->x_stride, size) &&
           gpu_update_quad_rows(a->y, a->y_stride, size);
}

/* The output of the token `in` after the window hist (then shifted to take it in). */
template <int XT, int KT>
static __device__ __forceinline__ typename gpu_elem<XT>::raw
gpu_update_token(typename gpu_elem<XT>::raw *hist, const float *wk, float b0, typename gpu_elem<XT>::raw in,
                 int activation) {
    constexpr int H = KT - 1;
    float acc = b0;
#pragma unroll
    for (int k = 0; k < H; k++) acc = DWCONV_FMAF(gpu_elem<XT>::widen(hist[k]), wk[k], acc);
    acc = DWCONV_FMAF(gpu_elem<XT>::widen(in), wk[H], acc);
    gpu_activate_all<1, XT>(activation, &acc);
#pragma unroll
    for (int i = 0; i + 1 < H; i++) hist[i] = hist[i + 1];
    hist[H - 1] = in;
    return gpu_elem<XT>::narrow(acc);
}

template <int XT, int WT, int KT, bool Q>
static __device__ __forceinline__ void gpu_update_window(const gpu_causal_args &a,
                                                         gpu_update_row<typename gpu_elem<XT>::raw> r,
                                                         typename gpu_elem<XT>::raw *y, int64_t c0) {
    typedef typename gpu_elem<XT>::raw xraw;
    typedef typename gpu_elem<WT>::raw wraw;
    typedef gpu_update_quad<xraw> quad;
    constexpr int H = KT - 1; /* inputs before the current token, >= 1 */
    const int64_t T = a.length, P = r.P, C = a.channels;
    const xraw *xc[GPU_UPDATE_WINDOW_CHANNELS];
    xraw *sc[GPU_UPDATE_WINDOW_CHANNELS], *yc[GPU_UPDATE_WINDOW_CHANNELS];
    bool live[GPU_UPDATE_WINDOW_CHANNELS];
    float wk[GPU_UPDATE_WINDOW_CHANNELS][KT], b0[GPU_UPDATE_WINDOW_CHANNELS];
    xraw hist[GPU_UPDATE_WINDOW_CHANNELS][H];
    GPU_WINDOW_EACH {
        const int64_t c = c0 + (int64_t)j * blockDim.x;
        live[j] = c < C;
        if (!live[j]) continue;
        xc[j] = r.x + c * a.x_stride[1];
        sc[j] = r.state + c * P;
        yc[j] = y + c * a.y_stride[1];
        const wraw *w = (const wraw *)a.weight + c * KT;
#pragma unroll
        for (int k = 0; k < KT; k++) wk[j][k] = gpu_elem<WT>::widen(w[k]);
        b0[j] = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
#pragma unroll
        for (int i = 0; i < H; i++) hist[j][i] = sc[j][r.place(i - H)]; /* P >= H: validated */
    }
    if constexpr (Q) {
        for (int64_t t = 0; t < T; t += GPU_UPDATE_QUAD)
#pragma unroll
            for (int h = 0; h < GPU_UPDATE_WINDOW_CHANNELS; h += GPU_UPDATE_QUAD_CHANNELS) {
                quad in[GPU_UPDATE_QUAD_CHANNELS];
#pragma unroll
                for (int i = 0; i < GPU_UPDATE_QUAD_CHANNELS; i++)
                    if (live[h + i]) in[i] = *(const quad *)(xc[h + i] + t);
#pragma unroll
                for (int i = 0; i < GPU_UPDATE_QUAD_CHANNELS; i++) {
                    const int j = h + i;
                    if (!live[j]) continue;
                    quad out;
#pragma unroll
                    for (int u = 0; u < GPU_UPDATE_QUAD; u++)
                        out.e[u] = gpu_update_token<XT, KT>(hist[j], wk[j], b0[j], in[i].e[u], a.activation);
                    *(quad *)(yc[j] + t) = out;
                }
            }
    } else {
        for (int64_t t = 0; t < T; t++) {
            xraw in[GPU_UPDATE_WINDOW_CHANNELS];
            GPU_WINDOW_EACH if (live[j]) in[j] = xc[j][t * r.xs];
            GPU_WINDOW_EACH if (live[j]) yc[j][t * a.y_stride[2]] =
                gpu_update_token<XT, KT>(hist[j], wk[j], b0[j], in[j], a.activation);
        }
    }
    /* the window now holds inputs T - H .. T - 1: with P = H, the whole new state; in
     * circular form (quads only: elsewhere its registers cost the one-token decode
     * more than re-reading x saves) input q lies at place head + q (mod P), an old one
     * unchanged */
    const bool from_window = P == H && (!r.circular || Q);
    int64_t at = 0;
    if (Q && r.circular && P == H) {
        at = T >= H ? r.head + (T - H) % P : r.head + T - H + P;
        at = at >= P ? at - P : at;
    }
    GPU_WINDOW_EACH {
        if (!live[j]) continue;
        r.state = sc[j], r.x = xc[j];
        if (from_window) {
#pragma unroll
            for (int i = 0, q = (int)at; i < H; i++, q = q + 1 == H ? 0 : q + 1) r.state[q] = hist[j][i];
        } else {
            r.write_state(T);
        }
    }
}
#undef GPU_WINDOW_EACH

/* Q: the window's quad instance, whose registers are held to 5 blocks an SM (all the
 * blocks of a B64 C5120 decode at once; ptxas -v sm_90: 96 registers, 16 bytes
 * spilled); the others as ptxas sizes them (94 for the window: held to 96, one token
 * ran slower, bench/RESULTS-gpu.md run M). */
template <int XT, int WT, int KT, bool Q = false>
__global__ GPU_LAUNCH_BOUNDS(GPU_UPDATE_THREADS, Q ? GPU_SM_BLOCKS_AT_MOST(5) : 0) void dwconv_causal_update_kernel(gpu_causal_args a) {
    typedef typename gpu_elem<XT>::raw xraw;
    typedef typename gpu_elem<WT>::raw wraw;
    if ((a.check_in_block && gpu_causal_block_bad(a)) || gpu_causal_verdict_bad(a)) {
        gpu_causal_refuse(a);
        return;
    }
    const int64_t C = a.channels, K = a.kernel_size, P = a.state_length;
    /* channels a block takes in one step */
    const int64_t step = (int64_t)blockDim.x * (KT > 0 ? GPU_UPDATE_WINDOW_CHANNELS : 1);
    /* the in-block check staged the slots in shared memory */
    const int32_t *staged = a.check_in_block && a.state_indices ? (const int32_t *)gpu_shared_base() + 1 : NULL;
    for (int64_t b = blockIdx.y; b < a.batch; b += gridDim.y) {
        const int64_t slot = staged ? staged[b] : a.state_indices ? a.state_indices[b] : b;
        if (slot < 0) continue; /* a padding entry: nothing of it changes */
        /* the sequence's row; each channel's is C * P (state), x_stride[1] (x) on */
        gpu_update_row<xraw> r;
        r.x = (const xraw *)a.x + b * a.x_stride[0];
        r.state = (xraw *)a.state_out + slot * C * P; /* unused when P = 0 */
        r.xs = a.x_stride[2], r.P = P, r.circular = a.cache_seqlens != NULL;
        /* circular: where input 0 of the new tokens goes (one division per sequence,
         * 32-bit where P allows: cache_seqlens is a non-negative int32); the taps'
         * places are then at most one wrap away */
        r.head = 0;
        if (r.circular && P > 0)
            r.head = P <= UINT32_MAX ? (int64_t)((uint32_t)a.cache_seqlens[b] % (uint32_t)P)
                                     : (int64_t)a.cache_seqlens[b] % P;
        xraw *y = (xraw *)a.y + b * a.y_stride[0];
        for (int64_t c = (int64_t)blockIdx.x * step + threadIdx.x; c < C; c += (int64_t)gridDim.x * step) {
            if constexpr (KT > 0) {
                gpu_update_window<XT, WT, KT, Q>(a, r, y, c);
            } else {
                gpu_update_row<xraw> rc = r;
                rc.x += c * a.x_stride[1], rc.state += c * P;
                const float b0 = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
                gpu_update_general<XT, WT>(a, rc, (const wraw *)a.weight + c * K, b0,
                                           y + c * a.y_stride[1]);
            }
        }
    }
}

/* The decode's instance for the dtypes, the window's K (gpu_update_window_taps; 0: the
 * general body, which is right for every K and dilation) and whether its tokens move in
 * quads (gpu_update_quads). */
template <int XT, int WT>
static gpu_causal_kernel_fn gpu_update_instance(int KT, bool quads) {
    static_assert(GPU_UPDATE_WINDOW_MAX == 4, "one window instance per K in 2..GPU_UPDATE_WINDOW_MAX");
    switch (KT) {
    case 2: return quads ? dwconv_causal_update_kernel<XT, WT, 2, true> : dwconv_causal_update_kernel<XT, WT, 2>;
    case 3: return quads ? dwconv_causal_update_kernel<XT, WT, 3, true> : dwconv_causal_update_kernel<XT, WT, 3>;
    case 4: return quads ? dwconv_causal_update_kernel<XT, WT, 4, true> : dwconv_causal_update_kernel<XT, WT, 4>;
    default: return dwconv_causal_update_kernel<XT, WT, 0>;
    }
}

#endif /* DWCONV_GPU_KERNEL_CAUSAL_UPDATE_CUH */
