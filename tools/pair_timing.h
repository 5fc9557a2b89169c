/* Paired timing: each timed repetition of the work is followed by a copy of the same
 * bytes on the same backend, and the figure that matters is the median of the
 * per-pair ratios copy_time / work_time, i.e. the fraction of copy bandwidth the
 * work reaches. Shared machines drift; a ratio within one pair does not (PERF.md). */
#ifndef DWCONV_PAIR_TIMING_H
#define DWCONV_PAIR_TIMING_H

#include "dwconv.h"

/* One unit of work to time; returns a status so failures stop the run. */
typedef dwconv_status (*timed_fn)(void *arg);

typedef struct pair_timing {
    double work_ms;  /* median time of the work */
    double copy_ms;  /* median time of the copy */
    double ratio;    /* median of copy_ms / work_ms over the pairs */
    int pairs;
} pair_timing;

/* Runs `warmup` untimed pairs, then `repeat` timed pairs, timing each half with the
 * context's timer (device events on GPUs). progress_label, when not NULL, is shown
 * with a repetition count on stderr if stderr is a terminal. */
dwconv_status pair_time(dwconv_context *context, int warmup, int repeat, timed_fn work,
                        void *work_arg, timed_fn copy, void *copy_arg, const char *progress_label,
                        pair_timing *result);

/* The median of n values (the array is reordered). */
double median(double *values, int n);

#endif
