/* `dwconv bench` flags: every descriptor field, the backend and the run's shape. */
#ifndef DWCONV_BENCH_OPTIONS_H
#define DWCONV_BENCH_OPTIONS_H

#include <stdint.h>

#include "dwconv.h"

typedef struct bench_options {
    dwconv_desc desc; /* defaults: the reference problem, B32 C512 L8192 K3 pad 1 f32 */
    int bias;         /* pass a bias vector */
    dwconv_backend backend;
    int device;
    int repeat, warmup;
    int threads;      /* cpu only; 0: OpenMP's default */
    uint64_t seed;
    int json;
    int check;        /* compare with the scalar oracle */
} bench_options;

/* 0: parsed; 1: --help was printed; 2: an error was printed to stderr. */
int bench_parse(int argc, char **argv, bench_options *options);

/* Names of enum values, as the flags spell them. */
const char *name_of_dtype(dwconv_dtype v);
const char *name_of_layout(dwconv_layout v);
const char *name_of_padding(dwconv_padding v);
const char *name_of_padding_mode(dwconv_padding_mode v);
const char *name_of_activation(dwconv_activation v);

#endif
