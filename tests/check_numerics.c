/*
 * The numerical contract's building blocks (src/common/dwconv_numerics.h) against
 * independent references: libm's exp in long double for dwconv_exp and dwconv_silu,
 * the processor's F16C instructions for the f16 conversions, and a
 * round-to-nearest-even written here another way for bf16.
 *
 * The sweeps walk float bit patterns with a stride (coprime with 2^13 and 2^16, so the
 * bits that decide the rounding take every value in every binade) plus every pattern
 * of the boundary regions. DWCONV_TEST_EXHAUSTIVE=1 in the environment walks every
 * pattern instead (minutes, not seconds); DWCONV_TEST_QUICK=1 (the sanitizer builds)
 * every region at a 17 times sparser step, plus the patterns near multiples of 2^16
 * (tests/test_util.h, test_sweep_next).
 */
#include <config.h>

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86_F16C_TEST 1
#endif

#include "core_check.h"
#include "test_util.h"
#include "cpu_features.h"
#include "dwconv.h"
#include "dwconv_grad.h"
#include "dwconv_numerics.h"

/* dwconv_exp (|v| <= 86) must stay within this many ulp of e^v: the last fmaf of its
 * polynomial rounds p to half an ulp, the earlier steps add under 0.2 ulp, the
 * polynomial itself 2^-27 (measured over every float: 0.94). */
#define EXP_MAX_ULP 1.0

/* dwconv_silu against x / (1 + e^-x) (docs/numerics.md promises both):
 *   a normal result: within SILU_MAX_ULP ulp (measured over every float: see the docs);
 *   a subnormal or zero result (x < -87.3 or |x| < 2^-125): within
 *     SILU_SUBNORMAL_MAX spacings (2^-149). In the cold path x t' rounds once
 *     (2^-24 relative) after t's error (1.36 * 2^-24 at most, as dwconv_exp's), and a
 *     subnormal is below 2^-126, so both together are under 1.18 spacings; the last
 *     rounding adds half of one: 1.68. */
#define SILU_MAX_ULP 2.0
#define SILU_SUBNORMAL_MAX 1.68

static uint32_t stride(uint32_t usual) { return test_exhaustive() ? 1 : usual; }

/* The spacing of floats at |v| in long double, subnormal spacing below FLT_MIN. */
static long double ulp_f32l(long double v) {
    v = fabsl(v);
    if (v < FLT_MIN) return 0x1p-149L;
    int e;
    frexpl(v, &e);
    return ldexpl(1.0L, e - 24);
}

/* ---- walking bit patterns ------------------------------------------------------ */

enum { BATCH = 64, SIGN_POS = 1, SIGN_NEG = 2, SIGN_BOTH = 3 };
#define SIGN_BIT 0x80000000u

/* What a checker found: counts, the first failure in words, the worst error seen. */
typedef struct tally {
    uint64_t checked, failed;
    char first[200];
    double worst;
    uint32_t worst_bits;
} tally;

static void fail_at(tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_at(tally *t, const char *fmt, ...) {
    if (t->failed++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->first, sizeof t->first, fmt, ap);
        va_end(ap);
    }
}

static void note_error(tally *t, double err, uint32_t bits) {
    if (err > t->worst) t->worst = err, t->worst_bits = bits;
}

typedef void (*batch_fn)(const uint32_t *bits, int n, tally *t);

/* Calls check with batches of the patterns lo, lo+step, ..., <= hi (magnitudes), each
 * with the sign bit clear (SIGN_POS), set (SIGN_NEG) or both. */
static void walk(uint32_t lo, uint32_t hi, uint32_t step, int signs, batch_fn check, tally *t) {
    uint32_t bits[BATCH];
    const uint64_t quick_step = test_sweep_quick_step(step);
    for (int neg = 0; neg < 2; neg++) {
        if (!(signs & (neg ? SIGN_NEG : SIGN_POS))) continue;
        int n = 0;
        for (uint64_t u = lo; u <= hi; u = test_sweep_next(u, step, quick_step)) {
            bits[n++] = (uint32_t)u | (neg ? SIGN_BIT : 0u);
            if (n == BATCH) check(bits, n, t), n = 0;
        }
        if (n) check(bits, n, t);
    }
}

static void expect_clean(const tally *t, const char *what) {
    ck_assert_msg(t->checked > 0, "%s: nothing was checked", what);
    ck_assert_msg(t->failed == 0, "%s: %llu of %llu patterns wrong; first: %s", what,
                  (unsigned long long)t->failed, (unsigned long long)t->checked, t->first);
    printf("%s: %llu patterns, worst error %.4g at 0x%08x\n", what,
           (unsigned long long)t->checked, t->worst, t->worst_bits);
}

/* ---- exp ----------------------------------------------------------------------- */

/* dwconv_exp(v) against e^v in long double: NaN for NaN; +inf where e^v rounds past
 * FLT_MAX; within EXP_MAX_ULP ulp where it is normal (for |v| <= 86 always, and
 * then it must be dwconv_exp_bits' float); within EXP_SUBNORMAL_MAX spacings (2^-149)
 * where it is subnormal or zero: p's error (under 2^-23 relative) on a value below
 * 2^-126 is under one spacing, and the final scaling rounds once (half of one). */
#define EXP_SUBNORMAL_MAX 1.5
static void check_exp_batch(const uint32_t *bits, int n, tally *t) {
    for (int i = 0; i < n; i++) {
        float v = dwconv_f32_from_bits(bits[i]), r = dwconv_exp(v);
        t->checked++;
        if (isnan(v)) {
            if (!isnan(r)) fail_at(t, "exp(NaN 0x%08x) = %a, want NaN", bits[i], r);
            continue;
        }
        if (fabsf(v) <= DWCONV_SILU_COLD && dwconv_f32_bits(r) != dwconv_exp_bits(v)) {
            fail_at(t, "exp(%a) = %a is not dwconv_exp_bits' value", v, r);
            continue;
        }
        long double want = expl((long double)v);
        if (isinf((float)want) || isinf(r)) {
            if (!(isinf((float)want) && isinf(r) && r > 0))
                fail_at(t, "exp(%a) = %a, want %La", v, r, want);
            continue;
        }
        double err = (double)(fabsl((long double)r - want) / ulp_f32l(want));
        int subnormal = want < FLT_MIN;
        if (!subnormal) note_error(t, err, bits[i]);
        if (!(err <= (subnormal ? EXP_SUBNORMAL_MAX : EXP_MAX_ULP)) || r < 0.0f)
            fail_at(t, "exp(%a) = %a, want %La (%.3g %s)", v, r, want, err,
                    subnormal ? "spacings" : "ulp");
    }
}

/* The cold path's raised exponential: for -112 <= v < -86, dwconv_exp_bits(v) with 64
 * added to its exponent field is e^v * 2^64, a normal float, as close as dwconv_exp. */
static void check_raised_exp_batch(const uint32_t *bits, int n, tally *t) {
    for (int i = 0; i < n; i++) {
        float v = dwconv_f32_from_bits(bits[i]);
        float r = dwconv_f32_from_bits(dwconv_exp_bits(v) + DWCONV_SILU_COLD_EXP_BITS);
        t->checked++;
        long double want = expl((long double)v) * 0x1p64L;
        double err = (double)(fabsl((long double)r - want) / ulp_f32l(want));
        note_error(t, err, bits[i]);
        if (!(fabsf(r) >= FLT_MIN && err <= EXP_MAX_ULP))
            fail_at(t, "raised exp(%a) = %a, want %La (%.3g ulp)", v, r, want, err);
    }
}

START_TEST(exp_sweep) {
    tally t = {0};
    walk(0, 0x42ac0000u /* 86 */, stride(37), SIGN_BOTH, check_exp_batch, &t);
    walk(0, 0x00100000u, 1, SIGN_BOTH, check_exp_batch, &t); /* tiny v: p = 1 + v rounds */
    walk(0x42a80000u, 0x42b40000u, 1, SIGN_POS, check_exp_batch, &t); /* 84 .. 90: overflow */
    walk(0x42a80000u, 0x42d20000u, 1, SIGN_NEG, check_exp_batch, &t); /* -84 .. -105:
                                                                   subnormal results, 0 */
    walk(0x42b40000u, 0x7fffffffu, stride(4099), SIGN_BOTH, check_exp_batch, &t); /* to inf,
                                                                   NaN */
    expect_clean(&t, "dwconv_exp vs expl (normal results, in ulp)");
    tally raised = {0};
    walk(0x42ac0001u, 0x42e00000u /* 112 */, stride(3), SIGN_NEG, check_raised_exp_batch, &raised);
    expect_clean(&raised, "dwconv_exp_bits raised by 2^64 on [-112, -86) (ulp)");
}
END_TEST

START_TEST(exp_specials) {
    /* exact where the contract's steps are exact */
    ck_assert(dwconv_exp(0.0f) == 1.0f && dwconv_exp(-0.0f) == 1.0f);
    ck_assert(isnan(dwconv_exp(NAN)));
    ck_assert(dwconv_exp(INFINITY) == INFINITY);
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_exp(-INFINITY)), 0u); /* +0, not -0 */
    ck_assert(dwconv_exp(89.5f) == INFINITY && dwconv_exp(88.8f) == INFINITY);
    ck_assert(dwconv_exp(88.7f) < INFINITY);
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_exp(-104.5f)), 0u);
    ck_assert(dwconv_exp(-103.0f) > 0.0f && dwconv_exp(-103.0f) < FLT_MIN);
    /* the extremes of the hot range are normal floats near e^-86 and e^86 */
    ck_assert(dwconv_exp(-86.0f) > 4.4e-38f && dwconv_exp(-86.0f) < 4.5e-38f);
    ck_assert(dwconv_exp(86.0f) > 2.2e37f && dwconv_exp(86.0f) < 2.3e37f);
}
END_TEST

/* dwconv_exp never decreases as v grows (checked on every float of [-86, 86] in the
 * exhaustive run, on a stride and around the powers of two otherwise). */
static float exp_prev;
static void check_exp_monotonic(const uint32_t *bits, int n, tally *t) {
    for (int i = 0; i < n; i++) {
        float v = dwconv_f32_from_bits(bits[i]), r = dwconv_exp(v);
        t->checked++;
        if (r < exp_prev) fail_at(t, "exp(%a) = %a < the previous value %a", v, r, exp_prev);
        exp_prev = r;
    }
}

START_TEST(exp_monotonic) {
    tally t = {0};
    /* negative floats descending in bits are ascending in value: walk them from -86 up */
    uint32_t bits[BATCH];
    exp_prev = 0.0f;
    int n = 0;
    const uint32_t quick_step = (uint32_t)test_sweep_quick_step(stride(7));
    const uint32_t step = quick_step ? quick_step : stride(7);
    for (uint32_t u = 0xc2ac0000u; u > 0x80000000u; u -= step) {
        bits[n++] = u;
        if (n == BATCH) check_exp_monotonic(bits, n, &t), n = 0;
    }
    if (n) check_exp_monotonic(bits, n, &t);
    walk(0, 0x42ac0000u, stride(7), SIGN_POS, check_exp_monotonic, &t);
    expect_clean(&t, "dwconv_exp monotonic on [-86, 86]");
}
END_TEST

/* ---- silu and relu --------------------------------------------------------------- */

/* dwconv_silu(x) against x / (1 + e^-x) in long double. */
static void check_silu_batch(const uint32_t *bits, int n, tally *t) {
    for (int i = 0; i < n; i++) {
        float x = dwconv_f32_from_bits(bits[i]), r = dwconv_silu(x);
        t->checked++;
        if (isnan(x) || isinf(x)) {
            int ok = isnan(x) || x < 0 ? isnan(r) : r == x;
            if (!ok) fail_at(t, "silu(%a) = %a", x, r);
            continue;
        }
        long double X = x, want = X / (1.0L + expl(-X));
        if (r != 0.0f && (signbit(r) != 0) != (x < 0)) {
            fail_at(t, "silu(%a) = %a has the wrong sign", x, r);
            continue;
        }
        double err = (double)(fabsl((long double)r - want) / ulp_f32l(want));
        note_error(t, err, bits[i]);
        double bound = fabsl(want) < FLT_MIN ? SILU_SUBNORMAL_MAX : SILU_MAX_ULP;
        if (!(err <= bound))
            fail_at(t, "silu(%a) = %a, want %La (%.3g %s)", x, r, want, err,
                    fabsl(want) < FLT_MIN ? "subnormal spacings" : "ulp");
    }
}

START_TEST(silu_sweep) {
    tally t = {0};
    if (test_exhaustive()) {
        walk(0, 0x7fffffffu, 1, SIGN_BOTH, check_silu_batch, &t);
    } else {
        walk(0, 0x7fffffffu, 61, SIGN_BOTH, check_silu_batch, &t); /* a dense stride */
        walk(0, 0x00900000u, 1, SIGN_BOTH, check_silu_batch, &t); /* subnormal quotients */
        walk(0x32800000u, 0x34800000u, 3, SIGN_BOTH, check_silu_batch, &t); /* 2^-26 .. 2^-22:
                                                          e^-x rounds to 1 and leaves it */
        walk(0x42a00000u, 0x42e40000u, 1, SIGN_NEG, check_silu_batch, &t); /* -80 .. -114:
                                      the cold path, normal to subnormal to zero results */
        walk(0x42ab0000u, 0x42ad0000u, 1, SIGN_POS, check_silu_batch, &t); /* around +86 */
        walk(0x3f000000u, 0x41000000u, 5, SIGN_BOTH, check_silu_batch, &t); /* 0.5 .. 8 */
    }
    expect_clean(&t, "dwconv_silu vs x/(1+expl(-x)) (ulp; spacings where subnormal)");
}
END_TEST

START_TEST(silu_specials) {
    ck_assert(dwconv_silu(INFINITY) == INFINITY);
    ck_assert(isnan(dwconv_silu(NAN)));
    ck_assert(isnan(dwconv_silu(-NAN)));
    ck_assert(isnan(dwconv_silu(-INFINITY))); /* -inf * 0, as in 0.1 and PyTorch */
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_silu(0.0f)), 0u);
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_silu(-0.0f)), SIGN_BIT);
    ck_assert(dwconv_silu(FLT_MAX) == FLT_MAX);
    ck_assert(dwconv_silu(1000.0f) == 1000.0f);
    ck_assert(dwconv_silu(86.0f) == 86.0f);
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_silu(-1000.0f)), SIGN_BIT);
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_silu(-112.5f)), SIGN_BIT);
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_silu(-FLT_MAX)), SIGN_BIT);
    /* the cold path's results where 0.1 gave -0: normal at -88, subnormal at -100 */
    ck_assert(dwconv_silu(-88.0f) < -FLT_MIN);
    ck_assert(dwconv_silu(-100.0f) < 0.0f && dwconv_silu(-100.0f) > -FLT_MIN);
    /* tiny x: x / 2 rounded once, subnormals included */
    ck_assert(dwconv_silu(0x1p-140f) == 0x1p-141f);
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_silu(0x1p-149f)), 0u); /* 2^-150 ties to 0 */
    ck_assert(dwconv_silu(0x1.8p-148f) == 0x1p-148f);                /* 3 * 2^-150: to even */
    ck_assert(dwconv_silu(-0x1p-140f) == -0x1p-141f);
}
END_TEST
/* The backward's sigmoid without a division (dwconv_sigmoid_hot, what the GPU
 * kernels run with their refined reciprocal for yr) against the division of
 * dwconv_sigmoid, bit for bit, for z in [-86, 86]. */
static void check_sigmoid_hot_batch(const uint32_t *bits, int n, tally *t) {
    for (int i = 0; i < n; i++) {
        const float z = dwconv_f32_from_bits(bits[i]);
        const float e = dwconv_f32_from_bits(dwconv_exp_bits(-fabsf(z)));
        const float hot = dwconv_sigmoid_hot(z, e, 1.0f / (1.0f + e)), want = dwconv_sigmoid(z);
        t->checked++;
        if (dwconv_f32_bits(hot) != dwconv_f32_bits(want))
            fail_at(t, "sigmoid_hot(%a) = %a, the division %a", z, hot, want);
    }
}

START_TEST(sigmoid_hot_sweep) {
    tally t = {0};
    walk(0, 0x42ac0000u, stride(61), SIGN_BOTH, check_sigmoid_hot_batch, &t); /* |z| <= 86 */
    walk(0x3f000000u, 0x41000000u, stride(5), SIGN_NEG, check_sigmoid_hot_batch, &t); /* -0.5 .. -8 */
    expect_clean(&t, "dwconv_sigmoid_hot vs dwconv_sigmoid (bits)");
}
END_TEST

START_TEST(relu_specials) {
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_relu(-0.0f)), SIGN_BIT); /* -0 passes */
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_relu(-1.0f)), 0u);       /* +0, not -0 */
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_relu(-INFINITY)), 0u);
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_relu(-FLT_MIN / 4)), 0u); /* negative subnormal */
    ck_assert_uint_eq(dwconv_f32_bits(dwconv_relu(0.0f)), 0u);
    ck_assert(dwconv_relu(2.5f) == 2.5f);
    ck_assert(dwconv_relu(INFINITY) == INFINITY);
    ck_assert(dwconv_relu(FLT_MIN / 4) == FLT_MIN / 4);
    ck_assert(isnan(dwconv_relu(NAN)));
    ck_assert(isnan(dwconv_relu(-NAN)));
}
END_TEST
/* dwconv_activate's codes are the dwconv_activation values. */
START_TEST(activate_dispatch) {
    const float xs[] = {-3.5f, -0.0f, 0.0f, 0.75f, 20.0f, -100.0f};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        float x = xs[i];
        ck_assert_uint_eq(dwconv_f32_bits(dwconv_activate(DWCONV_ACT_NONE, x)), dwconv_f32_bits(x));
        ck_assert_uint_eq(dwconv_f32_bits(dwconv_activate(DWCONV_ACT_RELU, x)),
                          dwconv_f32_bits(dwconv_relu(x)));
        ck_assert_uint_eq(dwconv_f32_bits(dwconv_activate(DWCONV_ACT_SILU, x)),
                          dwconv_f32_bits(dwconv_silu(x)));
    }
}
END_TEST

/* ---- f16 against the processor's F16C ----------------------------------------------- */

#ifdef HAVE_X86_F16C_TEST
__attribute__((target("avx,f16c"))) static void check_f16_batch(const uint32_t *bits, int n,
                                                                  tally *t) {
    uint32_t in[BATCH] __attribute__((aligned(32))) = {0};
    uint16_t hw[BATCH];
    memcpy(in, bits, (size_t)n * sizeof *bits);
    for (int i = 0; i < BATCH; i += 8) {
        __m256 v = _mm256_load_ps((const float *)(in + i));
        _mm_storeu_si128((__m128i *)(hw + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (int i = 0; i < n; i++) {
        uint16_t got = dwconv_f32_to_f16(dwconv_f32_from_bits(bits[i]));
        if (got != hw[i])
            fail_at(t, "f32 0x%08x (%a): dwconv_f32_to_f16 0x%04x, F16C 0x%04x", bits[i],
                    dwconv_f32_from_bits(bits[i]), got, hw[i]);
    }
    t->checked += (uint64_t)n;
}

START_TEST(f32_to_f16_vs_f16c) {
    tally t = {0};
    if (test_exhaustive()) {
        walk(0, 0x7fffffffu, 1, SIGN_BOTH, check_f16_batch, &t);
    } else {
        walk(0, 0x7fffffffu, 13, SIGN_BOTH, check_f16_batch, &t); /* a dense stride */
        walk(0x32f00000u, 0x38900000u, 1, SIGN_BOTH, check_f16_batch, &t); /* f16 subnormals,
                                                         from below half the smallest one
                                                         to past the smallest normal */
        walk(0x477f0000u, 0x47810000u, 1, SIGN_BOTH, check_f16_batch, &t); /* overflow:
                                                         65504, the tie 65520, 65536 */
        walk(0x7f7f0000u, 0x7fffffffu, 1, SIGN_BOTH, check_f16_batch, &t); /* FLT_MAX, inf,
                                                         every NaN */
        for (uint32_t e = 0x71u; e < 0x8fu; e++) /* each f16 binade's top, carrying up */
            walk((e << 23) + 0x7fc000u, (e << 23) + 0x804000u, 1, SIGN_BOTH, check_f16_batch, &t);
    }
    expect_clean(&t, "dwconv_f32_to_f16 vs F16C");
}
END_TEST

__attribute__((target("avx,f16c"))) static void f16c_widen(const uint16_t *h, float *f) {
    _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
}

/* Every binary16 pattern. F16C quiets a signaling NaN as it widens; dwconv_f16_to_f32
 * keeps the bits (the contract only needs NaN to stay NaN: the first fmaf quiets it),
 * so for NaNs the quiet bit is left out of the comparison. */
START_TEST(f16_to_f32_vs_f16c) {
    for (uint32_t base = 0; base < 65536; base += 8) {
        uint16_t h[8];
        float hw[8];
        for (int j = 0; j < 8; j++) h[j] = (uint16_t)(base + (uint32_t)j);
        f16c_widen(h, hw);
        for (int j = 0; j < 8; j++) {
            uint32_t want = dwconv_f32_bits(hw[j]);
            uint32_t got = dwconv_f32_bits(dwconv_f16_to_f32(h[j]));
            if (isnan(hw[j])) got |= 0x00400000u;
            EXPECT(got == want, "f16 0x%04x: dwconv_f16_to_f32 0x%08x, F16C 0x%08x", h[j],
                          got, want);
        }
    }
}
END_TEST
#endif

/* f16 to f32 to f16 gives back every non-NaN pattern. */
START_TEST(f16_round_trip) {
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) continue;
        uint16_t back = dwconv_f32_to_f16(dwconv_f16_to_f32((uint16_t)h));
        EXPECT(back == h, "f16 0x%04x comes back as 0x%04x", h, back);
    }
}
END_TEST

/* ---- bf16 against another formulation of round-to-nearest-even ------------------- */

/* Keep the top 16 bits; round up when the 16 dropped bits are more than half, or
 * exactly half and the kept part is odd. A carry out of the mantissa moves into the
 * exponent, which turns the largest values into infinity as it should. NaNs are
 * judged apart. */
static uint16_t bf16_by_comparison(uint32_t u) {
    uint32_t kept = u >> 16, dropped = u & 0xffffu;
    if (dropped > 0x8000u || (dropped == 0x8000u && (kept & 1u))) kept++;
    return (uint16_t)kept;
}

static int bf16_is_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu); }

static void check_bf16_batch(const uint32_t *bits, int n, tally *t) {
    for (int i = 0; i < n; i++) {
        uint32_t u = bits[i];
        uint16_t got = dwconv_f32_to_bf16(dwconv_f32_from_bits(u));
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            if (!bf16_is_nan(got) || !(got & 0x40u))
                fail_at(t, "NaN 0x%08x became 0x%04x, want a quiet NaN", u, got);
        } else if (got != bf16_by_comparison(u)) {
            fail_at(t, "f32 0x%08x (%a): dwconv_f32_to_bf16 0x%04x, want 0x%04x", u,
                    dwconv_f32_from_bits(u), got, bf16_by_comparison(u));
        }
    }
    t->checked += (uint64_t)n;
}

START_TEST(f32_to_bf16_sweep) {
    tally t = {0};
    walk(0, 0x7fffffffu, stride(13), SIGN_BOTH, check_bf16_batch, &t);
    walk(0, 0x00810000u, 1, SIGN_BOTH, check_bf16_batch, &t);          /* subnormals */
    walk(0x7f7e0000u, 0x7fffffffu, 1, SIGN_BOTH, check_bf16_batch, &t); /* overflow, NaNs */
    expect_clean(&t, "dwconv_f32_to_bf16 vs comparison rounding");
}
END_TEST

/* Hand-picked values, each worked out from the definition. */
START_TEST(f32_to_bf16_cases) {
    static const struct { uint32_t f; uint16_t want; } cases[] = {
        {0x3f800000u, 0x3f80u}, /* 1 */
        {0x3f808000u, 0x3f80u}, /* 1 + 2^-8: halfway, 1 is even: stays */
        {0x3f818000u, 0x3f82u}, /* 1 + 3*2^-8: halfway, 1 + 2^-7 is odd: up */
        {0x3f808001u, 0x3f81u}, /* just above halfway: up */
        {0x3f807fffu, 0x3f80u}, /* just below halfway: down */
        {0xbf818000u, 0xbf82u}, /* the same tie, negative */
        {0x3fff8000u, 0x4000u}, /* 1.99609375 ties up, carrying into the exponent: 2 */
        {0x7f7fffffu, 0x7f80u}, /* FLT_MAX: beyond the largest bf16: +inf */
        {0x7f7f8000u, 0x7f80u}, /* halfway above the largest bf16 (odd): +inf */
        {0x7f7f7fffu, 0x7f7fu}, /* just below that: the largest bf16 */
        {0xff7fffffu, 0xff80u}, /* -FLT_MAX: -inf */
        {0x7f800000u, 0x7f80u}, /* +inf */
        {0xff800000u, 0xff80u}, /* -inf */
        {0x00000000u, 0x0000u}, /* +0 */
        {0x80000000u, 0x8000u}, /* -0 */
        {0x00008000u, 0x0000u}, /* subnormal halfway to the smallest bf16 subnormal: even 0 */
        {0x00018000u, 0x0002u}, /* subnormal tie, odd: up */
        {0x0000ffffu, 0x0001u}, /* rounds up to the smallest bf16 subnormal */
        {0x007fffffu, 0x0080u}, /* largest f32 subnormal: up to FLT_MIN */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = dwconv_f32_to_bf16(dwconv_f32_from_bits(cases[i].f));
        ck_assert_msg(got == cases[i].want, "f32 0x%08x: got 0x%04x, want 0x%04x", cases[i].f,
                      got, cases[i].want);
    }
    /* NaNs stay NaN: truncating 0x7f800001 would give inf, rounding 0x7fffffff would
     * carry into the sign and give -0 */
    const uint32_t nans[] = {0x7f800001u, 0x7fffffffu, 0xffffffffu, 0x7fc00000u, 0xff800001u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t got = dwconv_f32_to_bf16(dwconv_f32_from_bits(nans[i]));
        ck_assert_msg(bf16_is_nan(got) && (got & 0x40u), "NaN 0x%08x became 0x%04x", nans[i], got);
        ck_assert(isnan(dwconv_bf16_to_f32(got)));
    }
}
END_TEST

/* Every bf16 pattern widens to the value its fields say, and comes back unchanged. */
START_TEST(bf16_to_f32_all) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = dwconv_bf16_to_f32((uint16_t)h);
        uint32_t exponent = (h >> 7) & 0xffu, mantissa = h & 0x7fu;
        int negative = (h >> 15) != 0;
        if (exponent == 0xffu) {
            EXPECT(mantissa ? isnan(f) : isinf(f), "bf16 0x%04x widened to %a", h, f);
            if (mantissa) continue;
        } else {
            double magnitude = exponent == 0 ? ldexp(mantissa, -133)
                                             : ldexp(128 + mantissa, (int)exponent - 134);
            EXPECT((double)fabsf(f) == magnitude, "bf16 0x%04x widened to %a, want %a", h,
                          f, magnitude);
        }
        EXPECT((signbit(f) != 0) == negative, "bf16 0x%04x widened with the wrong sign", h);
        EXPECT(dwconv_f32_to_bf16(f) == h, "bf16 0x%04x comes back as 0x%04x", h,
               dwconv_f32_to_bf16(f));
    }
}
END_TEST

static TCase *add_tcase(Suite *s, const char *name) {
    return core_tcase(s, name, test_exhaustive() ? 3600 : 120, NULL, NULL);
}

int main(void) {
    Suite *s = suite_create("numerics");
    TCase *tc = add_tcase(s, "exp");
    tcase_add_test(tc, exp_sweep);
    tcase_add_test(tc, exp_specials);
    tcase_add_test(tc, exp_monotonic);

    tc = add_tcase(s, "activations");
    tcase_add_test(tc, silu_sweep);
    tcase_add_test(tc, silu_specials);
    tcase_add_test(tc, sigmoid_hot_sweep);
    tcase_add_test(tc, relu_specials);
    tcase_add_test(tc, activate_dispatch);

    tc = add_tcase(s, "f16");
#ifdef HAVE_X86_F16C_TEST
    if (dwconv_cpu_features_detect().f16c) { /* cpuid, not __builtin_cpu_supports: clang lacks "f16c" */
        tcase_add_test(tc, f32_to_f16_vs_f16c);
        tcase_add_test(tc, f16_to_f32_vs_f16c);
    } else {
        printf("numerics: the f16 comparisons with F16C are skipped: this CPU has no F16C\n");
    }
#else
    printf("numerics: the f16 comparisons with F16C are skipped: not an x86 build\n");
#endif
    tcase_add_test(tc, f16_round_trip);

    tc = add_tcase(s, "bf16");
    tcase_add_test(tc, f32_to_bf16_sweep);
    tcase_add_test(tc, f32_to_bf16_cases);
    tcase_add_test(tc, bf16_to_f32_all);
    return core_run(s, 0);
}
