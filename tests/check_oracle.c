/*
 * The cpu oracle against a float64 model written here from the definition (nothing
 * from src/ computes a padded index, a rounding or an output length for it):
 *   - hundreds of random descriptors through the reference (src/reference, internal),
 *     dwconv_forward on a cpu context and dwconv_reference_forward;
 *   - hand-worked cases for every padding mode, every preset, stride, dilation,
 *     channels, batch, bias, relu, both layouts and the rounding to f16/bf16;
 *   - L_out against floor((L + pl + pr - d*(K-1) - 1) / s) + 1 for many shapes.
 *
 * Inputs come from test_fill_exact: small integers times powers of two, so every
 * product and partial sum is exact in f32 as in double, whatever the order. The
 * library's output must then be the model's exact result rounded to the output dtype,
 * bit for bit, for activations none and relu. For silu see SILU_MAX_ULP.
 *
 * DWCONV_TEST_SEED=n in the environment changes the base seed (failure messages print
 * the seed of the failing case).
 */
#include <config.h>

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_check.h"
#include "cpu.h"
#include "dwconv.h"
#include "internal.h"
#include "reference.h"
#include "test_util.h"

/* silu in f32 is within 2 ulp of the true x/(1+e^-x), and within 1.68 subnormal
 * spacings where the result is subnormal (the contract's bounds, asserted over dense
 * samples of every float in check_numerics.c and measured over all of them: see
 * docs/numerics.md). Rounding that to f16 or bf16 adds at most half an ulp of the
 * dtype, one ulp where it crosses a binade. */
#define SILU_MAX_ULP 2.0

enum { GUARD = 64 }; /* poisoned bytes after y that no implementation may touch */

static uint64_t base_seed(void) {
    const char *env = getenv("DWCONV_TEST_SEED");
    return env && *env ? strtoull(env, NULL, 0) : 20261130u;
}

/* ---- the float64 model ------------------------------------------------------------ */

typedef struct format { int precision, emin, emax; } format;

static format format_of(dwconv_dtype t) {
    switch (t) {
    case DWCONV_F16: return (format){11, -14, 15};
    case DWCONV_BF16: return (format){8, -126, 127};
    default: return (format){24, -126, 127};
    }
}

/* Element i of a tensor, decoded from its bit fields. */
static double model_load(dwconv_dtype t, const void *data, int64_t i) {
    uint32_t u;
    float f;
    switch (t) {
    case DWCONV_F16: {
        uint16_t h = ((const uint16_t *)data)[i];
        int e = (h >> 10) & 31, m = h & 1023;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
        return h & 0x8000u ? -v : v;
    }
    case DWCONV_BF16:
        u = (uint32_t)((const uint16_t *)data)[i] << 16;
        memcpy(&f, &u, sizeof f);
        return f;
    default: return ((const float *)data)[i];
    }
}

/* The spacing of the dtype's values at |v| (its subnormal spacing below the normals). */
static double model_ulp(dwconv_dtype t, double v) {
    format fm = format_of(t);
    int e = v == 0 ? fm.emin : ilogb(v);
    if (e < fm.emin) e = fm.emin;
    return ldexp(1.0, e - (fm.precision - 1));
}

/* v rounded to the dtype, to nearest with ties to even: v / spacing is exact (a power
 * of two), nearbyint rounds it in the default mode, beyond the largest finite value is
 * infinity (the tie just above it rounds to the even 2^(emax+1), also infinity). */
static double model_round(dwconv_dtype t, double v) {
    if (v == 0 || !isfinite(v)) return v;
    format fm = format_of(t);
    double q = model_ulp(t, v);
    double r = nearbyint(v / q) * q;
    double largest = ldexp(2.0 - ldexp(1.0, 1 - fm.precision), fm.emax);
    return fabs(r) > largest ? copysign(INFINITY, v) : r;
}

/* PyTorch's padding presets: same = total/2 left, the rest right; causal = all left. */
static void model_pads(const dwconv_desc *d, int64_t *left, int64_t *right) {
    int64_t total = d->dilation * (d->kernel_size - 1);
    switch (d->padding) {
    case DWCONV_PADDING_SAME: *left = total / 2, *right = total - total / 2; break;
    case DWCONV_PADDING_CAUSAL: *left = total, *right = 0; break;
    default: *left = d->pad_left, *right = d->pad_right; break;
    }
}

/* floor((L + pl + pr - d*(K-1) - 1) / s) + 1, or 0 when the kernel does not fit. */
static int64_t model_output_length(const dwconv_desc *d) {
    int64_t left, right;
    model_pads(d, &left, &right);
    int64_t room = d->length + left + right - d->dilation * (d->kernel_size - 1) - 1;
    return room < 0 ? 0 : room / d->stride + 1;
}

static int64_t model_x_index(const dwconv_desc *d, int64_t b, int64_t c, int64_t i) {
    return d->layout == DWCONV_LAYOUT_NCL ? (b * d->channels + c) * d->length + i
                                          : (b * d->length + i) * d->channels + c;
}

static int64_t model_y_index(const dwconv_desc *d, int64_t b, int64_t c, int64_t o, int64_t lo) {
    return d->layout == DWCONV_LAYOUT_NCL ? (b * d->channels + c) * lo + o
                                          : (b * lo + o) * d->channels + c;
}

/* The padded row of one (b, c), as torch.nn.functional.pad builds it: row[left + i] =
 * x[i], then outward from each edge, the t-th value beyond it. */
static void model_pad_row(const dwconv_desc *d, const void *x, int64_t b, int64_t c,
                          int64_t left, int64_t right, double *row) {
    const int64_t L = d->length;
    double *xs = row + left; /* xs[0 .. L-1] is x */
    for (int64_t i = 0; i < L; i++) xs[i] = model_load(d->dtype, x, model_x_index(d, b, c, i));
    for (int64_t t = 1; t <= left; t++) { /* xs[-t] */
        switch (d->padding_mode) {
        case DWCONV_PAD_REFLECT: xs[-t] = xs[t]; break;     /* mirror about x[0] */
        case DWCONV_PAD_REPLICATE: xs[-t] = xs[0]; break;
        case DWCONV_PAD_CIRCULAR: xs[-t] = xs[L - t]; break; /* wraps to the end */
        default: xs[-t] = 0.0; break;
        }
    }
    for (int64_t t = 1; t <= right; t++) { /* xs[L-1+t] */
        switch (d->padding_mode) {
        case DWCONV_PAD_REFLECT: xs[L - 1 + t] = xs[L - 1 - t]; break; /* mirror about x[L-1] */
        case DWCONV_PAD_REPLICATE: xs[L - 1 + t] = xs[L - 1]; break;
        case DWCONV_PAD_CIRCULAR: xs[L - 1 + t] = xs[t - 1]; break;     /* wraps to the start */
        default: xs[L - 1 + t] = 0.0; break;
        }
    }
}

/* The exact sums bias + sum_k w[k] * row[o*s + k*d], in y's element order. */
static double *model_sums(const dwconv_desc *d, const void *x, const void *w, const void *bias) {
    int64_t left, right;
    model_pads(d, &left, &right);
    const int64_t C = d->channels, K = d->kernel_size, lo = model_output_length(d);
    double *row = malloc((size_t)(left + d->length + right) * sizeof *row);
    double *sums = malloc((size_t)(d->batch * C * lo) * sizeof *sums);
    ck_assert(row && sums);
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t c = 0; c < C; c++) {
            model_pad_row(d, x, b, c, left, right, row);
            for (int64_t o = 0; o < lo; o++) {
                double acc = bias ? model_load(d->weight_dtype, bias, c) : 0.0;
                for (int64_t k = 0; k < K; k++)
                    acc += model_load(d->weight_dtype, w, c * K + k) *
                           row[o * d->stride + k * d->dilation];
                sums[model_y_index(d, b, c, o, lo)] = acc;
            }
        }
    free(row);
    return sums;
}

/* silu of an exact sum (the contract computes it down to the subnormals: x < -86 takes
 * its cold path, not 0.1's -0; below about -745, e^-a overflows double and this is -0,
 * as the contract's x * 0 is). */
static double model_silu(double a) { return a / (1.0 + exp(-a)); }

/* Whether y element got is right for the exact sum; *want gets the value expected. */
static int model_accepts(const dwconv_desc *d, double sum, double got, double *want) {
    switch (d->activation) {
    case DWCONV_ACT_SILU: {
        *want = model_silu(sum);
        double bound = SILU_MAX_ULP * model_ulp(DWCONV_F32, *want) +
                       (d->dtype == DWCONV_F32 ? 0.0 : model_ulp(d->dtype, *want));
        if (*want == 0) return got == 0 && signbit(got) == signbit(*want);
        return fabs(got - *want) <= bound;
    }
    case DWCONV_ACT_RELU: *want = model_round(d->dtype, sum < 0 ? 0.0 : sum); break;
    default: *want = model_round(d->dtype, sum); break;
    }
    return got == *want && signbit(got) == signbit(*want);
}

/* ---- the implementations under test ------------------------------------------------ */

typedef enum impl { IMPL_CPU_REFERENCE, IMPL_FORWARD, IMPL_REFERENCE_FORWARD, IMPL_COUNT } impl;
static const char *const impl_names[] = {"dwconv_reference_run", "dwconv_forward(cpu)",
                                         "dwconv_reference_forward"};

static dwconv_status run_impl(impl which, int threads, const dwconv_desc *d, const void *x,
                              const void *w, const void *bias, void *y) {
    dwconv_status st;
    switch (which) {
    case IMPL_CPU_REFERENCE: {
        dwconv_problem p;
        char msg[DWCONV_MSG_SIZE];
        if ((st = dwconv_validate_forward(&p, d, NULL, x, w, bias, y, "check_oracle"))) return st;
        return dwconv_reference_run(&p, msg);
    }
    case IMPL_FORWARD: {
        dwconv_context *ctx = NULL;
        if ((st = dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 0)) ||
            (st = dwconv_context_set_threads(ctx, threads)) ||
            (st = dwconv_forward(ctx, d, x, w, bias, y)) || (st = dwconv_synchronize(ctx))) {
            dwconv_context_destroy(ctx);
            return st;
        }
        return dwconv_context_destroy(ctx);
    }
    default: return dwconv_reference_forward(d, x, w, bias, y);
    }
}

/* Runs one implementation on poisoned y (plus a poisoned guard after it) and checks
 * every element against the model; label says which case it is. */
static void check_against_model(impl which, int threads, const dwconv_desc *d, const void *x,
                                const void *w, const void *bias, const char *label) {
    const int64_t lo = model_output_length(d), ny = d->batch * d->channels * lo;
    const size_t esize = dwconv_dtype_size(d->dtype), ybytes = (size_t)ny * esize;
    unsigned char *y = malloc(ybytes + GUARD);
    ck_assert(y);
    test_poison(y, ybytes + GUARD);
    dwconv_status st = run_impl(which, threads, d, x, w, bias, y);
    ck_assert_msg(st == DWCONV_SUCCESS, "%s: %s failed: %s (%s)", label, impl_names[which],
                  dwconv_status_string(st), dwconv_last_error());
    EXPECT(test_untouched(y + ybytes, GUARD), "%s: %s wrote past the end of y", label,
           impl_names[which]);
    double *sums = model_sums(d, x, w, bias);
    for (int64_t i = 0; i < ny; i++) {
        EXPECT(!test_untouched(y + (size_t)i * esize, esize),
               "%s: %s never wrote y element %lld of %lld", label, impl_names[which],
               (long long)i, (long long)ny);
        double got = model_load(d->dtype, y, i), want;
        EXPECT(model_accepts(d, sums[i], got, &want),
               "%s: %s: y element %lld is %a, want %a (exact sum %a)", label, impl_names[which],
               (long long)i, got, want, sums[i]);
    }
    free(sums);
    free(y);
}

/* ---- random descriptors ------------------------------------------------------------ */

enum { RANDOM_CASES = 500 };

/* What the random descriptors covered; the test fails if a kind never came up. */
typedef struct coverage {
    int length_one, kernel_beyond_length, big_dilation, strided, odd_length;
    int mode[4], preset[3], dtype[3], narrow_weights, layout[2], bias[2], act[3];
} coverage;

static void note_coverage(coverage *cv, const dwconv_desc *d, int with_bias) {
    cv->length_one |= d->length == 1;
    cv->kernel_beyond_length |= d->kernel_size > d->length;
    cv->big_dilation |= d->dilation >= 5;
    cv->strided |= d->stride > 1;
    cv->odd_length |= d->length % 2 == 1 && d->length > 1;
    cv->mode[d->padding_mode] = cv->preset[d->padding] = cv->dtype[d->dtype] = 1;
    cv->narrow_weights |= d->weight_dtype != DWCONV_F32;
    cv->layout[d->layout] = cv->bias[with_bias] = cv->act[d->activation] = 1;
}

static void expect_coverage(const coverage *cv) {
    const struct { int seen; const char *what; } items[] = {
        {cv->length_one, "L = 1"}, {cv->kernel_beyond_length, "K > L"},
        {cv->big_dilation, "dilation >= 5"}, {cv->strided, "stride > 1"},
        {cv->odd_length, "odd L"}, {cv->mode[0], "zeros"}, {cv->mode[1], "reflect"},
        {cv->mode[2], "replicate"}, {cv->mode[3], "circular"}, {cv->preset[0], "explicit"},
        {cv->preset[1], "same"}, {cv->preset[2], "causal"}, {cv->dtype[0], "f32"},
        {cv->dtype[1], "f16"}, {cv->dtype[2], "bf16"}, {cv->narrow_weights, "f16/bf16 weights"},
        {cv->layout[0], "NCL"}, {cv->layout[1], "NLC"}, {cv->bias[0], "no bias"},
        {cv->bias[1], "bias"}, {cv->act[0], "none"}, {cv->act[1], "relu"}, {cv->act[2], "silu"},
    };
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        ck_assert_msg(items[i].seen, "no random descriptor had %s", items[i].what);
}

START_TEST(random_descriptors) {
    const impl which = (impl)_i;
    const uint64_t base = base_seed();
    coverage cv = {0};
    for (int n = 0; n < RANDOM_CASES; n++) {
        const uint64_t seed = base + (uint64_t)n;
        test_rng rng = test_rng_seed(seed);
        dwconv_desc d = test_random_desc(&rng, 40, 5);
        const int with_bias = (int)test_rng_range(&rng, 0, 1);
        note_coverage(&cv, &d, with_bias);
        const int64_t nx = d.batch * d.channels * d.length, nw = d.channels * d.kernel_size;
        void *x = malloc(test_bytes(d.dtype, nx)), *w = malloc(test_bytes(d.weight_dtype, nw));
        void *bias = malloc(test_bytes(d.weight_dtype, d.channels));
        ck_assert(x && w && bias);
        /* x: k 2^-sx, w: k 2^-sw, bias: k 2^-(sx+sw), |k| <= 64 (exact in bf16): every
         * partial sum is a multiple of 2^-(sx+sw) and below 40*64*64+64 < 2^18 of them
         * (K <= 40), so exact in f32. Sums of 12 and more bits round in f16 and bf16,
         * ties included; the scales move them across the binades. */
        const int sx = (int)test_rng_range(&rng, 0, 6), sw = (int)test_rng_range(&rng, 0, 6);
        test_fill_exact(&rng, d.dtype, x, nx, 64, sx);
        test_fill_exact(&rng, d.weight_dtype, w, nw, 64, sw);
        test_fill_exact(&rng, d.weight_dtype, bias, d.channels, 64, sx + sw);

        int64_t y_elements = -1;
        ck_assert(dwconv_desc_sizes(&d, NULL, &y_elements, NULL, NULL) == DWCONV_SUCCESS);
        char label[400];
        snprintf(label, sizeof label, "seed %llu (DWCONV_TEST_SEED=%llu, case %d): %s%s",
                 (unsigned long long)seed, (unsigned long long)base, n, test_desc_string(&d),
                 with_bias ? " bias" : "");
        EXPECT(y_elements == d.batch * d.channels * model_output_length(&d),
               "%s: dwconv_desc_sizes says %lld outputs, the formula %lld", label,
               (long long)y_elements, (long long)(d.batch * d.channels * model_output_length(&d)));
        check_against_model(which, n % 3, &d, x, w, with_bias ? bias : NULL, label);
        free(x), free(w), free(bias);
    }
    expect_coverage(&cv);
}
END_TEST

/* ---- hand-worked cases -------------------------------------------------------------- */

/* One channel, f32, x = 1 2 3 ... L. The comment of each case writes out the padded
 * row and each output: y[o] = sum_k w[k] * row[o*stride + k*dilation]. */
typedef struct hand {
    const char *what;
    int64_t length, kernel, stride, dilation, pad_left, pad_right;
    dwconv_padding padding;
    dwconv_padding_mode mode;
    float w[5];
    int64_t outputs;
    float want[8];
} hand;

#define W3 {1, 10, 100}
static const hand padding_cases[] = {
    /* 0 0 | 1 2 3 4 | 0 0: 0+0+100, 0+10+200, 1+20+300, 2+30+400, 3+40+0, 4+0+0 */
    {"zeros 2/2", 4, 3, 1, 1, 2, 2, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_ZEROS, W3, 6,
     {100, 210, 321, 432, 43, 4}},
    /* 3 2 | 1 2 3 4 | 3 2: 3+20+100, 2+10+200, 321, 432, 3+40+300, 4+30+200 */
    {"reflect 2/2", 4, 3, 1, 1, 2, 2, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_REFLECT, W3, 6,
     {123, 212, 321, 432, 343, 234}},
    /* 1 1 | 1 2 3 4 | 4 4: 1+10+100, 1+10+200, 321, 432, 3+40+400, 4+40+400 */
    {"replicate 2/2", 4, 3, 1, 1, 2, 2, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_REPLICATE, W3, 6,
     {111, 211, 321, 432, 443, 444}},
    /* 3 4 | 1 2 3 4 | 1 2: 3+40+100, 4+10+200, 321, 432, 3+40+100, 4+10+200 */
    {"circular 2/2", 4, 3, 1, 1, 2, 2, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_CIRCULAR, W3, 6,
     {143, 214, 321, 432, 143, 214}},
    /* the largest circular pad, L: 1 2 3 4 | 1 2 3 4 | 1:
     * 1+20+300, 2+30+400, 3+40+100, 4+10+200, 1+20+300, 2+30+400, 3+40+100 */
    {"circular 4/1 (pad = L)", 4, 3, 1, 1, 4, 1, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_CIRCULAR,
     W3, 7, {321, 432, 143, 214, 321, 432, 143}},
    /* the largest reflect pad, L-1: 4 3 2 | 1 2 3 4:
     * 4+30+200, 3+20+100, 2+10+200, 1+20+300, 2+30+400 */
    {"reflect 3/0 (pad = L-1)", 4, 3, 1, 1, 3, 0, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_REFLECT,
     W3, 5, {234, 123, 212, 321, 432}},
    /* 1 2 3 4 | 3 2 1: 1+20+300, 2+30+400, 3+40+300, 4+30+200, 3+20+100 */
    {"reflect 0/3", 4, 3, 1, 1, 0, 3, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_REFLECT, W3, 5,
     {321, 432, 343, 234, 123}},
    /* 1 2 3 4 | 4 4 4: 321, 432, 3+40+400, 4+40+400, 4+40+400 */
    {"replicate 0/3", 4, 3, 1, 1, 0, 3, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_REPLICATE, W3, 5,
     {321, 432, 443, 444, 444}},
    /* L = 1: 1 | 1 | 1 for both: 1+10+100 */
    {"replicate L=1", 1, 3, 1, 1, 1, 1, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_REPLICATE, W3, 1,
     {111}},
    {"circular L=1 (pad = L)", 1, 3, 1, 1, 1, 1, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_CIRCULAR,
     W3, 1, {111}},
    /* K > L: 0 0 | 1 2 | 0 0, w = 1 10 100 1000 10000:
     * 0+0+100+2000+0, 0+10+200+0+0 */
    {"zeros K=5 > L=2", 2, 5, 1, 1, 2, 2, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_ZEROS,
     {1, 10, 100, 1000, 10000}, 2, {2100, 210}},
};

static const hand preset_cases[] = {
    /* same, K=3: total 2, 1 left, 1 right: 0 | 1 2 3 4 | 0: 0+10+200, 1+20+300, 432, 3+40+0 */
    {"same K=3", 4, 3, 1, 1, 0, 0, DWCONV_PADDING_SAME, DWCONV_PAD_ZEROS, W3, 4,
     {210, 321, 432, 43}},
    /* same, even K=4: total 3, 1 left, 2 right (PyTorch puts the extra one right):
     * 0 | 1 2 3 4 | 0 0, w = 1 10 100 1000: 0+10+200+3000, 1+20+300+4000, 2+30+400+0,
     * 3+40+0+0 */
    {"same K=4", 4, 4, 1, 1, 0, 0, DWCONV_PADDING_SAME, DWCONV_PAD_ZEROS, {1, 10, 100, 1000}, 4,
     {3210, 4321, 432, 43}},
    /* same, K=2 dilation 2: total 2, 1/1: 0 | 1 2 3 4 | 0, y[o] = row[o] + 10 row[o+2]:
     * 0+20, 1+30, 2+40, 3+0 */
    {"same K=2 dilation 2", 4, 2, 1, 2, 0, 0, DWCONV_PADDING_SAME, DWCONV_PAD_ZEROS, {1, 10}, 4,
     {20, 31, 42, 3}},
    /* same, K=2 dilation 3: total 3, 1 left, 2 right: 0 | 1 2 3 4 | 0 0,
     * y[o] = row[o] + 10 row[o+3]: 0+30, 1+40, 2+0, 3+0 */
    {"same K=2 dilation 3", 4, 2, 1, 3, 0, 0, DWCONV_PADDING_SAME, DWCONV_PAD_ZEROS, {1, 10}, 4,
     {30, 41, 2, 3}},
    /* same with reflect: 2 | 1 2 3 4 | 3: 2+10+200, 1+20+300, 432, 3+40+300 */
    {"same K=3 reflect", 4, 3, 1, 1, 0, 0, DWCONV_PADDING_SAME, DWCONV_PAD_REFLECT, W3, 4,
     {212, 321, 432, 343}},
    /* causal K=3: 0 0 | 1 2 3 4: 0+0+100, 0+10+200, 1+20+300, 2+30+400 (y[t] sees x[<=t]) */
    {"causal K=3", 4, 3, 1, 1, 0, 0, DWCONV_PADDING_CAUSAL, DWCONV_PAD_ZEROS, W3, 4,
     {100, 210, 321, 432}},
    /* causal K=3 dilation 2: 4 left: 0 0 0 0 | 1 2 3 4, y[o] = row[o] + 10 row[o+2] +
     * 100 row[o+4]: 0+0+100, 0+0+200, 0+10+300, 0+20+400 */
    {"causal K=3 dilation 2", 4, 3, 1, 2, 0, 0, DWCONV_PADDING_CAUSAL, DWCONV_PAD_ZEROS, W3, 4,
     {100, 200, 310, 420}},
    /* causal with replicate: 1 1 | 1 2 3 4: 1+10+100, 1+10+200, 321, 432 */
    {"causal K=3 replicate", 4, 3, 1, 1, 0, 0, DWCONV_PADDING_CAUSAL, DWCONV_PAD_REPLICATE, W3, 4,
     {111, 211, 321, 432}},
    /* causal with stride 2: 0 0 | 1 2 3 4 5, L_out = (7-3)/2+1 = 3: rows 0..2, 2..4, 4..6:
     * 0+0+100, 1+20+300, 3+40+500 */
    {"causal K=3 stride 2", 5, 3, 2, 1, 0, 0, DWCONV_PADDING_CAUSAL, DWCONV_PAD_ZEROS, W3, 3,
     {100, 321, 543}},
};

static const hand stride_dilation_cases[] = {
    /* stride 2, no pad, 1..7: x0..2, x2..4, x4..6: 1+20+300, 3+40+500, 5+60+700 */
    {"stride 2", 7, 3, 2, 1, 0, 0, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_ZEROS, W3, 3,
     {321, 543, 765}},
    /* stride 2, 1..8: (8-3)/2 + 1 = 3 (floor): x[7] = 8 is never read */
    {"stride 2, floor", 8, 3, 2, 1, 0, 0, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_ZEROS, W3, 3,
     {321, 543, 765}},
    /* stride 3, pad 1/1: 0 | 1..7 | 0, L_out = (9-3)/3+1 = 3: rows 0..2, 3..5, 6..8:
     * 0+10+200, 3+40+500, 6+70+0 */
    {"stride 3 pad 1/1", 7, 3, 3, 1, 1, 1, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_ZEROS, W3, 3,
     {210, 543, 76}},
    /* dilation 2, 1..7: span 4, 3 outputs: x[o] + 10 x[o+2] + 100 x[o+4]:
     * 1+30+500, 2+40+600, 3+50+700 */
    {"dilation 2", 7, 3, 1, 2, 0, 0, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_ZEROS, W3, 3,
     {531, 642, 753}},
    /* dilation 3, 1..7: span 6, one output: x0 + 10 x3 + 100 x6 = 1+40+700 */
    {"dilation 3", 7, 3, 1, 3, 0, 0, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_ZEROS, W3, 1, {741}},
    /* stride 2, dilation 2, reflect 1/1, 1..5: 2 | 1 2 3 4 5 | 4, L_out = (7-4-1)/2+1 = 2:
     * row0 + 10 row2 + 100 row4 = 2+20+400, row2 + 10 row4 + 100 row6 = 2+40+400 */
    {"stride 2 dilation 2 reflect", 5, 3, 2, 2, 1, 1, DWCONV_PADDING_EXPLICIT,
     DWCONV_PAD_REFLECT, W3, 2, {422, 442}},
    /* K = 1: y = 10 x */
    {"K=1", 4, 1, 1, 1, 0, 0, DWCONV_PADDING_EXPLICIT, DWCONV_PAD_ZEROS, {10}, 4,
     {10, 20, 30, 40}},
};

/* Runs a case through the model and every implementation: both must give want. */
static void expect_hand_result(const dwconv_desc *d, const void *x, const void *w,
                               const void *bias, const float *want, int64_t n, const char *what) {
    char label[400];
    snprintf(label, sizeof label, "%s: %s", what, test_desc_string(d));
    ck_assert_msg(model_output_length(d) * d->batch * d->channels == n,
                  "%s: the model makes %lld outputs, the hand count is %lld", label,
                  (long long)(model_output_length(d) * d->batch * d->channels), (long long)n);
    int64_t lo = -1;
    ck_assert_msg(dwconv_desc_resolve(d, NULL, NULL, &lo) == DWCONV_SUCCESS, "%s: %s", label,
                  dwconv_last_error());
    ck_assert_int_eq(lo, model_output_length(d));
    double *sums = model_sums(d, x, w, bias);
    for (int64_t i = 0; i < n; i++) {
        double modelled;
        ck_assert_msg(model_accepts(d, sums[i], want[i], &modelled),
                      "%s: the model gives %a for y element %lld, worked out by hand: %a", label,
                      modelled, (long long)i, (double)want[i]);
    }
    free(sums);
    for (impl which = 0; which < IMPL_COUNT; which++)
        check_against_model(which, 0, d, x, w, bias, label);
}

static void run_hand_cases(const hand *cases, size_t count) {
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (size_t i = 0; i < count; i++) {
        const hand *h = &cases[i];
        dwconv_desc d;
        ck_assert(dwconv_desc_init(&d, 1, 1, h->length, h->kernel) == DWCONV_SUCCESS);
        d.stride = h->stride, d.dilation = h->dilation;
        d.pad_left = h->pad_left, d.pad_right = h->pad_right;
        d.padding = h->padding, d.padding_mode = h->mode;
        expect_hand_result(&d, x, h->w, NULL, h->want, h->outputs, h->what);
    }
}

START_TEST(hand_padding_modes) {
    run_hand_cases(padding_cases, sizeof padding_cases / sizeof padding_cases[0]);
}
END_TEST

START_TEST(hand_presets) {
    run_hand_cases(preset_cases, sizeof preset_cases / sizeof preset_cases[0]);
}
END_TEST

START_TEST(hand_stride_dilation) {
    run_hand_cases(stride_dilation_cases,
                   sizeof stride_dilation_cases / sizeof stride_dilation_cases[0]);
}
END_TEST

/* Two channels with their own weights and bias, relu, in both layouts:
 * c0: x 1 2 3, w 1 10, bias 0.5: 0.5+1+20 = 21.5, 0.5+2+30 = 32.5
 * c1: x 4 5 6, w -1 -2, bias 15: 15-4-10 = 1, 15-5-12 = -2 -> relu 0 */
START_TEST(hand_channels_bias_relu_layouts) {
    const float w[] = {1, 10, -1, -2}, bias[] = {0.5f, 15};
    const float x_ncl[] = {1, 2, 3, 4, 5, 6}, want_ncl[] = {21.5f, 32.5f, 1, 0};
    const float x_nlc[] = {1, 4, 2, 5, 3, 6}, want_nlc[] = {21.5f, 1, 32.5f, 0};
    dwconv_desc d;
    ck_assert(dwconv_desc_init(&d, 1, 2, 3, 2) == DWCONV_SUCCESS);
    d.activation = DWCONV_ACT_RELU;
    expect_hand_result(&d, x_ncl, w, bias, want_ncl, 4, "2 channels, bias, relu, NCL");
    d.layout = DWCONV_LAYOUT_NLC;
    expect_hand_result(&d, x_nlc, w, bias, want_nlc, 4, "2 channels, bias, relu, NLC");
}
END_TEST

/* Two batches of one channel, w 1 10: b0 x 1 2 3: 21, 32; b1 x 10 20 30: 210, 320 */
START_TEST(hand_batches) {
    const float w[] = {1, 10}, x[] = {1, 2, 3, 10, 20, 30}, want[] = {21, 32, 210, 320};
    dwconv_desc d;
    ck_assert(dwconv_desc_init(&d, 2, 1, 3, 2) == DWCONV_SUCCESS);
    expect_hand_result(&d, x, w, NULL, want, 4, "2 batches");
    d.layout = DWCONV_LAYOUT_NLC; /* one channel: the same memory order */
    expect_hand_result(&d, x, w, NULL, want, 4, "2 batches, NLC");
}
END_TEST

/* K = 1, L = 1, x = 1 in each channel and f32 weights: y = w rounded to the dtype.
 * bf16 (8 bits): 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even, 1;
 *   1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: 1.015625.
 * f16 (11 bits): 1 + 2^-11 ties to 1; 1 + 3*2^-11 ties to 1 + 2^-9 = 1.001953125;
 *   65519 is below the halfway point 65520: the largest f16, 65504; 65520 ties to the
 *   even 65536, which overflows: inf; 2^-25 is half the smallest subnormal 2^-24: to
 *   even, 0; 3*2^-25 ties between 2^-24 (odd) and 2^-23. */
START_TEST(hand_output_rounding) {
    const uint16_t one_bf16[] = {0x3f80, 0x3f80};
    const float w_bf16[] = {1 + 0x1p-8f, 1 + 3 * 0x1p-8f}, want_bf16[] = {1, 1.015625f};
    const uint16_t one_f16[] = {0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00};
    const float w_f16[] = {1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 65519, 65520, 0x1p-25f, 3 * 0x1p-25f};
    const float want_f16[] = {1, 1.001953125f, 65504, INFINITY, 0, 0x1p-23f};
    dwconv_desc d;
    ck_assert(dwconv_desc_init(&d, 1, 2, 1, 1) == DWCONV_SUCCESS);
    d.dtype = DWCONV_BF16;
    expect_hand_result(&d, one_bf16, w_bf16, NULL, want_bf16, 2, "bf16 output ties");
    ck_assert(dwconv_desc_init(&d, 1, 6, 1, 1) == DWCONV_SUCCESS);
    d.dtype = DWCONV_F16;
    expect_hand_result(&d, one_f16, w_f16, NULL, want_f16, 6, "f16 output ties, overflow");
}
END_TEST

/* ---- output length -------------------------------------------------------------------- */

/* Random shapes, some with 40-bit sizes, through dwconv_desc_resolve: the pads of the
 * presets and L_out must follow the formula; a kernel that does not fit is EMPTY_OUTPUT. */
START_TEST(output_length_formula) {
    const uint64_t base = base_seed();
    for (int n = 0; n < 4000; n++) {
        test_rng rng = test_rng_seed(base ^ 0x1e57u ^ (uint64_t)n);
        int64_t top = n % 4 == 0 ? (int64_t)1 << 40 : 40;
        dwconv_desc d;
        dwconv_desc_init(&d, 1, 1, test_rng_range(&rng, 1, top), test_rng_range(&rng, 1, 12));
        d.dilation = test_rng_range(&rng, 1, n % 8 == 0 ? top / 16 + 1 : 6);
        d.padding = (dwconv_padding)test_rng_range(&rng, 0, 2);
        d.padding_mode = test_rng_range(&rng, 0, 1) ? DWCONV_PAD_ZEROS : DWCONV_PAD_REPLICATE;
        if (d.padding != DWCONV_PADDING_SAME) d.stride = test_rng_range(&rng, 1, 7);
        if (d.padding == DWCONV_PADDING_EXPLICIT) {
            d.pad_left = test_rng_range(&rng, 0, top / 2);
            d.pad_right = test_rng_range(&rng, 0, top / 2);
        }
        int64_t want = model_output_length(&d), left, right, lo = -1;
        model_pads(&d, &left, &right);
        dwconv_status st = dwconv_desc_resolve(&d, NULL, NULL, NULL);
        ck_assert_msg(st == (want > 0 ? DWCONV_SUCCESS : DWCONV_ERROR_EMPTY_OUTPUT),
                      "shape %d: %s: %s (%s), the formula gives %lld", n, test_desc_string(&d),
                      dwconv_status_string(st), dwconv_last_error(), (long long)want);
        if (want <= 0) continue;
        int64_t pl = -1, pr = -1;
        ck_assert(dwconv_desc_resolve(&d, &pl, &pr, &lo) == DWCONV_SUCCESS);
        ck_assert_msg(pl == left && pr == right && lo == want,
                      "shape %d: %s: pads %lld/%lld L_out %lld, want %lld/%lld L_out %lld", n,
                      test_desc_string(&d), (long long)pl, (long long)pr, (long long)lo,
                      (long long)left, (long long)right, (long long)want);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("oracle");
    TCase *tc = core_tcase(s, "random", 120, NULL, NULL);
    tcase_add_loop_test(tc, random_descriptors, 0, IMPL_COUNT);

    tc = core_tcase(s, "hand", 0, NULL, NULL);
    tcase_add_test(tc, hand_padding_modes);
    tcase_add_test(tc, hand_presets);
    tcase_add_test(tc, hand_stride_dilation);
    tcase_add_test(tc, hand_channels_bias_relu_layouts);
    tcase_add_test(tc, hand_batches);
    tcase_add_test(tc, hand_output_rounding);

    tc = core_tcase(s, "output_length", 0, NULL, NULL);
    tcase_add_test(tc, output_length_formula);
    return core_run(s, 0);
}
