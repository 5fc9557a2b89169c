/*
 * The cpu causal operations (src/cpu/causal.c) against the scalar oracle, bit for bit,
 * for every SIMD flavour this build and processor run and 1, 2, 3, 7 and the default
 * number of threads (cpu_cases.h), every buffer guarded:
 *   - the prefill with initial and final states (apart, in place, absent), packed
 *     sequences by cu_seqlens (empty and short ones too) and by seq_idx;
 *   - the decode update: shift register and circular states, state_indices with
 *     skipped (negative) slots, T tokens, state_length above the span, either layout;
 *   - which path ran (the forward's kernels, the decode kernel), and that a bad index
 *     array leaves every output untouched through the public call.
 * DWCONV_TEST_SEED=n changes the base seed.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_check.h"
#include "cpu_cases.h"
#include "dwconv.h"
#include "internal.h"
#include "test_util.h"

static uint64_t base_seed(void) { return cpu_case_seed(20261213u); }

/* A random causal descriptor (stride 1, zeros, pad_left = span). */
static dwconv_desc causal_desc(test_rng *rng, int64_t B, int64_t max_length, int64_t max_channels) {
    int64_t L = test_rng_range(rng, 0, 3) == 0 ? test_rng_range(rng, 1, 6)
                                               : test_rng_range(rng, 1, max_length);
    dwconv_desc d;
    dwconv_desc_init(&d, B, test_rng_range(rng, 1, max_channels), L, test_rng_range(rng, 1, 6));
    d.padding = DWCONV_PADDING_CAUSAL;
    d.dilation = test_rng_range(rng, 0, 2) == 0 ? test_rng_range(rng, 2, 4) : 1;
    d.layout = (dwconv_layout)test_rng_range(rng, 0, 1);
    d.dtype = (dwconv_dtype)test_rng_range(rng, 0, 2);
    d.weight_dtype = test_rng_range(rng, 0, 1) ? DWCONV_F32 : d.dtype;
    d.activation = (dwconv_activation)test_rng_range(rng, 0, 2);
    return d;
}

/* ---- the prefill ----------------------------------------------------------------- */

enum { STATES_NONE, STATES_APART, STATES_IN_PLACE, STATES_INITIAL_ONLY, STATES_FINAL_ONLY };
enum { PACK_NONE, PACK_CU, PACK_IDS };

static int expect_prefill(const dwconv_desc *d, int states, int pack, uint64_t seed) {
    test_rng rng = test_rng_seed(seed);
    int64_t xn, yn;
    ck_assert_int_eq(dwconv_desc_sizes(d, &xn, &yn, NULL, NULL), DWCONV_SUCCESS);
    const int64_t B = d->batch, C = d->channels, L = d->length, K = d->kernel_size;
    const int64_t S = d->dilation * (K - 1);
    int64_t N = pack == PACK_CU ? test_rng_range(&rng, 1, 6) : pack == PACK_IDS ? 0 : B;
    int32_t *cu_values = malloc(sizeof(int32_t) * (size_t)(N + 1));
    int32_t *id_values = malloc(sizeof(int32_t) * (size_t)(B * L));
    ck_assert(cu_values && id_values);
    cu_values[0] = 0;
    for (int64_t n = 1; n < N; n++) /* sorted cuts, empty sequences included */
        cu_values[n] = (int32_t)test_rng_range(&rng, cu_values[n - 1], L);
    cu_values[N] = (int32_t)L;
    for (int64_t b = 0, id = 0; b < B; b++)
        for (int64_t o = 0; o < L; o++) {
            if (test_rng_range(&rng, 0, 9) == 0) id = test_rng_range(&rng, 0, 3);
            id_values[b * L + o] = (int32_t)id;
        }
    if (pack == PACK_IDS) states = STATES_NONE;
    cpu_case c = {0};
    void *x = cpu_case_random(&c, &rng, d->dtype, xn);
    void *w = cpu_case_random(&c, &rng, d->weight_dtype, C * K);
    void *bias = test_rng_range(&rng, 0, 1) ? cpu_case_random(&c, &rng, d->weight_dtype, C) : NULL;
    int32_t *cu = pack == PACK_CU ? cpu_case_indices(&c, cu_values, N + 1) : NULL;
    int32_t *ids = pack == PACK_IDS ? cpu_case_indices(&c, id_values, B * L) : NULL;
    void *init = states == STATES_APART || states == STATES_IN_PLACE || states == STATES_INITIAL_ONLY
                     ? cpu_case_random(&c, &rng, d->dtype, N * C * S) : NULL;
    void *final = states == STATES_IN_PLACE ? init
                  : states == STATES_APART || states == STATES_FINAL_ONLY
                      ? cpu_case_poisoned(&c, test_bytes(d->dtype, N * C * S))
                      : NULL;
    void *y = cpu_case_poisoned(&c, test_bytes(d->dtype, yn));
    dwconv_status st = dwconv_validate_causal_forward(&c.p, d, x, w, bias, cu, ids,
                                                      pack == PACK_CU ? N : 0, init, final, y,
                                                      "check_cpu_causal");
    char what[600];
    snprintf(what, sizeof what, "prefill, states %d, pack %d (%lld sequences), %s", states, pack,
             (long long)N, test_desc_string(d));
    ck_assert_msg(st == DWCONV_SUCCESS, "%s: validation %d", what, (int)st);
    cpu_case_expect_all(&c, dwconv_cpu_causal_with, what);
    cpu_case_free(&c);
    free(cu_values), free(id_values);
    return dwconv_cpu_last_paths();
}

START_TEST(prefill_random) {
    test_rng rng = test_rng_seed(base_seed() + (uint64_t)_i * 1000003u);
    for (int n = 0; n < 30; n++) {
        int pack = (int)test_rng_range(&rng, 0, 2);
        dwconv_desc d = causal_desc(&rng, pack == PACK_CU ? 1 : test_rng_range(&rng, 1, 3), 600, 9);
        int paths = expect_prefill(&d, (int)test_rng_range(&rng, 0, 4), pack, test_rng_next(&rng));
        ck_assert_msg(paths & DWCONV_CPU_PATH_FORWARD_KERNELS, "the forward's kernels did not run");
    }
}
END_TEST

START_TEST(prefill_long_rows) {
    for (int states = 0; states < 5; states++) {
        dwconv_desc d;
        dwconv_desc_init(&d, 2, 3, 5003, 4);
        d.padding = DWCONV_PADDING_CAUSAL;
        d.activation = (dwconv_activation)(states % 3);
        d.layout = (dwconv_layout)(states & 1);
        expect_prefill(&d, states, PACK_NONE, 10 + (uint64_t)states);
        d.batch = 1;
        expect_prefill(&d, states, PACK_CU, 20 + (uint64_t)states);
        expect_prefill(&d, STATES_NONE, PACK_IDS, 30 + (uint64_t)states);
    }
}
END_TEST

/* ---- the decode update ------------------------------------------------------------ */

static int expect_decode(const dwconv_desc *d, int64_t pool, int64_t P, int with_slots,
                         int circular, uint64_t seed) {
    test_rng rng = test_rng_seed(seed);
    int64_t xn, yn;
    ck_assert_int_eq(dwconv_desc_sizes(d, &xn, &yn, NULL, NULL), DWCONV_SUCCESS);
    const int64_t B = d->batch, C = d->channels, K = d->kernel_size;
    int32_t *slots = malloc(sizeof(int32_t) * (size_t)B), *seen = malloc(sizeof(int32_t) * (size_t)B);
    ck_assert(slots && seen);
    /* distinct slots of a shuffled pool, some sequences skipped */
    int32_t *order = malloc(sizeof(int32_t) * (size_t)pool);
    ck_assert(order);
    for (int64_t i = 0; i < pool; i++) order[i] = (int32_t)i;
    for (int64_t i = pool - 1; i > 0; i--) {
        int64_t j = test_rng_range(&rng, 0, i);
        int32_t t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (int64_t b = 0; b < B; b++) {
        slots[b] = test_rng_range(&rng, 0, 4) == 0 ? -1 - (int32_t)test_rng_range(&rng, 0, 2)
                                                   : order[b];
        seen[b] = (int32_t)test_rng_range(&rng, 0, 3 * P + 2);
    }
    cpu_case c = {0};
    void *x = cpu_case_random(&c, &rng, d->dtype, xn);
    void *w = cpu_case_random(&c, &rng, d->weight_dtype, C * K);
    void *bias = test_rng_range(&rng, 0, 1) ? cpu_case_random(&c, &rng, d->weight_dtype, C) : NULL;
    void *state = cpu_case_random(&c, &rng, d->dtype, pool * C * P);
    int32_t *slot_arg = with_slots ? cpu_case_indices(&c, slots, B) : NULL;
    int32_t *seen_arg = circular ? cpu_case_indices(&c, seen, B) : NULL;
    void *y = cpu_case_poisoned(&c, test_bytes(d->dtype, yn));
    dwconv_status st = dwconv_validate_causal_update(&c.p, d, x, state, pool, P, w, bias, seen_arg,
                                                     slot_arg, y, "check_cpu_causal");
    char what[600];
    snprintf(what, sizeof what, "decode, pool %lld, state_length %lld, slots %d, circular %d, %s",
             (long long)pool, (long long)P, with_slots, circular, test_desc_string(d));
    ck_assert_msg(st == DWCONV_SUCCESS, "%s: validation %d", what, (int)st);
    cpu_case_expect_all(&c, dwconv_cpu_causal_with, what);
    cpu_case_free(&c);
    free(slots), free(seen), free(order);
    return dwconv_cpu_last_paths();
}

START_TEST(decode_random) {
    test_rng rng = test_rng_seed(base_seed() + 7u + (uint64_t)_i * 1000003u);
    for (int n = 0; n < 40; n++) {
        const int64_t B = test_rng_range(&rng, 1, 9);
        dwconv_desc d = causal_desc(&rng, B, 4, 300);
        const int64_t S = d.dilation * (d.kernel_size - 1);
        const int64_t P = S + (test_rng_range(&rng, 0, 2) == 0 ? test_rng_range(&rng, 1, 5) : 0);
        if (P == 0) continue; /* K = 1: the pool is untouched, tested below */
        const int with_slots = (int)test_rng_range(&rng, 0, 1);
        int paths = expect_decode(&d, B + (with_slots ? test_rng_range(&rng, 0, 4) : 0), P,
                                  with_slots, (int)test_rng_range(&rng, 0, 1), test_rng_next(&rng));
        ck_assert(paths & DWCONV_CPU_PATH_DECODE_KERNEL);
    }
}
END_TEST

/* The benchmark's kind, one token, and a point kernel (no state). */
START_TEST(decode_serving_shapes) {
    dwconv_desc d;
    dwconv_desc_init(&d, 64, 5120, 1, 4);
    d.padding = DWCONV_PADDING_CAUSAL;
    d.activation = DWCONV_ACT_SILU;
    expect_decode(&d, 64, 3, 0, 0, 1);
    expect_decode(&d, 80, 5, 1, 1, 2);
    dwconv_desc_init(&d, 3, 40, 2, 1);
    d.padding = DWCONV_PADDING_CAUSAL;
    expect_decode(&d, 3, 2, 1, 1, 3);
}
END_TEST

/* ---- bad indices through the public call: nothing written ------------------------- */

START_TEST(bad_indices_write_nothing) {
    dwconv_desc d;
    dwconv_desc_init(&d, 2, 70, 1, 4);
    d.padding = DWCONV_PADDING_CAUSAL;
    float x[140], w[280], state[2 * 70 * 3], y[140], state_copy[sizeof state / sizeof *state];
    test_rng rng = test_rng_seed(40);
    test_fill_random(&rng, DWCONV_F32, x, 140);
    test_fill_random(&rng, DWCONV_F32, w, 280);
    test_fill_random(&rng, DWCONV_F32, state, 420);
    memcpy(state_copy, state, sizeof state);
    test_poison(y, sizeof y);
    dwconv_context *ctx;
    ck_assert_int_eq(dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 0), DWCONV_SUCCESS);
    const int32_t twice[2] = {1, 1}, negative_seen[2] = {0, -3};
    ck_assert_int_eq(dwconv_causal_update(ctx, &d, x, state, 2, 3, w, NULL, NULL, twice, y),
                     DWCONV_ERROR_INVALID_VALUE);
    ck_assert_int_eq(dwconv_causal_update(ctx, &d, x, state, 2, 3, w, NULL, negative_seen, NULL, y),
                     DWCONV_ERROR_INVALID_VALUE);
    ck_assert(test_untouched(y, sizeof y));
    ck_assert(memcmp(state, state_copy, sizeof state) == 0);
    /* and a good call through the same route runs the decode kernel */
    dwconv_cpu_set_last_paths(0);
    ck_assert_int_eq(dwconv_causal_update(ctx, &d, x, state, 2, 3, w, NULL, NULL, NULL, y),
                     DWCONV_SUCCESS);
    ck_assert(dwconv_cpu_last_paths() & DWCONV_CPU_PATH_DECODE_KERNEL);
    dwconv_context_destroy(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cpu_causal");
    TCase *tc = tcase_create("oracle");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, prefill_random, 0, 3);
    tcase_add_test(tc, prefill_long_rows);
    tcase_add_loop_test(tc, decode_random, 0, 3);
    tcase_add_test(tc, decode_serving_shapes);
    tcase_add_test(tc, bad_indices_write_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return core_run(suite(), 0); }
