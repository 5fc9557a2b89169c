/* The GPU bench programs' one error check: a dwconv call that fails ends the program
 * with its place, the call and dwconv_last_error(). */
#ifndef DWCONV_BENCH_TRY_H
#define DWCONV_BENCH_TRY_H

#include <stdio.h>
#include <stdlib.h>

#include "dwconv.h"

#define TRY(call)                                                                  \
    do {                                                                           \
        if ((call) != DWCONV_SUCCESS) {                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                    dwconv_last_error());                                          \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

#endif
