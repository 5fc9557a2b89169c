/*
 * The causal operations (carried states, packed sequences, decode) in the GPU module:
 * the steps gpu_causal_plan.cuh lays out, launched on the context's stream. Nothing
 * waits for the device: bad device-resident indices are found there (nothing is
 * written, the next synchronize reports them), so a call can be captured in a graph.
 * Included by gpu_module.cu.
 */
#ifndef DWCONV_GPU_OP_CAUSAL_CUH
#define DWCONV_GPU_OP_CAUSAL_CUH

#include "gpu_causal_plan.cuh"

/* launch 0: only say whether the problem can run (every causal problem can); 1: run. */
static dwconv_status gpu_op_causal(gpu_state *s, const dwconv_problem *p, int launch,
                                   char *msg) {
    if (!launch) return DWCONV_SUCCESS;
    /* the verdict of the check kernel: context scratch, so that once a first call has
     * grown it no call allocates (graph capture stays legal) */
    void *verdict = NULL;
    dwconv_status st = gpu_scratch(s, 16, &verdict, msg);
    if (st) return st;
    /* the mapped record's host address is its device address (unified addressing) */
    gpu_causal_plan plan;
    gpu_causal_plan_make(p, s->violation, (int *)verdict, s->forced_kernel, &plan);
    for (int i = 0; i < plan.steps; i++) {
        gpu_causal_step *step = &plan.step[i];
        if (step->kind == GPU_STEP_CLEAR_VERDICT) {
            GPU_TRY(cudaMemsetAsync(verdict, 0, sizeof(int), gpu_stream(s)), msg);
        } else if (step->kind == GPU_STEP_FAMILY) {
            if (!step->family_kernel) { /* a family's predicate and its instances disagree */
                snprintf(msg, DWCONV_MSG_SIZE, "the %s kernel has no instance for K = %lld, "
                         "dilation %lld", step->name, (long long)p->desc.kernel_size,
                         (long long)p->desc.dilation);
                return DWCONV_ERROR_UNSUPPORTED;
            }
            void *params[] = {&step->conv};
            st = gpu_launch_kernel(s, (const void *)step->family_kernel, step->name,
                                   step->launch.grid, step->launch.threads, step->launch.smem,
                                   params, msg);
        } else {
            void *params[] = {&step->args};
            st = gpu_launch_kernel(s, (const void *)step->kernel, step->name, step->grid,
                                   step->threads, step->smem, params, msg);
        }
        if (st) return st;
    }
    return DWCONV_SUCCESS;
}

#endif /* DWCONV_GPU_OP_CAUSAL_CUH */
