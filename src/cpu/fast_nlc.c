/* NLC: positions (b, o) of C channels, vectorized across channels. Work items are
 * blocks of consecutive output positions of one batch. For every position and tap the
 * driver resolves which input row is read (the padding mode's index arithmetic, or a
 * row of zeros), so the kernel never branches on edges and every padding mode costs
 * the same as the interior. */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwconv_indexing.h"
#include "elements.h"
#include "fast.h"

enum {
    BLOCK = 16,            /* output positions per work item */
    PREFETCH_POSITIONS = 2 /* how far ahead the kernel prefetches input rows */
};

typedef struct nlc_job {
    const dwconv_cpu_kernels *kernels;
    const dwconv_plan *plan;
    dwconv_cpu_nlc kernel_job;
    const char *x, *zeros; /* zeros: one input row of zeros */
    char *y;
    size_t row_bytes; /* C elements of x or y */
} nlc_job;

/* Positions [o0, o0 + n) of batch b: their rows, then the kernel. */
static void position_block(const nlc_job *j, int64_t b, int64_t o0, int64_t n, const void **row) {
    const dwconv_desc *d = &j->plan->desc;
    const int64_t K = d->kernel_size, L = d->length;
    for (int64_t p = 0; p < n; p++)
        for (int64_t k = 0; k < K; k++) {
            int64_t i = dwconv_source_index(d->padding_mode,
                                            (o0 + p) * d->stride + k * d->dilation - d->pad_left, L);
            row[p * K + k] = i < 0 ? j->zeros : j->x + (size_t)(b * L + i) * j->row_bytes;
        }
    char *y = j->y + (size_t)(b * j->plan->output_length + o0) * j->row_bytes;
    j->kernels->nlc(&j->kernel_job, row, n, y);
}

static size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

dwconv_status dwconv_cpu_fast_nlc(const dwconv_cpu_kernels *kernels, const dwconv_plan *plan,
                                  const void *x, const void *weight, const void *bias, void *y,
                                  int nt) {
    const dwconv_desc *d = &plan->desc;
    const int64_t C = d->channels, K = d->kernel_size, L_out = plan->output_length;
    nlc_job j = {
        .kernels = kernels, .plan = plan, .x = x, .y = y,
        .row_bytes = (size_t)C * dwconv_dtype_size(d->dtype),
    };
    /* weights [k][c], bias (or zeros), a zero row, then BLOCK*K row pointers per thread */
    size_t weights_bytes = align64(sizeof(float) * (size_t)(K * C));
    size_t bias_bytes = align64(sizeof(float) * (size_t)C), zeros_bytes = align64(j.row_bytes);
    size_t rows_bytes = align64(sizeof(void *) * (size_t)(BLOCK * K));
    char *block = aligned_alloc(64, weights_bytes + bias_bytes + zeros_bytes + rows_bytes * (size_t)nt);
    if (!block) return DWCONV_ERROR_OUT_OF_MEMORY;
    float *weight_kc = (float *)block, *bias_f32 = (float *)(block + weights_bytes);
    char *zeros = block + weights_bytes + bias_bytes, *rows = zeros + zeros_bytes;
    memset(zeros, 0, j.row_bytes);
    j.zeros = zeros;
    j.kernel_job = (dwconv_cpu_nlc){
        .dtype = d->dtype, .channels = C, .kernel_size = K,
        .weight_kc = weight_kc, .bias = bias_f32, .activation = d->activation,
        .stream = dwconv_cpu_streams(plan->y_bytes) && j.row_bytes % 64 == 0 &&
                  (uintptr_t)y % 64 == 0,
        .prefetch_ahead = (int64_t)j.row_bytes * d->stride * PREFETCH_POSITIONS,
    };

    const int64_t blocks = (L_out + BLOCK - 1) / BLOCK, items = d->batch * blocks;
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int64_t c = 0; c < C; c++) {
            for (int64_t k = 0; k < K; k++)
                weight_kc[k * C + c] = dwconv_load(d->weight_dtype, weight, c * K + k);
            bias_f32[c] = bias ? dwconv_load(d->weight_dtype, bias, c) : 0.0f;
        }
        const void **row = (const void **)(rows + rows_bytes * (size_t)dwconv_cpu_thread_index());
#pragma omp for schedule(static)
        for (int64_t item = 0; item < items; item++) {
            int64_t b = item / blocks, o0 = item % blocks * BLOCK;
            position_block(&j, b, o0, L_out - o0 < BLOCK ? L_out - o0 : BLOCK, row);
        }
    }
    free(block);
    return DWCONV_SUCCESS;
}
