/*
 * The GPU kernels, one source for CUDA (nvcc) and HIP (hipcc, through
 * src/hip/hip_compat.h). Nothing here may assume a warp size: the logical widths
 * below are chosen freely and the physical width (32 on NVIDIA, 64 on AMD) is never
 * baked into a mask, a shuffle or an index.
 *
 * Every kernel follows the numerical contract (src/common/dwconv_numerics.h): acc
 * starts at the bias, one fmaf per tap in k order, activation, then rounding.
 */
#ifndef DWCONV_GPU_KERNELS_CUH
#define DWCONV_GPU_KERNELS_CUH

#include <stdint.h>

#include "dwconv_indexing.h"
#include "dwconv_module.h"
#include "dwconv_numerics.h"

/* Everything a kernel needs, passed by value (no pointer to host memory). */
typedef struct gpu_conv_args {
    const void *x, *weight, *bias;
    void *y;
    int64_t batch, channels, length, kernel_size, stride, dilation, pad_left, output_length;
    int dtype, weight_dtype, layout, padding_mode, activation;
} gpu_conv_args;

static __device__ __forceinline__ float gpu_load(int dtype, const void *base, int64_t i) {
    if (dtype == DWCONV_F32) return ((const float *)base)[i];
    uint16_t h = ((const uint16_t *)base)[i];
    return dtype == DWCONV_F16 ? dwconv_f16_to_f32(h) : dwconv_bf16_to_f32(h);
}

static __device__ __forceinline__ void gpu_store(int dtype, void *base, int64_t i, float v) {
    if (dtype == DWCONV_F32) ((float *)base)[i] = v;
    else if (dtype == DWCONV_F16) ((uint16_t *)base)[i] = dwconv_f32_to_f16(v);
    else ((uint16_t *)base)[i] = dwconv_f32_to_bf16(v);
}

/* The general kernel: one output per thread, any option, grid-stride over all
 * outputs. Correct for every descriptor; the specialised kernels are measured
 * against it. */
__global__ void dwconv_generic_kernel(gpu_conv_args a) {
    const int64_t total = a.batch * a.channels * a.output_length;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t at = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; at < total; at += step) {
        int64_t b, c, o;
        if (a.layout == DWCONV_LAYOUT_NCL) {
            o = at % a.output_length;
            int64_t row = at / a.output_length;
            c = row % a.channels;
            b = row / a.channels;
        } else {
            c = at % a.channels;
            int64_t pos = at / a.channels;
            o = pos % a.output_length;
            b = pos / a.output_length;
        }
        float acc = a.bias ? gpu_load(a.weight_dtype, a.bias, c) : 0.0f;
        for (int64_t k = 0; k < a.kernel_size; k++) {
            int64_t i = dwconv_source_index(a.padding_mode,
                                            o * a.stride + k * a.dilation - a.pad_left, a.length);
            float xv = 0.0f;
            if (i >= 0)
                xv = gpu_load(a.dtype, a.x,
                              a.layout == DWCONV_LAYOUT_NCL ? (b * a.channels + c) * a.length + i
                                                            : (b * a.length + i) * a.channels + c);
            acc = DWCONV_FMAF(xv, gpu_load(a.weight_dtype, a.weight, c * a.kernel_size + k), acc);
        }
        gpu_store(a.dtype, a.y, at, dwconv_activate(a.activation, acc));
    }
}

#endif /* DWCONV_GPU_KERNELS_CUH */
