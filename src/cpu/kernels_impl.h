/* The kernels of the fast path, written once over the vector vocabulary of a
 * vec_<flavour>.h header (included first) and compiled once per flavour with that
 * flavour's flags. The including file defines KERNELS_TABLE (the table's name) and
 * KERNELS_NAME (the flavour's name) and includes nothing after this file.
 *
 * Bitwise agreement with the reference rests on three rules: every lane performs the
 * contract's operations in its order (fma chain over k ascending, then the
 * activation, then the rounding); the vector operations used are IEEE basic
 * operations with round-to-nearest; and the file is built with -ffp-contract=off. */
#include <stdint.h>
#include <string.h>

#include "dwconv_elements.h"
#include "dwconv_grad.h"
#include "kernels.h"

#define VL VEC_LANES
#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* Loops over the vectors in flight must unroll, or the accumulators live in memory. */
#define UNROLLED _Pragma("GCC unroll 16")

/* f(..., C) with C the constant equal to a run-time value: each C gets its own
 * specialised copy of f, with no branch on it inside the loops. */
#define BY_DTYPE(dtype, f, ...)                                                   \
    switch (dtype) {                                                              \
    case DWCONV_BF16: f(__VA_ARGS__, DWCONV_BF16); break;                         \
    case DWCONV_F16: f(__VA_ARGS__, DWCONV_F16); break;                           \
    default: f(__VA_ARGS__, DWCONV_F32); break;                                   \
    }
#define BY_ACTIVATION(act, f, ...)                                                \
    switch (act) {                                                                \
    case DWCONV_ACT_RELU: f(__VA_ARGS__, DWCONV_ACT_RELU); break;                 \
    case DWCONV_ACT_SILU: f(__VA_ARGS__, DWCONV_ACT_SILU); break;                 \
    default: f(__VA_ARGS__, DWCONV_ACT_NONE); break;                              \
    }
#define BY_FLAG(flag, f, ...)                                                     \
    do {                                                                          \
        if (flag) f(__VA_ARGS__, 1);                                              \
        else f(__VA_ARGS__, 0);                                                   \
    } while (0)

/* ---- activations: dwconv_numerics.h lane by lane ---- */

/* dwconv_exp_bits(v) of v = -x (negate: the hot path's e^-x, the negations folded
 * into the fused operations, which round the same) or v = x (the cold path's e^x):
 * the same operations in the same order. */
ALWAYS_INLINE vi v_exp_bits(vf x, const int negate) {
    const vf shifter = vf_set1(DWCONV_EXP_SHIFTER), log2e = vf_set1(DWCONV_EXP_LOG2E);
    const vf ln2_hi = vf_set1(DWCONV_EXP_LN2_HI);
    const vf s = negate ? vf_fnma(x, log2e, shifter) : vf_fma(x, log2e, shifter);
    const vf n = vf_sub(s, shifter);
    vf r = negate ? vf_fnms(n, ln2_hi, x) : vf_fnma(n, ln2_hi, x);
    r = vf_fma(n, vf_set1(DWCONV_EXP_LN2_LO), r);
    vf p = vf_set1(DWCONV_EXP_C6);
    p = vf_fma(p, r, vf_set1(DWCONV_EXP_C5));
    p = vf_fma(p, r, vf_set1(DWCONV_EXP_C4));
    p = vf_fma(p, r, vf_set1(DWCONV_EXP_C3));
    p = vf_fma(p, r, vf_set1(DWCONV_EXP_C2));
    p = vf_fma(p, r, vf_set1(1.0f));
    p = vf_fma(p, r, vf_set1(1.0f));
    return vi_add(vf_as_vi(p), vi_sll(vf_as_vi(s), 23));
}

/* dwconv_silu_cold in every lane (the caller keeps the lanes that need it). x * 0
 * and x + x are computed as the scalar code computes them: -inf * 0 gives the
 * processor's default NaN, x + x a NaN x itself, quieted. */
static inline vf v_silu_cold(vf x) {
    const vi raised = vi_add(v_exp_bits(x, 0), vi_set1((int32_t)DWCONV_SILU_COLD_EXP_BITS));
    vf y = vf_mul(vf_mul(x, vi_as_vf(raised)), vf_set1(DWCONV_SILU_COLD_SCALE));
    y = vf_select(vf_lt(x, vf_set1(-DWCONV_SILU_ZERO)), vf_mul(x, vf_set1(0.0f)), y);
    y = vf_select(vf_gt(x, vf_set1(0.0f)), x, y);
    return vf_select(vf_isnan(x), vf_add(x, x), y);
}

/* dwconv_silu: dwconv_silu_hot's operations (yr by the IEEE division), then the cold
 * path in the lanes with |x| > 86 or NaN, only when some lane has one (rare). */
static inline vf v_silu(vf x) {
    const vf one = vf_set1(1.0f);
    const vf t = vi_as_vf(v_exp_bits(x, 1));
    const vf hi = vf_add(one, t);
    const vf lo = vf_add(vf_sub(t, hi), one);
    const vf yr = vf_div(one, hi);
    const vf q0 = vf_mul(x, yr);
    vf e = vf_fms(q0, hi, x);
    e = vf_fma(q0, lo, e);
    vf y = vf_fnma(e, yr, q0);
    const vf a = vi_as_vf(vi_and(vf_as_vi(x), vi_set1(INT32_MAX)));
    const vm cold = vf_nle(a, vf_set1(DWCONV_SILU_COLD));
    if (vm_any(cold)) y = vf_select(cold, v_silu_cold(x), y);
    return y;
}

ALWAYS_INLINE vf v_activate(vf acc, const int act) {
    if (act == DWCONV_ACT_RELU) return vf_select(vf_lt(acc, vf_set1(0.0f)), vf_set1(0.0f), acc);
    if (act == DWCONV_ACT_SILU) return v_silu(acc);
    if (act == DWCONV_CPU_EXP) return vi_as_vf(v_exp_bits(acc, 0));
    if (act == DWCONV_CPU_EXP_NEG) return vi_as_vf(v_exp_bits(acc, 1));
    return acc;
}

/* ---- storage types: whole vectors, and the last partial one through a buffer ---- */

/* dwconv_f32_to_bf16 in integer lanes: round half to even, NaN kept quiet. */
static inline vh v_to_bf16(vf a) {
    vi u = vf_as_vi(a);
    vi high = vi_srl(u, 16);
    vi rounded = vi_srl(vi_add(u, vi_add(vi_set1(0x7fff), vi_and(high, vi_set1(1)))), 16);
    vm nan = vi_gt(vi_and(u, vi_set1(0x7fffffff)), vi_set1(0x7f800000));
    return vh_pack(vi_select(nan, vi_or(high, vi_set1(0x40)), rounded));
}

ALWAYS_INLINE vf v_widen(const dwconv_dtype dt, vh h) {
    return dt == DWCONV_BF16 ? vf_from_bf16(h) : vf_from_f16(h);
}

ALWAYS_INLINE vh v_round(const dwconv_dtype dt, vf v) {
    return dt == DWCONV_BF16 ? v_to_bf16(v) : vh_from_f16_round(v);
}

/* element i of base onward, widened */
ALWAYS_INLINE vf v_load(const dwconv_dtype dt, const void *base, int64_t i) {
    if (dt == DWCONV_F32) return vf_loadu((const float *)base + i);
    return v_widen(dt, vh_load((const uint16_t *)base + i));
}

/* element i of base onward, rounded; stream: around the caches (base + i is then
 * aligned to the stored vector; the caller's fence orders these stores) */
ALWAYS_INLINE void v_store(const dwconv_dtype dt, void *base, int64_t i, vf v, const int stream) {
    if (dt == DWCONV_F32) {
        if (stream) vf_stream((float *)base + i, v);
        else vf_storeu((float *)base + i, v);
    } else if (stream) {
        vh_stream((uint16_t *)base + i, v_round(dt, v));
    } else {
        vh_store((uint16_t *)base + i, v_round(dt, v));
    }
}

/* elements i, i+2, ..., i + 2(VL-1) of base, widened; reads one element more */
ALWAYS_INLINE vf v_load_even(const dwconv_dtype dt, const void *base, int64_t i) {
    if (dt == DWCONV_F32) return vf_load_even((const float *)base + i);
    return v_widen(dt, vh_load_even((const uint16_t *)base + i));
}

/* elements i*stride onward, every stride-th, for a constant stride of 1 or 2 */
ALWAYS_INLINE vf v_load_step(const dwconv_dtype dt, const void *base, int64_t i, const int stride) {
    return stride == 2 ? v_load_even(dt, base, 2 * i) : v_load(dt, base, i);
}

/* count < VL elements, nothing read or written beyond them; other lanes read zeros */
ALWAYS_INLINE vf v_load_part(const dwconv_dtype dt, const void *base, int64_t i, int count) {
    if (dt == DWCONV_F32) return vf_load_part((const float *)base + i, count);
    return v_widen(dt, vh_load_part((const uint16_t *)base + i, count));
}

ALWAYS_INLINE void v_store_part(const dwconv_dtype dt, void *base, int64_t i, vf v, int count) {
    if (dt == DWCONV_F32) vf_store_part((float *)base + i, v, count);
    else vh_store_part((uint16_t *)base + i, v_round(dt, v), count);
}

/* count <= VL elements: whole vector when count == VL (a constant folds the test) */
ALWAYS_INLINE vf v_load_n(const dwconv_dtype dt, const void *base, int64_t i, int count) {
    return count == VL ? v_load(dt, base, i) : v_load_part(dt, base, i, count);
}

ALWAYS_INLINE void v_store_n(const dwconv_dtype dt, void *base, int64_t i, vf v, int count,
                             const int stream) {
    if (count == VL) v_store(dt, base, i, v, stream);
    else v_store_part(dt, base, i, v, count);
}

/* ---- NCL: a stretch of one row, any taps ---- */

/* nb output vectors from j: K loads and K fmas each, the weight broadcast once; taps
 * and out of dtype dt (widened on load, rounded on store), taps read every stride-th
 * element (stride 2: two loads and a permutation). */
ALWAYS_INLINE void conv_block(const dwconv_cpu_taps *t, int64_t j, void *out, const int nb,
                              const int act, const int stream, const dwconv_dtype dt,
                              const int stride) {
    vf acc[VEC_BLOCK];
    UNROLLED
    for (int m = 0; m < nb; m++) acc[m] = vf_set1(t->bias);
    for (int64_t k = 0; k < t->kernel_size; k++) {
        const vf w = vf_set1(t->weight[k]);
        UNROLLED
        for (int m = 0; m < nb; m++)
            acc[m] = vf_fma(v_load_step(dt, t->tap[k], j + m * VL, stride), w, acc[m]);
    }
    UNROLLED
    for (int m = 0; m < nb; m++) v_store(dt, out, j + m * VL, v_activate(acc[m], act), stream);
}

/* ---- NCL: consecutive taps, windows shared ---- */

/* Taps go by blocks of VL: the vectors a[m] = src[k0 + m*VL ...] are loaded once per
 * block and every window of the block is cut from them (vf_window), so a window
 * costs a shift or one load, and the weight broadcast serves nb outputs. */
ALWAYS_INLINE void window_block(const dwconv_cpu_taps *t, int64_t j, void *out, const int nb,
                                const int act, const int stream) {
    const float *src = (const float *)t->tap[0] + j;
    const int64_t K = t->kernel_size;
    vf acc[VEC_BLOCK];
    UNROLLED
    for (int m = 0; m < nb; m++) acc[m] = vf_set1(t->bias);
    for (int64_t k0 = 0; k0 < K; k0 += VL) {
        vf a[VEC_BLOCK + 1];
        UNROLLED
        for (int m = 0; m < nb; m++) a[m] = vf_loadu(src + k0 + m * VL);
        a[nb] = VEC_WINDOW_OVERREAD ? vf_loadu(src + k0 + nb * VL) : a[nb - 1];
        UNROLLED
        for (int r = 0; r < VL; r++) {
            if (k0 + r >= K) break;
            const vf w = vf_set1(t->weight[k0 + r]);
            UNROLLED
            for (int m = 0; m < nb; m++)
                acc[m] = vf_fma(vf_window(a[m], a[m + 1], src + k0 + m * VL, r), w, acc[m]);
        }
    }
    UNROLLED
    for (int m = 0; m < nb; m++) v_store(DWCONV_F32, out, j + m * VL, v_activate(acc[m], act), stream);
}

/* n outputs (a multiple of VL) by blocks of VEC_BLOCK vectors, then one by one. The
 * constant arguments select one specialised copy; window implies F32 and stride 1. */
ALWAYS_INLINE void stretch(const dwconv_cpu_taps *t, int64_t n, void *out, const int window,
                           const dwconv_dtype dt, const int stride, const int act,
                           const int stream) {
    int64_t j = 0;
    for (; j + VEC_BLOCK * VL <= n; j += VEC_BLOCK * VL) {
        if (window) window_block(t, j, out, VEC_BLOCK, act, stream);
        else conv_block(t, j, out, VEC_BLOCK, act, stream, dt, stride);
    }
    for (; j < n; j += VL) {
        if (window) window_block(t, j, out, 1, act, stream);
        else conv_block(t, j, out, 1, act, stream, dt, stride);
    }
}

ALWAYS_INLINE void stretch_act(const dwconv_cpu_taps *t, int64_t n, void *out, const int window,
                               const dwconv_dtype dt, const int stride, const int act) {
    BY_FLAG(t->stream, stretch, t, n, out, window, dt, stride, act);
}

ALWAYS_INLINE void stretch_stride(const dwconv_cpu_taps *t, int64_t n, void *out,
                                  const int window, const dwconv_dtype dt, const int stride) {
    BY_ACTIVATION(t->activation, stretch_act, t, n, out, window, dt, stride);
}

ALWAYS_INLINE void stretch_dtype(const dwconv_cpu_taps *t, int64_t n, void *out,
                                 const int window, const dwconv_dtype dt) {
    if (t->stride == 2) stretch_stride(t, n, out, window, dt, 2);
    else stretch_stride(t, n, out, window, dt, 1);
}

static void k_conv(const dwconv_cpu_taps *t, int64_t n, void *out) {
    BY_DTYPE(t->dtype, stretch_dtype, t, n, out, 0);
}

static void k_conv_window(const dwconv_cpu_taps *t, int64_t n, void *out) {
    stretch_stride(t, n, out, 1, DWCONV_F32, 1);
}

/* ---- staging and rounding ---- */

/* Strides above 2 are read element by element: measured on Zen 5, gather instructions
 * (with software prefetch) were no faster for f32 and slower for f16/bf16. */
ALWAYS_INLINE void gather_typed(const void *src, int64_t stride, int64_t n, float *dst,
                                const dwconv_dtype dt) {
    int64_t j = 0;
    if (stride == 1) {
        for (; j + VL <= n; j += VL) vf_storeu(dst + j, v_load(dt, src, j));
    } else if (stride == 2) {
        /* a vector reads src[2j .. 2j + 2VL - 1]: stop while one element is left over */
        for (; j + VL < n; j += VL) vf_storeu(dst + j, v_load_even(dt, src, 2 * j));
    }
    for (; j < n; j++) dst[j] = dwconv_load(dt, src, j * stride);
}

static void k_gather(dwconv_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst) {
    BY_DTYPE(dtype, gather_typed, src, stride, n, dst);
}

ALWAYS_INLINE void narrow_typed(const float *src, int64_t n, void *dst, const dwconv_dtype dt,
                                const int stream) {
    int64_t j = 0;
    for (; j + VL <= n; j += VL) v_store(dt, dst, j, vf_loadu(src + j), stream);
    for (; j < n; j++) dwconv_store(dt, dst, j, src[j]);
}

ALWAYS_INLINE void narrow_dtype(const float *src, int64_t n, void *dst, int stream,
                                const dwconv_dtype dt) {
    BY_FLAG(stream, narrow_typed, src, n, dst, dt);
}

static void k_narrow(dwconv_dtype dtype, const float *src, int64_t n, void *dst, int stream) {
    BY_DTYPE(dtype, narrow_dtype, src, n, dst, stream);
}

/* ---- NLC: vectors across channels ---- */

/* Channels [c0, c0 + count) of position p. One position at a time: each input row is
 * then read front to back, a stream the prefetchers follow (four positions at once,
 * sharing the weight loads, ran at half the speed on Zen 5). */
ALWAYS_INLINE void nlc_channels(const dwconv_cpu_nlc *job, const void *const *row, int64_t p,
                                void *y, int64_t c0, const int count, const dwconv_dtype dt,
                                const int act, const int stream) {
    const int64_t K = job->kernel_size;
    const void *const *taps = row + p * K;
    vf acc = v_load_n(DWCONV_F32, job->bias, c0, count);
    for (int64_t k = 0; k < K; k++)
        acc = vf_fma(v_load_n(dt, taps[k], c0, count),
                     v_load_n(DWCONV_F32, job->weight_kc, k * job->weight_stride + c0, count), acc);
    v_store_n(dt, y, p * job->y_stride + c0, v_activate(acc, act), count, stream);
    /* the newest row, some positions ahead: read a vector at a time, rows one after
     * another, it is a stream the hardware prefetcher keeps losing */
    __builtin_prefetch((const void *)((uintptr_t)taps[K - 1] + (uintptr_t)job->prefetch_ahead +
                                      (uintptr_t)c0 * (dt == DWCONV_F32 ? 4 : 2)));
}

ALWAYS_INLINE void nlc_typed(const dwconv_cpu_nlc *job, const void *const *row, int64_t positions,
                             void *y, const int act, const dwconv_dtype dt, const int stream) {
    const int64_t C = job->channels;
    for (int64_t p = 0; p < positions; p++) {
        int64_t c0 = 0;
        for (; c0 + VL <= C; c0 += VL) nlc_channels(job, row, p, y, c0, VL, dt, act, stream);
        if (c0 < C) nlc_channels(job, row, p, y, c0, (int)(C - c0), dt, act, 0);
    }
}

ALWAYS_INLINE void nlc_dtype(const dwconv_cpu_nlc *job, const void *const *row, int64_t positions,
                             void *y, const int act, const dwconv_dtype dt) {
    BY_FLAG(job->stream, nlc_typed, job, row, positions, y, act, dt);
}

ALWAYS_INLINE void nlc_act(const dwconv_cpu_nlc *job, const void *const *row, int64_t positions,
                           void *y, const int act) {
    BY_DTYPE(job->dtype, nlc_dtype, job, row, positions, y, act);
}

static void k_nlc(const dwconv_cpu_nlc *job, const void *const *row, int64_t positions, void *y) {
    BY_ACTIVATION(job->activation, nlc_act, job, row, positions, y);
}

/* ---- the activations alone, for the tests ---- */

ALWAYS_INLINE void activate_typed(const float *in, int64_t n, float *out, const int act) {
    int64_t j = 0;
    for (; j + VL <= n; j += VL) vf_storeu(out + j, v_activate(vf_loadu(in + j), act));
    if (j < n) {
        const int rest = (int)(n - j);
        vf_store_part(out + j, v_activate(vf_load_part(in + j, rest), act), rest);
    }
}

static void k_activate(int act, const float *in, int64_t n, float *out) {
    if (act == DWCONV_CPU_EXP) activate_typed(in, n, out, DWCONV_CPU_EXP);
    else if (act == DWCONV_CPU_EXP_NEG) activate_typed(in, n, out, DWCONV_CPU_EXP_NEG);
    else BY_ACTIVATION(act, activate_typed, in, n, out);
}

#include "kernels_backward.h"
#include "kernels_decode.h"

/* One fence a thread, after all its streamed stores: one per kernel call cost a
 * quarter of the time of a stride-2 row (each waits for the stores to drain). */
static void k_fence(void) { vec_fence(); }

const dwconv_cpu_kernels KERNELS_TABLE = {
    .name = KERNELS_NAME,
    .lanes = VL,
    .overread = VEC_WINDOW_OVERREAD,
    .conv = k_conv,
    .conv_window = k_conv_window,
    .gather = k_gather,
    .narrow = k_narrow,
    .nlc = k_nlc,
    .fence = k_fence,
    .activate = k_activate,
    .act_grad = k_act_grad,
    .grad_partials = k_grad_partials,
    .grad_trees = k_grad_trees,
    .fma_dot = k_fma_dot,
    .decode = k_decode,
};
