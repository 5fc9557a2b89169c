/*
 * The one argument every backward kernel takes, by value: the resolved descriptor,
 * the buffers with their strides, the context scratch for the weight and bias
 * partial sums, and the plan's choices (gpu_bwd_plan.cuh). One signature for every
 * backward kernel, so one list of launches serves the module and the tests' CPU
 * emulator.
 */
#ifndef DWCONV_GPU_BWD_ARGS_CUH
#define DWCONV_GPU_BWD_ARGS_CUH

#include <stdint.h>

typedef struct gpu_bwd_args {
    const void *x, *weight, *bias, *dy; /* bias may be NULL */
    void *dx, *dweight, *dbias;         /* NULL: not wanted */
    /* scratch (floats): part[gpu_bwd_part(a, b, c, k, t)], the partial sum of tap k
     * (k == K: the bias) over tile t of row (b, c); rows[(k*B + b)*C + c], the row
     * sums. Channels are the fastest index, so that threads on neighbouring channels
     * write and read neighbouring words. */
    float *part, *rows;
    /* the causal backward's states, (B, C, S) each, contiguous; NULL: not given or not
     * wanted. The row is then [state (S), x (L)]: taps before x read the state (zeros
     * without one), and positions before x get gradient in dstate_in */
    const void *state, *dstate_out;
    void *dstate_in;
    int64_t state_length; /* S: the span for the causal backward, else 0 */
    int64_t batch, channels, length, kernel_size, stride, dilation, pad_left, output_length;
    int64_t span; /* dilation * (K - 1): the last padded position is (L_out-1)*stride - pad_left + span */
    int dtype, weight_dtype, grad_dtype, padding_mode, activation;
    /* element strides (batch, channel, position); a dimension of size 1 has stride 0 */
    int64_t x_stride[3], dy_stride[3], dx_stride[3];
    int sums;      /* dweight or dbias wanted: the partial sums are needed */

    /* plan */
    int64_t tiles;      /* partial sums per row: whole tiles of tile_chunks chunks of
                           DWCONV_GRAD_CHUNK outputs (the last tile may be short) */
    int64_t tile_chunks; /* chunks per tile: a power of two */
    int64_t edge_lo, edge_hi; /* dx of inputs [0, edge_lo) and [L - edge_hi, L) of every
                                 row: the gather kernel's (all of a row: edge_lo = L) */
    int64_t state_positions; /* the gather kernel's too: dstate_in's S positions (or 0) */
    int64_t halo;       /* ceil(span / stride): outputs before an input's last reader
                           that also read it */
    int ring;           /* chunk kernel: g values a thread keeps (halo + 1), 0: no dx */
    int partials_shared; /* chunk kernel: partial sums in shared memory (else scratch) */
    int channels_inner; /* chunk, gather: neighbouring threads take neighbouring channels */
    int reduce_threads[2]; /* reduce: threads per segment: [0] tiles of a row, [1] rows */
} gpu_bwd_args;

typedef void (*gpu_bwd_kernel_fn)(gpu_bwd_args);

/* Where the partial sum of tap k over tile t of row (b, c) lies in a.part. */
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(DWCONV_GPU_EMULATE_H)
__host__ __device__
#endif
static inline int64_t gpu_bwd_part(const gpu_bwd_args *a, int64_t b, int64_t c, int64_t k, int64_t t) {
    return ((k * a->batch + b) * a->tiles + t) * a->channels + c;
}

#endif /* DWCONV_GPU_BWD_ARGS_CUH */
