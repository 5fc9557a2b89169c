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

static __device__ __forceinline__ int64_t gpu_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static __device__ __forceinline__ int64_t gpu_max64(int64_t a, int64_t b) { return a > b ? a : b; }

#endif /* DWCONV_GPU_PORTABLE_CUH */
