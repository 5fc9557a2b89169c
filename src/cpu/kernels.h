/* The SIMD flavours of the fast path. Each flavour (generic C, AVX2+FMA, AVX-512) is
 * one table of kernels, compiled from the same source (kernels_impl.h) with its own
 * -m flags in its own convenience library; the driver (fast*.c, plain C) plans the
 * work and calls the table that select.c chose once for this process.
 *
 * Every kernel performs the contract's operations in the contract's order, vectorized
 * across outputs (NCL) or channels (NLC), never across taps, so all flavours agree
 * bit for bit with the scalar reference. */
#ifndef DWCONV_CPU_KERNELS_H
#define DWCONV_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv_module.h"

/* One stretch of outputs of one NCL row:
 *   out[j] = act(bias + sum_k weight[k] * tap[k][j * stride])   (fma chain, k ascending)
 * tap[k][j * stride] is the input tap k reads for output j: in a staged f32 buffer
 * (stride 1), or in x itself (stride 1 or 2); dtype is that of the taps and of out
 * (F32 when staged). */
typedef struct dwconv_cpu_taps {
    const void *const *tap; /* K pointers */
    dwconv_dtype dtype;
    int stride;             /* 1 or 2 (conv only) */
    const float *weight;    /* K weights, widened to f32 */
    int64_t kernel_size;
    float bias;             /* +0.0f without bias */
    int activation;         /* a dwconv_activation */
    int stream;             /* out is 64-byte aligned: store it around the caches */
} dwconv_cpu_taps;

/* A block of NLC output positions: for position p and channel c < channels,
 *   y[p*y_stride + c] = act(bias[c] + sum_k weight_kc[k*weight_stride + c] * row[p*K + k][c])
 * row[p*K + k] points at the input row (channels elements of dtype) tap k reads for
 * position p: a row of x, or a row of zeros where the padding reads zeros. */
typedef struct dwconv_cpu_nlc {
    dwconv_dtype dtype; /* of x and y */
    int64_t channels, kernel_size;
    const float *weight_kc; /* weights transposed to [k][c], widened to f32 */
    int64_t weight_stride;  /* floats from one tap's weights to the next's (>= channels) */
    int64_t y_stride;       /* elements from one output position to the next (>= channels) */
    const float *bias;      /* channels values: the bias widened, or zeros */
    int activation;
    int stream;             /* every row of y is 64-byte aligned: store around the caches */
    int64_t prefetch_ahead; /* bytes past the newest input row read to prefetch */
} dwconv_cpu_nlc;

/* The decode update of one sequence (dwconv_causal_update), channels c of its slot:
 * the state's inputs then the tokens, y[t] = act(bias + sum_k w[k] in[P + t - span + k d])
 * (fma chain, k ascending), then the new state (shift register: the last P inputs;
 * circular: the tokens written from position seen on). */
typedef struct dwconv_cpu_decode {
    dwconv_dtype dtype;       /* of x, y and the state */
    int64_t kernel_size, dilation, span;
    int64_t state_length;     /* P >= span */
    int64_t tokens;           /* T */
    int activation;
    int64_t channels;         /* C */
    const float *weight_kc;   /* [k][c]: K*C weights, widened to f32 */
    const float *bias;        /* C, widened (zeros without bias) */
    const void *x;            /* this sequence's (b = 0) element: x[c*x_channel + t*x_token] */
    int64_t x_channel, x_token;
    void *y;
    int64_t y_channel, y_token;
    void *state;              /* this sequence's slot: state[c*P + i] */
    int64_t seen;             /* circular: cache_seqlens[b]; -1: a shift register */
} dwconv_cpu_decode;

typedef struct dwconv_cpu_kernels {
    const char *name; /* "generic", "avx2", "avx512": what DWCONV_CPU_SIMD selects */
    int lanes;        /* floats per vector: n below is always a multiple of it */
    int overread;     /* floats conv_window may read past tap[K-1][n-1] (zeros staged) */

    /* The stretch above for n outputs; reads tap[k][0, n * stride) (stride 2: one
     * element more), writes out[0, n). */
    void (*conv)(const dwconv_cpu_taps *taps, int64_t n, void *out);
    /* The same for F32, stride 1, tap[k] == tap[0] + k: shares each shifted window
     * between outputs, which long kernels need to reach the FMA units' limit (from
     * DWCONV_CPU_WINDOW_MIN_TAPS taps on it beats conv). */
    void (*conv_window)(const dwconv_cpu_taps *taps, int64_t n, void *out);

    /* dst[j] = src[j*stride] widened to f32, j < n (any n, any alignment). */
    void (*gather)(dwconv_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
    /* dst[j] = src[j] rounded to dtype (a plain copy for f32), j < n; stream: around
     * the caches (dst is then 64-byte aligned). */
    void (*narrow)(dwconv_dtype dtype, const float *src, int64_t n, void *dst, int stream);

    /* positions NLC output positions, written to y (consecutive rows). */
    void (*nlc)(const dwconv_cpu_nlc *job, const void *const *row, int64_t positions, void *y);

    /* Makes this thread's streamed stores visible to others: every thread that may have
     * streamed calls it once, after its last kernel call. */
    void (*fence)(void);

    /* ---- the backward pass (kernels_backward.h) ---- */
    /* g[j] = dwconv_activation_grad(act, z[j], dy[j]), j < n; g may be z or dy. */
    void (*act_grad)(int act, const float *z, const float *dy, int64_t n, float *g);
    /* One row's chunk partials of dweight and dbias: for chunk j of DWCONV_GRAD_CHUNK
     * outputs (the last one maybe shorter), part[j*(K+1) + k] = the fma chain from +0
     * over its outputs o ascending of g[o] * tap[k][o*step], part[j*(K+1) + K] = the
     * sum of its g[o] from +0 (when sums; else anything). Where tap[k] == tap[0] + k
     * it may read up to lanes - 1 floats past tap[K-1][(n-1)*step], and it prefetches
     * (never reads) further on. */
    void (*grad_partials)(const float *g, const float *const *tap, int64_t step, int64_t K,
                          int64_t n, int sums, float *part);
    /* dwconv_grad_trees(a, n, w), its result left in a[0, w). */
    void (*grad_trees)(float *a, int64_t n, int64_t w);
    /* acc, then the fmaf chain over j < n, in order, of a[j] * b[j]: the input
     * gradient's single chains (row ends, leftovers) with the flavour's fma. */
    float (*fma_dot)(const float *a, const float *b, int64_t n, float acc);

    /* ---- the decode update (kernels_decode.h) ---- */
    /* Channels [c0, c1) of one sequence; scratch holds (P + T) * 64 floats. */
    void (*decode)(const dwconv_cpu_decode *job, int64_t c0, int64_t c1, float *scratch);

    /* out[j] = the activation act (a dwconv_activation) of in[j], j < n, computed as the
     * kernels compute it; act DWCONV_CPU_EXP gives the bits of dwconv_exp_bits(in[j])
     * instead, DWCONV_CPU_EXP_NEG those of dwconv_exp_bits(-in[j]) (silu's form). For the tests (check_simd_numerics), which
     * compare each flavour with the scalar functions directly. */
    void (*activate)(int act, const float *in, int64_t n, float *out);
} dwconv_cpu_kernels;

/* Taps from which conv_window beats conv. */
#define DWCONV_CPU_WINDOW_MIN_TAPS 8

/* activate's extra code: the bits of e^x as dwconv_exp_bits computes them */
#define DWCONV_CPU_EXP (-1)
#define DWCONV_CPU_EXP_NEG (-2)

extern const dwconv_cpu_kernels dwconv_cpu_kernels_generic;
#ifdef DWCONV_HAVE_AVX2
extern const dwconv_cpu_kernels dwconv_cpu_kernels_avx2;
#endif
#ifdef DWCONV_HAVE_AVX512
extern const dwconv_cpu_kernels dwconv_cpu_kernels_avx512;
#endif

/* ---- choice (select.c) ---- */

/* The flavour called name ("generic", "avx2", "avx512", or "auto": the best one this
 * build and this processor offer). UNSUPPORTED, with the reason in msg, when the name
 * is unknown, the flavour was not built, or the processor lacks its instructions. */
dwconv_status dwconv_cpu_kernels_find(const char *name, const dwconv_cpu_kernels **kernels,
                                      char *msg, size_t msg_size);

/* The flavour of this process: DWCONV_CPU_SIMD from the environment (read once, at
 * first use), else "auto". NULL when the request cannot be met; msg says why. */
const dwconv_cpu_kernels *dwconv_cpu_kernels_active(char *msg, size_t msg_size);

/* ---- the driver (fast.c) ---- */

/* dwconv_cpu_fast with a given flavour: the tests run every flavour this way. */
dwconv_status dwconv_cpu_fast_with(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                                   int threads);

/* The backward pass (backward.c) and the causal operations (causal.c) with a given
 * flavour, for the tests; as dwconv_cpu_backward and dwconv_cpu_causal otherwise (the
 * causal operations' index arrays already checked). */
dwconv_status dwconv_cpu_backward_with(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                                       int threads, char *msg);
dwconv_status dwconv_cpu_causal_with(const dwconv_cpu_kernels *kernels, const dwconv_problem *p,
                                     int threads, char *msg);

/* Which paths the last backward or causal call of this process took (for the tests,
 * which check that the fast path ran where it fits): DWCONV_CPU_PATH_* bits. */
enum {
    DWCONV_CPU_PATH_STAGED_ROWS = 1,   /* backward: rows staged in f32 (else per output) */
    DWCONV_CPU_PATH_VECTOR_DX = 2,     /* backward: dx's interior by the conv kernel */
    DWCONV_CPU_PATH_FORWARD_KERNELS = 4, /* causal forward: y by the forward's fast path */
    DWCONV_CPU_PATH_DECODE_KERNEL = 8, /* decode: the decode kernel */
    DWCONV_CPU_PATH_DIRECT_X = 16,     /* backward: x read where it lies between the edges */
    DWCONV_CPU_PATH_STREAMED_DX = 32,  /* backward: dx summed in place, stored around the caches */
};
int dwconv_cpu_last_paths(void);
void dwconv_cpu_set_last_paths(int paths);

#endif
