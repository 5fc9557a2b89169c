/* The decode update's kernel (part of kernels_impl.h, compiled once per flavour):
 * some channels of one sequence, as the reference computes them (docs/api.md,
 * dwconv_causal_update), channel by channel. */

/* The history and tokens of channel c into in[0, P + T): in[P + t] is token t. */
static void decode_inputs(const dwconv_cpu_decode *job, int64_t c, float *in) {
    const int64_t P = job->state_length, T = job->tokens;
    const void *state = job->state;
    for (int64_t i = 0; i < P; i++) {
        int64_t at = job->seen >= 0 ? ((job->seen - P + i) % P + P) % P : i;
        in[i] = dwconv_load(job->dtype, state, c * P + at);
    }
    for (int64_t t = 0; t < T; t++)
        in[P + t] = dwconv_load(job->dtype, job->x, c * job->x_channel + t * job->x_token);
}

static void decode_channel(const dwconv_cpu_decode *job, int64_t c, float *in) {
    const int64_t P = job->state_length, T = job->tokens, K = job->kernel_size;
    const float *w = job->weight + c * K;
    decode_inputs(job, c, in);
    for (int64_t t = 0; t < T; t++) {
        float acc = job->bias[c];
        for (int64_t k = 0; k < K; k++)
            acc = DWCONV_FMAF(in[P + t - job->span + k * job->dilation], w[k], acc);
        dwconv_store(job->dtype, job->y, c * job->y_channel + t * job->y_token,
                     dwconv_activate(job->activation, acc));
    }
    if (job->seen < 0) {
        for (int64_t i = 0; i < P; i++) dwconv_store(job->dtype, job->state, c * P + i, in[T + i]);
    } else if (P > 0) {
        for (int64_t t = 0; t < T; t++)
            dwconv_store(job->dtype, job->state, c * P + (job->seen + t) % P, in[P + t]);
    }
}

static void k_decode(const dwconv_cpu_decode *job, int64_t c0, int64_t c1, float *scratch) {
    for (int64_t c = c0; c < c1; c++) decode_channel(job, c, scratch);
}
