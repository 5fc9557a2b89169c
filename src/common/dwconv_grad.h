/*
 * The backward pass's building blocks, written once for every backend (C11 on the
 * CPU, CUDA and HIP device code): the activation's derivative and the fixed order in
 * which the weight and bias gradients are summed. docs/numerics.md ("The backward
 * pass") states the whole contract; this file is its executable part.
 */
#ifndef DWCONV_GRAD_H
#define DWCONV_GRAD_H

#include <stdint.h>

#include "dwconv.h"
#include "dwconv_numerics.h"

/* dweight and dbias are summed in chunks of this many consecutive outputs of one
 * (b, c) row: an fmaf chain from +0 over the chunk's outputs in increasing order. */
#define DWCONV_GRAD_CHUNK 64

/* Chunks of a row of L_out outputs. */
DWCONV_HD int64_t dwconv_grad_chunks(int64_t output_length) {
    return output_length / DWCONV_GRAD_CHUNK + (output_length % DWCONV_GRAD_CHUNK != 0);
}

/* The logistic function of the silu contract: s = 1 / (1 + e^-z), computed from the
 * same pieces as dwconv_silu (its t = e^-|z| and d = 1 + t): s = 1/d for z >= 0,
 * t/d below; NaN in, NaN out. */
DWCONV_HD float dwconv_sigmoid(float z) {
    const float a = z < 0.0f ? -z : z;
    const float t = dwconv_exp(-a);
    const float d = 1.0f + t;
    return DWCONV_FDIV(z >= 0.0f ? 1.0f : t, d); /* NaN: t and d are NaN */
}

/* dwconv_sigmoid(z) for |z| <= DWCONV_SILU_COLD without a division, given t = e^-|z|
 * (dwconv_exp_bits(-|z|)) and yr = RN(1 / RN(1 + t)): z >= 0 (-0 too): 1 / d, which
 * is yr; z < 0: t / d by one Markstein step from q0 = RN(t yr), r = t - q0 d (exact),
 * RN(q0 + r yr). The same bits as the division for every float z in [-86, 86]
 * (tests/check_numerics.c, sigmoid_hot_sweep: a sample, or all of them with
 * DWCONV_TEST_EXHAUSTIVE=1), so a GPU may take yr from its refined reciprocal (gpu_rcp_rn). */
DWCONV_HD float dwconv_sigmoid_hot(float z, float t, float yr) {
    const float d = 1.0f + t;
    const float q0 = t * yr;
    const float q = DWCONV_FMAF(DWCONV_FMAF(-q0, d, t), yr, q0);
    return z < 0.0f ? q : yr;
}

/* silu's g from s = sigmoid(z): dy * (s * fmaf(z, 1 - s, 1)), each operation rounded. */
DWCONV_HD float dwconv_silu_grad(float z, float s, float dy) { return dy * (s * DWCONV_FMAF(z, 1.0f - s, 1.0f)); }

/* g = dy * act'(z) for the pre-activation z (the forward's acc before the activation):
 *   none: dy;  relu: z > 0 ? dy : +0 (NaN z gives +0, as PyTorch's relu backward);
 *   silu: s = sigmoid(z), g = dy * (s * fmaf(z, 1 - s, 1)). */
DWCONV_HD float dwconv_activation_grad(int activation, float z, float dy) {
    if (activation == DWCONV_ACT_RELU) return z > 0.0f ? dy : 0.0f;
    if (activation == DWCONV_ACT_SILU) return dwconv_silu_grad(z, dwconv_sigmoid(z), dy);
    return dy;
}

/* The weight and bias gradients of channel c: per row b, the chunks' partial sums
 * combined by the tree below into a row sum; then the B row sums, by the tree again.
 *
 * The fixed tree that combines n partial sums in place: level by level,
 * a[i] = a[2i] + a[2i+1], an odd last element carried up unchanged, until one is
 * left (returned; +0 for n = 0). An aligned group of 2^j consecutive partials is
 * combined the same way inside the whole tree, so a block of threads may reduce its
 * aligned group on its own and leave only the group's sum for later. */
DWCONV_HD float dwconv_grad_trees(float *a, int64_t n, int64_t w);
DWCONV_HD float dwconv_grad_tree(float *a, int64_t n) { return dwconv_grad_trees(a, n, 1); }

/* w such trees side by side (value i of tree k at a[i * w + k]), level by level, each
 * sum the same two values as in the tree alone; returns tree 0's total (tree k's at
 * a[k]; n = 0: +0, nothing written). */
DWCONV_HD float dwconv_grad_trees(float *a, int64_t n, int64_t w) {
    if (n == 0) return 0.0f;
    while (n > 1) {
        const int64_t half = n / 2;
        for (int64_t i = 0; i < half; i++)
            for (int64_t k = 0; k < w; k++) a[i * w + k] = a[2 * i * w + k] + a[(2 * i + 1) * w + k];
        if (n % 2)
            for (int64_t k = 0; k < w; k++) a[half * w + k] = a[(n - 1) * w + k];
        n = half + n % 2;
    }
    return a[0];
}

#endif /* DWCONV_GRAD_H */
