/*
 * The causal forward with what the forward's families do not know: carried initial
 * states and packed sequences (cu_seqlens, seq_idx). Two kernels:
 *   outputs       one output per thread over positions [first_output, last_output),
 *                 or the first S positions of each packed sequence, each tap from
 *                 where dwconv_ref_tap takes it (x, the sequence's initial state, or
 *                 zero). It redoes the outputs that read a state (or would read
 *                 across a sequence start) after a forward family has written all of
 *                 them as one plain causal convolution; seq_idx: all positions.
 *   final states  one thread per (sequence, channel): the last S inputs of the
 *                 sequence's history, in increasing s: input s is read from the
 *                 initial state's s + length, never below s, so in place (final
 *                 states = initial states) every read precedes the write over it.
 *                 It runs after the outputs kernel (stream order), which reads the
 *                 initial states.
 * Both return at once when the check kernel found bad indices (the outputs kernel
 * records the violation).
 */
#ifndef DWCONV_GPU_KERNEL_CAUSAL_FORWARD_CUH
#define DWCONV_GPU_KERNEL_CAUSAL_FORWARD_CUH

#include "gpu_kernel_causal_check.cuh"

#define GPU_CAUSAL_THREADS 256

/* The packed sequence holding position o: its number, and its first position in
 * *start (cu_seqlens checked: non-decreasing from 0 to L). */
static __device__ __forceinline__ int64_t gpu_causal_sequence(const int32_t *cu, int64_t N,
                                                              int64_t o, int64_t *start) {
    int64_t lo = 0, hi = N; /* the last n with cu[n] <= o */
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (cu[mid] <= o) lo = mid;
        else hi = mid;
    }
    *start = cu[lo];
    return lo;
}

template <int XT, int WT>
__global__ void __launch_bounds__(GPU_CAUSAL_THREADS) dwconv_causal_outputs_kernel(gpu_causal_args a) {
    typedef typename gpu_elem<XT>::raw xraw;
    typedef typename gpu_elem<WT>::raw wraw;
    if (gpu_causal_verdict_bad(a)) {
        gpu_causal_refuse(a);
        return;
    }
    const int64_t C = a.channels, K = a.kernel_size, S = a.state_length, D = a.dilation;
    const int64_t positions =
        a.sequence_starts ? a.state_count * S : a.last_output - a.first_output;
    const int64_t inner = a.channels_inner ? C : positions;
    const int64_t outer = a.channels_inner ? positions : C;
    const int TX = a.inner_threads, TY = blockDim.x / TX;
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const xraw *x = (const xraw *)a.x, *states = (const xraw *)a.state_in;
    const wraw *w = (const wraw *)a.weight;
    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t m = (int64_t)blockIdx.y * TY + ty; m < outer; m += (int64_t)gridDim.y * TY)
            for (int64_t i = (int64_t)blockIdx.x * TX + tx; i < inner; i += (int64_t)gridDim.x * TX) {
                const int64_t c = a.channels_inner ? i : m, at = a.channels_inner ? m : i;
                /* the output, the sequence it belongs to (n), where that sequence's
                 * history before it starts, and its initial state (NULL: zeros) */
                int64_t o = a.first_output + at, start = 0, n = b;
                if (a.sequence_starts) {
                    n = at / S, start = a.cu_seqlens[n], o = start + at % S;
                    if (o >= a.cu_seqlens[n + 1]) continue; /* a sequence shorter than S */
                } else if (a.cu_seqlens) {
                    n = gpu_causal_sequence(a.cu_seqlens, a.state_count, o, &start);
                }
                const xraw *xr = x + b * a.x_stride[0] + c * a.x_stride[1];
                const xraw *state = states ? states + (n * C + c) * S : NULL;
                const int32_t *id = a.seq_idx ? a.seq_idx + b * a.length : NULL;
                float acc = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
                for (int64_t k = 0; k < K; k++) {
                    const int64_t j = o - a.span + k * D; /* the tap's position */
                    xraw v = 0;
                    if (j >= start) {
                        if (!id || id[j] == id[o]) v = xr[j * a.x_stride[2]];
                    } else if (state) {
                        v = state[S + (j - start)];
                    }
                    acc = DWCONV_FMAF(gpu_elem<XT>::widen(v), gpu_elem<WT>::widen(w[c * K + k]), acc);
                }
                gpu_activate_all<1, XT>(a.activation, &acc);
                ((xraw *)a.y)[b * a.y_stride[0] + c * a.y_stride[1] + o * a.y_stride[2]] =
                    gpu_elem<XT>::narrow(acc);
            }
}

/* Grid: x = channel blocks, y = sequences (both strided). */
template <int XT>
__global__ void __launch_bounds__(GPU_CAUSAL_THREADS) dwconv_causal_final_states_kernel(gpu_causal_args a) {
    typedef typename gpu_elem<XT>::raw xraw;
    if (gpu_causal_verdict_bad(a)) return; /* the outputs kernel recorded it */
    const int64_t C = a.channels, S = a.state_length;
    const xraw *x = (const xraw *)a.x, *in = (const xraw *)a.state_in;
    xraw *out = (xraw *)a.state_out;
    for (int64_t n = blockIdx.y; n < a.state_count; n += gridDim.y) {
        const int64_t b = a.cu_seqlens ? 0 : n;
        const int64_t start = a.cu_seqlens ? a.cu_seqlens[n] : 0;
        const int64_t end = a.cu_seqlens ? a.cu_seqlens[n + 1] : a.length;
        for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C;
             c += (int64_t)gridDim.x * blockDim.x) {
            const xraw *xr = x + b * a.x_stride[0] + c * a.x_stride[1];
            const int64_t at = (n * C + c) * S;
            for (int64_t s = 0; s < S; s++) {
                const int64_t j = end - S + s;
                out[at + s] = j >= start ? xr[j * a.x_stride[2]]
                              : in      ? in[at + s + (end - start)]
                                        : (xraw)0;
            }
        }
    }
}

#endif /* DWCONV_GPU_KERNEL_CAUSAL_FORWARD_CUH */
