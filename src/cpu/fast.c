/* The fast OpenMP path: picks the SIMD flavour, the driver for the operands' layout
 * and the thread count. Every output is computed with the contract's operations in
 * its order, so the result is the reference's, bit for bit, whatever the flavour
 * and the thread count. */
#include <config.h>

#include <stdio.h>

#include "cpu.h"
#include "fast.h"
#include "reference.h"

/* The last-level cache of one core's cluster in bytes, from Linux sysfs; 0 if unknown.
 * Not sysconf(_SC_LEVEL3_CACHE_SIZE): under KVM on Zen 5 glibc reports the host's
 * twelve L3s together (384 MiB for a 32 MiB cache). */
static long last_level_cache(void) {
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    long size = 0;
    char unit = 0;
    if (f && fscanf(f, "%ld%c", &size, &unit) >= 1)
        size *= unit == 'K' ? 1l << 10 : unit == 'M' ? 1l << 20 : 1;
    if (f) fclose(f);
    return size > 0 ? size : 0;
}

static _Atomic long cache_bytes; /* the last-level cache, asked once; 0 until then */

void dwconv_cpu_set_cache_bytes(long bytes) { cache_bytes = bytes; }

int dwconv_cpu_streams(size_t output_bytes) {
    long cache = cache_bytes;
    if (!cache) {
        cache = last_level_cache();
        if (!cache) cache = 32l << 20; /* unknown: a common size today */
        cache_bytes = cache;
    }
    return output_bytes > (size_t)cache;
}

/* Outputs one by one, as the reference computes them, for operands whose strides fit
 * neither driver (and rows whose staging would outgrow the data). */
static dwconv_status strided_forward(const dwconv_problem *p, int nt) {
    const int64_t rows = p->desc.batch * p->desc.channels;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t r = 0; r < rows; r++) dwconv_ref_forward_rows(p, r, r + 1);
    return DWCONV_SUCCESS;
}

/* Tap products of a forward: the work the thread count follows. */
static double forward_work(const dwconv_problem *p) {
    const dwconv_desc *d = &p->desc;
    return (double)d->batch * (double)d->channels *
           ((double)p->output_length * (double)d->kernel_size + (double)d->length);
}

dwconv_status dwconv_cpu_fast_with(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                                   int threads) {
    if (p->op != DWCONV_OP_FORWARD) return DWCONV_ERROR_UNSUPPORTED;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X], *y = &p->operand[DWCONV_ROLE_Y];
    const int nt = dwconv_cpu_thread_count(threads, forward_work(p));
    /* (contiguous NLC with one channel has adjacent positions: the ncl driver takes it) */
    if (dwconv_channel_first(x) && dwconv_channel_first(y) && dwconv_cpu_ncl_fits(p))
        return dwconv_cpu_fast_ncl(kernels, p, nt);
    if (dwconv_channel_last(x) && dwconv_channel_last(y))
        return dwconv_cpu_fast_nlc(kernels, p, nt);
    return strided_forward(p, nt);
}

dwconv_status dwconv_cpu_fast(const dwconv_problem *p, int threads) {
    char why[DWCONV_MSG_SIZE];
    const dwconv_cpu_kernels *kernels = dwconv_cpu_kernels_active(why, sizeof why);
    if (!kernels) return DWCONV_ERROR_UNSUPPORTED;
    return dwconv_cpu_fast_with(kernels, p, threads);
}

static _Atomic int last_paths; /* for the tests only: which paths the last call took */

int dwconv_cpu_last_paths(void) { return last_paths; }

void dwconv_cpu_set_last_paths(int paths) { last_paths = paths; }
