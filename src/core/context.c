/* Contexts, their memory and copies: every argument is validated here, once for
 * every backend, before the backend's table is called. */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Calls a table member that reports through msg, and turns its failure into the
 * per-thread message. */
#define CALL_OPS(who, ctx, member, ...)                                                  \
    do {                                                                                 \
        char msg_[DWCONV_MSG_SIZE] = "";                                                 \
        dwconv_status st_ = (ctx)->ops->member((ctx)->state, __VA_ARGS__, msg_);         \
        if (st_ != DWCONV_SUCCESS) return dwconv_fail(st_, "%s: %s", (who), msg_);       \
    } while (0)

/* Whether device `device` of a backend exists and can run its code. */
static int usable(dwconv_backend backend, int device) {
    dwconv_backend_report report;
    const dwconv_module_ops *ops = dwconv_backend_ops(backend, &report);
    char msg[DWCONV_MSG_SIZE];
    return ops && device < report.device_count &&
           dwconv_backend_device_check(ops, device, msg) == DWCONV_SUCCESS;
}

/* AUTO: DWCONV_BACKEND if set, else the first GPU backend on which `device` can run,
 * else cpu. */
static dwconv_status choose_auto(dwconv_backend *backend, int device) {
    const char *env = getenv("DWCONV_BACKEND");
    if (env && *env) {
        if (dwconv_backend_parse(env, backend) != DWCONV_SUCCESS)
            return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                               "dwconv_context_create: DWCONV_BACKEND='%s' is not one of auto, "
                               "cpu, cuda, hip", env);
        if (*backend != DWCONV_BACKEND_AUTO) return DWCONV_SUCCESS;
    }
    *backend = DWCONV_BACKEND_CPU;
    if (usable(DWCONV_BACKEND_CUDA, device)) *backend = DWCONV_BACKEND_CUDA;
    else if (usable(DWCONV_BACKEND_HIP, device)) *backend = DWCONV_BACKEND_HIP;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_context_create(dwconv_context **context, dwconv_backend backend,
                                    int device) {
    static const char who[] = "dwconv_context_create";
    dwconv_clear_error();
    DWCONV_REQUIRE(context, DWCONV_ERROR_NULL_POINTER, "%s: context is NULL", who);
    DWCONV_REQUIRE((unsigned)backend <= DWCONV_BACKEND_HIP, DWCONV_ERROR_INVALID_VALUE,
            "%s: backend %d is not a dwconv_backend", who, (int)backend);
    DWCONV_REQUIRE(device >= 0, DWCONV_ERROR_INVALID_VALUE, "%s: device %d is negative", who,
                   device);
    if (backend == DWCONV_BACKEND_AUTO) {
        dwconv_status st = choose_auto(&backend, device);
        if (st) return st;
    }
    dwconv_backend_report report;
    const dwconv_module_ops *ops = dwconv_backend_ops(backend, &report);
    DWCONV_REQUIRE(ops, DWCONV_ERROR_BACKEND_UNAVAILABLE, "%s: backend %s cannot run here: %s",
                   who, dwconv_backend_name(backend), report.detail);
    DWCONV_REQUIRE(device < report.device_count, DWCONV_ERROR_INVALID_VALUE,
                   "%s: device %d does not exist (%s has %d)", who, device,
                   dwconv_backend_name(backend), report.device_count);
    char msg[DWCONV_MSG_SIZE] = "";
    dwconv_status st = dwconv_backend_device_check(ops, device, msg);
    if (st)
        return dwconv_fail(st, "%s: backend %s cannot run on device %d: %s", who,
                           dwconv_backend_name(backend), device, msg);

    dwconv_context *ctx = calloc(1, sizeof *ctx);
    DWCONV_REQUIRE(ctx, DWCONV_ERROR_OUT_OF_MEMORY, "%s: out of host memory", who);
    st = ops->context_create(device, &ctx->state, msg);
    if (st) {
        free(ctx);
        return dwconv_fail(st, "%s: %s: %s", who, dwconv_backend_name(backend), msg);
    }
    ctx->backend = backend;
    ctx->device = device;
    ctx->ops = ops;
    *context = ctx;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_context_destroy(dwconv_context *context) {
    dwconv_clear_error();
    if (!context) return DWCONV_SUCCESS;
    context->ops->context_destroy(context->state);
    free(context);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_context_backend(const dwconv_context *context, dwconv_backend *backend) {
    dwconv_clear_error();
    DWCONV_REQUIRE(context && backend, DWCONV_ERROR_NULL_POINTER, "dwconv_context_backend: %s is NULL",
            context ? "backend" : "context");
    *backend = context->backend;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_context_set_stream(dwconv_context *context, void *stream) {
    dwconv_clear_error();
    DWCONV_REQUIRE(context, DWCONV_ERROR_NULL_POINTER, "dwconv_context_set_stream: context is NULL");
    CALL_OPS("dwconv_context_set_stream", context, set_stream, stream);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_context_get_stream(const dwconv_context *context, void **stream) {
    dwconv_clear_error();
    DWCONV_REQUIRE(context && stream, DWCONV_ERROR_NULL_POINTER,
            "dwconv_context_get_stream: %s is NULL", context ? "stream" : "context");
    *stream = context->ops->get_stream(context->state);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_context_set_threads(dwconv_context *context, int threads) {
    dwconv_clear_error();
    DWCONV_REQUIRE(context, DWCONV_ERROR_NULL_POINTER, "dwconv_context_set_threads: context is NULL");
    DWCONV_REQUIRE(threads >= 0 && threads <= DWCONV_MAX_THREADS, DWCONV_ERROR_INVALID_VALUE,
                   "dwconv_context_set_threads: threads is %d, must be in [0, %d]", threads,
                   DWCONV_MAX_THREADS);
    CALL_OPS("dwconv_context_set_threads", context, set_threads, threads);
    return DWCONV_SUCCESS;
}

/* ---- memory ---- */

dwconv_status dwconv_malloc(dwconv_context *context, void **ptr, size_t bytes) {
    static const char who[] = "dwconv_malloc";
    dwconv_clear_error();
    DWCONV_REQUIRE(context && ptr, DWCONV_ERROR_NULL_POINTER, "%s: %s is NULL", who,
                   context ? "ptr" : "context");
    DWCONV_REQUIRE(bytes > 0, DWCONV_ERROR_INVALID_VALUE, "%s: bytes is 0", who);
    DWCONV_REQUIRE(bytes <= (size_t)INT64_MAX, DWCONV_ERROR_SIZE_OVERFLOW,
                   "%s: %zu bytes is more than any device has", who, bytes);
    void *block = NULL; /* *ptr changes only on success */
    CALL_OPS(who, context, mem_alloc, &block, bytes);
    *ptr = block;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_free(dwconv_context *context, void *ptr) {
    dwconv_clear_error();
    DWCONV_REQUIRE(context, DWCONV_ERROR_NULL_POINTER, "dwconv_free: context is NULL");
    if (!ptr) return DWCONV_SUCCESS;
    CALL_OPS("dwconv_free", context, mem_free, ptr);
    return DWCONV_SUCCESS;
}

typedef dwconv_status (*copy_fn)(void *, void *, const void *, size_t, char *);

static dwconv_status checked_copy(dwconv_context *ctx, const char *who, copy_fn copy,
                                  int src_on_backend, int dst_on_backend, void *dst,
                                  const void *src, size_t bytes) {
    DWCONV_REQUIRE(ctx, DWCONV_ERROR_NULL_POINTER, "%s: context is NULL", who);
    DWCONV_REQUIRE(dst && src, DWCONV_ERROR_NULL_POINTER, "%s: %s is NULL", who, dst ? "src" : "dst");
    if (bytes == 0) return DWCONV_SUCCESS;
    DWCONV_REQUIRE(bytes <= UINTPTR_MAX - (uintptr_t)dst && bytes <= UINTPTR_MAX - (uintptr_t)src,
                   DWCONV_ERROR_SIZE_OVERFLOW,
                   "%s: %zu bytes from %p or %p run past the end of the address space", who,
                   bytes, dst, src);
    DWCONV_REQUIRE(!dwconv_ranges_overlap(dst, bytes, src, bytes), DWCONV_ERROR_ALIASING,
                   "%s: dst and src overlap", who);
    char msg[DWCONV_MSG_SIZE] = "";
    dwconv_status st;
    if (src_on_backend && (st = ctx->ops->check_pointer(ctx->state, src, bytes, "src", msg)))
        return dwconv_fail(st, "%s: %s", who, msg);
    if (dst_on_backend && (st = ctx->ops->check_pointer(ctx->state, dst, bytes, "dst", msg)))
        return dwconv_fail(st, "%s: %s", who, msg);
    if ((st = copy(ctx->state, dst, src, bytes, msg))) return dwconv_fail(st, "%s: %s", who, msg);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_copy_to_backend(dwconv_context *context, void *dst, const void *host_src,
                                     size_t bytes) {
    dwconv_clear_error();
    return checked_copy(context, "dwconv_copy_to_backend",
                        context ? context->ops->copy_to_backend : NULL, 0, 1, dst, host_src,
                        bytes);
}

dwconv_status dwconv_copy_to_host(dwconv_context *context, void *host_dst, const void *src,
                                  size_t bytes) {
    dwconv_clear_error();
    return checked_copy(context, "dwconv_copy_to_host",
                        context ? context->ops->copy_to_host : NULL, 1, 0, host_dst, src, bytes);
}

dwconv_status dwconv_copy_on_backend(dwconv_context *context, void *dst, const void *src,
                                     size_t bytes) {
    dwconv_clear_error();
    return checked_copy(context, "dwconv_copy_on_backend",
                        context ? context->ops->copy_on_backend : NULL, 1, 1, dst, src, bytes);
}

dwconv_status dwconv_synchronize(dwconv_context *context) {
    dwconv_clear_error();
    DWCONV_REQUIRE(context, DWCONV_ERROR_NULL_POINTER, "dwconv_synchronize: context is NULL");
    char msg[DWCONV_MSG_SIZE] = "";
    dwconv_status st = context->ops->synchronize(context->state, msg);
    if (st) return dwconv_fail(st, "dwconv_synchronize: %s", msg);
    return DWCONV_SUCCESS;
}

/* ---- timing ---- */

dwconv_status dwconv_timer_start(dwconv_context *context) {
    dwconv_clear_error();
    DWCONV_REQUIRE(context, DWCONV_ERROR_NULL_POINTER, "dwconv_timer_start: context is NULL");
    char msg[DWCONV_MSG_SIZE] = "";
    dwconv_status st = context->ops->timer_start(context->state, msg);
    if (st) return dwconv_fail(st, "dwconv_timer_start: %s", msg);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_timer_stop(dwconv_context *context, double *milliseconds) {
    dwconv_clear_error();
    DWCONV_REQUIRE(context && milliseconds, DWCONV_ERROR_NULL_POINTER, "dwconv_timer_stop: %s is NULL",
            context ? "milliseconds" : "context");
    double ms = 0.0; /* *milliseconds changes only on success */
    CALL_OPS("dwconv_timer_stop", context, timer_stop, &ms);
    *milliseconds = ms;
    return DWCONV_SUCCESS;
}
