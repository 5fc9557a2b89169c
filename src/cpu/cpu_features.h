/* What this x86 processor and its OS can run, read with cpuid and xgetbv.
 * __builtin_cpu_supports would be shorter, but clang rejects some of the names we need
 * ("f16c"), and it is GCC's list, not the processor's. A feature counts only when the
 * OS also saves its registers (XCR0): AVX, FMA and F16C need the ymm state, AVX-512
 * also the opmask and zmm states. Header-only, so that the tool can use it too. */
#ifndef DWCONV_CPU_FEATURES_H
#define DWCONV_CPU_FEATURES_H

typedef struct dwconv_cpu_features {
    int sse42, avx, fma, f16c, avx2;
    int avx512f, avx512dq, avx512bw, avx512vl, avx512bf16;
} dwconv_cpu_features;

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>

static inline unsigned long long dwconv_cpu_xgetbv0(void) {
    unsigned eax, edx;
    /* xgetbv by its bytes: the mnemonic needs -mxsave, which this file must not need */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

static inline dwconv_cpu_features dwconv_cpu_features_detect(void) {
    dwconv_cpu_features f = {0};
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    f.sse42 = (c >> 20) & 1;
    int osxsave = (c >> 27) & 1;
    unsigned long long xcr0 = osxsave ? dwconv_cpu_xgetbv0() : 0;
    int ymm_saved = (xcr0 & 0x6) == 0x6;      /* SSE and AVX state */
    int zmm_saved = (xcr0 & 0xe6) == 0xe6;    /* plus opmask, zmm0-15 high, zmm16-31 */
    if (!ymm_saved) return f;
    f.avx = (c >> 28) & 1;
    f.fma = (c >> 12) & 1;
    f.f16c = (c >> 29) & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    unsigned max_subleaf = a;
    f.avx2 = (b >> 5) & 1;
    if (!zmm_saved) return f;
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
    if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512bf16 = (a >> 5) & 1;
    return f;
}
#else
static inline dwconv_cpu_features dwconv_cpu_features_detect(void) {
    dwconv_cpu_features f = {0};
    return f;
}
#endif

#endif
