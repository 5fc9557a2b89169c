/*
 * The causal operations (carried states, packed sequences, decode) in the GPU module.
 * Included by gpu_module.cu.
 */
#ifndef DWCONV_GPU_OP_CAUSAL_CUH
#define DWCONV_GPU_OP_CAUSAL_CUH

static dwconv_status gpu_op_causal(gpu_state *s, const dwconv_problem *p, int launch,
                                   char *msg) {
    (void)s, (void)p, (void)launch;
    snprintf(msg, DWCONV_MSG_SIZE, "the causal operations are not in this " DWCONV_GPU_RUNTIME
             " module yet");
    return DWCONV_ERROR_UNSUPPORTED;
}

#endif /* DWCONV_GPU_OP_CAUSAL_CUH */
