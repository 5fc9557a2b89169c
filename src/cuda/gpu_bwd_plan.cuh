/*
 * The backward's launches: which kernels, in which order, with which geometry, and
 * the scratch they share. Plain host code, shared by the module (gpu_op_backward.cuh)
 * and the tests' CPU emulator, which run the same list.
 *
 *   1. warp    (gpu_kernel_bwd_ncl_warp.cuh), channel-first rows of 8 chunks or more,
 *              K <= 8 at stride 1 (or the forward lean's stepped K: stride 2, dilated):
 *              per tile of 32 chunks, a lane per
 *              chunk: g, its partial sums, dx of the tile's inputs whose readers all
 *              exist; the tile's tree; else
 *      wide    (gpu_kernel_bwd_ncl_wide.cuh), the same tiles for K above the warp
 *              kernel's at stride and dilation 1 (up to GPU_BWD_WIDE_MAX_K), K at run
 *              time, the sums in register blocks over per-lane shared columns; else
 *      tile    (gpu_kernel_bwd_ncl_tile.cuh), channel-first rows of 8 chunks or more:
 *              per tile of up to 32 chunks of one row: g, the chunk partial sums of
 *              dweight and dbias and their tree over the tile, dx of the tile's inputs
 *              (all but the row ends under non-zeros padding); else
 *      nlc     (gpu_kernel_bwd_nlc.cuh), channel-last, stride 1, dilation 1, K <= 8:
 *              per (b, chunk of 64 outputs, 32 channels), staged, a lane per channel:
 *              the same, in registers; else
 *      chunk   (gpu_kernel_bwd_chunk.cuh): per (b, c, chunk of 64 outputs): the same
 *              for one chunk, anything;
 *   2. gather  (gpu_kernel_bwd_gather.cuh): dx of the inputs left by 1 (for warp, also
 *              the inputs an output outside the row would read), and the causal
 *              backward's state gradients;
 *   3. reduce  (gpu_kernel_bwd_reduce.cuh): each row's tile partials into row sums;
 *   4. reduce  the rows' sums into dweight and dbias.
 * Steps that have nothing to do are left out (no dx: 2; no dweight, dbias: 3, 4).
 */
#ifndef DWCONV_GPU_BWD_PLAN_CUH
#define DWCONV_GPU_BWD_PLAN_CUH

#include <string.h>

#include "gpu_kernel_bwd_chunk.cuh"
#include "gpu_kernel_bwd_gather.cuh"
#include "gpu_kernel_bwd_ncl_tile.cuh"
#include "gpu_kernel_bwd_ncl_warp.cuh"
#include "gpu_kernel_bwd_ncl_wide.cuh"
#include "gpu_kernel_bwd_nlc.cuh"
#include "gpu_kernel_bwd_reduce.cuh"
#include "gpu_launch.cuh"

#define GPU_BWD_MAX_STEPS 4

typedef struct gpu_bwd_step {
    gpu_bwd_kernel_fn kernel;
    const char *name;
    int64_t grid[3];
    int threads;
    size_t smem;
} gpu_bwd_step;

typedef struct gpu_bwd_plan {
    gpu_bwd_step step[GPU_BWD_MAX_STEPS];
    int steps;
    int64_t part_floats, row_floats; /* scratch: the tile partials, then the row sums */
} gpu_bwd_plan;

/* The kernels' argument for a validated backward problem (plan unset). */
static inline gpu_bwd_args gpu_bwd_args_make(const dwconv_problem *p) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *op = p->operand;
    gpu_bwd_args a;
    memset(&a, 0, sizeof a);
    a.x = op[DWCONV_ROLE_X].data, a.weight = op[DWCONV_ROLE_WEIGHT].data;
    a.bias = op[DWCONV_ROLE_BIAS].data, a.dy = op[DWCONV_ROLE_DY].data;
    a.dx = op[DWCONV_ROLE_DX].data, a.dweight = op[DWCONV_ROLE_DWEIGHT].data;
    a.dbias = op[DWCONV_ROLE_DBIAS].data;
    a.batch = d->batch, a.channels = d->channels, a.length = d->length;
    a.kernel_size = d->kernel_size, a.stride = d->stride, a.dilation = d->dilation;
    a.pad_left = d->pad_left, a.output_length = p->output_length;
    a.span = d->dilation * (d->kernel_size - 1);
    a.dtype = d->dtype, a.weight_dtype = d->weight_dtype, a.grad_dtype = p->grad_dtype;
    a.padding_mode = d->padding_mode, a.activation = d->activation;
    const int64_t xsize[3] = {d->batch, d->channels, d->length};
    const int64_t ysize[3] = {d->batch, d->channels, p->output_length};
    gpu_strides_of(&op[DWCONV_ROLE_X], xsize, a.x_stride);
    gpu_strides_of(&op[DWCONV_ROLE_DY], ysize, a.dy_stride);
    if (a.dx) gpu_strides_of(&op[DWCONV_ROLE_DX], xsize, a.dx_stride);
    a.sums = a.dweight || a.dbias;
    a.state_length = p->state_length;
    a.state = op[DWCONV_ROLE_STATE_IN].data, a.dstate_out = op[DWCONV_ROLE_DSTATE_OUT].data;
    a.dstate_in = op[DWCONV_ROLE_DSTATE_IN].data;
    return a;
}

/* F::get<XT, WT>(a) for a's dtypes (the weight dtype is f32 or the dtype itself). */
template <class F> static gpu_bwd_kernel_fn gpu_bwd_typed(const gpu_bwd_args *a) {
    const int same = a->weight_dtype == a->dtype;
    switch (a->dtype) {
    case DWCONV_F16:
        return same ? F::template get<DWCONV_F16, DWCONV_F16>(a) : F::template get<DWCONV_F16, DWCONV_F32>(a);
    case DWCONV_BF16:
        return same ? F::template get<DWCONV_BF16, DWCONV_BF16>(a) : F::template get<DWCONV_BF16, DWCONV_F32>(a);
    default: return F::template get<DWCONV_F32, DWCONV_F32>(a);
    }
}
struct gpu_bwd_chunk_kernels {
    template <int XT, int WT> static gpu_bwd_kernel_fn get(const gpu_bwd_args *) { return dwconv_bwd_chunk_kernel<XT, WT>; }
};
struct gpu_bwd_tile_kernels {
    template <int XT, int WT> static gpu_bwd_kernel_fn get(const gpu_bwd_args *) { return dwconv_bwd_ncl_tile_kernel<XT, WT>; }
};
/* nlc's instance for a run-time K in [1, GPU_BWD_NLC_MAX_K]. */
template <int XT, int WT, int K> struct gpu_bwd_nlc_k {
    static gpu_bwd_kernel_fn get(int64_t k) {
        return k == K ? dwconv_bwd_nlc_kernel<XT, WT, K> : gpu_bwd_nlc_k<XT, WT, K - 1>::get(k);
    }
};
template <int XT, int WT> struct gpu_bwd_nlc_k<XT, WT, 0> {
    static gpu_bwd_kernel_fn get(int64_t) { return NULL; }
};
/* warp's instance for dilation 1 and a run-time K in [1, K]. */
template <int XT, int WT, int K> struct gpu_bwd_warp_k {
    static gpu_bwd_kernel_fn get(int64_t k) {
        return k == K ? dwconv_bwd_ncl_warp_kernel<XT, WT, K, 1, 1> : gpu_bwd_warp_k<XT, WT, K - 1>::get(k);
    }
};
template <int XT, int WT> struct gpu_bwd_warp_k<XT, WT, 0> {
    static gpu_bwd_kernel_fn get(int64_t) { return NULL; }
};
/* ... or one of the forward lean's stepped K (GPU_LEAN_STEPPED, GPU_BWD_WARP_STEPPED). */
struct gpu_bwd_warp_kernels {
    template <int XT, int WT> static gpu_bwd_kernel_fn get(const gpu_bwd_args *a) {
        if (a->stride == 1 && a->dilation == 1) return gpu_bwd_warp_k<XT, WT, GPU_BWD_WARP_MAX_K>::get(a->kernel_size);
#define GPU_BWD_WARP_PICK(K_, S_, D_)                                                                         \
    if (GPU_BWD_WARP_STEPPED(K_, S_, D_) && a->kernel_size == K_ && a->stride == S_ && a->dilation == D_)      \
        return dwconv_bwd_ncl_warp_kernel<XT, WT, K_, GPU_BWD_WARP_STEPPED(K_, S_, D_) ? S_ : 1,              \
                                          GPU_BWD_WARP_STEPPED(K_, S_, D_) ? D_ : 1>;
        GPU_LEAN_STEPPED(GPU_BWD_WARP_PICK)
#undef GPU_BWD_WARP_PICK
        return NULL;
    }
};
struct gpu_bwd_wide_kernels {
    template <int XT, int WT> static gpu_bwd_kernel_fn get(const gpu_bwd_args *) { return dwconv_bwd_ncl_wide_kernel<XT, WT>; }
};
struct gpu_bwd_nlc_kernels {
    template <int XT, int WT> static gpu_bwd_kernel_fn get(const gpu_bwd_args *a) {
        return gpu_bwd_nlc_k<XT, WT, GPU_BWD_NLC_MAX_K>::get(a->kernel_size);
    }
};
struct gpu_bwd_gather_kernels {
    template <int XT, int WT> static gpu_bwd_kernel_fn get(const gpu_bwd_args *) { return dwconv_bwd_gather_kernel<XT, WT>; }
};

/* Inputs at each end of a row that a non-zeros padding mode also routes gradient to
 * from padded positions (reflect: [1, pad_left] and its mirror; replicate: the end
 * elements; circular: the other end's wrap): at most pad_left + (padded positions
 * read past the row) + 1 at either end. */
static inline int64_t gpu_bwd_edge(const gpu_bwd_args *a) {
    if (a->padding_mode == DWCONV_PAD_ZEROS) return 0;
    const int64_t last = (a->output_length - 1) * a->stride - a->pad_left + a->span;
    return a->pad_left + (last >= a->length ? last - a->length + 1 : 0) + 1;
}

/* Rows shorter than this many chunks take the chunk kernel: a tile would idle. */
#define GPU_BWD_TILE_MIN_CHUNKS 8

/* Chunks per tile of the channel-first tile kernel for a (halo set), or 0 where it
 * does not apply: x, dy and dx channel-first, rows of at least GPU_BWD_TILE_MIN_CHUNKS
 * chunks, and a tile of that many whose window fits shared memory. */
static inline int64_t gpu_bwd_tile_chunks(const gpu_bwd_args *a) {
    const int64_t chunks = dwconv_grad_chunks(a->output_length);
    if (a->x_stride[DWCONV_DIM_POSITION] > 1 || a->dy_stride[DWCONV_DIM_POSITION] > 1 ||
        (a->dx && a->dx_stride[DWCONV_DIM_POSITION] > 1) || chunks < GPU_BWD_TILE_MIN_CHUNKS)
        return 0;
    int64_t tc = gpu_pow2_at_least(chunks);
    if (tc > GPU_BWD_TILE_MAX_CHUNKS) tc = GPU_BWD_TILE_MAX_CHUNKS;
    for (; tc >= GPU_BWD_TILE_MIN_CHUNKS; tc /= 2)
        if ((size_t)gpu_bwd_tile_layout_of(tc, a->halo, a->kernel_size, a->stride, a->dilation).words * 4 <=
            GPU_SMEM_LIMIT)
            return tc;
    return 0;
}

/* The warp instance for a (NULL where it has none: K above GPU_BWD_WARP_MAX_K at
 * stride and dilation 1, or a stride or dilation not among its stepped K). */
static inline gpu_bwd_kernel_fn gpu_bwd_warp_instance(const gpu_bwd_args *a) {
    return gpu_bwd_typed<gpu_bwd_warp_kernels>(a);
}
/* What the warp and wide kernels' tiles need: x, dy and dx channel-first with adjacent
 * positions, rows of at least GPU_BWD_TILE_MIN_CHUNKS chunks (shorter ones would idle
 * most lanes). */
static inline int gpu_bwd_lane_rows(const gpu_bwd_args *a) {
    return a->x_stride[DWCONV_DIM_POSITION] <= 1 && a->dy_stride[DWCONV_DIM_POSITION] <= 1 &&
           (!a->dx || a->dx_stride[DWCONV_DIM_POSITION] <= 1) &&
           dwconv_grad_chunks(a->output_length) >= GPU_BWD_TILE_MIN_CHUNKS;
}
/* Whether the warp kernel applies: such rows and an instance for the shape. */
static inline int gpu_bwd_warp_fits(const gpu_bwd_args *a) {
    return gpu_bwd_lane_rows(a) && gpu_bwd_warp_instance(a) != NULL;
}
/* Whether the wide kernel applies: such rows, stride and dilation 1, K above the warp
 * kernel's and at most GPU_BWD_WIDE_MAX_K. */
static inline int gpu_bwd_wide_fits(const gpu_bwd_args *a) {
    return gpu_bwd_lane_rows(a) && a->stride == 1 && a->dilation == 1 &&
           a->kernel_size > GPU_BWD_WARP_MAX_K && a->kernel_size <= GPU_BWD_WIDE_MAX_K;
}

/* The warp instance's shared memory (x's region grows with the stride). */
template <int S> static inline size_t gpu_bwd_warp_smem_bytes_of(const gpu_bwd_args *a) {
    return a->dtype == DWCONV_F32 ? gpu_bwd_warp_smem<DWCONV_F32, S>::bytes() : gpu_bwd_warp_smem<DWCONV_BF16, S>::bytes();
}
static inline size_t gpu_bwd_warp_smem_bytes(const gpu_bwd_args *a) {
    return a->stride == 1 ? gpu_bwd_warp_smem_bytes_of<1>(a) : gpu_bwd_warp_smem_bytes_of<GPU_BWD_WARP_MAX_S>(a);
}

/* Whether the channel-last kernel applies: x, dy and dx channel-last, stride 1,
 * dilation 1, K <= GPU_BWD_NLC_MAX_K. */
static inline int gpu_bwd_nlc_fits(const gpu_bwd_args *a) {
    return a->x_stride[DWCONV_DIM_CHANNEL] <= 1 && a->dy_stride[DWCONV_DIM_CHANNEL] <= 1 &&
           (!a->dx || a->dx_stride[DWCONV_DIM_CHANNEL] <= 1) && a->stride == 1 &&
           a->dilation == 1 && a->kernel_size <= GPU_BWD_NLC_MAX_K;
}

/* The nlc instance for a. */
static inline gpu_bwd_kernel_fn gpu_bwd_nlc_instance(const gpu_bwd_args *a) {
    return gpu_bwd_typed<gpu_bwd_nlc_kernels>(a);
}

static inline void gpu_bwd_step_add(gpu_bwd_plan *pl, gpu_bwd_kernel_fn kernel, const char *name,
                                    int64_t items, int threads, size_t smem) {
    gpu_bwd_step *s = &pl->step[pl->steps++];
    s->kernel = kernel, s->name = name, s->threads = threads, s->smem = smem;
    gpu_grid_clamp(s->grid, gpu_div_up(items, threads), 1, 1);
}

/* Threads per segment of n values: about 8 values each, at most 32 threads. */
static inline int gpu_bwd_segment_threads(int64_t n) {
    int t = 1;
    while (t < 32 && (int64_t)t * GPU_BWD_REDUCE_BATCH < n) t *= 2;
    return t;
}

/* The launches for a (its plan fields set); scratch pointers are set later
 * (gpu_bwd_set_scratch). */
static inline void gpu_bwd_plan_make(gpu_bwd_args *a, gpu_bwd_plan *pl) {
    memset(pl, 0, sizeof *pl);
    const int64_t K = a->kernel_size, L = a->length;
    const int64_t chunks = dwconv_grad_chunks(a->output_length);
    a->tile_chunks = 1, a->tiles = chunks;
    a->halo = (a->span + a->stride - 1) / a->stride;
    a->channels_inner = a->channels > 1 &&
                        (chunks == 1 || a->dy_stride[DWCONV_DIM_CHANNEL] <
                                            DWCONV_GRAD_CHUNK * a->dy_stride[DWCONV_DIM_POSITION]);
    /* dx: the row ends under non-zeros padding to the gather kernel */
    const int64_t edge = gpu_bwd_edge(a);
    a->edge_lo = edge < L ? edge : L;
    a->edge_hi = edge < L - a->edge_lo ? edge : L - a->edge_lo;
    if (a->dstate_out) /* the last S inputs: the final state's gradient is added last */
        a->edge_hi = gpu_clamp(a->state_length, a->edge_hi, L - a->edge_lo);
    if (!a->dx) a->edge_lo = a->edge_hi = 0;
    a->state_positions = a->dstate_in ? a->state_length : 0;
    const int64_t tile_chunks = gpu_bwd_tile_chunks(a);
    if (gpu_bwd_warp_fits(a)) { /* channel-first, small K: a lane per chunk */
        a->tile_chunks = GPU_WARP, a->tiles = gpu_div_up(chunks, GPU_WARP);
        gpu_bwd_warp_edges(a);
        gpu_bwd_step_add(pl, gpu_bwd_warp_instance(a), "backward warp",
                         a->batch * a->channels * a->tiles * GPU_WARP, GPU_WARP, gpu_bwd_warp_smem_bytes(a));
    } else if (gpu_bwd_wide_fits(a)) { /* channel-first, wider K: register blocks */
        a->tile_chunks = GPU_WARP, a->tiles = gpu_div_up(chunks, GPU_WARP);
        if (a->padding_mode != DWCONV_PAD_ZEROS || a->dstate_out) gpu_bwd_warp_edges(a); /* else all its own */
        gpu_bwd_step_add(pl, gpu_bwd_typed<gpu_bwd_wide_kernels>(a), "backward wide",
                         a->batch * a->channels * a->tiles * GPU_WARP, GPU_WARP,
                         (size_t)gpu_bwd_wide_layout_of(K).words * 4);
    } else if (tile_chunks) { /* channel-first rows: the tile kernel */
        a->tile_chunks = tile_chunks, a->tiles = gpu_div_up(chunks, tile_chunks);
        gpu_bwd_step *s = &pl->step[pl->steps++];
        s->kernel = gpu_bwd_typed<gpu_bwd_tile_kernels>(a);
        s->name = "backward tile";
        s->threads = GPU_BWD_TILE_THREADS;
        s->smem = (size_t)gpu_bwd_tile_layout_of(tile_chunks, a->halo, K, a->stride, a->dilation).words * 4;
        gpu_grid_clamp(s->grid, a->tiles, a->channels, a->batch);
    } else if (gpu_bwd_nlc_fits(a)) { /* channel-last, small K: everything in registers */
        gpu_bwd_step_add(pl, gpu_bwd_nlc_instance(a), "backward nlc",
                         a->batch * chunks * gpu_div_up(a->channels, GPU_WARP) * GPU_WARP, GPU_WARP,
                         gpu_bwd_nlc_smem(K, gpu_dtype_size(a->dtype)));
    } else { /* the chunk kernel: a ring of g for dx if it fits, else dx by gather */
        const int T = GPU_BWD_CHUNK_THREADS;
        const int64_t ring = a->dx ? a->halo + 1 : 0;
        a->ring = (int)((size_t)ring * T * 4 <= GPU_SMEM_LIMIT ? ring : 0);
        if (a->dx && !a->ring) a->edge_lo = L, a->edge_hi = 0; /* every input by gather */
        a->partials_shared = a->sums && (size_t)(a->ring + K + 1) * T * 4 <= GPU_SMEM_LIMIT;
        if (a->sums || a->ring) {
            const size_t smem = (size_t)(a->ring + (a->partials_shared ? K + 1 : 0)) * T * 4;
            gpu_bwd_step_add(pl, gpu_bwd_typed<gpu_bwd_chunk_kernels>(a), "backward chunk",
                             a->batch * a->channels * chunks, T, smem);
        }
    }
    if (a->state_positions + a->edge_lo + a->edge_hi > 0)
        gpu_bwd_step_add(pl, gpu_bwd_typed<gpu_bwd_gather_kernels>(a), "backward gather",
                         a->batch * a->channels * (a->state_positions + a->edge_lo + a->edge_hi),
                         GPU_BWD_GATHER_THREADS, 0);
    if (a->sums) {
        const int R = GPU_BWD_REDUCE_THREADS;
        a->reduce_threads[0] = gpu_bwd_segment_threads(a->tiles);
        a->reduce_threads[1] = gpu_bwd_segment_threads(a->batch);
        const int64_t taps = a->channels * (K + 1);
        gpu_bwd_step_add(pl, dwconv_bwd_reduce_kernel<false>, "backward row sums",
                         taps * a->batch * a->reduce_threads[0], R, (size_t)R * 4);
        gpu_bwd_step_add(pl, dwconv_bwd_reduce_kernel<true>, "backward weight sums",
                         taps * a->reduce_threads[1], R, (size_t)R * 4);
        pl->part_floats = taps * a->batch * a->tiles;
        pl->row_floats = taps * a->batch;
    }
}

/* Bytes of scratch the plan needs (0: none). */
static inline size_t gpu_bwd_scratch_bytes(const gpu_bwd_plan *pl) {
    return (size_t)(pl->part_floats + pl->row_floats) * sizeof(float);
}

static inline void gpu_bwd_set_scratch(gpu_bwd_args *a, const gpu_bwd_plan *pl, void *scratch) {
    a->part = (float *)scratch;
    a->rows = a->part ? a->part + pl->part_floats : NULL;
}

#endif /* DWCONV_GPU_BWD_PLAN_CUH */
