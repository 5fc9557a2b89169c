/*
 * The vector code of one SIMD flavour against the scalar functions of the contract
 * (src/common/dwconv_numerics.h), bit for bit, called directly rather than through a
 * convolution: exp (both of its forms: e^x and silu's e^-x), silu, relu, and the
 * f16/bf16 conversions both ways. The flavour is fixed at build time (FLAVOUR): the
 * cpu flavours "generic", "avx2" and "avx512" through their kernel table's activate,
 * narrow and gather, and "gpu-emulated": the GPU code (gpu_activate_all, gpu_elem)
 * compiled for the CPU as tests/gpu_emulate.h does (tests/simd_gpu_emulated.cc).
 *
 * The sample: every 97th float bit pattern (97 is coprime with 2^k, so the low bits
 * take every value) plus every pattern of the boundary regions; every pattern with
 * DWCONV_TEST_EXHAUSTIVE=1 (minutes); with DWCONV_TEST_QUICK=1 (the sanitizer builds)
 * 17 times sparser plus the patterns near multiples of 2^16 (tests/test_util.h). NaNs
 * are compared bit for bit too: every cpu flavour gives the reference's NaN. Exit status 77 (skip) when the flavour is not in
 * this build or this processor lacks its instructions, with the reason printed.
 */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_check.h"
#include "test_util.h"
#include "dwconv.h"
#include "dwconv_numerics.h"
#include "kernels.h"

#ifndef FLAVOUR
#error "FLAVOUR must name the flavour under test"
#endif

#ifdef FLAVOUR_GPU_EMULATED
/* tests/simd_gpu_emulated.cc */
void gpu_emulated_activate(int act, const float *in, int64_t n, float *out);
void gpu_emulated_narrow(dwconv_dtype dtype, const float *in, int64_t n, void *out);
void gpu_emulated_widen(dwconv_dtype dtype, const void *in, int64_t n, float *out);
#define activate_of_flavour gpu_emulated_activate
#define narrow_of_flavour gpu_emulated_narrow
#define widen_of_flavour gpu_emulated_widen
#else
static const dwconv_cpu_kernels *kernels;
static void activate_of_flavour(int act, const float *in, int64_t n, float *out) {
    kernels->activate(act, in, n, out);
}
static void narrow_of_flavour(dwconv_dtype dtype, const float *in, int64_t n, void *out) {
    kernels->narrow(dtype, in, n, out, 0);
}
static void widen_of_flavour(dwconv_dtype dtype, const void *in, int64_t n, float *out) {
    kernels->gather(dtype, in, 1, n, out);
}
#endif

/* ---- the sample -------------------------------------------------------------------- */

enum { BATCH = 4096 }; /* a multiple of every flavour's lanes: no scalar tail */

/* What one kind of comparison found. */
typedef struct tally {
    const char *what;
    uint64_t checked, failed;
    char first[240];
} tally;

static void mismatch(tally *t, uint32_t in, uint32_t got, uint32_t want) {
    if (t->failed++ == 0)
        snprintf(t->first, sizeof t->first, "%s of 0x%08x (%a): %s 0x%08x, scalar 0x%08x", t->what,
                 in, dwconv_f32_from_bits(in), FLAVOUR, got, want);
}

static void expect_clean(const tally *t) {
    ck_assert_msg(t->checked > 0, "%s: nothing was checked", t->what);
    ck_assert_msg(t->failed == 0, "%s: %llu of %llu differ; first: %s", t->what,
                  (unsigned long long)t->failed, (unsigned long long)t->checked, t->first);
    printf("%s, %s: %llu values, all bitwise equal\n", FLAVOUR, t->what,
           (unsigned long long)t->checked);
}

typedef void (*batch_fn)(const uint32_t *bits, int n, void *ctx);

/* Every pattern lo, lo + step, ... <= hi, in batches (sparser under DWCONV_TEST_QUICK). */
static void walk(uint64_t lo, uint64_t hi, uint64_t step, batch_fn check, void *ctx) {
    static uint32_t bits[BATCH];
    int n = 0;
    const uint64_t quick_step = test_sweep_quick_step(step);
    for (uint64_t u = lo; u <= hi; u = test_sweep_next(u, step, quick_step)) {
        bits[n++] = (uint32_t)u;
        if (n == BATCH) check(bits, n, ctx), n = 0;
    }
    if (n) check(bits, n, ctx);
}

/* Magnitudes lo .. hi (patterns without the sign), both signs, every pattern. */
static void walk_both(uint32_t lo, uint32_t hi, batch_fn check, void *ctx) {
    walk(lo, hi, 1, check, ctx);
    walk(0x80000000u | lo, 0x80000000u | hi, 1, check, ctx);
}

/* The dense stride (or everything), then the regions where the functions change
 * behaviour: zeros and subnormals, e^-x rounding to 1, the exponential's reduction
 * boundaries (|x| near k ln2/2 are covered by the stride), silu's cold path and its
 * edges (86, 112, the normal/subnormal edge of its results near -87.3 .. -92), the
 * f16 subnormals and overflow, the top of every binade, infinities and NaNs. */
static void sample(batch_fn check, void *ctx) {
    if (test_exhaustive()) {
        walk(0, 0xffffffffu, 1, check, ctx);
        return;
    }
    walk(0, 0xffffffffu, 97, check, ctx);
    walk_both(0x00000000u, 0x00100000u, check, ctx); /* zeros, small subnormals */
    walk_both(0x33000000u, 0x33c00000u, check, ctx); /* 2^-25 .. 2^-24 * 1.5 */
    walk_both(0x42aa0000u, 0x42ae0000u, check, ctx); /* 85 .. 87: the cold edge */
    walk_both(0x42ae0000u, 0x42b80000u, check, ctx); /* 87 .. 92: normal/subnormal */
    walk_both(0x42d80000u, 0x42e20000u, check, ctx); /* 108 .. 113: to zero */
    walk_both(0x38700000u, 0x38900000u, check, ctx); /* f16 subnormal/normal edge */
    walk_both(0x477f0000u, 0x47810000u, check, ctx); /* f16 overflow */
    walk_both(0x7f7f0000u, 0x7fffffffu, check, ctx); /* FLT_MAX, inf, every NaN */
    for (uint32_t e = 1; e < 255; e++) /* the top of each binade, carrying up */
        walk_both((e << 23) - 0x400u, (e << 23) + 0x400u, check, ctx);
}

/* ---- activations ---------------------------------------------------------------- */

typedef struct act_ctx {
    int act;
    tally t;
} act_ctx;

static uint32_t scalar_act(int act, uint32_t bits) {
    float x = dwconv_f32_from_bits(bits);
    switch (act) {
    case DWCONV_CPU_EXP: return dwconv_exp_bits(x);
    case DWCONV_CPU_EXP_NEG: return dwconv_exp_bits(-x);
    default: return dwconv_f32_bits(dwconv_activate(act, x));
    }
}

/* dwconv_exp_bits is defined for |v| <= 112 (the hot range and the cold path's part);
 * outside it the bits are never used, so they are not compared. */
static int compared(int act, uint32_t bits) {
    if (act != DWCONV_CPU_EXP && act != DWCONV_CPU_EXP_NEG) return 1;
    return (bits & 0x7fffffffu) <= 0x42e00000u; /* 112 */
}

static void check_act_batch(const uint32_t *bits, int n, void *vctx) {
    act_ctx *c = vctx;
    static float in[BATCH], out[BATCH];
    memcpy(in, bits, sizeof *bits * (size_t)n);
    activate_of_flavour(c->act, in, n, out);
    for (int i = 0; i < n; i++) {
        if (!compared(c->act, bits[i])) continue;
        uint32_t got = dwconv_f32_bits(out[i]), want = scalar_act(c->act, bits[i]);
        c->t.checked++;
        if (got != want) mismatch(&c->t, bits[i], got, want);
    }
}

static void sweep_act(int act, const char *what) {
    act_ctx c = {act, {what, 0, 0, ""}};
    sample(check_act_batch, &c);
    expect_clean(&c.t);
}

START_TEST(silu) { sweep_act(DWCONV_ACT_SILU, "silu"); }
END_TEST

START_TEST(exp_of_x) { sweep_act(DWCONV_CPU_EXP, "exp bits of x (|x| <= 112)"); }
END_TEST

START_TEST(exp_of_minus_x) { sweep_act(DWCONV_CPU_EXP_NEG, "exp bits of -x (|x| <= 112)"); }
END_TEST

START_TEST(relu) { sweep_act(DWCONV_ACT_RELU, "relu"); }
END_TEST

START_TEST(none) { sweep_act(DWCONV_ACT_NONE, "no activation"); }
END_TEST

/* ---- conversions ------------------------------------------------------------------ */

static void check_narrow_batch(const uint32_t *bits, int n, void *vctx) {
    tally *t = vctx; /* t[0] f16, t[1] bf16 */
    static float in[BATCH];
    static uint16_t h[BATCH], b[BATCH];
    memcpy(in, bits, sizeof *bits * (size_t)n);
    narrow_of_flavour(DWCONV_F16, in, n, h);
    narrow_of_flavour(DWCONV_BF16, in, n, b);
    for (int i = 0; i < n; i++) {
        uint16_t want_h = dwconv_f32_to_f16(in[i]), want_b = dwconv_f32_to_bf16(in[i]);
        t[0].checked++, t[1].checked++;
        if (h[i] != want_h) mismatch(&t[0], bits[i], h[i], want_h);
        if (b[i] != want_b) mismatch(&t[1], bits[i], b[i], want_b);
    }
}

START_TEST(narrow) {
    tally t[2] = {{"f32 -> f16", 0, 0, ""}, {"f32 -> bf16", 0, 0, ""}};
    sample(check_narrow_batch, t);
    expect_clean(&t[0]);
    expect_clean(&t[1]);
}
END_TEST

/* Every 16-bit pattern. F16C quiets a signaling NaN as it widens, the scalar keeps the
 * bits (the first fmaf quiets it); for f16 NaNs the quiet bit is left out. */
START_TEST(widen) {
    static uint16_t in[65536];
    static float out[65536];
    for (uint32_t i = 0; i < 65536; i++) in[i] = (uint16_t)i;
    const dwconv_dtype types[2] = {DWCONV_F16, DWCONV_BF16};
    for (int k = 0; k < 2; k++) {
        tally t = {k ? "bf16 -> f32" : "f16 -> f32", 0, 0, ""};
        widen_of_flavour(types[k], in, 65536, out);
        for (uint32_t i = 0; i < 65536; i++) {
            float w = k ? dwconv_bf16_to_f32(in[i]) : dwconv_f16_to_f32(in[i]);
            uint32_t got = dwconv_f32_bits(out[i]), want = dwconv_f32_bits(w);
            if (k == 0 && w != w) got |= 0x00400000u, want |= 0x00400000u;
            t.checked++;
            if (got != want) mismatch(&t, i, got, want);
        }
        expect_clean(&t);
    }
}
END_TEST

/* ---- which flavour ------------------------------------------------------------------ */

/* 0 when the flavour runs here; 77 (after saying why) when it does not. */
static int find_flavour(void) {
#ifdef FLAVOUR_GPU_EMULATED
    return 0;
#else
    char why[256] = "";
    if (dwconv_cpu_kernels_find(FLAVOUR, &kernels, why, sizeof why) == DWCONV_SUCCESS) return 0;
    printf("SKIP %s: %s\n", FLAVOUR, why);
    return 77;
#endif
}

int main(void) {
    int skip = find_flavour();
    if (skip) return skip;
    printf("flavour %s%s\n", FLAVOUR, test_exhaustive() ? " (exhaustive: every float)" : "");
    Suite *s = suite_create("simd_numerics");
    TCase *tc = core_tcase(s, "activations", test_exhaustive() ? 7200 : 300, NULL, NULL);
    tcase_add_test(tc, silu);
    tcase_add_test(tc, exp_of_x);
    tcase_add_test(tc, exp_of_minus_x);
    tcase_add_test(tc, relu);
    tcase_add_test(tc, none);
    tc = core_tcase(s, "conversions", test_exhaustive() ? 7200 : 300, NULL, NULL);
    tcase_add_test(tc, narrow);
    tcase_add_test(tc, widen);
    return core_run(s, 0);
}
