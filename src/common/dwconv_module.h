/*
 * The contract between the core of libdwconv and a backend (module ABI 2). The cpu
 * backend is a table like any other, compiled into the core; the GPU backends are
 * loadable modules that export DWCONV_MODULE_ENTRY_SYMBOL. A module never calls back
 * into the core: everything it needs arrives through these arguments, so it links
 * against nothing of ours and the core links against nothing of theirs.
 *
 * Operations reach a backend as one resolved dwconv_problem (src/core builds and
 * validates it): the operation, its geometry and its operands. A backend answers
 * `supports` (can it run this problem?) and `run` (run it). Adding an operation adds
 * a dwconv_op value and, maybe, operand roles; it does not change the table.
 *
 * Members before DWCONV_MODULE_OPS_MIN_SIZE are required (never NULL). The optional
 * ones after it may be NULL, and a table built against an older header may end before
 * them (ops_size says where it ends): the core then calls its own default, which answers
 * DWCONV_ERROR_UNSUPPORTED (or, for get_stream, NULL). Every member that can fail
 * writes a one-line reason into msg (at most DWCONV_MSG_SIZE bytes, NUL-terminated).
 *
 * The core validates every argument before it calls a member: sizes are in range,
 * required pointers are non-NULL, outputs overlap no input, and every operand's bytes
 * passed check_pointer. A member checks only what the core cannot see (the device,
 * and device-resident index arrays, which are checked where they live).
 */
#ifndef DWCONV_MODULE_H
#define DWCONV_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the table, dwconv_problem or dwconv_operand changes shape or meaning
 * in a way an existing module would misread. */
#define DWCONV_MODULE_ABI_VERSION 2u
/* The one symbol a module exports: const dwconv_module_ops *dwconv_module_entry(void). */
#define DWCONV_MODULE_ENTRY_SYMBOL "dwconv_module_entry"
/* ABI 1's entry: looked up only to tell the user that a module is too old. */
#define DWCONV_MODULE_ENTRY_SYMBOL_V1 "dwconv_module_entry_v1"
#define DWCONV_MSG_SIZE 512

/* ---- problems ---------------------------------------------------------------------- */

typedef enum dwconv_op {
    DWCONV_OP_FORWARD = 0,        /* y = conv(x) */
    DWCONV_OP_BACKWARD = 1,       /* any of dx, dweight, dbias from dy (and x, weight, bias);
                                     causal: also with states (dwconv_causal_backward) */
    DWCONV_OP_CAUSAL_FORWARD = 2, /* causal conv carrying states; packed sequences */
    DWCONV_OP_CAUSAL_UPDATE = 3,  /* decode: new tokens against a state pool, in place */
    DWCONV_OP_COUNT
} dwconv_op;

/* What an operand is to its operation. Shapes (contiguous unless stride says otherwise):
 *   X, DX          (B, C, L)        stride[] gives the layout
 *   Y, DY          (B, C, L_out)    stride[] gives the layout
 *   WEIGHT         (C, K)           DWEIGHT likewise, in grad_dtype
 *   BIAS           (C)              DBIAS likewise, in grad_dtype
 *   STATE_IN/OUT   (N, C, S)        causal forward: the S = span inputs before / at the
 *                                   end of each sequence (N = B, or `sequences`);
 *                                   causal backward: STATE_IN as given to the forward
 *   DSTATE_OUT     (B, C, S)        causal backward: the gradient arriving at STATE_OUT
 *   DSTATE_IN      (B, C, S)        causal backward: the gradient of STATE_IN
 *   STATE          (P, C, S)        causal update: the pool, read and written in place
 *   CACHE_SEQLENS  (B) int32        causal update: tokens seen; the state is circular
 *   STATE_INDICES  (B) int32        causal update: pool slot of each sequence (< 0: skip)
 *   CU_SEQLENS     (N + 1) int32    causal forward, B = 1: sequence offsets along L
 *   SEQ_IDX        (B, L) int32     causal forward: sequence id of each position */
typedef enum dwconv_role {
    DWCONV_ROLE_X = 0,
    DWCONV_ROLE_WEIGHT,
    DWCONV_ROLE_BIAS,
    DWCONV_ROLE_Y,
    DWCONV_ROLE_DY,
    DWCONV_ROLE_DX,
    DWCONV_ROLE_DWEIGHT,
    DWCONV_ROLE_DBIAS,
    DWCONV_ROLE_STATE_IN,
    DWCONV_ROLE_STATE_OUT,
    DWCONV_ROLE_STATE,
    DWCONV_ROLE_CACHE_SEQLENS,
    DWCONV_ROLE_STATE_INDICES,
    DWCONV_ROLE_CU_SEQLENS,
    DWCONV_ROLE_SEQ_IDX,
    DWCONV_ROLE_DSTATE_OUT,
    DWCONV_ROLE_DSTATE_IN,
    DWCONV_ROLE_COUNT
} dwconv_role;

/* Operand element types: the public dwconv_dtype values, plus int32 for index arrays. */
#define DWCONV_I32 3

/* Strides are in elements: stride[DWCONV_DIM_BATCH] between batch entries, ...CHANNEL
 * between channels, ...POSITION between positions. Set for every operand of shape
 * (B, C, L) or (B, C, L_out); the others are contiguous in the order their shape says. */
enum { DWCONV_DIM_BATCH = 0, DWCONV_DIM_CHANNEL = 1, DWCONV_DIM_POSITION = 2 };

typedef struct dwconv_operand {
    void *data;        /* NULL: not given (optional operands only) */
    int dtype;         /* a dwconv_dtype, or DWCONV_I32 */
    int written;       /* the operation writes it */
    int64_t stride[3]; /* see above; all >= 1 */
    size_t bytes;      /* from data to one past the last byte it may touch */
} dwconv_operand;

/* A validated operation with everything derived from it. desc's padding presets are
 * resolved (desc.padding is EXPLICIT, pad_left/pad_right are the ones to use). */
typedef struct dwconv_problem {
    dwconv_op op;
    dwconv_desc desc;
    int64_t output_length; /* L_out >= 1 */
    int64_t span;          /* dilation * (K - 1) */
    int64_t state_length;  /* S: causal forward: span; causal update: the pool's (>= span) */
    int64_t state_count;   /* N (causal forward) or P (causal update) */
    int grad_dtype;        /* backward: the dtype of dweight and dbias */
    dwconv_operand operand[DWCONV_ROLE_COUNT];
} dwconv_problem;

/* Whether an (B, C, *) operand is channel-first (positions adjacent) or channel-last
 * (channels adjacent): the layouts the fast paths take; anything else is "strided". */
static inline int dwconv_channel_first(const dwconv_operand *t) {
    return t->stride[DWCONV_DIM_POSITION] == 1;
}
static inline int dwconv_channel_last(const dwconv_operand *t) {
    return t->stride[DWCONV_DIM_CHANNEL] == 1;
}

/* ---- the table ------------------------------------------------------------------------ */

typedef struct dwconv_module_ops {
    uint32_t abi_version; /* DWCONV_MODULE_ABI_VERSION the module was built with */
    uint32_t ops_size;    /* sizeof(dwconv_module_ops) the module was built with */
    const char *name;     /* "cuda", "hip", "cpu" */

    /* ---- required ---- */

    /* Devices the runtime sees; 0 with the reason in msg when there are none. */
    int (*device_count)(char *msg);
    dwconv_status (*device_name)(int device, char *name, size_t name_size, char *msg);

    /* Per-context state: the device, its stream, a timer, scratch. */
    dwconv_status (*context_create)(int device, void **state, char *msg);
    void (*context_destroy)(void *state);
    /* A one-line summary for dwconv info: SIMD flavour, threads, driver, ... */
    void (*describe)(void *state, char *text, size_t text_size);

    dwconv_status (*mem_alloc)(void *state, void **ptr, size_t bytes, char *msg);
    dwconv_status (*mem_free)(void *state, void *ptr, char *msg);
    dwconv_status (*copy_to_backend)(void *state, void *dst, const void *src, size_t bytes,
                                     char *msg);
    dwconv_status (*copy_to_host)(void *state, void *dst, const void *src, size_t bytes,
                                  char *msg);
    dwconv_status (*copy_on_backend)(void *state, void *dst, const void *src, size_t bytes,
                                     char *msg);
    /* Waits for the context's work; also reports errors the device found in it (a bad
     * device-resident index). */
    dwconv_status (*synchronize)(void *state, char *msg);

    /* SUCCESS if [ptr, ptr+bytes) is memory this context's device can use; what names
     * the argument ("x", "weight", ...) for the message. */
    dwconv_status (*check_pointer)(void *state, const void *ptr, size_t bytes,
                                   const char *what, char *msg);

    /* SUCCESS if run would accept the problem (pointers aside); else UNSUPPORTED and
     * why. run must answer the same way: both go through one code path. */
    dwconv_status (*supports)(void *state, const dwconv_problem *problem, char *msg);
    dwconv_status (*run)(void *state, const dwconv_problem *problem, char *msg);

    /* ---- optional (NULL or past ops_size: the core's default) ---- */

    /* SUCCESS if the device can run this module's code (its architecture is built in,
     * or JIT-able); else BACKEND_UNAVAILABLE and why. Default: every device can. */
    dwconv_status (*device_check)(int device, char *msg);
    dwconv_status (*set_stream)(void *state, void *stream, char *msg);
    void *(*get_stream)(void *state);
    dwconv_status (*set_threads)(void *state, int threads, char *msg);
    dwconv_status (*timer_start)(void *state, char *msg);
    dwconv_status (*timer_stop)(void *state, double *milliseconds, char *msg);
} dwconv_module_ops;

/* The size a table must have at least: every required member. */
#define DWCONV_MODULE_OPS_MIN_SIZE offsetof(dwconv_module_ops, device_check)

typedef const dwconv_module_ops *(*dwconv_module_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* DWCONV_MODULE_H */
