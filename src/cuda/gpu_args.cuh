/*
 * The one argument every forward kernel takes, by value (no pointer to host memory):
 * the resolved descriptor, the buffers with their strides, and the launch geometry
 * that gpu_launch.cuh chose. All kernels share this signature, so one table of
 * function pointers (gpu_dispatch.cuh) serves the module and the CPU emulator of the
 * tests. Plain C as well (tests/check_gpu.c reads the family predicates over it).
 */
#ifndef DWCONV_GPU_ARGS_CUH
#define DWCONV_GPU_ARGS_CUH

#include <stdint.h>

/* What the strides of x and y allow (gpu_args_make decides, gpu_families.h):
 * channel-first: positions adjacent in both (any batch and channel strides);
 * channel-last: channels adjacent in both (any batch and position strides);
 * mixed: anything else, which only the generic kernel takes. */
enum gpu_layout_class { GPU_MIXED = -1, GPU_CHANNEL_FIRST = 0, GPU_CHANNEL_LAST = 1 };

typedef struct gpu_conv_args {
    const void *x, *weight, *bias; /* bias may be NULL */
    void *y;
    int64_t batch, channels, length, kernel_size, stride, dilation, pad_left, output_length;
    int dtype, weight_dtype, padding_mode, activation;
    int layout; /* enum gpu_layout_class */
    /* element strides (batch, channel, position) of x and y; a dimension of size 1
     * has stride 0 (it never moves, and alignment rules then ignore it) */
    int64_t x_stride[3], y_stride[3];
    /* a causal forward carrying states (gpu_causal_plan.cuh), in the families that
     * take them (lean, slide; NULL elsewhere): row (b, c)'s state is state_length
     * elements at (b * channels + c) * state_length; positions p < 0 read state_in
     * there (NULL: the padding's zeros), and the one thread that reads a row's state
     * writes its final state to state_out (NULL: none), which may be state_in */
    const void *state_in;
    void *state_out;
    int64_t state_length;
    /* device memory that, when nonzero, says the call's packed-sequence offsets are
     * bad (the check kernel's verdict): every kernel then returns at once; NULL: none */
    const int *skip;

    /* geometry (gpu_launch.cuh) */
    int64_t tiles_per_row;   /* channel-first: tiles per (b, c) row;
                                channel-last: position tiles per batch entry */
    int64_t tiles_per_block; /* consecutive tiles one block walks (lean: one task) */
    int64_t window;          /* raw x elements a tile stages (tile kernel) */
    int64_t tile_span;       /* tile: outputs a tile covers (gpu_tile_span) */
    int64_t steps;           /* slide: steps of GPU_SLIDE_STEP positions per thread */
    int channel_threads;     /* channel-last: threads across channel vectors in a block */
    int vector_x, vector_y;  /* channel-last: every position of x / y starts on a 16-byte
                                boundary */
    int vector_w;            /* slide: weight and bias (if any) start on 16-byte boundaries */
    int channels_inner;      /* generic: threads side by side take neighbouring channels */
    int inner_threads;       /* generic: threads of a block along that dimension */
    int row_threads;         /* lean, strip: lanes per tile (a power of two up to GPU_WARP) */
} gpu_conv_args;

typedef void (*gpu_kernel_fn)(gpu_conv_args);

#endif /* DWCONV_GPU_ARGS_CUH */
