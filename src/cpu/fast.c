/* The fast OpenMP path: picks the SIMD flavour and the layout's driver. Every output
 * is computed with the contract's operations in its order, so the result is the
 * reference's, bit for bit, whatever the flavour and the thread count. */
#include <config.h>

#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu.h"
#include "fast.h"

int dwconv_cpu_thread_index(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

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

int dwconv_cpu_streams(size_t output_bytes) {
    static _Atomic long cache_bytes; /* asked once; 0 until then */
    long cache = cache_bytes;
    if (!cache) {
        cache = last_level_cache();
        if (!cache) cache = 32l << 20; /* unknown: a common size today */
        cache_bytes = cache;
    }
    return output_bytes > (size_t)cache;
}

static int thread_count(int threads) {
#ifdef _OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

dwconv_status dwconv_cpu_fast_with(const dwconv_cpu_kernels *kernels, const dwconv_plan *plan,
                                   const void *x, const void *weight, const void *bias, void *y,
                                   int threads) {
    int nt = thread_count(threads);
    /* With one channel, NLC data is laid out exactly as NCL data. */
    if (plan->desc.layout == DWCONV_LAYOUT_NCL || plan->desc.channels == 1)
        return dwconv_cpu_fast_ncl(kernels, plan, x, weight, bias, y, nt);
    return dwconv_cpu_fast_nlc(kernels, plan, x, weight, bias, y, nt);
}

dwconv_status dwconv_cpu_fast(const dwconv_plan *plan, const void *x, const void *weight,
                              const void *bias, void *y, int threads) {
    char why[DWCONV_MSG_SIZE];
    const dwconv_cpu_kernels *kernels = dwconv_cpu_kernels_active(why, sizeof why);
    if (!kernels) return DWCONV_ERROR_UNSUPPORTED;
    return dwconv_cpu_fast_with(kernels, plan, x, weight, bias, y, threads);
}
