/*
 * The forward's kernel families: the one registry (GPU_FORWARD_FAMILIES), each
 * family's traits, and when each applies. Plain C that nvcc, hipcc, the tests' CPU
 * emulator and the C tests all compile, so that the launch choice, DWCONV_GPU_KERNEL,
 * `dwconv info` and both GPU test suites ask the same predicate
 * (gpu_family_applies) and read the same constants; the kernels read their traits
 * (threads, vectors per thread, shared-memory sizes) from here too.
 *
 * A family is found by its name in the registry: gpu_<name>_fits here (what it needs
 * beyond its layout and K range), gpu_<name>_geometry in gpu_launch.cuh and
 * gpu_<name>_kernels in gpu_dispatch.cuh (its template instances). Adding a family is
 * one line in the registry plus those three.
 */
#ifndef DWCONV_GPU_FAMILIES_H
#define DWCONV_GPU_FAMILIES_H

#include <stdint.h>
#include <string.h>

#include "dwconv_module.h"
#include "gpu_args.cuh"

/* Helpers that host and device code both call. */
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(DWCONV_GPU_EMULATE_H)
#define GPU_HD static __host__ __device__ inline
#else
#define GPU_HD static inline
#endif

/* Shared memory a block may use without opting in, on every GPU we build for. */
#define GPU_SMEM_LIMIT (48 * 1024)
/* Every fast kernel moves x and y in 16-byte vectors. */
#define GPU_VECTOR_BYTES 16

GPU_HD int gpu_dtype_size(int dtype) { return dtype == DWCONV_F32 ? 4 : 2; }
/* Elements of a 16-byte vector. */
GPU_HD int gpu_vector_width(int dtype) { return GPU_VECTOR_BYTES / gpu_dtype_size(dtype); }

/* ---- traits ----------------------------------------------------------------------- */

/* generic: one output per thread. */
#define GPU_GENERIC_THREADS 256

/* The logical warp: the lanes that warp barriers join, 32 on every GPU we build for
 * (a 64-wide AMD wavefront holds two). */
#define GPU_WARP 32

/* lean (gpu_kernel_ncl_lean.cuh): channel-first, small K, tiles of GPU_LEAN_VPT
 * output vectors per lane, a logical warp's lanes per tile (blocks of one warp), or
 * for short rows 8 or 16 of them, x staged as whole vectors. */
/* Output vectors per lane (S x vectors in flight for each): 4 at every stride (2 at
 * stride 2 ran slower, bench/RESULTS-gpu.md run H). */
#define GPU_LEAN_VPT 4
/* The smallest tile's lanes: more than the halo of every instance (at most 4 vectors,
 * K7 at dilation 2 in f32). */
#define GPU_LEAN_ROW_THREADS 8
/* Short rows' blocks (rows of at most 16 lanes' tiles): several warps. */
#define GPU_LEAN_ROWS_BLOCK 128
/* Consecutive tiles of a row one task takes at most (its row's setup once for them):
 * 2, and 4 with silu, whose tiles cost more instructions than their loads wait for
 * (bench/RESULTS-gpu.md run H: 1 lost everywhere to the per-task setup, 4 on the
 * memory-bound cases, 2 with silu). */
#define GPU_LEAN_CHUNK 2
#define GPU_LEAN_CHUNK_SILU 4
#define GPU_LEAN_MAX_K 8
/* Its instances besides stride 1, dilation 1 (any K up to GPU_LEAN_MAX_K): X(K,
 * stride, dilation); larger K at dilation 4 spill registers (ptxas -v). */
#define GPU_LEAN_STEPPED(X) X(3, 2, 1) X(3, 1, 2) X(3, 1, 4) X(5, 1, 2) X(7, 1, 2)

/* x vectors one output vector's window touches when it starts at element m. */
GPU_HD int gpu_lean_reads(int width, int m, int64_t K, int64_t S, int64_t D) {
    return (int)((m + (width - 1) * S + (K - 1) * D) / width + 1);
}
/* x vectors a tile of `threads` lanes stages (output vector j reads from x vector
 * j * S on); its shared memory is that many 16-byte vectors. */
GPU_HD int64_t gpu_lean_staged(int threads, int width, int64_t K, int64_t S, int64_t D) {
    return ((int64_t)threads * GPU_LEAN_VPT - 1) * S + gpu_lean_reads(width, width - 1, K, S, D);
}
GPU_HD int64_t gpu_lean_smem(int threads, int width, int64_t K, int64_t S, int64_t D) {
    return gpu_lean_staged(threads, width, K, S, D) * GPU_VECTOR_BYTES;
}
/* Whether lean stages a warp's tiles into two buffers by asynchronous copies, tile
 * t + 1's in flight while tile t computes: strided instances in whole-warp tiles, whose
 * loads (S vectors an output vector) held the registers that kept their occupancy low
 * (bench/RESULTS-gpu.md, run I). */
#define GPU_LEAN_PIPELINED(S, ROWS) ((S) > 1 && !(ROWS))

/* strip (gpu_kernel_ncl_strip.cuh): channel-first, small K, any stride and dilation:
 * GPU_STRIP_RUN outputs a lane, the taps from global memory, tiles of 4 to 32 lanes
 * (short rows several to a block); at most GPU_STRIP_MAX_TILES tiles a block. */
#define GPU_STRIP_THREADS 128
#define GPU_STRIP_MAX_K 8
#define GPU_STRIP_RUN 4
#define GPU_STRIP_MIN_LANES 4
#define GPU_STRIP_MAX_TILES 8
#define GPU_STRIP_MIN_BLOCKS 6 /* 80 registers: at 64, f16 K6 spilled (ptxas -v, sm_90) */

/* tile (gpu_kernel_ncl_tile.cuh): channel-first, anything whose window fits shared
 * memory; blocks of one warp up to 256 threads, each thread enough outputs that its
 * share of the window is GPU_TILE_BYTES or more, and at least GPU_TILE_GROUP: 16 at
 * 16-bit stride 1, else 8 (a 16-bit tile keeps as many bytes of x in flight as an f32
 * one; at stride 2 and more, 16 outputs a thread outgrew the vectors kept in flight,
 * GPU_WINDOW_BATCH, and ran up to 1.6x slower). Where the stride divides the dilation
 * (stride 1 among them), P = D / S phases of at most a warp: the threads sum runs of
 * GPU_TILE_RUN outputs of one phase each, and a tile is whole runs of every phase. */
#define GPU_TILE_MIN_THREADS GPU_WARP
#define GPU_TILE_MAX_THREADS 256
#define GPU_TILE_BYTES 32
#define GPU_TILE_RUN 8
#define GPU_TILE_GROUP 8 /* outputs a thread sums at once, outside runs */

/* Outputs a thread of tile computes, for x elements of xsize bytes at stride S. */
GPU_HD int gpu_tile_outputs(int xsize, int64_t S) {
    const int64_t bytes = GPU_TILE_BYTES / (xsize * S);
    return bytes > GPU_TILE_GROUP ? (int)bytes : GPU_TILE_GROUP;
}

/* Whether tile sums runs of one phase (gpu_tile_runs in the kernel). */
GPU_HD int gpu_tile_phased(int64_t S, int64_t D) { return D % S == 0 && D / S <= GPU_TILE_MIN_THREADS; }

/* Outputs a tile of `threads` threads covers: with runs, as many whole runs of each
 * of the P phases as the threads take (P <= threads). */
GPU_HD int64_t gpu_tile_span(int threads, int xsize, int64_t S, int64_t D) {
    const int64_t per = gpu_tile_outputs(xsize, S), P = D / S;
    return gpu_tile_phased(S, D) ? per * P * (threads / P) : per * threads;
}

/* Raw x elements a tile of `span` outputs stages. */
GPU_HD int64_t gpu_tile_window(int64_t span, int64_t K, int64_t S, int64_t D) {
    return (span - 1) * S + (K - 1) * D + 1;
}
/* Byte offsets of the f32 weights behind a window of `window` raw elements, and of
 * the staged outputs (runs only) behind them. */
GPU_HD int64_t gpu_tile_weights_offset(int64_t window, int xsize) {
    return (window * xsize + 15) / 16 * 16;
}
GPU_HD int64_t gpu_tile_outputs_offset(int64_t window, int xsize, int64_t K) {
    return (gpu_tile_weights_offset(window, xsize) + 4 * K + 15) / 16 * 16;
}
GPU_HD int64_t gpu_tile_smem(int64_t span, int64_t window, int xsize, int64_t K, int64_t S, int64_t D) {
    return gpu_tile_outputs_offset(window, xsize, K) + (gpu_tile_phased(S, D) ? span * xsize : 0);
}

/* lattice (gpu_kernel_ncl_lattice.cuh): channel-first, large K, dilation == stride:
 * blocks of one warp, GPU_LATTICE_RUN outputs per lane (in groups of one vector's
 * width), GPU_LATTICE_CHUNK taps per register window, GPU_LATTICE_MIN_BLOCKS blocks an SM (80 registers; ptxas -v
 * on sm_90: about 50 bytes spilled). Measured against 128-thread blocks at 128 registers
 * and other splits in bench/RESULTS-gpu.md, run I. */
#define GPU_LATTICE_THREADS GPU_WARP
#define GPU_LATTICE_RUN 16
#define GPU_LATTICE_CHUNK 8
#define GPU_LATTICE_MIN_BLOCKS 24
#define GPU_LATTICE_MIN_K 9
#define GPU_LATTICE_STAGE_BATCH 8 /* loads in flight per lane while staging */

/* Lattice points a tile stages (taps padded to whole chunks). */
GPU_HD int64_t gpu_lattice_taps(int64_t K) {
    return (K + GPU_LATTICE_CHUNK - 1) / GPU_LATTICE_CHUNK * GPU_LATTICE_CHUNK;
}
GPU_HD int64_t gpu_lattice_points(int64_t K) {
    return (int64_t)GPU_LATTICE_THREADS * GPU_LATTICE_RUN + gpu_lattice_taps(K);
}
/* The f32 weights after the points, 16-byte aligned (16 spare bytes between them: the
 * padded slots' old gap, kept as measured in run I; points are whole chunks already). */
GPU_HD int64_t gpu_lattice_weights_offset(int64_t K) {
    return (gpu_lattice_points(K) + 4) * 4;
}
GPU_HD int64_t gpu_lattice_smem(int64_t K) {
    return gpu_lattice_weights_offset(K) + gpu_lattice_taps(K) * 4;
}

/* nlc (gpu_kernel_nlc.cuh): channel-last, anything: one channel vector and
 * gpu_nlc_run positions per thread, weights staged GPU_NLC_TAPS taps at a time. */
#define GPU_NLC_THREADS 128
#define GPU_NLC_TAPS 16
#define GPU_NLC_PREFETCH 64 /* rows of a tile prefetched into L1 at most */
#define GPU_NLC_ACCUMULATORS 32 /* per thread, whatever the dtype */
GPU_HD int gpu_nlc_run(int width) { return GPU_NLC_ACCUMULATORS / width; }
GPU_HD int64_t gpu_nlc_smem(int channel_threads, int width) {
    return (int64_t)GPU_NLC_TAPS * channel_threads * width * 4;
}

/* slide (gpu_kernel_nlc_slide.cuh): channel-last, stride 1, small K, any dilation: a
 * window of rows (one phase of the dilation) in registers. */
#define GPU_SLIDE_THREADS 128
#define GPU_SLIDE_MAX_K 8
#define GPU_SLIDE_MAX_STEPS 16
/* Rows loaded per step, all in flight at once: with one channel a thread 16 (a row is
 * one register, and a thread's loads are 2 or 4 bytes: more of them in flight keep as
 * many bytes in flight; run S timed 16 alone, not against 8); f32 vectors 8; 2-byte
 * vectors 4, whose 8 * K f32 weights leave too few registers for more rows. */
#define GPU_SLIDE_STEP(width) ((width) == 1 ? 16 : (width) == 4 ? 8 : 4)
/* Blocks an SM keeps, as the register budget of __launch_bounds__: 2-byte vectors with
 * K <= 4 fit four (at most 128 registers, a few words spilled), whose extra warps hide
 * the activation's latency (bench/RESULTS-gpu.md run U: faster on the sweep's shapes
 * of this kind, a little slower on small ones whose threads run one step); larger K
 * spills hundreds of bytes at four. */
#define GPU_SLIDE_MIN_BLOCKS(width, K) ((width) == 8 && (K) <= 4 ? 4 : 3)

/* column (gpu_kernel_nlc_column.cuh): channel-last, stride 1, dilation 1, large K: one
 * channel and GPU_COLUMN_RUN positions per thread, a window of rows in registers that
 * slides GPU_COLUMN_CHUNK taps at a time; weights staged GPU_COLUMN_STAGE taps at a time. */
#define GPU_COLUMN_THREADS 128
#define GPU_COLUMN_MIN_BLOCKS 4 /* at most 128 registers: the run, its window, the next rows */
#define GPU_COLUMN_RUN 32
#define GPU_COLUMN_CHUNK 8
#define GPU_COLUMN_STAGE 64 /* a multiple of the chunk; 32 KiB for 128 channels */
#define GPU_COLUMN_MIN_CHANNELS 32 /* channel threads of a block at least: whole warps */
/* Taps staged at once. */
GPU_HD int64_t gpu_column_stage(int64_t K) {
    const int64_t taps = (K + GPU_COLUMN_CHUNK - 1) / GPU_COLUMN_CHUNK * GPU_COLUMN_CHUNK;
    return taps < GPU_COLUMN_STAGE ? taps : GPU_COLUMN_STAGE;
}
GPU_HD int64_t gpu_column_smem(int channel_threads, int64_t K) {
    return gpu_column_stage(K) * channel_threads * 4;
}

/* ---- when each family applies, beyond its layout and K range ------------------------ */

static inline int gpu_generic_fits(const gpu_conv_args *a) {
    (void)a;
    return 1;
}

static inline int gpu_lean_fits(const gpu_conv_args *a) {
    const int64_t K = a->kernel_size, S = a->stride, D = a->dilation;
    if (S == 1 && D == 1) return 1;
#define GPU_LEAN_IS(k, s, d) || (K == (k) && S == (s) && D == (d))
    return 0 GPU_LEAN_STEPPED(GPU_LEAN_IS);
#undef GPU_LEAN_IS
}

/* The smallest block's window fits shared memory. */
static inline int gpu_tile_fits(const gpu_conv_args *a) {
    const int xsize = gpu_dtype_size(a->dtype);
    const int64_t S = a->stride, D = a->dilation, K = a->kernel_size;
    const int64_t span = gpu_tile_span(GPU_TILE_MIN_THREADS, xsize, S, D);
    return gpu_tile_smem(span, gpu_tile_window(span, K, S, D), xsize, K, S, D) <= GPU_SMEM_LIMIT;
}

/* One phase: with dilation == stride, consecutive outputs read consecutive lattice
 * points (bench/RESULTS-gpu.md, runs A and B: the multi-phase version gathered every
 * dilation-th element per block and was L2-bound, slower than tile). */
static inline int gpu_lattice_fits(const gpu_conv_args *a) {
    return a->dilation == a->stride && gpu_lattice_smem(a->kernel_size) <= GPU_SMEM_LIMIT;
}

static inline int gpu_strip_fits(const gpu_conv_args *a) {
    (void)a;
    return 1;
}

static inline int gpu_nlc_fits(const gpu_conv_args *a) {
    (void)a;
    return 1;
}

static inline int gpu_slide_fits(const gpu_conv_args *a) {
    return a->stride == 1;
}

static inline int gpu_column_fits(const gpu_conv_args *a) {
    return a->stride == 1 && a->dilation == 1;
}

/* ---- the registry ----------------------------------------------------------------- */

/* Any layout class, mixed included. */
#define GPU_ANY_LAYOUT 2

/* X(ID, name, layout class, smallest K, largest K), in the order `dwconv info` and the
 * tests list them. */
#define GPU_FORWARD_FAMILIES(X)                                                       \
    X(GENERIC, generic, GPU_ANY_LAYOUT, 1, INT64_MAX)                                 \
    X(LEAN, lean, GPU_CHANNEL_FIRST, 1, GPU_LEAN_MAX_K)                               \
    X(STRIP, strip, GPU_CHANNEL_FIRST, 1, GPU_STRIP_MAX_K)                            \
    X(TILE, tile, GPU_CHANNEL_FIRST, 1, INT64_MAX)                                    \
    X(LATTICE, lattice, GPU_CHANNEL_FIRST, GPU_LATTICE_MIN_K, INT64_MAX)              \
    X(NLC, nlc, GPU_CHANNEL_LAST, 1, INT64_MAX)                                       \
    X(SLIDE, slide, GPU_CHANNEL_LAST, 1, GPU_SLIDE_MAX_K)                             \
    X(COLUMN, column, GPU_CHANNEL_LAST, 1, INT64_MAX)

#define GPU_FAMILY_ENUM(id, name, layout, k_min, k_max) GPU_FAMILY_##id,
enum gpu_family_id {
    GPU_FAMILY_AUTO = 0, /* DWCONV_GPU_KERNEL=auto, or unset: the choice rule */
    GPU_FORWARD_FAMILIES(GPU_FAMILY_ENUM) GPU_FAMILY_COUNT
};
#undef GPU_FAMILY_ENUM

typedef struct gpu_family_rule {
    const char *name;
    int layout; /* enum gpu_layout_class, or GPU_ANY_LAYOUT */
    int64_t k_min, k_max;
    int (*fits)(const gpu_conv_args *a);
} gpu_family_rule;

/* Family f's entry (f in [0, GPU_FAMILY_COUNT); "auto" applies to nothing itself). */
static inline const gpu_family_rule *gpu_family(int f) {
#define GPU_FAMILY_RULE(id, name, layout, k_min, k_max) {#name, layout, k_min, k_max, gpu_##name##_fits},
    static const gpu_family_rule rules[GPU_FAMILY_COUNT] = {
        {"auto", GPU_ANY_LAYOUT, 1, 0, NULL}, GPU_FORWARD_FAMILIES(GPU_FAMILY_RULE)};
#undef GPU_FAMILY_RULE
    return &rules[f];
}

/* Whether family f can run a: the one predicate every chooser and test asks. */
static inline int gpu_family_applies(int f, const gpu_conv_args *a) {
    if (f <= GPU_FAMILY_AUTO || f >= GPU_FAMILY_COUNT) return 0;
    const gpu_family_rule *r = gpu_family(f);
    return (r->layout == GPU_ANY_LAYOUT || r->layout == a->layout) &&
           a->kernel_size >= r->k_min && a->kernel_size <= r->k_max && r->fits(a);
}

/* The family named `name` ("auto" included), or -1. */
static inline int gpu_family_by_name(const char *name) {
    for (int f = 0; f < GPU_FAMILY_COUNT; f++)
        if (strcmp(name, gpu_family(f)->name) == 0) return f;
    return -1;
}

/* ---- a forward problem as the kernels see it ------------------------------------------ */

/* Strides of a (B, C, n) operand with those of size-1 dimensions set to 0. */
static inline void gpu_strides_of(const dwconv_operand *t, const int64_t size[3], int64_t *out) {
    for (int i = 0; i < 3; i++) out[i] = size[i] == 1 ? 0 : t->stride[i];
}

/* The kernels' argument for a validated forward problem (geometry unset): positions
 * adjacent in x and y make it channel-first, else channels adjacent channel-last,
 * else mixed (a dimension of size 1 is adjacent whatever its stride). */
static inline gpu_conv_args gpu_args_make(const dwconv_problem *p) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *x = &p->operand[DWCONV_ROLE_X], *y = &p->operand[DWCONV_ROLE_Y];
    gpu_conv_args a;
    memset(&a, 0, sizeof a);
    a.x = x->data, a.weight = p->operand[DWCONV_ROLE_WEIGHT].data;
    a.bias = p->operand[DWCONV_ROLE_BIAS].data, a.y = y->data;
    a.batch = d->batch, a.channels = d->channels, a.length = d->length;
    a.kernel_size = d->kernel_size, a.stride = d->stride, a.dilation = d->dilation;
    a.pad_left = d->pad_left, a.output_length = p->output_length;
    a.dtype = d->dtype, a.weight_dtype = d->weight_dtype;
    a.padding_mode = d->padding_mode, a.activation = d->activation;
    const int64_t xsize[3] = {d->batch, d->channels, d->length};
    const int64_t ysize[3] = {d->batch, d->channels, p->output_length};
    gpu_strides_of(x, xsize, a.x_stride);
    gpu_strides_of(y, ysize, a.y_stride);
    if (a.x_stride[DWCONV_DIM_POSITION] <= 1 && a.y_stride[DWCONV_DIM_POSITION] <= 1)
        a.layout = GPU_CHANNEL_FIRST;
    else if (a.x_stride[DWCONV_DIM_CHANNEL] <= 1 && a.y_stride[DWCONV_DIM_CHANNEL] <= 1)
        a.layout = GPU_CHANNEL_LAST;
    else
        a.layout = GPU_MIXED;
    return a;
}

#endif /* DWCONV_GPU_FAMILIES_H */
