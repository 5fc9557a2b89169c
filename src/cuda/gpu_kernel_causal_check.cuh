/*
 * The causal operations' index arrays checked where they live, by the rules of
 * src/common/dwconv_index_rules.h (the cpu checks the same rules on the host). A call
 * whose indices break a rule writes nothing and records the first violation, in the
 * order the reference checks them, in the context's mapped record; the next
 * synchronize reports it.
 *
 * Two ways to know, before writing, that the whole call is clean:
 *   - the check kernel tests every rule over a grid (one item per thread: an entry,
 *     or a pair of slots) and sets a verdict in device memory that the kernels after
 *     it read first (cleared by the module before it);
 *   - a small decode (B <= the block's threads) checks inside every block: each
 *     thread takes one entry, the slots are staged in shared memory and the threads
 *     share the comparisons of every pair, so one launch suffices.
 */
#ifndef DWCONV_GPU_KERNEL_CAUSAL_CHECK_CUH
#define DWCONV_GPU_KERNEL_CAUSAL_CHECK_CUH

#include "gpu_causal_args.cuh"
#include "gpu_elements.cuh"
#include "gpu_families.h" /* GPU_HD */

/* Items of the check: cu_seqlens entries, then per-sequence entries (slot range,
 * cache_seqlens sign), then ordered pairs of slots (b, e) of which e > b count. */
GPU_HD int64_t gpu_causal_check_items(const gpu_causal_args *a) {
    const int64_t B = a->batch;
    return (a->cu_seqlens ? a->state_count + 1 : 0) +
           (a->state_indices || a->cache_seqlens ? B : 0) + (a->state_indices ? B * B : 0);
}

/* Whether item q breaks a rule. */
static __device__ __forceinline__ bool gpu_causal_item_bad(const gpu_causal_args &a, int64_t q) {
    const int64_t B = a.batch;
    if (a.cu_seqlens) {
        if (q <= a.state_count)
            return dwconv_check_cu_seqlens(a.cu_seqlens, q, a.state_count, a.length).code != 0;
        q -= a.state_count + 1;
    }
    if (a.state_indices || a.cache_seqlens) {
        if (q < B)
            return (a.state_indices && dwconv_check_slot(a.state_indices, q, a.state_count).code) ||
                   (a.cache_seqlens && dwconv_check_seqlen(a.cache_seqlens, q).code);
        q -= B;
    }
    if (!a.state_indices) return false;
    const int64_t b = q / B, e = q % B;
    return e > b && a.state_indices[b] >= 0 && a.state_indices[b] == a.state_indices[e];
}

/* The first violation in the reference's order (src/reference/causal.c), into the
 * record unless an earlier call's is still there. One thread, on the failure path. */
static __device__ void gpu_causal_record(const gpu_causal_args &a) {
    const int64_t B = a.batch, N = a.state_count;
    const int32_t *cu = a.cu_seqlens, *slot = a.state_indices, *seen = a.cache_seqlens;
    dwconv_index_violation v = {DWCONV_INDEX_OK, 0, 0, 0};
    for (int64_t n = 0; cu && n <= N && !v.code; n++) v = dwconv_check_cu_seqlens(cu, n, N, a.length);
    for (int64_t b = 0; slot && b < B && !v.code; b++) v = dwconv_check_slot(slot, b, N);
    for (int64_t b = 0; slot && b < B && !v.code; b++)
        for (int64_t e = b + 1; slot[b] >= 0 && e < B && !v.code; e++)
            if (slot[e] == slot[b]) v.code = DWCONV_INDEX_SLOT_TWICE, v.value = slot[b], v.at = e, v.other = b;
    for (int64_t b = 0; seen && b < B && !v.code; b++) v = dwconv_check_seqlen(seen, b);
    volatile dwconv_index_violation *r = a.violation;
    if (!v.code || r->code) return;
    r->value = v.value, r->at = v.at, r->other = v.other;
    r->code = v.code; /* last: the host reads it after the stream's work is done */
}

/* The first block's first thread records; every kernel that sees a bad verdict or a
 * bad block check calls this and returns before writing anything. */
static __device__ __forceinline__ void gpu_causal_refuse(const gpu_causal_args &a) {
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0)
        gpu_causal_record(a);
}

/* Whether the check kernel found the call's indices bad (no check ran: clean). */
static __device__ __forceinline__ bool gpu_causal_verdict_bad(const gpu_causal_args &a) {
    return a.verdict && *(const volatile int *)a.verdict != 0;
}

/* Every item over a grid; a bad one sets the verdict (every writer writes 1). */
__global__ void dwconv_causal_check_kernel(gpu_causal_args a) {
    const int64_t items = gpu_causal_check_items(&a);
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < items;
         q += (int64_t)gridDim.x * blockDim.x)
        if (gpu_causal_item_bad(a, q)) *(volatile int *)a.verdict = 1;
}

/* Shared memory of the in-block check: a flag and the B slots. */
GPU_HD size_t gpu_causal_block_check_smem(int64_t batch) { return (size_t)(batch + 4) * 4; }

/* The decode's in-block check (batch <= blockDim.x): every thread of the block calls
 * it and gets the same answer. */
static __device__ bool gpu_causal_block_bad(const gpu_causal_args &a) {
    int *flag = (int *)gpu_shared_base(), *slots = flag + 1;
    const int64_t b = threadIdx.x, B = a.batch;
    if (b == 0) *flag = 0;
    bool bad = false;
    if (b < B) {
        bad = gpu_causal_item_bad(a, b); /* items [0, B): the per-sequence rules */
        if (a.state_indices) slots[b] = a.state_indices[b];
    }
    __syncthreads();
    /* every pair once, spread evenly: a pair of places d apart around the circle of B
     * (d <= B / 2 one way or the other) is taken by the first of them; the block's
     * lanes = threads / B threads per place split the distances */
    const int n = (int)B, lanes = (int)blockDim.x / n, t = (int)threadIdx.x;
    if (a.state_indices && t < lanes * n && slots[t % n] >= 0)
        for (int i = t % n, d = 1 + t / n; d <= n / 2; d += lanes) {
            const int e = i + d < n ? i + d : i + d - n;
            bad |= slots[e] == slots[i];
        }
    if (bad) *flag = 1;
    __syncthreads();
    return *flag != 0;
}

#endif /* DWCONV_GPU_KERNEL_CAUSAL_CHECK_CUH */
