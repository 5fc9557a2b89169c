/* The decode update's kernel (part of kernels_impl.h, compiled once per flavour):
 * some channels of one sequence, each lane doing what the reference does for its
 * channel (docs/api.md, dwconv_causal_update). A block of VL channels is staged
 * transposed, in[i*VL + lane] = input i of the lane's channel (the state's P, then
 * the T tokens), so that each output is an fma chain across channels in vectors;
 * the channels left over run one by one. */

enum { DWCONV_DECODE_MAX_TOKENS = 8 }; /* T in registers, at most (more: channel by channel) */

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

enum { DECODE_MAX_PERMUTED = 8 };
enum { DECODE_PREFETCH_BLOCKS = 8 }; /* state read ahead, in blocks (measured: 4-16 alike) */ /* the largest P whose blocks are permuted */

/* How a block of VL channels' f32 states (VL*P floats, P vectors V[m]) is taken apart
 * and put together with permutes. */
typedef struct decode_permutes {
    int32_t pick[DECODE_MAX_PERMUTED][DECODE_MAX_PERMUTED][VL]; /* input i from V[m] */
    int32_t token[DECODE_MAX_PERMUTED][VL]; /* lane of V[m]'s channel in the token vector */
    int32_t last[DECODE_MAX_PERMUTED][VL];  /* 1 where V[m]'s lane is a channel's newest */
} decode_permutes;

static void plan_permutes(int64_t P, decode_permutes *q) {
    for (int64_t i = 0; i < P; i++)
        for (int64_t m = 0; m < P; m++)
            for (int l = 0; l < VL; l++) { /* element l*P + i: keep lane l unless it is here */
                const int64_t e = l * P + i;
                q->pick[i][m][l] = (int32_t)(e / VL == m ? VL + e % VL : l);
            }
    int32_t channel = 0, at = 0; /* float e = m*VL + l is input `at` of `channel` */
    for (int64_t m = 0; m < P; m++)
        for (int l = 0; l < VL; l++) { /* (no division: this runs for every call) */
            q->token[m][l] = channel;
            q->last[m][l] = at == P - 1;
            if (++at == P) at = 0, channel++;
        }
}

/* Channels [c0, c0 + VL) of f32 states, P <= DECODE_MAX_PERMUTED: the block's state
 * read as P vectors and taken apart by permutes (lane l: channel c0 + l); one token
 * into a shift register moves the block down by one float with whole vectors (the
 * last one never read past the block) and puts the tokens in by a permute. */
ALWAYS_INLINE void decode_vector_f32(const dwconv_cpu_decode *job, int64_t c0,
                                     const decode_permutes *q, const int act, const int PC) {
    /* PC: P as a constant (the loops unroll, the block stays in registers), or 0 */
    const int64_t P = PC ? PC : job->state_length, T = job->tokens, K = job->kernel_size;
    const int64_t C = job->channels;
    float *state = (float *)job->state + c0 * P;
    vf block[DECODE_MAX_PERMUTED], in[DECODE_MAX_PERMUTED + DWCONV_DECODE_MAX_TOKENS];
    for (int64_t m = 0; m < P; m++) block[m] = vf_loadu(state + m * VL);
    for (int64_t m = 0; m < P * VL; m += 16) /* some blocks on: the loads above wait on memory */
        __builtin_prefetch(state + DECODE_PREFETCH_BLOCKS * P * VL + m, 1);
    for (int64_t i = 0; i < P; i++) { /* input i: circular states start at seen */
        const int64_t at = decode_slot(job, i);
        vf r = block[0];
        UNROLLED
        for (int64_t m = 0; m < P; m++) r = vf_permute2(r, vi_loadu(q->pick[at][m]), block[m]);
        in[i] = r;
    }
    for (int64_t t = 0; t < T; t++) {
        if (job->x_channel == 1) {
            in[P + t] = vf_loadu((const float *)job->x + c0 + t * job->x_token);
        } else {
            float lanes[VL];
            for (int l = 0; l < VL; l++)
                lanes[l] = ((const float *)job->x)[(c0 + l) * job->x_channel + t * job->x_token];
            in[P + t] = vf_loadu(lanes);
        }
    }
    for (int64_t t = 0; t < T; t++) {
        vf acc = vf_loadu(job->bias + c0);
        for (int64_t k = 0; k < K; k++)
            acc = vf_fma(in[P + t - job->span + k * job->dilation], vf_loadu(job->weight_kc + k * C + c0), acc);
        acc = v_activate(acc, act);
        if (job->y_channel == 1) {
            vf_storeu((float *)job->y + c0 + t * job->y_token, acc);
        } else {
            float lanes[VL];
            vf_storeu(lanes, acc);
            for (int l = 0; l < VL; l++) ((float *)job->y)[(c0 + l) * job->y_channel + t * job->y_token] = lanes[l];
        }
    }
    if (job->seen < 0 && T == 1) {
        UNROLLED
        for (int64_t m = 0; m < P; m++) {
            vf down = m + 1 < P ? vf_loadu(state + m * VL + 1)
                                : vf_load_part(state + m * VL + 1, VL - 1);
            vf tokens = vf_permute2(in[P], vi_loadu(q->token[m]), in[P]);
            vf_storeu(state + m * VL,
                      vf_select(vi_gt(vi_loadu(q->last[m]), vi_set1(0)), tokens, down));
        }
        return;
    }
    float lanes[VL];
    for (int64_t i = 0; job->seen < 0 && i < P; i++) {
        vf_storeu(lanes, in[T + i]);
        for (int l = 0; l < VL; l++) state[l * P + i] = lanes[l];
    }
    for (int64_t t = 0; job->seen >= 0 && t < T; t++) {
        vf_storeu(lanes, in[P + t]);
        for (int l = 0; l < VL; l++) state[l * P + (job->seen + t) % P] = lanes[l];
    }
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
    const int64_t P = job->state_length;
    if (dt == DWCONV_F32 && VL > 1 && P >= 1 && P <= DECODE_MAX_PERMUTED &&
        job->tokens <= DWCONV_DECODE_MAX_TOKENS && c1 - c0 >= VL) {
        decode_permutes q;
        plan_permutes(P, &q);
        switch (P) { /* the serving shapes' states: K = 2, 3, 4 */
        case 1: for (; c + VL <= c1; c += VL) decode_vector_f32(job, c, &q, act, 1); break;
        case 2: for (; c + VL <= c1; c += VL) decode_vector_f32(job, c, &q, act, 2); break;
        case 3: for (; c + VL <= c1; c += VL) decode_vector_f32(job, c, &q, act, 3); break;
        default: for (; c + VL <= c1; c += VL) decode_vector_f32(job, c, &q, act, 0); break;
        }
    }
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
