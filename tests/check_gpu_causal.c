/*
 * The GPU backend's causal operations (issue 13) against the cpu backend, bit for bit:
 * every output and state is a twin (host and device copies of the same bytes, with
 * GPU_CASE_GUARD poisoned bytes on each side), the cpu runs on the host twin, the GPU
 * on the device twin, and the two must end identical, guards included. Random causal
 * forwards (states in, out, in place; cu_seqlens with empty sequences; seq_idx),
 * random decodes (shift register, circular, slot pools, padding entries), the serving
 * shapes (chunked prefill against one call, the B64 C5120 decode, packed varlen), bad
 * device-resident indices (nothing written, the next synchronize reports the cpu's
 * words), and a decode captured in a CUDA/HIP graph and replayed.
 *
 * Skips (77) where no GPU backend has a device. Runs without forking (GPU runtimes do
 * not survive a fork). DWCONV_TEST_QUICK=1 runs fewer cases.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_cases.h"
#include "gpu_device.h"
#include "gpu_graph.h"

static dwconv_backend gpu_backend;
static dwconv_context *cpu, *gpu;

#define GUARD GPU_CASE_GUARD

/* The same bytes on the host and the device; outputs with poisoned guards. */
typedef struct twin {
    size_t bytes, pad;
    unsigned char *host; /* the region, guards included */
    unsigned char *dev;
} twin;

static void twin_make(twin *t, size_t bytes, int guarded, const void *init) {
    t->bytes = bytes, t->pad = guarded ? GUARD : 0;
    const size_t region = bytes + 2 * t->pad + (bytes + 2 * t->pad == 0);
    t->host = malloc(region);
    ck_assert_msg(t->host != NULL, "out of host memory");
    test_poison(t->host, region);
    if (init) memcpy(t->host + t->pad, init, bytes);
    t->dev = (unsigned char *)gpu_device_input(gpu, t->host, region, 0);
}

static void *host_of(const twin *t) { return t->host + t->pad; }
static void *dev_of(const twin *t) { return t->dev + t->pad; }

/* Fails the test unless the device region equals the host region. */
static void twin_check(const twin *t, const char *what, const char *context) {
    const size_t region = t->bytes + 2 * t->pad;
    unsigned char *got = malloc(region ? region : 1);
    ck_assert(got != NULL);
    ck_assert(dwconv_copy_to_host(gpu, got, t->dev, region) == DWCONV_SUCCESS);
    for (size_t i = 0; i < region; i++)
        if (got[i] != t->host[i]) {
            const long long at = (long long)i - (long long)t->pad;
            ck_abort_msg("%s differs at byte %lld of %zu%s (gpu 0x%02x, cpu 0x%02x): %s", what,
                         at, t->bytes, at < 0 || at >= (long long)t->bytes ? " (a guard)" : "",
                         got[i], t->host[i], context);
        }
    free(got);
}

static void twin_free(twin *t) {
    dwconv_free(gpu, t->dev);
    free(t->host);
}

/* A random input twin of n elements. */
static void twin_random(twin *t, test_rng *rng, dwconv_dtype dtype, int64_t n) {
    void *data = malloc(test_bytes(dtype, n) + 1);
    ck_assert(data != NULL);
    test_fill_random(rng, dtype, data, n);
    twin_make(t, test_bytes(dtype, n), 0, data);
    free(data);
}

static void twin_ints(twin *t, const int32_t *v, int64_t n) { twin_make(t, (size_t)n * 4, 0, v); }

static dwconv_desc causal_desc(int64_t B, int64_t C, int64_t L, int64_t K, int64_t dilation,
                               dwconv_dtype dtype, dwconv_layout layout) {
    dwconv_desc d;
    dwconv_desc_init(&d, B, C, L, K);
    d.padding = DWCONV_PADDING_CAUSAL, d.dilation = dilation;
    d.dtype = d.weight_dtype = dtype, d.layout = layout;
    return d;
}

static dwconv_desc random_desc(test_rng *rng, int64_t B, int64_t C, int64_t L) {
    static const int64_t ks[] = {1, 2, 3, 4, 4, 4, 5, 7, 9, 17};
    dwconv_desc d = causal_desc(B, C, L, ks[test_rng_range(rng, 0, 9)],
                                test_rng_range(rng, 0, 2) ? 1 : test_rng_range(rng, 2, 4),
                                (dwconv_dtype)test_rng_range(rng, 0, 2),
                                test_rng_range(rng, 0, 1) ? DWCONV_LAYOUT_NLC : DWCONV_LAYOUT_NCL);
    d.weight_dtype = test_rng_range(rng, 0, 1) ? DWCONV_F32 : d.dtype;
    d.activation = (dwconv_activation)test_rng_range(rng, 0, 2);
    return d;
}

/* ---- causal forward ---- */

enum { PLAIN, FINAL_ONLY, INITIAL_ONLY, BOTH, IN_PLACE, CU_PLAIN, CU_STATES, CU_IN_PLACE,
       SEQ_IDX, MODES };

typedef struct forward_case {
    dwconv_desc d;
    int mode;
    int64_t N;
    twin x, w, b, y, in, out, cu, ids;
    int bias, want_in, want_out, in_place, packed;
} forward_case;

/* x, weight, bias, outputs and states of d in `mode`; offsets: N + 1 entries (cu
 * modes), ids: B * L entries (SEQ_IDX), else NULL. */
static void forward_make(forward_case *f, test_rng *rng, const dwconv_desc *d, int mode,
                         int64_t N, const int32_t *offsets, const int32_t *ids) {
    memset(f, 0, sizeof *f);
    f->d = *d, f->mode = mode, f->N = N;
    const int64_t B = d->batch, C = d->channels, L = d->length, K = d->kernel_size;
    const int64_t S = d->dilation * (K - 1);
    twin_random(&f->x, rng, d->dtype, B * C * L);
    twin_random(&f->w, rng, d->weight_dtype, C * K);
    twin_random(&f->b, rng, d->weight_dtype, C);
    f->bias = test_rng_range(rng, 0, 2) != 0;
    twin_make(&f->y, test_bytes(d->dtype, B * C * L), 1, NULL);
    f->packed = offsets != NULL;
    f->want_in = mode == INITIAL_ONLY || mode == BOTH || mode == IN_PLACE || mode == CU_STATES ||
                 mode == CU_IN_PLACE;
    f->want_out = mode == FINAL_ONLY || mode == BOTH || mode == IN_PLACE || mode == CU_STATES ||
                  mode == CU_IN_PLACE;
    f->in_place = mode == IN_PLACE || mode == CU_IN_PLACE;
    const int64_t states = N * C * S;
    if (f->want_in) {
        void *init = malloc(test_bytes(d->dtype, states) + 1);
        ck_assert(init != NULL);
        test_fill_random(rng, d->dtype, init, states);
        twin_make(&f->in, test_bytes(d->dtype, states), 1, init);
        free(init);
    }
    if (f->want_out && !f->in_place) twin_make(&f->out, test_bytes(d->dtype, states), 1, NULL);
    if (offsets) twin_ints(&f->cu, offsets, N + 1);
    if (ids) twin_ints(&f->ids, ids, B * L);
}

/* The call on the cpu (host twins) or the GPU (device twins). */
static dwconv_status forward_call(forward_case *f, int on_gpu) {
    void *(*at)(const twin *) = on_gpu ? dev_of : host_of;
    dwconv_context *ctx = on_gpu ? gpu : cpu;
    const void *bias = f->bias ? at(&f->b) : NULL;
    const void *in = f->want_in ? at(&f->in) : NULL;
    void *out = !f->want_out ? NULL : f->in_place ? at(&f->in) : at(&f->out);
    if (!f->packed && f->mode != SEQ_IDX)
        return dwconv_causal_forward(ctx, &f->d, at(&f->x), at(&f->w), bias, in, out, at(&f->y));
    return dwconv_causal_varlen_forward(ctx, &f->d, at(&f->x), at(&f->w), bias,
                                        f->packed ? at(&f->cu) : NULL,
                                        f->mode == SEQ_IDX ? at(&f->ids) : NULL,
                                        f->packed ? f->N : 0, in, out, at(&f->y));
}

static void forward_check(forward_case *f, const char *context) {
    twin_check(&f->y, "y", context);
    if (f->want_in) twin_check(&f->in, f->in_place ? "states (in place)" : "initial states", context);
    if (f->want_out && !f->in_place) twin_check(&f->out, "final states", context);
}

static void forward_free(forward_case *f) {
    twin *all[] = {&f->x, &f->w, &f->b, &f->y, &f->in, &f->out, &f->cu, &f->ids};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]->host) twin_free(all[i]);
}

/* Both backends run f; their outputs must match (and, bad: the GPU writes nothing and
 * its next synchronize reports the cpu's violation). */
static void forward_run(forward_case *f, int bad) {
    char context[512], cpu_msg[1024];
    snprintf(context, sizeof context, "forward mode %d, N %lld: %s", f->mode, (long long)f->N,
             test_desc_string(&f->d));
    const dwconv_status want = forward_call(f, 0);
    snprintf(cpu_msg, sizeof cpu_msg, "%s", dwconv_last_error());
    ck_assert_msg((want != DWCONV_SUCCESS) == (bad != 0), "cpu: %d (%s): %s", want, cpu_msg, context);
    ck_assert_msg(forward_call(f, 1) == DWCONV_SUCCESS, "gpu: %s: %s", dwconv_last_error(), context);
    const dwconv_status sync = dwconv_synchronize(gpu);
    if (!bad) {
        ck_assert_msg(sync == DWCONV_SUCCESS, "synchronize: %s: %s", dwconv_last_error(), context);
    } else {
        ck_assert_msg(sync == DWCONV_ERROR_INVALID_VALUE, "bad offsets, yet synchronize said %d: %s",
                      sync, context);
        const char *rule = strstr(dwconv_last_error(), "wrote nothing: ");
        ck_assert_msg(rule && strstr(cpu_msg, rule + 15), "gpu '%s', cpu '%s'", dwconv_last_error(),
                      cpu_msg);
        ck_assert(dwconv_synchronize(gpu) == DWCONV_SUCCESS); /* reported once */
    }
    forward_check(f, context);
}

/* Random offsets of N sequences over L (empty ones included); bad: broken one way. */
static void random_offsets(test_rng *rng, int32_t *cu, int64_t N, int64_t L, int bad) {
    cu[0] = 0, cu[N] = (int32_t)L;
    for (int64_t n = 1; n < N; n++) cu[n] = (int32_t)test_rng_range(rng, 0, L);
    for (int64_t n = 1; n < N; n++) /* insertion sort */
        for (int64_t m = n; m > 1 && cu[m] < cu[m - 1]; m--) {
            int32_t t = cu[m];
            cu[m] = cu[m - 1], cu[m - 1] = t;
        }
    if (bad == 1) cu[0] = 1;
    if (bad == 2) cu[N] = (int32_t)L + 1;
    if (bad == 3) {
        const int64_t n = test_rng_range(rng, 1, N);
        cu[n] = cu[n - 1] - 1;
    }
}

static void forward_random(test_rng *rng, int i, int bad) {
    const int mode = bad ? CU_PLAIN + i % 3 : i % MODES;
    const int packed = mode >= CU_PLAIN && mode <= CU_IN_PLACE;
    const int64_t B = packed ? 1 : test_rng_range(rng, 1, 4);
    const int64_t L = test_rng_range(rng, 1, i % 4 == 0 ? 5000 : 300);
    dwconv_desc d = random_desc(rng, B, test_rng_range(rng, 1, i % 3 ? 40 : 300), L);
    const int64_t N = packed ? test_rng_range(rng, 1, 40) : B;
    int32_t *cu = packed ? malloc(sizeof(int32_t) * (N + 1)) : NULL;
    int32_t *ids = mode == SEQ_IDX ? malloc(sizeof(int32_t) * B * L) : NULL;
    if (cu) random_offsets(rng, cu, N, L, bad);
    for (int64_t k = 0, id = 0; ids && k < B * L; k++) {
        if (test_rng_range(rng, 0, 30) == 0) id++;
        ids[k] = (int32_t)id;
    }
    forward_case f;
    forward_make(&f, rng, &d, mode, N, cu, ids);
    forward_run(&f, bad);
    forward_free(&f);
    free(cu), free(ids);
}

START_TEST(random_causal_forwards) {
    test_rng rng = test_rng_seed(1300);
    const int count = test_quick() ? 30 : 300;
    for (int i = 0; i < count; i++) forward_random(&rng, i, 0);
}
END_TEST

START_TEST(bad_offsets_write_nothing) {
    test_rng rng = test_rng_seed(1301);
    for (int i = 0; i < 30; i++) forward_random(&rng, i, 1 + i % 3);
    forward_random(&rng, 0, 0); /* and the context works on */
}
END_TEST

/* Chunked prefill: B4 C5120 L4096 K4 bf16 in 4 chunks, each continuing in place from
 * the last, gives one call's outputs bit for bit; and the cpu's final states. */
START_TEST(chunked_prefill_equals_one_call) {
    const int q = test_quick();
    const int64_t B = 4, C = q ? 64 : 5120, L = 4096, K = 4, chunks = 4, Lc = L / chunks;
    for (int layout = 0; layout < 2; layout++) {
        test_rng rng = test_rng_seed(1302 + layout);
        dwconv_desc whole = causal_desc(B, C, L, K, 1, DWCONV_BF16, (dwconv_layout)layout);
        whole.activation = DWCONV_ACT_SILU;
        forward_case f;
        forward_make(&f, &rng, &whole, FINAL_ONLY, B, NULL, NULL);
        forward_run(&f, 0);
        /* the chunks on the GPU, from copies of x's chunks */
        dwconv_desc part = whole;
        part.length = Lc;
        const size_t es = 2, chunk_bytes = (size_t)(B * C * Lc) * es;
        unsigned char *xh = host_of(&f.x), *yh = host_of(&f.y);
        unsigned char *xc = malloc(chunk_bytes), *yc = malloc(chunk_bytes), *got = malloc(chunk_bytes);
        void *xd = NULL, *yd = NULL, *state = NULL;
        const size_t state_bytes = (size_t)(B * C * (K - 1)) * es;
        ck_assert(xc && yc && got);
        ck_assert(dwconv_malloc(gpu, &xd, chunk_bytes) == DWCONV_SUCCESS);
        ck_assert(dwconv_malloc(gpu, &yd, chunk_bytes) == DWCONV_SUCCESS);
        ck_assert(dwconv_malloc(gpu, &state, state_bytes) == DWCONV_SUCCESS);
        for (int64_t k = 0; k < chunks; k++) {
            /* chunk k of every (b, c) row (NCL) or of every b (NLC) */
            for (int64_t b = 0; b < B; b++)
                for (int64_t r = 0; r < (layout ? 1 : C); r++) {
                    const size_t row = layout ? (size_t)(Lc * C) : (size_t)Lc;
                    const size_t src = layout ? (size_t)(b * L * C + k * Lc * C)
                                              : (size_t)((b * C + r) * L + k * Lc);
                    const size_t dst = layout ? (size_t)(b * Lc * C) : (size_t)((b * C + r) * Lc);
                    memcpy(xc + dst * es, xh + src * es, row * es);
                    memcpy(yc + dst * es, yh + src * es, row * es);
                }
            ck_assert(dwconv_copy_to_backend(gpu, xd, xc, chunk_bytes) == DWCONV_SUCCESS);
            ck_assert_msg(dwconv_causal_forward(gpu, &part, xd, dev_of(&f.w), f.bias ? dev_of(&f.b) : NULL,
                                                k ? state : NULL, state, yd) == DWCONV_SUCCESS,
                          "%s", dwconv_last_error());
            ck_assert(dwconv_copy_to_host(gpu, got, yd, chunk_bytes) == DWCONV_SUCCESS);
            const int64_t diff = test_first_difference(got, yc, es, B * C * Lc);
            ck_assert_msg(diff < 0, "chunk %lld (layout %d): element %lld differs from one call",
                          (long long)k, layout, (long long)diff);
        }
        unsigned char *final = malloc(state_bytes);
        ck_assert(final != NULL);
        ck_assert(dwconv_copy_to_host(gpu, final, state, state_bytes) == DWCONV_SUCCESS);
        ck_assert_msg(memcmp(final, host_of(&f.out), state_bytes) == 0,
                      "the chunks' final states differ from one call's");
        free(final), free(xc), free(yc), free(got);
        dwconv_free(gpu, xd), dwconv_free(gpu, yd), dwconv_free(gpu, state);
        forward_free(&f);
    }
}
END_TEST

/* Packed varlen: 64 sequences of random lengths 1..4096, C2048 K4 bf16 NLC, with
 * initial and final states in place. */
START_TEST(packed_varlen_serving_shape) {
    const int q = test_quick();
    test_rng rng = test_rng_seed(1303);
    const int64_t N = q ? 8 : 64;
    int32_t cu[65];
    cu[0] = 0;
    for (int64_t n = 0; n < N; n++) cu[n + 1] = cu[n] + (int32_t)test_rng_range(&rng, 1, q ? 300 : 4096);
    dwconv_desc d = causal_desc(1, q ? 64 : 2048, cu[N], 4, 1, DWCONV_BF16, DWCONV_LAYOUT_NLC);
    d.activation = DWCONV_ACT_SILU;
    forward_case f;
    forward_make(&f, &rng, &d, CU_IN_PLACE, N, cu, NULL);
    forward_run(&f, 0);
    forward_free(&f);
}
END_TEST

/* ---- decode ---- */

typedef struct update_case {
    dwconv_desc d;
    int64_t pool, state_length;
    twin x, w, b, y, state, slots, seen;
    int bias, pooled, circular;
} update_case;

/* bad: 0 good, 1 a slot past the pool, 2 a slot twice, 3 a negative cache_seqlens. */
static void update_make(update_case *u, test_rng *rng, const dwconv_desc *d, int64_t pool,
                        int64_t state_length, int pooled, int circular, int bad) {
    memset(u, 0, sizeof *u);
    u->d = *d, u->pool = pool, u->state_length = state_length;
    u->pooled = pooled, u->circular = circular;
    const int64_t B = d->batch, C = d->channels, T = d->length, K = d->kernel_size;
    twin_random(&u->x, rng, d->dtype, B * C * T);
    twin_random(&u->w, rng, d->weight_dtype, C * K);
    twin_random(&u->b, rng, d->weight_dtype, C);
    u->bias = test_rng_range(rng, 0, 2) != 0;
    twin_make(&u->y, test_bytes(d->dtype, B * C * T), 1, NULL);
    void *init = malloc(test_bytes(d->dtype, pool * C * state_length) + 1);
    ck_assert(init != NULL);
    test_fill_random(rng, d->dtype, init, pool * C * state_length);
    twin_make(&u->state, test_bytes(d->dtype, pool * C * state_length), 1, init);
    free(init);
    int32_t *slots = malloc(sizeof(int32_t) * pool), *seen = malloc(sizeof(int32_t) * B);
    ck_assert(slots && seen);
    for (int64_t s = 0; s < pool; s++) slots[s] = (int32_t)s;
    for (int64_t s = pool - 1; s > 0; s--) {
        const int64_t e = test_rng_range(rng, 0, s);
        int32_t t = slots[s];
        slots[s] = slots[e], slots[e] = t;
    }
    for (int64_t b = 0; b < B; b++) {
        if (test_rng_range(rng, 0, 7) == 0) slots[b] = -1;
        seen[b] = (int32_t)test_rng_range(rng, 0, 1000);
    }
    if (bad == 1) slots[test_rng_range(rng, 0, B - 1)] = (int32_t)pool;
    if (bad == 2 && B > 1) slots[B - 1] = slots[0] = 0;
    if (bad == 3) seen[test_rng_range(rng, 0, B - 1)] = -1;
    twin_ints(&u->slots, slots, B);
    twin_ints(&u->seen, seen, B);
    free(slots), free(seen);
}

static dwconv_status update_call(update_case *u, int on_gpu) {
    void *(*at)(const twin *) = on_gpu ? dev_of : host_of;
    return dwconv_causal_update(on_gpu ? gpu : cpu, &u->d, at(&u->x), at(&u->state), u->pool,
                                u->state_length, at(&u->w), u->bias ? at(&u->b) : NULL,
                                u->circular ? at(&u->seen) : NULL,
                                u->pooled ? at(&u->slots) : NULL, at(&u->y));
}

static void update_run(update_case *u, int bad) {
    char context[512], cpu_msg[1024];
    snprintf(context, sizeof context, "decode pool %lld, state_length %lld, %s, %s: %s",
             (long long)u->pool, (long long)u->state_length, u->pooled ? "slots" : "slot b",
             u->circular ? "circular" : "shift register", test_desc_string(&u->d));
    const dwconv_status want = update_call(u, 0);
    snprintf(cpu_msg, sizeof cpu_msg, "%s", dwconv_last_error());
    ck_assert_msg((want != DWCONV_SUCCESS) == (bad != 0), "cpu: %d (%s): %s", want, cpu_msg, context);
    ck_assert_msg(update_call(u, 1) == DWCONV_SUCCESS, "gpu: %s: %s", dwconv_last_error(), context);
    const dwconv_status sync = dwconv_synchronize(gpu);
    if (!bad) {
        ck_assert_msg(sync == DWCONV_SUCCESS, "synchronize: %s: %s", dwconv_last_error(), context);
    } else {
        ck_assert_msg(sync == DWCONV_ERROR_INVALID_VALUE, "bad indices, yet synchronize said %d: %s",
                      sync, context);
        const char *rule = strstr(dwconv_last_error(), "wrote nothing: ");
        ck_assert_msg(rule && strstr(cpu_msg, rule + 15), "gpu '%s', cpu '%s'", dwconv_last_error(),
                      cpu_msg);
    }
    twin_check(&u->y, "y", context);
    twin_check(&u->state, "the state pool", context);
}

static void update_free(update_case *u) {
    twin *all[] = {&u->x, &u->w, &u->b, &u->y, &u->state, &u->slots, &u->seen};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]->host) twin_free(all[i]);
}

static void update_random(test_rng *rng, int i, int bad) {
    const int64_t B = i % 9 == 4 ? test_rng_range(rng, 129, 700) : test_rng_range(rng, 1, 70);
    dwconv_desc d = random_desc(rng, B, test_rng_range(rng, 1, i % 3 ? 40 : 600),
                                test_rng_range(rng, 1, i % 4 ? 2 : 6));
    const int64_t span = d.dilation * (d.kernel_size - 1);
    const int64_t P = span + (test_rng_range(rng, 0, 1) ? 0 : test_rng_range(rng, 1, 3));
    const int pooled = bad == 1 || bad == 2 || test_rng_range(rng, 0, 1);
    const int64_t pool = pooled ? B * test_rng_range(rng, 1, 4) : B + test_rng_range(rng, 0, 2);
    if (bad == 2 && B == 1) return;
    update_case u;
    update_make(&u, rng, &d, pool, P, pooled, bad == 3 || test_rng_range(rng, 0, 1), bad);
    update_run(&u, bad);
    update_free(&u);
}

START_TEST(random_decodes) {
    test_rng rng = test_rng_seed(1310);
    const int count = test_quick() ? 30 : 300;
    for (int i = 0; i < count; i++) update_random(&rng, i, 0);
}
END_TEST

START_TEST(bad_slots_write_nothing) {
    test_rng rng = test_rng_seed(1311);
    for (int i = 0; i < 30; i++) update_random(&rng, i, 1 + i % 3);
    update_random(&rng, 1, 0);
}
END_TEST

/* The serving decode: B64 C5120 K4, bf16 and f32, one token (slot b, shift register),
 * then 4 tokens against a pool 4x the batch (circular), three steps each. */
START_TEST(decode_serving_shapes) {
    const int q = test_quick();
    test_rng rng = test_rng_seed(1312);
    for (int dt = 0; dt < 3; dt += 2)
        for (int tokens = 1; tokens <= 4; tokens += 3) {
            dwconv_desc d = causal_desc(64, q ? 64 : 5120, tokens, 4, 1, (dwconv_dtype)dt,
                                        DWCONV_LAYOUT_NCL);
            d.activation = DWCONV_ACT_SILU;
            update_case u;
            update_make(&u, &rng, &d, tokens == 1 ? 64 : 256, 3, tokens > 1, tokens > 1, 0);
            for (int step = 0; step < 3; step++) update_run(&u, 0);
            update_free(&u);
        }
}
END_TEST

/* The decode captured in a graph on the caller's stream: the capture runs nothing, each
 * replay is one decode step (the state advances), equal to the cpu's steps. */
START_TEST(decode_graph_replays_bitwise) {
    gpu_graph_api *api = NULL;
    void *stream = NULL;
    gpu_device_stream(gpu_backend, &api, &stream);
    test_rng rng = test_rng_seed(1313);
    dwconv_desc d = causal_desc(64, 512, 1, 4, 1, DWCONV_BF16, DWCONV_LAYOUT_NCL);
    update_case u;
    update_make(&u, &rng, &d, 256, 3, 1, 0, 0);
    ck_assert(dwconv_context_set_stream(gpu, stream) == DWCONV_SUCCESS);
    /* a first call outside the capture (the context's scratch then exists) */
    update_run(&u, 0);
    gpu_device_capture_begin(api, stream);
    const dwconv_status st = update_call(&u, 1);
    void *exec = gpu_device_capture_end(api, stream, st);
    twin_check(&u.y, "y after the capture (which must run nothing)", "capture");
    twin_check(&u.state, "the pool after the capture", "capture");
    for (int replay = 0; replay < 3; replay++) {
        ck_assert(update_call(&u, 0) == DWCONV_SUCCESS);
        gpu_device_replay(api, exec, stream);
        ck_assert(dwconv_synchronize(gpu) == DWCONV_SUCCESS);
        twin_check(&u.y, "y", "replay");
        twin_check(&u.state, "the state pool", "replay");
    }
    ck_assert(dwconv_context_set_stream(gpu, NULL) == DWCONV_SUCCESS);
    update_free(&u);
    gpu_graph_free(api, exec, stream);
    gpu_graph_close(api);
}
END_TEST

int main(void) {
    if (!gpu_device_find("check_gpu_causal", &gpu_backend, NULL)) return 77;
    if (dwconv_context_create(&cpu, DWCONV_BACKEND_CPU, 0) != DWCONV_SUCCESS ||
        dwconv_context_create(&gpu, gpu_backend, 0) != DWCONV_SUCCESS) {
        printf("check_gpu_causal: no context: %s\n", dwconv_last_error());
        return 1;
    }
    char graph_why[256];
    const int graphs = gpu_device_graphs(gpu_backend, graph_why, sizeof graph_why);

    Suite *s = suite_create("gpu_causal");
    TCase *t = tcase_create("bitwise");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, random_causal_forwards);
    tcase_add_test(t, bad_offsets_write_nothing);
    tcase_add_test(t, chunked_prefill_equals_one_call);
    tcase_add_test(t, packed_varlen_serving_shape);
    tcase_add_test(t, random_decodes);
    tcase_add_test(t, bad_slots_write_nothing);
    tcase_add_test(t, decode_serving_shapes);
    gpu_device_add(t, decode_graph_replays_bitwise, "decode_graph_replays_bitwise",
                   graphs ? NULL : graph_why);
    suite_add_tcase(s, t);
    const int status = gpu_device_run(s);
    dwconv_context_destroy(gpu);
    dwconv_context_destroy(cpu);
    return status;
}
