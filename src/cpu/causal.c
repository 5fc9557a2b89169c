/* The causal operations on the cpu (docs/api.md), their index arrays already checked
 * (backend.c), bit for bit the reference's at any thread count and SIMD flavour.
 *
 * Prefill: every output whose taps all read x of its own sequence is an output of the
 * plain causal forward, so the forward's fast path computes them all; the outputs at
 * a sequence's start (the first S of a row or of a packed sequence, and those whose
 * taps cross a seq_idx boundary) are then recomputed as the reference computes them,
 * with the carried state. The final states come last: they may replace the initial
 * states those outputs read.
 *
 * Decode: threads over (sequence, block of channels), the decode kernel for each. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "dwconv_elements.h"
#include "fast.h"
#include "reference.h"

enum {
    DECODE_BLOCK = 256,       /* channels a decode work item, at least */
    DECODE_ITEMS_PER_THREAD = 8, /* items enough to even out the threads' shares */
};

static dwconv_status no_memory(char *msg) {
    snprintf(msg, DWCONV_MSG_SIZE, "cannot allocate the cpu causal path's scratch memory");
    return DWCONV_ERROR_OUT_OF_MEMORY;
}

static const int32_t *indices(const dwconv_problem *p, dwconv_role role) {
    return (const int32_t *)p->operand[role].data;
}

/* Output o of row (b, c) as the reference computes it. */
static void exact_output(const dwconv_problem *p, int64_t b, int64_t c, int64_t o) {
    const dwconv_operand *y = &p->operand[DWCONV_ROLE_Y];
    dwconv_store(p->desc.dtype, y->data, dwconv_ref_at(y, b, c, o),
                 dwconv_activate(p->desc.activation, dwconv_ref_preactivation(p, b, c, o)));
}

/* The last S inputs of sequence n's history, channel c, into final_states (the
 * reference's final_states, one (n, c) at a time: read whole, then written). */
static void final_state(const dwconv_problem *p, int64_t n, int64_t c, float *history) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X];
    const void *in = p->operand[DWCONV_ROLE_STATE_IN].data;
    void *out = p->operand[DWCONV_ROLE_STATE_OUT].data;
    const int64_t S = p->state_length, C = d->channels;
    const int32_t *cu = indices(p, DWCONV_ROLE_CU_SEQLENS);
    const int64_t b = cu ? 0 : n, start = cu ? cu[n] : 0, end = cu ? cu[n + 1] : d->length;
    for (int64_t s = 0; s < S; s++) {
        int64_t j = end - S + s;
        history[s] = j >= start ? dwconv_load(d->dtype, x->data, dwconv_ref_at(x, b, c, j))
                     : in ? dwconv_load(d->dtype, in, (n * C + c) * S + S + (j - start))
                          : 0.0f;
    }
    for (int64_t s = 0; s < S; s++) dwconv_store(d->dtype, out, (n * C + c) * S + s, history[s]);
}

/* seq_idx: marks[b*L + o] = 1 where a tap of output o reads another sequence's
 * position (the plain forward read x there; the contract reads 0). */
static void mark_crossings(const dwconv_problem *p, unsigned char *marks, int nt) {
    const dwconv_desc *d = &p->desc;
    const int32_t *id = indices(p, DWCONV_ROLE_SEQ_IDX);
    const int64_t L = d->length, n = d->batch * L;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t bo = 0; bo < n; bo++) {
        const int64_t o = bo % L;
        unsigned char crosses = 0;
        for (int64_t k = 0; k < d->kernel_size; k++) {
            int64_t j = o - p->span + k * d->dilation;
            crosses |= j >= 0 && id[bo - o + j] != id[bo];
        }
        marks[bo] = crosses;
    }
}

static dwconv_status prefill(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                             int threads, char *msg) {
    const dwconv_desc *d = &p->desc;
    const int64_t B = d->batch, C = d->channels, L = d->length, S = p->state_length;
    const int64_t N = p->state_count;
    const int32_t *cu = indices(p, DWCONV_ROLE_CU_SEQLENS);
    const int32_t *id = indices(p, DWCONV_ROLE_SEQ_IDX);
    const int has_state = p->operand[DWCONV_ROLE_STATE_IN].data != NULL;
    const int has_final = p->operand[DWCONV_ROLE_STATE_OUT].data != NULL;
    const int nt = dwconv_cpu_thread_count(threads, (double)B * (double)C * (double)L *
                                                        (double)d->kernel_size);
    /* all scratch first: nothing is written unless everything can be */
    size_t history = dwconv_scratch_bytes(S + 1, 1, sizeof(float));
    size_t bytes = dwconv_size_add(dwconv_size_mul(history, (size_t)nt),
                                   id ? dwconv_scratch_bytes(B, L, 1) : 0);
    char *block = bytes < DWCONV_TOO_BIG ? aligned_alloc(64, bytes) : NULL;
    if (!block) return no_memory(msg);

    dwconv_problem plain = *p;
    plain.op = DWCONV_OP_FORWARD;
    plain.state_length = plain.state_count = 0;
    plain.operand[DWCONV_ROLE_STATE_IN].data = plain.operand[DWCONV_ROLE_STATE_OUT].data = NULL;
    plain.operand[DWCONV_ROLE_CU_SEQLENS].data = plain.operand[DWCONV_ROLE_SEQ_IDX].data = NULL;
    dwconv_status st = dwconv_cpu_fast_with(kernels, &plain, threads);
    if (st) {
        free(block);
        return st == DWCONV_ERROR_OUT_OF_MEMORY ? no_memory(msg) : st;
    }
    dwconv_cpu_set_last_paths(DWCONV_CPU_PATH_FORWARD_KERNELS);

    /* the outputs at the sequences' starts */
    if (cu) { /* B == 1: sequence n's first S outputs */
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t o = cu[n]; o < cu[n + 1] && o < (int64_t)cu[n] + S; o++)
                    exact_output(p, 0, c, o);
    } else if (id) {
        unsigned char *marks = (unsigned char *)(block + history * (size_t)nt);
        mark_crossings(p, marks, nt);
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t r = 0; r < B * C; r++)
            for (int64_t o = 0; o < L; o++)
                if (marks[r / C * L + o]) exact_output(p, r / C, r % C, o);
    } else if (has_state) { /* each row's first S outputs read its state */
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t r = 0; r < B * C; r++)
            for (int64_t o = 0; o < S && o < L; o++) exact_output(p, r / C, r % C, o);
    }
    if (has_final) {
#pragma omp parallel num_threads(nt)
        {
            float *h = (float *)(block + history * (size_t)dwconv_cpu_thread_index());
#pragma omp for schedule(static)
            for (int64_t nc = 0; nc < N * C; nc++) final_state(p, nc / C, nc % C, h);
        }
    }
    free(block);
    return DWCONV_SUCCESS;
}

static dwconv_status decode(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                            int threads, char *msg) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X], *y = &p->operand[DWCONV_ROLE_Y];
    const void *w = p->operand[DWCONV_ROLE_WEIGHT].data, *bias = p->operand[DWCONV_ROLE_BIAS].data;
    char *pool = p->operand[DWCONV_ROLE_STATE].data;
    const int32_t *slot = indices(p, DWCONV_ROLE_STATE_INDICES);
    const int32_t *seen = indices(p, DWCONV_ROLE_CACHE_SEQLENS);
    const int64_t B = d->batch, C = d->channels, K = d->kernel_size, T = d->length;
    const int64_t P = p->state_length;
    const size_t elem = dwconv_dtype_size(d->dtype);
    const int nt = dwconv_cpu_thread_count(
        threads, (double)B * (double)C * ((double)T * (double)K + 2.0 * (double)P));
    size_t weights = dwconv_scratch_bytes(C, K + 1, sizeof(float));
    size_t per_thread = dwconv_scratch_bytes(P + T, 64, sizeof(float));
    size_t bytes = dwconv_size_add(weights, dwconv_size_mul(per_thread, (size_t)nt));
    char *block = bytes < DWCONV_TOO_BIG ? aligned_alloc(64, bytes) : NULL;
    if (!block) return no_memory(msg);
    float *wf = (float *)block, *bf = wf + C * K;
    dwconv_cpu_set_last_paths(DWCONV_CPU_PATH_DECODE_KERNEL);

    /* work items: blocks of a sequence's channels, as large as the thread count allows
     * (each kernel call plans its permutes once), a multiple of 64 channels */
    const int64_t want = (DECODE_ITEMS_PER_THREAD * (int64_t)nt + B - 1) / B; /* per sequence */
    int64_t chans = (C + want - 1) / want;
    chans = chans < DECODE_BLOCK ? DECODE_BLOCK : (chans + 63) / 64 * 64;
    const int64_t blocks = (C + chans - 1) / chans, items = B * blocks;
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int64_t c = 0; c < C; c++) { /* weights transposed to [k][c], no division */
            for (int64_t k = 0; k < K; k++) wf[k * C + c] = dwconv_load(d->weight_dtype, w, c * K + k);
            bf[c] = bias ? dwconv_load(d->weight_dtype, bias, c) : 0.0f;
        }
        float *scratch = (float *)(block + weights + per_thread * (size_t)dwconv_cpu_thread_index());
#pragma omp for schedule(static)
        for (int64_t item = 0; item < items; item++) {
            const int64_t b = item / blocks, c0 = item % blocks * chans;
            const int64_t s = slot ? slot[b] : b;
            if (s < 0) continue; /* a padding entry */
            const dwconv_cpu_decode job = {
                .dtype = d->dtype, .kernel_size = K, .dilation = d->dilation, .span = p->span,
                .state_length = P, .tokens = T, .activation = d->activation,
                .channels = C, .weight_kc = wf, .bias = bf,
                .x = (const char *)x->data + (size_t)(b * x->stride[0]) * elem,
                .x_channel = x->stride[1], .x_token = x->stride[2],
                .y = (char *)y->data + (size_t)(b * y->stride[0]) * elem,
                .y_channel = y->stride[1], .y_token = y->stride[2],
                .state = pool ? pool + (size_t)(s * C * P) * elem : NULL,
                .seen = seen ? seen[b] : -1,
            };
            kernels->decode(&job, c0, c0 + chans < C ? c0 + chans : C, scratch);
        }
    }
    free(block);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_cpu_causal_with(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                                     int threads, char *msg) {
    if (p->op == DWCONV_OP_CAUSAL_UPDATE) return decode(kernels, p, threads, msg);
    return prefill(kernels, p, threads, msg);
}

dwconv_status dwconv_cpu_causal(const dwconv_problem *p, int threads, char *msg) {
    const dwconv_cpu_kernels *kernels = dwconv_cpu_kernels_active(msg, DWCONV_MSG_SIZE);
    if (!kernels) return DWCONV_ERROR_UNSUPPORTED;
    return dwconv_cpu_causal_with(kernels, p, threads, msg);
}
