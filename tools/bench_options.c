#include "bench_options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct named { const char *name; int value; } named;

static const named dtypes[] = {{"f32", DWCONV_F32}, {"f16", DWCONV_F16}, {"bf16", DWCONV_BF16}, {0, 0}};
static const named layouts[] = {{"ncl", DWCONV_LAYOUT_NCL}, {"nlc", DWCONV_LAYOUT_NLC}, {0, 0}};
static const named paddings[] = {{"explicit", DWCONV_PADDING_EXPLICIT},
                                 {"same", DWCONV_PADDING_SAME},
                                 {"causal", DWCONV_PADDING_CAUSAL}, {0, 0}};
static const named modes[] = {{"zeros", DWCONV_PAD_ZEROS}, {"reflect", DWCONV_PAD_REFLECT},
                              {"replicate", DWCONV_PAD_REPLICATE},
                              {"circular", DWCONV_PAD_CIRCULAR}, {0, 0}};
static const named activations[] = {{"none", DWCONV_ACT_NONE}, {"relu", DWCONV_ACT_RELU},
                                    {"silu", DWCONV_ACT_SILU}, {0, 0}};

static const char *name_in(const named *table, int value) {
    for (; table->name; table++)
        if (table->value == value) return table->name;
    return "?";
}

const char *name_of_dtype(dwconv_dtype v) { return name_in(dtypes, v); }
const char *name_of_layout(dwconv_layout v) { return name_in(layouts, v); }
const char *name_of_padding(dwconv_padding v) { return name_in(paddings, v); }
const char *name_of_padding_mode(dwconv_padding_mode v) { return name_in(modes, v); }
const char *name_of_activation(dwconv_activation v) { return name_in(activations, v); }

static int parse_named(const named *table, const char *flag, const char *text, int *value) {
    for (const named *n = table; n->name; n++)
        if (strcmp(n->name, text) == 0) {
            *value = n->value;
            return 0;
        }
    fprintf(stderr, "dwconv bench: --%s '%s' is not one of:", flag, text);
    for (const named *n = table; n->name; n++) fprintf(stderr, " %s", n->name);
    fprintf(stderr, "\n");
    return 2;
}

/* An integer in [min, max]: anything else (a sign where none fits, a value that an int
 * field would truncate, trailing text) is a usage error, never a silent change. */
static int parse_int64(const char *flag, const char *text, int64_t min, int64_t max,
                       int64_t *value) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max) {
        fprintf(stderr, "dwconv bench: --%s '%s' is not an integer from %lld to %lld\n", flag,
                text, (long long)min, (long long)max);
        return 2;
    }
    *value = v;
    return 0;
}

static int parse_int(const char *flag, const char *text, int min, int *value) {
    int64_t v;
    int rc = parse_int64(flag, text, min, INT_MAX, &v);
    if (rc == 0) *value = (int)v;
    return rc;
}

static void usage(void) {
    puts("usage: dwconv bench [options]\n"
         "Times dwconv_forward on one problem (default: the reference problem, x 32x512x8192\n"
         "f32, K 3, padding 1 both sides), each repetition paired with a copy of the same\n"
         "bytes on the same backend, and checks the result against the scalar oracle.\n"
         "\n"
         "problem:\n"
         "  --batch N  --channels N  --length N  --kernel-size N   (32 512 8192 3)\n"
         "  --stride N  --dilation N                               (1 1)\n"
         "  --pad N | --pad-left N --pad-right N                   (1 1)\n"
         "  --padding explicit|same|causal       presets compute the pads (explicit)\n"
         "  --padding-mode zeros|reflect|replicate|circular        (zeros)\n"
         "  --layout ncl|nlc  --dtype f32|f16|bf16                 (ncl f32)\n"
         "  --weight-dtype f32|same  --bias  --activation none|relu|silu\n"
         "run:\n"
         "  --backend auto|cpu|cuda|hip  --device N  --threads N (cpu)\n"
         "  --repeat N (30)  --warmup N (3)  --seed N (1)  --no-check  --json");
}

enum { OPT_BATCH = 256, OPT_CHANNELS, OPT_LENGTH, OPT_KERNEL, OPT_STRIDE, OPT_DILATION, OPT_PAD,
       OPT_PAD_LEFT, OPT_PAD_RIGHT, OPT_PADDING, OPT_MODE, OPT_LAYOUT, OPT_DTYPE, OPT_WDTYPE,
       OPT_BIAS, OPT_ACT, OPT_BACKEND, OPT_DEVICE, OPT_THREADS, OPT_REPEAT, OPT_WARMUP,
       OPT_SEED, OPT_NO_CHECK, OPT_JSON, OPT_HELP };

/* In the order of the enum above: the flag name of option c is long_options[c - OPT_BATCH]. */
static const struct option long_options[] = {
    {"batch", 1, 0, OPT_BATCH},       {"channels", 1, 0, OPT_CHANNELS},
    {"length", 1, 0, OPT_LENGTH},     {"kernel-size", 1, 0, OPT_KERNEL},
    {"stride", 1, 0, OPT_STRIDE},     {"dilation", 1, 0, OPT_DILATION},
    {"pad", 1, 0, OPT_PAD},           {"pad-left", 1, 0, OPT_PAD_LEFT},
    {"pad-right", 1, 0, OPT_PAD_RIGHT}, {"padding", 1, 0, OPT_PADDING},
    {"padding-mode", 1, 0, OPT_MODE}, {"layout", 1, 0, OPT_LAYOUT},
    {"dtype", 1, 0, OPT_DTYPE},       {"weight-dtype", 1, 0, OPT_WDTYPE},
    {"bias", 0, 0, OPT_BIAS},         {"activation", 1, 0, OPT_ACT},
    {"backend", 1, 0, OPT_BACKEND},   {"device", 1, 0, OPT_DEVICE},
    {"threads", 1, 0, OPT_THREADS},   {"repeat", 1, 0, OPT_REPEAT},
    {"warmup", 1, 0, OPT_WARMUP},     {"seed", 1, 0, OPT_SEED},
    {"no-check", 0, 0, OPT_NO_CHECK}, {"json", 0, 0, OPT_JSON},
    {"help", 0, 0, OPT_HELP},         {0, 0, 0, 0},
};

int bench_parse(int argc, char **argv, bench_options *o) {
    memset(o, 0, sizeof *o);
    dwconv_desc_init(&o->desc, 32, 512, 8192, 3);
    o->repeat = 30, o->warmup = 3, o->seed = 1, o->check = 1;
    int pads_given = 0, weight_same = 0, rc = 0, c;
    int64_t v;
    dwconv_desc *d = &o->desc;
    optind = 1;
    opterr = 0; /* getopt would name the program "bench": the messages below say "dwconv bench" */
    while (rc == 0 && (c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
        const char *flag = c >= OPT_BATCH && c <= OPT_HELP ? long_options[c - OPT_BATCH].name : "";
        int e = 0;
        switch (c) {
        case OPT_BATCH: rc = parse_int64(flag, optarg, 1, INT64_MAX, &d->batch); break;
        case OPT_CHANNELS: rc = parse_int64(flag, optarg, 1, INT64_MAX, &d->channels); break;
        case OPT_LENGTH: rc = parse_int64(flag, optarg, 1, INT64_MAX, &d->length); break;
        case OPT_KERNEL: rc = parse_int64(flag, optarg, 1, INT64_MAX, &d->kernel_size); break;
        case OPT_STRIDE: rc = parse_int64(flag, optarg, 1, INT64_MAX, &d->stride); break;
        case OPT_DILATION: rc = parse_int64(flag, optarg, 1, INT64_MAX, &d->dilation); break;
        case OPT_PAD:
            rc = parse_int64(flag, optarg, 0, INT64_MAX, &d->pad_left);
            d->pad_right = d->pad_left, pads_given = 1;
            break;
        case OPT_PAD_LEFT: rc = parse_int64(flag, optarg, 0, INT64_MAX, &d->pad_left), pads_given = 1; break;
        case OPT_PAD_RIGHT: rc = parse_int64(flag, optarg, 0, INT64_MAX, &d->pad_right), pads_given = 1; break;
        case OPT_PADDING: rc = parse_named(paddings, flag, optarg, &e), d->padding = e; break;
        case OPT_MODE: rc = parse_named(modes, flag, optarg, &e), d->padding_mode = e; break;
        case OPT_LAYOUT: rc = parse_named(layouts, flag, optarg, &e), d->layout = e; break;
        case OPT_DTYPE: rc = parse_named(dtypes, flag, optarg, &e), d->dtype = e; break;
        case OPT_WDTYPE:
            if (strcmp(optarg, "same") == 0) weight_same = 1;
            else rc = parse_named(dtypes, flag, optarg, &e), d->weight_dtype = e, weight_same = 0;
            break;
        case OPT_BIAS: o->bias = 1; break;
        case OPT_ACT: rc = parse_named(activations, flag, optarg, &e), d->activation = e; break;
        case OPT_BACKEND:
            if (dwconv_backend_parse(optarg, &o->backend)) {
                fprintf(stderr, "dwconv bench: %s\n", dwconv_last_error());
                rc = 2;
            }
            break;
        case OPT_DEVICE: rc = parse_int(flag, optarg, 0, &o->device); break;
        case OPT_THREADS: rc = parse_int(flag, optarg, 0, &o->threads); break;
        case OPT_REPEAT: rc = parse_int(flag, optarg, 1, &o->repeat); break;
        case OPT_WARMUP: rc = parse_int(flag, optarg, 0, &o->warmup); break;
        case OPT_SEED: rc = parse_int64(flag, optarg, 0, INT64_MAX, &v), o->seed = (uint64_t)v; break;
        case OPT_NO_CHECK: o->check = 0; break;
        case OPT_JSON: o->json = 1; break;
        case OPT_HELP: usage(); return 1;
        case ':':
            fprintf(stderr, "dwconv bench: --%s needs a value (see --help)\n",
                    optopt >= OPT_BATCH && optopt <= OPT_HELP ? long_options[optopt - OPT_BATCH].name
                                                              : "?");
            rc = 2;
            break;
        default: /* '?': optopt is a short option's letter, 0 for a long option */
            if (optopt > 0 && optopt < 256)
                fprintf(stderr, "dwconv bench: unknown option '-%c' (see --help)\n", optopt);
            else
                fprintf(stderr, "dwconv bench: unknown or ambiguous option '%s' (see --help)\n",
                        argv[optind - 1]);
            rc = 2;
            break;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "dwconv bench: unexpected argument '%s' (see --help)\n", argv[optind]);
        rc = 2;
    }
    /* The reference problem pads 1 on both sides; a preset computes its own pads. */
    if (!pads_given) d->pad_left = d->pad_right = d->padding == DWCONV_PADDING_EXPLICIT ? 1 : 0;
    if (weight_same) d->weight_dtype = d->dtype;
    return rc;
}
