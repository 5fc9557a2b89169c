/*
 * The backward pass at the operation level (issue 12), on the backend named by
 * DWCONV_TEST_BACKEND (default cpu; exit 77 = skip where it cannot run). For GPU
 * backends run it with CK_FORK=no: a GPU runtime does not survive Check's fork.
 *
 *   gradients   hundreds of random descriptors over every option against this file's
 *               own float64 gradient, within a bound from each sum's length; and bit
 *               for bit against dwconv_reference_backward (the contract), twice
 *   adjoint     <forward(x), g> = <x, dx> in float64, every padding mode
 *   threads     cpu: 1, 2, 3 and 7 threads give the reference's bits
 *   bad input   every refusal: its status, a message naming the call, outputs and
 *               their guards untouched
 *
 * The float64 model here shares no code with src/reference: its own padding rules,
 * activation derivatives and element decoding (tests/op_check.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_check.h"

/* ---- one random problem ------------------------------------------------------------ */

typedef struct tensor3 {
    int64_t size[3], stride[3]; /* batch, channel, position */
    int64_t span;               /* elements from the first to one past the last */
    int custom;                 /* strides other than desc.layout's contiguous ones */
} tensor3;

static int64_t at3(const tensor3 *t, int64_t b, int64_t c, int64_t l) {
    return b * t->stride[0] + c * t->stride[1] + l * t->stride[2];
}

static void contiguous3(tensor3 *t, dwconv_layout layout, int64_t B, int64_t C, int64_t n) {
    t->size[0] = B, t->size[1] = C, t->size[2] = n;
    t->stride[0] = C * n;
    t->stride[1] = layout == DWCONV_LAYOUT_NCL ? n : 1;
    t->stride[2] = layout == DWCONV_LAYOUT_NCL ? 1 : C;
    t->span = B * C * n;
    t->custom = 0;
}

/* Random strides: the dimensions in a random order, the innermost 1 or 2 apart, each
 * next one past the previous one's reach plus a gap of 0..3. */
static void strided3(test_rng *r, tensor3 *t, int64_t B, int64_t C, int64_t n) {
    int order[3] = {0, 1, 2};
    for (int i = 2; i > 0; i--) {
        int j = (int)test_rng_range(r, 0, i), s = order[i];
        order[i] = order[j], order[j] = s;
    }
    t->size[0] = B, t->size[1] = C, t->size[2] = n;
    int64_t next = test_rng_range(r, 1, 2);
    for (int i = 0; i < 3; i++) {
        t->stride[order[i]] = next;
        next = next * t->size[order[i]] + test_rng_range(r, 0, 3);
        if (next <= t->stride[order[i]] * (t->size[order[i]] - 1)) next = t->stride[order[i]] * t->size[order[i]];
    }
    t->span = 1;
    for (int i = 0; i < 3; i++) t->span += (t->size[i] - 1) * t->stride[i];
    t->custom = 1;
}

typedef struct bw_case {
    dwconv_desc d;
    int64_t pl, pr, L_out;
    dwconv_dtype grad;          /* dtype of dweight, dbias */
    int set_grad;               /* asked through dwconv_plan_set_grad_dtype */
    int bias, want_dx, want_dw, want_db;
    tensor3 x, dy, dx;
    void *hx, *hw, *hb, *hdy; /* host inputs: x and dy in their (strided) spans */
} bw_case;

static size_t esize(dwconv_dtype t) { return dwconv_dtype_size(t); }

/* A random descriptor over every option, K up to 40; small sizes, or B, C, L = size. */
static void draw_desc(test_rng *r, dwconv_desc *d, const int64_t *size) {
    for (;;) {
        int64_t K = test_rng_range(r, 0, 1) ? test_rng_range(r, 1, 7) : test_rng_range(r, 1, 40);
        dwconv_desc_init(d, size ? size[0] : test_rng_range(r, 1, 3), size ? size[1] : test_rng_range(r, 1, 5),
                         size ? size[2] : test_rng_range(r, 1, 160), K);
        d->stride = test_rng_range(r, 1, 4);
        d->dilation = test_rng_range(r, 1, 5);
        int64_t span = d->dilation * (K - 1), pick = test_rng_range(r, 0, 9);
        if (pick == 0) d->padding = DWCONV_PADDING_SAME, d->stride = 1;
        else if (pick == 1) d->padding = DWCONV_PADDING_CAUSAL;
        else {
            d->pad_left = test_rng_range(r, 0, span + 2);
            d->pad_right = test_rng_range(r, 0, 2) ? test_rng_range(r, 0, span + 2) : d->pad_left;
        }
        d->padding_mode = (dwconv_padding_mode)test_rng_range(r, 0, 3);
        d->layout = (dwconv_layout)test_rng_range(r, 0, 1);
        d->dtype = (dwconv_dtype)test_rng_range(r, 0, 2);
        d->weight_dtype = test_rng_range(r, 0, 1) ? d->dtype : DWCONV_F32;
        d->activation = (dwconv_activation)test_rng_range(r, 0, 2);
        if (dwconv_desc_resolve(d, NULL, NULL, NULL) == DWCONV_SUCCESS) return;
    }
}

static void fill(test_rng *r, dwconv_dtype t, void *p, int64_t n, int lo, int hi) {
    for (int64_t i = 0; i < n; i++) op_random_value(r, t, p, i, lo, hi);
}

static void *poisoned(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    ck_assert(p);
    test_poison(p, bytes);
    return p;
}

static void draw_case(test_rng *r, bw_case *c, int allow_strides, const int64_t *size) {
    memset(c, 0, sizeof *c);
    draw_desc(r, &c->d, size);
    const dwconv_desc *d = &c->d;
    ck_assert(dwconv_desc_resolve(d, &c->pl, &c->pr, &c->L_out) == DWCONV_SUCCESS);
    c->set_grad = test_rng_range(r, 0, 1);
    c->grad = c->set_grad && test_rng_range(r, 0, 1) ? DWCONV_F32 : d->weight_dtype;
    c->bias = (int)test_rng_range(r, 0, 1);
    do {
        c->want_dx = (int)test_rng_range(r, 0, 1);
        c->want_dw = (int)test_rng_range(r, 0, 1);
        c->want_db = (int)test_rng_range(r, 0, 1);
    } while (!c->want_dx && !c->want_dw && !c->want_db);
    const int64_t B = d->batch, C = d->channels, K = d->kernel_size, L = d->length;
    tensor3 *t[3] = {&c->x, &c->dy, &c->dx};
    const int64_t n[3] = {L, c->L_out, L};
    for (int i = 0; i < 3; i++) {
        if (allow_strides && test_rng_range(r, 0, 2) == 0) strided3(r, t[i], B, C, n[i]);
        else contiguous3(t[i], d->layout, B, C, n[i]);
    }
    if (c->x.custom || c->dy.custom || c->dx.custom) c->set_grad = 1; /* a plan is used */
    size_t es = esize(d->dtype), ws = esize(d->weight_dtype);
    c->hx = poisoned(es * (size_t)c->x.span);
    c->hdy = poisoned(es * (size_t)c->dy.span);
    c->hw = malloc(ws * (size_t)(C * K));
    c->hb = malloc(ws * (size_t)C);
    for (int64_t b = 0; b < B; b++)
        for (int64_t ch = 0; ch < C; ch++) {
            for (int64_t l = 0; l < L; l++) op_random_value(r, d->dtype, c->hx, at3(&c->x, b, ch, l), -3, 1);
            for (int64_t o = 0; o < c->L_out; o++)
                op_random_value(r, d->dtype, c->hdy, at3(&c->dy, b, ch, o), -3, 1);
        }
    fill(r, d->weight_dtype, c->hw, C * K, -3, 1);
    fill(r, d->weight_dtype, c->hb, C, -3, 1);
}

static void free_case(bw_case *c) { free(c->hx), free(c->hw), free(c->hb), free(c->hdy); }

/* ---- the float64 model ------------------------------------------------------------- */

/* The input position padded position j reads, as PyTorch's padding does (and so where
 * its gradient goes), or -1 for a zero. */
static int64_t source(dwconv_padding_mode mode, int64_t j, int64_t L) {
    if (j >= 0 && j < L) return j;
    switch (mode) {
    case DWCONV_PAD_REFLECT: return j < 0 ? -j : 2 * (L - 1) - j;
    case DWCONV_PAD_REPLICATE: return j < 0 ? 0 : L - 1;
    case DWCONV_PAD_CIRCULAR: return j < 0 ? j + L : j - L;
    default: return -1;
    }
}

static double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* The exact gradient and what the f32 computation may differ by. */
typedef struct expect {
    double value, abs_terms, slack; /* sum, sum of |terms|, error carried in from g */
    int64_t n;                      /* the longest chain of roundings */
} expect;

static int64_t ceil_log2(int64_t n) {
    int64_t k = 0;
    while (((int64_t)1 << k) < n) k++;
    return k;
}

/* |got - exact| within: the carried slack, 2*(n+2)*u32 of the terms for the f32 sums,
 * then one rounding to the output dtype. */
/* The first violation's description, and how many there were (check_model). */
static char first_violation[1024];
static int violations;

static void check_close(double got, const expect *e, dwconv_dtype out, const char *what,
                        int64_t i, const bw_case *c) {
    const double u = ldexp(1, -24);
    double acc = e->slack + 2.0 * (double)(e->n + 2) * u * (e->abs_terms + e->slack);
    double bound = acc + op_unit_roundoff(out) * (fabs(e->value) + acc) + op_tiny(out);
    if (fabs(got - e->value) <= bound) return;
    if (violations++ == 0)
        snprintf(first_violation, sizeof first_violation, "%s[%lld] = %.9g, float64 %.9g, bound %.3g (n %lld) [%s; grad %d, bias %d, "
           "strides x%d dy%d dx%d]",
           what, (long long)i, got, e->value, bound, (long long)e->n,
           test_desc_string(&c->d), (int)c->grad, c->bias, c->x.custom, c->dy.custom,
           c->dx.custom);
}

/* Checks dx, dweight, dbias (those wanted, host copies) against the float64 model:
 * the number of elements outside their bound (the first described in
 * first_violation). */
static int check_model(const bw_case *c, const void *dx, const void *dw, const void *db) {
    const dwconv_desc *d = &c->d;
    const int64_t B = d->batch, C = d->channels, K = d->kernel_size, L = d->length;
    const int64_t Lo = c->L_out, chunks = (Lo + 63) / 64;
    const double u = ldexp(1, -24);
    double *g = malloc(sizeof(double) * (size_t)Lo), *gerr = malloc(sizeof(double) * (size_t)Lo);
    double *xp = malloc(sizeof(double) * (size_t)(Lo * K));
    expect *ex = malloc(sizeof(expect) * (size_t)L), *ew = malloc(sizeof(expect) * (size_t)(K + 1));
    ck_assert(g && gerr && xp && ex && ew);
    violations = 0;
    for (int64_t ch = 0; ch < C; ch++) {
        memset(ew, 0, sizeof(expect) * (size_t)(K + 1));
        const double bias = c->bias ? op_decode(d->weight_dtype, c->hb, ch) : 0.0;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t o = 0; o < Lo; o++) { /* g and its uncertainty */
                double z = bias, zabs = fabs(bias);
                for (int64_t k = 0; k < K; k++) {
                    int64_t i = source(d->padding_mode, o * d->stride + k * d->dilation - c->pl, L);
                    double v = i < 0 ? 0.0 : op_decode(d->dtype, c->hx, at3(&c->x, b, ch, i));
                    double w = op_decode(d->weight_dtype, c->hw, ch * K + k);
                    xp[o * K + k] = v;
                    z += v * w, zabs += fabs(v * w);
                }
                double zerr = 2.0 * (double)(K + 2) * u * zabs;
                double dy = op_decode(d->dtype, c->hdy, at3(&c->dy, b, ch, o));
                if (d->activation == DWCONV_ACT_NONE) g[o] = dy, gerr[o] = 0;
                else if (d->activation == DWCONV_ACT_RELU) {
                    g[o] = z > 0 ? dy : 0.0;
                    gerr[o] = fabs(z) <= zerr ? fabs(dy) : 0.0; /* the sign is uncertain */
                } else { /* silu' = s (1 + z (1 - s)); |silu''| <= 1/2 */
                    double s = sigmoid(z);
                    g[o] = dy * s * (1.0 + z * (1.0 - s));
                    gerr[o] = fabs(dy) * (0.5 * zerr + 64.0 * u);
                }
            }
            /* dx: each (o, k) adds g*w where its tap read */
            memset(ex, 0, sizeof(expect) * (size_t)L);
            for (int64_t o = 0; o < Lo; o++)
                for (int64_t k = 0; k < K; k++) {
                    int64_t i = source(d->padding_mode, o * d->stride + k * d->dilation - c->pl, L);
                    if (i < 0) continue;
                    double w = op_decode(d->weight_dtype, c->hw, ch * K + k);
                    ex[i].value += g[o] * w, ex[i].abs_terms += fabs(g[o] * w);
                    ex[i].slack += gerr[o] * fabs(w), ex[i].n++;
                }
            for (int64_t i = 0; dx && i < L; i++)
                check_close(op_decode(d->dtype, dx, at3(&c->dx, b, ch, i)), &ex[i], d->dtype,
                            "dx", at3(&c->dx, b, ch, i), c);
            for (int64_t o = 0; o < Lo; o++) {
                for (int64_t k = 0; k < K; k++) {
                    ew[k].value += g[o] * xp[o * K + k], ew[k].abs_terms += fabs(g[o] * xp[o * K + k]);
                    ew[k].slack += gerr[o] * fabs(xp[o * K + k]);
                }
                ew[K].value += g[o], ew[K].abs_terms += fabs(g[o]), ew[K].slack += gerr[o];
            }
        }
        for (int64_t k = 0; k <= K; k++) { /* a chunk's chain, then the two trees */
            ew[k].n = (Lo < 64 ? Lo : 64) + ceil_log2(chunks) + ceil_log2(B);
            if (k < K && dw) check_close(op_decode(c->grad, dw, ch * K + k), &ew[k], c->grad, "dweight", ch * K + k, c);
            if (k == K && db) check_close(op_decode(c->grad, db, ch), &ew[k], c->grad, "dbias", ch, c);
        }
    }
    free(g), free(gerr), free(xp), free(ex), free(ew);
    return violations;
}

/* ---- running it ---------------------------------------------------------------------- */

typedef struct bw_result {
    void *dx, *dw, *db; /* host copies (NULL when not wanted); dx in c->dx's span */
} bw_result;

static void free_result(bw_result *r) { free(r->dx), free(r->dw), free(r->db); }

/* Runs the case on ctx (a plan when it needs one) into poisoned outputs; checks the
 * guards and that dx's gaps were not written. */
static bw_result run_case(dwconv_context *ctx, const bw_case *c) {
    const dwconv_desc *d = &c->d;
    const size_t es = esize(d->dtype), ws = esize(d->weight_dtype), gs = esize(c->grad);
    const size_t dx_bytes = es * (size_t)c->dx.span, dw_bytes = gs * (size_t)(d->channels * d->kernel_size),
                 db_bytes = gs * (size_t)d->channels;
    op_arena a = {.ctx = ctx};
    const void *x = op_put(&a, c->hx, es * (size_t)c->x.span);
    const void *dy = op_put(&a, c->hdy, es * (size_t)c->dy.span);
    const void *w = op_put(&a, c->hw, ws * (size_t)(d->channels * d->kernel_size));
    const void *bias = c->bias ? op_put(&a, c->hb, ws * (size_t)d->channels) : NULL;
    void *dx = c->want_dx ? op_put(&a, NULL, dx_bytes) : NULL;
    void *dw = c->want_dw ? op_put(&a, NULL, dw_bytes) : NULL;
    void *db = c->want_db ? op_put(&a, NULL, db_bytes) : NULL;
    dwconv_status st;
    if (c->set_grad) {
        dwconv_plan *plan = NULL;
        ck_assert_msg(dwconv_plan_create(&plan, ctx, d) == DWCONV_SUCCESS, "plan: %s", dwconv_last_error());
        const tensor3 *t[3] = {&c->x, &c->dy, &c->dx};
        const dwconv_tensor which[3] = {DWCONV_TENSOR_X, DWCONV_TENSOR_DY, DWCONV_TENSOR_DX};
        for (int i = 0; i < 3; i++)
            if (t[i]->custom)
                ck_assert_msg(dwconv_plan_set_strides(plan, which[i], t[i]->stride[0], t[i]->stride[1],
                                                      t[i]->stride[2]) == DWCONV_SUCCESS,
                              "strides: %s", dwconv_last_error());
        ck_assert_msg(dwconv_plan_set_grad_dtype(plan, c->grad) == DWCONV_SUCCESS, "grad dtype: %s",
                      dwconv_last_error());
        st = dwconv_plan_backward(plan, x, w, bias, dy, dx, dw, db);
        dwconv_plan_destroy(plan);
    } else {
        st = dwconv_backward(ctx, d, x, w, bias, dy, dx, dw, db);
    }
    ck_assert_msg(st == DWCONV_SUCCESS, "backward on %s: %s [%s]", dwconv_backend_name(op_backend()),
                  dwconv_last_error(), test_desc_string(d));
    bw_result r = {NULL, NULL, NULL};
    if (dx) r.dx = malloc(dx_bytes), op_get(&a, r.dx, dx, dx_bytes);
    if (dw) r.dw = malloc(dw_bytes), op_get(&a, r.dw, dw, dw_bytes);
    if (db) r.db = malloc(db_bytes), op_get(&a, r.db, db, db_bytes);
    op_release(&a);
    if (r.dx && c->dx.custom) { /* the gaps between dx's elements are not written */
        char *mark = calloc((size_t)c->dx.span, 1);
        for (int64_t b = 0; b < d->batch; b++)
            for (int64_t ch = 0; ch < d->channels; ch++)
                for (int64_t l = 0; l < d->length; l++) mark[at3(&c->dx, b, ch, l)] = 1;
        for (int64_t i = 0; i < c->dx.span; i++)
            EXPECT(mark[i] || test_untouched((char *)r.dx + (size_t)i * es, es),
                   "dx's gap element %lld was written [%s]", (long long)i, test_desc_string(d));
        free(mark);
    }
    return r;
}

/* A tensor3's elements copied into desc.layout's contiguous order. */
static void *gather(const tensor3 *t, dwconv_layout layout, const void *src, size_t es) {
    tensor3 dense;
    contiguous3(&dense, layout, t->size[0], t->size[1], t->size[2]);
    char *out = malloc(es * (size_t)dense.span);
    for (int64_t b = 0; b < t->size[0]; b++)
        for (int64_t c = 0; c < t->size[1]; c++)
            for (int64_t l = 0; l < t->size[2]; l++)
                memcpy(out + es * (size_t)at3(&dense, b, c, l), (const char *)src + es * (size_t)at3(t, b, c, l), es);
    return out;
}

/* The oracle's gradients (grad dtype = weight dtype), contiguous. */
static bw_result run_reference(const bw_case *c) {
    const dwconv_desc *d = &c->d;
    const size_t es = esize(d->dtype), ws = esize(d->weight_dtype);
    void *x = gather(&c->x, d->layout, c->hx, es), *dy = gather(&c->dy, d->layout, c->hdy, es);
    bw_result r = {malloc(es * (size_t)(d->batch * d->channels * d->length)),
                   malloc(ws * (size_t)(d->channels * d->kernel_size)), malloc(ws * (size_t)d->channels)};
    ck_assert_msg(dwconv_reference_backward(d, x, c->hw, c->bias ? c->hb : NULL, dy, r.dx, r.dw, r.db) ==
                      DWCONV_SUCCESS, "reference: %s", dwconv_last_error());
    free(x), free(dy);
    return r;
}

/* got (grad dtype) against the oracle (weight dtype): equal bits, or, for an f32
 * gradient of a 16-bit weight, the oracle's bits once rounded. */
static void same_grad(const bw_case *c, const void *got, const void *ref, int64_t n, const char *what) {
    const dwconv_dtype wt = c->d.weight_dtype;
    for (int64_t i = 0; i < n; i++) {
        uint16_t mine = 0, theirs = ((const uint16_t *)ref)[i];
        if (c->grad == wt) {
            EXPECT(!memcmp((const char *)got + i * esize(wt), (const char *)ref + i * esize(wt), esize(wt)),
                   "%s[%lld] differs from the reference [%s]", what, (long long)i, test_desc_string(&c->d));
            continue;
        }
        op_store_f32(wt, &mine, 0, ((const float *)got)[i]);
        EXPECT(mine == theirs, "%s[%lld] = %.9g (f32) rounds to 0x%04x, the reference has 0x%04x [%s]", what,
               (long long)i, (double)((const float *)got)[i], mine, theirs, test_desc_string(&c->d));
    }
}

static void same_as_reference(const bw_case *c, const bw_result *got, const bw_result *ref) {
    const dwconv_desc *d = &c->d;
    const size_t es = esize(d->dtype);
    if (got->dx) {
        void *dense = gather(&c->dx, d->layout, got->dx, es);
        int64_t i = test_first_difference(dense, ref->dx, es, d->batch * d->channels * d->length);
        EXPECT(i < 0, "dx[%lld] (contiguous) differs from dwconv_reference_backward's [%s]", (long long)i,
               test_desc_string(d));
        free(dense);
    }
    if (got->dw) same_grad(c, got->dw, ref->dw, d->channels * d->kernel_size, "dweight");
    if (got->db) same_grad(c, got->db, ref->db, d->channels, "dbias");
}

static void same_bits(const void *a, const void *b, size_t bytes, const char *what, const bw_case *c) {
    EXPECT((a == NULL) == (b == NULL) && (!a || !memcmp(a, b, bytes)), "%s: a second call gave other bits [%s]",
           what, test_desc_string(&c->d));
}

START_TEST(random_gradients) {
    const int cases = test_quick() ? 60 : 400;
    test_rng rng = test_rng_seed(1200 + (uint64_t)_i);
    dwconv_context *ctx = op_context();
    for (int n = 0; n < cases; n++) {
        bw_case c;
        draw_case(&rng, &c, 1, NULL);
        bw_result got = run_case(ctx, &c), again = run_case(ctx, &c), ref = run_reference(&c);
        EXPECT(check_model(&c, got.dx, got.dw, got.db) == 0, "%d elements outside the bound; %s",
               violations, first_violation);
        same_as_reference(&c, &got, &ref);
        const size_t gs = esize(c.grad);
        same_bits(got.dx, again.dx, esize(c.d.dtype) * (size_t)c.dx.span, "dx", &c);
        same_bits(got.dw, again.dw, gs * (size_t)(c.d.channels * c.d.kernel_size), "dweight", &c);
        same_bits(got.db, again.db, gs * (size_t)c.d.channels, "dbias", &c);
        free_result(&got), free_result(&again), free_result(&ref), free_case(&c);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* The model's own check: a wrong gradient must be caught, else the bound says nothing.
 * dx with reflect's gradient dropped (what a backend treating every mode as zeros
 * would give), and dweight moved by 2^-6 of itself, must both fail. */
static void self_check(bw_case *c, bw_result *ref, bw_result *bad) {
    ck_assert_msg(check_model(c, bad->dx, NULL, NULL) > 0, "dropped reflect gradients pass the model");
    ck_assert_msg(check_model(c, ref->dx, ref->dw, NULL) == 0, "the reference fails the model: %s",
                  first_violation);
    float *dw = ref->dw;
    dw[0] += fmaxf(fabsf(dw[0]), 1.0f) * 0x1p-6f;
    ck_assert_msg(check_model(c, NULL, ref->dw, NULL) > 0, "a dweight off by 2^-6 passes the model");
    free_result(ref), free_result(bad), free_case(c);
}

START_TEST(model_catches_a_wrong_route) {
    test_rng rng = test_rng_seed(99);
    for (;;) { /* a reflect case whose taps read the padding */
        bw_case c;
        draw_case(&rng, &c, 0, NULL);
        if (c.d.padding_mode == DWCONV_PAD_REFLECT && c.d.dtype == DWCONV_F32 &&
            c.d.activation == DWCONV_ACT_NONE && c.want_dx) {
            bw_result ref = run_reference(&c);
            bw_case wrong = c;
            wrong.d.padding_mode = DWCONV_PAD_ZEROS;
            bw_result bad = run_reference(&wrong);
            if (memcmp(bad.dx, ref.dx, 4 * (size_t)(c.d.batch * c.d.channels * c.d.length))) {
                self_check(&c, &ref, &bad);
                return;
            }
            free_result(&ref), free_result(&bad);
        }
        free_case(&c);
    }
}
END_TEST

/* ---- the adjoint identity ------------------------------------------------------------ */

/* <y, g> = <x, dx> for y = forward(x) and dx = backward(g), no activation and no bias:
 * the forward's padding is a linear map and dx applies its transpose. The bound: each
 * y and dx element's own error, bounded without the routing (a position gets at most
 * 3 taps per k: direct, reflected or wrapped, from each side). */
START_TEST(adjoint_identity) {
    const int cases = test_quick() ? 40 : 200;
    test_rng rng = test_rng_seed(4200);
    dwconv_context *ctx = op_context();
    for (int n = 0; n < cases; n++) {
        bw_case c;
        draw_case(&rng, &c, 0, NULL);
        dwconv_desc *d = &c.d;
        d->activation = DWCONV_ACT_NONE, c.bias = 0, c.want_dx = 1;
        d->padding_mode = (dwconv_padding_mode)(n % 4);
        if (dwconv_desc_resolve(d, NULL, NULL, NULL) != DWCONV_SUCCESS) {
            free_case(&c);
            continue;
        }
        const int64_t B = d->batch, C = d->channels, K = d->kernel_size, L = d->length, Lo = c.L_out;
        const size_t es = esize(d->dtype), ws = esize(d->weight_dtype);
        op_arena a = {.ctx = ctx};
        const void *x = op_put(&a, c.hx, es * (size_t)(B * C * L)), *w = op_put(&a, c.hw, ws * (size_t)(C * K));
        const void *g = op_put(&a, c.hdy, es * (size_t)(B * C * Lo));
        void *y = op_put(&a, NULL, es * (size_t)(B * C * Lo)), *dx = op_put(&a, NULL, es * (size_t)(B * C * L));
        ck_assert_msg(dwconv_forward(ctx, d, x, w, NULL, y) == DWCONV_SUCCESS, "forward: %s", dwconv_last_error());
        ck_assert_msg(dwconv_backward(ctx, d, x, w, NULL, g, dx, NULL, NULL) == DWCONV_SUCCESS, "backward: %s",
                      dwconv_last_error());
        void *hy = malloc(es * (size_t)(B * C * Lo)), *hdx = malloc(es * (size_t)(B * C * L));
        op_get(&a, hy, y, es * (size_t)(B * C * Lo));
        op_get(&a, hdx, dx, es * (size_t)(B * C * L));
        op_release(&a);
        const double u = ldexp(1, -24), uo = op_unit_roundoff(d->dtype);
        const double eps = 2.0 * (double)(3 * K + 2) * u + 2.0 * uo;
        double yg = 0, xdx = 0, bound = 0, maxx = 0, maxg = 0;
        for (int64_t i = 0; i < B * C * L; i++) maxx = fmax(maxx, fabs(op_decode(d->dtype, c.hx, i)));
        for (int64_t i = 0; i < B * C * Lo; i++) maxg = fmax(maxg, fabs(op_decode(d->dtype, c.hdy, i)));
        for (int64_t b = 0; b < B; b++)
            for (int64_t ch = 0; ch < C; ch++) {
                double wsum = 0;
                for (int64_t k = 0; k < K; k++) wsum += fabs(op_decode(d->weight_dtype, c.hw, ch * K + k));
                for (int64_t o = 0; o < Lo; o++) {
                    int64_t i = at3(&c.dy, b, ch, o);
                    double gv = op_decode(d->dtype, c.hdy, i);
                    yg += op_decode(d->dtype, hy, i) * gv;
                    bound += fabs(gv) * (eps * maxx * wsum + op_tiny(d->dtype));
                }
                for (int64_t l = 0; l < L; l++) {
                    int64_t i = at3(&c.x, b, ch, l);
                    double xv = op_decode(d->dtype, c.hx, i);
                    xdx += xv * op_decode(d->dtype, hdx, i);
                    bound += fabs(xv) * (eps * 3.0 * maxg * wsum + op_tiny(d->dtype));
                }
            }
        EXPECT(fabs(yg - xdx) <= bound, "<y, g> = %.12g, <x, dx> = %.12g, bound %.3g [%s]", yg, xdx, bound,
               test_desc_string(d));
        free(hy), free(hdx), free_case(&c);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- threads ------------------------------------------------------------------------- */

START_TEST(thread_counts_give_the_reference_bits) {
    dwconv_context *ctx = op_context();
    if (op_backend() != DWCONV_BACKEND_CPU) {
        printf("check_backward: SKIP thread_counts_give_the_reference_bits: cpu only\n");
        dwconv_context_destroy(ctx);
        return;
    }
    test_rng rng = test_rng_seed(777);
    const int threads[] = {1, 2, 3, 7};
    for (int n = 0; n < (test_quick() ? 3 : 8); n++) {
        /* large enough for every thread to get work: many rows and chunks */
        const int64_t size[3] = {1 + n % 4, 16 + 13 * n, 300 + 97 * n};
        bw_case sized;
        draw_case(&rng, &sized, n % 2, size);
        sized.want_dx = sized.want_dw = sized.want_db = 1;
        bw_result ref = run_reference(&sized);
        for (int t_i = 0; t_i < 4; t_i++) {
            ck_assert(dwconv_context_set_threads(ctx, threads[t_i]) == DWCONV_SUCCESS);
            bw_result got = run_case(ctx, &sized);
            same_as_reference(&sized, &got, &ref);
            free_result(&got);
        }
        free_result(&ref), free_case(&sized);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- bad input ----------------------------------------------------------------------- */

typedef struct bad_setup {
    dwconv_context *ctx;
    op_arena a;
    dwconv_desc d;
    char *x, *w, *b, *dy, *dx, *dw, *db; /* backend memory */
    size_t nx, nw, ny;                   /* bytes of x, weight, y */
} bad_setup;

static void bad_open(bad_setup *s) {
    memset(s, 0, sizeof *s);
    s->ctx = op_context();
    s->a.ctx = s->ctx;
    dwconv_desc_init(&s->d, 2, 3, 50, 5);
    s->d.padding = DWCONV_PADDING_SAME;
    s->nx = 4 * 2 * 3 * 50, s->nw = 4 * 3 * 5, s->ny = s->nx;
    test_rng rng = test_rng_seed(5);
    char *hx = malloc(s->nx), *hw = malloc(s->nw);
    fill(&rng, DWCONV_F32, hx, 300, -3, 1);
    fill(&rng, DWCONV_F32, hw, 15, -3, 1);
    /* one block holds x, then dy: the overlap cases point into it */
    s->x = op_put(&s->a, NULL, 2 * s->nx);
    ck_assert(dwconv_copy_to_backend(s->ctx, s->x, hx, s->nx) == DWCONV_SUCCESS);
    ck_assert(dwconv_copy_to_backend(s->ctx, s->x + s->nx, hx, s->nx) == DWCONV_SUCCESS);
    s->dy = s->x + s->nx;
    s->w = op_put(&s->a, hw, s->nw);
    s->b = op_put(&s->a, hw, 12);
    /* the outputs: one block dx | dweight | dbias, poisoned */
    s->dx = op_put(&s->a, NULL, s->nx + s->nw + 12);
    s->dw = s->dx + s->nx;
    s->db = s->dw + s->nw;
    free(hx), free(hw);
}

/* The outputs' block still poisoned, its guards too (op_release checks them). */
static void bad_close(bad_setup *s) {
    size_t n = s->nx + s->nw + 12;
    char *h = malloc(n);
    op_get(&s->a, h, s->dx, n);
    ck_assert_msg(test_untouched(h, n), "a refused call wrote into an output");
    free(h);
    op_release(&s->a);
    dwconv_context_destroy(s->ctx);
}

START_TEST(bad_input_is_refused_untouched) {
    bad_setup s;
    bad_open(&s);
    const dwconv_desc *d = &s.d;
    const char *who = "dwconv_backward";
#define REFUSE(call, want, what) op_expect_refusal((call), (want), who, what)
    REFUSE(dwconv_backward(NULL, d, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_NULL_POINTER,
           "NULL context");
    REFUSE(dwconv_backward(s.ctx, NULL, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_NULL_POINTER,
           "NULL desc");
    REFUSE(dwconv_backward(s.ctx, d, NULL, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_NULL_POINTER,
           "NULL x");
    REFUSE(dwconv_backward(s.ctx, d, s.x, NULL, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_NULL_POINTER,
           "NULL weight");
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, NULL, s.dx, s.dw, s.db), DWCONV_ERROR_NULL_POINTER,
           "NULL dy");
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, NULL, NULL, NULL), DWCONV_ERROR_NULL_POINTER,
           "every gradient NULL");
    /* outputs overlapping each other */
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, s.dx, s.dx + 8, s.db), DWCONV_ERROR_ALIASING,
           "dweight inside dx");
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, NULL, s.dw, s.dw + 4), DWCONV_ERROR_ALIASING,
           "dbias overlaps dweight");
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.dx + s.nx - 4), DWCONV_ERROR_ALIASING,
           "dbias overlaps dx's last element");
    /* outputs overlapping inputs (the inputs are never written either) */
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, s.x + 4, NULL, NULL), DWCONV_ERROR_ALIASING,
           "dx overlaps x");
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, s.dy - 4, NULL, NULL), DWCONV_ERROR_ALIASING,
           "dx overlaps dy's first element");
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, NULL, s.w + 4, NULL), DWCONV_ERROR_ALIASING,
           "dweight overlaps weight");
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, NULL, NULL, s.b), DWCONV_ERROR_ALIASING,
           "dbias is bias");
    REFUSE(dwconv_backward(s.ctx, d, s.x, s.w, s.b, s.dy, NULL, s.b, NULL), DWCONV_ERROR_ALIASING,
           "dweight over bias");
    /* descriptors */
    dwconv_desc bad = *d;
    bad.kernel_size = 0;
    REFUSE(dwconv_backward(s.ctx, &bad, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_INVALID_VALUE,
           "K = 0");
    bad = *d, bad.dtype = (dwconv_dtype)7;
    REFUSE(dwconv_backward(s.ctx, &bad, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_INVALID_VALUE,
           "dtype 7");
    bad = *d, bad.weight_dtype = DWCONV_F16;
    REFUSE(dwconv_backward(s.ctx, &bad, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_INVALID_VALUE,
           "f16 weight for f32 data");
    bad = *d, bad.padding = DWCONV_PADDING_EXPLICIT, bad.pad_left = bad.pad_right = 0, bad.kernel_size = 60;
    REFUSE(dwconv_backward(s.ctx, &bad, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_EMPTY_OUTPUT,
           "K > L without padding");
    bad = *d, bad.padding = DWCONV_PADDING_EXPLICIT, bad.pad_left = 50, bad.padding_mode = DWCONV_PAD_REFLECT;
    REFUSE(dwconv_backward(s.ctx, &bad, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_PADDING_TOO_LARGE,
           "reflect pad = L");
    bad = *d, bad.stride = 2;
    REFUSE(dwconv_backward(s.ctx, &bad, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_INVALID_VALUE,
           "SAME with stride 2");
    /* the plan's options */
    dwconv_plan *plan = NULL;
    ck_assert(dwconv_plan_create(&plan, s.ctx, d) == DWCONV_SUCCESS);
    who = "dwconv_plan_set_grad_dtype";
    REFUSE(dwconv_plan_set_grad_dtype(plan, DWCONV_F16), DWCONV_ERROR_INVALID_VALUE, "f16 gradient of an f32 weight");
    REFUSE(dwconv_plan_set_grad_dtype(plan, (dwconv_dtype)9), DWCONV_ERROR_INVALID_VALUE, "grad dtype 9");
    REFUSE(dwconv_plan_set_grad_dtype(NULL, DWCONV_F32), DWCONV_ERROR_NULL_POINTER, "NULL plan");
    who = "dwconv_plan_set_strides";
    REFUSE(dwconv_plan_set_strides(plan, DWCONV_TENSOR_DX, 150, 0, 1), DWCONV_ERROR_INVALID_VALUE, "stride 0");
    REFUSE(dwconv_plan_set_strides(plan, DWCONV_TENSOR_DX, 150, 50, -1), DWCONV_ERROR_INVALID_VALUE,
           "negative stride");
    REFUSE(dwconv_plan_set_strides(plan, DWCONV_TENSOR_DX, 150, 1, 1), DWCONV_ERROR_INVALID_VALUE,
           "dx's elements share addresses");
    REFUSE(dwconv_plan_set_strides(plan, (dwconv_tensor)4, 150, 50, 1), DWCONV_ERROR_INVALID_VALUE,
           "tensor 4");
    who = "dwconv_plan_backward";
    REFUSE(dwconv_plan_backward(NULL, s.x, s.w, s.b, s.dy, s.dx, s.dw, s.db), DWCONV_ERROR_NULL_POINTER,
           "NULL plan");
    REFUSE(dwconv_plan_backward(plan, s.x, s.w, s.b, s.dy, NULL, NULL, NULL), DWCONV_ERROR_NULL_POINTER,
           "every gradient NULL (plan)");
    REFUSE(dwconv_plan_backward(plan, s.x, s.w, s.b, s.dy, s.dx, s.dx + 4, NULL), DWCONV_ERROR_ALIASING,
           "dweight inside dx (plan)");
    /* a strided x whose reach now covers dx */
    ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_X, 300, 100, 2) == DWCONV_SUCCESS);
    REFUSE(dwconv_plan_backward(plan, s.x, s.w, s.b, s.x, s.dy, NULL, NULL), DWCONV_ERROR_ALIASING,
           "dx inside a strided x's reach");
    dwconv_plan_destroy(plan);
#undef REFUSE
    bad_close(&s);
}
END_TEST

int main(void) {
    char why[512];
    if (!op_backend_usable(why, sizeof why)) {
        printf("check_backward: SKIP: backend %s cannot run here: %s\n", dwconv_backend_name(op_backend()),
               why);
        return 77;
    }
    Suite *s = suite_create("backward");
    TCase *t = tcase_create("gradients");
    tcase_set_timeout(t, 0);
    tcase_add_loop_test(t, random_gradients, 0, 1);
    tcase_add_test(t, adjoint_identity);
    tcase_add_test(t, thread_counts_give_the_reference_bits);
    suite_add_tcase(s, t);
    tcase_add_test(t, model_catches_a_wrong_route);
    t = tcase_create("bad input");
    tcase_add_test(t, bad_input_is_refused_untouched);
    suite_add_tcase(s, t);
    return op_run(s);
}
