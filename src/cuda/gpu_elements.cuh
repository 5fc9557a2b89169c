/*
 * Elements as the kernels see them: each dtype's raw storage word, its exact widening
 * to f32 and its rounding back, and 16-byte vectors of raw elements. The kernels are
 * templates over the dtype id (DWCONV_F32, DWCONV_F16, DWCONV_BF16).
 */
#ifndef DWCONV_GPU_ELEMENTS_CUH
#define DWCONV_GPU_ELEMENTS_CUH

#include <stdint.h>

#include "dwconv.h"
#include "dwconv_indexing.h"
#include "gpu_portable.cuh"

template <int DT> struct gpu_elem;

template <> struct gpu_elem<DWCONV_F32> {
    typedef uint32_t raw;
    static __device__ __forceinline__ float widen(raw r) { return dwconv_f32_from_bits(r); }
    static __device__ __forceinline__ raw narrow(float v) { return dwconv_f32_bits(v); }
};

template <> struct gpu_elem<DWCONV_F16> {
    typedef uint16_t raw;
    static __device__ __forceinline__ float widen(raw r) { return gpu_f16_to_f32(r); }
    static __device__ __forceinline__ raw narrow(float v) { return gpu_f32_to_f16(v); }
};

template <> struct gpu_elem<DWCONV_BF16> {
    typedef uint16_t raw;
    static __device__ __forceinline__ float widen(raw r) { return dwconv_bf16_to_f32(r); }
    static __device__ __forceinline__ raw narrow(float v) { return gpu_f32_to_bf16(v); }
};

/* Elements per 16-byte vector. */
template <int DT> struct gpu_vec_width {
    enum { value = 16 / (int)sizeof(typename gpu_elem<DT>::raw) };
};

/* Element i of a 16-byte vector (little-endian: element 0 is the low half of .x).
 * Callers unroll i, so the word array stays in registers. */
template <int DT>
static __device__ __forceinline__ typename gpu_elem<DT>::raw gpu_vec_get(const uint4 &v, int i) {
    typedef typename gpu_elem<DT>::raw raw;
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
    if (sizeof(raw) == 4) return (raw)words[i];
    return (raw)((i & 1) ? words[i >> 1] >> 16 : words[i >> 1] & 0xffffu);
}

/* The f32 values of a 16-byte vector; i is unrolled, so this is register moves. */
template <int DT>
static __device__ __forceinline__ void gpu_vec_widen(const uint4 &v, float *out) {
#pragma unroll
    for (int i = 0; i < gpu_vec_width<DT>::value; i++)
        out[i] = gpu_elem<DT>::widen(gpu_vec_get<DT>(v, i));
}

/* A 16-byte vector of raw elements (element 0 in the low half of .x). */
template <int DT>
static __device__ __forceinline__ uint4 gpu_vec_pack(const typename gpu_elem<DT>::raw *e) {
    uint32_t w[4];
    if (sizeof(typename gpu_elem<DT>::raw) == 4) {
#pragma unroll
        for (int i = 0; i < 4; i++) w[i] = (uint32_t)e[i];
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) w[i] = (uint32_t)e[2 * i] | ((uint32_t)e[2 * i + 1] << 16);
    }
    uint4 v;
    v.x = w[0], v.y = w[1], v.z = w[2], v.w = w[3];
    return v;
}

/* in[0] and in[1] rounded to the 2-byte DT, packed (in[0] in the low half). A pointer,
 * not two values, so that gpu_vec_narrow's f32 instance names no element past its 4. */
template <int DT> static __device__ __forceinline__ uint32_t gpu_pair_narrow(const float *in) {
    return gpu_f32x2_narrow(DT == DWCONV_BF16, in[0], in[1]);
}

/* A 16-byte vector of values rounded to DT (2-byte elements a pair per conversion). */
template <int DT>
static __device__ __forceinline__ uint4 gpu_vec_narrow(const float *in) {
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
        w[i] = DT == DWCONV_F32 ? dwconv_f32_bits(in[i]) : gpu_pair_narrow<DT>(in + 2 * i);
    uint4 v;
    v.x = w[0], v.y = w[1], v.z = w[2], v.w = w[3];
    return v;
}

/* silu's hot path (|x| <= 86): dwconv_silu_hot with yr from gpu_rcp_rn, no division.
 * For other x it computes bits that are thrown away (no trap on a GPU). */
static __device__ __forceinline__ float gpu_silu_hot(float x) {
    const float t = dwconv_f32_from_bits(dwconv_exp_bits(-x));
    return dwconv_silu_hot(x, t, gpu_rcp_rn(1.0f + t));
}

/* The contract's silu whole (hot and cold paths), out of line: the bf16 path below
 * calls it for the values near a rounding boundary (about a fifth of a warp's steps of
 * 8 values would), and inlined at every call site of an unrolled kernel it would grow
 * the code past what the instruction cache holds (the backward's twin,
 * gpu_silu_grad_cold: bench/RESULTS-gpu.md run O). */
static __device__ GPU_NOINLINE float gpu_silu_exact(float x) {
    return fabsf(x) <= DWCONV_SILU_COLD ? gpu_silu_hot(x) : dwconv_silu_cold(x);
}

/* silu for a value that is only ever rounded to bf16 (a 16-bit output), in about half
 * the instructions of the contract's (PTX from nvcc 13 of one value with its tests: 20
 * against 41; SASS not counted): where the cheap approximation below lies far
 * enough from a bf16 rounding boundary, it rounds to the same bf16 as the contract's
 * silu; elsewhere the contract's silu itself. NVIDIA GPUs only (their approximate
 * exponential and reciprocal); other targets take the contract's path for every value.
 *
 * The approximation: T = 2^-(x log2 e) as ex2.approx of -RN(x L2E) times
 * (1 - r ln 2), r the product's rounding error and L2E's own (both exact or nearly:
 * at |x| = 86 the plain product is off by 2^-18 relative), then x * rcp.approx(1 + T).
 * Within GPU_SILU_ROUGH_ULPS f32 units in the last place of the contract's value for
 * every |x| <= 86 (bench/gpu/silu_exhaustive.cu measures the largest distance over
 * every float and proves the rounded results equal; 6 units on an H100); a value whose
 * low 16 bits lie within that many units of the midpoint 0x8000 (where round-to-nearest
 * to bf16 could go either way) takes the contract's path: about 1 value in 1000.
 *
 * Where it runs: PTX specifies ex2.approx and rcp.approx by error bounds, not bits,
 * and those bounds come from tests, not proofs, so the path runs only on hardware
 * where silu_exhaustive has passed: compute capability 9.0 (H100, H200; 2026-12-06,
 * bench/RESULTS-gpu.md run P). It is compiled for __CUDA_ARCH__ 900 alone (sm_90
 * machine code and the compute_90 PTX; other architectures' machine code takes the
 * contract's hot path), and the module narrows gpu_silu_tie_window to a margin of
 * GPU_SILU_ROUGH_ULPS for a 9.0 device only: elsewhere its margin stays 0x8000 and
 * every value counts as near a tie, so that a newer GPU compiling the compute_90 PTX
 * computes the contract's silu for every bf16 value (correct, slower: build for its architecture,
 * CUDA_ARCHS, to have the inline hot path there) until its own run adds it
 * (silu_exhaustive defines DWCONV_GPU_SILU_ROUGH_TRY to compile the path for any
 * architecture). The gate is the near-tie test's own two constants, read from constant
 * memory, so that it adds no instruction: a flag's second path and a margin from which
 * the test derived its constants each cost causal K4 bf16 silu a few per cent
 * (bench/RESULTS-gpu.md run Q); this gate, nothing measurable (run R).
 * -DDWCONV_GPU_SILU_ROUGH=0 (configure's NVCCFLAGS) builds without it. */
#ifndef DWCONV_GPU_SILU_ROUGH
#define DWCONV_GPU_SILU_ROUGH 1
#endif
#define GPU_SILU_ROUGH_ULPS 32u
#define GPU_LOG2E_LO 1.925963033500011e-08f /* log2(e) - DWCONV_EXP_LOG2E */
#define GPU_LN2 0.693147182464599609375f
/* The near-tie test for a margin of m f32 units: a value whose low 16 bits b satisfy
 * (b + offset) mod 2^16 <= width lies within m units of the bf16 midpoint 0x8000 (a
 * borrow from the upper bits does not change the rounding); m = 0x8000 takes in every
 * value. */
typedef struct gpu_tie_window {
    uint32_t offset, width;
} gpu_tie_window;
#define GPU_TIE_WINDOW(m) {(uint32_t)(m) - 0x8000u, 2u * (uint32_t)(m)}
#define GPU_SILU_ROUGH_UNPROVEN 0x8000u
#if defined(__CUDACC__) && !defined(DWCONV_GPU_IS_HIP)
/* GPU_SILU_ROUGH_ULPS on a device whose architecture the rough path was proven on (set
 * by the module), else every value. */
static __constant__ gpu_tie_window gpu_silu_tie_window = GPU_TIE_WINDOW(GPU_SILU_ROUGH_UNPROVEN);
#endif
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900 || defined(DWCONV_GPU_SILU_ROUGH_TRY))
#define GPU_SILU_ROUGH DWCONV_GPU_SILU_ROUGH
static __device__ __forceinline__ float gpu_silu_rough(float x) {
    const float xl = x * DWCONV_EXP_LOG2E;
    float r = __fmaf_rn(x, DWCONV_EXP_LOG2E, -xl); /* exact */
    r = __fmaf_rn(x, GPU_LOG2E_LO, r);
    float e, q;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(-xl));
    const float t = __fmaf_rn(e, -r * GPU_LN2, e);
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(q) : "f"(1.0f + t));
    return x * q;
}
#define GPU_SILU_TIE_WINDOW gpu_silu_tie_window
#else /* not used (GPU_SILU_ROUGH 0): the contract's hot path */
#define GPU_SILU_ROUGH 0
#define GPU_SILU_TIE_WINDOW (gpu_tie_window) GPU_TIE_WINDOW(GPU_SILU_ROUGH_UNPROVEN)
static __device__ __forceinline__ float gpu_silu_rough(float x) { return gpu_silu_hot(x); }
#endif

/* Whether y's rounding to bf16 (to nearest, ties to even) could change within the
 * window's margin of its last place. */
static __device__ __forceinline__ bool gpu_bf16_near_tie(float y, gpu_tie_window w) {
    return ((dwconv_f32_bits(y) + w.offset) & 0xffffu) <= w.width;
}

/* The activation ACT (fixed at compile time) of n values that the caller then rounds
 * to YT (a kernel's output dtype). silu is dwconv_silu bit for bit (NaN payloads
 * aside), and for YT bf16 with the path above on rounds to the same bf16: every value
 * takes the hot path (or the rough one), and one test for the n values sends them to
 * the cold path (or the contract's whole silu) only when one of them needs it
 * (|x| > 86 or NaN, rare; with the rough path also a near tie). Where the rough path is
 * compiled but the device is not one it was proven on, every bf16 value is a near tie
 * and takes the contract's whole silu (out of line: slower, the same bits). */
template <int ACT, int N, int YT>
static __device__ __forceinline__ void gpu_activate_fixed(float *v) {
    if (ACT == DWCONV_ACT_RELU) {
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = dwconv_relu(v[i]);
    } else if (ACT == DWCONV_ACT_SILU) {
        const bool rough = GPU_SILU_ROUGH && YT == DWCONV_BF16;
        float out[N];
        bool need[N], any = false;
#pragma unroll
        for (int i = 0; i < N; i++) {
            need[i] = !(fabsf(v[i]) <= DWCONV_SILU_COLD);
            if (rough) {
                out[i] = gpu_silu_rough(v[i]);
                need[i] = need[i] || gpu_bf16_near_tie(out[i], GPU_SILU_TIE_WINDOW);
            } else {
                out[i] = gpu_silu_hot(v[i]);
            }
            any |= need[i];
        }
        if (any) {
#pragma unroll
            for (int i = 0; i < N; i++)
                if (need[i]) out[i] = rough ? gpu_silu_exact(v[i]) : dwconv_silu_cold(v[i]);
        }
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = out[i];
    }
}

/* The activation of n values rounded to YT: one branch for all of them, not one per
 * value. */
template <int N, int YT>
static __device__ __forceinline__ void gpu_activate_all(int activation, float *v) {
    if (activation == DWCONV_ACT_RELU) gpu_activate_fixed<DWCONV_ACT_RELU, N, YT>(v);
    else if (activation == DWCONV_ACT_SILU) gpu_activate_fixed<DWCONV_ACT_SILU, N, YT>(v);
}

/* One padded position of an x row: what the padding mode reads there, or +0 where it
 * reads a zero. Positions beyond the padded range (only ever used by outputs that do
 * not exist) also read +0 instead of leaving the row. */
template <int DT>
static __device__ __forceinline__ typename gpu_elem<DT>::raw
gpu_padded_raw(const typename gpu_elem<DT>::raw *row, int64_t length, int mode, int64_t pos) {
    int64_t src = dwconv_source_index(mode, pos, length);
    return src >= 0 && src < length ? row[src] : (typename gpu_elem<DT>::raw)0;
}

/* Stores out[first, last) of one output vector at y[at ..]: a 16-byte store when the
 * vector is whole and at is vector-aligned (the caller guarantees the alignment for
 * whole vectors), else one element at a time. */
template <int DT>
static __device__ __forceinline__ void gpu_store_elements(void *y, int64_t at, const float *out,
                                                          int first, int last) {
    typedef typename gpu_elem<DT>::raw raw;
#pragma unroll /* constant indices keep out[] in registers */
    for (int i = 0; i < gpu_vec_width<DT>::value; i++)
        if (i >= first && i < last) ((raw *)y)[at + i] = gpu_elem<DT>::narrow(out[i]);
}

template <int DT>
static __device__ __forceinline__ void gpu_store_vector(void *y, int64_t at, const float *out,
                                                        int first, int last) {
    if (first == 0 && last == gpu_vec_width<DT>::value)
        gpu_store16((typename gpu_elem<DT>::raw *)y + at, gpu_vec_narrow<DT>(out));
    else
        gpu_store_elements<DT>(y, at, out, first, last);
}

/* Element offset of a pointer modulo the vector width: how far it is past a 16-byte
 * boundary, in elements (pointers are element-aligned; gpu_module.cu checks that). */
template <int DT>
static __device__ __forceinline__ int gpu_misalignment(const void *p, int64_t at) {
    const uint64_t elem = (uint64_t)(uintptr_t)p / sizeof(typename gpu_elem<DT>::raw);
    return (int)((elem + (uint64_t)at) % (uint64_t)gpu_vec_width<DT>::value);
}

#endif /* DWCONV_GPU_ELEMENTS_CUH */
