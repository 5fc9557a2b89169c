/* JSON values for `dwconv bench --json`: strings escaped, and a number that is not
 * finite written as null (JSON has no inf or nan; a consumer's parser would reject
 * the whole line). */
#ifndef DWCONV_JSON_OUT_H
#define DWCONV_JSON_OUT_H

#include <stdio.h>

/* "text" with ", \ and control characters escaped; NULL is written as null. */
void json_string(FILE *out, const char *text);

/* value through printf's fmt (one double conversion, e.g. "%.3f"), or null. */
void json_number(FILE *out, const char *fmt, double value);

#endif
