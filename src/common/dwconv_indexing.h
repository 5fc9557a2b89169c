/*
 * Where a tap reads from: the padding modes' index arithmetic, written once for the
 * CPU and the GPU kernels. 64-bit throughout.
 */
#ifndef DWCONV_INDEXING_H
#define DWCONV_INDEXING_H

#include <stdint.h>

#include "dwconv.h"           /* the padding modes */
#include "dwconv_numerics.h" /* DWCONV_HD */

/* The index of x that padded position i (in [-pad_left, L + pad_right)) reads, or -1
 * where it reads a zero. mode is a dwconv_padding_mode; the core has already checked
 * the mode's limit (reflect: pad < L, circular: pad <= L), so one fold suffices. */
DWCONV_HD int64_t dwconv_source_index(int mode, int64_t i, int64_t length) {
    if (i >= 0 && i < length) return i;
    switch (mode) {
    case DWCONV_PAD_REFLECT: /* mirror about the edge element, which is not repeated */
        return i < 0 ? -i : 2 * (length - 1) - i;
    case DWCONV_PAD_REPLICATE:
        return i < 0 ? 0 : length - 1;
    case DWCONV_PAD_CIRCULAR:
        return i < 0 ? i + length : i - length;
    default: /* DWCONV_PAD_ZEROS */
        return -1;
    }
}

/* First output whose taps all lie in [0, L): ceil(pad_left / stride), written so that
 * no stride, however large, overflows. */
DWCONV_HD int64_t dwconv_interior_begin(int64_t pad_left, int64_t stride) {
    return pad_left / stride + (pad_left % stride != 0);
}

/* One past the last output whose taps all lie in [0, L), clipped to [begin, L_out]:
 * its last tap o*stride - pad_left + span must be <= L - 1. */
DWCONV_HD int64_t dwconv_interior_end(int64_t length, int64_t pad_left, int64_t stride,
                                      int64_t span, int64_t output_length, int64_t begin) {
    int64_t last = length - 1 + pad_left - span; /* largest o*stride allowed */
    int64_t end = last < 0 ? 0 : last / stride + 1;
    if (end > output_length) end = output_length;
    return end < begin ? begin : end;
}

#endif /* DWCONV_INDEXING_H */
