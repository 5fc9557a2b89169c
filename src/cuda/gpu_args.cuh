/*
 * The one argument every kernel takes, by value (no pointer to host memory): the
 * resolved descriptor, the buffers, and the launch geometry that gpu_launch.cuh
 * chose. All kernels share this signature, so one table of function pointers
 * (gpu_dispatch.cuh) serves the module and the CPU emulator of the tests.
 */
#ifndef DWCONV_GPU_ARGS_CUH
#define DWCONV_GPU_ARGS_CUH

#include <stdint.h>

typedef struct gpu_conv_args {
    const void *x, *weight, *bias; /* bias may be NULL */
    void *y;
    int64_t batch, channels, length, kernel_size, stride, dilation, pad_left, output_length;
    int dtype, weight_dtype, layout, padding_mode, activation;
    /* element strides (batch, channel, position) of x and y; layout names them when
     * they are contiguous NCL or NLC, else it is -1 and only the generic kernel runs */
    int64_t x_stride[3], y_stride[3];

    /* geometry (gpu_launch.cuh) */
    int64_t tiles_per_row;   /* NCL: tiles per (b, c) row (per phase, lattice);
                                NLC: position tiles per batch entry */
    int64_t tiles_per_block; /* consecutive tiles one block walks */
    int64_t window;        /* raw x elements a tile stages (tile kernel) */
    int64_t phases;        /* lattice: dilation / stride */
    int64_t steps;         /* slide: steps of GPU_SLIDE_STEP positions per thread */
    int channel_threads;   /* NLC, slide: threads across channel vectors in a block */
    int vector_x, vector_y;/* NLC: rows of x / y start on 16-byte boundaries */
    int vector_w;          /* slide: weight and bias (if any) start on 16-byte boundaries */
} gpu_conv_args;

typedef void (*gpu_kernel_fn)(gpu_conv_args);

#endif /* DWCONV_GPU_ARGS_CUH */
