/* The bench's buffers for one problem: inputs filled with fresh random values (in
 * parallel, as the kernel will touch them), the output, the copy that is timed
 * against it, and the scalar oracle's result to check against. */
#ifndef DWCONV_BENCH_DATA_H
#define DWCONV_BENCH_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv.h"
#include "pair_timing.h"

typedef struct bench_data {
    dwconv_context *ctx;
    void *x, *w, *bias, *y; /* bias NULL when the problem has none */
    size_t x_bytes, y_bytes, w_bytes, bias_bytes;
    /* The copy moves as many bytes as the convolution reads and writes: half read from
     * x (or a buffer of its own when x is smaller), half written to y (likewise). */
    void *copy_src, *copy_dst;
    size_t copy_bytes;
    void *expected; /* the oracle's y, or NULL without a check */
} bench_data;

/* n values of magnitude in [2^-7, 1), random signs, from a seed (threads do not
 * change them). */
void bench_fill(void *data, dwconv_dtype dtype, int64_t n, uint64_t seed);

/* 0 on success; otherwise the reason is on stderr. */
int bench_data_make(bench_data *b, dwconv_context *ctx, const dwconv_desc *desc, int bias,
                    int check);
void bench_data_free(bench_data *b);

/* Poisons y, runs once, compares with the oracle: 1 when every bit agrees. */
int bench_data_check(bench_data *b, const dwconv_desc *desc, timed_fn run, void *arg);

/* max |y - oracle| / max |oracle| over the elements (NaN ignored). */
double bench_data_error(const bench_data *b, const dwconv_desc *desc);

/* "AMD EPYC ..." from /proc/cpuinfo, and /proc/loadavg's first three fields. */
void bench_cpu_model(char *model, size_t size);
const char *bench_load_average(void);

/* The share of the last 10 s in which some task waited for a core (Linux PSI,
 * /proc/pressure/cpu "some avg10", in %), or -1 where the kernel does not say. With
 * the bench's own threads alone on the cores it stays near 0. */
double bench_cpu_pressure(void);

/* Runs run(arg) (nonzero: it failed) and returns what it returned. Others' builds
 * share this machine's cores: with a load bound (> 0), each attempt starts once the
 * 1-minute load average is below it and no task waits for a core (30 minutes at most),
 * and the run is repeated, three times at most, when some task took a core while it
 * ran; 0: run once, at once. */
int bench_run_quietly(double load, const char *name, int (*run)(void *), void *arg);

#endif
