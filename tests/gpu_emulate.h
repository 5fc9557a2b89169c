/*
 * Runs the GPU kernels' own source (src/cuda/gpu_*.cuh) on the CPU, so that their
 * indexing is checked against the cpu backend where no GPU exists (CI, this project's
 * build machines).
 *
 * A block's threads are ucontext coroutines on one OS thread: each runs until it
 * reaches __syncthreads, __syncwarp or returns, then the next. Between two barriers the
 * threads run in ascending order, then descending, then ascending... so a
 * shared-memory read that lacks a barrier sees stale data in one of the orders. A warp
 * barrier (__syncwarp: the 32 threads of threadIdx.x / 32, GPU_WARP) releases its warp
 * once every thread of it waits there; a warp whose threads wait at different kinds of
 * barrier, or with some of them finished, is reported. Shared memory is
 * poisoned (all bits set: NaN in every dtype) before each block. A barrier that some
 * threads skip is reported. Blocks (a 3D grid) run one after another.
 *
 * Shared memory is exactly the launch's size, bounded: even blocks get it flush
 * against an inaccessible page above, odd blocks flush against one below, so an
 * access past either end faults (reported, exit status 1), and the few bytes between
 * it and the page on its other side hold canaries checked after each block.
 *
 * Include this first, then src/cuda/gpu_kernels.cuh.
 */
#ifndef DWCONV_GPU_EMULATE_H
#define DWCONV_GPU_EMULATE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__has_include)
#if __has_include(<ucontext.h>)
#define GPU_EMULATE_AVAILABLE 1
#endif
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct dim3 {
    unsigned x, y, z;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct alignas(16) float4 {
    float x, y, z, w;
};

extern dim3 threadIdx, blockIdx, blockDim, gridDim;
void __syncthreads();
void __syncwarp();
unsigned char *gpu_emulated_shared();
#define DWCONV_GPU_SHARED_BASE gpu_emulated_shared

#include <functional>

#include "gpu_args.cuh"

/* Runs one launch to completion: body is the kernel called with its arguments (any
 * kernel, any argument struct: [&] { kernel(args); }). Returns 0, or -1 after
 * printing why (a barrier not reached by every thread of a block, a write beside the
 * shared memory, or no ucontext on this platform). An access to inaccessible memory
 * (beyond the shared memory, or a buffer the caller guarded with
 * gpu_emulate_guarded) ends the process with a message and exit status 1. */
int gpu_emulate_launch(const std::function<void()> &body, const int64_t grid[3], int threads,
                       size_t smem);

/* Host memory for a buffer of `bytes` that starts `offset` bytes (< 16) past a 16-byte
 * boundary and ends at most 15 bytes before an inaccessible page; `before` bytes
 * below it are accessible too (guard bytes the caller may fill and check). Freed by
 * gpu_emulate_unguard. NULL if the system refuses. */
void *gpu_emulate_guarded(size_t bytes, size_t offset, size_t before);
void gpu_emulate_unguard(void *p);

/* The emulated suites' buffers: gpu_emulate_guarded memory for `bytes` (at least one
 * allocated) at `offset`, freed with the object. guard > 0 (an output): `guard` bytes
 * before and after it, the whole region poisoned (test_poison), so that a write beside
 * it shows; 0 (an input): none. at is NULL if the system refused. */
struct gpu_emulate_buffer {
    unsigned char *at = NULL;
    size_t bytes = 0, guard = 0;
    gpu_emulate_buffer(size_t n, size_t offset, size_t guard_bytes);
    ~gpu_emulate_buffer() { gpu_emulate_unguard(at); }
    gpu_emulate_buffer(const gpu_emulate_buffer &) = delete;
    gpu_emulate_buffer &operator=(const gpu_emulate_buffer &) = delete;
    /* the whole region, guards included */
    unsigned char *region() const { return at - guard; }
    size_t region_bytes() const { return bytes + 2 * guard; }
};

/* The forward kernels' launch. */
static inline int gpu_emulate(gpu_kernel_fn kernel, const int64_t grid[3], int threads,
                              size_t smem, gpu_conv_args args) {
    return gpu_emulate_launch([kernel, args] { kernel(args); }, grid, threads, smem);
}

#endif
