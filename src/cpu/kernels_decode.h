/* The decode update's kernel (part of kernels_impl.h, compiled once per flavour):
 * some channels of one sequence, each lane doing what the reference does for its
 * channel (docs/api.md, dwconv_causal_update). A block of VL channels is staged
 * transposed, in[i*VL + lane] = input i of the lane's channel (the state's P, then
 * the T tokens), so that each output is an fma chain across channels in vectors;
 * the channels left over run one by one. */

/* Where input i (< P) of the history lies in a state: circular from seen on. */
static inline int64_t decode_slot(const dwconv_cpu_decode *job, int64_t i) {
    const int64_t P = job->state_length;
    return job->seen >= 0 ? ((job->seen - P + i) % P + P) % P : i;
}

/* The new state of channel c from its inputs in[i * step]. */
ALWAYS_INLINE void decode_new_state(const dwconv_cpu_decode *job, int64_t c, const float *in,
                                    int64_t step, const dwconv_dtype dt) {
    const int64_t P = job->state_length, T = job->tokens;
    if (job->seen < 0) {
        for (int64_t i = 0; i < P; i++) dwconv_store(dt, job->state, c * P + i, in[(T + i) * step]);
    } else if (P > 0) {
        for (int64_t t = 0; t < T; t++)
            dwconv_store(dt, job->state, c * P + (job->seen + t) % P, in[(P + t) * step]);
    }
}

ALWAYS_INLINE void decode_channel(const dwconv_cpu_decode *job, int64_t c, float *in,
                                  const dwconv_dtype dt, const int act) {
    const int64_t P = job->state_length, T = job->tokens, K = job->kernel_size, C = job->channels;
    for (int64_t i = 0; i < P; i++) in[i] = dwconv_load(dt, job->state, c * P + decode_slot(job, i));
    for (int64_t t = 0; t < T; t++)
        in[P + t] = dwconv_load(dt, job->x, c * job->x_channel + t * job->x_token);
    for (int64_t t = 0; t < T; t++) {
        float acc = job->bias[c];
        for (int64_t k = 0; k < K; k++)
            acc = DWCONV_FMAF(in[P + t - job->span + k * job->dilation], job->weight_kc[k * C + c], acc);
        dwconv_store(dt, job->y, c * job->y_channel + t * job->y_token, dwconv_activate(act, acc));
    }
    decode_new_state(job, c, in, 1, dt);
}

/* Channels [c0, c0 + VL). */
ALWAYS_INLINE void decode_vector(const dwconv_cpu_decode *job, int64_t c0, float *in,
                                 const dwconv_dtype dt, const int act) {
    const int64_t P = job->state_length, T = job->tokens, K = job->kernel_size, C = job->channels;
    for (int64_t i = 0; i < P; i++) {
        const int64_t at = decode_slot(job, i);
        for (int l = 0; l < VL; l++) in[i * VL + l] = dwconv_load(dt, job->state, (c0 + l) * P + at);
    }
    for (int64_t t = 0; t < T; t++) {
        if (job->x_channel == 1) {
            vf_storeu(in + (P + t) * VL, v_load(dt, job->x, c0 + t * job->x_token));
        } else {
            for (int l = 0; l < VL; l++)
                in[(P + t) * VL + l] = dwconv_load(dt, job->x, (c0 + l) * job->x_channel + t * job->x_token);
        }
    }
    for (int64_t t = 0; t < T; t++) {
        vf acc = vf_loadu(job->bias + c0);
        for (int64_t k = 0; k < K; k++)
            acc = vf_fma(vf_loadu(in + (P + t - job->span + k * job->dilation) * VL),
                         vf_loadu(job->weight_kc + k * C + c0), acc);
        acc = v_activate(acc, act);
        if (job->y_channel == 1) {
            v_store(dt, job->y, c0 + t * job->y_token, acc, 0);
        } else {
            float lanes[VL];
            vf_storeu(lanes, acc);
            for (int l = 0; l < VL; l++)
                dwconv_store(dt, job->y, (c0 + l) * job->y_channel + t * job->y_token, lanes[l]);
        }
    }
    for (int l = 0; l < VL; l++) decode_new_state(job, c0 + l, in + l, VL, dt);
}

ALWAYS_INLINE void decode_typed(const dwconv_cpu_decode *job, int64_t c0, int64_t c1,
                                float *scratch, const int act, const dwconv_dtype dt) {
    int64_t c = c0;
    for (; c + VL <= c1; c += VL) decode_vector(job, c, scratch, dt, act);
    for (; c < c1; c++) decode_channel(job, c, scratch, dt, act);
}

ALWAYS_INLINE void decode_act(const dwconv_cpu_decode *job, int64_t c0, int64_t c1,
                              float *scratch, const int act) {
    BY_DTYPE(job->dtype, decode_typed, job, c0, c1, scratch, act);
}

static void k_decode(const dwconv_cpu_decode *job, int64_t c0, int64_t c1, float *scratch) {
    BY_ACTIVATION(job->activation, decode_act, job, c0, c1, scratch);
}
