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
 */
#ifndef DWCONV_GPU_KERNEL_CAUSAL_UPDATE_CUH
#define DWCONV_GPU_KERNEL_CAUSAL_UPDATE_CUH

#include "gpu_kernel_causal_check.cuh"

#define GPU_UPDATE_THREADS 128
#define GPU_UPDATE_TAPS 8 /* weights a thread keeps in registers */

template <int XT, int WT>
__global__ void __launch_bounds__(GPU_UPDATE_THREADS) dwconv_causal_update_kernel(gpu_causal_args a) {
    typedef typename gpu_elem<XT>::raw xraw;
    typedef typename gpu_elem<WT>::raw wraw;
    if ((a.check_in_block && gpu_causal_block_bad(a)) || gpu_causal_verdict_bad(a)) {
        gpu_causal_refuse(a);
        return;
    }
    const int64_t C = a.channels, K = a.kernel_size, T = a.length, P = a.state_length;
    const int64_t D = a.dilation, span = a.span;
    const xraw *x = (const xraw *)a.x;
    xraw *y = (xraw *)a.y;
    const wraw *w = (const wraw *)a.weight;
    /* the in-block check staged the slots in shared memory */
    const int32_t *staged = a.check_in_block && a.state_indices ? (const int32_t *)gpu_shared_base() + 1 : NULL;
    for (int64_t b = blockIdx.y; b < a.batch; b += gridDim.y) {
        const int64_t slot = staged ? staged[b] : a.state_indices ? a.state_indices[b] : b;
        if (slot < 0) continue; /* a padding entry: nothing of it changes */
        /* circular: where input 0 of the new tokens goes (one division per sequence,
         * 32-bit where P allows: cache_seqlens is a non-negative int32); the taps'
         * places are then at most one wrap away */
        int64_t head = 0;
        if (a.cache_seqlens && P > 0)
            head = P <= UINT32_MAX ? (int64_t)((uint32_t)a.cache_seqlens[b] % (uint32_t)P)
                                   : (int64_t)a.cache_seqlens[b] % P;
        for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C;
             c += (int64_t)gridDim.x * blockDim.x) {
            xraw *state = (xraw *)a.state_out + (slot * C + c) * P; /* unused when P = 0 */
            const xraw *xr = x + b * a.x_stride[0] + c * a.x_stride[1];
            const float b0 = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            /* the first GPU_UPDATE_TAPS weights in registers (the taps stay in k order) */
            float wk[GPU_UPDATE_TAPS];
#pragma unroll
            for (int k = 0; k < GPU_UPDATE_TAPS; k++) wk[k] = k < K ? gpu_elem<WT>::widen(w[c * K + k]) : 0.0f;
            /* input q of the sequence, counted from the first new token: a token, or
             * the state's input P + q (-P <= q < 0) */
#define GPU_UPDATE_INPUT(q)                                                               \
    ((q) >= 0 ? xr[(q) * a.x_stride[2]]                                                 \
     : a.cache_seqlens ? state[head + (q) < 0 ? head + (q) + P : head + (q)] : state[P + (q)])
            for (int64_t t = 0; t < T; t++) {
                float acc = b0;
#pragma unroll
                for (int k = 0; k < GPU_UPDATE_TAPS; k++) {
                    if (k >= K) break;
                    const int64_t q = t - span + k * D;
                    acc = DWCONV_FMAF(gpu_elem<XT>::widen(GPU_UPDATE_INPUT(q)), wk[k], acc);
                }
                for (int64_t k = GPU_UPDATE_TAPS; k < K; k++) {
                    const int64_t q = t - span + k * D;
                    acc = DWCONV_FMAF(gpu_elem<XT>::widen(GPU_UPDATE_INPUT(q)),
                                      gpu_elem<WT>::widen(w[c * K + k]), acc);
                }
                gpu_activate_all<1>(a.activation, &acc);
                y[b * a.y_stride[0] + c * a.y_stride[1] + t * a.y_stride[2]] = gpu_elem<XT>::narrow(acc);
            }
            if (!a.cache_seqlens) { /* shift the tokens in: input i + T moves to i, in
                                       increasing i, so every read precedes its write */
                for (int64_t i = 0; i < P; i++) state[i] = GPU_UPDATE_INPUT(i + T - P);
            } else if (P > 0) { /* each token at its place; a later token wins a place */
                for (int64_t t = 0, at = head; t < T; t++, at = at + 1 == P ? 0 : at + 1)
                    state[at] = xr[t * a.x_stride[2]];
            }
#undef GPU_UPDATE_INPUT
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_CAUSAL_UPDATE_CUH */
