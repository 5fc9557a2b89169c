/*
 * The numerical contract's building blocks, written once for every backend: C11 on
 * the CPU, CUDA and HIP on GPUs (the same text compiles as __host__ __device__).
 * Only IEEE-754 basic operations (+ - * / correctly rounded), fmaf and integer bit
 * manipulation are used, so every conforming machine computes the same bits. Build
 * with -ffp-contract=off (C, hipcc) and --fmad=false (nvcc): a compiler that fused
 * a multiply and an add here would break the contract.
 *
 * A SIMD implementation elsewhere must perform exactly these operations in exactly
 * this order; tests compare it bit for bit with these functions.
 */
#ifndef DWCONV_NUMERICS_H
#define DWCONV_NUMERICS_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define DWCONV_HD static inline __host__ __device__
#else
#include <math.h>
#define DWCONV_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define DWCONV_FMAF(a, b, c) __fmaf_rn((a), (b), (c))
#define DWCONV_FDIV(a, b) __fdiv_rn((a), (b))
#elif defined(__GNUC__)
#define DWCONV_FMAF(a, b, c) __builtin_fmaf((a), (b), (c))
#define DWCONV_FDIV(a, b) ((a) / (b))
#else
#define DWCONV_FMAF(a, b, c) fmaf((a), (b), (c))
#define DWCONV_FDIV(a, b) ((a) / (b))
#endif

DWCONV_HD uint32_t dwconv_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

DWCONV_HD float dwconv_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- storage conversions ------------------------------------------------------ */

DWCONV_HD float dwconv_bf16_to_f32(uint16_t h) { return dwconv_f32_from_bits((uint32_t)h << 16); }

/* Round to nearest even; NaN stays NaN (quiet bit set); overflow gives infinity. */
DWCONV_HD uint16_t dwconv_f32_to_bf16(float f) {
    uint32_t u = dwconv_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Exact: every binary16 value is a float. */
DWCONV_HD float dwconv_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24, exact in f32 */
        float magnitude = (float)mantissa * 5.9604644775390625e-8f;
        return dwconv_f32_from_bits(sign | dwconv_f32_bits(magnitude));
    }
    if (exponent == 31) return dwconv_f32_from_bits(sign | 0x7f800000u | (mantissa << 13));
    return dwconv_f32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/* Round to nearest even, subnormals kept, overflow to infinity; a NaN keeps its top
 * payload bits and gets the quiet bit (what x86 F16C does). */
DWCONV_HD uint16_t dwconv_f32_to_f16(float f) {
    uint32_t u = dwconv_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520 */
    if (a < 0x38800000u) {
        /* Below 2^-14: adding 0.5f aligns the sum's ulp with the f16 subnormal ulp
         * (2^-24), so the float addition itself rounds to nearest even. */
        float t = dwconv_f32_from_bits(a) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(dwconv_f32_bits(t) - 0x3f000000u));
    }
    uint32_t odd = (a >> 13) & 1u;
    a += 0xc8000fffu + odd; /* rebias exponent 127 -> 15, then round half to even */
    return (uint16_t)(sign | (uint16_t)(a >> 13));
}

/* ---- activations --------------------------------------------------------------- */

/* e^x in f32 from fma and basic operations only: n = round(x*log2 e), r = x - n ln2
 * in two parts, a degree-7 polynomial for e^r (Cephes' coefficients), then 2^n
 * applied as two exact power-of-two factors so subnormal results round once.
 * About 1 ulp from the true value; identical bits on every backend. */
DWCONV_HD float dwconv_exp(float x) {
    if (x != x) return x;
    if (x > 88.72283935546875f) return dwconv_f32_from_bits(0x7f800000u);
    if (x < -103.972084045410156f) return 0.0f;
    float shifted = DWCONV_FMAF(x, 1.44269502162933349609f, 12582912.0f); /* 1.5*2^23 */
    float n = shifted - 12582912.0f;
    float r = DWCONV_FMAF(n, -0.693359375f, x);
    r = DWCONV_FMAF(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = DWCONV_FMAF(p, r, 1.3981999507e-3f);
    p = DWCONV_FMAF(p, r, 8.3334519073e-3f);
    p = DWCONV_FMAF(p, r, 4.1665795894e-2f);
    p = DWCONV_FMAF(p, r, 1.6666665459e-1f);
    p = DWCONV_FMAF(p, r, 5.0000001201e-1f);
    float r2 = r * r;
    p = DWCONV_FMAF(p, r2, r);
    p = p + 1.0f;
    int32_t ni = (int32_t)n; /* exact: n is an integer in [-150, 128] */
    int32_t n1 = ni / 2, n2 = ni - n1;
    float s1 = dwconv_f32_from_bits((uint32_t)(n1 + 127) << 23);
    float s2 = dwconv_f32_from_bits((uint32_t)(n2 + 127) << 23);
    return (p * s1) * s2;
}

DWCONV_HD float dwconv_relu(float x) { return x < 0.0f ? 0.0f : x; }

DWCONV_HD float dwconv_silu(float x) { return DWCONV_FDIV(x, 1.0f + dwconv_exp(-x)); }

/* act is a dwconv_activation value. */
DWCONV_HD float dwconv_activate(int act, float x) {
    return act == 1 ? dwconv_relu(x) : act == 2 ? dwconv_silu(x) : x;
}

#endif /* DWCONV_NUMERICS_H */
