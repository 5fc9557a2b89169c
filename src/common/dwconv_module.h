/*
 * The contract between the core of libdwconv and a backend. The cpu backend is a
 * table like any other, compiled into the core; the GPU backends are loadable modules
 * that export DWCONV_MODULE_ENTRY_SYMBOL. A module never calls back into the core:
 * everything it needs arrives through these arguments, so it links against nothing
 * of ours and the core links against nothing of theirs.
 *
 * Every member is required (the core checks that none is NULL before accepting a
 * table). Every operation that can fail writes a one-line reason into msg (at most
 * DWCONV_MSG_SIZE bytes, NUL-terminated) and returns a status other than SUCCESS.
 * The core validates every argument before it calls a member: sizes are in range,
 * pointers are non-NULL and y overlaps nothing; a member needs to check only what
 * the core cannot see (device memory, the device itself).
 */
#ifndef DWCONV_MODULE_H
#define DWCONV_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever dwconv_module_ops or dwconv_plan changes shape or meaning. */
#define DWCONV_MODULE_ABI_VERSION 1u
/* The one symbol a module exports: const dwconv_module_ops *dwconv_module_entry_v1(void) */
#define DWCONV_MODULE_ENTRY_SYMBOL "dwconv_module_entry_v1"
#define DWCONV_MSG_SIZE 512

/* A validated descriptor with everything derived from it. Padding presets are
 * resolved: desc.padding is EXPLICIT and pad_left/pad_right are the ones to use. */
typedef struct dwconv_plan {
    dwconv_desc desc;
    int64_t output_length;  /* L_out >= 1 */
    int64_t x_elements;     /* B*C*L */
    int64_t y_elements;     /* B*C*L_out */
    int64_t weight_elements;/* C*K */
    size_t x_bytes, y_bytes, weight_bytes, bias_bytes;
    int has_bias;
} dwconv_plan;

typedef struct dwconv_module_ops {
    uint32_t abi_version; /* DWCONV_MODULE_ABI_VERSION the module was built with */
    uint32_t ops_size;    /* sizeof(dwconv_module_ops) the module was built with */
    const char *name;     /* "cuda", "hip", "cpu" */

    /* Usable devices; 0 with the reason in msg when there are none. */
    int (*device_count)(char *msg);
    dwconv_status (*device_name)(int device, char *name, size_t name_size, char *msg);

    /* Per-context state: the device, its stream, a timer. */
    dwconv_status (*context_create)(int device, void **state, char *msg);
    void (*context_destroy)(void *state);
    dwconv_status (*set_stream)(void *state, void *stream, char *msg);
    void *(*get_stream)(void *state);
    dwconv_status (*set_threads)(void *state, int threads, char *msg);
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
    dwconv_status (*synchronize)(void *state, char *msg);

    /* SUCCESS if [ptr, ptr+bytes) is memory this context's device can use; what names
     * the argument ("x", "weight", ...) for the message. */
    dwconv_status (*check_pointer)(void *state, const void *ptr, size_t bytes,
                                   const char *what, char *msg);

    dwconv_status (*forward)(void *state, const dwconv_plan *plan, const void *x,
                             const void *weight, const void *bias, void *y, char *msg);

    dwconv_status (*timer_start)(void *state, char *msg);
    dwconv_status (*timer_stop)(void *state, double *milliseconds, char *msg);
} dwconv_module_ops;

typedef const dwconv_module_ops *(*dwconv_module_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* DWCONV_MODULE_H */
