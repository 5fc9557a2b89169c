#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwconv_numerics.h"

test_rng test_rng_seed(uint64_t seed) { return (test_rng){seed ^ 0x9e3779b97f4a7c15ull}; }

uint64_t test_rng_next(test_rng *rng) {
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int64_t test_rng_range(test_rng *rng, int64_t lo, int64_t hi) {
    return lo + (int64_t)(test_rng_next(rng) % (uint64_t)(hi - lo + 1));
}

float test_rng_float(test_rng *rng) {
    return (float)(test_rng_next(rng) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

size_t test_bytes(dwconv_dtype dtype, int64_t n) { return (size_t)n * dwconv_dtype_size(dtype); }

static void put(dwconv_dtype dtype, void *data, int64_t i, float v) {
    switch (dtype) {
    case DWCONV_F16: ((uint16_t *)data)[i] = dwconv_f32_to_f16(v); break;
    case DWCONV_BF16: ((uint16_t *)data)[i] = dwconv_f32_to_bf16(v); break;
    default: ((float *)data)[i] = v;
    }
}

float test_get(dwconv_dtype dtype, const void *data, int64_t i) {
    switch (dtype) {
    case DWCONV_F16: return dwconv_f16_to_f32(((const uint16_t *)data)[i]);
    case DWCONV_BF16: return dwconv_bf16_to_f32(((const uint16_t *)data)[i]);
    default: return ((const float *)data)[i];
    }
}

void test_fill_exact(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n, int range,
                     int scale_log2) {
    float scale = 1.0f;
    for (int i = 0; i < scale_log2; i++) scale *= 0.5f;
    for (int64_t i = 0; i < n; i++) put(dtype, data, i, (float)test_rng_range(rng, -range, range) * scale);
}

void test_fill_random(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n) {
    for (int64_t i = 0; i < n; i++) put(dtype, data, i, test_rng_float(rng));
}

enum { POISON = 0xA5 };

void test_poison(void *data, size_t bytes) { memset(data, POISON, bytes); }

int test_untouched(const void *data, size_t bytes) {
    const unsigned char *p = data;
    for (size_t i = 0; i < bytes; i++)
        if (p[i] != POISON) return 0;
    return 1;
}

int64_t test_first_difference(const void *a, const void *b, size_t elem_size, int64_t n) {
    const unsigned char *pa = a, *pb = b;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(pa + (size_t)i * elem_size, pb + (size_t)i * elem_size, elem_size) != 0) return i;
    return -1;
}

dwconv_desc test_random_desc(test_rng *rng, int64_t max_length, int64_t max_channels) {
    for (;;) {
        dwconv_desc d;
        int64_t L = test_rng_range(rng, 0, 3) == 0 ? test_rng_range(rng, 1, 4)
                                                   : test_rng_range(rng, 1, max_length);
        int64_t K = test_rng_range(rng, 0, 4) == 0 ? test_rng_range(rng, 1, 40)
                                                   : test_rng_range(rng, 1, 7);
        dwconv_desc_init(&d, test_rng_range(rng, 1, 3), test_rng_range(rng, 1, max_channels), L, K);
        d.stride = test_rng_range(rng, 0, 2) == 0 ? test_rng_range(rng, 2, 5) : 1;
        d.dilation = test_rng_range(rng, 0, 2) == 0 ? test_rng_range(rng, 2, 9) : 1;
        d.padding_mode = (dwconv_padding_mode)test_rng_range(rng, 0, 3);
        d.padding = (dwconv_padding)test_rng_range(rng, 0, 2);
        if (d.padding == DWCONV_PADDING_EXPLICIT) {
            int64_t most = d.dilation * (K - 1) + 2;
            d.pad_left = test_rng_range(rng, 0, most);
            d.pad_right = test_rng_range(rng, 0, most);
        } else if (d.padding == DWCONV_PADDING_SAME) {
            d.stride = 1;
        }
        d.layout = (dwconv_layout)test_rng_range(rng, 0, 1);
        d.dtype = (dwconv_dtype)test_rng_range(rng, 0, 2);
        d.weight_dtype = test_rng_range(rng, 0, 1) ? DWCONV_F32 : d.dtype;
        d.activation = (dwconv_activation)test_rng_range(rng, 0, 2);
        if (dwconv_desc_resolve(&d, NULL, NULL, NULL) == DWCONV_SUCCESS) return d;
    }
}

/* names[v], or "?" for a value outside the enum (the validation tests describe those) */
#define NAME_OF(names, v) \
    ((unsigned)(v) < sizeof(names) / sizeof(names)[0] ? (names)[(unsigned)(v)] : "?")

const char *test_desc_string(const dwconv_desc *d) {
    static _Thread_local char text[320];
    static const char *const modes[] = {"zeros", "reflect", "replicate", "circular"};
    static const char *const presets[] = {"explicit", "same", "causal"};
    static const char *const types[] = {"f32", "f16", "bf16"};
    static const char *const acts[] = {"none", "relu", "silu"};
    static const char *const layouts[] = {"NCL", "NLC"};
    snprintf(text, sizeof text,
             "B%lld C%lld L%lld K%lld stride %lld dilation %lld pad %lld/%lld %s %s %s x:%s "
             "w:%s act:%s",
             (long long)d->batch, (long long)d->channels, (long long)d->length,
             (long long)d->kernel_size, (long long)d->stride, (long long)d->dilation,
             (long long)d->pad_left, (long long)d->pad_right, NAME_OF(presets, d->padding),
             NAME_OF(modes, d->padding_mode), NAME_OF(layouts, d->layout),
             NAME_OF(types, d->dtype), NAME_OF(types, d->weight_dtype),
             NAME_OF(acts, d->activation));
    return text;
}

static int env_set(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

int test_quick(void) { return env_set("DWCONV_TEST_QUICK"); }

int test_exhaustive(void) { return env_set("DWCONV_TEST_EXHAUSTIVE"); }

uint64_t test_sweep_quick_step(uint64_t step) {
    return test_quick() && !test_exhaustive() ? step * TEST_QUICK_SPARSER : 0;
}
