/* The backward pass on the cpu: rows (b, c) over OpenMP threads, each row on its own
 * exactly as the contract orders it (docs/numerics.md, "The backward pass"), so the
 * bits are the reference's whatever the thread count and the SIMD flavour.
 *
 * A row's taps are staged in f32 once, as they read (padding and carried state
 * applied): xp[q] is padded position q - pad_left; for f32 x with adjacent positions
 * only the edge chunks are staged and the chunks between read x where it lies (f32 dy
 * likewise). From them and dy:
 *   g   = dy * act'(z), z recomputed by the forward's conv kernel (no activation);
 *   dx  for inputs whose contributions all come straight from outputs in range (the
 *       interior [A, B)): dx[i] is the fma chain over o ascending, which for stride 1
 *       is tap k descending: conv over g with the taps (and weights) reversed. The
 *       other inputs (the edges, padding's sources, the state) are scattered from the
 *       outputs that reach them, in the reference's (o, k) order;
 *   dweight, dbias: the chunk partials (grad_partials: each chunk's chains, several
 *       chunks side by side in vectors), the row's tree, kept per row; after all
 *       rows, each channel's tree over b, in b order.
 * Rows whose staging would outgrow the data (a span far beyond the row) are computed
 * per output, as the reference does. */
#include <config.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "dwconv_elements.h"
#include "dwconv_grad.h"
#include "dwconv_indexing.h"
#include "fast.h"
#include "reference.h"

enum { SLACK = 256 };    /* floats past every buffer: vector over-reads stay inside */
enum { ROW_GROUP = 8 }; /* rows a work item: one after another, the next one prefetched */

typedef struct grad_job {
    const dwconv_cpu_kernels *kernels;
    const dwconv_problem *p;
    int64_t B, C, K, L, L_out, S, s, d, pad, span;
    int64_t reach;      /* padded positions the taps read: [-pad, reach - pad) */
    int64_t A, Bi;      /* inputs [A, Bi) are gathered, the others scattered */
    int64_t left_end;   /* outputs [0, left_end) and [right_begin, L_out) reach */
    int64_t right_begin;/* the scattered inputs */
    int staged, want_dx, want_dw, want_db;
    int direct;         /* f32 x with adjacent positions: outputs [o_left, o_right) read */
    int64_t o_left;     /* x where it lies (ends on groups of chunks); only the edges are */
    int64_t o_right;    /* staged */
    int dy_direct;      /* f32 dy with adjacent positions: read where it lies */
    int stream;         /* dx is larger than the caches: stored around them */
    int dx_direct;      /* dx summed where it lies (direct_dx) */
    int dx_nt;          /* ... and, streamed, its interior stored around the caches */
    const float *weight; /* C*K in f32 */
    const float *bias;   /* C in f32, or NULL */
    float *rows;         /* [c][b][K+1]: each row's sums */
    char *scratch;
    size_t thread_bytes;
} grad_job;

/* One thread's buffers. */
typedef struct grad_scratch {
    float *xp, *dy, *g, *acc, *part, *tree, *rweight;
    const void **tap, **rtap;
} grad_scratch;

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b > 0); }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The inputs gathered: every contribution to them comes from their own position (no
 * padding reads them) of an output in range. */
static void plan_interior(grad_job *j) {
    const int64_t L = j->L, pad = j->pad;
    const int64_t right = j->reach - pad - L; /* padded positions read past the row */
    int64_t A = max64(0, j->span - pad), B = min64(L, (j->L_out - 1) * j->s - pad + 1);
    switch (j->p->desc.padding_mode) {
    case DWCONV_PAD_REFLECT:
        if (pad > 0) A = max64(A, pad + 1);
        if (right > 0) B = min64(B, L - 1 - right);
        break;
    case DWCONV_PAD_REPLICATE:
        if (pad > 0) A = max64(A, 1);
        if (right > 0) B = min64(B, L - 1);
        break;
    case DWCONV_PAD_CIRCULAR:
        if (pad > 0) B = min64(B, L - pad);
        if (right > 0) A = max64(A, right);
        break;
    default: break;
    }
    j->A = min64(A, L);
    j->Bi = max64(B, j->A);
    j->left_end = min64(j->L_out, ceil_div(j->A + pad, j->s));
    j->right_begin = max64(j->left_end, max64(0, ceil_div(j->Bi + pad - j->span, j->s)));
}

/* One thread's buffers at base (NULL: only their size); returns their bytes. */
/* Which operands are read where they lie; dx streamed when large. */
static void plan_direct(grad_job *j) {
    const dwconv_problem *p = j->p;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X], *dy = &p->operand[DWCONV_ROLE_DY];
    const dwconv_operand *dx = &p->operand[DWCONV_ROLE_DX];
    const int f32 = p->desc.dtype == DWCONV_F32;
    j->dy_direct = f32 && dy->stride[2] == 1;
    j->stream = dx->data && dwconv_cpu_streams(dx->bytes);
    /* outputs whose taps (and the kernels' over-reads, below 64 floats) lie in x, in
     * whole groups of a vector's lanes of chunks (the edges are staged in groups too,
     * so that every group of a row takes the kernels' vector path) */
    const int64_t group = DWCONV_GRAD_CHUNK * j->kernels->lanes;
    j->o_left = min64(j->L_out, dwconv_round_up(dwconv_interior_begin(j->pad, j->s), group));
    int64_t end = dwconv_interior_end(j->L, j->pad, j->s, j->span + 64, j->L_out, j->o_left);
    j->o_right = end == j->L_out ? end : end / group * group;
    j->dx_direct = f32 && dx->data && dx->stride[2] == 1 && j->S == 0 &&
                   !p->operand[DWCONV_ROLE_DSTATE_IN].data &&
                   !p->operand[DWCONV_ROLE_DSTATE_OUT].data;
    j->dx_nt = j->dx_direct && j->stream;
    j->direct = j->staged && f32 && x->stride[2] == 1 && j->o_right > j->o_left;
}

static size_t thread_layout(const grad_job *j, char *base, grad_scratch *s) {
    const int64_t outs = dwconv_round_up(j->L_out, 64) + SLACK;
    const int64_t chunks = dwconv_grad_chunks(j->L_out);
    size_t at = 0;
#define TAKE(field, count, type)                                                  \
    s->field = base ? (void *)(base + at) : NULL;                                 \
    at = dwconv_size_add(at, dwconv_scratch_bytes(count, 1, sizeof(type)))
    TAKE(xp, j->staged ? 2 * j->reach + 3 * SLACK : 0, float);
    TAKE(dy, outs, float);
    TAKE(g, outs, float);
    TAKE(acc, j->S + j->L + SLACK, float);
    TAKE(part, chunks * (j->K + 1), float);
    TAKE(tree, j->B, float);
    TAKE(rweight, j->K, float);
    TAKE(tap, j->K, void *);
    TAKE(rtap, j->K, void *);
#undef TAKE
    return at;
}

static grad_scratch thread_scratch(const grad_job *j, int thread) {
    grad_scratch s;
    thread_layout(j, j->scratch + j->thread_bytes * (size_t)thread, &s);
    return s;
}

/* What padded position jp reads: x, the state before the row, or the padding. */
static float padded_value(const grad_job *j, const void *x_row, int64_t xs, int64_t b, int64_t c,
                          int64_t jp) {
    const dwconv_problem *p = j->p;
    const void *state = p->operand[DWCONV_ROLE_STATE_IN].data;
    if (jp < 0 && j->S > 0) /* (the causal backward: pad == S, so jp >= -S) */
        return state ? dwconv_load(p->desc.dtype, state, (b * j->C + c) * j->S + j->S + jp) : 0.0f;
    int64_t i = dwconv_source_index(p->desc.padding_mode, jp, j->L);
    return i < 0 ? 0.0f : dwconv_load(p->desc.dtype, x_row, i * xs);
}

/* Where padded position jp's gradient goes: a slot of acc ([state, x]), or -1. */
static int64_t gradient_slot(const grad_job *j, int64_t jp) {
    if (jp < 0 && j->S > 0) return j->S + jp;
    int64_t i = dwconv_source_index(j->p->desc.padding_mode, jp, j->L);
    return i < 0 ? -1 : j->S + i;
}

/* The padded positions the taps of outputs [o0, o1) read: buf[q] = position
 * o0*s - pad + q; zeros after them. Returns the floats used, slack included. */
static int64_t stage_window(const grad_job *j, const void *x_row, int64_t xs, int64_t b,
                            int64_t c, int64_t o0, int64_t o1, float *buf) {
    const int64_t first = o0 * j->s - j->pad, count = (o1 - 1 - o0) * j->s + j->span + 1;
    const int64_t lo = min64(max64(-first, 0), count), hi = max64(min64(j->L - first, count), lo);
    for (int64_t q = 0; q < lo; q++) buf[q] = padded_value(j, x_row, xs, b, c, first + q);
    if (hi > lo)
        j->kernels->gather(j->p->desc.dtype, (const char *)x_row + (size_t)((first + lo) * xs) *
                           dwconv_dtype_size(j->p->desc.dtype), xs, hi - lo, buf + lo);
    for (int64_t q = hi; q < count; q++) buf[q] = padded_value(j, x_row, xs, b, c, first + q);
    memset(buf + count, 0, sizeof(float) * SLACK);
    return dwconv_round_up(count + SLACK, 16);
}

/* A stretch of outputs [begin, end) whose tap k of output o is x0[(o - begin)*s + k*d]. */
typedef struct tap_segment {
    int64_t begin, end;
    const float *x0;
} tap_segment;

/* The row's taps: staged whole, or (direct) the edges staged and x read in between.
 * Returns the number of segments. */
static int row_segments(const grad_job *j, const grad_scratch *sc, const void *x_row,
                        int64_t xs, int64_t b, int64_t c, tap_segment *seg) {
    if (!j->direct) {
        stage_window(j, x_row, xs, b, c, 0, j->L_out, sc->xp);
        seg[0] = (tap_segment){0, j->L_out, sc->xp};
        return 1;
    }
    int n = 0;
    float *buf = sc->xp;
    if (j->o_left > 0) {
        seg[n++] = (tap_segment){0, j->o_left, buf};
        buf += stage_window(j, x_row, xs, b, c, 0, j->o_left, buf);
    }
    seg[n++] = (tap_segment){j->o_left, j->o_right, (const float *)x_row + j->o_left * j->s - j->pad};
    if (j->o_right < j->L_out) {
        seg[n++] = (tap_segment){j->o_right, j->L_out, buf};
        stage_window(j, x_row, xs, b, c, j->o_right, j->L_out, buf);
    }
    return n;
}

/* dx[i] as one chain over the outputs that read it and exist (o ascending, tap k
 * descending): an interior input's leftovers, and the row ends under zeros padding
 * (no state), where a padded position is read by one output's one tap at most and no
 * input has another source. Stride and dilation 1: g[i + pad - (K-1) + m] against the
 * reversed weights rw, both ascending, by the flavour's fma. */
static float input_chain(const grad_job *j, const float *g, const float *w, const float *rw, int64_t i) {
    if (j->s == 1 && j->d == 1) {
        const int64_t first = i + j->pad - (j->K - 1);
        const int64_t lo = max64(0, -first), hi = min64(j->K, j->L_out - first);
        return hi > lo ? j->kernels->fma_dot(g + first + lo, rw + lo, hi - lo, 0.0f) : 0.0f;
    }
    float acc = 0.0f;
    for (int64_t k = j->K - 1; k >= 0; k--) {
        const int64_t t = i + j->pad - k * j->d; /* o * s */
        if (t < 0 || t % j->s != 0) continue;
        if (t / j->s >= j->L_out) break; /* (o only grows as k falls) */
        acc = DWCONV_FMAF(g[t / j->s], w[k], acc);
    }
    return acc;
}

static int special_slot(const grad_job *j, int64_t slot) {
    return slot >= 0 && (slot < j->S + j->A || slot >= j->S + j->Bi);
}

/* The next row's x and dy (and, summed where it lies, dx: with intent to write) are
 * prefetched into L2 a slice at a time while this row is computed in pieces of PIECE
 * outputs (dx's conv in pieces of DX_PIECE), so that the next row starts from the cache
 * rather than waiting on a stream the prefetchers take up again at every 4 KiB page.
 * The slices are kept small: a core holds only so many lines in flight, and a slice
 * of more stalls at its prefetch instructions with nothing computed meanwhile (the
 * sizes measured: bench/RESULTS-cpu.md, "Backward: smaller prefetch slices"). */
enum {
    PIECE = 1024,   /* outputs: 16 chunks, a multiple of every flavour's lanes */
    DX_PIECE = 256, /* a divisor of PIECE, a multiple of every flavour's lanes */
};
_Static_assert(PIECE % DX_PIECE == 0, "a weight piece after every PIECE of dx");

typedef struct row_prefetch {
    const char *at[3]; /* x, dy, dx of the next row (NULL: not prefetched) */
    int64_t lines[3];
    int64_t done, step; /* lines prefetched so far, and per piece */
} row_prefetch;

static void prefetch_slice(row_prefetch *f) {
    if (!f) return;
    const int64_t end = f->done + f->step;
    for (int s = 0; s < 3; s++) {
        if (!f->at[s]) continue;
        const int64_t stop = min64(end, f->lines[s]);
        for (int64_t i = f->done; i < stop; i++) {
            if (s == 2) __builtin_prefetch(f->at[s] + i * 64, 1, 2);
            else __builtin_prefetch(f->at[s] + i * 64, 0, 2);
        }
    }
    f->done = end;
}

/* The next row's streams: those with adjacent positions. */
static void plan_prefetch(const grad_job *j, int64_t r, row_prefetch *f) {
    const dwconv_problem *p = j->p;
    const int64_t b = r / j->C, c = r % j->C;
    const size_t elem = dwconv_dtype_size(p->desc.dtype);
    const dwconv_role role[3] = {DWCONV_ROLE_X, DWCONV_ROLE_DY, DWCONV_ROLE_DX};
    const int64_t count[3] = {j->L, j->L_out, j->L};
    int64_t most = 0;
    for (int s = 0; s < 3; s++) {
        const dwconv_operand *o = &p->operand[role[s]];
        f->at[s] = NULL, f->lines[s] = 0;
        if (!o->data || o->stride[2] != 1 || (s == 0 && !(j->staged && (j->want_dw || p->desc.activation))) ||
            (s == 2 && (!j->dx_direct || j->dx_nt)))
            continue;
        const uintptr_t first = (uintptr_t)((const char *)o->data + (size_t)dwconv_ref_at(o, b, c, 0) * elem);
        const uintptr_t last = first + (uintptr_t)count[s] * elem;
        f->at[s] = (const char *)(first / 64 * 64);
        f->lines[s] = (int64_t)((last + 63) / 64 - first / 64);
        most = max64(most, f->lines[s]);
    }
    const int64_t pieces = (j->want_dx ? ceil_div(j->L, DX_PIECE) : 0) +
                           (j->want_dw ? ceil_div(j->L_out, PIECE) : 0) +
                           (p->desc.activation != DWCONV_ACT_NONE ? ceil_div(j->L_out, PIECE) : 0);
    f->done = 0;
    f->step = pieces > 0 ? ceil_div(most, pieces) : most;
}

/* Where the row's chunk partials stand: the next PIECE outputs of segment i from o. */
typedef struct weight_pieces {
    const float *g;
    const tap_segment *seg;
    int segs, i;
    int64_t o;
} weight_pieces;

/* The next piece of the row's chunk partials; 0 when none is left. Segments, and so
 * pieces, start on chunk boundaries: each chunk's chains are computed whole, by
 * whichever kernel path, to the same bits, in whatever order the pieces come. */
static int weight_piece(const grad_job *j, const grad_scratch *sc, weight_pieces *wp) {
    while (wp->i < wp->segs && wp->o >= wp->seg[wp->i].end)
        if (++wp->i < wp->segs) wp->o = wp->seg[wp->i].begin;
    if (wp->i >= wp->segs) return 0;
    const tap_segment *sg = &wp->seg[wp->i];
    for (int64_t k = 0; k < j->K; k++) sc->tap[k] = sg->x0 + (wp->o - sg->begin) * j->s + k * j->d;
    j->kernels->grad_partials(wp->g + wp->o, (const float *const *)sc->tap, j->s, j->K,
                              min64(PIECE, sg->end - wp->o), j->want_db,
                              sc->part + wp->o / DWCONV_GRAD_CHUNK * (j->K + 1));
    wp->o += PIECE;
    return 1;
}

/* acc[S + i] = dx[i] before the final states' gradient; acc[s] = dinitial_states[s].
 * acc is sc->acc, or (direct_dx) the row of dx itself. */
static void input_gradient(const grad_job *j, const grad_scratch *sc, const float *g,
                           const float *w, float *acc, row_prefetch *f, weight_pieces *wp) {
    const int64_t S = j->S, K = j->K;
    float *rw = sc->rweight;
    for (int64_t m = 0; m < K; m++) rw[m] = w[K - 1 - m];
    if (S == 0 && j->p->desc.padding_mode == DWCONV_PAD_ZEROS) {
        for (int64_t i = 0; i < j->A; i++) acc[i] = input_chain(j, g, w, rw, i); /* the row ends */
        for (int64_t i = j->Bi; i < j->L; i++) acc[i] = input_chain(j, g, w, rw, i);
    } else {
        for (int64_t i = 0; i < S + j->A; i++) acc[i] = 0.0f;
        for (int64_t i = S + j->Bi; i < S + j->L; i++) acc[i] = 0.0f;
        /* the scattered inputs, from the outputs that reach them, in (o, k) order */
        for (int64_t o = 0; o < j->L_out; o++) {
            if (o == j->left_end) o = j->right_begin;
            if (o >= j->L_out) break;
            for (int64_t k = 0; k < K; k++) {
                int64_t slot = gradient_slot(j, o * j->s + k * j->d - j->pad);
                if (special_slot(j, slot)) acc[slot] = DWCONV_FMAF(g[o], w[k], acc[slot]);
            }
        }
    }
    /* the interior: conv over g, taps and weights reversed (stride 1) */
    int64_t i = j->A;
    const int64_t lanes = j->kernels->lanes;
    if (j->s == 1 && j->Bi - j->A >= lanes) {
        int stream = 0;
        if (j->dx_nt && acc != sc->acc) { /* dx's row: from a 64-byte boundary on, streamed */
            for (; i < j->Bi && (uintptr_t)(acc + S + i) % 64; i++) acc[S + i] = input_chain(j, g, w, rw, i);
            stream = (uintptr_t)(acc + S + i) % 64 == 0;
        }
        const int64_t n = (j->Bi - i) / lanes * lanes;
        dwconv_cpu_taps taps = {.tap = sc->rtap, .dtype = DWCONV_F32, .stride = 1,
                                .weight = rw, .kernel_size = K, .bias = 0.0f,
                                .activation = DWCONV_ACT_NONE, .stream = stream};
        /* adjacent taps (dilation 1), long kernels: conv_window, which reads up to
         * `overread` floats past g[i + pad + outputs - 1]; within the scratch's slack,
         * but dy read where it lies ends with its row: there only the outputs whose
         * over-read stays in the row */
        int64_t n_window = 0;
        if (j->d == 1 && K >= DWCONV_CPU_WINDOW_MIN_TAPS) {
            n_window = n;
            if (g != sc->g && g != sc->dy)
                n_window = min64(n, max64(0, j->L_out - j->kernels->overread - j->pad - i) / lanes * lanes);
        }
        for (int64_t at = 0; at < n; at += DX_PIECE) { /* (each output on its own) */
            const int64_t count = min64(DX_PIECE, n - at);
            const int64_t windowed = min64(count, max64(0, n_window - at)); /* a multiple of lanes */
            for (int64_t m = 0; m < K; m++)
                sc->rtap[m] = g + (i + at + j->pad - (K - 1 - m) * j->d);
            if (windowed) j->kernels->conv_window(&taps, windowed, acc + S + i + at);
            for (int64_t m = 0; windowed < count && m < K; m++) sc->rtap[m] = (const float *)sc->rtap[m] + windowed;
            if (windowed < count) j->kernels->conv(&taps, count - windowed, acc + S + i + at + windowed);
            prefetch_slice(f);
            if (wp && (at + count) % PIECE == 0 && weight_piece(j, sc, wp)) /* one a PIECE */
                prefetch_slice(f);
        }
        i += n;
    }
    for (; i < j->Bi; i++) acc[S + i] = input_chain(j, g, w, rw, i);
}

/* The row's chunk partials, then its tree: rows[c][b][k]. The K + 1 trees go side by
 * side in part itself (dwconv_grad_trees' sums, a vector of trees at a time), rather
 * than one tap at a time through a copy. */
static void row_sums(const grad_job *j, const grad_scratch *sc, int64_t b,
                     int64_t c) {
    const int64_t w = j->K + 1;
    float *row = j->rows + (c * j->B + b) * w;
    j->kernels->grad_trees(sc->part, dwconv_grad_chunks(j->L_out), w);
    memcpy(row, sc->part, sizeof(float) * (size_t)w);
}

/* g of row (b, c) into sc->g, or dy itself (returned); with an activation in pieces of
 * PIECE outputs, the next row's prefetch advanced after each (f may be NULL). */
static const float *output_gradient(const grad_job *j, const grad_scratch *sc, int64_t b,
                                    int64_t c, const float *w, const tap_segment *seg, int segs,
                                    row_prefetch *f) {
    const dwconv_problem *p = j->p;
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *dy = &p->operand[DWCONV_ROLE_DY];
    const char *dy_row = (const char *)dy->data + (size_t)dwconv_ref_at(dy, b, c, 0) * dwconv_dtype_size(d->dtype);
    const float *dyf = (const float *)dy_row;
    if (!j->dy_direct) {
        j->kernels->gather(d->dtype, dy_row, dy->stride[2], j->L_out, sc->dy);
        dyf = sc->dy;
    }
    if (d->activation == DWCONV_ACT_NONE) return dyf;
    const float bias = j->bias ? j->bias[c] : 0.0f;
    float *z = sc->g;
    for (int i = 0; i < segs; i++) { /* in order: a segment's rounded-up tail is rewritten */
        for (int64_t o0 = seg[i].begin; o0 < seg[i].end; o0 += PIECE) {
            const int64_t n = min64(PIECE, seg[i].end - o0);
            const float *x0 = seg[i].x0 + (o0 - seg[i].begin) * j->s;
            if (j->s <= 2) {
                for (int64_t k = 0; k < j->K; k++) sc->tap[k] = x0 + k * j->d;
                dwconv_cpu_taps taps = {.tap = sc->tap, .dtype = DWCONV_F32, .stride = (int)j->s,
                                        .weight = w, .kernel_size = j->K, .bias = bias,
                                        .activation = DWCONV_ACT_NONE};
                /* adjacent taps, long kernels: conv_window (its over-read stays in the
                 * staged slack, or in the 64 floats a direct segment keeps in x) */
                const int window = j->s == 1 && j->d == 1 && j->K >= DWCONV_CPU_WINDOW_MIN_TAPS;
                (window ? j->kernels->conv_window : j->kernels->conv)(&taps, dwconv_round_up(n, j->kernels->lanes), z + o0);
            } else {
                for (int64_t o = 0; o < n; o++) {
                    float acc = bias;
                    for (int64_t k = 0; k < j->K; k++) acc = DWCONV_FMAF(x0[o * j->s + k * j->d], w[k], acc);
                    z[o0 + o] = acc;
                }
            }
            /* the piece's own outputs only: a rounded-up tail is the next piece's z */
            j->kernels->act_grad(d->activation, z + o0, dyf + o0, n, sc->g + o0);
            prefetch_slice(f);
        }
    }
    return sc->g;
}

/* dx (with the final states' gradient) and dinitial_states of row (b, c) from acc. */
static void store_input_gradient(const grad_job *j, float *acc, int64_t b, int64_t c) {
    const dwconv_problem *p = j->p;
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *dx = &p->operand[DWCONV_ROLE_DX];
    const void *dstate_out = p->operand[DWCONV_ROLE_DSTATE_OUT].data;
    void *dstate_in = p->operand[DWCONV_ROLE_DSTATE_IN].data;
    const int64_t S = j->S, L = j->L, row = b * j->C + c;
    for (int64_t s = 0; dstate_out && s < S; s++)
        acc[L + s] = acc[L + s] + dwconv_load(d->dtype, dstate_out, row * S + s);
    if (dx->data) {
        char *dx_row = (char *)dx->data + (size_t)dwconv_ref_at(dx, b, c, 0) * dwconv_dtype_size(d->dtype);
        if (dx->stride[2] == 1)
            j->kernels->narrow(d->dtype, acc + S, L, dx_row, j->stream && (uintptr_t)dx_row % 64 == 0);
        else
            for (int64_t i = 0; i < L; i++) dwconv_store(d->dtype, dx_row, i * dx->stride[2], acc[S + i]);
    }
    for (int64_t s = 0; dstate_in && s < S; s++) dwconv_store(d->dtype, dstate_in, row * S + s, acc[s]);
}

/* Row (b, c) of dx when the input gradient is summed where it lies (j->dx_direct:
 * store_input_gradient would only copy acc there), else NULL. dx overlaps no input
 * (the core checks), so writing it early is safe; each element is still written once,
 * by the same chain. */
static float *direct_dx(const grad_job *j, int64_t b, int64_t c) {
    const dwconv_operand *dx = &j->p->operand[DWCONV_ROLE_DX];
    return j->dx_direct ? (float *)dx->data + dwconv_ref_at(dx, b, c, 0) : NULL;
}

static void staged_row(const grad_job *j, const grad_scratch *sc, int64_t b, int64_t c,
                       row_prefetch *f) {
    const dwconv_problem *p = j->p;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X];
    const void *x_row = (const char *)x->data +
                        (size_t)dwconv_ref_at(x, b, c, 0) * dwconv_dtype_size(p->desc.dtype);
    const float *w = j->weight + c * j->K;
    tap_segment seg[3];
    int segs = 0;
    if (p->desc.activation != DWCONV_ACT_NONE || j->want_dw)
        segs = row_segments(j, sc, x_row, x->stride[2], b, c, seg);
    const float *g = output_gradient(j, sc, b, c, w, seg, segs, f);
    weight_pieces wp = {.g = g, .seg = seg, .segs = j->want_dw ? segs : 0, .i = 0,
                        .o = segs ? seg[0].begin : 0};
    if (j->want_dx) {
        float *dx_row = direct_dx(j, b, c);
        /* dweight's pieces between dx's, while their g is fresh */
        input_gradient(j, sc, g, w, dx_row ? dx_row : sc->acc, f, &wp);
        if (!dx_row) store_input_gradient(j, sc->acc, b, c);
    }
    if (j->want_dw) {
        while (weight_piece(j, sc, &wp)) prefetch_slice(f);
        row_sums(j, sc, b, c);
    }
}

/* The reference's row, output by output (rows whose staging would outgrow the data). */
static void per_output_row(const grad_job *j, const grad_scratch *sc, int64_t b, int64_t c) {
    const dwconv_problem *p = j->p;
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *dy = &p->operand[DWCONV_ROLE_DY];
    const float *w = j->weight + c * j->K;
    const int64_t K = j->K;
    float *g = sc->g;
    for (int64_t o = 0; o < j->L_out; o++)
        g[o] = dwconv_activation_grad(d->activation, dwconv_ref_preactivation(p, b, c, o),
                                      dwconv_load(d->dtype, dy->data, dwconv_ref_at(dy, b, c, o)));
    if (j->want_dx) {
        for (int64_t i = 0; i < j->S + j->L; i++) sc->acc[i] = 0.0f;
        for (int64_t o = 0; o < j->L_out; o++)
            for (int64_t k = 0; k < K; k++) {
                int64_t slot = gradient_slot(j, o * j->s + k * j->d - j->pad);
                if (slot >= 0) sc->acc[slot] = DWCONV_FMAF(g[o], w[k], sc->acc[slot]);
            }
        store_input_gradient(j, sc->acc, b, c);
    }
    if (!j->want_dw) return;
    for (int64_t q = 0; q < dwconv_grad_chunks(j->L_out); q++) {
        float *pq = sc->part + q * (K + 1);
        for (int64_t k = 0; k <= K; k++) pq[k] = 0.0f;
        int64_t end = min64((q + 1) * DWCONV_GRAD_CHUNK, j->L_out);
        for (int64_t o = q * DWCONV_GRAD_CHUNK; o < end; o++) {
            for (int64_t k = 0; k < K; k++)
                pq[k] = DWCONV_FMAF(g[o], dwconv_ref_tap(p, b, c, o, o * j->s + k * j->d - j->pad), pq[k]);
            pq[K] = pq[K] + g[o];
        }
    }
    row_sums(j, sc, b, c);
}

/* Channel c's tree over the rows, rounded once into dweight and dbias. */
static void channel_sums(const grad_job *j, float *tree, int64_t c) {
    const dwconv_problem *p = j->p;
    void *dw = p->operand[DWCONV_ROLE_DWEIGHT].data, *db = p->operand[DWCONV_ROLE_DBIAS].data;
    const int64_t K = j->K;
    for (int64_t k = 0; k <= K; k++) {
        for (int64_t b = 0; b < j->B; b++) tree[b] = j->rows[(c * j->B + b) * (K + 1) + k];
        float total = dwconv_grad_tree(tree, j->B);
        if (k < K && dw) dwconv_store(p->grad_dtype, dw, c * K + k, total);
        if (k == K && db) dwconv_store(p->grad_dtype, db, c, total);
    }
}

/* The rows a thread takes, ROW_GROUP at a time from *next_group; it takes its next group
 * as it starts the last row of the current one, so that the next row is known, and
 * prefetched, across groups too. */
static void thread_rows(const grad_job *j, const grad_scratch *sc, atomic_llong *next_group) {
    const int64_t rows = j->B * j->C, groups = ceil_div(rows, ROW_GROUP);
    int64_t group = atomic_fetch_add(next_group, 1);
    while (group < groups) {
        const int64_t end = min64(rows, (group + 1) * ROW_GROUP);
        int64_t following = groups;
        for (int64_t r = group * ROW_GROUP; r < end; r++) {
            if (r + 1 == end) following = atomic_fetch_add(next_group, 1);
            const int64_t after = r + 1 < end ? r + 1 : following < groups ? following * ROW_GROUP : -1;
            row_prefetch f;
            if (j->staged && after >= 0) plan_prefetch(j, after, &f);
            if (j->staged) staged_row(j, sc, r / j->C, r % j->C, after >= 0 ? &f : NULL);
            else per_output_row(j, sc, r / j->C, r % j->C);
        }
        group = following;
    }
}

static dwconv_status no_memory(char *msg) {
    snprintf(msg, DWCONV_MSG_SIZE, "cannot allocate the cpu backward's scratch memory");
    return DWCONV_ERROR_OUT_OF_MEMORY;
}

dwconv_status dwconv_cpu_backward_with(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                                       int threads, char *msg) {
    const dwconv_desc *d = &p->desc;
    grad_job j = {
        .kernels = kernels, .p = p, .B = d->batch, .C = d->channels, .K = d->kernel_size,
        .L = d->length, .L_out = p->output_length, .S = p->state_length, .s = d->stride,
        .d = d->dilation, .pad = d->pad_left, .span = p->span,
    };
    j.want_dx = p->operand[DWCONV_ROLE_DX].data || p->operand[DWCONV_ROLE_DSTATE_IN].data;
    j.want_dw = p->operand[DWCONV_ROLE_DWEIGHT].data || p->operand[DWCONV_ROLE_DBIAS].data;
    j.want_db = p->operand[DWCONV_ROLE_DBIAS].data != NULL;
    j.reach = j.L_out > 0 ? (j.L_out - 1) * j.s + j.span + 1 : 0;
    /* staging costs reach floats a row: keep it proportional to the row's data */
    j.staged = j.reach <= 4 * (j.L + j.L_out) + 4096;
    plan_interior(&j);
    plan_direct(&j);
    const int64_t rows = j.B * j.C;
    const int nt = dwconv_cpu_thread_count(
        threads, (double)rows * ((double)j.L_out * (double)j.K * 3.0 + 2.0 * (double)j.L));

    const int widen_bias = p->operand[DWCONV_ROLE_BIAS].data != NULL;
    grad_scratch sizes;
    j.thread_bytes = thread_layout(&j, NULL, &sizes);
    size_t weights = dwconv_scratch_bytes(j.C, j.K + 1, sizeof(float));
    size_t row_bytes = j.want_dw ? dwconv_scratch_bytes(rows, j.K + 1, sizeof(float)) : 0;
    size_t total = dwconv_size_add(dwconv_size_add(weights, row_bytes),
                                   dwconv_size_mul(j.thread_bytes, (size_t)nt));
    char *block = total < DWCONV_TOO_BIG ? aligned_alloc(64, total) : NULL;
    if (!block) return no_memory(msg);
    float *weight = (float *)block;
    j.weight = weight;
    j.bias = widen_bias ? weight + j.C * j.K : NULL;
    j.rows = (float *)(block + weights);
    j.scratch = block + weights + row_bytes;
    dwconv_cpu_set_last_paths((j.staged ? DWCONV_CPU_PATH_STAGED_ROWS : 0) |
                              (j.staged && j.want_dx && j.s == 1 && j.Bi - j.A >= kernels->lanes
                                   ? DWCONV_CPU_PATH_VECTOR_DX : 0) |
                              (j.direct ? DWCONV_CPU_PATH_DIRECT_X : 0) |
                              (j.dx_nt ? DWCONV_CPU_PATH_STREAMED_DX : 0));

    const int64_t CK = j.C * j.K;
    const void *w = p->operand[DWCONV_ROLE_WEIGHT].data, *bias = p->operand[DWCONV_ROLE_BIAS].data;
    atomic_llong next_group = 0;
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < CK; i++) weight[i] = dwconv_load(d->weight_dtype, w, i);
        if (widen_bias) {
#pragma omp for schedule(static)
            for (int64_t c = 0; c < j.C; c++) weight[CK + c] = dwconv_load(d->weight_dtype, bias, c);
        }
        const grad_scratch sc = thread_scratch(&j, dwconv_cpu_thread_index());
        thread_rows(&j, &sc, &next_group);
#pragma omp barrier
        if (j.stream) kernels->fence();
        if (j.want_dw) {
#pragma omp for schedule(static)
            for (int64_t c = 0; c < j.C; c++) channel_sums(&j, sc.tree, c);
        }
    }
    free(block);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_cpu_backward(const dwconv_problem *p, int threads, char *msg) {
    const dwconv_cpu_kernels *kernels = dwconv_cpu_kernels_active(msg, DWCONV_MSG_SIZE);
    if (!kernels) return DWCONV_ERROR_UNSUPPORTED;
    return dwconv_cpu_backward_with(kernels, p, threads, msg);
}
