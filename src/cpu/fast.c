/* The fast OpenMP path. NCL rows: the branch-free interior (every tap inside [0, L))
 * runs as a loop across outputs that the compiler vectorizes; the few edge outputs
 * go through the reference's per-output function. NLC: vectorized across channels.
 * Same operations in the same order as the reference, so the bits agree. */
#include <config.h>

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu.h"
#include "dwconv_indexing.h"
#include "elements.h"

enum { TILE = 2048, LANES = 16, CHANNEL_BLOCK = 256 };

static int thread_count(int threads) {
#ifdef _OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

static int thread_index(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* out[j] = act(bias + sum_k w[k] * xs[j*stride + k*dilation]) for j < n. */
static void interior_f32(const float *xs, int64_t n, int64_t stride, int64_t dilation,
                         int64_t K, const float *w, float bias, int act, float *out) {
    for (int64_t j0 = 0; j0 < n; j0 += LANES) {
        int m = n - j0 < LANES ? (int)(n - j0) : LANES;
        float acc[LANES];
        for (int j = 0; j < m; j++) acc[j] = bias;
        for (int64_t k = 0; k < K; k++) {
            const float *xk = xs + j0 * stride + k * dilation;
            float wk = w[k];
            for (int j = 0; j < m; j++) acc[j] = DWCONV_FMAF(xk[j * stride], wk, acc[j]);
        }
        for (int j = 0; j < m; j++) out[j0 + j] = dwconv_activate(act, acc[j]);
    }
}

static void widen(dwconv_dtype dtype, const void *src, int64_t offset, int64_t n, float *dst) {
    for (int64_t i = 0; i < n; i++) dst[i] = dwconv_load(dtype, src, offset + i);
}

static void narrow(dwconv_dtype dtype, const float *src, int64_t n, void *dst, int64_t offset) {
    for (int64_t i = 0; i < n; i++) dwconv_store(dtype, dst, offset + i, src[i]);
}

typedef struct ncl_scratch {
    float *weights; /* K per thread */
    float *in;      /* input span of one tile per thread (non-f32 dtypes) */
    float *out;     /* one tile of outputs per thread (non-f32 dtypes) */
    int64_t in_size;
} ncl_scratch;

/* One row (b, c) of an NCL convolution. */
static void ncl_row(const dwconv_plan *p, const void *x, const void *weight, const void *bias,
                    void *y, int64_t row, int64_t begin, int64_t end, ncl_scratch *s, int t) {
    const dwconv_desc *d = &p->desc;
    const int64_t C = d->channels, L = d->length, K = d->kernel_size, L_out = p->output_length;
    const int64_t b = row / C, c = row % C;
    float *w = s->weights + (int64_t)t * K;
    widen(d->weight_dtype, weight, c * K, K, w);
    float bias_c = bias ? dwconv_load(d->weight_dtype, bias, c) : 0.0f;

    for (int64_t o = 0; o < begin; o++)
        dwconv_store(d->dtype, y, row * L_out + o, dwconv_cpu_output(p, x, weight, bias, b, c, o));
    for (int64_t o = end; o < L_out; o++)
        dwconv_store(d->dtype, y, row * L_out + o, dwconv_cpu_output(p, x, weight, bias, b, c, o));

    for (int64_t o0 = begin; o0 < end; o0 += TILE) {
        int64_t n = end - o0 < TILE ? end - o0 : TILE;
        int64_t first = o0 * d->stride - d->pad_left; /* first tap of output o0, >= 0 */
        if (d->dtype == DWCONV_F32) {
            interior_f32((const float *)x + row * L + first, n, d->stride, d->dilation, K, w,
                         bias_c, d->activation, (float *)y + row * L_out + o0);
        } else {
            int64_t span = (n - 1) * d->stride + (K - 1) * d->dilation + 1;
            float *in = s->in + (int64_t)t * s->in_size, *out = s->out + (int64_t)t * TILE;
            widen(d->dtype, x, row * L + first, span, in);
            interior_f32(in, n, d->stride, d->dilation, K, w, bias_c, d->activation, out);
            narrow(d->dtype, out, n, y, row * L_out + o0);
        }
    }
}

static dwconv_status forward_ncl(const dwconv_plan *p, const void *x, const void *weight,
                                 const void *bias, void *y, int nt) {
    const dwconv_desc *d = &p->desc;
    const int64_t K = d->kernel_size, span = d->dilation * (K - 1);
    /* outputs [begin, end) read only inside [0, L); begin <= end <= L_out */
    int64_t begin = dwconv_interior_begin(d->pad_left, d->stride);
    if (begin > p->output_length) begin = p->output_length;
    const int64_t end = dwconv_interior_end(d->length, d->pad_left, d->stride, span,
                                            p->output_length, begin);
    ncl_scratch s = {0};
    s.in_size = (TILE - 1) * d->stride + span + 1;
    if (s.in_size > d->length) s.in_size = d->length;
    int narrow_types = d->dtype != DWCONV_F32;
    s.weights = malloc(sizeof(float) * (size_t)(K * nt));
    if (narrow_types) {
        s.in = malloc(sizeof(float) * (size_t)(s.in_size * nt));
        s.out = malloc(sizeof(float) * (size_t)TILE * (size_t)nt);
    }
    if (!s.weights || (narrow_types && (!s.in || !s.out))) {
        free(s.weights), free(s.in), free(s.out);
        return DWCONV_ERROR_OUT_OF_MEMORY;
    }
    const int64_t rows = d->batch * d->channels;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t row = 0; row < rows; row++)
        ncl_row(p, x, weight, bias, y, row, begin, end, &s, thread_index());
    free(s.weights), free(s.in), free(s.out);
    return DWCONV_SUCCESS;
}

/* One output position (b, o) of an NLC convolution: all C channels. */
static void nlc_position(const dwconv_plan *p, const void *x, const float *wt,
                         const float *bias_f32, void *y, int64_t pos) {
    const dwconv_desc *d = &p->desc;
    const int64_t C = d->channels, L = d->length, K = d->kernel_size, L_out = p->output_length;
    const int64_t b = pos / L_out, o = pos % L_out;
    for (int64_t c0 = 0; c0 < C; c0 += CHANNEL_BLOCK) {
        int m = C - c0 < CHANNEL_BLOCK ? (int)(C - c0) : CHANNEL_BLOCK;
        float acc[CHANNEL_BLOCK], xv[CHANNEL_BLOCK];
        for (int j = 0; j < m; j++) acc[j] = bias_f32 ? bias_f32[c0 + j] : 0.0f;
        for (int64_t k = 0; k < K; k++) {
            int64_t i = dwconv_source_index(d->padding_mode,
                                            o * d->stride + k * d->dilation - d->pad_left, L);
            if (i >= 0) widen(d->dtype, x, (b * L + i) * C + c0, m, xv);
            else for (int j = 0; j < m; j++) xv[j] = 0.0f;
            const float *wk = wt + k * C + c0;
            for (int j = 0; j < m; j++) acc[j] = DWCONV_FMAF(xv[j], wk[j], acc[j]);
        }
        for (int j = 0; j < m; j++) acc[j] = dwconv_activate(d->activation, acc[j]);
        narrow(d->dtype, acc, m, y, pos * C + c0);
    }
}

static dwconv_status forward_nlc(const dwconv_plan *p, const void *x, const void *weight,
                                 const void *bias, void *y, int nt) {
    const dwconv_desc *d = &p->desc;
    const int64_t C = d->channels, K = d->kernel_size;
    /* weights transposed to [k][c] so a tap's weights are contiguous across channels */
    float *wt = malloc(sizeof(float) * (size_t)(K * C + C));
    if (!wt) return DWCONV_ERROR_OUT_OF_MEMORY;
    for (int64_t c = 0; c < C; c++)
        for (int64_t k = 0; k < K; k++) wt[k * C + c] = dwconv_load(d->weight_dtype, weight, c * K + k);
    float *bias_f32 = NULL;
    if (bias) {
        bias_f32 = wt + K * C;
        widen(d->weight_dtype, bias, 0, C, bias_f32);
    }
    const int64_t positions = d->batch * p->output_length;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t pos = 0; pos < positions; pos++) nlc_position(p, x, wt, bias_f32, y, pos);
    free(wt);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_cpu_fast(const dwconv_plan *plan, const void *x, const void *weight,
                              const void *bias, void *y, int threads) {
    int nt = thread_count(threads);
    return plan->desc.layout == DWCONV_LAYOUT_NCL ? forward_ncl(plan, x, weight, bias, y, nt)
                                                  : forward_nlc(plan, x, weight, bias, y, nt);
}

const char *dwconv_cpu_simd_name(void) { return "generic"; }
