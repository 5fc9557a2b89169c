/* NCL: rows (b, c) of L inputs, vectorized across outputs. Work items are rows, or
 * segments of rows when there are too few rows to keep every thread busy.
 *
 * Where a row is read with stride 1 or 2 and every tap is inside [0, L), the kernels
 * read x directly (f16/bf16 widened in registers). Everything else (the edges, larger
 * strides) goes through tiles staged in f32: for stride s, tap k reads phase
 * (k*d) mod s of the input at offset (k*d) / s, so each phase is gathered once into
 * its own buffer (with the padding applied) and every tap becomes a plain stride-1
 * stream again. */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>

#include "dwconv_indexing.h"
#include "dwconv_elements.h"
#include "fast.h"
#include "reference.h"

enum {
    MIN_TILE = 1024,       /* staged outputs per tile: the buffers stay in L1/L2 */
    MIN_SEGMENT = 2048,    /* outputs per work item when rows are split */
    ITEMS_PER_THREAD = 8,  /* enough items to even out the threads' shares */
    MAX_PHASES = 1024,     /* staging buffers per thread, at most (dwconv_cpu_ncl_fits) */
};

/* One phase of the staged input: taps k with k mod period == index. */
typedef struct ncl_phase {
    int64_t residue;    /* (index * d) mod s: where the phase starts */
    int64_t qmin, qmax; /* the offsets (k * d) / s of its first and last tap */
    int64_t offset;     /* of its buffer in a thread's staging area (floats) */
} ncl_phase;

typedef struct ncl_job {
    const dwconv_cpu_kernels *kernels;
    const dwconv_problem *plan;
    const void *x, *bias;
    void *y;
    const dwconv_operand *xt, *yt; /* their strides: rows anywhere, positions adjacent */
    int64_t K, s, d, pad, L, L_out;
    size_t elem; /* bytes per x and y element */
    int window;  /* conv_window: d == s (one phase, consecutive taps) and K >= 8 */
    int stream;  /* y is much larger than the caches: direct stretches store around them */
    int64_t overread;
    int64_t direct_begin, direct_end; /* outputs read straight from x (maybe none) */
    int64_t tile, period, phases;
    int64_t segment, segments;
    ncl_phase *phase;
    const float *weights; /* C*K in f32 */
    char *scratch;  /* every thread's ncl_scratch */
    int64_t stage_floats;
} ncl_job;

static int64_t gcd(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* ceil(a / b) for b > 0 and any sign of a, without overflow for any b */
static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b > 0); }

int dwconv_cpu_ncl_fits(const dwconv_problem *p) {
    const dwconv_desc *d = &p->desc;
    const int64_t s = d->stride, period = s / gcd(s, d->dilation);
    const int64_t phases = d->kernel_size < period ? d->kernel_size : period;
    /* a phase buffer holds a tile plus the phase's reach, about span / stride */
    const int64_t reach = p->span / s, row = d->length + p->output_length;
    return phases <= MAX_PHASES && reach <= 4 * row + MIN_TILE;
}

/* The geometry of one call: phases, tile, direct stretch, work split. */
static void plan_job(ncl_job *j, int nt) {
    const dwconv_desc *d = &j->plan->desc;
    const int64_t lanes = j->kernels->lanes, span = j->d * (j->K - 1);
    /* Shared windows pay off once the FMAs, not memory, are the limit; below that the
     * plain kernel streams better (bench/RESULTS-cpu.md, Notes: the window threshold). */
    j->window = j->d == j->s && j->K >= DWCONV_CPU_WINDOW_MIN_TAPS;
    j->overread = j->window ? j->kernels->overread : 0;
    j->stream = dwconv_cpu_streams(j->plan->operand[DWCONV_ROLE_Y].bytes);

    j->period = j->s / gcd(j->s, j->d);
    j->phases = j->K < j->period ? j->K : j->period;
    int64_t widest = 0, stage = 0;
    for (int64_t i = 0; i < j->phases; i++) {
        int64_t last = i + (j->K - 1 - i) / j->period * j->period; /* last tap of the phase */
        ncl_phase *p = &j->phase[i];
        p->residue = i * j->d % j->s;
        p->qmin = i * j->d / j->s;
        p->qmax = last * j->d / j->s;
        if (p->qmax - p->qmin > widest) widest = p->qmax - p->qmin;
    }
    /* A tile at least as long as a phase's reach keeps staging within twice the work. */
    j->tile = dwconv_round_up(widest > MIN_TILE ? widest : MIN_TILE, 64);
    if (j->tile > dwconv_round_up(j->L_out, lanes)) j->tile = dwconv_round_up(j->L_out, lanes);
    for (int64_t i = 0; i < j->phases; i++) {
        j->phase[i].offset = stage;
        stage += dwconv_round_up(j->tile + j->phase[i].qmax - j->phase[i].qmin + j->overread, 16);
    }
    j->stage_floats = stage;

    /* Rows of stride 1 or 2 are read straight from x (widened in registers), except
     * under conv_window (stride 1 and f32 only); the rest is staged. Stride 2 reads one
     * element past the last tap. */
    j->direct_begin = j->direct_end = 0;
    if (j->window ? j->s == 1 && d->dtype == DWCONV_F32 : j->s <= 2) {
        int64_t reach = span + j->overread + (j->s == 2);
        j->direct_begin = dwconv_interior_begin(j->pad, j->s);
        if (j->direct_begin > j->L_out) j->direct_begin = j->L_out;
        j->direct_end = dwconv_interior_end(j->L, j->pad, j->s, reach, j->L_out, j->direct_begin);
    }

    const int64_t rows = d->batch * d->channels, wanted = (int64_t)nt * ITEMS_PER_THREAD;
    j->segments = 1;
    if (rows < wanted) {
        j->segments = ceil_div(wanted, rows);
        int64_t most = ceil_div(j->L_out, MIN_SEGMENT);
        if (j->segments > most) j->segments = most;
    }
    j->segment = dwconv_round_up(ceil_div(j->L_out, j->segments), lanes);
    j->segments = ceil_div(j->L_out, j->segment);
}

/* buf[m] = xp(base + m*s) for m in [from, to): positions outside [0, L), scalar. */
static void stage_padding(const ncl_job *j, const void *x_row, int64_t base, int64_t from,
                          int64_t to, float *buf) {
    const dwconv_desc *d = &j->plan->desc;
    for (int64_t m = from; m < to; m++) {
        int64_t i = dwconv_source_index(d->padding_mode, base + m * j->s, j->L);
        buf[m] = i < 0 ? 0.0f : dwconv_load(d->dtype, x_row, i);
    }
}

/* buf[m] = xp(base + m*s) for m < count, widened to f32: the positions inside [0, L)
 * through the flavour's gather, the padding around them one by one. */
static void stage_phase(const ncl_job *j, const void *x_row, int64_t base, int64_t count,
                        float *buf) {
    int64_t inside_begin = base >= 0 ? 0 : ceil_div(-base, j->s);
    int64_t inside_end = j->L - base > 0 ? ceil_div(j->L - base, j->s) : 0;
    if (inside_end > count) inside_end = count;
    if (inside_begin > inside_end) inside_begin = inside_end;
    stage_padding(j, x_row, base, 0, inside_begin, buf);
    if (inside_end > inside_begin)
        j->kernels->gather(j->plan->desc.dtype,
                           (const char *)x_row + (size_t)(base + inside_begin * j->s) * j->elem,
                           j->s, inside_end - inside_begin, buf + inside_begin);
    stage_padding(j, x_row, base, inside_end, count, buf);
}

/* One thread's part of the scratch block. */
typedef struct ncl_scratch {
    const void **direct_tap; /* K: into x, for the direct stretch of a row */
    const void **staged_tap; /* K: into the phase buffers; the same for every tile */
    float *stage;             /* the phase buffers */
    float *out;               /* one tile of f32 outputs */
} ncl_scratch;

static size_t scratch_bytes(const ncl_job *j) {
    size_t taps = dwconv_scratch_bytes(j->K, 1, sizeof(float *));
    return dwconv_size_add(dwconv_size_add(taps, taps),
                           dwconv_scratch_bytes(j->stage_floats + j->tile, 1, sizeof(float)));
}

static ncl_scratch thread_scratch(const ncl_job *j, int thread) {
    char *base = j->scratch + scratch_bytes(j) * (size_t)thread;
    size_t taps = dwconv_scratch_bytes(j->K, 1, sizeof(float *));
    ncl_scratch s = {(const void **)base, (const void **)(base + taps),
                     (float *)(base + 2 * taps), NULL};
    s.out = s.stage + j->stage_floats;
    for (int64_t k = 0; k < j->K; k++) { /* tap k: its phase's buffer at offset k*d/s */
        const ncl_phase *p = &j->phase[k % j->period];
        s.staged_tap[k] = s.stage + p->offset + (k * j->d / j->s - p->qmin);
    }
    return s;
}

/* Outputs [o0, o0 + n) of one row through the staging buffers, n <= tile. */
static void staged_tile(const ncl_job *j, dwconv_cpu_taps *taps, const void *x_row, void *y_row,
                        int64_t o0, int64_t n, const ncl_scratch *s) {
    const dwconv_cpu_kernels *k = j->kernels;
    const dwconv_dtype dtype = j->plan->desc.dtype;
    const int64_t n_pad = dwconv_round_up(n, k->lanes);
    for (int64_t i = 0; i < j->phases; i++) {
        const ncl_phase *p = &j->phase[i];
        float *buf = s->stage + p->offset;
        int64_t reach = p->qmax - p->qmin, needed = n + reach;
        stage_phase(j, x_row, o0 * j->s - j->pad + p->residue + p->qmin * j->s, needed, buf);
        for (int64_t m = needed; m < n_pad + reach + j->overread; m++) buf[m] = 0.0f;
    }
    char *y_tile = (char *)y_row + (size_t)o0 * j->elem;
    int straight = dtype == DWCONV_F32 && n == n_pad; /* whole vectors: write y itself */
    int stream = j->stream && (uintptr_t)y_tile % 64 == 0;
    taps->tap = s->staged_tap;
    taps->dtype = DWCONV_F32;
    taps->stride = 1;
    taps->stream = straight && stream;
    (j->window ? k->conv_window : k->conv)(taps, n_pad, straight ? (void *)y_tile : s->out);
    taps->stream = 0;
    if (!straight) k->narrow(dtype, s->out, n, y_tile, stream);
}

static void staged_range(const ncl_job *j, dwconv_cpu_taps *taps, const void *x_row, void *y_row,
                         int64_t begin, int64_t end, const ncl_scratch *s) {
    for (int64_t o0 = begin; o0 < end; o0 += j->tile)
        staged_tile(j, taps, x_row, y_row, o0, end - o0 < j->tile ? end - o0 : j->tile, s);
}

/* Outputs [begin, end) of row `row`: staged edges around a direct middle. */
static void row_segment(const ncl_job *j, int64_t row, int64_t begin, int64_t end,
                        const ncl_scratch *s) {
    const dwconv_desc *d = &j->plan->desc;
    const int64_t c = row % d->channels, lanes = j->kernels->lanes;
    const int64_t b = row / d->channels;
    const void *x_row = (const char *)j->x + (size_t)dwconv_ref_at(j->xt, b, c, 0) * j->elem;
    void *y_row = (char *)j->y + (size_t)dwconv_ref_at(j->yt, b, c, 0) * j->elem;
    dwconv_cpu_taps taps = {
        .weight = j->weights + c * j->K,
        .kernel_size = j->K,
        .bias = j->bias ? dwconv_load(d->weight_dtype, j->bias, c) : 0.0f,
        .activation = d->activation,
    };
    int64_t da = begin > j->direct_begin ? begin : j->direct_begin;
    int64_t db = end < j->direct_end ? end : j->direct_end;
    if (j->stream && db - da >= 64) { /* start where y is 64-byte aligned */
        uintptr_t misaligned = ((uintptr_t)y_row + (size_t)da * j->elem) % 64;
        if (misaligned % j->elem == 0) {
            da += (int64_t)((64 - misaligned) % 64 / j->elem);
            taps.stream = 1;
        }
    }
    if (db - da >= lanes) {
        db = da + (db - da) / lanes * lanes;
        for (int64_t k = 0; k < j->K; k++)
            s->direct_tap[k] = (const char *)x_row + (size_t)(da * j->s - j->pad + k * j->d) * j->elem;
        taps.tap = s->direct_tap;
        taps.dtype = d->dtype;
        taps.stride = (int)j->s;
        (j->window ? j->kernels->conv_window : j->kernels->conv)(
            &taps, db - da, (char *)y_row + (size_t)da * j->elem);
        taps.stream = 0;
    } else {
        da = db = begin;
    }
    staged_range(j, &taps, x_row, y_row, begin, da, s);
    staged_range(j, &taps, x_row, y_row, db, end, s);
}

dwconv_status dwconv_cpu_fast_ncl(const dwconv_cpu_kernels *kernels, const dwconv_problem *plan,
                                  int nt) {
    const dwconv_desc *d = &plan->desc;
    const void *x = plan->operand[DWCONV_ROLE_X].data, *weight = plan->operand[DWCONV_ROLE_WEIGHT].data;
    const void *bias = plan->operand[DWCONV_ROLE_BIAS].data;
    void *y = plan->operand[DWCONV_ROLE_Y].data;
    ncl_job j = {
        .kernels = kernels, .plan = plan, .x = x, .bias = bias, .y = y,
        .xt = &plan->operand[DWCONV_ROLE_X], .yt = &plan->operand[DWCONV_ROLE_Y],
        .K = d->kernel_size, .s = d->stride, .d = d->dilation, .pad = d->pad_left,
        .L = d->length, .L_out = plan->output_length, .elem = dwconv_dtype_size(d->dtype),
    };
    const int64_t period = j.s / gcd(j.s, j.d), phases = j.K < period ? j.K : period;
    j.phase = malloc(dwconv_scratch_bytes(phases, 1, sizeof(ncl_phase)));
    if (!j.phase) return DWCONV_ERROR_OUT_OF_MEMORY;
    plan_job(&j, nt);

    /* f32 weights are used where they are; f16 and bf16 ones are widened once */
    const int widen = d->weight_dtype != DWCONV_F32;
    size_t weights_bytes = widen ? dwconv_scratch_bytes(d->channels, j.K, sizeof(float)) : 0;
    char *block = aligned_alloc(64, dwconv_size_add(weights_bytes,
                                                    dwconv_size_mul(scratch_bytes(&j), (size_t)nt)));
    if (!block) {
        free(j.phase);
        return DWCONV_ERROR_OUT_OF_MEMORY;
    }
    j.weights = widen ? (float *)block : (const float *)weight;
    j.scratch = block + weights_bytes;

    const int64_t CK = d->channels * j.K, items = d->batch * d->channels * j.segments;
#pragma omp parallel num_threads(nt)
    {
        if (widen) {
            float *widened = (float *)block;
#pragma omp for schedule(static)
            for (int64_t i = 0; i < CK; i++) widened[i] = dwconv_load(d->weight_dtype, weight, i);
        }
        const ncl_scratch scratch = thread_scratch(&j, dwconv_cpu_thread_index());
#pragma omp for schedule(static)
        for (int64_t item = 0; item < items; item++) {
            int64_t row = item / j.segments, begin = item % j.segments * j.segment;
            int64_t end = begin + j.segment < j.L_out ? begin + j.segment : j.L_out;
            row_segment(&j, row, begin, end, &scratch);
        }
        kernels->fence();
    }
    free(block);
    free(j.phase);
    return DWCONV_SUCCESS;
}
