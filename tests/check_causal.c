/*
 * The causal operations at the operation level (issue 13), on the backend named by
 * DWCONV_TEST_BACKEND (default cpu; exit 77 = skip where it cannot run). For GPU
 * backends run it with CK_FORK=no: a GPU runtime does not survive Check's fork.
 *
 *   equivalence  one sequence run whole (dwconv_forward, causal padding), in random
 *                chunks with carried states (dwconv_causal_forward, also in place),
 *                token by token and in random groups (dwconv_causal_update: shift
 *                register and circular forms, with and without an index pool with
 *                padding entries), and packed among others (cu_seqlens with states;
 *                seq_idx): the same bits, outputs and final states
 *   float64      the chunked outputs against this file's own model, within a bound
 *   backward     dwconv_causal_backward: without states it is dwconv_backward; with
 *                them, the whole-sequence backward of [state, x] and a float64 model
 *   bad input    every refusal: its status, its message, nothing written
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_check.h"

/* ---- a random causal problem ------------------------------------------------------- */

typedef struct cz {
    int64_t C, K, dil, S; /* S = dil*(K-1): a state's length */
    dwconv_dtype dt, wt;
    dwconv_layout layout;
    dwconv_activation act;
    int bias;
    void *w, *b; /* host weight (C*K) and bias (C) */
    size_t es;   /* bytes of a dtype element */
} cz;

static void draw_cz(test_rng *r, cz *p) {
    memset(p, 0, sizeof *p);
    p->C = test_rng_range(r, 1, 6);
    p->K = test_rng_range(r, 0, 7) ? test_rng_range(r, 1, 6) : test_rng_range(r, 7, 40);
    p->dil = test_rng_range(r, 1, 4);
    p->S = p->dil * (p->K - 1);
    p->dt = (dwconv_dtype)test_rng_range(r, 0, 2);
    p->wt = test_rng_range(r, 0, 1) ? p->dt : DWCONV_F32;
    p->layout = (dwconv_layout)test_rng_range(r, 0, 1);
    p->act = (dwconv_activation)test_rng_range(r, 0, 2);
    p->bias = (int)test_rng_range(r, 0, 1);
    p->es = dwconv_dtype_size(p->dt);
    size_t ws = dwconv_dtype_size(p->wt);
    p->w = malloc(ws * (size_t)(p->C * p->K));
    p->b = malloc(ws * (size_t)p->C);
    for (int64_t i = 0; i < p->C * p->K; i++) op_random_value(r, p->wt, p->w, i, -3, 1);
    for (int64_t i = 0; i < p->C; i++) op_random_value(r, p->wt, p->b, i, -3, 1);
}

static void free_cz(cz *p) { free(p->w), free(p->b); }

static dwconv_desc cz_desc(const cz *p, int64_t batch, int64_t length) {
    dwconv_desc d;
    ck_assert(dwconv_desc_init(&d, batch, p->C, length, p->K) == DWCONV_SUCCESS);
    d.dilation = p->dil;
    d.padding = DWCONV_PADDING_CAUSAL;
    d.dtype = p->dt, d.weight_dtype = p->wt, d.layout = p->layout, d.activation = p->act;
    return d;
}

static const char *cz_string(const cz *p, int64_t batch, int64_t length) {
    dwconv_desc d = cz_desc(p, batch, length);
    return test_desc_string(&d);
}

/* Element (b, c, l) of a (batch, C, n) tensor in the problem's layout. */
static int64_t tix(const cz *p, int64_t n, int64_t b, int64_t c, int64_t l) {
    return p->layout == DWCONV_LAYOUT_NCL ? (b * p->C + c) * n + l : (b * n + l) * p->C + c;
}

static char *elem(const cz *p, void *base, int64_t i) { return (char *)base + (size_t)i * p->es; }
static const char *celem(const cz *p, const void *base, int64_t i) {
    return (const char *)base + (size_t)i * p->es;
}

/* Sequences are kept as rows: element (n, c, t) of sequences of length T at
 * (n*C + c)*T + t. */
static void *random_rows(test_rng *r, const cz *p, int64_t count, int64_t T) {
    void *rows = malloc(p->es * (size_t)(count * p->C * T) + 1);
    for (int64_t i = 0; i < count * p->C * T; i++) op_random_value(r, p->dt, rows, i, -3, 1);
    return rows;
}

/* The (B, C, n) tensor of rows' positions [t0, t0 + n) (rows of length T). */
static void *tensor_of(const cz *p, const void *rows, int64_t B, int64_t T, int64_t t0, int64_t n) {
    void *t = malloc(p->es * (size_t)(B * p->C * n) + 1);
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t l = 0; l < n; l++)
                memcpy(elem(p, t, tix(p, n, b, c, l)), celem(p, rows, (b * p->C + c) * T + t0 + l), p->es);
    return t;
}

/* The states after position `end` of the rows (zeros before the start): (B, C, S). */
static void *states_at(const cz *p, const void *rows, int64_t B, int64_t T, int64_t end) {
    void *s = calloc((size_t)(B * p->C * p->S) + 1, p->es);
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t i = 0; i < p->S; i++)
                if (end - p->S + i >= 0)
                    memcpy(elem(p, s, (b * p->C + c) * p->S + i),
                           celem(p, rows, (b * p->C + c) * T + end - p->S + i), p->es);
    return s;
}

/* dwconv_forward of the whole rows (causal padding): y as rows. */
static void *run_whole(dwconv_context *ctx, const cz *p, const void *rows, int64_t B, int64_t T) {
    dwconv_desc d = cz_desc(p, B, T);
    const size_t bytes = p->es * (size_t)(B * p->C * T), ws = dwconv_dtype_size(p->wt);
    op_arena a = {.ctx = ctx};
    void *hx = tensor_of(p, rows, B, T, 0, T), *hy = malloc(bytes);
    const void *x = op_put(&a, hx, bytes), *w = op_put(&a, p->w, ws * (size_t)(p->C * p->K));
    const void *bias = p->bias ? op_put(&a, p->b, ws * (size_t)p->C) : NULL;
    void *y = op_put(&a, NULL, bytes);
    ck_assert_msg(dwconv_forward(ctx, &d, x, w, bias, y) == DWCONV_SUCCESS, "forward: %s", dwconv_last_error());
    op_get(&a, hy, y, bytes);
    op_release(&a);
    void *out = malloc(bytes + 1);
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t t = 0; t < T; t++)
                memcpy(elem(p, out, (b * p->C + c) * T + t), celem(p, hy, tix(p, T, b, c, t)), p->es);
    free(hx), free(hy);
    return out;
}

/* y (a (B, C, n) tensor, or rows B of the call's rows when map says which) equals the
 * whole run's positions [t0, t0 + n). */
static void expect_outputs(const cz *p, const void *y, int64_t Bcall, const int64_t *map, const void *whole,
                           int64_t T, int64_t t0, int64_t n, const char *how) {
    for (int64_t r = 0; r < Bcall; r++) {
        const int64_t b = map ? map[r] : r;
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t l = 0; l < n; l++) {
                const char *got = celem(p, y, tix(p, n, r, c, l));
                if (b < 0) {
                    EXPECT(test_untouched(got, p->es), "%s: y of padding entry %lld was written [%s]", how,
                           (long long)r, cz_string(p, Bcall, n));
                    continue;
                }
                EXPECT(!memcmp(got, celem(p, whole, (b * p->C + c) * T + t0 + l), p->es),
                       "%s: y[b %lld, c %lld, t %lld] differs from the whole run's [%s]", how, (long long)b,
                       (long long)c, (long long)(t0 + l), cz_string(p, Bcall, n));
            }
    }
}

static void expect_states(const cz *p, const void *got, const void *want, int64_t count, const char *how) {
    int64_t i = test_first_difference(got, want, p->es, count * p->C * p->S);
    EXPECT(i < 0, "%s: final state element %lld differs [%s]", how, (long long)i, cz_string(p, count, 1));
}

/* ---- the float64 model of the forward ------------------------------------------------ */

/* y of rows' position t against act(bias + sum_k w_k x[t - S + k dil]) in float64: the
 * f32 chain's error (2 (K + 2) u of the terms), the activation's (relu: none; silu: a
 * slope <= 1.1 and a few roundings), one rounding to the dtype. */
static void expect_model(const cz *p, const void *rows, const void *y_rows, int64_t B, int64_t T) {
    const double u = ldexp(1, -24), uo = op_unit_roundoff(p->dt);
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t t = 0; t < T; t++) {
                double z = p->bias ? op_decode(p->wt, p->b, c) : 0.0, zabs = fabs(z);
                for (int64_t k = 0; k < p->K; k++) {
                    int64_t j = t - p->S + k * p->dil;
                    double v = j < 0 ? 0.0 : op_decode(p->dt, rows, (b * p->C + c) * T + j);
                    double w = op_decode(p->wt, p->w, c * p->K + k);
                    z += v * w, zabs += fabs(v * w);
                }
                double err = 2.0 * (double)(p->K + 2) * u * zabs, want = z;
                if (p->act == DWCONV_ACT_RELU) want = z > 0 ? z : 0.0;
                if (p->act == DWCONV_ACT_SILU) {
                    want = z / (1.0 + exp(-z));
                    err = 1.1 * err + 16.0 * u * fabs(want) + ldexp(1, -126);
                }
                double bound = err + uo * (fabs(want) + err) + op_tiny(p->dt);
                double got = op_decode(p->dt, y_rows, (b * p->C + c) * T + t);
                EXPECT(fabs(got - want) <= bound, "y[%lld, %lld, %lld] = %.9g, float64 %.9g, bound %.3g [%s]",
                       (long long)b, (long long)c, (long long)t, got, want, bound, cz_string(p, B, T));
            }
}

/* ---- chunks with carried states ---------------------------------------------------- */

/* Random chunk lengths (>= 1) summing to T, into len; the count. */
static int64_t draw_chunks(test_rng *r, int64_t T, int64_t *len) {
    int64_t n = 0;
    for (int64_t t = 0; t < T; n++) {
        len[n] = test_rng_range(r, 1, test_rng_range(r, 0, 1) ? 4 : T);
        if (len[n] > T - t) len[n] = T - t;
        t += len[n];
    }
    return n;
}

static void check_chunked(dwconv_context *ctx, test_rng *r, const cz *p, const void *rows, const void *whole,
                          int64_t B, int64_t T, int mode) {
    const size_t ws = dwconv_dtype_size(p->wt), sbytes = p->es * (size_t)(B * p->C * p->S);
    op_arena a = {.ctx = ctx};
    const void *w = op_put(&a, p->w, ws * (size_t)(p->C * p->K));
    const void *bias = p->bias ? op_put(&a, p->b, ws * (size_t)p->C) : NULL;
    /* mode 0: two state buffers in turn; 1: one, updated in place; 2: as 1, the first
     * chunk given explicit zeros */
    void *zeros = calloc(sbytes + 1, 1);
    void *s0 = op_put(&a, mode == 2 ? zeros : NULL, sbytes), *s1 = mode == 0 ? op_put(&a, NULL, sbytes) : s0;
    int64_t *len = malloc(sizeof(int64_t) * (size_t)T), chunks = draw_chunks(r, T, len), t0 = 0;
    void *got_rows = malloc(p->es * (size_t)(B * p->C * T) + 1);
    for (int64_t i = 0; i < chunks; i++) {
        const int64_t n = len[i];
        const size_t bytes = p->es * (size_t)(B * p->C * n);
        dwconv_desc d = cz_desc(p, B, n);
        void *hx = tensor_of(p, rows, B, T, t0, n), *hy = malloc(bytes);
        const void *x = op_put(&a, hx, bytes);
        void *y = op_put(&a, NULL, bytes);
        const void *in = i == 0 && mode != 2 ? NULL : (i % 2 == 0 ? s0 : s1);
        void *out = i % 2 == 0 ? s1 : s0;
        ck_assert_msg(dwconv_causal_forward(ctx, &d, x, w, bias, in, out, y) == DWCONV_SUCCESS,
                      "causal_forward: %s", dwconv_last_error());
        op_get(&a, hy, y, bytes);
        expect_outputs(p, hy, B, NULL, whole, T, t0, n, "chunked");
        for (int64_t b = 0; b < B; b++)
            for (int64_t c = 0; c < p->C; c++)
                for (int64_t l = 0; l < n; l++)
                    memcpy(elem(p, got_rows, (b * p->C + c) * T + t0 + l), celem(p, hy, tix(p, n, b, c, l)), p->es);
        t0 += n;
        void *want = states_at(p, rows, B, T, t0), *got = malloc(sbytes + 1);
        op_get(&a, got, out, sbytes);
        expect_states(p, got, want, B, mode == 0 ? "chunked, two buffers" : "chunked, in place");
        free(want), free(got), free(hx), free(hy);
        /* the arena holds 48 blocks: drop this chunk's x and y */
        op_release_last(&a, 2);
    }
    expect_model(p, rows, got_rows, B, T);
    free(len), free(zeros), free(got_rows);
    op_release(&a);
}

/* ---- decode: dwconv_causal_update ---------------------------------------------------- */

static void shuffle64(test_rng *r, int64_t *a, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = test_rng_range(r, 0, i), t = a[i];
        a[i] = a[j], a[j] = t;
    }
}

/* The sequences fed in groups of tokens (all of 1: token by token) through a pool of
 * states: shift registers or circular buffers (cache_seqlens), slots b or an index
 * array with padding entries (negative: their y and every state left alone). */
static void check_decode(dwconv_context *ctx, test_rng *r, const cz *p, const void *rows, const void *whole,
                         int64_t B, int64_t T, int circular, int indexed, int tokenwise) {
    const int64_t Ls = p->S + (circular && test_rng_range(r, 0, 3) ? test_rng_range(r, 1, 4) : test_rng_range(r, 0, 2));
    const int64_t pool = B + test_rng_range(r, 0, 3), npad = indexed ? test_rng_range(r, 0, 2) : 0;
    const int64_t Bcall = B + npad, C = p->C;
    const size_t ws = dwconv_dtype_size(p->wt), pool_bytes = p->es * (size_t)(pool * C * Ls);
    /* who sits where: map[row] = sequence or -1; slot_of[b] */
    int64_t *map = malloc(sizeof(int64_t) * (size_t)Bcall), *perm = malloc(sizeof(int64_t) * (size_t)pool);
    int64_t *slot_of = malloc(sizeof(int64_t) * (size_t)B);
    for (int64_t i = 0; i < Bcall; i++) map[i] = i < B ? i : -1;
    for (int64_t i = 0; i < pool; i++) perm[i] = i;
    if (indexed) shuffle64(r, map, Bcall), shuffle64(r, perm, pool);
    for (int64_t b = 0; b < B; b++) slot_of[b] = perm[b];
    int32_t *slots = malloc(sizeof(int32_t) * (size_t)Bcall), *seen = malloc(sizeof(int32_t) * (size_t)Bcall);
    for (int64_t i = 0; i < Bcall; i++)
        slots[i] = map[i] >= 0 ? (int32_t)slot_of[map[i]] : (int32_t)-test_rng_range(r, 1, 1000);
    /* the pool: used slots start at zeros (a sequence's start), the others hold data
     * that must survive */
    char *initial = malloc(pool_bytes + 1);
    for (int64_t i = 0; i < pool * C * Ls; i++) op_random_value(r, p->dt, initial, i, -3, 1);
    for (int64_t b = 0; b < B; b++) memset(initial + p->es * (size_t)(slot_of[b] * C * Ls), 0, p->es * (size_t)(C * Ls));
    op_arena a = {.ctx = ctx};
    const void *w = op_put(&a, p->w, ws * (size_t)(C * p->K));
    const void *bias = p->bias ? op_put(&a, p->b, ws * (size_t)C) : NULL;
    void *state = op_put(&a, initial, pool_bytes);
    const int32_t *dslots = indexed ? op_put(&a, slots, sizeof(int32_t) * (size_t)Bcall) : NULL;
    char how[64];
    snprintf(how, sizeof how, "decode (%s, %s%s)", circular ? "circular" : "shift", indexed ? "indexed" : "slot b",
             tokenwise ? ", token by token" : "");
    for (int64_t t0 = 0; t0 < T;) {
        int64_t n = tokenwise ? 1 : test_rng_range(r, 1, 5);
        if (n > T - t0) n = T - t0;
        const size_t bytes = p->es * (size_t)(Bcall * C * n);
        char *hx = malloc(bytes + 1), *hy = malloc(bytes + 1);
        for (int64_t row = 0; row < Bcall; row++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t l = 0; l < n; l++) {
                    if (map[row] < 0) op_random_value(r, p->dt, hx, tix(p, n, row, c, l), -3, 1);
                    else memcpy(elem(p, hx, tix(p, n, row, c, l)), celem(p, rows, (map[row] * C + c) * T + t0 + l), p->es);
                }
        for (int64_t row = 0; row < Bcall; row++)
            seen[row] = map[row] >= 0 ? (int32_t)t0 : (int32_t)test_rng_range(r, 0, 100);
        const void *x = op_put(&a, hx, bytes);
        const int32_t *dseen = circular ? op_put(&a, seen, sizeof(int32_t) * (size_t)Bcall) : NULL;
        void *y = op_put(&a, NULL, bytes);
        dwconv_desc d = cz_desc(p, Bcall, n);
        ck_assert_msg(dwconv_causal_update(ctx, &d, x, state, pool, Ls, w, bias, dseen, dslots, y) == DWCONV_SUCCESS,
                      "%s: %s", how, dwconv_last_error());
        op_get(&a, hy, y, bytes);
        expect_outputs(p, hy, Bcall, map, whole, T, t0, n, how);
        op_release_last(&a, circular ? 3 : 2);
        free(hx), free(hy);
        t0 += n;
    }
    /* the pool: each sequence's slot holds its last Ls inputs (shift register), or
     * input i at i mod Ls (circular); every other slot is as it was */
    char *want = malloc(pool_bytes + 1), *got = malloc(pool_bytes + 1);
    memcpy(want, initial, pool_bytes);
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t base = (slot_of[b] * C + c) * Ls;
            for (int64_t i = 0; !circular && i < Ls; i++)
                if (T - Ls + i >= 0) memcpy(elem(p, want, base + i), celem(p, rows, (b * C + c) * T + T - Ls + i), p->es);
            for (int64_t i = 0; circular && Ls > 0 && i < T; i++)
                memcpy(elem(p, want, base + i % Ls), celem(p, rows, (b * C + c) * T + i), p->es);
        }
    op_get(&a, got, state, pool_bytes);
    int64_t i = test_first_difference(got, want, p->es, pool * C * Ls);
    EXPECT(i < 0, "%s: pool element %lld (slot %lld, state_length %lld) differs [%s]", how, (long long)i,
           (long long)(i / (C * (Ls ? Ls : 1))), (long long)Ls, cz_string(p, B, T));
    op_release(&a);
    free(map), free(perm), free(slot_of), free(slots), free(seen), free(initial), free(want), free(got);
}

START_TEST(every_form_gives_the_whole_runs_bits) {
    test_rng rng = test_rng_seed(1300);
    dwconv_context *ctx = op_context();
    const int cases = test_quick() ? 30 : 300;
    for (int n = 0; n < cases; n++) {
        cz p;
        draw_cz(&rng, &p);
        const int64_t B = test_rng_range(&rng, 1, 3), T = test_rng_range(&rng, 1, n % 5 == 0 ? 120 : 30);
        void *rows = random_rows(&rng, &p, B, T), *whole = run_whole(ctx, &p, rows, B, T);
        /* dwconv_causal_forward over the whole, from a sequence start */
        check_chunked(ctx, &rng, &p, rows, whole, B, T, n % 3);
        check_decode(ctx, &rng, &p, rows, whole, B, T, n % 2, (n / 2) % 2, (n / 4) % 2);
        free(rows), free(whole), free_cz(&p);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- packed sequences ---------------------------------------------------------------- */

/* cu_seqlens: N sequences of random lengths (0 included) packed along L, each
 * continuing its own history: its part of y and its final state are those of the
 * whole run of [history, sequence]. */
static void check_cu_seqlens(dwconv_context *ctx, test_rng *r, const cz *p) {
    const int64_t N = test_rng_range(r, 1, 5), C = p->C, S = p->S;
    const int with_initial = (int)test_rng_range(r, 0, 2), final_mode = (int)test_rng_range(r, 0, 2);
    int64_t len[5], hist[5], cu[6] = {0};
    void *rows[5], *whole[5];
    for (int64_t n = 0; n < N; n++) {
        len[n] = test_rng_range(r, 0, 3) ? test_rng_range(r, 1, 30) : 0;
        hist[n] = with_initial ? test_rng_range(r, 0, 12) : 0;
    }
    int64_t total = 0;
    for (int64_t n = 0; n < N; n++) total += len[n];
    if (total == 0) len[test_rng_range(r, 0, N - 1)] = 1; /* L >= 1 */
    for (int64_t n = 0; n < N; n++) cu[n + 1] = cu[n] + len[n];
    const int64_t L = cu[N];
    const size_t sbytes = p->es * (size_t)(N * C * S), ybytes = p->es * (size_t)(C * L);
    char *init = calloc(sbytes + 1, 1), *want_final = malloc(sbytes + 1);
    char *hx = malloc(ybytes + 1), *hy = malloc(ybytes + 1);
    for (int64_t n = 0; n < N; n++) {
        const int64_t H = hist[n], T = H + len[n];
        rows[n] = random_rows(r, p, 1, T);
        whole[n] = T > 0 ? run_whole(ctx, p, rows[n], 1, T) : NULL;
        void *s_in = states_at(p, rows[n], 1, T, H), *s_out = states_at(p, rows[n], 1, T, T);
        memcpy(init + p->es * (size_t)(n * C * S), s_in, p->es * (size_t)(C * S));
        memcpy(want_final + p->es * (size_t)(n * C * S), s_out, p->es * (size_t)(C * S));
        free(s_in), free(s_out);
        for (int64_t c = 0; c < C; c++)
            for (int64_t l = 0; l < len[n]; l++)
                memcpy(elem(p, hx, tix(p, L, 0, c, cu[n] + l)), celem(p, rows[n], c * T + H + l), p->es);
    }
    int32_t cu32[6];
    for (int64_t n = 0; n <= N; n++) cu32[n] = (int32_t)cu[n];
    op_arena a = {.ctx = ctx};
    const size_t ws = dwconv_dtype_size(p->wt);
    const void *w = op_put(&a, p->w, ws * (size_t)(C * p->K));
    const void *bias = p->bias ? op_put(&a, p->b, ws * (size_t)C) : NULL;
    const void *x = op_put(&a, hx, ybytes);
    const int32_t *dcu = op_put(&a, cu32, sizeof(int32_t) * (size_t)(N + 1));
    void *in = with_initial ? op_put(&a, init, sbytes) : NULL;
    void *out = final_mode == 0 ? NULL : final_mode == 2 && in ? in : op_put(&a, NULL, sbytes);
    void *y = op_put(&a, NULL, ybytes);
    dwconv_desc d = cz_desc(p, 1, L);
    ck_assert_msg(dwconv_causal_varlen_forward(ctx, &d, x, w, bias, dcu, NULL, N, in, out, y) == DWCONV_SUCCESS,
                  "cu_seqlens: %s", dwconv_last_error());
    op_get(&a, hy, y, ybytes);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t l = 0; l < len[n]; l++)
                EXPECT(!memcmp(celem(p, hy, tix(p, L, 0, c, cu[n] + l)),
                               celem(p, whole[n], c * (hist[n] + len[n]) + hist[n] + l), p->es),
                       "cu_seqlens: sequence %lld of %lld, c %lld, t %lld differs from its whole run [%s]",
                       (long long)n, (long long)N, (long long)c, (long long)l, cz_string(p, 1, L));
    if (out) {
        char *got = malloc(sbytes + 1);
        op_get(&a, got, out, sbytes);
        expect_states(p, got, want_final, N, out == in ? "cu_seqlens, in place" : "cu_seqlens");
        free(got);
    }
    op_release(&a);
    for (int64_t n = 0; n < N; n++) free(rows[n]), free(whole[n]);
    free(init), free(want_final), free(hx), free(hy);
}

/* seq_idx: rows cut into runs of equal ids; each run is a sequence of its own. */
static void check_seq_idx(dwconv_context *ctx, test_rng *r, const cz *p) {
    const int64_t B = test_rng_range(r, 1, 3), L = test_rng_range(r, 1, 60), C = p->C;
    void *rows = random_rows(r, p, B, L), *hx = tensor_of(p, rows, B, L, 0, L);
    const size_t bytes = p->es * (size_t)(B * C * L), ws = dwconv_dtype_size(p->wt);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(B * L));
    int32_t id = (int32_t)test_rng_range(r, -5, 5);
    for (int64_t i = 0; i < B * L; i++) {
        if (i % L == 0 || test_rng_range(r, 0, 6) == 0) id += (int32_t)test_rng_range(r, 1, 3);
        ids[i] = id;
    }
    op_arena a = {.ctx = ctx};
    const void *w = op_put(&a, p->w, ws * (size_t)(C * p->K));
    const void *bias = p->bias ? op_put(&a, p->b, ws * (size_t)C) : NULL;
    const void *x = op_put(&a, hx, bytes);
    const int32_t *dids = op_put(&a, ids, sizeof(int32_t) * (size_t)(B * L));
    void *y = op_put(&a, NULL, bytes), *hy = malloc(bytes + 1);
    dwconv_desc d = cz_desc(p, B, L);
    ck_assert_msg(dwconv_causal_varlen_forward(ctx, &d, x, w, bias, NULL, dids, 0, NULL, NULL, y) == DWCONV_SUCCESS,
                  "seq_idx: %s", dwconv_last_error());
    op_get(&a, hy, y, bytes);
    op_release(&a);
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < L;) {
            int64_t e = s;
            while (e < L && ids[b * L + e] == ids[b * L + s]) e++;
            void *seg = malloc(p->es * (size_t)(C * (e - s)) + 1);
            for (int64_t c = 0; c < C; c++)
                memcpy(elem(p, seg, c * (e - s)), celem(p, rows, (b * C + c) * L + s), p->es * (size_t)(e - s));
            void *whole = run_whole(ctx, p, seg, 1, e - s);
            for (int64_t c = 0; c < C; c++)
                for (int64_t l = 0; l < e - s; l++)
                    EXPECT(!memcmp(celem(p, hy, tix(p, L, b, c, s + l)), celem(p, whole, c * (e - s) + l), p->es),
                           "seq_idx: row %lld, c %lld, position %lld (run from %lld) differs from the run's whole "
                           "forward [%s]", (long long)b, (long long)c, (long long)(s + l), (long long)s,
                           cz_string(p, B, L));
            free(seg), free(whole);
            s = e;
        }
    free(rows), free(hx), free(ids), free(hy);
}

START_TEST(packed_sequences_give_their_own_bits) {
    test_rng rng = test_rng_seed(1310);
    dwconv_context *ctx = op_context();
    const int cases = test_quick() ? 30 : 300;
    for (int n = 0; n < cases; n++) {
        cz p;
        draw_cz(&rng, &p);
        check_cu_seqlens(ctx, &rng, &p);
        check_seq_idx(ctx, &rng, &p);
        free_cz(&p);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- the causal backward ------------------------------------------------------------- */

static int64_t ceil_log2(int64_t n) {
    int64_t k = 0;
    while (((int64_t)1 << k) < n) k++;
    return k;
}

/* |got - value| within the slack carried in, 2 (n + 2) u of the terms, one rounding. */
static int within(double got, double value, double abs_terms, double slack, int64_t n, dwconv_dtype out,
                  double *bound_out) {
    const double u = ldexp(1, -24);
    double acc = slack + 2.0 * (double)(n + 2) * u * (abs_terms + slack);
    double bound = acc + op_unit_roundoff(out) * (fabs(value) + acc) + op_tiny(out);
    *bound_out = bound;
    return fabs(got - value) <= bound;
}

typedef struct grads { void *dx, *dw, *db, *dinit; } grads;

static void free_grads(grads *g) { free(g->dx), free(g->dw), free(g->db), free(g->dinit); }

/* The float64 gradients of the row extended by its state ([state, x], as the contract
 * defines the causal backward), checked against dinit and dx, dweight, dbias. */
static void expect_backward_model(const cz *p, int64_t B, int64_t L, const void *ext_rows, const void *dy_rows,
                                  const void *dfinal, const grads *got) {
    const int64_t C = p->C, K = p->K, S = p->S, E = S + L, chunks = (L + 63) / 64;
    const double u = ldexp(1, -24);
    double *g = malloc(sizeof(double) * (size_t)L), *gerr = malloc(sizeof(double) * (size_t)L);
    double *dv = malloc(sizeof(double) * (size_t)E * 3), *wv = malloc(sizeof(double) * (size_t)(K + 1) * 3);
    int64_t *dn = malloc(sizeof(int64_t) * (size_t)E);
    for (int64_t c = 0; c < C; c++) {
        memset(wv, 0, sizeof(double) * (size_t)(K + 1) * 3);
        const double bias = p->bias ? op_decode(p->wt, p->b, c) : 0.0;
        for (int64_t b = 0; b < B; b++) {
            const int64_t row = b * C + c;
            for (int64_t o = 0; o < L; o++) {
                double z = bias, zabs = fabs(bias);
                for (int64_t k = 0; k < K; k++) {
                    double v = op_decode(p->dt, ext_rows, row * E + o + k * p->dil) * op_decode(p->wt, p->w, c * K + k);
                    z += v, zabs += fabs(v);
                }
                double zerr = 2.0 * (double)(K + 2) * u * zabs, dy = op_decode(p->dt, dy_rows, row * L + o);
                if (p->act == DWCONV_ACT_NONE) g[o] = dy, gerr[o] = 0;
                else if (p->act == DWCONV_ACT_RELU) g[o] = z > 0 ? dy : 0.0, gerr[o] = fabs(z) <= zerr ? fabs(dy) : 0;
                else {
                    double s = 1.0 / (1.0 + exp(-z));
                    g[o] = dy * s * (1.0 + z * (1.0 - s)), gerr[o] = fabs(dy) * (0.5 * zerr + 64.0 * u);
                }
            }
            memset(dv, 0, sizeof(double) * (size_t)E * 3);
            memset(dn, 0, sizeof(int64_t) * (size_t)E);
            for (int64_t o = 0; o < L; o++)
                for (int64_t k = 0; k < K; k++) {
                    const int64_t i = o + k * p->dil;
                    const double w = op_decode(p->wt, p->w, c * K + k), xv = op_decode(p->dt, ext_rows, row * E + i);
                    dv[3 * i] += g[o] * w, dv[3 * i + 1] += fabs(g[o] * w), dv[3 * i + 2] += gerr[o] * fabs(w), dn[i]++;
                    wv[3 * k] += g[o] * xv, wv[3 * k + 1] += fabs(g[o] * xv), wv[3 * k + 2] += gerr[o] * fabs(xv);
                }
            for (int64_t o = 0; o < L; o++) wv[3 * K] += g[o], wv[3 * K + 1] += fabs(g[o]), wv[3 * K + 2] += gerr[o];
            for (int64_t s = 0; dfinal && s < S; s++) { /* the last S positions of [state, x] */
                const double f = op_decode(p->dt, dfinal, row * S + s);
                dv[3 * (L + s)] += f, dv[3 * (L + s) + 1] += fabs(f), dn[L + s]++;
            }
            for (int64_t i = 0; i < E; i++) {
                const void *src = i < S ? got->dinit : got->dx;
                if (!src) continue;
                const int64_t at = i < S ? row * S + i : tix(p, L, b, c, i - S);
                double bound, v = op_decode(p->dt, src, at);
                EXPECT(within(v, dv[3 * i], dv[3 * i + 1], dv[3 * i + 2], dn[i], p->dt, &bound),
                       "%s[%lld] = %.9g, float64 %.9g, bound %.3g [%s]", i < S ? "dinitial_states" : "dx",
                       (long long)at, v, dv[3 * i], bound, cz_string(p, B, L));
            }
        }
        for (int64_t k = 0; k <= K; k++) {
            const void *src = k < K ? got->dw : got->db;
            if (!src) continue;
            const int64_t at = k < K ? c * K + k : c;
            double bound, v = op_decode(p->wt, src, at);
            EXPECT(within(v, wv[3 * k], wv[3 * k + 1], wv[3 * k + 2], (L < 64 ? L : 64) + ceil_log2(chunks) + ceil_log2(B),
                          p->wt, &bound),
                   "%s[%lld] = %.9g, float64 %.9g, bound %.3g [%s]", k < K ? "dweight" : "dbias", (long long)at, v,
                   wv[3 * k], bound, cz_string(p, B, L));
        }
    }
    free(g), free(gerr), free(dv), free(wv), free(dn);
}

/* One backward call on the backend: dwconv_causal_backward when causal, else
 * dwconv_backward (init, dfinal and dinit unused). Host in, host out. */
static grads run_backward(dwconv_context *ctx, const cz *p, int causal, int64_t B, int64_t L, const void *hx,
                          const void *hdy, const void *init, const void *dfinal, int want_dinit) {
    const int64_t C = p->C;
    const size_t bytes = p->es * (size_t)(B * C * L), ws = dwconv_dtype_size(p->wt),
                 sbytes = p->es * (size_t)(B * C * p->S);
    op_arena a = {.ctx = ctx};
    const void *x = op_put(&a, hx, bytes), *dy = op_put(&a, hdy, bytes);
    const void *w = op_put(&a, p->w, ws * (size_t)(C * p->K));
    const void *bias = p->bias ? op_put(&a, p->b, ws * (size_t)C) : NULL;
    const void *din = init ? op_put(&a, init, sbytes) : NULL, *dfin = dfinal ? op_put(&a, dfinal, sbytes) : NULL;
    void *dx = op_put(&a, NULL, bytes), *dw = op_put(&a, NULL, ws * (size_t)(C * p->K));
    void *db = op_put(&a, NULL, ws * (size_t)C), *dinit = want_dinit ? op_put(&a, NULL, sbytes) : NULL;
    dwconv_desc d = cz_desc(p, B, L);
    dwconv_status st = causal ? dwconv_causal_backward(ctx, &d, x, w, bias, din, dy, dfin, dx, dw, db, dinit)
                              : dwconv_backward(ctx, &d, x, w, bias, dy, dx, dw, db);
    ck_assert_msg(st == DWCONV_SUCCESS, "%s: %s", causal ? "causal_backward" : "backward", dwconv_last_error());
    grads g = {malloc(bytes + 1), malloc(ws * (size_t)(C * p->K)), malloc(ws * (size_t)C), want_dinit ? malloc(sbytes + 1) : NULL};
    op_get(&a, g.dx, dx, bytes);
    op_get(&a, g.dw, dw, ws * (size_t)(C * p->K));
    op_get(&a, g.db, db, ws * (size_t)C);
    if (dinit) op_get(&a, g.dinit, dinit, sbytes);
    op_release(&a);
    return g;
}

static void check_causal_backward(dwconv_context *ctx, test_rng *r, const cz *p) {
    const int64_t B = test_rng_range(r, 1, 3), L = test_rng_range(r, 1, test_rng_range(r, 0, 1) ? 8 : 150);
    const int64_t C = p->C, S = p->S, E = S + L;
    const size_t ws = dwconv_dtype_size(p->wt);
    void *xr = random_rows(r, p, B, L), *dyr = random_rows(r, p, B, L);
    void *hx = tensor_of(p, xr, B, L, 0, L), *hdy = tensor_of(p, dyr, B, L, 0, L);
    /* without states: dwconv_backward's bits */
    grads plain = run_backward(ctx, p, 0, B, L, hx, hdy, NULL, NULL, 0);
    grads causal = run_backward(ctx, p, 1, B, L, hx, hdy, NULL, NULL, 0);
    EXPECT(!memcmp(plain.dx, causal.dx, p->es * (size_t)(B * C * L)) &&
               !memcmp(plain.dw, causal.dw, ws * (size_t)(C * p->K)) && !memcmp(plain.db, causal.db, ws * (size_t)C),
           "causal backward without states differs from dwconv_backward [%s]", cz_string(p, B, L));
    free_grads(&plain), free_grads(&causal);
    /* with states: the row extended by its state, [state, x], and dy zero before x */
    void *init = random_rows(r, p, B, S), *dfinal = test_rng_range(r, 0, 1) ? random_rows(r, p, B, S) : NULL;
    char *ext = calloc((size_t)(B * C * E) + 1, p->es), *dy_ext = calloc((size_t)(B * C * E) + 1, p->es);
    for (int64_t row = 0; row < B * C; row++) {
        memcpy(ext + p->es * (size_t)(row * E), celem(p, init, row * S), p->es * (size_t)S);
        memcpy(ext + p->es * (size_t)(row * E + S), celem(p, xr, row * L), p->es * (size_t)L);
        memcpy(dy_ext + p->es * (size_t)(row * E + S), celem(p, dyr, row * L), p->es * (size_t)L);
    }
    causal = run_backward(ctx, p, 1, B, L, hx, hdy, init, dfinal, 1);
    expect_backward_model(p, B, L, ext, dyr, dfinal, &causal);
    void *hxe = tensor_of(p, ext, B, E, 0, E), *hdye = tensor_of(p, dy_ext, B, E, 0, E);
    grads whole = run_backward(ctx, p, 0, B, E, hxe, hdye, NULL, NULL, 0);
    /* dx and dinit are the whole run's dx, bit for bit; where dfinal adds to it, the f32
     * sum of the two (a second rounding in f16 and bf16: the model covers those) */
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < E; i++) {
                const int64_t row = b * C + c;
                const char *got = i < S ? celem(p, causal.dinit, row * S + i) : celem(p, causal.dx, tix(p, L, b, c, i - S));
                char want[4];
                memcpy(want, celem(p, whole.dx, tix(p, E, b, c, i)), p->es);
                if (dfinal && i >= L) {
                    if (p->dt != DWCONV_F32) continue;
                    float sum = *(float *)want + ((const float *)dfinal)[row * S + i - L];
                    memcpy(want, &sum, 4);
                }
                EXPECT(!memcmp(got, want, p->es), "%s at extended position %lld (b %lld, c %lld) differs from the "
                       "whole [state, x] backward's dx [%s; dfinal %s]", i < S ? "dinitial_states" : "dx", (long long)i,
                       (long long)b, (long long)c, cz_string(p, B, L), dfinal ? "given" : "NULL");
            }
    free_grads(&causal), free_grads(&whole);
    free(xr), free(dyr), free(hx), free(hdy), free(init), free(dfinal), free(ext), free(dy_ext), free(hxe), free(hdye);
}

START_TEST(causal_backward_is_the_extended_rows_backward) {
    test_rng rng = test_rng_seed(1320);
    dwconv_context *ctx = op_context();
    const int cases = test_quick() ? 30 : 300;
    for (int n = 0; n < cases; n++) {
        cz p;
        draw_cz(&rng, &p);
        check_causal_backward(ctx, &rng, &p);
        free_cz(&p);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- bad input ----------------------------------------------------------------------- */

/* A refusal of bad index values: on the cpu at the call; a GPU may accept the call,
 * write nothing and report at the next dwconv_synchronize (docs: dwconv.h). */
static void refuse_indices(dwconv_context *ctx, dwconv_status st, const char *who, const char *word,
                           const char *what) {
    if (st == DWCONV_SUCCESS && op_backend() != DWCONV_BACKEND_CPU) {
        st = dwconv_synchronize(ctx);
        ck_assert_msg(st == DWCONV_ERROR_INVALID_VALUE, "%s: synchronize gave %s (%s)", what,
                      dwconv_status_string(st), dwconv_last_error());
    } else {
        op_expect_refusal(st, DWCONV_ERROR_INVALID_VALUE, who, what);
    }
    ck_assert_msg(strstr(dwconv_last_error(), word), "%s: the message \"%s\" does not mention %s", what,
                  dwconv_last_error(), word);
}

START_TEST(bad_input_is_refused_untouched) {
    dwconv_context *ctx = op_context();
    op_arena a = {.ctx = ctx};
    /* B 2, C 3, L 20, K 4, f32 NCL: S = 3 */
    dwconv_desc d;
    dwconv_desc_init(&d, 2, 3, 20, 4);
    d.padding = DWCONV_PADDING_CAUSAL;
    test_rng rng = test_rng_seed(13);
    float in_host[276], w_host[15];
    for (int i = 0; i < 276; i++) op_random_value(&rng, DWCONV_F32, in_host, i, -3, 1);
    for (int i = 0; i < 15; i++) op_random_value(&rng, DWCONV_F32, w_host, i, -3, 1);
    /* inputs: x | initial states | dy | dfinal; outputs, poisoned: y | final states |
     * pool (4 slots of 4) | dx | dweight | dbias | dinitial_states */
    float *in = op_put(&a, in_host, sizeof in_host), *w = op_put(&a, w_host, 12 * 4), *bias = op_put(&a, w_host + 12, 12);
    float *x = in, *init = in + 120, *dy = in + 138, *dfinal = in + 258;
    const size_t out_bytes = 339 * 4;
    float *out = op_put(&a, NULL, out_bytes);
    float *y = out, *fin = out + 120, *pool = out + 138, *dx = out + 186, *dw = out + 306, *db = out + 318,
          *dinit = out + 321;
    const int32_t cu_ok[3] = {0, 10, 20}, cu_start[3] = {1, 10, 20}, cu_down[4] = {0, 12, 8, 20},
                  cu_past[3] = {0, 10, 25}, cu_short[3] = {0, 10, 15}, ids_host[40] = {0};
    const int32_t *cu_good = op_put(&a, cu_ok, 12), *cu_s = op_put(&a, cu_start, 12), *cu_d = op_put(&a, cu_down, 16),
                  *cu_p = op_put(&a, cu_past, 12), *cu_e = op_put(&a, cu_short, 12), *ids = op_put(&a, ids_host, 160);
    const int32_t slots_out[2] = {0, 4}, slots_twice[2] = {1, 1}, slots_ok[2] = {3, -1}, seen_neg[2] = {5, -2};
    const int32_t *sl_out = op_put(&a, slots_out, 8), *sl_twice = op_put(&a, slots_twice, 8),
                  *sl_ok = op_put(&a, slots_ok, 8), *seen = op_put(&a, seen_neg, 8);
    dwconv_desc one = d, packed = d, bad = d;
    one.length = 2, packed.batch = 1, packed.length = 40;
    const char *who = "dwconv_causal_forward";
#define REFUSE(call, want, what) op_expect_refusal((call), (want), who, what)
    REFUSE(dwconv_causal_forward(NULL, &d, x, w, bias, init, fin, y), DWCONV_ERROR_NULL_POINTER, "NULL context");
    REFUSE(dwconv_causal_forward(ctx, NULL, x, w, bias, init, fin, y), DWCONV_ERROR_NULL_POINTER, "NULL desc");
    REFUSE(dwconv_causal_forward(ctx, &d, NULL, w, bias, init, fin, y), DWCONV_ERROR_NULL_POINTER, "NULL x");
    REFUSE(dwconv_causal_forward(ctx, &d, x, NULL, bias, init, fin, y), DWCONV_ERROR_NULL_POINTER, "NULL weight");
    REFUSE(dwconv_causal_forward(ctx, &d, x, w, bias, init, fin, NULL), DWCONV_ERROR_NULL_POINTER, "NULL y");
    bad = d, bad.padding = DWCONV_PADDING_SAME;
    REFUSE(dwconv_causal_forward(ctx, &bad, x, w, bias, init, fin, y), DWCONV_ERROR_INVALID_VALUE, "SAME padding");
    bad = d, bad.padding = DWCONV_PADDING_EXPLICIT, bad.pad_left = 3, bad.pad_right = 1;
    REFUSE(dwconv_causal_forward(ctx, &bad, x, w, bias, init, fin, y), DWCONV_ERROR_INVALID_VALUE, "pads 3/1");
    bad = d, bad.stride = 2;
    REFUSE(dwconv_causal_forward(ctx, &bad, x, w, bias, init, fin, y), DWCONV_ERROR_INVALID_VALUE, "stride 2");
    bad = d, bad.padding_mode = DWCONV_PAD_REFLECT;
    REFUSE(dwconv_causal_forward(ctx, &bad, x, w, bias, init, fin, y), DWCONV_ERROR_INVALID_VALUE, "reflect");
    REFUSE(dwconv_causal_forward(ctx, &d, x, w, bias, init, y + 100, y), DWCONV_ERROR_ALIASING, "final states over y");
    REFUSE(dwconv_causal_forward(ctx, &d, x, w, bias, init, x + 4, y), DWCONV_ERROR_ALIASING, "final states over x");
    REFUSE(dwconv_causal_forward(ctx, &d, x, w, bias, init, init + 1, y), DWCONV_ERROR_ALIASING,
           "final states one element past the initial states");
    REFUSE(dwconv_causal_forward(ctx, &d, x, w, bias, y, fin, y), DWCONV_ERROR_ALIASING, "y over the initial states");
    who = "dwconv_causal_varlen_forward";
    REFUSE(dwconv_causal_varlen_forward(ctx, &d, x, w, bias, cu_good, NULL, 2, NULL, NULL, y),
           DWCONV_ERROR_INVALID_VALUE, "cu_seqlens with batch 2");
    REFUSE(dwconv_causal_varlen_forward(ctx, &packed, x, w, bias, cu_good, ids, 2, NULL, NULL, y),
           DWCONV_ERROR_INVALID_VALUE, "cu_seqlens and seq_idx");
    REFUSE(dwconv_causal_varlen_forward(ctx, &packed, x, w, bias, cu_good, NULL, 0, NULL, NULL, y),
           DWCONV_ERROR_INVALID_VALUE, "cu_seqlens with 0 sequences");
    REFUSE(dwconv_causal_varlen_forward(ctx, &packed, x, w, bias, NULL, ids, 0, init, NULL, y),
           DWCONV_ERROR_INVALID_VALUE, "seq_idx with initial states");
    REFUSE(dwconv_causal_varlen_forward(ctx, &packed, x, w, bias, NULL, ids, 0, NULL, fin, y),
           DWCONV_ERROR_INVALID_VALUE, "seq_idx with final states");
    REFUSE(dwconv_causal_varlen_forward(ctx, &packed, x, w, bias, NULL, ids, 2, NULL, NULL, y),
           DWCONV_ERROR_INVALID_VALUE, "seq_idx with sequences 2");
    REFUSE(dwconv_causal_varlen_forward(ctx, &packed, x, w, bias, NULL, NULL, 0, NULL, NULL, y),
           DWCONV_ERROR_NULL_POINTER, "neither cu_seqlens nor seq_idx");
    bad = packed, bad.padding = DWCONV_PADDING_SAME;
    REFUSE(dwconv_causal_varlen_forward(ctx, &bad, x, w, bias, cu_good, NULL, 2, NULL, NULL, y),
           DWCONV_ERROR_INVALID_VALUE, "packed, SAME padding");
    dwconv_desc twenty = packed;
    twenty.length = 20;
    refuse_indices(ctx, dwconv_causal_varlen_forward(ctx, &twenty, x, w, bias, cu_s, NULL, 2, init, fin, y), who,
                   "cu_seqlens[0]", "cu_seqlens not starting at 0");
    refuse_indices(ctx, dwconv_causal_varlen_forward(ctx, &twenty, x, w, bias, cu_d, NULL, 3, NULL, fin, y), who,
                   "decreases", "cu_seqlens decreasing");
    refuse_indices(ctx, dwconv_causal_varlen_forward(ctx, &twenty, x, w, bias, cu_p, NULL, 2, init, fin, y), who,
                   "must be length", "cu_seqlens past L");
    refuse_indices(ctx, dwconv_causal_varlen_forward(ctx, &twenty, x, w, bias, cu_e, NULL, 2, init, fin, y), who,
                   "must be length", "cu_seqlens ending before L");
    who = "dwconv_causal_update";
    REFUSE(dwconv_causal_update(ctx, &one, x, pool, 4, 2, w, bias, NULL, NULL, y), DWCONV_ERROR_INVALID_VALUE,
           "state_length 2 < S = 3");
    REFUSE(dwconv_causal_update(ctx, &one, x, pool, 0, 4, w, bias, NULL, NULL, y), DWCONV_ERROR_INVALID_VALUE,
           "pool_size 0");
    REFUSE(dwconv_causal_update(ctx, &one, x, pool, 1, 4, w, bias, NULL, NULL, y), DWCONV_ERROR_INVALID_VALUE,
           "pool of 1 for 2 sequences without indices");
    REFUSE(dwconv_causal_update(ctx, &one, x, NULL, 4, 4, w, bias, NULL, NULL, y), DWCONV_ERROR_NULL_POINTER,
           "NULL pool");
    REFUSE(dwconv_causal_update(ctx, &one, x, y, 4, 4, w, bias, NULL, NULL, y + 4), DWCONV_ERROR_ALIASING,
           "pool over y");
    REFUSE(dwconv_causal_update(ctx, &one, x, pool, 4, 4, w, bias, NULL, sl_ok, x), DWCONV_ERROR_ALIASING,
           "y over x");
    bad = one, bad.padding = DWCONV_PADDING_EXPLICIT, bad.pad_left = 2;
    REFUSE(dwconv_causal_update(ctx, &bad, x, pool, 4, 4, w, bias, NULL, NULL, y), DWCONV_ERROR_INVALID_VALUE,
           "pad_left 2 for K 4");
    refuse_indices(ctx, dwconv_causal_update(ctx, &one, x, pool, 4, 4, w, bias, NULL, sl_out, y), who,
                   "outside the pool", "slot 4 of a pool of 4");
    refuse_indices(ctx, dwconv_causal_update(ctx, &one, x, pool, 4, 4, w, bias, NULL, sl_twice, y), who,
                   "both slot", "one slot twice");
    refuse_indices(ctx, dwconv_causal_update(ctx, &one, x, pool, 4, 4, w, bias, seen, sl_ok, y), who,
                   "cache_seqlens", "negative cache_seqlens");
    who = "dwconv_causal_backward";
    REFUSE(dwconv_causal_backward(NULL, &d, x, w, bias, init, dy, dfinal, dx, dw, db, dinit), DWCONV_ERROR_NULL_POINTER,
           "NULL context (backward)");
    REFUSE(dwconv_causal_backward(ctx, &d, x, w, bias, init, NULL, dfinal, dx, dw, db, dinit), DWCONV_ERROR_NULL_POINTER,
           "NULL dy");
    REFUSE(dwconv_causal_backward(ctx, &d, x, w, bias, init, dy, dfinal, NULL, NULL, NULL, NULL),
           DWCONV_ERROR_NULL_POINTER, "every gradient NULL");
    REFUSE(dwconv_causal_backward(ctx, &d, x, w, bias, init, dy, dfinal, dx, dw, db, dx + 117), DWCONV_ERROR_ALIASING,
           "dinitial_states over dx's end");
    REFUSE(dwconv_causal_backward(ctx, &d, x, w, bias, init, dy, dfinal, dx, dw, db, init), DWCONV_ERROR_ALIASING,
           "dinitial_states over initial_states");
    REFUSE(dwconv_causal_backward(ctx, &d, x, w, bias, init, dy, dfinal, dx, dw, db, dfinal), DWCONV_ERROR_ALIASING,
           "dinitial_states over dfinal_states");
    bad = d, bad.padding = DWCONV_PADDING_SAME;
    REFUSE(dwconv_causal_backward(ctx, &bad, x, w, bias, init, dy, dfinal, dx, dw, db, dinit),
           DWCONV_ERROR_INVALID_VALUE, "SAME padding (backward)");
#undef REFUSE
    float *after = malloc(out_bytes);
    op_get(&a, after, out, out_bytes);
    ck_assert_msg(test_untouched(after, out_bytes), "a refused call wrote into an output");
    free(after);
    /* the inputs were never written either */
    float in_after[276];
    op_get(&a, in_after, in, sizeof in_after);
    ck_assert(!memcmp(in_after, in_host, sizeof in_after));
    op_release(&a);
    dwconv_context_destroy(ctx);
}
END_TEST

int main(void) {
    char why[512];
    if (!op_backend_usable(why, sizeof why)) {
        printf("check_causal: SKIP: backend %s cannot run here: %s\n", dwconv_backend_name(op_backend()), why);
        return 77;
    }
    Suite *s = suite_create("causal");
    TCase *t = tcase_create("equivalence");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, every_form_gives_the_whole_runs_bits);
    tcase_add_test(t, packed_sequences_give_their_own_bits);
    tcase_add_test(t, causal_backward_is_the_extended_rows_backward);
    suite_add_tcase(s, t);
    t = tcase_create("bad input");
    tcase_add_test(t, bad_input_is_refused_untouched);
    suite_add_tcase(s, t);
    return op_run(s);
}
