/*
 * Proves on the device that the conversion instructions the CUDA kernels use
 * (src/cuda/gpu_portable.cuh) give the bits of the shared software conversions
 * (src/common/dwconv_numerics.h): every one of the 2^32 floats through f32 -> f16
 * and f32 -> bf16, singly and in both halves of the packed pair conversions (paired
 * with another float), every one of the 2^16 halves through f16 -> f32. NaN inputs are
 * counted apart (the instructions return the canonical NaN). Exit status 1 on any
 * non-NaN difference.
 *   nvcc -arch=sm_90 -O3 --fmad=false -Isrc/common -Isrc/cuda bench/gpu/conversions.cu
 */
#include <stdio.h>

#include "gpu_portable.cuh"

struct tally {
    unsigned long long differ, nan_differ;
    unsigned first; /* first differing non-NaN input bits, or 0xffffffff */
};

/* The packed pair of lo and hi against the two shared conversions. */
static __device__ bool pair_differs(uint32_t packed, uint16_t lo, uint16_t hi) {
    return packed != ((uint32_t)lo | (uint32_t)hi << 16);
}

__global__ void narrow_all(tally *t16, tally *tb16) {
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < (1ull << 32); i += step) {
        const float f = dwconv_f32_from_bits((uint32_t)i);
        const bool nan = f != f;
        const float g = dwconv_f32_from_bits((uint32_t)i ^ 0x5a5a5a5au); /* a partner */
        const bool pair_nan = nan || g != g;
        if (pair_differs(gpu_f32x2_narrow(false, f, g), dwconv_f32_to_f16(f), dwconv_f32_to_f16(g)) ||
            pair_differs(gpu_f32x2_narrow(false, g, f), dwconv_f32_to_f16(g), dwconv_f32_to_f16(f))) {
            atomicAdd(pair_nan ? &t16[1].nan_differ : &t16[1].differ, 1ull);
            if (!pair_nan) atomicMin(&t16[1].first, (unsigned)i);
        }
        if (pair_differs(gpu_f32x2_narrow(true, f, g), dwconv_f32_to_bf16(f), dwconv_f32_to_bf16(g)) ||
            pair_differs(gpu_f32x2_narrow(true, g, f), dwconv_f32_to_bf16(g), dwconv_f32_to_bf16(f))) {
            atomicAdd(pair_nan ? &tb16[1].nan_differ : &tb16[1].differ, 1ull);
            if (!pair_nan) atomicMin(&tb16[1].first, (unsigned)i);
        }
        if (gpu_f32_to_f16(f) != dwconv_f32_to_f16(f)) {
            atomicAdd(nan ? &t16->nan_differ : &t16->differ, 1ull);
            if (!nan) atomicMin(&t16->first, (unsigned)i);
        }
        if (gpu_f32_to_bf16(f) != dwconv_f32_to_bf16(f)) {
            atomicAdd(nan ? &tb16->nan_differ : &tb16->differ, 1ull);
            if (!nan) atomicMin(&tb16->first, (unsigned)i);
        }
    }
}

__global__ void widen_all(tally *t) {
    const unsigned h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= 65536) return;
    const float hw = gpu_f16_to_f32((uint16_t)h), sw = dwconv_f16_to_f32((uint16_t)h);
    if (dwconv_f32_bits(hw) != dwconv_f32_bits(sw)) {
        const bool nan = sw != sw;
        atomicAdd(nan ? &t->nan_differ : &t->differ, 1ull);
        if (!nan) atomicMin(&t->first, h);
    }
}

static int report(const char *what, const tally *t) {
    printf("%-15s %llu differences on non-NaN inputs", what, t->differ);
    if (t->differ) printf(" (first input 0x%08x)", t->first);
    printf(", %llu on NaN inputs\n", t->nan_differ);
    return t->differ != 0;
}

int main(void) {
    tally host[5], *t = NULL; /* f16 single, pair; bf16 single, pair; f16 -> f32 */
    for (int i = 0; i < 5; i++) host[i].differ = host[i].nan_differ = 0, host[i].first = 0xffffffffu;
    if (cudaMalloc(&t, sizeof host) != cudaSuccess ||
        cudaMemcpy(t, host, sizeof host, cudaMemcpyHostToDevice) != cudaSuccess) {
        printf("conversions: no device\n");
        return 2;
    }
    narrow_all<<<132 * 16, 256>>>(&t[0], &t[2]);
    widen_all<<<256, 256>>>(&t[4]);
    if (cudaMemcpy(host, t, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) {
        printf("conversions: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    cudaFree(t);
    return report("f32 -> f16", &host[0]) | report("f32x2 -> f16x2", &host[1]) |
           report("f32 -> bf16", &host[2]) | report("f32x2 -> bf16x2", &host[3]) |
           report("f16 -> f32", &host[4]);
}
