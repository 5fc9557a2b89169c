/* The vector vocabulary of kernels_impl.h in AVX2 with FMA and F16C: 8 floats per
 * vector. Only IEEE operations with round-to-nearest and exact integer bit
 * manipulation, so a lane computes what the scalar contract computes. */
#ifndef DWCONV_VEC_AVX2_H
#define DWCONV_VEC_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define VEC_LANES 8
#define VEC_BLOCK 4 /* output vectors in flight: 16 ymm registers leave room for 4 */
#define VEC_WINDOW_OVERREAD 0 /* windows are plain loads (no cross-lane valignd here) */
#define VEC_TRANSPOSE8 0 /* no vf_load_transposed8: the weight gradient goes by output */

typedef __m256 vf;  /* 8 floats */
typedef __m256i vi; /* 8 int32 */
typedef __m256 vm;  /* a lane mask: all ones or all zeros per lane */
typedef __m128i vh; /* 8 halves (f16 or bf16 bits) */

#define VEC_PS(op) _mm256_##op##_ps
#define VEC_EPI32(op) _mm256_##op##_epi32
#define VEC_SI(op) _mm256_##op##_si256
#include "vec_x86.h"

static inline vm vf_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vm vf_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline vm vf_isnan(vf a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
static inline vm vf_nle(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_NLE_UQ); } /* true for NaN */
static inline vf vf_select(vm m, vf yes, vf no) { return _mm256_blendv_ps(no, yes, m); }
static inline int vm_any(vm m) { return _mm256_movemask_ps(m) != 0; }

static inline vi vf_as_vi(vf a) { return _mm256_castps_si256(a); }
static inline vf vi_as_vf(vi a) { return _mm256_castsi256_ps(a); }
static inline vm vi_gt(vi a, vi b) { return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b)); }
static inline vi vi_select(vm m, vi yes, vi no) {
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(no), _mm256_castsi256_ps(yes), m));
}

/* Elements r .. r+7 of p (lo and hi are unused: in-lane shuffles cannot build them). */
static inline vf vf_window(vf lo, vf hi, const float *p, int r) {
    (void)hi;
    return r == 0 ? lo : _mm256_loadu_ps(p + r);
}

/* n < 8 elements; the masked lanes are neither read nor written */
static inline __m256i vec_first(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vf vf_load_part(const float *p, int n) { return _mm256_maskload_ps(p, vec_first(n)); }
static inline vi vi_loadu(const int32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
/* lane idx of a (idx < 8) or lane idx - 8 of b */
static inline vf vf_permute2(vf a, vi idx, vf b) {
    const __m256 use_b = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(7)));
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(a, idx), _mm256_permutevar8x32_ps(b, idx), use_b);
}
static inline void vf_store_part(float *p, vf v, int n) { _mm256_maskstore_ps(p, vec_first(n), v); }

/* p[0], p[2], ..., p[14] */
static inline vf vf_load_even(const float *p) {
    __m256 pairs = _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), 0xd8));
}

/* ---- 16-bit storage ---- */

static inline vh vh_load(const uint16_t *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline void vh_store(uint16_t *p, vh h) { _mm_storeu_si128((__m128i *)p, h); }
static inline void vh_stream(uint16_t *p, vh h) { _mm_stream_si128((__m128i *)p, h); } /* p aligned */
/* AVX2 has no 16-bit masked moves: through a buffer (slower, but only at row ends) */
static inline vh vh_load_part(const uint16_t *p, int n) {
    uint16_t buf[8] = {0};
    memcpy(buf, p, sizeof *p * (size_t)n);
    return _mm_loadu_si128((const __m128i *)buf);
}
static inline void vh_store_part(uint16_t *p, vh h, int n) {
    uint16_t buf[8];
    _mm_storeu_si128((__m128i *)buf, h);
    memcpy(p, buf, sizeof *p * (size_t)n);
}
/* The low 16 bits of 8 int32 lanes, each already in [0, 65535] (no saturation). */
static inline vh vh_pack(vi a) {
    __m256i packed = _mm256_packus_epi32(a, a); /* per 128-bit lane: a0..a3 a0..a3 */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}
/* p[0], p[2], ..., p[14] */
static inline vh vh_load_even(const uint16_t *p) {
    return vh_pack(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)p), _mm256_set1_epi32(0xffff)));
}
static inline vf vf_from_bf16(vh h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline vf vf_from_f16(vh h) { return _mm256_cvtph_ps(h); } /* exact */
/* Round to nearest even: F16C rounds exactly as dwconv_f32_to_f16 (docs/numerics.md). */
static inline vh vh_from_f16_round(vf a) {
    return _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#endif
