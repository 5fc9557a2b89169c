/*
 * Every validation error of dwconv_forward (and dwconv_reference_forward, and the
 * descriptor functions where the error is the descriptor's), one test each: the
 * status, y left untouched (poisoned before the call), and a one-line message from
 * dwconv_last_error() that names the entry point and the offending field. Also the
 * backend errors, the status strings, and the per-thread error message.
 *
 * Every test runs in its own process (some set environment variables).
 */
#include <config.h>

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_check.h"
#include "dwconv.h"
#include "test_util.h"

/* ---- the arena: x, weight, bias and y of a small valid descriptor ----------------- */

enum { X_AT = 0, W_AT = 4096, B_AT = 8192, Y_AT = 12288, Y_ROOM = 4096, ARENA = 16384 };

static dwconv_context *cpu;
static unsigned char *arena;

static void setup(void) {
    ck_assert(dwconv_context_create(&cpu, DWCONV_BACKEND_CPU, 0) == DWCONV_SUCCESS);
    arena = aligned_alloc(64, ARENA);
    ck_assert(arena);
    memset(arena, 0, ARENA); /* zeros: valid values in every dtype */
}

static void teardown(void) {
    dwconv_context_destroy(cpu);
    free(arena);
}

/* B1 C2 L8 K3, f32: x 64 bytes, weight 24, bias 8, y (L_out 6) 48. */
static dwconv_desc small_desc(void) {
    dwconv_desc d;
    ck_assert(dwconv_desc_init(&d, 1, 2, 8, 3) == DWCONV_SUCCESS);
    return d;
}

/* One call of the forward functions: what they are given. */
typedef struct call {
    dwconv_context *ctx;
    const dwconv_desc *desc;
    const void *x, *weight, *bias;
    void *y;
    unsigned char *watch; /* watch_bytes from here must stay untouched: y's room */
    size_t watch_bytes;
} call;

static call arena_call(const dwconv_desc *d) {
    return (call){cpu, d, arena + X_AT, arena + W_AT, arena + B_AT, arena + Y_AT, arena + Y_AT,
                  Y_ROOM};
}

/* Which functions must reject it: the two forwards always (the reference one only
 * when there is a context to leave out), the descriptor functions when the fault is
 * the descriptor's. */
enum { FORWARDS = 1, DESCRIPTOR = 2 };

static void expect_message(const char *who, const char *needle, dwconv_status st) {
    const char *msg = dwconv_last_error();
    ck_assert_msg(msg && *msg, "%s returned %s with no message", who, dwconv_status_string(st));
    ck_assert_msg(!strchr(msg, '\n'), "%s: the message is not one line: '%s'", who, msg);
    ck_assert_msg(strstr(msg, who), "%s: the message does not name the function: '%s'", who, msg);
    ck_assert_msg(strstr(msg, needle), "%s: the message '%s' does not mention '%s'", who, msg,
                  needle);
}

static void expect_rejected(call c, dwconv_status want, const char *needle, int which) {
    const char *what = c.desc ? test_desc_string(c.desc) : "(no descriptor)";
    dwconv_status st;
    if (which & FORWARDS) {
        test_poison(c.watch, c.watch_bytes);
        st = dwconv_forward(c.ctx, c.desc, c.x, c.weight, c.bias, c.y);
        ck_assert_msg(st == want, "dwconv_forward on %s: %s (%s), want %s", what,
                      dwconv_status_string(st), dwconv_last_error(), dwconv_status_string(want));
        ck_assert_msg(test_untouched(c.watch, c.watch_bytes), "dwconv_forward on %s wrote to y",
                      what);
        expect_message("dwconv_forward", needle, st);
        if (c.ctx) { /* the same without a context */
            test_poison(c.watch, c.watch_bytes);
            st = dwconv_reference_forward(c.desc, c.x, c.weight, c.bias, c.y);
            ck_assert_msg(st == want, "dwconv_reference_forward on %s: %s (%s), want %s", what,
                          dwconv_status_string(st), dwconv_last_error(),
                          dwconv_status_string(want));
            ck_assert_msg(test_untouched(c.watch, c.watch_bytes),
                          "dwconv_reference_forward on %s wrote to y", what);
            expect_message("dwconv_reference_forward", needle, st);
        }
    }
    if (which & DESCRIPTOR) {
        int64_t untouched = -7;
        st = dwconv_desc_resolve(c.desc, NULL, NULL, &untouched);
        ck_assert_msg(st == want && untouched == -7, "dwconv_desc_resolve on %s: %s (%s)", what,
                      dwconv_status_string(st), dwconv_last_error());
        expect_message("dwconv_desc_resolve", needle, st);
        st = dwconv_desc_sizes(c.desc, &untouched, NULL, NULL, NULL);
        ck_assert_msg(st == want && untouched == -7, "dwconv_desc_sizes on %s: %s (%s)", what,
                      dwconv_status_string(st), dwconv_last_error());
        expect_message("dwconv_desc_sizes", needle, st);
    }
}

/* The descriptor is the fault: every function must say so. */
static void expect_bad_desc(const dwconv_desc *d, dwconv_status want, const char *needle) {
    expect_rejected(arena_call(d), want, needle, FORWARDS | DESCRIPTOR);
}

/* A valid call: both forwards succeed and write all of y. */
static void expect_accepted(const dwconv_desc *d) {
    int64_t ny = 0;
    ck_assert_msg(dwconv_desc_sizes(d, NULL, &ny, NULL, NULL) == DWCONV_SUCCESS, "%s: %s",
                  test_desc_string(d), dwconv_last_error());
    size_t esize = dwconv_dtype_size(d->dtype);
    ck_assert((size_t)ny * esize <= Y_ROOM);
    call c = arena_call(d);
    for (int reference = 0; reference < 2; reference++) {
        test_poison(c.watch, c.watch_bytes);
        dwconv_status st = reference ? dwconv_reference_forward(d, c.x, c.weight, c.bias, c.y)
                                     : dwconv_forward(cpu, d, c.x, c.weight, c.bias, c.y);
        ck_assert_msg(st == DWCONV_SUCCESS, "%s: %s", test_desc_string(d), dwconv_last_error());
        ck_assert_str_eq(dwconv_last_error(), "");
        for (int64_t i = 0; i < ny; i++)
            ck_assert_msg(!test_untouched((unsigned char *)c.y + (size_t)i * esize, esize),
                          "%s: y element %lld not written", test_desc_string(d), (long long)i);
        ck_assert(test_untouched((unsigned char *)c.y + (size_t)ny * esize,
                                 Y_ROOM - (size_t)ny * esize));
    }
}

/* ---- pointers ----------------------------------------------------------------------- */

static const char *const pointer_names[] = {"context", "desc", "x", "weight", "y"};

START_TEST(null_pointer) {
    dwconv_desc d = small_desc();
    call c = arena_call(&d);
    switch (_i) { /* y NULL: the arena's y room is still watched */
    case 0: c.ctx = NULL; break;
    case 1: c.desc = NULL; break;
    case 2: c.x = NULL; break;
    case 3: c.weight = NULL; break;
    default: c.y = NULL; break;
    }
    char needle[32];
    snprintf(needle, sizeof needle, "%s is NULL", pointer_names[_i]);
    expect_rejected(c, DWCONV_ERROR_NULL_POINTER, needle, FORWARDS);
}
END_TEST

START_TEST(null_descriptor_functions) {
    ck_assert(dwconv_desc_resolve(NULL, NULL, NULL, NULL) == DWCONV_ERROR_NULL_POINTER);
    expect_message("dwconv_desc_resolve", "desc", DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_desc_sizes(NULL, NULL, NULL, NULL, NULL) == DWCONV_ERROR_NULL_POINTER);
    expect_message("dwconv_desc_sizes", "desc", DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_desc_init(NULL, 1, 1, 1, 1) == DWCONV_ERROR_NULL_POINTER);
    expect_message("dwconv_desc_init", "desc", DWCONV_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(no_bias_is_valid) {
    dwconv_desc d = small_desc();
    call c = arena_call(&d);
    test_poison(c.watch, c.watch_bytes);
    ck_assert(dwconv_forward(cpu, &d, c.x, c.weight, NULL, c.y) == DWCONV_SUCCESS);
    ck_assert(!test_untouched(c.watch, 48));
}
END_TEST

/* ---- sizes -------------------------------------------------------------------------- */

static int64_t *size_field(dwconv_desc *d, int field) {
    int64_t *fields[] = {&d->batch, &d->channels, &d->length, &d->kernel_size, &d->stride,
                         &d->dilation, &d->pad_left, &d->pad_right};
    return fields[field];
}
static const char *const size_names[] = {"batch", "channels", "length", "kernel_size",
                                         "stride", "dilation", "pad_left", "pad_right"};
static const int64_t bad_sizes[] = {0, -1, INT64_MIN};

/* _i: field * 3 + which bad value; the pads take only the negative ones. */
START_TEST(size_not_positive) {
    const int field = _i / 3;
    const int64_t value = bad_sizes[_i % 3];
    if (field >= 6 && value == 0) return; /* a zero pad is valid */
    dwconv_desc d = small_desc();
    *size_field(&d, field) = value;
    char needle[64];
    snprintf(needle, sizeof needle, "%s is %lld", size_names[field], (long long)value);
    expect_bad_desc(&d, DWCONV_ERROR_INVALID_VALUE, needle);
}
END_TEST

/* Sizes each valid alone whose products or sums do not fit; the needle names what. */
typedef struct overflow_case {
    const char *what, *needle;
    int64_t batch, channels, length, kernel, dilation, pad_left, pad_right;
    dwconv_dtype dtype;
} overflow_case;

static const overflow_case overflows[] = {
    {"B*C*L", "x has", (int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 31, 1, 1, 0, 0, DWCONV_F32},
    {"dilation*(K-1)", "dilation*(kernel_size-1)", 1, 1, 8, 3, (int64_t)1 << 62, 0, 0, DWCONV_F32},
    {"L + pads", "length + pad_left + pad_right", 1, 1, INT64_MAX - 1, 1, 1, 1, 1, DWCONV_F32},
    {"bytes of x", "x needs", 1, (int64_t)1 << 31, (int64_t)1 << 31, 1, 1, 0, 0, DWCONV_F32},
    {"bytes of x (f16)", "x needs", 1, (int64_t)1 << 31, (int64_t)1 << 31, 1, 1, 0, 0, DWCONV_F16},
    /* L_out = 2^32 + 1 makes y alone too large */
    {"B*C*L_out", "y has", 1, (int64_t)1 << 31, 1, 1, 1, (int64_t)1 << 32, 0, DWCONV_F32},
    {"bytes of y", "y needs", 1, (int64_t)1 << 30, 1, 1, 1, (int64_t)1 << 32, 0, DWCONV_F32},
    /* K = 2^32 fits thanks to the pad; C*K does not */
    {"C*K", "weight has", 1, (int64_t)1 << 32, 1, (int64_t)1 << 32, 1, (int64_t)1 << 32, 0,
     DWCONV_F32},
    {"bytes of weight", "weight needs", 1, (int64_t)1 << 31, 1, (int64_t)1 << 31, 1,
     (int64_t)1 << 31, 0, DWCONV_F32},
};

START_TEST(size_overflow) {
    const overflow_case *o = &overflows[_i];
    dwconv_desc d;
    ck_assert(dwconv_desc_init(&d, o->batch, o->channels, o->length, o->kernel) == DWCONV_SUCCESS);
    d.dilation = o->dilation, d.pad_left = o->pad_left, d.pad_right = o->pad_right;
    d.dtype = d.weight_dtype = o->dtype;
    expect_bad_desc(&d, DWCONV_ERROR_SIZE_OVERFLOW, o->needle);
}
END_TEST

/* The largest sizes just below the overflows are accepted. */
START_TEST(size_just_fits) {
    dwconv_desc d;
    int64_t nx = 0;
    ck_assert(dwconv_desc_init(&d, 1, (int64_t)1 << 30, (int64_t)1 << 31, 1) == DWCONV_SUCCESS);
    d.dtype = d.weight_dtype = DWCONV_F16; /* 2^61 elements, 2^62 bytes */
    ck_assert_msg(dwconv_desc_sizes(&d, &nx, NULL, NULL, NULL) == DWCONV_SUCCESS, "%s",
                  dwconv_last_error());
    ck_assert(nx == (int64_t)1 << 61);
    ck_assert(dwconv_desc_init(&d, 1, 1, INT64_MAX - 2, 1) == DWCONV_SUCCESS);
    d.pad_left = d.pad_right = 1; /* L + pads = INT64_MAX */
    d.dtype = d.weight_dtype = DWCONV_BF16;
    ck_assert_msg(dwconv_desc_resolve(&d, NULL, NULL, NULL) == DWCONV_ERROR_SIZE_OVERFLOW,
                  "2^63 elements of x cannot have a byte count");
    ck_assert(dwconv_desc_init(&d, 1, 1, (int64_t)1 << 40, 3) == DWCONV_SUCCESS);
    d.dilation = ((int64_t)1 << 39) - 1; /* span just below L */
    ck_assert_msg(dwconv_desc_resolve(&d, NULL, NULL, &nx) == DWCONV_SUCCESS, "%s",
                  dwconv_last_error());
    ck_assert(nx == 2);
}
END_TEST

/* ---- output length and padding limits ------------------------------------------------ */

START_TEST(empty_output) {
    dwconv_desc d = small_desc();
    d.length = 2; /* K = 3 needs 3 */
    expect_bad_desc(&d, DWCONV_ERROR_EMPTY_OUTPUT, "kernel");
    d = small_desc();
    d.dilation = 4; /* span 8 + 1 > L = 8 */
    expect_bad_desc(&d, DWCONV_ERROR_EMPTY_OUTPUT, "dilation");
    d.pad_right = 1; /* now 9 = span + 1: one output */
    expect_accepted(&d);
    d = small_desc();
    d.length = 1, d.kernel_size = 4, d.pad_left = 1, d.pad_right = 1; /* padded 3 < 4 */
    expect_bad_desc(&d, DWCONV_ERROR_EMPTY_OUTPUT, "kernel");
}
END_TEST

START_TEST(padding_too_large) {
    dwconv_desc d = small_desc(); /* L = 8 */
    d.padding_mode = DWCONV_PAD_REFLECT;
    d.pad_left = 8;
    expect_bad_desc(&d, DWCONV_ERROR_PADDING_TOO_LARGE, "reflect");
    d.pad_left = 0, d.pad_right = 8;
    expect_bad_desc(&d, DWCONV_ERROR_PADDING_TOO_LARGE, "pad_right (8)");
    d.pad_left = d.pad_right = 7; /* the largest reflect pads */
    expect_accepted(&d);

    d.padding_mode = DWCONV_PAD_CIRCULAR;
    d.pad_left = 9, d.pad_right = 0;
    expect_bad_desc(&d, DWCONV_ERROR_PADDING_TOO_LARGE, "circular");
    d.pad_left = 0, d.pad_right = 9;
    expect_bad_desc(&d, DWCONV_ERROR_PADDING_TOO_LARGE, "pad_right (9)");
    d.pad_left = d.pad_right = 8; /* the largest circular pads */
    expect_accepted(&d);

    d = small_desc(); /* a preset's pads are held to the same limit: K=9 same gives 4/4 */
    d.length = 4, d.kernel_size = 9, d.padding = DWCONV_PADDING_SAME;
    d.padding_mode = DWCONV_PAD_REFLECT;
    expect_bad_desc(&d, DWCONV_ERROR_PADDING_TOO_LARGE, "reflect");
    d.padding_mode = DWCONV_PAD_CIRCULAR; /* 4 <= L */
    expect_accepted(&d);
}
END_TEST

/* ---- aliasing -------------------------------------------------------------------------- */

START_TEST(aliasing) {
    dwconv_desc d = small_desc(); /* x 64 bytes, weight 24, bias 8, y 48 */
    unsigned char *x = arena + X_AT, *w = arena + W_AT, *b = arena + B_AT;
    call c = arena_call(&d);
    c.watch_bytes = 48;

    c.y = c.watch = x; /* in place */
    expect_rejected(c, DWCONV_ERROR_ALIASING, "y overlaps x", FORWARDS);
    c.y = c.watch = x + 60; /* y's first bytes are x's last */
    expect_rejected(c, DWCONV_ERROR_ALIASING, "y overlaps x", FORWARDS);
    c.x = x + 44, c.y = c.watch = x; /* y's last bytes are x's first */
    expect_rejected(c, DWCONV_ERROR_ALIASING, "y overlaps x", FORWARDS);

    c.x = x;
    c.y = c.watch = w + 20; /* into the weight */
    expect_rejected(c, DWCONV_ERROR_ALIASING, "y overlaps weight", FORWARDS);
    c.y = c.watch = w - 40; /* y ends 8 bytes into the weight */
    expect_rejected(c, DWCONV_ERROR_ALIASING, "y overlaps weight", FORWARDS);

    c.y = c.watch = b + 4; /* into the bias */
    expect_rejected(c, DWCONV_ERROR_ALIASING, "y overlaps bias", FORWARDS);

    /* touching is not overlapping: y right after x, and right before the weight */
    ck_assert(dwconv_forward(cpu, &d, x, w, b, x + 64) == DWCONV_SUCCESS);
    ck_assert(dwconv_forward(cpu, &d, x, w, b, w - 48) == DWCONV_SUCCESS);
    /* without bias, y may lie where a bias would have been */
    ck_assert(dwconv_forward(cpu, &d, x, w, NULL, b) == DWCONV_SUCCESS);
}
END_TEST

/* ---- enums ----------------------------------------------------------------------------- */

typedef struct enum_case { const char *field; int value; } enum_case;
static const enum_case bad_enums[] = {
    {"dtype", 3},       {"dtype", -1},        {"weight_dtype", 3}, {"weight_dtype", 1000},
    {"layout", 2},      {"layout", -1},       {"padding", 3},      {"padding", 77},
    {"padding_mode", 4}, {"padding_mode", -2}, {"activation", 3},  {"activation", 1 << 20},
};

START_TEST(unknown_enum) {
    const enum_case *e = &bad_enums[_i];
    dwconv_desc d = small_desc();
    if (!strcmp(e->field, "dtype")) d.dtype = (dwconv_dtype)e->value;
    else if (!strcmp(e->field, "weight_dtype")) d.weight_dtype = (dwconv_dtype)e->value;
    else if (!strcmp(e->field, "layout")) d.layout = (dwconv_layout)e->value;
    else if (!strcmp(e->field, "padding")) d.padding = (dwconv_padding)e->value;
    else if (!strcmp(e->field, "padding_mode")) d.padding_mode = (dwconv_padding_mode)e->value;
    else d.activation = (dwconv_activation)e->value;
    char needle[64];
    snprintf(needle, sizeof needle, "%s %d", e->field, e->value);
    expect_bad_desc(&d, DWCONV_ERROR_INVALID_VALUE, needle);
}
END_TEST

START_TEST(weight_dtype_mismatch) {
    const dwconv_dtype bad[][2] = {{DWCONV_F16, DWCONV_BF16}, {DWCONV_BF16, DWCONV_F16},
                                   {DWCONV_F32, DWCONV_F16}, {DWCONV_F32, DWCONV_BF16}};
    const dwconv_dtype good[][2] = {{DWCONV_F16, DWCONV_F16}, {DWCONV_F16, DWCONV_F32},
                                    {DWCONV_BF16, DWCONV_BF16}, {DWCONV_BF16, DWCONV_F32}};
    for (int i = 0; i < 4; i++) {
        dwconv_desc d = small_desc();
        d.dtype = bad[i][0], d.weight_dtype = bad[i][1];
        expect_bad_desc(&d, DWCONV_ERROR_INVALID_VALUE, "weight_dtype");
        d.dtype = good[i][0], d.weight_dtype = good[i][1];
        expect_accepted(&d);
    }
}
END_TEST

START_TEST(same_needs_stride_one) {
    dwconv_desc d = small_desc();
    d.padding = DWCONV_PADDING_SAME, d.stride = 2;
    expect_bad_desc(&d, DWCONV_ERROR_INVALID_VALUE, "stride");
    d.padding = DWCONV_PADDING_CAUSAL; /* causal takes any stride */
    expect_accepted(&d);
}
END_TEST

START_TEST(preset_with_pads) {
    const dwconv_padding presets[] = {DWCONV_PADDING_SAME, DWCONV_PADDING_CAUSAL};
    for (int p = 0; p < 2; p++)
        for (int side = 0; side < 2; side++) {
            dwconv_desc d = small_desc();
            d.padding = presets[p];
            *(side ? &d.pad_right : &d.pad_left) = 1;
            expect_bad_desc(&d, DWCONV_ERROR_INVALID_VALUE, side ? "pad_right" : "pad_left");
        }
}
END_TEST

/* ---- backends --------------------------------------------------------------------------- */

/* An explicit GPU backend with no module or no device: BACKEND_UNAVAILABLE, no crash,
 * and the reason from the backend report in the message. */
START_TEST(backend_unavailable) {
    const dwconv_backend gpus[] = {DWCONV_BACKEND_CUDA, DWCONV_BACKEND_HIP};
    for (int i = 0; i < 2; i++) {
        dwconv_backend_report report;
        ck_assert(dwconv_backend_query(gpus[i], &report) == DWCONV_SUCCESS);
        if (report.device_count > 0) {
            printf("backend_unavailable: %s has %d device(s) here; not checked\n",
                   dwconv_backend_name(gpus[i]), report.device_count);
            continue;
        }
        dwconv_context *ctx = (dwconv_context *)&report; /* must be left as it was */
        ck_assert(dwconv_context_create(&ctx, gpus[i], 0) == DWCONV_ERROR_BACKEND_UNAVAILABLE);
        ck_assert(ctx == (dwconv_context *)&report);
        expect_message("dwconv_context_create", dwconv_backend_name(gpus[i]),
                       DWCONV_ERROR_BACKEND_UNAVAILABLE);
        expect_message("dwconv_context_create", report.detail, DWCONV_ERROR_BACKEND_UNAVAILABLE);
        char name[64];
        ck_assert(dwconv_device_name(gpus[i], 0, name, sizeof name) ==
                  DWCONV_ERROR_BACKEND_UNAVAILABLE);
        expect_message("dwconv_device_name", report.detail, DWCONV_ERROR_BACKEND_UNAVAILABLE);
    }
}
END_TEST

START_TEST(backend_bad_arguments) {
    dwconv_context *ctx = NULL;
    ck_assert(dwconv_context_create(NULL, DWCONV_BACKEND_CPU, 0) == DWCONV_ERROR_NULL_POINTER);
    expect_message("dwconv_context_create", "context", DWCONV_ERROR_NULL_POINTER);
    ck_assert(dwconv_context_create(&ctx, (dwconv_backend)9, 0) == DWCONV_ERROR_INVALID_VALUE);
    expect_message("dwconv_context_create", "backend 9", DWCONV_ERROR_INVALID_VALUE);
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, -1) == DWCONV_ERROR_INVALID_VALUE);
    expect_message("dwconv_context_create", "device -1", DWCONV_ERROR_INVALID_VALUE);
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 1) == DWCONV_ERROR_INVALID_VALUE);
    expect_message("dwconv_context_create", "device 1", DWCONV_ERROR_INVALID_VALUE);
    ck_assert(ctx == NULL);
    dwconv_backend_report report;
    ck_assert(dwconv_backend_query((dwconv_backend)-1, &report) == DWCONV_ERROR_INVALID_VALUE);
    expect_message("dwconv_backend_query", "backend -1", DWCONV_ERROR_INVALID_VALUE);
    ck_assert(dwconv_backend_query(DWCONV_BACKEND_AUTO, &report) == DWCONV_ERROR_INVALID_VALUE);
    ck_assert(dwconv_backend_query(DWCONV_BACKEND_CPU, NULL) == DWCONV_ERROR_NULL_POINTER);
    expect_message("dwconv_backend_query", "report", DWCONV_ERROR_NULL_POINTER);
    char name[8];
    ck_assert(dwconv_device_name(DWCONV_BACKEND_CPU, 1, name, sizeof name) ==
              DWCONV_ERROR_INVALID_VALUE);
    expect_message("dwconv_device_name", "device 1", DWCONV_ERROR_INVALID_VALUE);
    ck_assert(dwconv_device_name(DWCONV_BACKEND_CPU, 0, name, 0) == DWCONV_ERROR_INVALID_VALUE);
    expect_message("dwconv_device_name", "name_size", DWCONV_ERROR_INVALID_VALUE);
    ck_assert(dwconv_device_name(DWCONV_BACKEND_CPU, 0, NULL, 8) == DWCONV_ERROR_NULL_POINTER);
}
END_TEST

/* DWCONV_BACKEND steers AUTO; a name that is no backend is an error, never a guess. */
START_TEST(environment_backend) {
    dwconv_context *ctx = NULL;
    dwconv_backend b = DWCONV_BACKEND_HIP;
    ck_assert(setenv("DWCONV_BACKEND", "bogus", 1) == 0);
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_AUTO, 0) == DWCONV_ERROR_INVALID_VALUE);
    ck_assert(ctx == NULL);
    expect_message("dwconv_context_create", "DWCONV_BACKEND='bogus'", DWCONV_ERROR_INVALID_VALUE);
    /* an explicit backend does not look at the variable */
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 0) == DWCONV_SUCCESS);
    dwconv_context_destroy(ctx);

    ck_assert(setenv("DWCONV_BACKEND", "cpu", 1) == 0);
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_AUTO, 0) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_backend(ctx, &b) == DWCONV_SUCCESS && b == DWCONV_BACKEND_CPU);
    dwconv_context_destroy(ctx);
}
END_TEST

/* ---- status strings and the error message ------------------------------------------- */

START_TEST(status_strings) {
    static const char *const names[] = {
        "DWCONV_SUCCESS",          "DWCONV_ERROR_NULL_POINTER",
        "DWCONV_ERROR_INVALID_VALUE", "DWCONV_ERROR_SIZE_OVERFLOW",
        "DWCONV_ERROR_EMPTY_OUTPUT", "DWCONV_ERROR_PADDING_TOO_LARGE",
        "DWCONV_ERROR_ALIASING",   "DWCONV_ERROR_BACKEND_UNAVAILABLE",
        "DWCONV_ERROR_UNSUPPORTED", "DWCONV_ERROR_OUT_OF_MEMORY",
        "DWCONV_ERROR_BAD_POINTER", "DWCONV_ERROR_DEVICE"};
    const int count = (int)(sizeof names / sizeof names[0]);
    for (int s = 0; s < count; s++) {
        const char *text = dwconv_status_string((dwconv_status)s);
        ck_assert_msg(text && strncmp(text, names[s], strlen(names[s])) == 0 &&
                          (text[strlen(names[s])] == ':' || text[strlen(names[s])] == '\0'),
                      "status %d: '%s' does not start with %s", s, text ? text : "(null)",
                      names[s]);
        ck_assert_msg(strlen(text) > strlen(names[s]) + 2, "status %d: '%s' explains nothing", s,
                      text);
    }
    const int unknown[] = {count, -1, 1000};
    for (int i = 0; i < 3; i++) {
        const char *text = dwconv_status_string((dwconv_status)unknown[i]);
        ck_assert_msg(text && *text, "status %d has no string", unknown[i]);
        for (int s = 0; s < count; s++)
            ck_assert_msg(strncmp(text, names[s], strlen(names[s])) != 0,
                          "unknown status %d reads as %s", unknown[i], names[s]);
    }
}
END_TEST

/* After a failure, any successful call empties the message. */
START_TEST(success_clears_error) {
    dwconv_desc d = small_desc();
    call c = arena_call(&d);
    dwconv_backend b;
    for (int entry = 0; entry < 5; entry++) {
        ck_assert(dwconv_backend_parse("nonsense", &b) == DWCONV_ERROR_INVALID_VALUE);
        ck_assert_str_ne(dwconv_last_error(), "");
        dwconv_status st = DWCONV_ERROR_DEVICE;
        switch (entry) {
        case 0: st = dwconv_forward(cpu, &d, c.x, c.weight, c.bias, c.y); break;
        case 1: st = dwconv_desc_resolve(&d, NULL, NULL, NULL); break;
        case 2: st = dwconv_desc_init(&d, 1, 2, 8, 3); break;
        case 3: st = dwconv_backend_parse("cpu", &b); break;
        default: st = dwconv_synchronize(cpu); break;
        }
        ck_assert_int_eq(st, DWCONV_SUCCESS);
        ck_assert_msg(!strcmp(dwconv_last_error(), ""), "entry %d left '%s'", entry,
                      dwconv_last_error());
    }
}
END_TEST

/* Two threads fail with their own messages at the same time; each sees only its own,
 * and the main thread's message survives them both. */
typedef struct thread_probe {
    pthread_barrier_t *barrier;
    const char *token;
    int empty_at_start, own_after_barrier, cleared;
} thread_probe;

static void *probe_thread(void *arg) {
    thread_probe *p = arg;
    dwconv_backend b;
    p->empty_at_start = strcmp(dwconv_last_error(), "") == 0;
    dwconv_backend_parse(p->token, &b); /* fails; the message quotes the token */
    pthread_barrier_wait(p->barrier);   /* both threads have failed */
    p->own_after_barrier = strstr(dwconv_last_error(), p->token) != NULL;
    pthread_barrier_wait(p->barrier);
    p->cleared = dwconv_backend_parse("cpu", &b) == DWCONV_SUCCESS && !*dwconv_last_error();
    return NULL;
}

START_TEST(error_per_thread) {
    dwconv_backend b;
    ck_assert(dwconv_backend_parse("main-thread-token", &b) == DWCONV_ERROR_INVALID_VALUE);
    pthread_barrier_t barrier;
    ck_assert(pthread_barrier_init(&barrier, NULL, 2) == 0);
    thread_probe probes[2] = {{&barrier, "first-thread-token", 0, 0, 0},
                              {&barrier, "second-thread-token", 0, 0, 0}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        ck_assert(pthread_create(&threads[i], NULL, probe_thread, &probes[i]) == 0);
    for (int i = 0; i < 2; i++) ck_assert(pthread_join(threads[i], NULL) == 0);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(probes[i].empty_at_start, "%s: a new thread's message is not empty",
                      probes[i].token);
        ck_assert_msg(probes[i].own_after_barrier, "%s: lost its message to the other thread",
                      probes[i].token);
        ck_assert_msg(probes[i].cleared, "%s: success did not clear its message",
                      probes[i].token);
    }
    ck_assert_msg(strstr(dwconv_last_error(), "main-thread-token"),
                  "the main thread's message changed: '%s'", dwconv_last_error());
}
END_TEST

static TCase *add_tcase(Suite *s, const char *name) {
    return core_tcase(s, name, 0, setup, teardown);
}

int main(void) {
    Suite *s = suite_create("validation");
    TCase *tc = add_tcase(s, "pointers");
    tcase_add_loop_test(tc, null_pointer, 0, 5);
    tcase_add_test(tc, null_descriptor_functions);
    tcase_add_test(tc, no_bias_is_valid);

    tc = add_tcase(s, "sizes");
    tcase_add_loop_test(tc, size_not_positive, 0, 8 * 3);
    tcase_add_loop_test(tc, size_overflow, 0, sizeof overflows / sizeof overflows[0]);
    tcase_add_test(tc, size_just_fits);
    tcase_add_test(tc, empty_output);
    tcase_add_test(tc, padding_too_large);

    tc = add_tcase(s, "aliasing");
    tcase_add_test(tc, aliasing);

    tc = add_tcase(s, "enums");
    tcase_add_loop_test(tc, unknown_enum, 0, sizeof bad_enums / sizeof bad_enums[0]);
    tcase_add_test(tc, weight_dtype_mismatch);
    tcase_add_test(tc, same_needs_stride_one);
    tcase_add_test(tc, preset_with_pads);

    tc = add_tcase(s, "backends");
    tcase_add_test(tc, backend_unavailable);
    tcase_add_test(tc, backend_bad_arguments);
    tcase_add_test(tc, environment_backend);

    tc = add_tcase(s, "messages");
    tcase_add_test(tc, status_strings);
    tcase_add_test(tc, success_clears_error);
    tcase_add_test(tc, error_per_thread);
    return core_run(s, 1); /* setenv and the loader's state stay in each test */
}
