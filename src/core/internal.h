/* Declarations shared by the core's files; nothing here is public API. */
#ifndef DWCONV_CORE_INTERNAL_H
#define DWCONV_CORE_INTERNAL_H

#include "dwconv.h"
#include "dwconv_module.h"

/* ---- errors (status.c) ---- */

/* Every public entry point starts with this: the per-thread message becomes "". */
void dwconv_clear_error(void);
/* Sets the per-thread message (printf-style) and returns status, for
 * `return dwconv_fail(DWCONV_ERROR_..., "...", ...);`. */
dwconv_status dwconv_fail(dwconv_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- descriptors (plan.c) ---- */

/* Validates desc and derives everything a backend needs. `who` names the calling
 * entry point for the message. On failure *plan is unspecified. */
dwconv_status dwconv_plan_make(const dwconv_desc *desc, dwconv_plan *plan, const char *who);

/* ---- backends (loader.c) ---- */

/* The usable ops table of a backend, loading its module on first use; NULL when the
 * backend cannot run here, with the reason in report->detail. report may be NULL. */
const dwconv_module_ops *dwconv_backend_ops(dwconv_backend backend,
                                            dwconv_backend_report *report);

/* The compiled-in cpu backend (src/cpu/backend.c). */
const dwconv_module_ops *dwconv_cpu_ops(void);

#endif
