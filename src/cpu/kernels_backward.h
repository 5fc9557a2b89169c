/* The backward pass's kernels (part of kernels_impl.h, compiled once per flavour):
 * the activation's gradient and the weight and bias gradients' chunk partials, each
 * in the contract's operations and order (docs/numerics.md, "The backward pass"). The
 * input gradient needs no kernel of its own: it is conv over the reversed taps. */

/* ---- g = dy * act'(z) ---- */

/* dwconv_activation_grad for silu in lanes with |z| <= 86 (the others, and NaN, are
 * redone by the scalar function): s = (z >= 0 ? 1 : t) / (1 + t), t = e^-|z|. */
static inline vf v_silu_grad(vf z, vf dy) {
    const vf one = vf_set1(1.0f);
    const vf a = vi_as_vf(vi_and(vf_as_vi(z), vi_set1(INT32_MAX)));
    const vf t = vi_as_vf(v_exp_bits(a, 1));
    const vf s = vf_div(vf_select(vf_lt(z, vf_set1(0.0f)), t, one), vf_add(one, t));
    return vf_mul(dy, vf_mul(s, vf_fma(z, vf_sub(one, s), one)));
}

ALWAYS_INLINE void act_grad_typed(const float *z, const float *dy, int64_t n, float *g,
                                  const int act) {
    int64_t j = 0;
    for (; j + VL <= n; j += VL) {
        const vf zv = vf_loadu(z + j), dv = vf_loadu(dy + j);
        if (act == DWCONV_ACT_RELU) {
            vf_storeu(g + j, vf_select(vf_gt(zv, vf_set1(0.0f)), dv, vf_set1(0.0f)));
            continue;
        }
        const vf a = vi_as_vf(vi_and(vf_as_vi(zv), vi_set1(INT32_MAX)));
        if (vm_any(vf_nle(a, vf_set1(DWCONV_SILU_COLD)))) { /* rare: g may be z */
            float lanes[VL];
            for (int64_t i = 0; i < VL; i++)
                lanes[i] = dwconv_activation_grad(act, z[j + i], dy[j + i]);
            memcpy(g + j, lanes, sizeof lanes);
        } else {
            vf_storeu(g + j, v_silu_grad(zv, dv));
        }
    }
    for (; j < n; j++) g[j] = dwconv_activation_grad(act, z[j], dy[j]);
}

/* g[j] = dwconv_activation_grad(act, z[j], dy[j]), j < n (g may be z). */
static void k_act_grad(int act, const float *z, const float *dy, int64_t n, float *g) {
    if (act == DWCONV_ACT_RELU) act_grad_typed(z, dy, n, g, DWCONV_ACT_RELU);
    else if (act == DWCONV_ACT_SILU) act_grad_typed(z, dy, n, g, DWCONV_ACT_SILU);
    else if (g != dy) memcpy(g, dy, sizeof *g * (size_t)n);
}

/* ---- dx: one chain ---- */

static float k_fma_dot(const float *a, const float *b, int64_t n, float acc) {
    for (int64_t j = 0; j < n; j++) acc = DWCONV_FMAF(a[j], b[j], acc);
    return acc;
}

/* ---- dweight and dbias: each chunk's partials ---- */

enum { GRAD_CHUNKS_IN_FLIGHT = 4 }; /* independent chains hide the fma latency */

/* Chunks [j, j + 4), all full: one vector per output holds its K taps (adjacent in
 * memory, K <= VL), so each lane k is chunk's chain for tap k. */
ALWAYS_INLINE void grad_chunks_by_output(const float *g, const float *x0, int64_t step, int64_t K,
                                         int64_t j, float *part, const int sums) {
    vf acc[GRAD_CHUNKS_IN_FLIGHT];
    float sum[GRAD_CHUNKS_IN_FLIGHT];
    UNROLLED
    for (int m = 0; m < GRAD_CHUNKS_IN_FLIGHT; m++) acc[m] = vf_set1(0.0f), sum[m] = 0.0f;
    for (int64_t t = 0; t < DWCONV_GRAD_CHUNK; t++) {
        if (t % 16 == 0) /* the next chunks' x, first read here (the streams interleave) */
            for (int m = 0; m < GRAD_CHUNKS_IN_FLIGHT; m++)
                __builtin_prefetch(x0 + ((j + m + 2 * GRAD_CHUNKS_IN_FLIGHT) * DWCONV_GRAD_CHUNK + t) * step);
        UNROLLED
        for (int m = 0; m < GRAD_CHUNKS_IN_FLIGHT; m++) {
            const int64_t o = (j + m) * DWCONV_GRAD_CHUNK + t;
            acc[m] = vf_fma(vf_set1(g[o]), vf_loadu(x0 + o * step), acc[m]);
            if (sums) sum[m] = sum[m] + g[o];
        }
    }
    float lanes[VL];
    for (int m = 0; m < GRAD_CHUNKS_IN_FLIGHT; m++) {
        float *pj = part + (j + m) * (K + 1);
        vf_storeu(lanes, acc[m]);
        for (int64_t k = 0; k < K; k++) pj[k] = lanes[k];
        pj[K] = sum[m];
    }
}

/* Chunks [j, j + 4), all full, one tap at a time: four chains in flight. */
static void grad_chunks_by_tap(const float *g, const float *const *tap, int64_t step, int64_t K,
                               int64_t j, float *part) {
    for (int64_t k = 0; k <= K; k++) {
        float acc[GRAD_CHUNKS_IN_FLIGHT] = {0.0f};
        for (int64_t t = 0; t < DWCONV_GRAD_CHUNK; t++) {
            UNROLLED
            for (int m = 0; m < GRAD_CHUNKS_IN_FLIGHT; m++) {
                const int64_t o = (j + m) * DWCONV_GRAD_CHUNK + t;
                acc[m] = k < K ? DWCONV_FMAF(g[o], tap[k][o * step], acc[m]) : acc[m] + g[o];
            }
        }
        for (int m = 0; m < GRAD_CHUNKS_IN_FLIGHT; m++) part[(j + m) * (K + 1) + k] = acc[m];
    }
}

/* ---- VL whole chunks at once, lane m = chunk m: the row transposed as it loads ---- */

enum { GRAD_TRANSPOSED_REACH = 256 }; /* taps' span of a chunk (63*step + span + 1), at most */

#if VEC_TRANSPOSE8
/* Chunks [j, j + VL)'s chains in lane m = chunk j + m into part. */
static inline void grad_store_lanes(vf acc, int64_t j, int64_t K, int64_t k, float *part) {
    float lanes[VL];
    vf_storeu(lanes, acc);
    for (int m = 0; m < VL; m++) part[(j + m) * (K + 1) + k] = lanes[m];
}

/* Chunks [j, j + VL), all full, step 1, taps adjacent, NK = K <= 4: eight outputs of
 * every chunk at a time, g and the window of taps transposed in registers (win[i] =
 * the padded positions t0 + i of each chunk); reads nothing past the last tap. */
ALWAYS_INLINE void grad_chunks_in_registers(const float *g, const float *x0, int64_t K, int64_t j,
                                            float *part, const int NK, const int sums) {
    const int64_t o = j * DWCONV_GRAD_CHUNK;
    vf win[8 + 3], acc[4], sum = vf_set1(0.0f);
    UNROLLED
    for (int k = 0; k < NK; k++) acc[k] = vf_set1(0.0f);
    vf_load_transposed8(x0 + o, DWCONV_GRAD_CHUNK, win);
    for (int64_t t0 = 0; t0 < DWCONV_GRAD_CHUNK; t0 += 8) {
        vf gt[8];
        vf_load_transposed8(g + o + t0, DWCONV_GRAD_CHUNK, gt);
        if (NK > 1) vf_load_transposed8(x0 + o + t0 + NK - 1, DWCONV_GRAD_CHUNK, win + NK - 1);
        else if (t0 > 0) vf_load_transposed8(x0 + o + t0, DWCONV_GRAD_CHUNK, win);
        UNROLLED
        for (int t = 0; t < 8; t++) {
            UNROLLED
            for (int k = 0; k < NK; k++) acc[k] = vf_fma(gt[t], win[t + k], acc[k]);
            if (sums) sum = vf_add(sum, gt[t]);
        }
        UNROLLED
        for (int k = 0; k + 1 < NK; k++) win[k] = win[8 + k];
    }
    UNROLLED
    for (int k = 0; k < NK; k++) grad_store_lanes(acc[k], j, K, k, part);
    if (sums) grad_store_lanes(sum, j, K, K, part);
}

static void grad_chunks_adjacent(const float *g, const float *x0, int64_t K, int64_t j, int sums,
                                 float *part) {
    switch (K + 4 * !!sums) {
    case 1: grad_chunks_in_registers(g, x0, K, j, part, 1, 0); break;
    case 2: grad_chunks_in_registers(g, x0, K, j, part, 2, 0); break;
    case 3: grad_chunks_in_registers(g, x0, K, j, part, 3, 0); break;
    case 4: grad_chunks_in_registers(g, x0, K, j, part, 4, 0); break;
    case 5: grad_chunks_in_registers(g, x0, K, j, part, 1, 1); break;
    case 6: grad_chunks_in_registers(g, x0, K, j, part, 2, 1); break;
    case 7: grad_chunks_in_registers(g, x0, K, j, part, 3, 1); break;
    default: grad_chunks_in_registers(g, x0, K, j, part, 4, 1); break;
    }
}

/* Taps [k0, k0 + NK) of chunks [j, j + VL) from the transposed gt and xt. */
ALWAYS_INLINE void grad_taps_transposed(const float *gt, const float *xt, int64_t step,
                                        int64_t dil, int64_t K, int64_t j, int64_t k0,
                                        float *part, const int NK) {
    vf acc[4];
    UNROLLED
    for (int i = 0; i < NK; i++) acc[i] = vf_set1(0.0f);
    for (int64_t t = 0; t < DWCONV_GRAD_CHUNK; t++) {
        const vf gv = vf_loadu(gt + t * VL);
        UNROLLED
        for (int i = 0; i < NK; i++)
            acc[i] = vf_fma(gv, vf_loadu(xt + (t * step + (k0 + i) * dil) * VL), acc[i]);
    }
    UNROLLED
    for (int i = 0; i < NK; i++) grad_store_lanes(acc[i], j, K, k0 + i, part);
}

/* Taps [k0, k0 + 8) of chunks [j, j + VL), step 1 and dilation 1: output t's taps are
 * the consecutive xt[t + k0 ..], so the window slides one vector a step (kept in
 * registers, rotated by unrolling t by 8): one load of x and one of g feed eight
 * chains, against five loads for four in grad_taps_transposed. */
ALWAYS_INLINE void grad_taps_window8(const float *gt, const float *xt, int64_t K, int64_t j, int64_t k0,
                                     float *part) {
    vf acc[8], win[8];
    UNROLLED
    for (int i = 0; i < 8; i++) acc[i] = vf_set1(0.0f);
    UNROLLED
    for (int i = 0; i < 7; i++) win[i] = vf_loadu(xt + (k0 + i) * VL);
    for (int64_t t0 = 0; t0 < DWCONV_GRAD_CHUNK; t0 += 8) {
        UNROLLED
        for (int u = 0; u < 8; u++) { /* win[(u + i) % 8] = xt[t + k0 + i] */
            win[(u + 7) % 8] = vf_loadu(xt + (t0 + u + k0 + 7) * VL);
            const vf gv = vf_loadu(gt + (t0 + u) * VL);
            UNROLLED
            for (int i = 0; i < 8; i++) acc[i] = vf_fma(gv, win[(u + i) % 8], acc[i]);
        }
    }
    UNROLLED
    for (int i = 0; i < 8; i++) grad_store_lanes(acc[i], j, K, k0 + i, part);
}

/* Chunks [j, j + VL), all full, their taps within GRAD_TRANSPOSED_REACH: g and x
 * transposed into gt and xt, then the chains four taps at a time; reads up to 7 floats
 * past the last tap. */
static void grad_chunks_transposed(const float *g, const float *x0, int64_t step, int64_t dil,
                                   int64_t K, int64_t j, int sums, float *part) {
    float gt[DWCONV_GRAD_CHUNK * VL], xt[GRAD_TRANSPOSED_REACH * VL];
    const int64_t o = j * DWCONV_GRAD_CHUNK, reach = (DWCONV_GRAD_CHUNK - 1) * step + (K - 1) * dil + 1;
    vf sum = vf_set1(0.0f);
    for (int64_t t = 0; t < DWCONV_GRAD_CHUNK; t += 8) {
        vf v[8];
        vf_load_transposed8(g + o + t, DWCONV_GRAD_CHUNK, v);
        UNROLLED
        for (int r = 0; r < 8; r++) {
            vf_storeu(gt + (t + r) * VL, v[r]);
            if (sums) sum = vf_add(sum, v[r]);
        }
    }
    for (int64_t t = 0; t < reach; t += 8) {
        vf v[8];
        vf_load_transposed8(x0 + o * step + t, DWCONV_GRAD_CHUNK * step, v);
        UNROLLED
        for (int r = 0; r < 8; r++) vf_storeu(xt + (t + r) * VL, v[r]);
    }
    int64_t k0 = 0;
    if (step == 1 && dil == 1)
        for (; k0 + 8 <= K; k0 += 8) grad_taps_window8(gt, xt, K, j, k0, part);
    for (; k0 < K; k0 += 4) {
        switch (K - k0) {
        case 1: grad_taps_transposed(gt, xt, step, dil, K, j, k0, part, 1); break;
        case 2: grad_taps_transposed(gt, xt, step, dil, K, j, k0, part, 2); break;
        case 3: grad_taps_transposed(gt, xt, step, dil, K, j, k0, part, 3); break;
        default: grad_taps_transposed(gt, xt, step, dil, K, j, k0, part, 4); break;
        }
    }
    if (sums) grad_store_lanes(sum, j, K, K, part);
}
#endif

/* ---- the row's trees ---- */

/* dwconv_grad_trees (the same sums, so the same bits): each level's pair of entries a
 * vector addition per VL trees, where the scalar loop costs one per tree. */
static void k_grad_trees(float *a, int64_t n, int64_t w) {
    while (n > 1) {
        const int64_t half = n / 2;
        for (int64_t i = 0; i < half; i++) { /* writes below what later pairs read */
            float *to = a + i * w;
            const float *l = a + 2 * i * w, *r = l + w;
            int64_t k = 0;
            for (; k + VL <= w; k += VL) vf_storeu(to + k, vf_add(vf_loadu(l + k), vf_loadu(r + k)));
            const int tail = (int)(w - k);
            if (tail) vf_store_part(to + k, vf_add(vf_load_part(l + k, tail), vf_load_part(r + k, tail)), tail);
        }
        if (n % 2) memmove(a + half * w, a + (n - 1) * w, sizeof *a * (size_t)w);
        n = half + n % 2;
    }
}

/* Chunk j (maybe short), scalar. */
static void grad_chunk(const float *g, const float *const *tap, int64_t step, int64_t K,
                       int64_t n, int64_t j, float *part) {
    const int64_t begin = j * DWCONV_GRAD_CHUNK;
    const int64_t end = begin + DWCONV_GRAD_CHUNK < n ? begin + DWCONV_GRAD_CHUNK : n;
    float *pj = part + j * (K + 1);
    for (int64_t k = 0; k < K; k++) {
        float acc = 0.0f;
        for (int64_t o = begin; o < end; o++) acc = DWCONV_FMAF(g[o], tap[k][o * step], acc);
        pj[k] = acc;
    }
    float sum = 0.0f;
    for (int64_t o = begin; o < end; o++) sum = sum + g[o];
    pj[K] = sum;
}

static void k_grad_partials(const float *g, const float *const *tap, int64_t step, int64_t K,
                            int64_t n, int sums, float *part) {
    const int64_t full = n / DWCONV_GRAD_CHUNK, chunks = dwconv_grad_chunks(n);
    int by_output = VL > 1 && K <= VL;
    for (int64_t k = 1; k < K; k++) by_output = by_output && tap[k] == tap[0] + k;
    int64_t j = 0;
#if VEC_TRANSPOSE8
    /* equal taps (tap[k] == tap[0] + k*dil) within reach: the transposed chunks */
    const int64_t dil = K > 1 ? tap[1] - tap[0] : 0;
    int even = dil >= 0 && step <= 4 &&
               (DWCONV_GRAD_CHUNK - 1) * step + (K - 1) * dil + VL <= GRAD_TRANSPOSED_REACH;
    for (int64_t k = 1; k < K; k++) even = even && tap[k] == tap[0] + k * dil;
    const int in_registers = step == 1 && K <= 4 && (dil == 1 || K == 1);
    for (; even && j + VL <= full; j += VL) {
        if (in_registers) grad_chunks_adjacent(g, tap[0], K, j, sums, part);
        else grad_chunks_transposed(g, tap[0], step, dil, K, j, sums, part);
    }
#endif
    for (; j + GRAD_CHUNKS_IN_FLIGHT <= full; j += GRAD_CHUNKS_IN_FLIGHT) {
        if (by_output && sums) grad_chunks_by_output(g, tap[0], step, K, j, part, 1);
        else if (by_output) grad_chunks_by_output(g, tap[0], step, K, j, part, 0);
        else grad_chunks_by_tap(g, tap, step, K, j, part);
    }
    for (; j < chunks; j++) grad_chunk(g, tap, step, K, n, j, part);
}
