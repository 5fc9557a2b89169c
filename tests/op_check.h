/* What the operation-level suites (check_backward, check_causal) share: the backend
 * under test (DWCONV_TEST_BACKEND), memory on it with poisoned guards on each side,
 * and element values decoded and rounded by code of their own (never the library's),
 * so that the expected values stay independent of the kernels. */
#ifndef DWCONV_OP_CHECK_H
#define DWCONV_OP_CHECK_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "dwconv.h"
#include "test_util.h"

/* ck_assert records every passing check; loops use this, free until it fails. */
#define EXPECT(cond, ...)                                                              \
    do {                                                                               \
        if (!(cond)) ck_abort_msg(__VA_ARGS__);                                        \
    } while (0)

/* The backend named by DWCONV_TEST_BACKEND (default cpu). */
dwconv_backend op_backend(void);
/* For main: 1 when the backend can run here, asked in a child process so that this
 * process never starts a GPU runtime before Check forks; `why` says what is missing. */
int op_backend_usable(char *why, size_t why_size);
/* A context on the backend under test (asserts). */
dwconv_context *op_context(void);
/* Runs the suite: main's exit status. */
int op_run(Suite *s);

/* Memory on a context's backend: every block has OP_GUARD poisoned bytes on each side,
 * checked when it is read back or released. */
#define OP_GUARD 64
typedef struct op_arena {
    dwconv_context *ctx;
    int count;
    struct { char *base; size_t bytes; } block[48];
} op_arena;
/* A block of `bytes` holding a copy of host (or poisoned where host is NULL). */
void *op_put(op_arena *a, const void *host, size_t bytes);
/* Copies a block back (host gets `bytes`), asserting its guards untouched. */
void op_get(op_arena *a, void *host, const void *dev, size_t bytes);
/* Asserts the last n blocks' guards untouched and frees them. */
void op_release_last(op_arena *a, int n);
/* Asserts every guard untouched, frees everything. */
void op_release(op_arena *a);

/* Element values of a dtype, by this file's own decoding and rounding. */
double op_decode(dwconv_dtype dtype, const void *data, int64_t i);
/* f32 value v rounded to dtype, round-to-nearest-even, stored at element i. */
void op_store_f32(dwconv_dtype dtype, void *data, int64_t i, float v);
/* A random value of dtype with magnitude in [2^lo, 2^hi) (or zero, now and then),
 * stored at element i: every mantissa bit drawn. */
void op_random_value(test_rng *rng, dwconv_dtype dtype, void *data, int64_t i, int lo, int hi);
/* The unit roundoff of a dtype (2^-24, 2^-11, 2^-8) and half its smallest subnormal. */
double op_unit_roundoff(dwconv_dtype dtype);
double op_tiny(dwconv_dtype dtype);
/* Whether the status and last error of a refused call look right: the status, and a
 * message that names the function. */
void op_expect_refusal(dwconv_status got, dwconv_status want, const char *who,
                       const char *what);

#endif
