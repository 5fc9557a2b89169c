/*
 * What the backward kernels share: reading one row's padded input, recomputing an
 * output's pre-activation and its g exactly as the contract says (the forward's sum,
 * then gpu_activation_grad: dwconv_activation_grad's bits), and the fixed tree of the
 * weight and bias sums as a running stack. Included by gpu_kernels.cuh.
 */
#ifndef DWCONV_GPU_BWD_COMMON_CUH
#define DWCONV_GPU_BWD_COMMON_CUH

#include "dwconv_grad.h"
#include "gpu_bwd_args.cuh"
#include "gpu_elements.cuh"
#include "gpu_families.h"

/* silu's gradient where the hot path below does not hold (|z| > 86, NaN), out of line:
 * inlined at every call site of an unrolled pass, the scalar function's exponential and
 * division more than doubled the warp kernel's code (causal K4 silu: its warps stalled
 * mostly waiting for instructions; bench/RESULTS-gpu.md, run O). */
static __device__ GPU_NOINLINE float gpu_silu_grad_cold(float z, float dy) {
    return dwconv_activation_grad(DWCONV_ACT_SILU, z, dy);
}

/* dwconv_activation_grad, bit for bit: silu with |z| <= 86 takes the sigmoid's hot
 * path (dwconv_sigmoid_hot: no range test in the exponential, no division). */
static __device__ __forceinline__ float gpu_activation_grad(int activation, float z, float dy) {
    if (activation != DWCONV_ACT_SILU) return dwconv_activation_grad(activation, z, dy); /* none, relu */
    if (!(fabsf(z) <= DWCONV_SILU_COLD)) return gpu_silu_grad_cold(z, dy);
    const float t = dwconv_f32_from_bits(dwconv_exp_bits(-fabsf(z)));
    return dwconv_silu_grad(z, dwconv_sigmoid_hot(z, t, gpu_rcp_rn(1.0f + t)), dy);
}

/* One (b, c) row of the operands a backward kernel reads: element offsets of its
 * first position, and its weights and bias. */
template <int XT, int WT> struct gpu_bwd_row {
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const raw *x, *dy, *state; /* state: NULL, or this row's S state inputs */
    const wraw *w;
    int64_t xs, dys; /* position strides */
    float bias;

    __device__ __forceinline__ gpu_bwd_row(const gpu_bwd_args &a, int64_t b, int64_t c) {
        x = (const raw *)a.x + b * a.x_stride[0] + c * a.x_stride[1];
        dy = (const raw *)a.dy + b * a.dy_stride[0] + c * a.dy_stride[1];
        w = (const wraw *)a.weight + c * a.kernel_size;
        xs = a.x_stride[2], dys = a.dy_stride[2];
        state = a.state ? (const raw *)a.state + (b * a.channels + c) * a.state_length : NULL;
        bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
    }

    /* The padded input at position j, as the forward reads it: the state before the
     * row, if one is given; +0 beyond the padded row. Stored (raw) and widened. */
    __device__ __forceinline__ raw xr(const gpu_bwd_args &a, int64_t j) const {
        if (j < 0 && state) return j >= -a.state_length ? state[a.state_length + j] : (raw)0;
        const int64_t i = dwconv_source_index(a.padding_mode, j, a.length);
        return i < 0 || i >= a.length ? (raw)0 : x[i * xs];
    }
    __device__ __forceinline__ float xp(const gpu_bwd_args &a, int64_t j) const { return gpu_elem<XT>::widen(xr(a, j)); }

    __device__ __forceinline__ float weight(int64_t k) const { return gpu_elem<WT>::widen(w[k]); }

    /* g of output o: dy times the activation's derivative at the recomputed z (none:
     * dy itself, and z, K loads through the padding map, is not computed). */
    __device__ __forceinline__ float g(const gpu_bwd_args &a, int64_t o) const {
        if (a.activation == DWCONV_ACT_NONE) return gpu_elem<XT>::widen(dy[o * dys]);
        float z = bias;
        const int64_t j0 = o * a.stride - a.pad_left;
        for (int64_t k = 0; k < a.kernel_size; k++)
            z = DWCONV_FMAF(xp(a, j0 + k * a.dilation), weight(k), z);
        return gpu_activation_grad(a.activation, z, gpu_elem<XT>::widen(dy[o * dys]));
    }
};

/* dwconv_grad_tree over values that arrive one at a time: a stack of the sums of
 * whole aligned groups of 2^level values (levels strictly decreasing), merged as a
 * binary counter carries. The tree of n values is the tree of its first 2^m (the
 * largest power of two below n) plus the tree of the rest, so at the end the stack
 * folds from the top: the same additions, in the same order, as the tree. */
struct gpu_tree_stack {
    float sum[48]; /* 2^48 values at most */
    int level[48];
    int top;

    __device__ __forceinline__ gpu_tree_stack() : top(0) {}

    __device__ __forceinline__ void push(float v) {
        int lv = 0;
        while (top > 0 && level[top - 1] == lv) {
            v = sum[top - 1] + v; /* the earlier group on the left */
            lv++, top--;
        }
        sum[top] = v, level[top] = lv, top++;
    }

    __device__ __forceinline__ float total() const {
        if (top == 0) return 0.0f;
        float v = sum[top - 1];
        for (int t = top - 2; t >= 0; t--) v = sum[t] + v;
        return v;
    }
};

/* The smallest power of two >= n (n >= 1). */
GPU_HD int64_t gpu_pow2_at_least(int64_t n) {
    int64_t p = 1;
    while (p < n) p *= 2;
    return p;
}

#endif /* DWCONV_GPU_BWD_COMMON_CUH */
