/*
 * Channel-last (channels adjacent; positions and batch entries anywhere), stride 1,
 * any dilation D, K <= GPU_SLIDE_MAX_K: a sliding window in registers. A thread owns
 * V consecutive channels (a 16-byte vector of them where every position of x and y
 * starts on a 16-byte boundary, else one: gpu_slide_width) and a run of
 * a.steps * GPU_SLIDE_STEP(V) output positions D apart (one phase of the dilation:
 * outputs o, o + D, ... read rows D apart, so the window slides along that phase
 * alone); it keeps the last K - 1 input rows of its channels in registers and, per
 * step, loads the next GPU_SLIDE_STEP rows (all in flight at once), so each x element
 * is read from memory about once (the K - 1 rows before a run twice). The K weights of
 * its channels live in registers as f32. A warp's loads and stores are whole vectors
 * (or elements) side by side along the channels: with one channel a thread, a warp
 * still reads 32 adjacent elements of a row at any alignment.
 *
 * Where a thread's vector is partial (C not a multiple of V), that thread loads and
 * stores element by element; rows outside [0, L) read what the padding mode reads.
 *
 * Carried states (a causal forward, gpu_args.cuh; dilation 1 only): rows before 0 load
 * from the states (channels S elements apart there), and the run from position 0, the
 * only one that reads them (runs are at least S long then), writes the final states
 * after it.
 *
 * Grid: x = position tiles (a.channel_threads threads across channel vectors times
 * GPU_SLIDE_THREADS / a.channel_threads runs), y = channel blocks, z = batch (each
 * strided).
 */
#ifndef DWCONV_GPU_KERNEL_NLC_SLIDE_CUH
#define DWCONV_GPU_KERNEL_NLC_SLIDE_CUH

#include "gpu_elements.cuh"
#include "gpu_families.h"
#include "gpu_carried.cuh"

/* A thread's channels of one row in registers: a 16-byte vector of them (V = the
 * dtype's vector width) or one element (V = 1, in .x; the compiler drops the words
 * nobody reads). pack: from V raw elements; whole: V elements at p (16-byte aligned
 * when V > 1); store: V outputs at y + at, the first `valid` of them. */
template <int XT, int V, bool VECTOR = (V == gpu_vec_width<XT>::value)> struct gpu_slide_io;

template <int XT, int V> struct gpu_slide_io<XT, V, true> {
    typedef typename gpu_elem<XT>::raw raw;
    static __device__ __forceinline__ uint4 pack(const raw *e) { return gpu_vec_pack<XT>(e); }
    static __device__ __forceinline__ uint4 whole(const raw *p) { return gpu_load16(p); }
    static __device__ __forceinline__ void store(void *y, int64_t at, const float *out, int valid) {
        gpu_store_vector<XT>(y, at, out, 0, valid);
    }
};

template <int XT> struct gpu_slide_io<XT, 1, false> {
    typedef typename gpu_elem<XT>::raw raw;
    static __device__ __forceinline__ uint4 pack(const raw *e) {
        uint4 v;
        v.x = (uint32_t)e[0], v.y = v.z = v.w = 0;
        return v;
    }
    static __device__ __forceinline__ uint4 whole(const raw *p) { return pack(p); }
    static __device__ __forceinline__ void store(void *y, int64_t at, const float *out, int) {
        ((raw *)y)[at] = gpu_elem<XT>::narrow(out[0]);
    }
};

/* Row pos of this thread's channels (c .. c + valid - 1 at xb; rows `step` elements
 * apart), padded; with a carried state (before: channel c's state_in + S, channels S
 * apart), rows [-S, 0) from it. */
template <int XT, int V>
static __device__ __forceinline__ uint4 gpu_slide_load(const typename gpu_elem<XT>::raw *xb,
                                                       int64_t L, int64_t step, int mode, int64_t pos,
                                                       int valid,
                                                       const typename gpu_elem<XT>::raw *before,
                                                       int64_t S) {
    typedef typename gpu_elem<XT>::raw raw;
    if (before && pos < 0) {
        raw e[V];
#pragma unroll
        for (int j = 0; j < V; j++) e[j] = j < valid && pos >= -S ? before[j * S + pos] : (raw)0;
        return gpu_slide_io<XT, V>::pack(e);
    }
    if (pos < 0 || pos >= L) {
        pos = dwconv_source_index(mode, pos, L);
        if (pos < 0 || pos >= L) valid = 0; /* a zero of the padding */
    }
    if (valid == V) return gpu_slide_io<XT, V>::whole(xb + pos * step);
    raw e[V];
#pragma unroll
    for (int j = 0; j < V; j++) e[j] = j < valid ? xb[pos * step + j] : (raw)0;
    return gpu_slide_io<XT, V>::pack(e);
}

/* The weights and bias of channels c .. c + valid - 1 as f32 (0 past them). With a
 * 16-byte vector of channels, they are V * K contiguous elements from c * K, whole
 * 16-byte vectors at a 16-byte offset (c is a multiple of V, and V elements of x take
 * 16 bytes): with aligned pointers, K or 2K vector loads instead of V * K element
 * loads, whose 32-byte sectors a warp would each touch for 2 useful bytes. */
template <int XT, int WT, int V, int K>
static __device__ __forceinline__ void gpu_slide_weights(const gpu_conv_args &a, int64_t c,
                                                         int valid, float (*w)[V], float *bias) {
    typedef typename gpu_elem<WT>::raw wraw;
    const int WV = gpu_vec_width<WT>::value;
    const wraw *weight = (const wraw *)a.weight + c * K, *b = (const wraw *)a.bias + c;
    if (V == gpu_vec_width<XT>::value && a.vector_w && valid == V) {
        uint4 wv[(V * K + WV - 1) / WV], bv[(V + WV - 1) / WV]; /* (dead where V = 1: sizes >= 1) */
#pragma unroll
        for (int j = 0; j < V * K / WV; j++) wv[j] = gpu_load16(weight + j * WV);
#pragma unroll
        for (int j = 0; j < V / WV; j++) {
            if (a.bias) bv[j] = gpu_load16(b + j * WV);
            else bv[j].x = bv[j].y = bv[j].z = bv[j].w = 0;
        }
#pragma unroll
        for (int i = 0; i < V; i++) {
            bias[i] = gpu_elem<WT>::widen(gpu_vec_get<WT>(bv[i / WV], i % WV));
#pragma unroll
            for (int k = 0; k < K; k++)
                w[k][i] = gpu_elem<WT>::widen(gpu_vec_get<WT>(wv[(i * K + k) / WV], (i * K + k) % WV));
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < V; i++) {
        bias[i] = a.bias && i < valid ? gpu_elem<WT>::widen(b[i]) : 0.0f;
#pragma unroll
        for (int k = 0; k < K; k++) w[k][i] = i < valid ? gpu_elem<WT>::widen(weight[i * K + k]) : 0.0f;
    }
}

template <int XT, int WT, int K, int V>
__global__ GPU_LAUNCH_BOUNDS(GPU_SLIDE_THREADS, GPU_SLIDE_MIN_BLOCKS(V, K)) void dwconv_nlc_slide_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<XT>::raw raw;
    const int P = GPU_SLIDE_STEP(V);
    const int TC = a.channel_threads, TR = GPU_SLIDE_THREADS / TC;
    const int tid = threadIdx.x, cx = tid % TC, ry = tid / TC;
    const int64_t C = a.channels, L = a.length, L_out = a.output_length, D = a.dilation;
    const int64_t run = a.steps * P;
    const int64_t channel_blocks = (C + (int64_t)TC * V - 1) / ((int64_t)TC * V);
    /* Always true (gpu_slide_width): run-time tests all the same, because ptxas
     * schedules the 16-bit vector instances faster with them (PTX as before
     * f493f7e, bench/RESULTS-gpu.md run T). */
    const bool whole_x = V == 1 || a.vector_x, whole_y = V == 1 || a.vector_y;

    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t cb = blockIdx.y; cb < channel_blocks; cb += gridDim.y) {
            const int64_t c = (cb * TC + cx) * V;
            const int valid = (int)gpu_max64(0, gpu_min64(V, C - c));
            if (valid == 0) continue; /* no barriers in this kernel */
            const raw *xb = (const raw *)a.x + b * a.x_stride[0] + c;
            raw *yb = (raw *)a.y + b * a.y_stride[0] + c;
            const int64_t xstep = a.x_stride[2], ystep = a.y_stride[2]; /* between positions */
            float w[K][V], bias[V];
            gpu_slide_weights<XT, WT, V, K>(a, c, valid, w, bias);
            const int64_t S = a.state_length; /* 0 without states */
            const raw *before = a.state_in ? (const raw *)a.state_in + (b * C + c) * S + S : NULL;
            for (int64_t pt = blockIdx.x; pt < a.tiles_per_row; pt += gridDim.x) {
                /* run unit / D of the row, phase unit % D (no 64-bit division at dilation 1,
                 * the common case) */
                const int64_t unit = pt * TR + ry;
                const int64_t o_begin = D == 1 ? unit * run : unit / D * run * D + unit % D;
                if (o_begin >= L_out) continue;
                const int64_t p0 = o_begin - a.pad_left; /* the row of the first tap */
                const int64_t dstep = D * xstep;         /* between the rows of the window */
                uint4 win[K - 1 + P]; /* rows p + i D, i < K - 1 + P, of the current step */
#pragma unroll
                for (int k = 0; k < K - 1; k++)
                    win[k] = gpu_slide_load<XT, V>(xb, L, xstep, a.padding_mode, p0 + k * D, valid, before, S);
#pragma unroll 1
                for (int64_t s = 0; s < a.steps; s++) {
                    const int64_t ob = o_begin + s * P * D, p = p0 + s * P * D;
                    if (ob >= L_out) break;
                    if (whole_x && valid == V && p >= 0 && p + (K - 2 + P) * D < L) {
                        const raw *at = xb + (p + (K - 1) * D) * xstep;
#pragma unroll
                        for (int r = 0; r < P; r++) win[K - 1 + r] = gpu_slide_io<XT, V>::whole(at + r * dstep);
                    } else {
#pragma unroll
                        for (int r = 0; r < P; r++)
                            win[K - 1 + r] = gpu_slide_load<XT, V>(xb, L, xstep, a.padding_mode,
                                                                   p + (K - 1 + r) * D, valid, before, S);
                    }
#pragma unroll
                    for (int r = 0; r < P; r++) {
                        if (ob + r * D >= L_out) break;
                        float out[V];
#pragma unroll
                        for (int i = 0; i < V; i++) {
                            float acc = bias[i];
#pragma unroll
                            for (int k = 0; k < K; k++)
                                acc = DWCONV_FMAF(gpu_elem<XT>::widen(gpu_vec_get<XT>(win[r + k], i)),
                                                  w[k][i], acc);
                            out[i] = acc;
                        }
                        gpu_activate_all<V, XT>(a.activation, out);
                        if (whole_y) gpu_slide_io<XT, V>::store(yb, (ob + r * D) * ystep, out, valid);
                        else gpu_store_elements<XT>(yb, (ob + r * D) * ystep, out, 0, valid);
                    }
#pragma unroll
                    for (int k = 0; k < K - 1; k++) win[k] = win[P + k];
                }
                /* the run from position 0 is the only one that reads the states (runs
                 * are at least S long where states are carried: gpu_causal_plan.cuh) */
                if (a.state_out && o_begin == 0)
                    for (int i = 0; i < valid; i++) gpu_final_state<XT>(a, b * C + c + i, xb + i, xstep);
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NLC_SLIDE_CUH */
