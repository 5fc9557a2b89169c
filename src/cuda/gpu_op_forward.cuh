/*
 * The forward operation in the GPU module: the family the launch rules choose
 * (gpu_launch.cuh), launched on the context's stream. Included by gpu_module.cu.
 */
#ifndef DWCONV_GPU_OP_FORWARD_CUH
#define DWCONV_GPU_OP_FORWARD_CUH

/* launch 0: only say whether the problem can run (supports: every forward problem
 * has a family); 1: run it, on the context's device (the caller made it current).
 * With DWCONV_GPU_KERNEL_STRICT set, a run that the forced family does not apply to
 * is refused instead of left to the choice (the tests learn that way that the forced
 * family is what ran). */
static dwconv_status gpu_op_forward(gpu_state *s, const dwconv_problem *p, int launch,
                                    char *msg) {
    if (!launch) return DWCONV_SUCCESS;
    gpu_conv_args a = gpu_args_make(p);
    if (s->strict_kernel && s->forced_kernel != GPU_FAMILY_AUTO &&
        !gpu_family_applies(s->forced_kernel, &a)) {
        snprintf(msg, DWCONV_MSG_SIZE, "DWCONV_GPU_KERNEL=%s does not apply to this problem "
                 "and DWCONV_GPU_KERNEL_STRICT is set", gpu_family(s->forced_kernel)->name);
        return DWCONV_ERROR_UNSUPPORTED;
    }
    gpu_launch l;
    gpu_plan_launch(s->forced_kernel, &a, &l);
    const gpu_kernel_fn kernel = gpu_family_instance(l.family, &a);
    if (!kernel) { /* a family's predicate and its instances disagree: a bug */
        snprintf(msg, DWCONV_MSG_SIZE, "the %s kernel has no instance for K = %lld, stride "
                 "%lld, dilation %lld", gpu_family(l.family)->name, (long long)a.kernel_size,
                 (long long)a.stride, (long long)a.dilation);
        return DWCONV_ERROR_UNSUPPORTED;
    }
    void *params[] = {&a};
    return gpu_launch_kernel(s, (const void *)kernel, gpu_family(l.family)->name, l.grid,
                             l.threads, l.smem, params, msg);
}

#endif /* DWCONV_GPU_OP_FORWARD_CUH */
