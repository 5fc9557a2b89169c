/* The vector vocabulary of kernels_impl.h in plain C: one float per "vector", so the
 * same kernels compile for any processor. Integer lanes wrap as the SIMD ones do
 * (unsigned arithmetic), and conversions of out-of-range values are defined. */
#ifndef DWCONV_VEC_GENERIC_H
#define DWCONV_VEC_GENERIC_H

#include <stdint.h>

#include "dwconv_numerics.h"

#define VEC_LANES 1
#define VEC_BLOCK 8
#define VEC_WINDOW_OVERREAD 0
#define VEC_TRANSPOSE8 0 /* no vf_load_transposed8 */

typedef float vf;
typedef int32_t vi;
typedef int vm;
typedef uint16_t vh;

static inline vf vf_loadu(const float *p) { return *p; }
static inline void vf_storeu(float *p, vf v) { *p = v; }
static inline void vf_stream(float *p, vf v) { *p = v; }
static inline void vec_fence(void) {}
static inline vf vf_set1(float f) { return f; }
static inline vf vf_fma(vf a, vf b, vf c) { return DWCONV_FMAF(a, b, c); }
/* the other signs, each one rounding: -(a b) + c, a b - c, -(a b) - c */
static inline vf vf_fnma(vf a, vf b, vf c) { return DWCONV_FMAF(-a, b, c); }
static inline vf vf_fms(vf a, vf b, vf c) { return DWCONV_FMAF(a, b, -c); }
static inline vf vf_fnms(vf a, vf b, vf c) { return DWCONV_FMAF(-a, b, -c); }
static inline vf vf_add(vf a, vf b) { return a + b; }
static inline vf vf_sub(vf a, vf b) { return a - b; }
static inline vf vf_mul(vf a, vf b) { return a * b; }
static inline vf vf_div(vf a, vf b) { return DWCONV_FDIV(a, b); }
static inline vm vf_lt(vf a, vf b) { return a < b; }
static inline vm vf_gt(vf a, vf b) { return a > b; }
static inline vm vf_isnan(vf a) { return a != a; }
static inline vm vf_nle(vf a, vf b) { return !(a <= b); } /* true for NaN */
static inline vf vf_select(vm m, vf yes, vf no) { return m ? yes : no; }
static inline int vm_any(vm m) { return m != 0; }

static inline vi vi_set1(int32_t i) { return i; }
static inline vi vf_as_vi(vf a) { return (vi)dwconv_f32_bits(a); }
static inline vf vi_as_vf(vi a) { return dwconv_f32_from_bits((uint32_t)a); }
/* like cvttps2dq: out of range (and NaN) gives INT32_MIN */
static inline vi vf_trunc(vf a) {
    return a > -2147483904.0f && a < 2147483648.0f ? (vi)a : INT32_MIN;
}
static inline vi vi_add(vi a, vi b) { return (vi)((uint32_t)a + (uint32_t)b); }
static inline vi vi_sub(vi a, vi b) { return (vi)((uint32_t)a - (uint32_t)b); }
static inline vi vi_and(vi a, vi b) { return a & b; }
static inline vi vi_or(vi a, vi b) { return a | b; }
static inline vi vi_xor(vi a, vi b) { return a ^ b; }
static inline vi vi_sll(vi a, int n) { return (vi)((uint32_t)a << n); }
static inline vi vi_srl(vi a, int n) { return (vi)((uint32_t)a >> n); }
static inline vi vi_sra(vi a, int n) { return a < 0 ? ~(vi)(~(uint32_t)a >> n) : a >> n; }
static inline vm vi_gt(vi a, vi b) { return a > b; }
static inline vi vi_select(vm m, vi yes, vi no) { return m ? yes : no; }

static inline vf vf_window(vf lo, vf hi, const float *p, int r) {
    (void)hi, (void)p, (void)r; /* one lane: r is always 0 */
    return lo;
}
static inline vf vf_load_even(const float *p) { return p[0]; }
/* one lane: a partial vector is never asked for (n < 1) */
static inline vf vf_load_part(const float *p, int n) { return n > 0 ? *p : 0.0f; }
static inline vi vi_loadu(const int32_t *p) { return *p; }
/* lane idx of a (idx < VL) or lane idx - VL of b */
static inline vf vf_permute2(vf a, vi idx, vf b) { return idx ? b : a; }
static inline void vf_store_part(float *p, vf v, int n) { if (n > 0) *p = v; }
static inline vh vh_load_part(const uint16_t *p, int n) { return n > 0 ? *p : 0; }
static inline void vh_store_part(uint16_t *p, vh h, int n) { if (n > 0) *p = h; }

static inline vh vh_load(const uint16_t *p) { return *p; }
static inline void vh_store(uint16_t *p, vh h) { *p = h; }
static inline void vh_stream(uint16_t *p, vh h) { *p = h; }
static inline vh vh_load_even(const uint16_t *p) { return p[0]; }
static inline vh vh_pack(vi a) { return (vh)a; }
static inline vf vf_from_bf16(vh h) { return dwconv_bf16_to_f32(h); }
static inline vf vf_from_f16(vh h) { return dwconv_f16_to_f32(h); }
static inline vh vh_from_f16_round(vf a) { return dwconv_f32_to_f16(a); }

#endif
