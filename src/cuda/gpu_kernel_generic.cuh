/*
 * The general kernel: one output per thread, any option and any strides. Correct for
 * every problem: it runs what no other family takes (mixed layouts) and short
 * channel-first rows; the specialised kernels are tested against it and the CPU.
 */
#ifndef DWCONV_GPU_KERNEL_GENERIC_CUH
#define DWCONV_GPU_KERNEL_GENERIC_CUH

#include "gpu_args.cuh"
#include "gpu_elements.cuh"
#include "gpu_carried.cuh"

static __device__ __forceinline__ float gpu_load(int dtype, const void *base, int64_t i) {
    if (dtype == DWCONV_F32) return gpu_elem<DWCONV_F32>::widen(((const uint32_t *)base)[i]);
    const uint16_t h = ((const uint16_t *)base)[i];
    return dtype == DWCONV_F16 ? gpu_elem<DWCONV_F16>::widen(h) : gpu_elem<DWCONV_BF16>::widen(h);
}

static __device__ __forceinline__ void gpu_store(int dtype, void *base, int64_t i, float v) {
    if (dtype == DWCONV_F32) ((uint32_t *)base)[i] = gpu_elem<DWCONV_F32>::narrow(v);
    else if (dtype == DWCONV_F16) ((uint16_t *)base)[i] = gpu_elem<DWCONV_F16>::narrow(v);
    else ((uint16_t *)base)[i] = gpu_elem<DWCONV_BF16>::narrow(v);
}

/* A block is inner_threads threads along the inner dimension (channels where y's
 * channels lie closer in memory than its positions, else positions) times the rest
 * along the outer one, so that short rows share a block. Grid: x = chunks of the inner
 * dimension, y = chunks of the outer one, z = batch, each strided: no division per
 * output. */
__global__ void dwconv_generic_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    const int64_t inner = a.channels_inner ? a.channels : a.output_length;
    const int64_t outer = a.channels_inner ? a.output_length : a.channels;
    const int TX = a.inner_threads, TY = blockDim.x / TX;
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t m = (int64_t)blockIdx.y * TY + ty; m < outer; m += (int64_t)gridDim.y * TY)
            for (int64_t i = (int64_t)blockIdx.x * TX + tx; i < inner; i += (int64_t)gridDim.x * TX) {
                const int64_t c = a.channels_inner ? i : m, o = a.channels_inner ? m : i;
                float acc = a.bias ? gpu_load(a.weight_dtype, a.bias, c) : 0.0f;
                for (int64_t k = 0; k < a.kernel_size; k++) {
                    const int64_t j = dwconv_source_index(
                        a.padding_mode, o * a.stride + k * a.dilation - a.pad_left, a.length);
                    float xv = 0.0f;
                    if (j >= 0)
                        xv = gpu_load(a.dtype, a.x, b * a.x_stride[0] + c * a.x_stride[1] + j * a.x_stride[2]);
                    acc = DWCONV_FMAF(xv, gpu_load(a.weight_dtype, a.weight, c * a.kernel_size + k), acc);
                }
                gpu_store(a.dtype, a.y, b * a.y_stride[0] + c * a.y_stride[1] + o * a.y_stride[2],
                          dwconv_activate(a.activation, acc));
            }
}

#endif /* DWCONV_GPU_KERNEL_GENERIC_CUH */
