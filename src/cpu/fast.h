/* What the fast path's drivers share: fast_ncl.c and fast_nlc.c (each layout's work
 * split) are called by fast.c (the choice of driver and thread count) and use the
 * helpers here and in threads.c. Plain C: the SIMD lives in the kernel tables
 * (kernels.h). */
#ifndef DWCONV_CPU_FAST_H
#define DWCONV_CPU_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* This thread's index inside the driver's parallel regions (0 without OpenMP). */
int dwconv_cpu_thread_index(void);

/* The threads a call with `work` tap products (or bytes, for copies) runs on, given
 * the context's request (0: OpenMP's default): fewer for small work, one in a child
 * forked after dwconv used threads (threads.c says why). */
int dwconv_cpu_thread_count(int requested, double work);

static inline int64_t dwconv_round_up(int64_t value, int64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

/* Scratch sizes saturate at DWCONV_TOO_BIG, which no allocation satisfies: a size
 * that overflows becomes DWCONV_ERROR_OUT_OF_MEMORY (y untouched), never a short block. */
#define DWCONV_TOO_BIG ((size_t)PTRDIFF_MAX / 64 * 64)

/* count * times elements of size bytes, rounded up to a multiple of 64 bytes */
static inline size_t dwconv_scratch_bytes(int64_t count, int64_t times, size_t size) {
    size_t elements, bytes;
    if (count < 0 || times < 0 ||
        __builtin_mul_overflow((size_t)count, (size_t)times, &elements) ||
        __builtin_mul_overflow(elements, size, &bytes) || bytes > DWCONV_TOO_BIG)
        return DWCONV_TOO_BIG;
    return (bytes + 63) / 64 * 64;
}

static inline size_t dwconv_size_add(size_t a, size_t b) {
    return a > DWCONV_TOO_BIG - b ? DWCONV_TOO_BIG : a + b;
}

static inline size_t dwconv_size_mul(size_t a, size_t b) {
    size_t product;
    return __builtin_mul_overflow(a, b, &product) || product > DWCONV_TOO_BIG ? DWCONV_TOO_BIG
                                                                             : product;
}

/* Whether an output of this many bytes should be stored around the caches
 * (non-temporal stores): when it is larger than the last-level cache, keeping it
 * there only costs the extra read of each line before it is written. */
int dwconv_cpu_streams(size_t output_bytes);
/* For the tests: take the last-level cache to hold `bytes` (0: ask the machine again),
 * so that outputs of a few MiB reach the streamed paths on any machine. */
void dwconv_cpu_set_cache_bytes(long bytes);

/* Each layout's forward pass on nt threads: ncl for x and y with adjacent positions,
 * nlc for adjacent channels (any other strides). Both allocate all their scratch
 * before writing any output and return DWCONV_ERROR_OUT_OF_MEMORY, y untouched,
 * without it. dwconv_cpu_ncl_fits says whether ncl's staging stays proportional to
 * the data (a huge dilation*(K-1) against a short row would not: such rows read
 * mostly padding, and the per-output path costs only the work itself). */
int dwconv_cpu_ncl_fits(const dwconv_problem *p);
dwconv_status dwconv_cpu_fast_ncl(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                                  int nt);
dwconv_status dwconv_cpu_fast_nlc(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                                  int nt);

#endif
