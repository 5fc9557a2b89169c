/*
 * The forward operation in the GPU module: the kernel the launch rules choose
 * (gpu_launch.cuh), launched on the context's stream. Included by gpu_module.cu.
 */
#ifndef DWCONV_GPU_OP_FORWARD_CUH
#define DWCONV_GPU_OP_FORWARD_CUH

/* launch 0: only say whether the problem can run (supports); 1: run it, on the
 * context's device (the caller made it current). */
static dwconv_status gpu_op_forward(gpu_state *s, const dwconv_problem *p, int launch,
                                    char *msg) {
    if (!launch) return DWCONV_SUCCESS; /* every forward problem has a kernel */
    gpu_conv_args a = gpu_args_make(p);
    gpu_launch l;
    gpu_plan_launch(s->forced_kernel, &a, &l);
    const gpu_kernel_fn kernel = gpu_kernel_instance(&a, l.kernel);
    void *params[] = {&a};
    return gpu_launch_kernel(s, (const void *)kernel, gpu_kernel_names[l.kernel], l.grid,
                             l.threads, l.smem, params, msg);
}

#endif /* DWCONV_GPU_OP_FORWARD_CUH */
