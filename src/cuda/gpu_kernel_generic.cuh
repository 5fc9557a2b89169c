/*
 * The general kernel: one output per thread, any option, a grid-stride loop over all
 * outputs. Correct for every descriptor, and the fastest choice when rows are too
 * short to fill a tile; the specialised kernels are tested against it and the CPU.
 */
#ifndef DWCONV_GPU_KERNEL_GENERIC_CUH
#define DWCONV_GPU_KERNEL_GENERIC_CUH

#include "gpu_args.cuh"
#include "gpu_elements.cuh"

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

__global__ void dwconv_generic_kernel(gpu_conv_args a) {
    const int64_t total = a.batch * a.channels * a.output_length;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const bool channels_inner = a.y_stride[1] == 1; /* neighbouring threads, neighbouring y */
    for (int64_t at = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; at < total; at += step) {
        int64_t b, c, o;
        if (!channels_inner) {
            o = at % a.output_length;
            const int64_t row = at / a.output_length;
            c = row % a.channels;
            b = row / a.channels;
        } else {
            c = at % a.channels;
            const int64_t pos = at / a.channels;
            o = pos % a.output_length;
            b = pos / a.output_length;
        }
        float acc = a.bias ? gpu_load(a.weight_dtype, a.bias, c) : 0.0f;
        for (int64_t k = 0; k < a.kernel_size; k++) {
            const int64_t i = dwconv_source_index(
                a.padding_mode, o * a.stride + k * a.dilation - a.pad_left, a.length);
            float xv = 0.0f;
            if (i >= 0)
                xv = gpu_load(a.dtype, a.x, b * a.x_stride[0] + c * a.x_stride[1] + i * a.x_stride[2]);
            acc = DWCONV_FMAF(xv, gpu_load(a.weight_dtype, a.weight, c * a.kernel_size + k), acc);
        }
        gpu_store(a.dtype, a.y, b * a.y_stride[0] + c * a.y_stride[1] + o * a.y_stride[2],
                  dwconv_activate(a.activation, acc));
    }
}

#endif /* DWCONV_GPU_KERNEL_GENERIC_CUH */
