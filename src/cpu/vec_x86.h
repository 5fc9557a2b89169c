/* The part of the vector vocabulary that AVX2 and AVX-512 spell alike but for the
 * width: vec_avx2.h and vec_avx512.h define vf, vi, VEC_PS(op) (_mm256_op_ps or
 * _mm512_op_ps), VEC_EPI32(op) and VEC_SI(op) (_mm256_op_si256, _mm512_op_si512),
 * then include this. What differs (masks, shuffles, conversions) stays there. */
#ifndef DWCONV_VEC_X86_H
#define DWCONV_VEC_X86_H

static inline vf vf_loadu(const float *p) { return VEC_PS(loadu)(p); }
static inline void vf_storeu(float *p, vf v) { VEC_PS(storeu)(p, v); }
/* non-temporal: p aligned to the vector; vec_fence orders these stores */
static inline void vf_stream(float *p, vf v) { VEC_PS(stream)(p, v); }
static inline void vec_fence(void) { _mm_sfence(); }
static inline vf vf_set1(float f) { return VEC_PS(set1)(f); }
static inline vf vf_fma(vf a, vf b, vf c) { return VEC_PS(fmadd)(a, b, c); }
/* the other signs, each one rounding: -(a b) + c, a b - c, -(a b) - c */
static inline vf vf_fnma(vf a, vf b, vf c) { return VEC_PS(fnmadd)(a, b, c); }
static inline vf vf_fms(vf a, vf b, vf c) { return VEC_PS(fmsub)(a, b, c); }
static inline vf vf_fnms(vf a, vf b, vf c) { return VEC_PS(fnmsub)(a, b, c); }
static inline vf vf_add(vf a, vf b) { return VEC_PS(add)(a, b); }
static inline vf vf_sub(vf a, vf b) { return VEC_PS(sub)(a, b); }
static inline vf vf_mul(vf a, vf b) { return VEC_PS(mul)(a, b); }
static inline vf vf_div(vf a, vf b) { return VEC_PS(div)(a, b); }

static inline vi vi_set1(int32_t i) { return VEC_EPI32(set1)(i); }
static inline vi vf_trunc(vf a) { return VEC_EPI32(cvttps)(a); }
static inline vi vi_add(vi a, vi b) { return VEC_EPI32(add)(a, b); }
static inline vi vi_sub(vi a, vi b) { return VEC_EPI32(sub)(a, b); }
static inline vi vi_and(vi a, vi b) { return VEC_SI(and)(a, b); }
static inline vi vi_or(vi a, vi b) { return VEC_SI(or)(a, b); }
static inline vi vi_xor(vi a, vi b) { return VEC_SI(xor)(a, b); }
#define vi_sll(a, n) VEC_EPI32(slli)((a), (n))
#define vi_srl(a, n) VEC_EPI32(srli)((a), (n))
#define vi_sra(a, n) VEC_EPI32(srai)((a), (n))

#endif
