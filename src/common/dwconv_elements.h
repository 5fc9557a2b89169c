/* Reading and writing one element of any storage dtype, widening to / rounding from
 * f32 per the contract. */
#ifndef DWCONV_ELEMENTS_H
#define DWCONV_ELEMENTS_H

#include <stdint.h>

#include "dwconv.h"
#include "dwconv_numerics.h"

static inline float dwconv_load(dwconv_dtype dtype, const void *base, int64_t i) {
    switch (dtype) {
    case DWCONV_F16: return dwconv_f16_to_f32(((const uint16_t *)base)[i]);
    case DWCONV_BF16: return dwconv_bf16_to_f32(((const uint16_t *)base)[i]);
    default: return ((const float *)base)[i];
    }
}

static inline void dwconv_store(dwconv_dtype dtype, void *base, int64_t i, float value) {
    switch (dtype) {
    case DWCONV_F16: ((uint16_t *)base)[i] = dwconv_f32_to_f16(value); break;
    case DWCONV_BF16: ((uint16_t *)base)[i] = dwconv_f32_to_bf16(value); break;
    default: ((float *)base)[i] = value; break;
    }
}

#endif
