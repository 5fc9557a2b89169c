/* The cpu benchmark's table of the backward pass and the causal operations
 * (bench_train_serve.c). */
#ifndef DWCONV_BENCH_TRAIN_SERVE_H
#define DWCONV_BENCH_TRAIN_SERVE_H

#include "dwconv.h"

/* Times the cases whose name contains `only` (NULL: all) on `threads` threads, each
 * against a same-run copy, and prints their table; nonzero when one failed or
 * differed from its oracle. wait_quiet > 0: each case starts on a quiet machine and
 * is timed again (up to three times) when another task took a core (bench_data.h). */
int bench_train_serve(dwconv_context *ctx, int threads, int warmup, int repeat, int check,
                      const char *only, double wait_quiet);

#endif
