#include "gpu_bwd_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_cases.h"
#include "internal.h"
#include "reference.h"

static int64_t extent(int64_t B, int64_t C, int64_t n, const int64_t s[3]) {
    return (B - 1) * s[0] + (C - 1) * s[1] + (n - 1) * s[2] + 1;
}

static const char *const output_names[GPU_BWD_OUTPUTS] = {"dx", "dweight", "dbias",
                                                           "dinitial_states"};

int gpu_bwd_case_problem(dwconv_problem *p, const gpu_bwd_case *c, const void *x,
                         const void *weight, const void *bias, const void *dy,
                         const void *state, const void *dstate_out,
                         void *const out[GPU_BWD_OUTPUTS]) {
    if (c->causal)
        return dwconv_validate_causal_backward(p, &c->desc, x, weight, bias, state, dy, dstate_out,
                                               out[GPU_BWD_DX], out[GPU_BWD_DW], out[GPU_BWD_DB],
                                               out[GPU_BWD_DSTATE], "gpu_bwd_cases") == DWCONV_SUCCESS
                   ? 0
                   : -1;
    int64_t strides[4][3];
    memset(strides, 0, sizeof strides);
    memcpy(strides[DWCONV_TENSOR_X], c->x_stride, sizeof strides[0]);
    memcpy(strides[DWCONV_TENSOR_DY], c->dy_stride, sizeof strides[0]);
    memcpy(strides[DWCONV_TENSOR_DX], c->dx_stride, sizeof strides[0]);
    dwconv_layout_options opt = {(const int64_t(*)[3])strides, c->grad_dtype};
    return dwconv_validate_backward(p, &c->desc, &opt, x, weight, bias, dy, out[GPU_BWD_DX],
                                    out[GPU_BWD_DW], out[GPU_BWD_DB], "gpu_bwd_cases") == DWCONV_SUCCESS
               ? 0
               : -1;
}

const char *gpu_bwd_case_string(const gpu_bwd_case *c) {
    static _Thread_local char text[512];
    snprintf(text, sizeof text, "%s%s, strides x %lld/%lld/%lld dy %lld/%lld/%lld dx %lld/%lld/%lld, "
             "grad %s,%s%s%s%s%s%s%s", c->causal ? "causal backward: " : "", test_desc_string(&c->desc),
             (long long)c->x_stride[0], (long long)c->x_stride[1], (long long)c->x_stride[2],
             (long long)c->dy_stride[0], (long long)c->dy_stride[1], (long long)c->dy_stride[2],
             (long long)c->dx_stride[0], (long long)c->dx_stride[1], (long long)c->dx_stride[2],
             c->grad_dtype == DWCONV_F32 ? "f32" : "weight dtype", c->bias ? " bias," : "",
             c->out_bytes[GPU_BWD_DX] ? " dx" : "", c->out_bytes[GPU_BWD_DW] ? " dweight" : "",
             c->out_bytes[GPU_BWD_DB] ? " dbias" : "", c->state ? " initial_states" : "",
             c->dstate_out ? " dfinal_states" : "", c->out_bytes[GPU_BWD_DSTATE] ? " dinitial_states" : "");
    return text;
}

void gpu_bwd_case_free(gpu_bwd_case *c) {
    free(c->x), free(c->dy), free(c->weight), free(c->bias), free(c->state), free(c->dstate_out);
    for (int o = 0; o < GPU_BWD_OUTPUTS; o++) free(c->expected[o]);
    memset(c, 0, sizeof *c);
}

static int make(gpu_bwd_case *c, const dwconv_desc *desc, int cls, int causal, int wanted,
                test_rng *rng, char *why, size_t why_size) {
    memset(c, 0, sizeof *c);
    c->desc = *desc;
    c->causal = causal;
    int64_t L_out = 0, ys[3];
    if (dwconv_desc_resolve(desc, NULL, NULL, &L_out) != DWCONV_SUCCESS) {
        snprintf(why, why_size, "invalid descriptor: %s", dwconv_last_error());
        return -1;
    }
    const int64_t B = desc->batch, C = desc->channels, L = desc->length, K = desc->kernel_size;
    if (causal) { /* contiguous, the weight dtype */
        const int64_t n[2] = {L, L_out};
        int64_t *s[2] = {c->x_stride, c->dy_stride};
        for (int t = 0; t < 2; t++) {
            if (desc->layout == DWCONV_LAYOUT_NLC) s[t][0] = n[t] * C, s[t][1] = 1, s[t][2] = C;
            else s[t][0] = n[t] * C, s[t][1] = n[t], s[t][2] = 1;
        }
        memcpy(c->dx_stride, c->x_stride, sizeof c->dx_stride);
        c->grad_dtype = (int)desc->weight_dtype;
    } else {
        gpu_case_strides(rng, desc, cls, c->x_stride, c->dy_stride);
        gpu_case_strides(rng, desc, cls, c->dx_stride, ys);
        c->grad_dtype = test_rng_range(rng, 0, 1) ? DWCONV_F32 : (int)desc->weight_dtype;
    }
    if (!wanted) wanted = (int)test_rng_range(rng, 1, causal ? 15 : 7);
    const int with_bias = (int)test_rng_range(rng, 0, 1);
    const dwconv_dtype dt = desc->dtype, wt = desc->weight_dtype, gt = (dwconv_dtype)c->grad_dtype;
    const int64_t x_elements = extent(B, C, L, c->x_stride);
    const int64_t dy_elements = extent(B, C, L_out, c->dy_stride);
    c->x_bytes = test_bytes(dt, x_elements);
    c->dy_bytes = test_bytes(dt, dy_elements);
    c->weight_bytes = test_bytes(wt, C * K);
    c->bias_bytes = with_bias ? test_bytes(wt, C) : 0;
    if (wanted & (1 << GPU_BWD_DX)) c->out_bytes[GPU_BWD_DX] = test_bytes(dt, extent(B, C, L, c->dx_stride));
    if (wanted & (1 << GPU_BWD_DW)) c->out_bytes[GPU_BWD_DW] = test_bytes(gt, C * K);
    if (wanted & (1 << GPU_BWD_DB)) c->out_bytes[GPU_BWD_DB] = test_bytes(gt, C);
    const int64_t S = desc->dilation * (K - 1), states = B * C * S;
    if (causal && S == 0 && wanted == (1 << GPU_BWD_DSTATE)) /* no state: ask for dx */
        c->out_bytes[GPU_BWD_DX] = test_bytes(dt, extent(B, C, L, c->dx_stride));
    if (causal && S > 0) {
        if (wanted & (1 << GPU_BWD_DSTATE)) c->out_bytes[GPU_BWD_DSTATE] = test_bytes(dt, states);
        if (test_rng_range(rng, 0, 2)) c->state_bytes = test_bytes(dt, states);
        if (test_rng_range(rng, 0, 2)) c->dstate_out_bytes = test_bytes(dt, states);
    }
    c->x = malloc(c->x_bytes), c->dy = malloc(c->dy_bytes), c->weight = malloc(c->weight_bytes);
    c->bias = with_bias ? malloc(c->bias_bytes) : NULL;
    if (c->state_bytes) c->state = malloc(c->state_bytes);
    if (c->dstate_out_bytes) c->dstate_out = malloc(c->dstate_out_bytes);
    int ok = c->x && c->dy && c->weight && (!with_bias || c->bias) &&
             (!c->state_bytes || c->state) && (!c->dstate_out_bytes || c->dstate_out);
    for (int o = 0; o < GPU_BWD_OUTPUTS; o++)
        if (c->out_bytes[o]) ok = ok && (c->expected[o] = malloc(c->out_bytes[o])) != NULL;
    if (!ok) {
        gpu_bwd_case_free(c);
        snprintf(why, why_size, "%s: no host memory", test_desc_string(desc));
        return -1;
    }
    return gpu_bwd_case_refill(c, rng, why, why_size);
}

int gpu_bwd_case_refill(gpu_bwd_case *c, test_rng *rng, char *why, size_t why_size) {
    const dwconv_desc *desc = &c->desc;
    const dwconv_dtype dt = desc->dtype, wt = desc->weight_dtype;
    const size_t es = dwconv_dtype_size(dt);
    const int64_t x_elements = (int64_t)(c->x_bytes / es), dy_elements = (int64_t)(c->dy_bytes / es);
    const int64_t C = desc->channels, K = desc->kernel_size;
    const int64_t states = (int64_t)((c->state_bytes ? c->state_bytes : c->dstate_out_bytes) / es);
    const int with_bias = c->bias != NULL;
    test_fill_random(rng, dt, c->x, x_elements);
    test_fill_random(rng, dt, c->dy, dy_elements);
    test_fill_random(rng, wt, c->weight, C * K);
    if (with_bias) test_fill_random(rng, wt, c->bias, C);
    if (c->state) test_fill_random(rng, dt, c->state, states);
    if (c->dstate_out) test_fill_random(rng, dt, c->dstate_out, states);
    for (int o = 0; o < GPU_BWD_OUTPUTS; o++)
        if (c->expected[o]) test_poison(c->expected[o], c->out_bytes[o]);
    dwconv_problem p;
    char msg[DWCONV_MSG_SIZE];
    if (gpu_bwd_case_problem(&p, c, c->x, c->weight, c->bias, c->dy, c->state, c->dstate_out,
                             c->expected) != 0) {
        snprintf(why, why_size, "%s: %s", gpu_bwd_case_string(c), dwconv_last_error());
        return -1;
    }
    if (dwconv_reference_run(&p, msg) != DWCONV_SUCCESS) {
        snprintf(why, why_size, "%s: the reference: %s", gpu_bwd_case_string(c), msg);
        return -1;
    }
    return 0;
}

int gpu_bwd_case_make(gpu_bwd_case *c, const dwconv_desc *desc, int cls, int wanted,
                      test_rng *rng, char *why, size_t why_size) {
    return make(c, desc, cls, 0, wanted, rng, why, why_size);
}

int gpu_bwd_case_make_causal(gpu_bwd_case *c, const dwconv_desc *desc, int wanted,
                             test_rng *rng, char *why, size_t why_size) {
    return make(c, desc, 0, 1, wanted, rng, why, why_size); /* cls unused */
}

int gpu_bwd_case_compare(const gpu_bwd_case *c, void *const out[GPU_BWD_OUTPUTS], char *why,
                         size_t why_size) {
    for (int o = 0; o < GPU_BWD_OUTPUTS; o++) {
        if (!c->out_bytes[o] || memcmp(out[o], c->expected[o], c->out_bytes[o]) == 0) continue;
        const dwconv_dtype t = (dwconv_dtype)(o == GPU_BWD_DX || o == GPU_BWD_DSTATE ? (int)c->desc.dtype : c->grad_dtype);
        const size_t size = dwconv_dtype_size(t);
        const int64_t n = (int64_t)(c->out_bytes[o] / size);
        const int64_t e = test_first_difference(out[o], c->expected[o], size, n);
        snprintf(why, why_size, "%s: %s element %lld is %.9g (0x%llx), the reference %.9g",
                 gpu_bwd_case_string(c), output_names[o], (long long)e,
                 (double)test_get(t, out[o], e),
                 (unsigned long long)(size == 4 ? ((const uint32_t *)out[o])[e]
                                                : ((const uint16_t *)out[o])[e]),
                 (double)test_get(t, c->expected[o], e));
        return -1;
    }
    return 0;
}
