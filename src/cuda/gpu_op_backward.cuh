/*
 * The backward operation in the GPU module: the launches of gpu_bwd_plan.cuh on the
 * context's stream, with the context's scratch for the weight and bias sums (grown by
 * the first call that needs more, then kept: later calls allocate nothing, so a call
 * may be captured into a CUDA graph once the same call has run uncaptured). Included
 * by gpu_module.cu.
 */
#ifndef DWCONV_GPU_OP_BACKWARD_CUH
#define DWCONV_GPU_OP_BACKWARD_CUH

/* launch 0: only say whether the problem can run (every backward problem can, the
 * causal backward with states included); 1: run it. */
static dwconv_status gpu_op_backward(gpu_state *s, const dwconv_problem *p, int launch,
                                     char *msg) {
    if (!launch) return DWCONV_SUCCESS;
    gpu_bwd_args a = gpu_bwd_args_make(p);
    gpu_bwd_plan plan;
    gpu_bwd_plan_make(&a, &plan);
    void *scratch = NULL;
    const size_t bytes = gpu_bwd_scratch_bytes(&plan);
    if (bytes) {
        dwconv_status st = gpu_scratch(s, bytes, &scratch, msg);
        if (st != DWCONV_SUCCESS) return st;
    }
    gpu_bwd_set_scratch(&a, &plan, scratch);
    void *params[] = {&a};
    for (int i = 0; i < plan.steps; i++) {
        const gpu_bwd_step *st = &plan.step[i];
        dwconv_status r = gpu_launch_kernel(s, (const void *)st->kernel, st->name, st->grid,
                                            st->threads, st->smem, params, msg);
        if (r != DWCONV_SUCCESS) return r;
    }
    return DWCONV_SUCCESS;
}

#endif /* DWCONV_GPU_OP_BACKWARD_CUH */
