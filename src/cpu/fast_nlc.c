/* NLC: positions (b, o) of C channels, vectorized across channels. Work items are
 * blocks of consecutive output positions of one batch. For every position and tap the
 * driver resolves which input row is read (the padding mode's index arithmetic, or a
 * row of zeros), so the kernel never branches on edges and every padding mode costs
 * the same as the interior.
 *
 * Fewer channels than a vector holds would leave most lanes idle: with stride 1, G
 * consecutive interior positions read G consecutive input rows for every tap, so they
 * form one row of G*C channels (weights and bias repeated G times) and fill a vector. */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwconv_indexing.h"
#include "dwconv_elements.h"
#include "fast.h"
#include "reference.h"

enum {
    BLOCK = 120,           /* output positions per work item: a multiple of most G */
    PREFETCH_POSITIONS = 2, /* how far ahead the kernel prefetches input rows */
    MAX_PREFETCH_STRIDE = 64 /* beyond it rows are far apart: no prefetch (0 bytes ahead) */
};

typedef struct nlc_job {
    const dwconv_cpu_kernels *kernels;
    const dwconv_problem *plan;
    dwconv_cpu_nlc single, grouped; /* grouped: G positions as one row of G*C channels */
    int64_t group;                  /* G; 1: no grouping */
    int64_t interior_begin, interior_end; /* positions whose taps are all inside [0, L) */
    const char *x, *zeros;          /* zeros: one input row of zeros */
    char *y;
    const dwconv_operand *xt, *yt;  /* their strides: channels adjacent, positions anywhere */
    size_t row_bytes;               /* C elements of x or y */
    size_t elem;                    /* bytes per element */
} nlc_job;

static char *output_row(const nlc_job *j, int64_t b, int64_t o) {
    return j->y + (size_t)dwconv_ref_at(j->yt, b, 0, o) * j->elem;
}

static const char *input_row(const nlc_job *j, int64_t b, int64_t i) {
    return j->x + (size_t)dwconv_ref_at(j->xt, b, 0, i) * j->elem;
}

/* Positions [o0, o0 + n) of batch b, one by one: their rows, then the kernel. */
static void single_positions(const nlc_job *j, int64_t b, int64_t o0, int64_t n, const void **row) {
    const dwconv_desc *d = &j->plan->desc;
    const int64_t K = d->kernel_size, L = d->length;
    if (n <= 0) return;
    for (int64_t p = 0; p < n; p++)
        for (int64_t k = 0; k < K; k++) {
            int64_t i = dwconv_source_index(d->padding_mode,
                                            (o0 + p) * d->stride + k * d->dilation - d->pad_left, L);
            row[p * K + k] = i < 0 ? j->zeros : input_row(j, b, i);
        }
    j->kernels->nlc(&j->single, row, n, output_row(j, b, o0));
}

/* n groups of G interior positions from o0 (stride 1). */
static void grouped_positions(const nlc_job *j, int64_t b, int64_t o0, int64_t n, const void **row) {
    const dwconv_desc *d = &j->plan->desc;
    const int64_t K = d->kernel_size;
    for (int64_t g = 0; g < n; g++)
        for (int64_t k = 0; k < K; k++)
            row[g * K + k] = input_row(j, b, o0 + g * j->group + k * d->dilation - d->pad_left);
    char *y = output_row(j, b, o0);
    dwconv_cpu_nlc job = j->grouped;
    job.stream = job.stream && (uintptr_t)y % 64 == 0;
    j->kernels->nlc(&job, row, n, y);
}

/* Positions [o0, o0 + n) of batch b: groups where they can be, single positions around. */
static void position_block(const nlc_job *j, int64_t b, int64_t o0, int64_t n, const void **row) {
    int64_t from = o0 > j->interior_begin ? o0 : j->interior_begin;
    int64_t to = o0 + n < j->interior_end ? o0 + n : j->interior_end;
    int64_t groups = j->group > 1 && to > from ? (to - from) / j->group : 0;
    if (!groups) {
        single_positions(j, b, o0, n, row);
        return;
    }
    single_positions(j, b, o0, from - o0, row);
    grouped_positions(j, b, from, groups, row);
    from += groups * j->group;
    single_positions(j, b, from, o0 + n - from, row);
}

dwconv_status dwconv_cpu_fast_nlc(const dwconv_cpu_kernels *kernels, const dwconv_problem *plan,
                                  int nt) {
    const dwconv_desc *d = &plan->desc;
    const dwconv_operand *xt = &plan->operand[DWCONV_ROLE_X], *yt = &plan->operand[DWCONV_ROLE_Y];
    const void *x = xt->data, *weight = plan->operand[DWCONV_ROLE_WEIGHT].data;
    const void *bias = plan->operand[DWCONV_ROLE_BIAS].data;
    void *y = yt->data;
    const int64_t C = d->channels, K = d->kernel_size, L_out = plan->output_length;
    /* grouping positions into one row needs positions packed channel after channel */
    const int packed = xt->stride[DWCONV_DIM_POSITION] == C && yt->stride[DWCONV_DIM_POSITION] == C;
    const int64_t G = packed && d->stride == 1 && C < kernels->lanes ? kernels->lanes / C : 1;
    const int64_t GC = G * C;
    nlc_job j = {
        .kernels = kernels, .plan = plan, .x = x, .y = y, .group = G, .xt = xt, .yt = yt,
        .row_bytes = (size_t)C * dwconv_dtype_size(d->dtype),
        .elem = dwconv_dtype_size(d->dtype),
    };
    j.interior_begin = dwconv_interior_begin(d->pad_left, d->stride);
    j.interior_end = dwconv_interior_end(d->length, d->pad_left, d->stride,
                                         d->dilation * (K - 1), L_out, j.interior_begin);
    /* weights [k][c] and bias (or zeros), each repeated G times; a zero row; then
     * BLOCK*K row pointers per thread */
    size_t weights_bytes = dwconv_scratch_bytes(K, GC, sizeof(float));
    size_t bias_bytes = dwconv_scratch_bytes(GC, 1, sizeof(float));
    size_t zeros_bytes = dwconv_scratch_bytes(C, 1, dwconv_dtype_size(d->dtype));
    size_t rows_bytes = dwconv_scratch_bytes(BLOCK, K, sizeof(void *));
    char *block = aligned_alloc(
        64, dwconv_size_add(dwconv_size_add(weights_bytes, bias_bytes),
                            dwconv_size_add(zeros_bytes, dwconv_size_mul(rows_bytes, (size_t)nt))));
    if (!block) return DWCONV_ERROR_OUT_OF_MEMORY;
    float *weight_kc = (float *)block, *bias_f32 = (float *)(block + weights_bytes);
    char *zeros = block + weights_bytes + bias_bytes, *rows = zeros + zeros_bytes;
    memset(zeros, 0, j.row_bytes);
    j.zeros = zeros;
    j.single = (dwconv_cpu_nlc){
        .dtype = d->dtype, .channels = C, .kernel_size = K,
        .weight_kc = weight_kc, .weight_stride = GC, .bias = bias_f32,
        .activation = d->activation,
        .y_stride = yt->stride[DWCONV_DIM_POSITION],
        .stream = dwconv_cpu_streams(yt->bytes) && j.row_bytes % 64 == 0 &&
                  (yt->stride[DWCONV_DIM_POSITION] * j.elem) % 64 == 0 &&
                  (yt->stride[DWCONV_DIM_BATCH] * j.elem) % 64 == 0 && (uintptr_t)y % 64 == 0,
        .prefetch_ahead = d->stride <= MAX_PREFETCH_STRIDE
                              ? xt->stride[DWCONV_DIM_POSITION] * (int64_t)j.elem * d->stride *
                                    PREFETCH_POSITIONS
                              : 0,
    };
    j.grouped = j.single; /* the same numbers, G positions to a row */
    j.grouped.channels = GC;
    j.grouped.y_stride = GC;
    j.grouped.stream = dwconv_cpu_streams(yt->bytes) && (j.row_bytes * (size_t)G) % 64 == 0;
    j.grouped.prefetch_ahead = (int64_t)j.row_bytes * G * PREFETCH_POSITIONS;

    const int64_t blocks = (L_out + BLOCK - 1) / BLOCK, items = d->batch * blocks;
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int64_t c = 0; c < GC; c++) { /* lane c of a row of G*C is channel c mod C */
            for (int64_t k = 0; k < K; k++)
                weight_kc[k * GC + c] = dwconv_load(d->weight_dtype, weight, c % C * K + k);
            bias_f32[c] = bias ? dwconv_load(d->weight_dtype, bias, c % C) : 0.0f;
        }
        const void **row = (const void **)(rows + rows_bytes * (size_t)dwconv_cpu_thread_index());
#pragma omp for schedule(static)
        for (int64_t item = 0; item < items; item++) {
            int64_t b = item / blocks, o0 = item % blocks * BLOCK;
            position_block(&j, b, o0, L_out - o0 < BLOCK ? L_out - o0 : BLOCK, row);
        }
        kernels->fence();
    }
    free(block);
    return DWCONV_SUCCESS;
}
