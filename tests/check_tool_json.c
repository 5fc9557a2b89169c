/* The tool's JSON values (tools/json_out.c): strings escaped, non-finite numbers null.
 * `dwconv bench --json` printed inf for a zero time and a device name as it was. */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"

static int failures;

static void expect(const char *what, const char *got, const char *want) {
    if (strcmp(got, want) == 0) {
        printf("ok: %s -> %s\n", what, got);
    } else {
        printf("FAIL: %s -> %s (want %s)\n", what, got, want);
        failures++;
    }
}

static const char *string_of(const char *text) {
    static char buf[256];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    json_string(f, text);
    fclose(f);
    return buf;
}

static const char *number_of(const char *fmt, double v) {
    static char buf[256];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    json_number(f, fmt, v);
    fclose(f);
    return buf;
}

int main(void) {
    expect("plain", string_of("NVIDIA H100 80GB HBM3"), "\"NVIDIA H100 80GB HBM3\"");
    expect("quote and backslash", string_of("a\"b\\c"), "\"a\\\"b\\\\c\"");
    expect("control characters", string_of("tab\there\nnew\x01"), "\"tab\\u0009here\\u000anew\\u0001\"");
    expect("UTF-8 kept", string_of("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    expect("NULL", string_of(NULL), "null");
    expect("finite", number_of("%.3f", 12.5), "12.500");
    expect("+inf", number_of("%.3f", INFINITY), "null");
    expect("-inf", number_of("%g", -INFINITY), "null");
    expect("nan", number_of("%g", NAN), "null");
    expect("zero", number_of("%g", 0.0), "0");
    return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
