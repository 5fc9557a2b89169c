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
 *   was wrong (per thread). On GPU backends, dwconv_forward and the copies are
 *   ordered on the context's stream and may return before the work finishes; call
 *   dwconv_synchronize before reading results on the host.
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
#define DWCONV_VERSION_MINOR 1
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
DWCONV_API const char *dwconv_version_string(void); /* "0.1.0" */

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

/* The device's name, e.g. "NVIDIA H200", or "x86_64 CPU (AVX-512)". */
DWCONV_API dwconv_status dwconv_device_name(dwconv_backend backend, int device, char *name,
                                            size_t name_size);

typedef struct dwconv_context dwconv_context;

/* Creates a context on one device of a backend (device is 0 for cpu). The context
 * owns a stream of its own on GPU backends. AUTO never picks a backend that cannot
 * run; an explicit choice that cannot run fails with BACKEND_UNAVAILABLE. */
DWCONV_API dwconv_status dwconv_context_create(dwconv_context **context, dwconv_backend backend,
                                               int device);
DWCONV_API dwconv_status dwconv_context_destroy(dwconv_context *context);
DWCONV_API dwconv_status dwconv_context_backend(const dwconv_context *context,
                                                dwconv_backend *backend);

/* Orders the context's work on the caller's stream (cudaStream_t or hipStream_t, as
 * void *) from now on; NULL returns to the context's own stream. The caller keeps
 * ownership. On the cpu backend only NULL is accepted. */
DWCONV_API dwconv_status dwconv_context_set_stream(dwconv_context *context, void *stream);
DWCONV_API dwconv_status dwconv_context_get_stream(const dwconv_context *context,
                                                   void **stream);

/* cpu backend: the number of OpenMP threads a call uses (0: OpenMP's default).
 * Other backends: DWCONV_ERROR_UNSUPPORTED. */
DWCONV_API dwconv_status dwconv_context_set_threads(dwconv_context *context, int threads);

/* ---- memory on the context's backend ------------------------------------------------ */

/* 64-byte aligned (at least) memory usable by dwconv_forward on this context. */
DWCONV_API dwconv_status dwconv_malloc(dwconv_context *context, void **ptr, size_t bytes);
DWCONV_API dwconv_status dwconv_free(dwconv_context *context, void *ptr); /* NULL: no-op */
DWCONV_API dwconv_status dwconv_copy_to_backend(dwconv_context *context, void *dst,
                                                const void *host_src, size_t bytes);
DWCONV_API dwconv_status dwconv_copy_to_host(dwconv_context *context, void *host_dst,
                                             const void *src, size_t bytes);
DWCONV_API dwconv_status dwconv_copy_on_backend(dwconv_context *context, void *dst,
                                                const void *src, size_t bytes);
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
