/* Status names and the per-thread message of the last failure. */
#include <config.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[DWCONV_MSG_SIZE];

void dwconv_clear_error(void) { last_error[0] = '\0'; }

dwconv_status dwconv_fail(dwconv_status status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    if (n >= (int)sizeof last_error) /* cut: say so */
        memcpy(last_error + sizeof last_error - 4, "...", 4);
    /* one line, whatever an environment value or a module's text held */
    for (char *c = last_error; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return status;
}

const char *dwconv_last_error(void) { return last_error; }

const char *dwconv_status_string(dwconv_status status) {
    switch (status) {
    case DWCONV_SUCCESS: return "DWCONV_SUCCESS: no error";
    case DWCONV_ERROR_NULL_POINTER: return "DWCONV_ERROR_NULL_POINTER: a required pointer is NULL";
    case DWCONV_ERROR_INVALID_VALUE: return "DWCONV_ERROR_INVALID_VALUE: an argument has an invalid value";
    case DWCONV_ERROR_SIZE_OVERFLOW: return "DWCONV_ERROR_SIZE_OVERFLOW: a size does not fit in 64 bits";
    case DWCONV_ERROR_EMPTY_OUTPUT: return "DWCONV_ERROR_EMPTY_OUTPUT: the output length would be less than 1";
    case DWCONV_ERROR_PADDING_TOO_LARGE: return "DWCONV_ERROR_PADDING_TOO_LARGE: padding beyond the padding mode's limit";
    case DWCONV_ERROR_ALIASING: return "DWCONV_ERROR_ALIASING: the output overlaps an input";
    case DWCONV_ERROR_BACKEND_UNAVAILABLE: return "DWCONV_ERROR_BACKEND_UNAVAILABLE: the backend cannot run here";
    case DWCONV_ERROR_UNSUPPORTED: return "DWCONV_ERROR_UNSUPPORTED: not supported by this backend";
    case DWCONV_ERROR_OUT_OF_MEMORY: return "DWCONV_ERROR_OUT_OF_MEMORY: out of memory";
    case DWCONV_ERROR_BAD_POINTER: return "DWCONV_ERROR_BAD_POINTER: memory not usable by this context's device";
    case DWCONV_ERROR_DEVICE: return "DWCONV_ERROR_DEVICE: the device runtime reported a failure";
    }
    return "DWCONV_ERROR_UNKNOWN: not a dwconv_status value";
}

int dwconv_version(void) { return DWCONV_VERSION; }

const char *dwconv_version_string(void) { return PACKAGE_VERSION; }
