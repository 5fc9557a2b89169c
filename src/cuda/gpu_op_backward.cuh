/*
 * The backward operation in the GPU module. Included by gpu_module.cu.
 */
#ifndef DWCONV_GPU_OP_BACKWARD_CUH
#define DWCONV_GPU_OP_BACKWARD_CUH

static dwconv_status gpu_op_backward(gpu_state *s, const dwconv_problem *p, int launch,
                                     char *msg) {
    (void)s, (void)p, (void)launch;
    snprintf(msg, DWCONV_MSG_SIZE, "the backward pass is not in this " DWCONV_GPU_RUNTIME
             " module yet");
    return DWCONV_ERROR_UNSUPPORTED;
}

#endif /* DWCONV_GPU_OP_BACKWARD_CUH */
