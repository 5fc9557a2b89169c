/* Which SIMD flavour the fast path uses: chosen once per process (libsodium's model),
 * the best one that is both built and supported by this processor, unless
 * DWCONV_CPU_SIMD names one. A request that cannot be met is an error reported by
 * every forward call, never a silent fallback: a test that asks for avx2 must not
 * quietly run generic. */
#include <config.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "cpu_features.h"
#include "kernels.h"

typedef struct flavour {
    const char *name;
    const dwconv_cpu_kernels *kernels; /* NULL when this build lacks it */
    int (*supported)(void);            /* does this processor run it? */
    const char *needs;                 /* for the message when it does not */
} flavour;

/* cpu_features.h also checks that the OS saves the vector registers. */
static int has_avx512(void) {
    dwconv_cpu_features f = dwconv_cpu_features_detect();
    return f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.fma && f.f16c;
}
static int has_avx2(void) {
    dwconv_cpu_features f = dwconv_cpu_features_detect();
    return f.avx2 && f.fma && f.f16c;
}
static int has_nothing_special(void) { return 1; }

/* best first: "auto" takes the first that is built and supported */
static const flavour flavours[] = {
#ifdef DWCONV_HAVE_AVX512
    {"avx512", &dwconv_cpu_kernels_avx512, has_avx512, "AVX-512 F/BW/VL/DQ, FMA and F16C"},
#else
    {"avx512", NULL, has_avx512, "AVX-512 F/BW/VL/DQ, FMA and F16C"},
#endif
#ifdef DWCONV_HAVE_AVX2
    {"avx2", &dwconv_cpu_kernels_avx2, has_avx2, "AVX2, FMA and F16C"},
#else
    {"avx2", NULL, has_avx2, "AVX2, FMA and F16C"},
#endif
    {"generic", &dwconv_cpu_kernels_generic, has_nothing_special, "nothing"},
};
enum { FLAVOURS = sizeof flavours / sizeof flavours[0] };

dwconv_status dwconv_cpu_kernels_find(const char *name, const dwconv_cpu_kernels **kernels,
                                      char *msg, size_t msg_size) {
    int automatic = !name || !*name || strcmp(name, "auto") == 0;
    for (int i = 0; i < FLAVOURS; i++) {
        const flavour *f = &flavours[i];
        if (automatic) {
            if (!f->kernels || !f->supported()) continue;
        } else if (strcmp(name, f->name) != 0) {
            continue;
        } else if (!f->kernels) {
            snprintf(msg, msg_size, "the %s SIMD flavour is not in this build (configure found "
                     "no compiler support for it)", f->name);
            return DWCONV_ERROR_UNSUPPORTED;
        } else if (!f->supported()) {
            snprintf(msg, msg_size, "the %s SIMD flavour needs %s, which this processor lacks",
                     f->name, f->needs);
            return DWCONV_ERROR_UNSUPPORTED;
        }
        *kernels = f->kernels;
        return DWCONV_SUCCESS;
    }
    snprintf(msg, msg_size, "no SIMD flavour is called '%s' (auto, avx512, avx2, generic)", name);
    return DWCONV_ERROR_UNSUPPORTED;
}

static struct {
    pthread_once_t once;
    const dwconv_cpu_kernels *kernels; /* NULL: the request cannot be met */
    char error[DWCONV_MSG_SIZE];
    char name[96];
} active = {PTHREAD_ONCE_INIT, NULL, "", ""};

static void choose(void) {
    const char *request = getenv("DWCONV_CPU_SIMD");
    char why[DWCONV_MSG_SIZE - 64];
    if (dwconv_cpu_kernels_find(request, &active.kernels, why, sizeof why) == DWCONV_SUCCESS) {
        snprintf(active.name, sizeof active.name, "%s", active.kernels->name);
        return;
    }
    active.kernels = NULL;
    snprintf(active.error, sizeof active.error, "DWCONV_CPU_SIMD=%s: %s", request, why);
    snprintf(active.name, sizeof active.name, "none (DWCONV_CPU_SIMD=%.40s cannot be met)", request);
}

const dwconv_cpu_kernels *dwconv_cpu_kernels_active(char *msg, size_t msg_size) {
    pthread_once(&active.once, choose);
    if (!active.kernels) snprintf(msg, msg_size, "%s", active.error);
    return active.kernels;
}

const char *dwconv_cpu_simd_name(void) {
    pthread_once(&active.once, choose);
    return active.name;
}

const char *dwconv_cpu_simd_error(void) {
    pthread_once(&active.once, choose);
    return active.error;
}
