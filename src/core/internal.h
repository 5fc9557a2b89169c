/* Declarations shared by the core's files; nothing here is public API. */
#ifndef DWCONV_CORE_INTERNAL_H
#define DWCONV_CORE_INTERNAL_H

#include "dwconv.h"
#include "dwconv_module.h"

/* ---- errors (status.c) ---- */

/* Every public entry point starts with this: the per-thread message becomes "". */
void dwconv_clear_error(void);
/* Sets the per-thread message (printf-style; control characters such as a newline
 * from an environment value become '?', so the message stays one line; an over-long
 * message is cut and ends in "...") and returns status, for
 * `return dwconv_fail(DWCONV_ERROR_..., "...", ...);`. */
dwconv_status dwconv_fail(dwconv_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define DWCONV_REQUIRE(cond, status, ...)                                                \
    do {                                                                                 \
        if (!(cond)) return dwconv_fail((status), __VA_ARGS__);                          \
    } while (0)

/* ---- problems (problem.c): the checks every operation shares ---- */

/* Validates desc and fills p's op, resolved desc, output_length and span; every
 * operand absent. `who` names the calling entry point in messages. On failure *p is
 * unspecified. */
dwconv_status dwconv_problem_init(dwconv_problem *p, dwconv_op op, const dwconv_desc *desc,
                                  const char *who);

/* The name of an operand in messages ("x", "final_states", ...). */
const char *dwconv_role_name(dwconv_role role);

/* Strides of a (B, C, n) tensor contiguous in layout. */
void dwconv_default_strides(dwconv_layout layout, int64_t channels, int64_t n, int64_t stride[3]);

/* Checks strides for a (B, C, n) tensor (each >= 1; if `written`, no two elements at
 * one address) and stores them in p's operand `role` with its extent in bytes. */
dwconv_status dwconv_set_strided(dwconv_problem *p, dwconv_role role, int dtype, int written,
                                 int64_t n, const int64_t stride[3], const char *who);

/* A contiguous operand of `elements` elements. */
dwconv_status dwconv_set_flat(dwconv_problem *p, dwconv_role role, int dtype, int written,
                              int64_t elements, const char *who);

/* Attaches the caller's pointer to an operand whose shape is set: NULL_POINTER if
 * `required` and ptr is NULL; a NULL optional operand is marked absent. */
dwconv_status dwconv_attach(dwconv_problem *p, dwconv_role role, const void *ptr, int required,
                            const char *who);

/* Options of a plan that the validators apply (dwconv_plan_set_*). */
typedef struct dwconv_layout_options {
    const int64_t (*strides)[3]; /* [4][3], per dwconv_tensor; a row of zeros or NULL:
                                    contiguous in desc.layout */
    int grad_dtype;              /* -1: desc.weight_dtype */
} dwconv_layout_options;

/* The shapes of x, y, weight and bias, and with_gradients also dy, dx, dweight and
 * dbias, of a problem whose geometry is set; opt may be NULL. */
dwconv_status dwconv_set_conv_shapes(dwconv_problem *p, const dwconv_layout_options *opt,
                                     int with_gradients, const char *who);

/* `count` states of `length` inputs (C*length each, desc.dtype) as operand `role`. */
dwconv_status dwconv_set_states(dwconv_problem *p, dwconv_role role, int written, int64_t count,
                                int64_t length, const char *who);

/* [a, a+an) and [b, b+bn) share a byte. */
int dwconv_ranges_overlap(const void *a, size_t an, const void *b, size_t bn);

/* ALIASING unless every written operand overlaps no other given operand, except the
 * pairs in allowed (role pairs that may be the same memory exactly: in-place states);
 * `allowed` ends with DWCONV_ROLE_COUNT. */
dwconv_status dwconv_check_overlaps(const dwconv_problem *p, const dwconv_role *allowed,
                                    const char *who);

/* ---- one validator per operation (validate_*.c) ---- */

/* Each builds the problem from a public call's arguments, or fails with the message
 * naming `who` and the argument. opt may be NULL (the descriptor's layout). */

dwconv_status dwconv_validate_forward(dwconv_problem *p, const dwconv_desc *desc,
                                      const dwconv_layout_options *opt, const void *x,
                                      const void *weight, const void *bias, void *y,
                                      const char *who);
dwconv_status dwconv_validate_backward(dwconv_problem *p, const dwconv_desc *desc,
                                       const dwconv_layout_options *opt, const void *x,
                                       const void *weight, const void *bias, const void *dy,
                                       void *dx, void *dweight, void *dbias, const char *who);

/* The causal operations' shared rules: causal padding, zeros, stride 1. */
dwconv_status dwconv_check_causal(const dwconv_problem *p, const char *who);

dwconv_status dwconv_validate_causal_forward(dwconv_problem *p, const dwconv_desc *desc,
                                             const void *x, const void *weight,
                                             const void *bias, const int32_t *cu_seqlens,
                                             const int32_t *seq_idx, int64_t sequences,
                                             const void *initial_states, void *final_states,
                                             void *y, const char *who);
dwconv_status dwconv_validate_causal_update(dwconv_problem *p, const dwconv_desc *desc,
                                            const void *x, void *conv_state, int64_t pool_size,
                                            int64_t state_length, const void *weight,
                                            const void *bias, const int32_t *cache_seqlens,
                                            const int32_t *state_indices, void *y,
                                            const char *who);
/* The backward's checks, then the causal rules and the state operands. */
dwconv_status dwconv_validate_causal_backward(dwconv_problem *p, const dwconv_desc *desc,
                                              const void *x, const void *weight,
                                              const void *bias, const void *initial_states,
                                              const void *dy, const void *dfinal_states,
                                              void *dx, void *dweight, void *dbias,
                                              void *dinitial_states, const char *who);

/* ---- running (run.c) ---- */

struct dwconv_context {
    dwconv_backend backend;
    int device;
    const dwconv_module_ops *ops;
    void *state;
};

/* Checks every given operand's memory with the backend, then runs the problem. */
dwconv_status dwconv_run(dwconv_context *ctx, const dwconv_problem *p, const char *who);

/* ---- backends (loader.c) ---- */

/* The usable ops table of a backend (every optional member filled), loading its
 * module on first use; NULL when the backend cannot run here, with the reason in
 * report->detail. report may be NULL. */
const dwconv_module_ops *dwconv_backend_ops(dwconv_backend backend,
                                            dwconv_backend_report *report);

/* Whether device `device` of a loaded backend can run its code: SUCCESS, or
 * BACKEND_UNAVAILABLE with why in msg. */
dwconv_status dwconv_backend_device_check(const dwconv_module_ops *ops, int device, char *msg);

#endif
