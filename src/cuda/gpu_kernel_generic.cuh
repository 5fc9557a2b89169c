/*
 * The general kernel: one output per thread, any option and any strides. Correct for
 * every problem: it runs what no other family takes (mixed layouts) and short
 * channel-first rows; the specialised kernels are tested against it and the CPU.
 */
#ifndef DWCONV_GPU_KERNEL_GENERIC_CUH
#define DWCONV_GPU_KERNEL_GENERIC_CUH

#include "dwconv_module.h" /* DWCONV_DIM_* */
#include "gpu_args.cuh"
#include "gpu_elements.cuh"
#include "gpu_carried.cuh"

/* A block is inner_threads threads along the inner dimension (channels where y's
 * channels lie closer in memory than its positions, else positions) times the rest
 * along the outer one, so that short rows share a block. Grid: x = chunks of the inner
 * dimension, y = chunks of the outer one, z = batch, each strided: no division per
 * output. The dtypes are template arguments (a run-time dtype costs a branch per
 * element), and an output whose taps all lie inside the row (most of them) walks x by
 * a pointer stepped by the dilation; only the others ask the padding mode for each
 * tap. Both sum in the same order as every other kernel (bias, then tap 0 up). */
template <int XT, int WT>
__global__ void dwconv_generic_kernel(gpu_conv_args a) {
    typedef typename gpu_elem<XT>::raw xraw;
    typedef typename gpu_elem<WT>::raw wraw;
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    const xraw *x = (const xraw *)a.x;
    const wraw *weight = (const wraw *)a.weight, *bias = (const wraw *)a.bias;
    xraw *y = (xraw *)a.y;
    const int64_t inner = a.channels_inner ? a.channels : a.output_length;
    const int64_t outer = a.channels_inner ? a.output_length : a.channels;
    const int64_t K = a.kernel_size, span = a.dilation * (K - 1);
    const int64_t tap_step = a.dilation * a.x_stride[DWCONV_DIM_POSITION];
    const int TX = a.inner_threads, TY = blockDim.x / TX;
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t m = (int64_t)blockIdx.y * TY + ty; m < outer; m += (int64_t)gridDim.y * TY)
            for (int64_t i = (int64_t)blockIdx.x * TX + tx; i < inner; i += (int64_t)gridDim.x * TX) {
                const int64_t c = a.channels_inner ? i : m, o = a.channels_inner ? m : i;
                const xraw *row = x + b * a.x_stride[DWCONV_DIM_BATCH] + c * a.x_stride[DWCONV_DIM_CHANNEL];
                const wraw *w = weight + c * K;
                const int64_t first = o * a.stride - a.pad_left; /* tap 0's padded position */
                float acc = bias ? gpu_elem<WT>::widen(bias[c]) : 0.0f;
                if (first >= 0 && first + span < a.length) {
                    const xraw *p = row + first * a.x_stride[DWCONV_DIM_POSITION];
#pragma unroll 4
                    for (int64_t k = 0; k < K; k++, p += tap_step)
                        acc = DWCONV_FMAF(gpu_elem<XT>::widen(*p), gpu_elem<WT>::widen(w[k]), acc);
                } else {
                    for (int64_t k = 0; k < K; k++) {
                        const int64_t j = dwconv_source_index(a.padding_mode, first + k * a.dilation, a.length);
                        const float xv = j >= 0 ? gpu_elem<XT>::widen(row[j * a.x_stride[DWCONV_DIM_POSITION]]) : 0.0f;
                        acc = DWCONV_FMAF(xv, gpu_elem<WT>::widen(w[k]), acc);
                    }
                }
                gpu_activate_all<1, XT>(a.activation, &acc);
                y[b * a.y_stride[DWCONV_DIM_BATCH] + c * a.y_stride[DWCONV_DIM_CHANNEL] +
                  o * a.y_stride[DWCONV_DIM_POSITION]] = gpu_elem<XT>::narrow(acc);
            }
}

#endif /* DWCONV_GPU_KERNEL_GENERIC_CUH */
