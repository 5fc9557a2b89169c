/* Fuzz harness: descriptor validation and the cpu forward, on buffers of exactly the
 * size the descriptor needs (so that AddressSanitizer sees one element too far),
 * compared bit for bit with dwconv_reference_forward.
 *
 * An input is text, so that seeds are readable and reviewable: whitespace-separated
 * key=value words, '#' to the end of a line is a comment. Keys: b c l k stride dilation
 * pad_left pad_right (int64), padding mode layout dtype wdtype act (a name or any
 * integer, so that bad enums are reachable), bias (0/1), threads (1-4), seed (data).
 * Unset keys keep dwconv_desc_init's defaults for B1 C1 L1 K1; an unknown key or a
 * malformed value makes the input uninteresting (ignored).
 *
 * What must hold for every input:
 *   - dwconv_desc_resolve, dwconv_desc_sizes, dwconv_reference_forward and
 *     dwconv_forward agree on whether the descriptor is valid and on the status;
 *   - a refused call writes nothing (y keeps its poison) and reads nothing it was not
 *     given; a valid one leaves x, weight and bias untouched;
 *   - the cpu backend's y equals the oracle's bit for bit, at 1 to 4 threads. */
#include "fuzz_forward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwconv.h"

/* Problems above this many elements (x, y or weight) or tap products (y * K) are
 * validated only: the fuzzer should spend its time on shapes, not on arithmetic (the
 * scalar oracle under ASan does about 10^7 taps a second). */
enum { MAX_ELEMENTS = 1 << 16, MAX_TAPS = 1 << 22, DWCONV_MSG_OUTCOME = 600 };

char fuzz_forward_outcome[DWCONV_MSG_OUTCOME];

typedef struct fuzz_case {
    dwconv_desc desc;
    int bias, threads;
    uint64_t seed;
} fuzz_case;

typedef struct named { const char *name; int value; } named;
static const named enum_names[] = {
    {"explicit", DWCONV_PADDING_EXPLICIT}, {"same", DWCONV_PADDING_SAME},
    {"causal", DWCONV_PADDING_CAUSAL},     {"zeros", DWCONV_PAD_ZEROS},
    {"reflect", DWCONV_PAD_REFLECT},       {"replicate", DWCONV_PAD_REPLICATE},
    {"circular", DWCONV_PAD_CIRCULAR},     {"ncl", DWCONV_LAYOUT_NCL},
    {"nlc", DWCONV_LAYOUT_NLC},            {"f32", DWCONV_F32},
    {"f16", DWCONV_F16},                   {"bf16", DWCONV_BF16},
    {"none", DWCONV_ACT_NONE},             {"relu", DWCONV_ACT_RELU},
    {"silu", DWCONV_ACT_SILU},             {0, 0},
};

static int parse_value(const char *text, long long *value) {
    for (const named *n = enum_names; n->name; n++)
        if (strcmp(n->name, text) == 0) return *value = n->value, 1;
    char *end;
    errno = 0;
    *value = strtoll(text, &end, 0);
    return !errno && end != text && !*end;
}

/* 1: parsed into *c; 0: not an input this harness understands. */
static int parse_case(const uint8_t *data, size_t size, fuzz_case *c) {
    char text[1024];
    if (size >= sizeof text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    if (strlen(text) != size) return 0; /* an embedded NUL */
    dwconv_desc_init(&c->desc, 1, 1, 1, 1);
    c->bias = 0, c->threads = 1, c->seed = 1;
    dwconv_desc *d = &c->desc;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *save_word = NULL;
        for (char *w = strtok_r(line, " \t\r", &save_word); w; w = strtok_r(NULL, " \t\r", &save_word)) {
            char *eq = strchr(w, '=');
            long long v;
            if (!eq || !parse_value(eq + 1, &v)) return 0;
            *eq = 0;
            int64_t *fields[] = {&d->batch, &d->channels, &d->length, &d->kernel_size,
                                 &d->stride, &d->dilation, &d->pad_left, &d->pad_right};
            static const char *const field_names[] = {"b", "c", "l", "k", "stride", "dilation",
                                                      "pad_left", "pad_right"};
            int known = 0;
            for (int i = 0; i < 8; i++)
                if (strcmp(w, field_names[i]) == 0) *fields[i] = v, known = 1;
            if (known) continue;
            /* enums through int: out-of-range values are what validation must refuse */
            if (strcmp(w, "padding") == 0) d->padding = (dwconv_padding)(int)v;
            else if (strcmp(w, "mode") == 0) d->padding_mode = (dwconv_padding_mode)(int)v;
            else if (strcmp(w, "layout") == 0) d->layout = (dwconv_layout)(int)v;
            else if (strcmp(w, "dtype") == 0) d->dtype = (dwconv_dtype)(int)v;
            else if (strcmp(w, "wdtype") == 0) d->weight_dtype = (dwconv_dtype)(int)v;
            else if (strcmp(w, "act") == 0) d->activation = (dwconv_activation)(int)v;
            else if (strcmp(w, "bias") == 0) c->bias = v != 0;
            else if (strcmp(w, "threads") == 0) c->threads = v >= 1 && v <= 4 ? (int)v : 1;
            else if (strcmp(w, "seed") == 0) c->seed = (uint64_t)v;
            else return 0;
        }
    }
    return 1;
}

static void defect(const fuzz_case *c, const char *what, dwconv_status a, dwconv_status b) {
    const dwconv_desc *d = &c->desc;
    fprintf(stderr,
            "fuzz_forward: %s (status %d vs %d)\n  b=%lld c=%lld l=%lld k=%lld stride=%lld "
            "dilation=%lld pad_left=%lld pad_right=%lld padding=%d mode=%d layout=%d dtype=%d "
            "wdtype=%d act=%d bias=%d threads=%d seed=%llu\n  last error: %s\n",
            what, (int)a, (int)b, (long long)d->batch, (long long)d->channels,
            (long long)d->length, (long long)d->kernel_size, (long long)d->stride,
            (long long)d->dilation, (long long)d->pad_left, (long long)d->pad_right,
            (int)d->padding, (int)d->padding_mode, (int)d->layout, (int)d->dtype,
            (int)d->weight_dtype, (int)d->activation, c->bias, c->threads,
            (unsigned long long)c->seed, dwconv_last_error());
    abort();
}

/* Finite values in (-1, 1) from their bits, in any dtype (as dwconv bench makes them):
 * NaN payloads are not part of the bitwise contract. */
static void fill(uint64_t *state, dwconv_dtype dtype, void *data, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        if (dtype == DWCONV_F32) {
            uint32_t bits = (uint32_t)(z & 0x807fffffu) | ((uint32_t)(120 + (z >> 32) % 7) << 23);
            memcpy((char *)data + 4 * i, &bits, 4);
        } else {
            uint16_t h = dtype == DWCONV_BF16 ? (uint16_t)((z & 0x807f) | ((120 + (z >> 32) % 7) << 7))
                                              : (uint16_t)((z & 0x83ff) | ((8 + (z >> 32) % 7) << 10));
            memcpy((char *)data + 2 * i, &h, 2);
        }
    }
}

static dwconv_context *cpu_context(void) {
    static dwconv_context *ctx;
    if (!ctx && dwconv_context_create(&ctx, DWCONV_BACKEND_CPU, 0) != DWCONV_SUCCESS) {
        fprintf(stderr, "fuzz_forward: no cpu context: %s\n", dwconv_last_error());
        abort();
    }
    return ctx;
}

/* An invalid descriptor: every entry point refuses it with the same status, and
 * neither forward writes its (poisoned, small) y. */
static void check_refused(const fuzz_case *c, dwconv_status resolve_status) {
    static unsigned char x[64], w[64], bias[64], y[64], poison[64];
    memset(poison, 0xA5, sizeof poison);
    memset(y, 0xA5, sizeof y);
    dwconv_status s = dwconv_reference_forward(&c->desc, x, w, c->bias ? bias : NULL, y);
    if (s != resolve_status) defect(c, "the oracle and dwconv_desc_resolve disagree", s, resolve_status);
    s = dwconv_forward(cpu_context(), &c->desc, x, w, c->bias ? bias : NULL, y);
    if (s != resolve_status) defect(c, "dwconv_forward and dwconv_desc_resolve disagree", s, resolve_status);
    if (memcmp(y, poison, sizeof y) != 0) defect(c, "a refused call wrote y", s, s);
}

static void *exact(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_case c;
    snprintf(fuzz_forward_outcome, DWCONV_MSG_OUTCOME, "ignored (not a descriptor)");
    if (!parse_case(data, size, &c)) return 0;
    const dwconv_desc *d = &c.desc;
    int64_t pl, pr, lout, xn, yn, wn, bn;
    dwconv_status resolved = dwconv_desc_resolve(d, &pl, &pr, &lout);
    dwconv_status sized = dwconv_desc_sizes(d, &xn, &yn, &wn, &bn);
    if (resolved != sized) defect(&c, "dwconv_desc_resolve and dwconv_desc_sizes disagree", resolved, sized);
    if (resolved != DWCONV_SUCCESS) {
        snprintf(fuzz_forward_outcome, DWCONV_MSG_OUTCOME, "refused: %.500s", dwconv_last_error());
        check_refused(&c, resolved);
        return 0;
    }
    if (xn < 1 || yn < 1 || wn < 1 || bn < 1 || lout < 1) defect(&c, "a valid descriptor with an empty tensor", 0, 0);
    snprintf(fuzz_forward_outcome, DWCONV_MSG_OUTCOME, "validated only (too large to compute)");
    if (xn > MAX_ELEMENTS || yn > MAX_ELEMENTS || wn > MAX_ELEMENTS ||
        yn * d->kernel_size > MAX_TAPS) /* yn, K <= 2^16: no overflow */
        return 0;

    size_t es = dwconv_dtype_size(d->dtype), ws = dwconv_dtype_size(d->weight_dtype);
    size_t xb = (size_t)xn * es, yb = (size_t)yn * es, wb = (size_t)wn * ws, bb = (size_t)bn * ws;
    unsigned char *x = exact(xb), *w = exact(wb), *bias = c.bias ? exact(bb) : NULL;
    unsigned char *y = exact(yb), *expected = exact(yb), *saved = exact(xb + wb + bb);
    uint64_t state = c.seed;
    fill(&state, d->dtype, x, (size_t)xn);
    fill(&state, d->weight_dtype, w, (size_t)wn);
    if (bias) fill(&state, d->weight_dtype, bias, (size_t)bn);
    memcpy(saved, x, xb), memcpy(saved + xb, w, wb);
    if (bias) memcpy(saved + xb + wb, bias, bb);

    dwconv_status s = dwconv_reference_forward(d, x, w, bias, expected);
    if (s != DWCONV_SUCCESS) defect(&c, "the oracle refused a valid descriptor", s, 0);
    dwconv_context *ctx = cpu_context();
    s = dwconv_context_set_threads(ctx, c.threads);
    if (s != DWCONV_SUCCESS) defect(&c, "set_threads refused 1-4", s, 0);
    memset(y, 0xA5, yb);
    s = dwconv_forward(ctx, d, x, w, bias, y);
    if (s != DWCONV_SUCCESS) defect(&c, "dwconv_forward refused a valid descriptor", s, 0);
    if (memcmp(y, expected, yb) != 0) defect(&c, "the cpu backend differs from the oracle", 0, 0);
    if (memcmp(saved, x, xb) || memcmp(saved + xb, w, wb) || (bias && memcmp(saved + xb + wb, bias, bb)))
        defect(&c, "an input was written", 0, 0);
    free(x), free(w), free(bias), free(y), free(expected), free(saved);
    snprintf(fuzz_forward_outcome, DWCONV_MSG_OUTCOME, "computed (L_out %lld), equal to the oracle",
             (long long)lout);
    return 0;
}
