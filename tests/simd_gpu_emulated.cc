/*
 * The GPU's element code (gpu_activate_all, gpu_elem's conversions) compiled for the
 * CPU as the emulator compiles it (tests/gpu_emulate.h first), for
 * check_simd_numerics_gpu_emulated: the same source as the CUDA and HIP kernels, with
 * the host's versions of the device-only pieces (gpu_rcp_rn divides, the conversions
 * are the shared functions).
 */
#include "gpu_emulate.h"
#include "gpu_elements.cuh"

extern "C" {
void gpu_emulated_activate(int act, const float *in, int64_t n, float *out);
void gpu_emulated_narrow(dwconv_dtype dtype, const float *in, int64_t n, void *out);
void gpu_emulated_widen(dwconv_dtype dtype, const void *in, int64_t n, float *out);
}

/* kernels.h's test-only codes, without its C-only includes */
enum { EXP_OF_X = -1, EXP_OF_MINUS_X = -2 };

/* Eight values at a time, as the 16-bit kernels hold them (the tail one by one). */
void gpu_emulated_activate(int act, const float *in, int64_t n, float *out) {
    for (int64_t i = 0; i < n; i++) {
        if (act == EXP_OF_X) out[i] = dwconv_f32_from_bits(dwconv_exp_bits(in[i]));
        else if (act == EXP_OF_MINUS_X) out[i] = dwconv_f32_from_bits(dwconv_exp_bits(-in[i]));
    }
    if (act < 0) return;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float v[8];
        for (int k = 0; k < 8; k++) v[k] = in[i + k];
        gpu_activate_all<8, DWCONV_F32>(act, v);
        for (int k = 0; k < 8; k++) out[i + k] = v[k];
    }
    for (; i < n; i++) {
        float v[1] = {in[i]};
        gpu_activate_all<1, DWCONV_F32>(act, v);
        out[i] = v[0];
    }
}

void gpu_emulated_narrow(dwconv_dtype dtype, const float *in, int64_t n, void *out) {
    uint16_t *h = (uint16_t *)out;
    for (int64_t i = 0; i < n; i++)
        h[i] = dtype == DWCONV_BF16 ? gpu_elem<DWCONV_BF16>::narrow(in[i])
                                    : gpu_elem<DWCONV_F16>::narrow(in[i]);
}

void gpu_emulated_widen(dwconv_dtype dtype, const void *in, int64_t n, float *out) {
    const uint16_t *h = (const uint16_t *)in;
    for (int64_t i = 0; i < n; i++)
        out[i] = dtype == DWCONV_BF16 ? gpu_elem<DWCONV_BF16>::widen(h[i])
                                      : gpu_elem<DWCONV_F16>::widen(h[i]);
}
