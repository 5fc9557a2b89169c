/* Helpers every test binary shares: a seeded generator (failures reproduce), tensor
 * fills that make f32 sums exact, poisoning, bitwise comparison, random descriptors. */
#ifndef DWCONV_TEST_UTIL_H
#define DWCONV_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv.h"

/* splitmix64: tiny, seedable, the same sequence on every machine. */
typedef struct test_rng { uint64_t state; } test_rng;
test_rng test_rng_seed(uint64_t seed);
uint64_t test_rng_next(test_rng *rng);
int64_t test_rng_range(test_rng *rng, int64_t lo, int64_t hi); /* uniform in [lo, hi] */
float test_rng_float(test_rng *rng);                          /* uniform in [-1, 1) */

/* The byte size of n elements of dtype. */
size_t test_bytes(dwconv_dtype dtype, int64_t n);

/* Small integers times 2^-scale_log2 in [-range, range], stored as dtype: every value
 * is exact in f16 and bf16 too, and short sums of products stay exact in f32. */
void test_fill_exact(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n, int range,
                     int scale_log2);
/* Uniform values in [-1, 1) rounded to dtype (never zero-heavy). */
void test_fill_random(test_rng *rng, dwconv_dtype dtype, void *data, int64_t n);
/* The f32 value of element i. */
float test_get(dwconv_dtype dtype, const void *data, int64_t i);

/* Fills with a byte pattern no computation produces by chance; test_untouched says
 * whether every byte still holds it. */
void test_poison(void *data, size_t bytes);
int test_untouched(const void *data, size_t bytes);

/* Environment knobs. DWCONV_TEST_QUICK=1, for slow tools (the sanitizers,
 * compute-sanitizer): fewer random cases, no 2^31-element cases, sparser value sweeps
 * (below). DWCONV_TEST_EXHAUSTIVE=1: the value sweeps walk every float (minutes); it
 * wins over QUICK. */
int test_quick(void);
int test_exhaustive(void);

/* A value sweep over float patterns from lo by step: u = lo; u <= hi; u =
 * test_sweep_next(u, step, quick_step), with quick_step = test_sweep_quick_step(step)
 * taken once. Without QUICK (quick_step 0) every step'th pattern. With it, every
 * quick_step'th (step times TEST_QUICK_SPARSER, odd: an odd step stays coprime with
 * every power of two) and, besides, every pattern within TEST_QUICK_EDGE of a multiple
 * of 2^16: where binades begin and end and where the sweeps' named values lie (86, 112,
 * infinity, the quiet NaN, 2^-25, ...). */
#define TEST_QUICK_SPARSER 17
#define TEST_QUICK_EDGE 16
uint64_t test_sweep_quick_step(uint64_t step);
static inline uint64_t test_sweep_next(uint64_t u, uint64_t step, uint64_t quick_step) {
    if (!quick_step) return u + step;
    /* the next edge pattern after u, or the next sparse one, whichever comes first */
    const uint64_t v = u + 1, m = (v + TEST_QUICK_EDGE) & 0xffffu;
    const uint64_t edge = m <= 2 * TEST_QUICK_EDGE ? v : v + (0x10000u - m);
    return edge < u + quick_step ? edge : u + quick_step;
}

/* Index of the first differing element (elements of elem_size bytes), or -1. */
int64_t test_first_difference(const void *a, const void *b, size_t elem_size, int64_t n);

/* A random valid descriptor: every option drawn, sizes up to max_length and
 * max_channels, odd lengths, L < K, large dilation and all padding modes included.
 * Retries until dwconv_desc_resolve accepts it. */
dwconv_desc test_random_desc(test_rng *rng, int64_t max_length, int64_t max_channels);
/* One line describing a descriptor, for failure messages. */
const char *test_desc_string(const dwconv_desc *desc);

#endif
