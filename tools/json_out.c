#include "json_out.h"

#include <math.h>

void json_string(FILE *out, const char *text) {
    if (!text) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out); /* other bytes as they are: UTF-8 passes through */
    }
    fputc('"', out);
}

void json_number(FILE *out, const char *fmt, double value) {
    if (isfinite(value)) fprintf(out, fmt, value);
    else fputs("null", out);
}
