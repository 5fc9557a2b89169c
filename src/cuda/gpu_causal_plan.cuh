/*
 * The steps of a causal operation, in stream order: plain host code shared by the
 * module (gpu_op_causal.cuh launches them) and the tests' CPU emulator (which runs
 * them), so that both run the same sequence.
 *
 * Causal forward:
 *   - packed sequences given by cu_seqlens: clear the verdict, the check kernel, then
 *     every kernel after it reads the verdict first (bad offsets: nothing written);
 *   - the outputs without packing: the forward's own family (a causal convolution
 *     whose first S inputs come from the state instead of the padding). lean and
 *     slide take the states themselves (the positions before 0 read the state, and
 *     the one thread that reads a row's state writes its final state): one launch.
 *     Other families run plain, then the outputs kernel redoes the first S positions
 *     (only those read a state) and the final states kernel follows;
 *   - packed by cu_seqlens: the family (which reads the verdict first) as one plain
 *     causal convolution over the whole row, then the outputs kernel redoes the first
 *     S positions of each sequence (the only ones whose taps reach before its start:
 *     its state, or zeros); seq_idx: the outputs kernel over every position;
 *   - the final states kernel runs after the outputs (which read the initial states
 *     it may overwrite).
 * Decode: one kernel that checks the index arrays in every block when B fits a block,
 * else clear, check kernel, decode kernel.
 */
#ifndef DWCONV_GPU_CAUSAL_PLAN_CUH
#define DWCONV_GPU_CAUSAL_PLAN_CUH

#include "gpu_kernel_causal_forward.cuh"
#include "gpu_kernel_causal_update.cuh"
#include "gpu_dispatch.cuh"
#include "gpu_launch.cuh"

enum gpu_causal_step_kind {
    GPU_STEP_CLEAR_VERDICT, /* zero the verdict (an int of device memory) */
    GPU_STEP_FAMILY,        /* a forward family's kernel (family, conv, launch) */
    GPU_STEP_KERNEL         /* a causal kernel with its arguments and geometry */
};

typedef struct gpu_causal_step {
    int kind;
    gpu_kernel_fn family_kernel; /* GPU_STEP_FAMILY: the instance, its argument and launch */
    gpu_conv_args conv;
    gpu_launch launch;
    gpu_causal_kernel_fn kernel;
    const char *name;
    gpu_causal_args args;
    int64_t grid[3];
    int threads;
    size_t smem;
} gpu_causal_step;

#define GPU_CAUSAL_MAX_STEPS 5

typedef struct gpu_causal_plan {
    int steps;
    gpu_causal_step step[GPU_CAUSAL_MAX_STEPS];
} gpu_causal_plan;

/* The kernels' argument for a validated causal problem (geometry unset). */
static inline gpu_causal_args gpu_causal_args_make(const dwconv_problem *p,
                                                   dwconv_index_violation *violation,
                                                   const int *verdict) {
    const dwconv_desc *d = &p->desc;
    const dwconv_operand *op = p->operand;
    gpu_causal_args a;
    memset(&a, 0, sizeof a);
    a.x = op[DWCONV_ROLE_X].data, a.weight = op[DWCONV_ROLE_WEIGHT].data;
    a.bias = op[DWCONV_ROLE_BIAS].data, a.y = op[DWCONV_ROLE_Y].data;
    const int update = p->op == DWCONV_OP_CAUSAL_UPDATE;
    a.state_in = update ? NULL : op[DWCONV_ROLE_STATE_IN].data;
    a.state_out = op[update ? DWCONV_ROLE_STATE : DWCONV_ROLE_STATE_OUT].data;
    a.cu_seqlens = (const int32_t *)op[DWCONV_ROLE_CU_SEQLENS].data;
    a.seq_idx = (const int32_t *)op[DWCONV_ROLE_SEQ_IDX].data;
    a.cache_seqlens = (const int32_t *)op[DWCONV_ROLE_CACHE_SEQLENS].data;
    a.state_indices = (const int32_t *)op[DWCONV_ROLE_STATE_INDICES].data;
    a.violation = violation, a.verdict = verdict;
    a.batch = d->batch, a.channels = d->channels, a.length = d->length;
    a.kernel_size = d->kernel_size, a.dilation = d->dilation, a.span = p->span;
    a.state_length = p->state_length, a.state_count = p->state_count;
    a.dtype = d->dtype, a.weight_dtype = d->weight_dtype, a.activation = d->activation;
    const int64_t size[3] = {d->batch, d->channels, d->length};
    gpu_strides_of(&op[DWCONV_ROLE_X], size, a.x_stride);
    gpu_strides_of(&op[DWCONV_ROLE_Y], size, a.y_stride);
    a.first_output = 0, a.last_output = d->length;
    return a;
}

/* A kernel's instance for the dtypes (the weight dtype is f32 or the dtype). */
#define GPU_CAUSAL_TYPED(a, K)                                                              \
    ((a).dtype == DWCONV_F16    ? ((a).weight_dtype == DWCONV_F16 ? K<DWCONV_F16, DWCONV_F16>   \
                                                                  : K<DWCONV_F16, DWCONV_F32>)  \
     : (a).dtype == DWCONV_BF16 ? ((a).weight_dtype == DWCONV_BF16 ? K<DWCONV_BF16, DWCONV_BF16> \
                                                                   : K<DWCONV_BF16, DWCONV_F32>) \
                                : K<DWCONV_F32, DWCONV_F32>)

static gpu_causal_step *gpu_causal_add(gpu_causal_plan *plan, int kind, const gpu_causal_args *a) {
    gpu_causal_step *s = &plan->step[plan->steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->args = *a;
    s->grid[0] = s->grid[1] = s->grid[2] = 1;
    return s;
}

/* Clear the verdict, then the check kernel over every item. */
static void gpu_causal_add_check(gpu_causal_plan *plan, const gpu_causal_args *a) {
    gpu_causal_add(plan, GPU_STEP_CLEAR_VERDICT, a);
    gpu_causal_step *s = gpu_causal_add(plan, GPU_STEP_KERNEL, a);
    s->kernel = dwconv_causal_check_kernel, s->name = "causal index check";
    s->threads = GPU_CAUSAL_THREADS;
    gpu_grid_clamp(s->grid, gpu_div_up(gpu_causal_check_items(a), GPU_CAUSAL_THREADS), 1, 1);
}

/* The outputs kernel over positions [first, last): threads along channels where y's
 * channels lie closer than its positions (as the generic forward kernel decides). */
static void gpu_causal_add_outputs(gpu_causal_plan *plan, const gpu_causal_args *base,
                                   int64_t first, int64_t last) {
    gpu_causal_step *s = gpu_causal_add(plan, GPU_STEP_KERNEL, base);
    gpu_causal_args *a = &s->args;
    a->first_output = first, a->last_output = last;
    const int64_t positions = last - first;
    a->channels_inner = a->channels > 1 &&
                        (positions == 1 || a->y_stride[DWCONV_DIM_CHANNEL] < a->y_stride[DWCONV_DIM_POSITION]);
    const int64_t inner = a->channels_inner ? a->channels : positions;
    const int64_t outer = a->channels_inner ? positions : a->channels;
    int tx = 1; /* a power of two: a block holds several short rows */
    while (tx < GPU_CAUSAL_THREADS && tx < inner) tx *= 2;
    a->inner_threads = tx;
    s->kernel = GPU_CAUSAL_TYPED(*a, dwconv_causal_outputs_kernel);
    s->name = "causal outputs";
    s->threads = GPU_CAUSAL_THREADS;
    gpu_grid_clamp(s->grid, gpu_div_up(inner, tx), gpu_div_up(outer, GPU_CAUSAL_THREADS / tx),
                   a->batch);
}

/* The outputs kernel over the first S positions of every packed sequence, threads
 * across channels. */
static void gpu_causal_add_sequence_starts(gpu_causal_plan *plan, const gpu_causal_args *base) {
    gpu_causal_step *s = gpu_causal_add(plan, GPU_STEP_KERNEL, base);
    gpu_causal_args *a = &s->args;
    a->sequence_starts = 1, a->channels_inner = 1;
    int tx = 1;
    while (tx < GPU_CAUSAL_THREADS && tx < a->channels) tx *= 2;
    a->inner_threads = tx;
    s->kernel = GPU_CAUSAL_TYPED(*a, dwconv_causal_outputs_kernel);
    s->name = "causal sequence starts";
    s->threads = GPU_CAUSAL_THREADS;
    gpu_grid_clamp(s->grid, gpu_div_up(a->channels, tx),
                   gpu_div_up(a->state_count * a->state_length, GPU_CAUSAL_THREADS / tx), 1);
}

static gpu_causal_kernel_fn gpu_causal_final_states_instance(int dtype) {
    return dtype == DWCONV_F16    ? dwconv_causal_final_states_kernel<DWCONV_F16>
           : dtype == DWCONV_BF16 ? dwconv_causal_final_states_kernel<DWCONV_BF16>
                                  : dwconv_causal_final_states_kernel<DWCONV_F32>;
}

/* Grid of the per-(sequence or state, channel) kernels: x = channel blocks, y = rows. */
static void gpu_causal_rows_grid(gpu_causal_step *s, int threads, int64_t channels, int64_t rows) {
    s->threads = threads;
    gpu_grid_clamp(s->grid, gpu_div_up(channels, threads), rows, 1);
}

/* Whether family f's kernel takes the states itself: lean (a tile is longer than
 * any S it takes), slide at dilation 1 where a thread's run is at least S long (so
 * that only the run from position 0 reads the states; with dilation, the run of each
 * phase would). */
static int gpu_causal_fused(const gpu_conv_args *a, const gpu_launch *l) {
    if (l->family == GPU_FAMILY_LEAN) return 1;
    return l->family == GPU_FAMILY_SLIDE && a->dilation == 1 &&
           a->steps * GPU_SLIDE_STEP(gpu_slide_width(a)) >= a->kernel_size - 1;
}

/* The forward's steps. verdict: an int of device memory for the check's verdict;
 * forced: a forward family to use where it applies (DWCONV_GPU_KERNEL). */
static void gpu_causal_plan_forward(const dwconv_problem *p, dwconv_index_violation *violation,
                                    int *verdict, int forced, gpu_causal_plan *plan) {
    plan->steps = 0;
    const int packed_cu = p->operand[DWCONV_ROLE_CU_SEQLENS].data != NULL;
    const gpu_causal_args a = gpu_causal_args_make(p, violation, packed_cu ? verdict : NULL);
    if (packed_cu) gpu_causal_add_check(plan, &a);
    const int64_t S = a.state_length, L = a.length;
    int final_kernel = a.state_out && S > 0;
    if (a.seq_idx) {
        gpu_causal_add_outputs(plan, &a, 0, L);
    } else {
        gpu_causal_step *s = gpu_causal_add(plan, GPU_STEP_FAMILY, &a);
        s->conv = gpu_args_make(p);
        s->conv.skip = a.verdict; /* bad offsets: the family writes nothing either */
        gpu_plan_launch(forced, &s->conv, &s->launch);
        s->name = gpu_family(s->launch.family)->name;
        const int states = !packed_cu && (a.state_in || a.state_out) && S > 0;
        if (states && gpu_causal_fused(&s->conv, &s->launch)) {
            s->conv.state_in = a.state_in, s->conv.state_out = a.state_out;
            s->conv.state_length = S;
            final_kernel = 0;
        }
        s->family_kernel = gpu_family_instance(s->launch.family, &s->conv);
        if (packed_cu) /* always: it also records bad offsets */
            gpu_causal_add_sequence_starts(plan, &a);
        else if (a.state_in && S > 0 && !s->conv.state_in)
            gpu_causal_add_outputs(plan, &a, 0, S < L ? S : L);
    }
    if (final_kernel) {
        gpu_causal_step *s = gpu_causal_add(plan, GPU_STEP_KERNEL, &a);
        s->kernel = gpu_causal_final_states_instance(a.dtype), s->name = "causal final states";
        gpu_causal_rows_grid(s, GPU_CAUSAL_THREADS, a.channels, a.state_count);
    }
}

/* Sequences a decode block checks itself: one per thread. */
#define GPU_UPDATE_BLOCK_CHECK GPU_UPDATE_THREADS

static void gpu_causal_plan_update(const dwconv_problem *p, dwconv_index_violation *violation,
                                   int *verdict, gpu_causal_plan *plan) {
    plan->steps = 0;
    gpu_causal_args a = gpu_causal_args_make(p, violation, NULL);
    const int indexed = a.state_indices || a.cache_seqlens;
    const int in_block = indexed && a.batch <= GPU_UPDATE_BLOCK_CHECK;
    if (indexed && !in_block) {
        a.verdict = verdict;
        gpu_causal_add_check(plan, &a);
    }
    a.check_in_block = in_block;
    gpu_causal_step *s = gpu_causal_add(plan, GPU_STEP_KERNEL, &a);
    const int window = gpu_update_window_taps(a.kernel_size, a.dilation);
    const bool quads = window && gpu_update_quads(&a);
    s->kernel = GPU_CAUSAL_TYPED(a, gpu_update_instance)(window, quads);
    s->name = quads ? GPU_UPDATE_QUADS_NAME : window ? GPU_UPDATE_WINDOW_NAME : "causal update";
    /* the window takes GPU_UPDATE_WINDOW_CHANNELS channels a thread */
    const int64_t per_thread = window ? GPU_UPDATE_WINDOW_CHANNELS : 1;
    gpu_causal_rows_grid(s, GPU_UPDATE_THREADS, gpu_div_up(a.channels, per_thread), a.batch);
    s->smem = in_block ? gpu_causal_block_check_smem(a.batch) : 0;
}

static void gpu_causal_plan_make(const dwconv_problem *p, dwconv_index_violation *violation,
                                 int *verdict, int forced, gpu_causal_plan *plan) {
    if (p->op == DWCONV_OP_CAUSAL_UPDATE) gpu_causal_plan_update(p, violation, verdict, plan);
    else gpu_causal_plan_forward(p, violation, verdict, forced, plan);
}

#endif /* DWCONV_GPU_CAUSAL_PLAN_CUH */
