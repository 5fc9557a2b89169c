/*
 * The weight and bias sums' second half, in the contract's order (dwconv_grad_tree):
 * ROWS = false combines each row's tile partials (each tile's value is already the
 * tree of its aligned group of chunks) into the row sum; ROWS = true combines each
 * (c, k)'s B row sums and stores dweight[c, k] (k < K) or dbias[c] (k == K) in the
 * gradient dtype. Both reduce segments of n floats C apart (gpu_bwd_args says the
 * layout): segment s = (k B + b) C + c, resp. k C + c, starts at word
 * (s - s mod C) n + s mod C.
 *
 * A segment gets a power of two of threads (a->reduce_threads[ROWS]); thread r sums
 * the aligned group [r G, (r + 1) G) of its segment (G a power of two) with the
 * running stack, which is that group's subtree of the whole tree; the first thread
 * then combines the group sums the same way. The grouping never changes the bits.
 *
 * Grid: x, strided over the segments, blockDim.x / reduce_threads segments a block.
 */
#ifndef DWCONV_GPU_KERNEL_BWD_REDUCE_CUH
#define DWCONV_GPU_KERNEL_BWD_REDUCE_CUH

#include "gpu_bwd_common.cuh"
#include "gpu_elements.cuh"

#define GPU_BWD_REDUCE_THREADS 128
#define GPU_BWD_REDUCE_BATCH 8 /* loads a thread has in flight */

/* Element i of base, in the dtype the call chose at run time, set to v rounded. */
static __device__ __forceinline__ void gpu_store(int dtype, void *base, int64_t i, float v) {
    if (dtype == DWCONV_F32) ((uint32_t *)base)[i] = gpu_elem<DWCONV_F32>::narrow(v);
    else if (dtype == DWCONV_F16) ((uint16_t *)base)[i] = gpu_elem<DWCONV_F16>::narrow(v);
    else ((uint16_t *)base)[i] = gpu_elem<DWCONV_BF16>::narrow(v);
}

template <bool ROWS>
__global__ __launch_bounds__(GPU_BWD_REDUCE_THREADS) void dwconv_bwd_reduce_kernel(gpu_bwd_args a) {
    const int64_t K = a.kernel_size, n = ROWS ? a.batch : a.tiles;
    const int64_t segments = a.channels * (K + 1) * (ROWS ? 1 : a.batch);
    const float *in = ROWS ? a.rows : a.part;
    const int T = blockDim.x, tid = threadIdx.x, ST = a.reduce_threads[ROWS];
    const int r = tid % ST, per_block = T / ST;
    const int64_t G = gpu_pow2_at_least((n + ST - 1) / ST), groups = (n + G - 1) / G;
    float *group_sum = (float *)gpu_shared_base();
    for (int64_t base = (int64_t)blockIdx.x * per_block; base < segments;
         base += (int64_t)gridDim.x * per_block) {
        const int64_t s = base + tid / ST;
        gpu_tree_stack stack;
        if (s < segments) {
            const int64_t C = a.channels;
            const float *v = in + (s - s % C) * n + s % C; /* value e at v[e C] */
            const int64_t end = gpu_min64(n, (r + 1) * G);
            for (int64_t e = r * G; e < end; e += GPU_BWD_REDUCE_BATCH) {
                float batch[GPU_BWD_REDUCE_BATCH];
#pragma unroll
                for (int q = 0; q < GPU_BWD_REDUCE_BATCH; q++)
                    if (e + q < end) batch[q] = v[(e + q) * C];
#pragma unroll
                for (int q = 0; q < GPU_BWD_REDUCE_BATCH; q++)
                    if (e + q < end) stack.push(batch[q]);
            }
        }
        __syncthreads(); /* the previous segments' group sums are read */
        group_sum[tid] = stack.total();
        __syncthreads();
        if (s >= segments || r != 0) continue;
        gpu_tree_stack all;
        for (int64_t q = 0; q < groups; q++) all.push(group_sum[tid + q]);
        const float total = all.total();
        if (!ROWS) {
            a.rows[s] = total;
            continue;
        }
        const int64_t c = s % a.channels, k = s / a.channels;
        if (k < K && a.dweight) gpu_store(a.grad_dtype, a.dweight, c * K + k, total);
        if (k == K && a.dbias) gpu_store(a.grad_dtype, a.dbias, c, total);
    }
}

#endif /* DWCONV_GPU_KERNEL_BWD_REDUCE_CUH */
