/*
 * A block's work as one stream of (row, tile) items in row-major order, rows being the
 * (b, c) rows of an NCL tensor: a block takes tiles_per_block consecutive items, so the
 * next item's loads can be in flight while the current one is computed even when the
 * rows are one tile long.
 */
#ifndef DWCONV_GPU_ITEMS_CUH
#define DWCONV_GPU_ITEMS_CUH

#include "gpu_args.cuh"
#include "gpu_portable.cuh"

typedef struct gpu_item {
    int64_t index, row, tile;
} gpu_item;

static __device__ __forceinline__ gpu_item gpu_item_at(int64_t index, int64_t tiles_per_row) {
    gpu_item it;
    it.index = index;
    it.row = index / tiles_per_row; /* once per block */
    it.tile = index - it.row * tiles_per_row;
    return it;
}

static __device__ __forceinline__ gpu_item gpu_item_next(gpu_item it, int64_t tiles_per_row) {
    it.index++;
    if (++it.tile == tiles_per_row) it.tile = 0, it.row++;
    return it;
}

/* The channel of a row; 32-bit division where it fits (the usual case). */
static __device__ __forceinline__ int64_t gpu_row_channel(int64_t row, int64_t channels) {
    if (row <= 0xffffffffll && channels <= 0xffffffffll) return (uint32_t)row % (uint32_t)channels;
    return row % channels;
}

#endif /* DWCONV_GPU_ITEMS_CUH */
