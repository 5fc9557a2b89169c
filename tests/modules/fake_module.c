/*
 * A fake backend module for tests/check_loader.c: one source, built once per variant
 * (tests/core.inc passes the -D that picks what is wrong with it):
 *
 *   FAKE_NO_ENTRY      exports no DWCONV_MODULE_ENTRY_SYMBOL at all
 *   FAKE_OLD_ABI       exports only ABI 1's entry (a module of dwconv 0.1)
 *   FAKE_WRONG_ABI     a table with abi_version DWCONV_MODULE_ABI_VERSION + 1
 *   FAKE_NULL_MEMBER   a table whose (required) run member is NULL
 *   FAKE_NULL_TABLE    the entry returns NULL
 *   FAKE_SHORT         ops_size below DWCONV_MODULE_OPS_MIN_SIZE
 *   FAKE_MINIMAL       ops_size exactly DWCONV_MODULE_OPS_MIN_SIZE: no optional member
 *   FAKE_NAME="hip"    the backend the table names (default "cuda")
 *   FAKE_DEVICES=n     device_count returns n (default 0, with "fake: no device")
 *
 * With a device, every member is a stub: context_create succeeds, run marks y[0]
 * with FAKE_FORWARD_MARK (so a test can see that the core called it) and fails with
 * "fake: no kernels", and the rest succeed or fail with "fake: ..." messages.
 */
#include <stdio.h>
#include <string.h>

#include "dwconv_module.h"

#ifndef FAKE_NAME
#define FAKE_NAME "cuda"
#endif
#ifndef FAKE_DEVICES
#define FAKE_DEVICES 0
#endif
#define FAKE_FORWARD_MARK 0x5a

static dwconv_status fake_unsupported(char *msg, const char *what) {
    snprintf(msg, DWCONV_MSG_SIZE, "fake: no %s", what);
    return DWCONV_ERROR_UNSUPPORTED;
}

static int fake_device_count(char *msg) {
    if (FAKE_DEVICES < 1) snprintf(msg, DWCONV_MSG_SIZE, "fake: no device");
    return FAKE_DEVICES;
}

static dwconv_status fake_device_name(int device, char *name, size_t size, char *msg) {
    (void)msg;
    snprintf(name, size, "fake %s device %d", FAKE_NAME, device);
    return DWCONV_SUCCESS;
}

static int fake_state; /* contexts need a non-NULL state; nothing is kept in it */

static dwconv_status fake_context_create(int device, void **state, char *msg) {
    (void)device, (void)msg;
    *state = &fake_state;
    return DWCONV_SUCCESS;
}

static void fake_context_destroy(void *state) { (void)state; }

static dwconv_status fake_set_stream(void *state, void *stream, char *msg) {
    (void)state, (void)stream;
    return fake_unsupported(msg, "streams");
}

static void *fake_get_stream(void *state) {
    (void)state;
    return NULL;
}

static dwconv_status fake_set_threads(void *state, int threads, char *msg) {
    (void)state, (void)threads;
    return fake_unsupported(msg, "threads");
}

static void fake_describe(void *state, char *text, size_t size) {
    (void)state;
    snprintf(text, size, "fake %s module", FAKE_NAME);
}

static dwconv_status fake_mem_alloc(void *state, void **ptr, size_t bytes, char *msg) {
    (void)state, (void)ptr, (void)bytes;
    return fake_unsupported(msg, "memory");
}

static dwconv_status fake_mem_free(void *state, void *ptr, char *msg) {
    (void)state, (void)ptr, (void)msg;
    return DWCONV_SUCCESS;
}

static dwconv_status fake_copy(void *state, void *dst, const void *src, size_t bytes, char *msg) {
    (void)state, (void)dst, (void)src, (void)bytes;
    return fake_unsupported(msg, "copies");
}

static dwconv_status fake_synchronize(void *state, char *msg) {
    (void)state, (void)msg;
    return DWCONV_SUCCESS;
}

static dwconv_status fake_check_pointer(void *state, const void *ptr, size_t bytes,
                                        const char *what, char *msg) {
    (void)state, (void)ptr, (void)bytes, (void)what, (void)msg;
    return DWCONV_SUCCESS;
}

static dwconv_status fake_supports(void *state, const dwconv_problem *problem, char *msg) {
    (void)state, (void)problem, (void)msg;
    return DWCONV_SUCCESS;
}

__attribute__((unused)) /* FAKE_NULL_MEMBER leaves it out of the table */
static dwconv_status fake_run(void *state, const dwconv_problem *problem, char *msg) {
    (void)state;
    *(unsigned char *)problem->operand[DWCONV_ROLE_Y].data = FAKE_FORWARD_MARK;
    return fake_unsupported(msg, "kernels");
}

static dwconv_status fake_timer_start(void *state, char *msg) {
    (void)state;
    return fake_unsupported(msg, "timer");
}

static dwconv_status fake_timer_stop(void *state, double *ms, char *msg) {
    (void)state, (void)ms;
    return fake_unsupported(msg, "timer");
}

static const dwconv_module_ops fake_ops = {
#ifdef FAKE_WRONG_ABI
    .abi_version = DWCONV_MODULE_ABI_VERSION + 1,
#else
    .abi_version = DWCONV_MODULE_ABI_VERSION,
#endif
#if defined FAKE_MINIMAL /* a table built before any optional member existed */
    .ops_size = DWCONV_MODULE_OPS_MIN_SIZE,
#elif defined FAKE_SHORT /* a table too short for the ABI */
    .ops_size = DWCONV_MODULE_OPS_MIN_SIZE - sizeof(void *),
#else
    .ops_size = sizeof(dwconv_module_ops),
#endif
    .name = FAKE_NAME,
    .device_count = fake_device_count,
    .device_name = fake_device_name,
    .context_create = fake_context_create,
    .context_destroy = fake_context_destroy,
    .describe = fake_describe,
    .mem_alloc = fake_mem_alloc,
    .mem_free = fake_mem_free,
    .copy_to_backend = fake_copy,
    .copy_to_host = fake_copy,
    .copy_on_backend = fake_copy,
    .synchronize = fake_synchronize,
    .check_pointer = fake_check_pointer,
    .supports = fake_supports,
#ifdef FAKE_NULL_MEMBER
    .run = NULL,
#else
    .run = fake_run,
#endif
    /* optional: what a FAKE_MINIMAL table's size leaves out, the core must not call */
    .set_stream = fake_set_stream,
    .get_stream = fake_get_stream,
    .set_threads = fake_set_threads,
    .timer_start = fake_timer_start,
    .timer_stop = fake_timer_stop,
};

#if defined FAKE_NO_ENTRY
/* Something is exported, just not the entry point. */
const dwconv_module_ops *fake_module_table(void);
const dwconv_module_ops *fake_module_table(void) { return &fake_ops; }
#elif defined FAKE_OLD_ABI
/* ABI 1's entry point: a module built for dwconv 0.1. */
const dwconv_module_ops *dwconv_module_entry_v1(void);
const dwconv_module_ops *dwconv_module_entry_v1(void) { return &fake_ops; }
#else
const dwconv_module_ops *dwconv_module_entry(void);
const dwconv_module_ops *dwconv_module_entry(void) {
#ifdef FAKE_NULL_TABLE
    (void)&fake_ops;
    return NULL;
#else
    return &fake_ops;
#endif
}
#endif
