/*
 * Which family runs a forward problem, and its launch geometry: plain host code, shared
 * by the module and the CPU emulator of the tests. Every family covers every option of
 * its layout within its K range (gpu_families.h says when it applies); the rule below
 * picks among those that apply.
 */
#ifndef DWCONV_GPU_LAUNCH_CUH
#define DWCONV_GPU_LAUNCH_CUH

#include <stdint.h>
#include <string.h>

#include "gpu_families.h"

/* Grid x stays far below HIP's cap of 2^32 threads per dimension. */
#define GPU_GRID_X ((int64_t)1 << 22)

/* Variables, not constants, so that the emulated tests can shrink them and reach the
 * kernels' loops over rows and over several tiles with small problems. */
static struct {
    int64_t grid_yz;       /* grid y and z: 65535 everywhere; kernels stride over more */
    int64_t enough_blocks; /* blocks that fill the GPU before blocks walk several tiles */
    int64_t grid_x;        /* grid x of the kernels that stride over tiles */
    int64_t enough_threads; /* slide: runs grow longer until about this many threads */
} gpu_limits = {65535, 2048, GPU_GRID_X, (int64_t)1 << 18};

typedef struct gpu_launch {
    int family; /* enum gpu_family_id */
    int64_t grid[3];
    int threads;
    size_t smem;
} gpu_launch;

static int64_t gpu_div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t gpu_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* A grid of x, y, z blocks within the limits: x at most gpu_limits.grid_x, y and z at
 * most gpu_limits.grid_yz, none below 1. The kernels stride over what is cut off. For
 * the forward's families, the backward's and the causal operations' steps alike. */
static void gpu_grid_clamp(int64_t grid[3], int64_t x, int64_t y, int64_t z) {
    grid[0] = gpu_clamp(x, 1, gpu_limits.grid_x);
    grid[1] = gpu_clamp(y, 1, gpu_limits.grid_yz);
    grid[2] = gpu_clamp(z, 1, gpu_limits.grid_yz);
}

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

/* One block per tile, grid x = tiles along a row (the kernel strides over more), y as
 * given, z = batch. */
static void gpu_set_tile_grid(gpu_conv_args *a, gpu_launch *l, int64_t y) {
    a->tiles_per_block = 1;
    gpu_grid_clamp(l->grid, a->tiles_per_row, y, a->batch);
}

/* Channel-first: outputs before a row's first vector boundary of y that a tile
 * starting on that boundary covers: exact when every row of y starts at the same
 * offset from a boundary (batch and channel strides multiples of the vector), else the
 * most (V - 1). */
static int64_t gpu_row_head(const gpu_conv_args *a) {
    const int V = gpu_vector_width(a->dtype);
    const int alike = a->y_stride[DWCONV_DIM_BATCH] % V == 0 && a->y_stride[DWCONV_DIM_CHANNEL] % V == 0;
    return alike ? (int64_t)((uintptr_t)a->y / gpu_dtype_size(a->dtype) % V) : V - 1;
}

/* Output tiles of a row whose tiles start on y's vector boundaries. */
static int64_t gpu_aligned_tiles(const gpu_conv_args *a, int64_t outputs, int64_t tile) {
    return (outputs - 1 + gpu_row_head(a)) / tile + 1;
}

/* Whether every position of a channel-last operand starts on a 16-byte boundary. */
static int gpu_positions_aligned(const void *p, const int64_t *stride, int dtype) {
    const int64_t size = gpu_dtype_size(dtype);
    return (uintptr_t)p % GPU_VECTOR_BYTES == 0 &&
           stride[DWCONV_DIM_BATCH] * size % GPU_VECTOR_BYTES == 0 &&
           stride[DWCONV_DIM_POSITION] * size % GPU_VECTOR_BYTES == 0;
}

/* Channel-last: whether x and y positions start on 16-byte boundaries. */
static void gpu_nlc_alignment(gpu_conv_args *a) {
    a->vector_x = gpu_positions_aligned(a->x, a->x_stride, a->dtype);
    a->vector_y = gpu_positions_aligned(a->y, a->y_stride, a->dtype);
}

/* slide's channels a thread (after gpu_nlc_alignment): a whole 16-byte vector of them
 * where every position of x and y starts on a 16-byte boundary, else one (a warp's
 * accesses stay 32 adjacent elements of a row, where a vector's would be element loads
 * 16 bytes apart). */
static int gpu_slide_width(const gpu_conv_args *a) {
    return a->vector_x && a->vector_y ? gpu_vector_width(a->dtype) : 1;
}

/* Channel-last: threads across a position's channel vectors of V elements (a power of
 * two up to a warp, so a warp's loads stay whole lines). */
static int gpu_nlc_channel_threads(gpu_conv_args *a, int V) {
    const int64_t vectors = gpu_div_up(a->channels, V);
    int tc = 1;
    while (tc < 32 && tc < vectors) tc *= 2;
    a->channel_threads = tc;
    return tc;
}

/* ---- each family's geometry (called only where it applies) ---- */

/* Threads side by side take the dimension in which y's elements lie closer. */
static void gpu_generic_geometry(gpu_conv_args *a, gpu_launch *l) {
    a->channels_inner = a->channels > 1 &&
                        (a->output_length == 1 ||
                         a->y_stride[DWCONV_DIM_CHANNEL] < a->y_stride[DWCONV_DIM_POSITION]);
    const int64_t inner = a->channels_inner ? a->channels : a->output_length;
    const int64_t outer = a->channels_inner ? a->output_length : a->channels;
    /* below a warp a power of two (several rows share a warp), above it whole warps
     * (a row of 132 outputs takes 160 threads, not 256: no idle warps) */
    int tx = 1;
    while (tx < GPU_WARP && tx < inner) tx *= 2;
    if (tx == GPU_WARP) tx = (int)gpu_clamp(gpu_div_up(inner, GPU_WARP), 1, GPU_GENERIC_THREADS / GPU_WARP) * GPU_WARP;
    const int rows_per_block = GPU_GENERIC_THREADS / tx;
    a->inner_threads = tx;
    l->threads = tx * rows_per_block;
    l->smem = 0;
    gpu_grid_clamp(l->grid, gpu_div_up(inner, tx), gpu_div_up(outer, rows_per_block), a->batch);
}

/* The smallest tile (8, 16 or 32 lanes) that covers a row, or a warp's tiles along
 * longer rows, up to GPU_LEAN_CHUNK(_SILU) consecutive ones per task while that leaves
 * 8 * gpu_limits.enough_blocks tasks; tasks numbered row by row, a block taking
 * consecutive ones (one per group of lanes: blocks of one warp, or for short rows of
 * GPU_LEAN_ROWS_BLOCK threads). */
static void gpu_lean_geometry(gpu_conv_args *a, gpu_launch *l) {
    const int V = gpu_vector_width(a->dtype);
    /* the vectors a row spans: exact for rows that all start alike (an aligned 4096-long
     * row is 512 vectors, not 513) */
    const int64_t row_vectors = gpu_div_up(a->output_length + gpu_row_head(a), V);
    int lanes = GPU_LEAN_ROW_THREADS;
    while (lanes < GPU_WARP && (int64_t)lanes * GPU_LEAN_VPT < row_vectors) lanes *= 2;
    const int64_t rows = a->channels * a->batch;
    a->row_threads = lanes;
    a->tiles_per_row = gpu_aligned_tiles(a, a->output_length, (int64_t)lanes * GPU_LEAN_VPT * V);
    a->tiles_per_block = 1;
    const int64_t most = a->activation == DWCONV_ACT_SILU ? GPU_LEAN_CHUNK_SILU : GPU_LEAN_CHUNK;
    while (lanes == GPU_WARP && a->tiles_per_block < most && a->tiles_per_block < a->tiles_per_row &&
           rows * gpu_div_up(a->tiles_per_row, 2 * a->tiles_per_block) >= 8 * gpu_limits.enough_blocks)
        a->tiles_per_block *= 2;
    l->threads = lanes == GPU_WARP ? GPU_WARP : GPU_LEAN_ROWS_BLOCK;
    const int groups = l->threads / lanes; /* tiles a block stages at once */
    /* pipelined: a second buffer for a task's next tile (none in tasks of one tile) */
    const int buffers = GPU_LEAN_PIPELINED(a->stride, lanes != GPU_WARP) && a->tiles_per_block > 1 ? 2 : 1;
    l->smem = (size_t)(groups * buffers) * gpu_lean_smem(lanes, V, a->kernel_size, a->stride, a->dilation);
    gpu_grid_clamp(l->grid, gpu_div_up(rows * gpu_div_up(a->tiles_per_row, a->tiles_per_block), groups), 1, 1);
}

/* The fewest lanes (4 to a warp) whose tile covers the row, several rows a block. */
static void gpu_strip_geometry(gpu_conv_args *a, gpu_launch *l) {
    int lanes = GPU_STRIP_MIN_LANES;
    while (lanes < GPU_WARP && (int64_t)lanes * GPU_STRIP_RUN < a->output_length) lanes *= 2;
    a->row_threads = lanes;
    a->tiles_per_row = gpu_div_up(a->output_length, (int64_t)lanes * GPU_STRIP_RUN);
    l->threads = GPU_STRIP_THREADS;
    l->smem = 0;
    gpu_set_grid(a, l, GPU_STRIP_MAX_TILES, gpu_div_up(a->channels, GPU_STRIP_THREADS / lanes), a->batch);
}

/* The block (32 to 256 threads, its window in shared memory) whose tiles span the
 * fewest x elements over the row: every tile repeats the halo, and the last one's
 * threads run whether or not their outputs exist. So a short row takes the
 * smallest block that covers it (a longer tile would idle: rows of a few hundred
 * outputs ran faster in one-warp blocks than in 256-thread ones, bench/RESULTS-gpu.md
 * run I), a long row large tiles (less halo) unless its last tile would idle most of
 * its threads; ties go to the larger block. */
static void gpu_tile_geometry(gpu_conv_args *a, gpu_launch *l) {
    const int xsize = gpu_dtype_size(a->dtype);
    const int64_t S = a->stride, D = a->dilation, K = a->kernel_size;
    int threads = GPU_TILE_MIN_THREADS; /* its window fits: tile applies */
    int64_t fewest = INT64_MAX;
    for (int t = GPU_TILE_MIN_THREADS; t <= GPU_TILE_MAX_THREADS; t *= 2) {
        const int64_t span = gpu_tile_span(t, xsize, S, D), window = gpu_tile_window(span, K, S, D);
        if (gpu_tile_smem(span, window, xsize, K, S, D) > GPU_SMEM_LIMIT) break; /* windows grow with t */
        const int64_t staged = gpu_div_up(a->output_length, span) * window;
        if (staged <= fewest) threads = t, fewest = staged;
    }
    a->tile_span = gpu_tile_span(threads, xsize, S, D);
    a->window = gpu_tile_window(a->tile_span, K, S, D);
    l->threads = threads;
    l->smem = (size_t)gpu_tile_smem(a->tile_span, a->window, xsize, K, S, D);
    a->tiles_per_row = gpu_div_up(a->output_length, a->tile_span);
    gpu_set_grid(a, l, 8, a->channels, a->batch);
}

static void gpu_lattice_geometry(gpu_conv_args *a, gpu_launch *l) {
    a->tiles_per_row =
        gpu_aligned_tiles(a, a->output_length, (int64_t)GPU_LATTICE_THREADS * GPU_LATTICE_RUN);
    l->threads = GPU_LATTICE_THREADS;
    l->smem = (size_t)gpu_lattice_smem(a->kernel_size);
    gpu_set_grid(a, l, 8, a->channels, a->batch); /* consecutive tiles share points */
}

static void gpu_nlc_geometry(gpu_conv_args *a, gpu_launch *l) {
    gpu_nlc_alignment(a);
    const int V = gpu_vector_width(a->dtype), tc = gpu_nlc_channel_threads(a, V);
    const int64_t vectors = gpu_div_up(a->channels, V);
    a->tiles_per_row = gpu_div_up(a->output_length, (int64_t)(GPU_NLC_THREADS / tc) * gpu_nlc_run(V));
    l->threads = GPU_NLC_THREADS;
    l->smem = (size_t)gpu_nlc_smem(tc, V);
    /* blocks reuse staged weights across tiles only when all taps fit at once */
    gpu_set_grid(a, l, a->kernel_size <= GPU_NLC_TAPS ? 8 : 1, gpu_div_up(vectors, tc), a->batch);
}

static void gpu_slide_geometry(gpu_conv_args *a, gpu_launch *l) {
    gpu_nlc_alignment(a);
    const int V = gpu_slide_width(a), P = GPU_SLIDE_STEP(V);
    const int tc = gpu_nlc_channel_threads(a, V);
    const int64_t vectors = gpu_div_up(a->channels, V);
    const int64_t channel_blocks = gpu_div_up(vectors, tc), runs_per_tile = GPU_SLIDE_THREADS / tc;
    /* longer runs (fewer re-read halo rows, weights loaded fewer times) while the GPU
     * keeps enough threads */
    const int64_t one_step = a->batch * channel_blocks * tc * gpu_div_up(a->output_length, P);
    a->steps = gpu_clamp(one_step / gpu_limits.enough_threads, 1, GPU_SLIDE_MAX_STEPS);
    /* runs of a stretch of run * D outputs: one per phase of the dilation */
    const int64_t D = a->dilation, runs = D * gpu_div_up(a->output_length, a->steps * P * D);
    a->tiles_per_row = gpu_div_up(runs, runs_per_tile);
    a->vector_w = (uintptr_t)a->weight % GPU_VECTOR_BYTES == 0 &&
                  (uintptr_t)a->bias % GPU_VECTOR_BYTES == 0;
    l->threads = GPU_SLIDE_THREADS;
    l->smem = 0;
    gpu_set_tile_grid(a, l, channel_blocks);
}

static void gpu_column_geometry(gpu_conv_args *a, gpu_launch *l) {
    int tc = GPU_COLUMN_MIN_CHANNELS; /* channels of a block: a power of two */
    while (tc < GPU_COLUMN_THREADS && tc < a->channels) tc *= 2;
    a->channel_threads = tc;
    a->tiles_per_row =
        gpu_div_up(a->output_length, (int64_t)(GPU_COLUMN_THREADS / tc) * GPU_COLUMN_RUN);
    l->threads = GPU_COLUMN_THREADS;
    l->smem = (size_t)gpu_column_smem(tc, a->kernel_size);
    /* blocks reuse staged weights across tiles only when all taps fit at once */
    gpu_set_grid(a, l, a->kernel_size <= GPU_COLUMN_STAGE ? 8 : 1, gpu_div_up(a->channels, tc),
                 a->batch);
}

static void gpu_family_geometry(int f, gpu_conv_args *a, gpu_launch *l) {
    switch (f) {
#define GPU_GEOMETRY_CASE(id, name, layout, k_min, k_max) \
    case GPU_FAMILY_##id: gpu_##name##_geometry(a, l); return;
        GPU_FORWARD_FAMILIES(GPU_GEOMETRY_CASE)
#undef GPU_GEOMETRY_CASE
    default: gpu_generic_geometry(a, l); return;
    }
}

/* ---- the choice ---- */

/* Channel-first rows of at most this many outputs with small K run strip, lean's
 * included: its tiles follow the row down to 4 lanes, where lean's smallest tile is 8
 * lanes of 4 vectors and generic spends hundreds of instructions an output on its
 * indices (bench/RESULTS-gpu.md run U, each family forced: strip fastest on rows of
 * up to about 70 outputs, lean from about 127 on). Longer rows want vector loads:
 * there strip's 2- or 4-byte loads of every tap fall far behind tile and lean. */
#define GPU_STRIP_ROW 96

/* lattice's tiles have a fixed length (GPU_LATTICE_THREADS * GPU_LATTICE_RUN outputs);
 * rows shorter than two of them run on tile, whose block follows the row
 * (bench/RESULTS-gpu.md run T, both forced: tile faster on nearly every shorter row,
 * lattice as fast or faster on every longer one). */
#define GPU_LATTICE_MIN_ROW (2 * GPU_LATTICE_THREADS * GPU_LATTICE_RUN)

/* Channel-last problems on which column or nlc would launch at most this many blocks
 * run the generic kernel: those families give a block many outputs (and stage its
 * weights once), so a small problem leaves most of the GPU's SMs idle, where
 * generic's one output a thread spreads it over all of them (bench/RESULTS-gpu.md run
 * T, each forced: generic faster on nearly every grid this small, column or nlc on
 * most larger ones). */
#define GPU_FEW_BLOCKS 128

static int64_t gpu_blocks(const gpu_conv_args *a, int family) {
    gpu_conv_args copy = *a; /* the geometry writes its tiling into the args */
    gpu_launch l;
    memset(&l, 0, sizeof l);
    gpu_family_geometry(family, &copy, &l);
    return l.grid[0] * l.grid[1] * l.grid[2];
}

/* The family for a: mixed layouts: generic. Channel-last with stride 1: slide for
 * small K (any dilation and alignment: the window in registers, whole vectors of
 * channels where positions are 16-byte aligned, else one channel a thread), else at
 * dilation 1 column (one channel per lane, register-blocked over taps for large K);
 * other channel-last problems nlc; generic instead of column or nlc where they would
 * launch too few blocks to fill the GPU.
 * Channel-first: strip for short rows with small K (taps from global memory, several
 * rows a block); lean for the other rows with small K (whole vectors staged, taps out
 * of registers); lattice for large K with dilation == stride in rows of two lattice
 * tiles or more (register-blocked over taps), tile for the rest that fits shared
 * memory (lattice where only lattice fits), else generic. */
static int gpu_choose_family(const gpu_conv_args *a) {
    if (a->layout == GPU_CHANNEL_LAST) {
        if (gpu_family_applies(GPU_FAMILY_SLIDE, a)) return GPU_FAMILY_SLIDE;
        const int f = gpu_family_applies(GPU_FAMILY_COLUMN, a) ? GPU_FAMILY_COLUMN : GPU_FAMILY_NLC;
        return gpu_blocks(a, f) <= GPU_FEW_BLOCKS ? GPU_FAMILY_GENERIC : f;
    }
    if (a->layout != GPU_CHANNEL_FIRST) return GPU_FAMILY_GENERIC;
    if (a->output_length <= GPU_STRIP_ROW && gpu_family_applies(GPU_FAMILY_STRIP, a))
        return GPU_FAMILY_STRIP;
    if (gpu_family_applies(GPU_FAMILY_LEAN, a)) return GPU_FAMILY_LEAN;
    const int lattice = gpu_family_applies(GPU_FAMILY_LATTICE, a);
    const int tile = gpu_family_applies(GPU_FAMILY_TILE, a);
    if (lattice && (a->output_length >= GPU_LATTICE_MIN_ROW || !tile)) return GPU_FAMILY_LATTICE;
    return tile ? GPU_FAMILY_TILE : GPU_FAMILY_GENERIC;
}

/* The family for a and its geometry in a and l: forced (a gpu_family_id) where it
 * applies, else the choice above. */
static void gpu_plan_launch(int forced, gpu_conv_args *a, gpu_launch *l) {
    memset(l, 0, sizeof *l);
    l->family = gpu_family_applies(forced, a) ? forced : gpu_choose_family(a);
    gpu_family_geometry(l->family, a, l);
}

#endif /* DWCONV_GPU_LAUNCH_CUH */
