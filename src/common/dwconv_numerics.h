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

DWCONV_HD float dwconv_relu(float x) { return x < 0.0f ? 0.0f : x; }

/* silu, contract 0.2 (docs/numerics.md has the derivation and the measured errors).
 *
 *   silu(x) = x / D,  D = 1 + T,  T = e^-x
 *
 * For |x| <= DWCONV_SILU_COLD (86) -- the hot path, no special case in it:
 *   T   = dwconv_exp_bits(-x), a normal float in [e^-86, e^86]
 *   hi  = RN(1 + T), lo = RN(RN(T - hi) + 1)   hi + lo is D: exactly for x <= 0 (T >= 1:
 *         T - hi is exact by Sterbenz and the sum is the representable rounding error),
 *         within 2^-25 for x > 0
 *   yr  = RN(1 / hi), the correctly rounded reciprocal (each backend computes it its own
 *         way: the cpu divides, NVIDIA GPUs refine their approximate reciprocal, see
 *         gpu_rcp_rn; all give these bits)
 *   q0  = RN(x yr)
 *   e   = fmaf(q0, hi, -x)     exact (Markstein: q0 is within an ulp of x / hi)
 *   e   = fmaf(q0, lo, e)      q0 D - x, the remainder against the whole of D
 *   y   = fmaf(e, -yr, q0)     q0 - e / D to first order: one rounding of a value within
 *                              a tiny fraction of an ulp of x / D
 * The numerator is x itself (no rounding), and D carries its own rounding error in
 * lo, so the only errors are T's (damped by T / (1 + T)) and the last rounding. The
 * remainder is taken as q0 hi - x, not x - q0 hi, so that silu(-0) is -0: its zero
 * correction is then -0, and -0 + -0 stays -0.
 *
 * |x| > 86 and NaN -- the cold path (dwconv_silu_cold), rare in practice:
 *   x > 86: x (D rounds to 1); NaN: x + x (NaN, quiet); x < -112: x * 0, that is -0
 *   (the true |silu| is below half the smallest subnormal from x = -108.7 on) and NaN
 *   for -inf (as in 0.1 and PyTorch); -112 <= x < -86: RN(RN(x t') * 2^-64) with
 *   t' = e^x 2^64 (dwconv_exp_bits(x) with 64 added to its exponent field): D rounds
 *   to 1/t there, and the scaled t' keeps x t' a normal float, so a result in the
 *   subnormals is rounded once, from an accurate product. */

/* The constants, shared by the scalar, SIMD and GPU code (never typed twice). */
#define DWCONV_EXP_LOG2E 1.44269502162933349609f /* log2(e) rounded to f32 */
#define DWCONV_EXP_SHIFTER 12582912.0f           /* 1.5 * 2^23 */
#define DWCONV_EXP_LN2_HI 0.693359375f           /* ln 2 = HI - LO; HI has 9 bits */
#define DWCONV_EXP_LN2_LO 2.12194440e-4f
/* p(r) = 1 + r + C2 r^2 + ... + C6 r^6: minimax (relative error) for e^r on
 * [-ln2/2, ln2/2] with the first two coefficients fixed at 1, each coefficient
 * rounded to f32 in turn and the rest refitted; |p(r)/e^r - 1| < 2^-27.1 in exact
 * arithmetic, far below the f32 rounding of the evaluation. */
#define DWCONV_EXP_C2 4.999999702e-01f /* 0x3effffff */
#define DWCONV_EXP_C3 1.666652262e-01f /* 0x3e2aaa4a */
#define DWCONV_EXP_C4 4.166710377e-02f /* 0x3d2aab20 */
#define DWCONV_EXP_C5 8.369221352e-03f /* 0x3c091f0f */
#define DWCONV_EXP_C6 1.390303485e-03f /* 0x3ab63ad8 */
/* |x| above this (or NaN): the cold path */
#define DWCONV_SILU_COLD 86.0f
/* x below minus this: x * 0 */
#define DWCONV_SILU_ZERO 112.0f
/* cold path (and dwconv_exp beyond 86): e^x is kept as e^x * 2^+-64 (64 added to or
 * taken from its exponent field), then scaled back */
#define DWCONV_SILU_COLD_EXP_BITS (64u << 23)
#define DWCONV_SILU_COLD_SCALE 5.42101086242752217004e-20f /* 2^-64 */

/* The bits of e^v, a normal float, for |v| <= 86 (and, for -112 <= v < -86, the bits of
 * e^v * 2^64 less 64 in the exponent field, modulo 2^32: see dwconv_silu_cold):
 *   s = fmaf(v, log2 e, 1.5*2^23)       rounds v log2(e) to the nearest integer n,
 *                                       which sits in the low bits of s (|n| < 2^22)
 *   n = s - 1.5*2^23                    exact
 *   r = fmaf(n, -LN2_HI, v)             exact (n LN2_HI has 17 bits; Sterbenz)
 *   r = fmaf(n, LN2_LO, r)              r = v - n ln2, |r| <= ln2/2 (+ rounding)
 *   p = 1 + r(1 + r(C2 + r(C3 + r(C4 + r(C5 + r C6)))))   Horner, one fmaf per step
 *   bits = bits(p) + (bits(s) << 23)    p * 2^n: the low bits of s, shifted into the
 *                                       exponent field, add n to p's exponent; the
 *                                       shifter's own bits shift out (mod 2^32)
 * No compare, no special case: for |v| <= 86, n is in [-124, 124] and p in [0.7, 1.42],
 * so p * 2^n is a normal float and the integer addition is an exact scaling. */
DWCONV_HD uint32_t dwconv_exp_bits(float v) {
    const float s = DWCONV_FMAF(v, DWCONV_EXP_LOG2E, DWCONV_EXP_SHIFTER);
    const float n = s - DWCONV_EXP_SHIFTER;
    float r = DWCONV_FMAF(n, -DWCONV_EXP_LN2_HI, v);
    r = DWCONV_FMAF(n, DWCONV_EXP_LN2_LO, r);
    float p = DWCONV_EXP_C6;
    p = DWCONV_FMAF(p, r, DWCONV_EXP_C5);
    p = DWCONV_FMAF(p, r, DWCONV_EXP_C4);
    p = DWCONV_FMAF(p, r, DWCONV_EXP_C3);
    p = DWCONV_FMAF(p, r, DWCONV_EXP_C2);
    p = DWCONV_FMAF(p, r, 1.0f);
    p = DWCONV_FMAF(p, r, 1.0f);
    return dwconv_f32_bits(p) + (dwconv_f32_bits(s) << 23);
}

/* e^v for every float v (silu uses dwconv_exp_bits directly; this is the whole-range
 * exponential for other users, such as the backward's sigmoid): dwconv_exp_bits for
 * |v| <= 86; beyond, the same p * 2^n applied as 2^(n -+ 64) (exact, the exponent
 * field moved by 64) times 2^(+-64), so that a result past FLT_MAX rounds to +inf and
 * a subnormal one is rounded once; +inf above 89 (e^89 > FLT_MAX), +0 below -104
 * (e^-104 is below half the smallest subnormal), NaN for NaN. */
DWCONV_HD float dwconv_exp(float v) {
    const float a = dwconv_f32_from_bits(dwconv_f32_bits(v) & 0x7fffffffu);
    if (a <= DWCONV_SILU_COLD) return dwconv_f32_from_bits(dwconv_exp_bits(v));
    if (v != v) return v + v;
    if (v > 89.0f) return dwconv_f32_from_bits(0x7f800000u);
    if (v < -104.0f) return 0.0f;
    const uint32_t bits = dwconv_exp_bits(v);
    if (v > 0.0f)
        return dwconv_f32_from_bits(bits - DWCONV_SILU_COLD_EXP_BITS) * 18446744073709551616.0f;
    return dwconv_f32_from_bits(bits + DWCONV_SILU_COLD_EXP_BITS) * DWCONV_SILU_COLD_SCALE;
}

/* silu for |x| > DWCONV_SILU_COLD and NaN (see above). For -112 <= x < -86, n is in
 * [-162, -124]: the raised p * 2^(n + 64) is a normal float (the integer sum wraps
 * back), x times it rounds once, and 2^-64 scales it back, rounding once more only
 * where the result is subnormal. */
DWCONV_HD float dwconv_silu_cold(float x) {
    if (x != x) return x + x;
    if (x > 0.0f) return x;
    if (x < -DWCONV_SILU_ZERO) return x * 0.0f;
    const float raised = dwconv_f32_from_bits(dwconv_exp_bits(x) + DWCONV_SILU_COLD_EXP_BITS);
    return (x * raised) * DWCONV_SILU_COLD_SCALE;
}

/* The hot path's quotient, given t = e^-x and yr = RN(1 / RN(1 + t)). */
DWCONV_HD float dwconv_silu_hot(float x, float t, float yr) {
    const float hi = 1.0f + t;
    const float lo = (t - hi) + 1.0f;
    const float q0 = x * yr;
    float e = DWCONV_FMAF(q0, hi, -x);
    e = DWCONV_FMAF(q0, lo, e);
    return DWCONV_FMAF(e, -yr, q0);
}

/* silu(x), bit for bit the contract (the cpu reference and the tests' definition). */
DWCONV_HD float dwconv_silu(float x) {
    const float a = dwconv_f32_from_bits(dwconv_f32_bits(x) & 0x7fffffffu);
    if (!(a <= DWCONV_SILU_COLD)) return dwconv_silu_cold(x);
    const float t = dwconv_f32_from_bits(dwconv_exp_bits(-x));
    return dwconv_silu_hot(x, t, DWCONV_FDIV(1.0f, 1.0f + t));
}

/* act is a dwconv_activation value. */
DWCONV_HD float dwconv_activate(int act, float x) {
    return act == 1 ? dwconv_relu(x) : act == 2 ? dwconv_silu(x) : x;
}

#endif /* DWCONV_NUMERICS_H */
