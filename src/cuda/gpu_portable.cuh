/*
 * What differs between the compilers that build the kernels: nvcc, hipcc, and the
 * host compiler of tests/gpu_emulate.h (which runs the kernels on the CPU). Only
 * storage conversions and the dynamic shared memory live here; everything else is
 * plain CUDA that hipcc accepts as it is.
 */
#ifndef DWCONV_GPU_PORTABLE_CUH
#define DWCONV_GPU_PORTABLE_CUH

#include <stdint.h>

#include "dwconv_numerics.h"

/* A device function kept out of line: a rare path called from unrolled loops. */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define GPU_NOINLINE __noinline__
#else
#define GPU_NOINLINE __attribute__((noinline))
#endif

/* The dynamic shared memory of a block, 16-byte aligned. One declaration for every
 * kernel: nvcc rejects extern __shared__ arrays of different types under one name. */
#ifndef DWCONV_GPU_SHARED_BASE
static __device__ __forceinline__ unsigned char *gpu_shared_base(void) {
    extern __shared__ uint4 gpu_shared_memory[];
    return (unsigned char *)gpu_shared_memory;
}
#else
static inline unsigned char *gpu_shared_base(void) { return DWCONV_GPU_SHARED_BASE(); }
#endif

/* The most blocks an SM holds, for launch bounds: 32 on sm_80 and sm_90, 16 on the
 * other NVIDIA targets (Turing, consumer Ampere, Ada: one-warp blocks run at most 16
 * warps an SM there). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != 800 && __CUDA_ARCH__ < 900
#define GPU_SM_BLOCKS 16
#else
#define GPU_SM_BLOCKS 32
#endif
/* n blocks an SM for launch bounds, or as many as the SM holds where that is fewer. */
#define GPU_SM_BLOCKS_AT_MOST(n) ((n) < GPU_SM_BLOCKS ? (n) : GPU_SM_BLOCKS)
/* Launch bounds: at most `threads` a block and, on NVIDIA, at least `blocks` resident
 * an SM (ptxas sizes the registers to fit). hip-clang reads a second argument as waves
 * per execution unit, another quantity: 16 there capped gfx1030's registers at 64 and
 * spilled the nlc backward's K = 8 instances (288-316 bytes a lane). The NVIDIA-tuned
 * counts mean nothing on AMD, so HIP builds get the thread bound only. */
#if defined(DWCONV_GPU_IS_HIP)
#define GPU_LAUNCH_BOUNDS(threads, blocks) __launch_bounds__(threads)
#else
#define GPU_LAUNCH_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)
#endif

/* Storage conversions. On NVIDIA GPUs the conversion instructions give exactly the
 * bits of the shared functions in dwconv_numerics.h for every non-NaN input (round
 * to nearest even, subnormals kept, overflow to infinity; bench/gpu/conversions.cu
 * checks all 2^32 floats); a NaN becomes the canonical NaN there, as the GPU's fma
 * already makes of any NaN. Elsewhere (HIP, the emulator) the shared functions run. */
static __device__ __forceinline__ float gpu_f16_to_f32(uint16_t h) {
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#else
    return dwconv_f16_to_f32(h);
#endif
}

static __device__ __forceinline__ uint16_t gpu_f32_to_f16(float f) {
#if defined(__CUDA_ARCH__)
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    return dwconv_f32_to_f16(f);
#endif
}

static __device__ __forceinline__ uint16_t gpu_f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    return dwconv_f32_to_bf16(f);
#endif
}

/* Two floats rounded to bf16 (bf16 true) or f16 and packed (lo in the low half): one
 * instruction for both on sm_80 and later (cvt.rn.{bf16,f16}x2.f32 rounds each half as
 * the single conversion does; bench/gpu/conversions.cu checks the pairs too), the
 * single conversions elsewhere. */
static __device__ __forceinline__ uint32_t gpu_f32x2_narrow(bool bf16, float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t h;
    if (bf16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(hi), "f"(lo));
    return h;
#else
    return bf16 ? (uint32_t)gpu_f32_to_bf16(lo) | ((uint32_t)gpu_f32_to_bf16(hi) << 16)
                : (uint32_t)gpu_f32_to_f16(lo) | ((uint32_t)gpu_f32_to_f16(hi) << 16);
#endif
}

/* RN(1/d), the correctly rounded reciprocal, for d and 1/d normal: silu's yr
 * (dwconv_silu_hot, d in [1, 2^125)). On NVIDIA GPUs the approximate reciprocal
 * (MUFU.RCP) and one Newton step with fma, e = 1 - d r (exact), y = r + r e: the fast
 * path of __frcp_rn without its range check and slow-path call. That y is RN(1/d) is
 * not taken on trust: bench/gpu/silu_exhaustive.cu checks every float d in [1, 2^126)
 * on the device, and the silu of every float against the scalar function. Elsewhere
 * (HIP, the emulator, host code) the IEEE division, equal by definition. */
static __device__ __forceinline__ float gpu_rcp_rn(float d) {
#if defined(__CUDA_ARCH__)
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    return __fmaf_rn(r, __fmaf_rn(-d, r, 1.0f), r);
#else
    return 1.0f / d;
#endif
}

/* The barrier of one logical warp (GPU_WARP lanes; gpu_families.h): its shared-memory
 * writes before it are seen by its lanes' reads after it. Every lane of the warp
 * reaches it alike. An AMD wavefront runs its lanes in lockstep, so there it only
 * orders memory and keeps the compiler from moving accesses across it (for the whole
 * wavefront: both logical warps of a 64-wide one). */
static __device__ __forceinline__ void gpu_sync_warp(void) {
#if defined(__HIP_DEVICE_COMPILE__)
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#elif defined(__HIPCC__)
    /* hipcc's host pass: never called */
#else
    __syncwarp();
#endif
}

/* 16-byte global loads and stores. nvcc splits a plain uint4 store into four when
 * the stored values come from branches (seen with the activations), and __stwb
 * becomes a "strong" store; the PTX below is one plain 16-byte store. x is never written by a forward (y overlaps nothing), so
 * the read-only load path is safe. */
static __device__ __forceinline__ uint4 gpu_load16(const void *p) {
#if defined(__CUDA_ARCH__)
    return __ldg((const uint4 *)p);
#else
    return *(const uint4 *)p;
#endif
}

static __device__ __forceinline__ void gpu_store16(void *p, uint4 v) {
#if defined(__CUDA_ARCH__)
    /* no "memory" clobber: nothing in a kernel reads y back, so loads may pass it */
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w));
#else
    *(uint4 *)p = v;
#endif
}

/* A hint: start moving the line holding p into L1 (no-op where there is no such
 * instruction). */
static __device__ __forceinline__ void gpu_prefetch_l1(const void *p) {
#if defined(__CUDA_ARCH__)
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
#else
    (void)p;
#endif
}

/* Asynchronous copies from global to shared memory: cp.async on NVIDIA sm_80 and
 * later, which holds no register while in flight (so a warp keeps a whole tile in
 * flight); elsewhere plain copies, and the waits are no-ops.
 * gpu_copy16_async: 16 bytes, both sides 16-byte aligned; copies issued since the last
 * gpu_copy_commit form a group, and gpu_copy_wait_but_newest waits for all of the
 * thread's groups but the newest. gpu_copy4_async: 4 bytes; gpu_copy_wait makes all of
 * the thread's copies complete. */
static __device__ __forceinline__ void gpu_copy16_async(void *shared_dst, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(shared_dst)),
                 "l"(src)
                 : "memory");
#else
    *(uint4 *)shared_dst = *(const uint4 *)src;
#endif
}
static __device__ __forceinline__ void gpu_copy4_async(void *shared_dst, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(shared_dst)),
                 "l"(src)
                 : "memory");
#else
    *(uint32_t *)shared_dst = *(const uint32_t *)src;
#endif
}
static __device__ __forceinline__ void gpu_copy_commit(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
static __device__ __forceinline__ void gpu_copy_wait_but_newest(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 1;" ::: "memory");
#endif
}
static __device__ __forceinline__ void gpu_copy_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

static __device__ __forceinline__ int64_t gpu_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static __device__ __forceinline__ int64_t gpu_max64(int64_t a, int64_t b) { return a > b ? a : b; }

#endif /* DWCONV_GPU_PORTABLE_CUH */
