/*
 * The one argument of the causal kernels (gpu_kernel_causal_*.cuh), by value: the
 * resolved causal problem, its buffers and index arrays, where a violation goes, and
 * the launch geometry (gpu_causal_plan.cuh). Plain C, like gpu_args.cuh: the tests'
 * CPU emulator builds it too.
 */
#ifndef DWCONV_GPU_CAUSAL_ARGS_CUH
#define DWCONV_GPU_CAUSAL_ARGS_CUH

#include <stdint.h>

#include "dwconv_index_rules.h"

typedef struct gpu_causal_args {
    const void *x, *weight, *bias; /* bias may be NULL */
    void *y;
    const void *state_in; /* forward: initial states (N, C, S), or NULL (zeros) */
    void *state_out;      /* forward: final states, or NULL; may be state_in;
                             decode: the pool (P, C, state_length), read and written */
    const int32_t *cu_seqlens, *seq_idx;           /* forward: packed sequences, or NULL */
    const int32_t *cache_seqlens, *state_indices;  /* decode: circular form, slots, or NULL */
    /* the context's mapped record: the first violation of a rule goes there */
    dwconv_index_violation *violation;
    /* device memory the check kernel sets nonzero when the index arrays break a rule
     * (a call that does so writes nothing); NULL: no check kernel ran (no index
     * arrays, or the decode kernel checks them itself) */
    const int *verdict;
    int64_t batch, channels, length, kernel_size, dilation;
    int64_t span;         /* dilation * (K - 1) */
    int64_t state_length; /* forward: S = span; decode: the pool's, >= span */
    int64_t state_count;  /* forward: N (B, or sequences); decode: pool size */
    int dtype, weight_dtype, activation;
    /* element strides (batch, channel, position) of x and y; size-1 dimensions 0 */
    int64_t x_stride[3], y_stride[3];

    /* geometry */
    int64_t first_output, last_output; /* outputs kernel: positions [first, last) */
    int sequence_starts;               /* outputs kernel: instead, the first S positions
                                          of each packed sequence (those that read its
                                          state; a forward family did the rest) */
    int channels_inner;                /* outputs kernel: neighbouring threads take
                                          neighbouring channels (else positions) */
    int inner_threads;                 /* outputs kernel: threads along that dimension */
    int check_in_block;                /* decode: each block checks the index arrays */
} gpu_causal_args;

typedef void (*gpu_causal_kernel_fn)(gpu_causal_args);

#endif /* DWCONV_GPU_CAUSAL_ARGS_CUH */
