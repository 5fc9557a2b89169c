/*
 * dwconv: depthwise 1D convolution (PyTorch's nn.Conv1d with groups == channels)
 * behind one backend-neutral C API. See docs/api.md for the full reference.
 *
 * THE OPERATION
 *   y[b,c,o] = act(bias[c] + sum_k w[c,k] * xp[b,c, o*stride + k*dilation - pad_left])
 *   for o in [0, L_out), where
 *   L_out = floor((L + pad_left + pad_right - dilation*(K-1) - 1) / stride) + 1
 *   and xp reads outside [0, L) according to the padding mode.
 *
 * NUMERICAL CONTRACT (every backend, every thread count: bitwise identical results)
 *   Each output is computed in exactly this order, in f32:
 *     acc = bias[c] (converted to f32), or +0.0f without bias;
 *     for k = 0 .. K-1:  acc = fmaf(x_k, w_k, acc)    (x_k = 0.0f where padding reads zeros)
 *     acc = act(acc)     none: acc;  relu: acc < 0 ? +0.0f : acc (NaN and -0 pass);
 *                        silu: acc / (1.0f + dwconv_exp(-acc)), correctly rounded division,
 *                        dwconv_exp being the project's own fma-only exponential
 *                        (docs/numerics.md), never a libm call;
 *     y = acc rounded to the output dtype, round-to-nearest-even (subnormals kept, NaN
 *         stays NaN, overflow gives infinity).
 *   f16 and bf16 inputs and weights are widened to f32 exactly before use.
 *
 * CONVENTIONS
 *   Every entry point validates all of its arguments before touching any output and
 *   returns a dwconv_status. On failure, dwconv_last_error() describes exactly what
 *   was wrong (per thread), and every output (y, *ptr, *context, ...) is untouched.
 *   On GPU backends, the operations and the device-to-device copy are ordered on the
 *   context's stream and may return before the work finishes; call
 *   dwconv_synchronize before reading results on the host.
 *
 * EXTENSIBILITY
 *   dwconv_desc keeps the layout it had in 0.1 for good: a program compiled against
 *   an older header keeps working with a newer library. Options added since (strided
 *   tensors, gradient dtypes) are set on a dwconv_plan through dwconv_plan_set_*
 *   functions, and later options will be added the same way.
 */
#ifndef DWCONV_H
#define DWCONV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(DWCONV_NO_VISIBILITY)
#define DWCONV_API __attribute__((visibility("default")))
#else
#define DWCONV_API
#endif

#define DWCONV_VERSION_MAJOR 0
#define DWCONV_VERSION_MINOR 2
#define DWCONV_VERSION_PATCH 0
/* major * 10000 + minor * 100 + patch, as dwconv_version() returns at run time. */
#define DWCONV_VERSION \
    (DWCONV_VERSION_MAJOR * 10000 + DWCONV_VERSION_MINOR * 100 + DWCONV_VERSION_PATCH)

/* ---- status ------------------------------------------------------------------- */

typedef enum dwconv_status {
    DWCONV_SUCCESS = 0,
    DWCONV_ERROR_NULL_POINTER = 1,        /* a required pointer argument is NULL */
    DWCONV_ERROR_INVALID_VALUE = 2,       /* unknown enum value, size or step < 1, ... */
    DWCONV_ERROR_SIZE_OVERFLOW = 3,       /* a size or byte count does not fit 64 bits */
    DWCONV_ERROR_EMPTY_OUTPUT = 4,        /* L_out would be < 1 */
    DWCONV_ERROR_PADDING_TOO_LARGE = 5,   /* beyond the padding mode's limit */
    DWCONV_ERROR_ALIASING = 6,            /* y overlaps x, weight or bias */
    DWCONV_ERROR_BACKEND_UNAVAILABLE = 7, /* not built, module missing, or no device */
    DWCONV_ERROR_UNSUPPORTED = 8,         /* valid, but this backend cannot do it */
    DWCONV_ERROR_OUT_OF_MEMORY = 9,
    DWCONV_ERROR_BAD_POINTER = 10,        /* memory not usable by this context's device */
    DWCONV_ERROR_DEVICE = 11              /* the driver or runtime reported a failure */
} dwconv_status;

/* A static English name for the status ("DWCONV_ERROR_ALIASING: ..."); never NULL. */
DWCONV_API const char *dwconv_status_string(dwconv_status status);

/* The message of this thread's last failed call ("" after a successful call).
 * Valid until this thread's next dwconv call. */
DWCONV_API const char *dwconv_last_error(void);

/* ---- version ------------------------------------------------------------------ */

DWCONV_API int dwconv_version(void);                /* DWCONV_VERSION of the library */
DWCONV_API const char *dwconv_version_string(void); /* "0.2.0" for this header */

/* ---- descriptor ------------------------------------------------------------------ */

typedef enum dwconv_dtype {
    DWCONV_F32 = 0,
    DWCONV_F16 = 1, /* IEEE binary16 */
    DWCONV_BF16 = 2 /* bfloat16 */
} dwconv_dtype;

typedef enum dwconv_layout {
    DWCONV_LAYOUT_NCL = 0, /* x[b][c][l], contiguous (PyTorch's default) */
    DWCONV_LAYOUT_NLC = 1  /* x[b][l][c], contiguous (channel-last) */
} dwconv_layout;

/* How pad_left and pad_right are chosen. */
typedef enum dwconv_padding {
    DWCONV_PADDING_EXPLICIT = 0, /* use desc.pad_left and desc.pad_right */
    DWCONV_PADDING_SAME = 1,     /* stride must be 1; total = dilation*(K-1),
                                    left = total/2, right = total - left (PyTorch) */
    DWCONV_PADDING_CAUSAL = 2    /* left = dilation*(K-1), right = 0 */
} dwconv_padding;

/* What xp reads outside [0, L); PyTorch's semantics and limits. */
typedef enum dwconv_padding_mode {
    DWCONV_PAD_ZEROS = 0,     /* 0.0f */
    DWCONV_PAD_REFLECT = 1,   /* x[-i] = x[i], x[L-1+i] = x[L-1-i]; needs pad < L */
    DWCONV_PAD_REPLICATE = 2, /* x[-i] = x[0], x[L-1+i] = x[L-1] */
    DWCONV_PAD_CIRCULAR = 3   /* x[-i] = x[L-i]; needs pad <= L */
} dwconv_padding_mode;

typedef enum dwconv_activation {
    DWCONV_ACT_NONE = 0,
    DWCONV_ACT_RELU = 1,
    DWCONV_ACT_SILU = 2
} dwconv_activation;

/* The shape and options of one convolution. Fill it with dwconv_desc_init, then
 * change the fields you need. Weight is (C, 1, K) contiguous: w[c*K + k], in either
 * layout; bias, when given, is C values. Both have weight_dtype. */
typedef struct dwconv_desc {
    int64_t batch;       /* B >= 1 */
    int64_t channels;    /* C >= 1 (= groups) */
    int64_t length;      /* L >= 1, input length */
    int64_t kernel_size; /* K >= 1 */
    int64_t stride;      /* >= 1 (default 1) */
    int64_t dilation;    /* >= 1 (default 1) */
    int64_t pad_left;    /* >= 0, used when padding == DWCONV_PADDING_EXPLICIT */
    int64_t pad_right;   /* >= 0, likewise */
    dwconv_padding padding;           /* default EXPLICIT */
    dwconv_padding_mode padding_mode; /* default ZEROS */
    dwconv_layout layout;             /* default NCL */
    dwconv_dtype dtype;               /* of x and y; default F32 */
    dwconv_dtype weight_dtype;        /* of weight and bias: F32 or == dtype; default F32 */
    dwconv_activation activation;     /* default NONE */
} dwconv_desc;

/* Sets the four sizes and every option to its default (stride 1, dilation 1, no
 * padding, zeros mode, NCL, f32 everywhere, no activation). */
DWCONV_API dwconv_status dwconv_desc_init(dwconv_desc *desc, int64_t batch, int64_t channels,
                                          int64_t length, int64_t kernel_size);

/* Validates the descriptor alone and reports the padding actually used (presets
 * resolved) and L_out. Any output pointer may be NULL. */
DWCONV_API dwconv_status dwconv_desc_resolve(const dwconv_desc *desc, int64_t *pad_left,
                                             int64_t *pad_right, int64_t *output_length);

/* Element counts of x, y, weight and bias for a valid descriptor; any may be NULL. */
DWCONV_API dwconv_status dwconv_desc_sizes(const dwconv_desc *desc, int64_t *x_elements,
                                           int64_t *y_elements, int64_t *weight_elements,
                                           int64_t *bias_elements);

DWCONV_API size_t dwconv_dtype_size(dwconv_dtype dtype); /* 4, 2, 2; 0 if unknown */

/* ---- backends and contexts ----------------------------------------------------- */

typedef enum dwconv_backend {
    DWCONV_BACKEND_AUTO = 0, /* DWCONV_BACKEND in the environment, else the first of
                                cuda, hip that has a device, else cpu */
    DWCONV_BACKEND_CPU = 1,
    DWCONV_BACKEND_CUDA = 2,
    DWCONV_BACKEND_HIP = 3
} dwconv_backend;

DWCONV_API const char *dwconv_backend_name(dwconv_backend backend); /* "cpu", ...; "?" */

/* Parses "auto", "cpu", "cuda" or "hip". */
DWCONV_API dwconv_status dwconv_backend_parse(const char *name, dwconv_backend *backend);

/* What this process can use of one backend: filled by dwconv_backend_query. */
typedef struct dwconv_backend_report {
    dwconv_backend backend;
    int built;        /* configured into this build of dwconv */
    int loaded;       /* its module was found and accepted (always 1 for cpu) */
    int device_count; /* usable devices; 0 when none */
    char module_path[512]; /* the file loaded or tried last; "" for cpu */
    char detail[512];      /* why it is unusable, or a one-line summary */
} dwconv_backend_report;

/* Loads the backend's module if needed (never fatal) and reports what it found.
 * Returns DWCONV_SUCCESS whenever the report was filled, usable or not. */
DWCONV_API dwconv_status dwconv_backend_query(dwconv_backend backend,
                                              dwconv_backend_report *report);

/* The device's name: the GPU's, e.g. "NVIDIA H200", or for the cpu "host CPU (avx512 kernels)"
 * (the SIMD flavour its forward runs). */
DWCONV_API dwconv_status dwconv_device_name(dwconv_backend backend, int device, char *name,
                                            size_t name_size);

typedef struct dwconv_context dwconv_context;

/* Creates a context on one device of a backend (device is 0 for cpu). On GPU
 * backends its work is ordered on the legacy default stream (as cuBLAS and cuDNN
 * handles are) until dwconv_context_set_stream names another, and every call leaves
 * the caller's current device as it found it. AUTO never picks a backend that cannot
 * run; an explicit choice that cannot run fails with BACKEND_UNAVAILABLE. */
DWCONV_API dwconv_status dwconv_context_create(dwconv_context **context, dwconv_backend backend,
                                               int device);
DWCONV_API dwconv_status dwconv_context_destroy(dwconv_context *context);
DWCONV_API dwconv_status dwconv_context_backend(const dwconv_context *context,
                                                dwconv_backend *backend);

/* Orders the context's work on the caller's stream (cudaStream_t or hipStream_t, as
 * void *) from now on; NULL returns to the legacy default stream. The caller keeps
 * ownership. On the cpu backend only NULL is accepted. */
DWCONV_API dwconv_status dwconv_context_set_stream(dwconv_context *context, void *stream);
DWCONV_API dwconv_status dwconv_context_get_stream(const dwconv_context *context,
                                                   void **stream);

/* cpu backend: the number of OpenMP threads a call uses at most (0: OpenMP's
 * default), 0 .. DWCONV_MAX_THREADS; small problems use fewer. Other backends:
 * DWCONV_ERROR_UNSUPPORTED. */
#define DWCONV_MAX_THREADS 1024
DWCONV_API dwconv_status dwconv_context_set_threads(dwconv_context *context, int threads);

/* ---- memory on the context's backend ------------------------------------------------ */

/* 64-byte aligned (at least) memory usable by every operation on this context. On
 * failure *ptr is left as it was. */
DWCONV_API dwconv_status dwconv_malloc(dwconv_context *context, void **ptr, size_t bytes);
DWCONV_API dwconv_status dwconv_free(dwconv_context *context, void *ptr); /* NULL: no-op */
DWCONV_API dwconv_status dwconv_copy_to_backend(dwconv_context *context, void *dst,
                                                const void *host_src, size_t bytes);
DWCONV_API dwconv_status dwconv_copy_to_host(dwconv_context *context, void *host_dst,
                                             const void *src, size_t bytes);
DWCONV_API dwconv_status dwconv_copy_on_backend(dwconv_context *context, void *dst,
                                                const void *src, size_t bytes);
/* dwconv_copy_to_backend and dwconv_copy_to_host return when the bytes have arrived
 * (after the work ordered before them on the stream); dwconv_copy_on_backend is ordered
 * on the stream like the operations and may return before it is done. */
/* Waits until all work ordered on the context's stream has finished. */
DWCONV_API dwconv_status dwconv_synchronize(dwconv_context *context);

/* ---- the operation ------------------------------------------------------------------ */

/* y = conv(x, weight) (+ bias) (, activation), per the descriptor and the numerical
 * contract above. x, weight, bias and y are memory of the context's backend; bias may
 * be NULL (no bias). y must not overlap x, weight or bias. */
DWCONV_API dwconv_status dwconv_forward(dwconv_context *context, const dwconv_desc *desc,
                                        const void *x, const void *weight, const void *bias,
                                        void *y);

/* The oracle: the same operation through the scalar reference implementation, one
 * thread, on HOST memory, whatever backend is in use. Slow and obviously right;
 * every backend's dwconv_forward is bitwise equal to it. Validates like
 * dwconv_forward. */
DWCONV_API dwconv_status dwconv_reference_forward(const dwconv_desc *desc, const void *x,
                                                  const void *weight, const void *bias, void *y);

/* ---- plans: a descriptor validated once, and the options added since 0.1 ---------- */

/* A plan binds a validated descriptor to a context; the calls that run it check only
 * the tensors. Create one per shape and reuse it (this is also the cheapest way to
 * call: dwconv_forward validates the descriptor on every call). A plan is used by
 * one thread at a time, like its context, and must be destroyed before its context. */
typedef struct dwconv_plan dwconv_plan;

DWCONV_API dwconv_status dwconv_plan_create(dwconv_plan **plan, dwconv_context *context,
                                            const dwconv_desc *desc);
DWCONV_API dwconv_status dwconv_plan_destroy(dwconv_plan *plan); /* NULL: no-op */

/* The tensors of shape (B, C, L) or (B, C, L_out) whose memory layout can be set. */
typedef enum dwconv_tensor {
    DWCONV_TENSOR_X = 0,  /* forward and backward input */
    DWCONV_TENSOR_Y = 1,  /* forward output */
    DWCONV_TENSOR_DX = 2, /* backward: the gradient of x */
    DWCONV_TENSOR_DY = 3  /* backward: the gradient of y */
} dwconv_tensor;

/* Element strides of a tensor: element (b, c, l) is at b*batch_stride +
 * c*channel_stride + l*position_stride. Each stride >= 1; a written tensor (y, dx)
 * must not map two elements to one address. Default: contiguous in desc.layout (NCL:
 * C*L, L, 1; NLC: L*C, 1, C). A channel slice of a larger (B, L, C_total) tensor is
 * (L*C_total, 1, C_total). Contiguous NCL and NLC take the fastest paths. */
DWCONV_API dwconv_status dwconv_plan_set_strides(dwconv_plan *plan, dwconv_tensor tensor,
                                                 int64_t batch_stride, int64_t channel_stride,
                                                 int64_t position_stride);

/* Backward: the dtype of dweight and dbias, DWCONV_F32 or desc.weight_dtype (the
 * default). */
DWCONV_API dwconv_status dwconv_plan_set_grad_dtype(dwconv_plan *plan, dwconv_dtype dtype);

/* dwconv_forward with the plan's descriptor and strides. */
DWCONV_API dwconv_status dwconv_plan_forward(dwconv_plan *plan, const void *x, const void *weight,
                                             const void *bias, void *y);

/* dwconv_backward with the plan's descriptor, strides and gradient dtype. */
DWCONV_API dwconv_status dwconv_plan_backward(dwconv_plan *plan, const void *x,
                                              const void *weight, const void *bias,
                                              const void *dy, void *dx, void *dweight,
                                              void *dbias);

/* ---- training: the backward pass ----------------------------------------------------- */

/* The gradients of dwconv_forward(desc, x, weight, bias) given dy, the gradient of
 * y: dx (like x), dweight (C*K) and dbias (C), each NULL when not wanted (at least
 * one is wanted). With an activation, the pre-activation is recomputed from x, weight
 * and bias, so pass the forward's bias (NULL if it had none; dbias can be asked for
 * either way). dweight and dbias are in desc.weight_dtype (dwconv_plan_set_grad_dtype
 * chooses f32). The sums follow the backward contract in docs/numerics.md: the same
 * bits on every backend, thread count and run (no floating-point atomics). Outputs
 * must not overlap any input or each other. The GPU backends keep the scratch the
 * weight reduction needs in the context, allocated by the first call that needs it
 * (so, under CUDA graph capture, run the call once before capturing it). */
DWCONV_API dwconv_status dwconv_backward(dwconv_context *context, const dwconv_desc *desc,
                                         const void *x, const void *weight, const void *bias,
                                         const void *dy, void *dx, void *dweight, void *dbias);

/* The oracle of dwconv_backward on host memory, one thread, any backend in use. */
DWCONV_API dwconv_status dwconv_reference_backward(const dwconv_desc *desc, const void *x,
                                                   const void *weight, const void *bias,
                                                   const void *dy, void *dx, void *dweight,
                                                   void *dbias);

/* ---- serving causal models: carried states, decode, packed sequences ------------------- */
/* These need causal padding (desc.padding CAUSAL, or explicit pad_left =
 * dilation*(K-1) and pad_right = 0), zeros mode and stride 1; any K, dilation, bias,
 * activation, dtype, and either layout for x and y. A state holds the last
 * S = dilation*(K-1) inputs of a sequence per channel, in desc.dtype, shaped
 * (count, C, S) and contiguous: state[n][c][s], s = 0 the oldest. */

/* Chunked prefill: y = the causal convolution of x continuing after initial_states
 * (B states; NULL: zeros, i.e. a sequence start), and final_states (B states, or
 * NULL) receives the last S inputs of each sequence's concatenated history, so the
 * next chunk continues from it. final_states may be the same memory as
 * initial_states (updated in place); it must not overlap anything else. */
DWCONV_API dwconv_status dwconv_causal_forward(dwconv_context *context, const dwconv_desc *desc,
                                               const void *x, const void *weight,
                                               const void *bias, const void *initial_states,
                                               void *final_states, void *y);

/* Packed variable-length sequences, each convolved on its own (no tap reads across a
 * boundary). Give exactly one of:
 *   cu_seqlens: `sequences` + 1 int32 offsets along L (desc.batch must be 1):
 *     sequence n is positions [cu_seqlens[n], cu_seqlens[n+1]); cu_seqlens[0] = 0,
 *     non-decreasing, cu_seqlens[sequences] = L. initial_states and final_states
 *     (each NULL or `sequences` states) belong to the sequences.
 *   seq_idx: B*L int32 ids, one per position (in x's batch and position order): a tap
 *     reads x only where its position has the id of the output's position, else 0.
 *     States are not available in this form (pass NULL and sequences = 0).
 * The index arrays are memory of the context's backend. On the cpu they are checked
 * before anything is written. On a GPU they are checked on the device: a call given
 * bad offsets writes nothing, and the next dwconv_synchronize on the context returns
 * DWCONV_ERROR_INVALID_VALUE with the message. */
DWCONV_API dwconv_status dwconv_causal_varlen_forward(
    dwconv_context *context, const dwconv_desc *desc, const void *x, const void *weight,
    const void *bias, const int32_t *cu_seqlens, const int32_t *seq_idx, int64_t sequences,
    const void *initial_states, void *final_states, void *y);

/* The gradients of dwconv_causal_forward: as dwconv_backward (dx, dweight, dbias from
 * dy), with the states: initial_states as given to the forward (NULL: zeros),
 * dfinal_states the gradient arriving at its final_states (NULL: none), and
 * dinitial_states (NULL: not wanted) receiving the gradient of initial_states. */
DWCONV_API dwconv_status dwconv_causal_backward(dwconv_context *context, const dwconv_desc *desc,
                                                const void *x, const void *weight,
                                                const void *bias, const void *initial_states,
                                                const void *dy, const void *dfinal_states,
                                                void *dx, void *dweight, void *dbias,
                                                void *dinitial_states);

/* Decode: desc.length = T new tokens of desc.batch = B sequences (x and y shaped
 * (B, C, T) in desc.layout), against a pool of `pool_size` states of `state_length`
 * (>= S) inputs each: conv_state[p][c][s], updated in place.
 *   state_indices: NULL (sequence b uses slot b; pool_size >= B), or B int32 slots
 *     (negative: a padding entry, skipped: its y is left untouched, no state changes).
 *   cache_seqlens: NULL: each state is a shift register (the newest input last; a call
 *     shifts the T tokens in); or B int32 token counts: each state is a circular
 *     buffer, input number i of the sequence at s = i mod state_length, and the call
 *     reads the S inputs before cache_seqlens[b] and writes the T tokens from there
 *     (the caller advances cache_seqlens, as causal-conv1d's callers do).
 * Output token t of sequence b is the causal convolution at its position in the
 * sequence: taps before the new tokens read the state. Index arrays are checked as
 * for dwconv_causal_varlen_forward (a slot >= pool_size is an error). */
DWCONV_API dwconv_status dwconv_causal_update(dwconv_context *context, const dwconv_desc *desc,
                                              const void *x, void *conv_state, int64_t pool_size,
                                              int64_t state_length, const void *weight,
                                              const void *bias, const int32_t *cache_seqlens,
                                              const int32_t *state_indices, void *y);

/* ---- timing -------------------------------------------------------------------------- */

/* Device-side timing of the work ordered between start and stop on the context's
 * stream (CUDA/HIP events; a monotonic clock on the cpu). Stop waits for that work.
 * One timer per context. */
DWCONV_API dwconv_status dwconv_timer_start(dwconv_context *context);
DWCONV_API dwconv_status dwconv_timer_stop(dwconv_context *context, double *milliseconds);

#ifdef __cplusplus
}
#endif
#endif /* DWCONV_H */
