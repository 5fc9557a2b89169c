/*
 * The GPU kernels, one source for CUDA (nvcc) and HIP (hipcc, through
 * src/hip/hip_compat.h). Nothing here may assume a warp size: the physical width (32
 * on NVIDIA, 64 on AMD) is never baked into a mask, a shuffle or an index. Threads of
 * a block meet at __syncthreads, or, in blocks of one logical warp of GPU_WARP lanes
 * (lean, lattice, tile on short rows; the backward's warp and nlc), at gpu_sync_warp.
 *
 * Every kernel follows the numerical contract (src/common/dwconv_numerics.h): acc
 * starts at the bias, one fmaf per tap in k order, activation, then rounding.
 *
 * The same text also compiles as plain C++ for tests/gpu_emulate.h, which runs the
 * kernels on the CPU in `make check`: keep compiler-specific code (intrinsics, inline
 * PTX) in gpu_portable.cuh, behind a plain fallback.
 *
 *   gpu_families.h              the registry of the forward's families: traits, and
 *                               when each applies (plain C: the tests read it too)
 *   gpu_kernel_generic.cuh      one thread per output, anything (the fallback)
 *   gpu_kernel_ncl_lean.cuh     channel-first, small K: whole vectors, taps in registers
 *   gpu_kernel_ncl_tile.cuh     channel-first, any stride/dilation/K: shared-memory tiles
 *   gpu_kernel_ncl_lattice.cuh  channel-first, large K, dilation == stride: FMA-bound
 *   gpu_kernel_nlc.cuh          channel-last, anything: 16-byte vectors across channels
 *   gpu_kernel_nlc_slide.cuh    channel-last, stride 1, small K: a window of rows in
 *                               registers (a 16-byte vector or one channel a thread)
 *   gpu_kernel_nlc_column.cuh   channel-last, stride 1, dilation 1, large K: one channel
 *                               per thread, register-blocked over positions and taps
 *   gpu_carried.cuh             what the families do for the causal forward: skip on bad
 *                               packed offsets; lean and slide also take carried states
 *   gpu_launch.cuh              which family, and its geometry
 *   gpu_dispatch.cuh            the template instance to launch
 *
 * The causal operations (gpu_op_causal.cuh) add, through gpu_causal_plan.cuh:
 *   gpu_kernel_causal_check.cuh    device-side index checks and the violation record
 *   gpu_kernel_causal_forward.cuh  outputs that read states / packed sequences; final states
 *   gpu_kernel_causal_update.cuh   the decode update, one thread per (sequence, channel)
 *
 * The backward (gpu_bwd_plan.cuh says which kernels run, in which order):
 *   gpu_kernel_bwd_ncl_warp.cuh channel-first rows, K <= 8 at stride and dilation 1
 *                               and the forward lean's stepped K (stride 2, dilated):
 *                               blocks of one warp, a lane per chunk of 64 outputs
 *                               (g, its partial sums, dx), the tile's tree
 *   gpu_kernel_bwd_ncl_wide.cuh the warp kernel's tiles for K 9 .. 64 at stride and dilation 1:
 *                               register blocks over per-lane shared columns
 *   gpu_kernel_bwd_ncl_tile.cuh channel-first rows: a block per tile of up to 32 chunks
 *                               of 64 outputs, staged in shared memory: g, the chunk
 *                               partial sums and their tree, dx of the tile's inputs
 *   gpu_kernel_bwd_nlc.cuh      channel-last, stride 1, dilation 1, K <= 8: a warp per
 *                               (chunk, 32 channels), staged, a lane per channel
 *   gpu_kernel_bwd_chunk.cuh    anything else: a thread per chunk of 64 outputs: g, the
 *                               partial sums of dweight and dbias, dx of the inputs it
 *                               last reads
 *   gpu_kernel_bwd_gather.cuh   dx of single inputs (row ends under padding modes, the
 *                               causal backward's states)
 *   gpu_kernel_bwd_reduce.cuh   the partial sums into dweight and dbias, tree order
 */
#ifndef DWCONV_GPU_KERNELS_CUH
#define DWCONV_GPU_KERNELS_CUH

#include "gpu_bwd_plan.cuh"
#include "gpu_dispatch.cuh"

#endif /* DWCONV_GPU_KERNELS_CUH */
