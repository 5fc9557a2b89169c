/*
 * Which kernel runs a descriptor, and its launch geometry: plain host code, shared by
 * the module and the CPU emulator of the tests. Every fast kernel covers every
 * option of its layout; the rules below only pick the fastest one that fits, and
 * anything none fits (a window too large for shared memory) runs the general kernel.
 */
#ifndef DWCONV_GPU_LAUNCH_CUH
#define DWCONV_GPU_LAUNCH_CUH

#include <stdint.h>
#include <string.h>

#include "dwconv_module.h"
#include "gpu_kernel_generic.cuh"
#include "gpu_kernel_ncl_lattice.cuh"
#include "gpu_kernel_ncl_lean.cuh"
#include "gpu_kernel_ncl_tile.cuh"
#include "gpu_kernel_ncl_vector.cuh"
#include "gpu_kernel_nlc.cuh"
#include "gpu_kernel_nlc_slide.cuh"

enum gpu_kernel_id {
    GPU_KERNEL_AUTO = 0,
    GPU_KERNEL_GENERIC,
    GPU_KERNEL_NCL_VECTOR,
    GPU_KERNEL_NCL_TILE,
    GPU_KERNEL_NCL_LATTICE,
    GPU_KERNEL_NLC,
    GPU_KERNEL_NCL_LEAN,
    GPU_KERNEL_NLC_SLIDE,
    GPU_KERNEL_COUNT
};

/* Names for DWCONV_GPU_KERNEL, which forces a kernel where it applies (tests, bench). */
static const char *const gpu_kernel_names[GPU_KERNEL_COUNT] = {
    "auto", "generic", "vector", "tile", "lattice", "nlc", "lean", "slide"};

/* Shared memory a block may use without opting in on any GPU we build for. */
#define GPU_SMEM_LIMIT (48 * 1024)
/* Grid x stays far below HIP's cap of 2^32 threads per dimension. */
#define GPU_GRID_X ((int64_t)1 << 22)

/* Variables, not constants, so that the emulated tests can shrink them and reach the
 * kernels' loops over rows and over several tiles with small problems. */
static struct {
    int64_t grid_yz;       /* grid y and z: 65535 everywhere; kernels stride over more */
    int64_t enough_blocks; /* blocks that fill the GPU before blocks walk several tiles */
    int64_t grid_x;        /* grid x of the lean and slide kernels, which stride over more */
    int64_t enough_threads; /* slide: runs grow longer until about this many threads */
} gpu_limits = {65535, 2048, GPU_GRID_X, (int64_t)1 << 18};

typedef struct gpu_launch {
    int kernel; /* enum gpu_kernel_id */
    int64_t grid[3];
    int threads;
    size_t smem;
} gpu_launch;

static int gpu_dtype_size(int dtype) { return dtype == DWCONV_F32 ? 4 : 2; }
static int64_t gpu_div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t gpu_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* x: chunks of a->tiles_per_row tiles, at most `most` tiles per block, fewer while
 * that leaves the GPU short of blocks; y, z as given (clamped; kernels stride). */
static void gpu_set_grid(gpu_conv_args *a, gpu_launch *l, int64_t most, int64_t y, int64_t z) {
    const int64_t total = a->tiles_per_row * y * z;
    a->tiles_per_block =
        gpu_clamp(total / gpu_limits.enough_blocks, 1, gpu_clamp(most, 1, a->tiles_per_row));
    if (gpu_div_up(a->tiles_per_row, a->tiles_per_block) > GPU_GRID_X)
        a->tiles_per_block = gpu_div_up(a->tiles_per_row, GPU_GRID_X);
    l->grid[0] = gpu_div_up(a->tiles_per_row, a->tiles_per_block);
    l->grid[1] = gpu_clamp(y, 1, gpu_limits.grid_yz);
    l->grid[2] = gpu_clamp(z, 1, gpu_limits.grid_yz);
}

/* Outputs before a row's first vector boundary of y that a tile starting on that boundary
 * covers: exact when every row starts at the same offset, else the most (V - 1). */
static int64_t gpu_row_head(const gpu_conv_args *a) {
    const int V = 16 / gpu_dtype_size(a->dtype);
    return a->output_length % V == 0 ? (int64_t)((uintptr_t)a->y / gpu_dtype_size(a->dtype) % V)
                                     : V - 1;
}

/* Output tiles of a row whose tiles start on y's vector boundaries. */
static int64_t gpu_aligned_tiles(const gpu_conv_args *a, int64_t outputs, int64_t tile) {
    return (outputs - 1 + gpu_row_head(a)) / tile + 1;
}

/* NLC: threads across a position's channel vectors (a power of two up to a warp, so a
 * warp's loads stay whole lines), and whether x and y rows start on 16-byte boundaries. */
static int gpu_nlc_channel_threads(gpu_conv_args *a, int V) {
    const int64_t vectors = gpu_div_up(a->channels, V);
    int tc = 1;
    while (tc < 32 && tc < vectors) tc *= 2;
    a->channel_threads = tc;
    a->vector_x = a->channels % V == 0 && (uintptr_t)a->x % 16 == 0;
    a->vector_y = a->channels % V == 0 && (uintptr_t)a->y % 16 == 0;
    return tc;
}

/* One block per tile, grid x = tiles along a row (the kernel strides over more), y as
 * given, z = batch. */
static void gpu_set_tile_grid(gpu_conv_args *a, gpu_launch *l, int64_t y) {
    a->tiles_per_block = 1;
    l->grid[0] = gpu_clamp(a->tiles_per_row, 1, gpu_limits.grid_x);
    l->grid[1] = gpu_clamp(y, 1, gpu_limits.grid_yz);
    l->grid[2] = gpu_clamp(a->batch, 1, gpu_limits.grid_yz);
}

static int gpu_try_generic(gpu_conv_args *a, gpu_launch *l) {
    l->threads = 256;
    l->smem = 0;
    l->grid[0] = gpu_clamp(gpu_div_up(a->batch * a->channels * a->output_length, 256), 1, GPU_GRID_X);
    l->grid[1] = l->grid[2] = 1;
    return 1;
}

static int gpu_try_vector(gpu_conv_args *a, gpu_launch *l) {
    if (a->layout != DWCONV_LAYOUT_NCL || a->stride != 1 || a->dilation != 1 ||
        a->kernel_size > GPU_VECTOR_MAX_K)
        return 0;
    const int V = 16 / gpu_dtype_size(a->dtype);
    const int64_t tile = (int64_t)GPU_VECTOR_THREADS * GPU_VECTOR_VPT * V;
    const int64_t reads = gpu_div_up(V + a->kernel_size - 1, V);
    l->threads = GPU_VECTOR_THREADS;
    l->smem = (size_t)(tile + (reads - 1) * V) * gpu_dtype_size(a->dtype);
    a->tiles_per_row = gpu_aligned_tiles(a, a->output_length, tile);
    gpu_set_grid(a, l, 8, a->channels, a->batch);
    return 1;
}

static int gpu_try_lean(gpu_conv_args *a, gpu_launch *l) {
    if (a->layout != DWCONV_LAYOUT_NCL || !gpu_lean_applies(a->kernel_size, a->stride, a->dilation))
        return 0;
    const int V = 16 / gpu_dtype_size(a->dtype);
    /* the vectors a row spans: exact for rows that all start alike (an aligned 4096-long
     * row is 512 vectors, not 513, and gets 128 threads, not 256 of which half idle) */
    const int64_t row_vectors = gpu_div_up(a->output_length + gpu_row_head(a), V);
    int threads = 64; /* short rows: smaller blocks, not idle threads */
    while (threads < GPU_LEAN_MAX_THREADS && (int64_t)threads * GPU_LEAN_VPT < row_vectors) threads *= 2;
    l->threads = threads;
    l->smem = (size_t)gpu_lean_staged(threads, V, a->kernel_size, a->stride, a->dilation) * 16;
    a->tiles_per_row = gpu_aligned_tiles(a, a->output_length, (int64_t)threads * GPU_LEAN_VPT * V);
    gpu_set_tile_grid(a, l, a->channels);
    return 1;
}

static int gpu_try_tile(gpu_conv_args *a, gpu_launch *l) {
    if (a->layout != DWCONV_LAYOUT_NCL) return 0;
    const int64_t span = (a->kernel_size - 1) * a->dilation;
    for (int threads = GPU_TILE_MAX_THREADS; threads >= 64; threads /= 2) {
        const int64_t window = ((int64_t)threads * GPU_TILE_OUTPUTS - 1) * a->stride + span + 1;
        const int64_t smem =
            gpu_tile_weights_offset(window, gpu_dtype_size(a->dtype)) + 4 * a->kernel_size;
        if (smem > GPU_SMEM_LIMIT) continue;
        l->threads = threads;
        l->smem = (size_t)smem;
        a->window = window;
        a->tiles_per_row = gpu_div_up(a->output_length, (int64_t)threads * GPU_TILE_OUTPUTS);
        gpu_set_grid(a, l, 8, a->channels, a->batch);
        return 1;
    }
    return 0;
}

static int gpu_try_lattice(gpu_conv_args *a, gpu_launch *l) {
    if (a->layout != DWCONV_LAYOUT_NCL || a->dilation % a->stride != 0 ||
        gpu_lattice_smem(a->kernel_size) > GPU_SMEM_LIMIT ||
        a->dilation / a->stride > GPU_GRID_X)
        return 0;
    const int64_t run = (int64_t)GPU_LATTICE_THREADS * GPU_LATTICE_RUN;
    a->phases = a->dilation / a->stride;
    a->tiles_per_row = a->phases == 1 ? gpu_aligned_tiles(a, a->output_length, run)
                                      : gpu_div_up(gpu_div_up(a->output_length, a->phases), run);
    if (a->tiles_per_row * a->phases > GPU_GRID_X) return 0;
    a->tiles_per_block = 1;
    l->threads = GPU_LATTICE_THREADS;
    l->smem = (size_t)gpu_lattice_smem(a->kernel_size);
    l->grid[0] = a->tiles_per_row * a->phases;
    l->grid[1] = gpu_clamp(a->channels, 1, gpu_limits.grid_yz);
    l->grid[2] = gpu_clamp(a->batch, 1, gpu_limits.grid_yz);
    return 1;
}

static int gpu_try_nlc(gpu_conv_args *a, gpu_launch *l) {
    if (a->layout != DWCONV_LAYOUT_NLC) return 0;
    const int V = 16 / gpu_dtype_size(a->dtype), tc = gpu_nlc_channel_threads(a, V);
    const int64_t vectors = gpu_div_up(a->channels, V);
    const int run = 32 / V;
    a->tiles_per_row = gpu_div_up(a->output_length, (int64_t)(GPU_NLC_THREADS / tc) * run);
    l->threads = GPU_NLC_THREADS;
    l->smem = (size_t)gpu_nlc_smem(tc, V);
    /* blocks reuse staged weights across tiles only when all taps fit at once */
    gpu_set_grid(a, l, a->kernel_size <= GPU_NLC_TAPS ? 8 : 1, gpu_div_up(vectors, tc), a->batch);
    return 1;
}

static int gpu_try_slide(gpu_conv_args *a, gpu_launch *l) {
    if (a->layout != DWCONV_LAYOUT_NLC || a->stride != 1 || a->dilation != 1 ||
        a->kernel_size > GPU_SLIDE_MAX_K)
        return 0;
    const int V = 16 / gpu_dtype_size(a->dtype), P = GPU_SLIDE_STEP(V, a->kernel_size);
    const int tc = gpu_nlc_channel_threads(a, V);
    const int64_t vectors = gpu_div_up(a->channels, V);
    const int64_t channel_blocks = gpu_div_up(vectors, tc), runs_per_tile = GPU_SLIDE_THREADS / tc;
    /* longer runs (fewer re-read halo rows, weights loaded fewer times) while the GPU
     * keeps enough threads */
    const int64_t one_step = a->batch * channel_blocks * tc * gpu_div_up(a->output_length, P);
    a->steps = gpu_clamp(one_step / gpu_limits.enough_threads, 1, 16);
    a->tiles_per_row = gpu_div_up(a->output_length, runs_per_tile * a->steps * P);
    a->vector_w = (uintptr_t)a->weight % 16 == 0 && (uintptr_t)a->bias % 16 == 0;
    l->threads = GPU_SLIDE_THREADS;
    l->smem = 0;
    gpu_set_tile_grid(a, l, channel_blocks);
    return 1;
}

static int gpu_try_kernel(int kernel, gpu_conv_args *a, gpu_launch *l) {
    l->kernel = kernel;
    switch (kernel) {
    case GPU_KERNEL_GENERIC: return gpu_try_generic(a, l);
    case GPU_KERNEL_NCL_VECTOR: return gpu_try_vector(a, l);
    case GPU_KERNEL_NCL_TILE: return gpu_try_tile(a, l);
    case GPU_KERNEL_NCL_LATTICE: return gpu_try_lattice(a, l);
    case GPU_KERNEL_NLC: return gpu_try_nlc(a, l);
    case GPU_KERNEL_NCL_LEAN: return gpu_try_lean(a, l);
    case GPU_KERNEL_NLC_SLIDE: return gpu_try_slide(a, l);
    default: return 0;
    }
}

/* Whether (B, C, n) strides are contiguous in a layout. */
static int gpu_strides_are(const int64_t *stride, int layout, int64_t channels, int64_t n) {
    return layout == DWCONV_LAYOUT_NLC
               ? stride[2] == channels && stride[1] == 1 && stride[0] == channels * n
               : stride[2] == 1 && stride[1] == n && stride[0] == channels * n;
}

/* The kernels' argument for a validated forward problem (geometry still unset). */
static gpu_conv_args gpu_args_make(const dwconv_problem *p) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X], *y = &p->operand[DWCONV_ROLE_Y];
    gpu_conv_args a;
    memset(&a, 0, sizeof a);
    a.x = x->data, a.weight = p->operand[DWCONV_ROLE_WEIGHT].data;
    a.bias = p->operand[DWCONV_ROLE_BIAS].data, a.y = y->data;
    a.batch = d->batch, a.channels = d->channels, a.length = d->length;
    a.kernel_size = d->kernel_size, a.stride = d->stride, a.dilation = d->dilation;
    a.pad_left = d->pad_left, a.output_length = p->output_length;
    a.dtype = d->dtype, a.weight_dtype = d->weight_dtype, a.layout = d->layout;
    a.padding_mode = d->padding_mode, a.activation = d->activation;
    for (int i = 0; i < 3; i++) a.x_stride[i] = x->stride[i], a.y_stride[i] = y->stride[i];
    /* one layout for both, contiguous: the fast kernels' case */
    for (int layout = DWCONV_LAYOUT_NCL; layout <= DWCONV_LAYOUT_NLC; layout++)
        if (gpu_strides_are(a.x_stride, layout, a.channels, a.length) &&
            gpu_strides_are(a.y_stride, layout, a.channels, a.output_length)) {
            a.layout = layout;
            return a;
        }
    a.layout = -1;
    return a;
}

/* The kernel for a, its geometry in a and l. forced (a gpu_kernel_id) wins where it
 * applies. */
static void gpu_plan_launch(int forced, gpu_conv_args *a, gpu_launch *l) {
    memset(l, 0, sizeof *l);
    if (forced != GPU_KERNEL_AUTO && gpu_try_kernel(forced, a, l)) return;
    if (a->layout == DWCONV_LAYOUT_NLC) { /* slide: 1.25-1.3x nlc where it applies */
        if (gpu_try_kernel(GPU_KERNEL_NLC_SLIDE, a, l)) return;
        if (gpu_try_kernel(GPU_KERNEL_NLC, a, l)) return;
    } else if (a->output_length >= 512) { /* rows fill a good part of a tile */
        /* bench/RESULTS-gpu.md: f32 rows of up to 4096 outputs run the vector kernel
         * where it applies (2% faster than lean on the causal K4 f32 rows); every other
         * row lean (2-8% faster than vector on the 8192-long reference in every dtype,
         * 1.34x on the causal K4 bf16 rows, 1.4x tile on dilation 4) */
        if (a->output_length <= 4096 && a->dtype == DWCONV_F32 &&
            gpu_try_kernel(GPU_KERNEL_NCL_VECTOR, a, l))
            return;
        if (gpu_try_kernel(GPU_KERNEL_NCL_LEAN, a, l)) return;
        if (gpu_try_kernel(GPU_KERNEL_NCL_VECTOR, a, l)) return;
        /* lattice only with one phase: with several, each phase's block gathers every
         * dilation-th element, and L2 moves several times the bytes of x */
        if (a->kernel_size >= GPU_LATTICE_MIN_K && a->dilation == a->stride &&
            gpu_try_kernel(GPU_KERNEL_NCL_LATTICE, a, l))
            return;
        if (gpu_try_kernel(GPU_KERNEL_NCL_TILE, a, l)) return;
    }
    gpu_try_kernel(GPU_KERNEL_GENERIC, a, l);
}

#endif /* DWCONV_GPU_LAUNCH_CUH */
