/* The vector vocabulary of kernels_impl.h in AVX-512 (F, BW, VL, DQ) with F16C: 16
 * floats per vector. Only IEEE operations with round-to-nearest and exact integer
 * bit manipulation, so a lane computes what the scalar contract computes. */
#ifndef DWCONV_VEC_AVX512_H
#define DWCONV_VEC_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#define VEC_LANES 16
#define VEC_BLOCK 8 /* output vectors in flight: 8 accumulators hide the FMA latency */
/* Windows come from registers (valignd) for even shifts and from loads for odd ones:
 * the mix keeps both the shuffle and the load ports busy (measured on Zen 5: 6.0
 * FMAs/ns against 4.6 with shifts only and 3.7 with loads only, K = 31). The register
 * windows need the vector after the last tap's: up to 16 floats more are read. */
#define VEC_WINDOW_OVERREAD 16
#define VEC_TRANSPOSE8 1 /* vf_load_transposed8 is cheap: the weight gradient uses it */

typedef __m512 vf;    /* 16 floats */
typedef __m512i vi;   /* 16 int32 */
typedef __mmask16 vm; /* a lane mask */
typedef __m256i vh;   /* 16 halves (f16 or bf16 bits) */

#define VEC_PS(op) _mm512_##op##_ps
#define VEC_EPI32(op) _mm512_##op##_epi32
#define VEC_SI(op) _mm512_##op##_si512
#include "vec_x86.h"

static inline vm vf_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vm vf_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline vm vf_isnan(vf a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
static inline vm vf_nle(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_NLE_UQ); } /* true for NaN */
static inline vf vf_select(vm m, vf yes, vf no) { return _mm512_mask_blend_ps(m, no, yes); }
static inline int vm_any(vm m) { return m != 0; }

static inline vi vf_as_vi(vf a) { return _mm512_castps_si512(a); }
static inline vf vi_as_vf(vi a) { return _mm512_castsi512_ps(a); }
static inline vm vi_gt(vi a, vi b) { return _mm512_cmpgt_epi32_mask(a, b); }
static inline vi vi_select(vm m, vi yes, vi no) { return _mm512_mask_blend_epi32(m, no, yes); }

static inline vf vf_align(vf lo, vf hi, int r) { /* r must fold to a constant */
    __m512i a = _mm512_castps_si512(lo), b = _mm512_castps_si512(hi);
    switch (r) {
#define VEC_ALIGN_CASE(n) case n: return _mm512_castsi512_ps(_mm512_alignr_epi32(b, a, n));
    VEC_ALIGN_CASE(2) VEC_ALIGN_CASE(4) VEC_ALIGN_CASE(6) VEC_ALIGN_CASE(8)
    VEC_ALIGN_CASE(10) VEC_ALIGN_CASE(12) VEC_ALIGN_CASE(14)
#undef VEC_ALIGN_CASE
    default: return lo;
    }
}

/* Elements r .. r+15 of the 32 floats lo:hi, which are p[0 .. 31]. r is a constant
 * once the caller's loop is unrolled. */
static inline vf vf_window(vf lo, vf hi, const float *p, int r) {
    if (r == 0) return lo;
    if (r % 2) return _mm512_loadu_ps(p + r);
    return vf_align(lo, hi, r);
}

/* n < 16 elements; the masked lanes are neither read nor written */
static inline __mmask16 vec_first(int n) { return (__mmask16)((1u << n) - 1); }
static inline vf vf_load_part(const float *p, int n) { return _mm512_maskz_loadu_ps(vec_first(n), p); }
static inline vi vi_loadu(const int32_t *p) { return _mm512_loadu_si512(p); }
/* lane idx of a (idx < 16) or lane idx - 16 of b */
static inline vf vf_permute2(vf a, vi idx, vf b) { return _mm512_permutex2var_ps(a, idx, b); }
static inline void vf_store_part(float *p, vf v, int n) { _mm512_mask_storeu_ps(p, vec_first(n), v); }

/* p[0], p[2], ..., p[30] */
static inline vf vf_load_even(const float *p) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    return _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 16));
}

/* out[c] lane r = s[r*stride + c] for c < 8, r < 16: an 8-column block of 16 rows
 * transposed as it loads. Row halves go in by the load's insert and the rest stays
 * inside 128-bit lanes but for one shuffle per output: cheaper on Zen 5 than the
 * two-source permutes of a log2(16)-stage network (bench/RESULTS-cpu.md). */
static inline void vf_load_transposed8(const float *s, int64_t stride, vf *out) {
    __m512 u[2][4];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) { /* rows 8h .. 8h + 7 */
        __m512 w[4], t[4];
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) /* lanes 0-7: row 8h + r, lanes 8-15: row 8h + r + 4 */
            w[r] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(s + (8 * h + r) * stride)),
                                      _mm256_loadu_ps(s + (8 * h + r + 4) * stride), 1);
        t[0] = _mm512_unpacklo_ps(w[0], w[1]), t[1] = _mm512_unpackhi_ps(w[0], w[1]);
        t[2] = _mm512_unpacklo_ps(w[2], w[3]), t[3] = _mm512_unpackhi_ps(w[2], w[3]);
        /* u[h][c], 128-bit lane q: rows 8h + 4(q/2) .. + 3 of column c + 4(q%2) */
        u[h][0] = _mm512_shuffle_ps(t[0], t[2], 0x44), u[h][1] = _mm512_shuffle_ps(t[0], t[2], 0xee);
        u[h][2] = _mm512_shuffle_ps(t[1], t[3], 0x44), u[h][3] = _mm512_shuffle_ps(t[1], t[3], 0xee);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        out[c] = _mm512_shuffle_f32x4(u[0][c], u[1][c], 0x88);
        out[c + 4] = _mm512_shuffle_f32x4(u[0][c], u[1][c], 0xdd);
    }
}

/* ---- 16-bit storage ---- */

static inline vh vh_load(const uint16_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline void vh_store(uint16_t *p, vh h) { _mm256_storeu_si256((__m256i *)p, h); }
static inline void vh_stream(uint16_t *p, vh h) { _mm256_stream_si256((__m256i *)p, h); } /* p aligned */
static inline vh vh_load_part(const uint16_t *p, int n) {
    return _mm256_maskz_loadu_epi16(vec_first(n), p);
}
static inline void vh_store_part(uint16_t *p, vh h, int n) {
    _mm256_mask_storeu_epi16(p, vec_first(n), h);
}
/* p[0], p[2], ..., p[30]: the low halves of 16 int32 lanes */
static inline vh vh_load_even(const uint16_t *p) {
    return _mm512_cvtepi32_epi16(_mm512_loadu_si512(p));
}
static inline vh vh_pack(vi a) { return _mm512_cvtepi32_epi16(a); } /* low 16 bits */
static inline vf vf_from_bf16(vh h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline vf vf_from_f16(vh h) { return _mm512_cvtph_ps(h); } /* exact */
/* Round to nearest even: F16C rounds exactly as dwconv_f32_to_f16 (docs/numerics.md). */
static inline vh vh_from_f16_round(vf a) {
    return _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#endif
