/*
 * What the forward's kernels do for the causal forward (gpu_causal_plan.cuh): return
 * at once when the check kernel found bad packed-sequence offsets (every family), and
 * write a row's final state (the families that take states: lean, slide). See
 * gpu_args.cuh.
 */
#ifndef DWCONV_GPU_CARRIED_CUH
#define DWCONV_GPU_CARRIED_CUH

#include "gpu_args.cuh"
#include "gpu_elements.cuh"

/* Whether the call's index arrays were found bad: the kernel writes nothing (a whole
 * block returns alike, before any barrier). */
static __device__ __forceinline__ bool gpu_skipped(const gpu_conv_args &a) {
    return a.skip && *(const volatile int *)a.skip != 0;
}

/* The last S inputs of a row's history (its state, then x) into its final state, in
 * increasing s: input s comes from x or from state_in at s + L >= s, so in place every
 * read precedes the write over it. One thread per row: the one whose tile read it. */
template <int XT>
static __device__ __forceinline__ void gpu_final_state(const gpu_conv_args &a, int64_t row,
                                                       const typename gpu_elem<XT>::raw *xb,
                                                       int64_t xstep) {
    typedef typename gpu_elem<XT>::raw raw;
    const int64_t S = a.state_length, L = a.length;
    const raw *in = a.state_in ? (const raw *)a.state_in + row * S : NULL;
    raw *out = (raw *)a.state_out + row * S;
    for (int64_t s = 0; s < S; s++) {
        const int64_t j = L - S + s;
        out[s] = j >= 0 ? xb[j * xstep] : in ? in[s + L] : (raw)0;
    }
}

/* The same from `lanes` threads of a row's tile (lane: this one's index; every lane
 * calls it), where the row is at least S long: every entry then comes from x, which
 * no output may overlap, so the copies need no order and each lane's are in flight
 * together instead of one dependent load after another. A shorter row reads its
 * state too: lane 0 alone, in order. */
template <int XT>
static __device__ __forceinline__ void gpu_final_state_lanes(const gpu_conv_args &a, int64_t row,
                                                             const typename gpu_elem<XT>::raw *xb,
                                                             int64_t xstep, int lane, int lanes) {
    typedef typename gpu_elem<XT>::raw raw;
    const int64_t S = a.state_length, L = a.length;
    if (L < S) {
        if (lane == 0) gpu_final_state<XT>(a, row, xb, xstep);
        return;
    }
    raw *out = (raw *)a.state_out + row * S;
    for (int64_t s = lane; s < S; s += lanes) out[s] = xb[(L - S + s) * xstep];
}

#endif /* DWCONV_GPU_CARRIED_CUH */
