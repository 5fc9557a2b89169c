/*
 * The GPU backward, on whichever GPU backend this machine has (cuda, else hip; exit
 * 77 = skip when neither has a device), against the scalar reference bit for bit:
 * random descriptors of every option with strided x, dy and dx, the shapes that
 * matter, more than 2^31 elements, the causal backward with states; every call made twice on the same buffers (the
 * same bits: no atomics, no dependence on what the scratch held), with GPU_CASE_GUARD
 * poisoned bytes on each side of dx, dweight and dbias checked after each call.
 *
 * Runs without forking (GPU runtimes do not survive a fork of an initialised
 * process): the GPU is first touched inside the tests. DWCONV_TEST_QUICK=1 runs fewer
 * descriptors and skips the 2^31-element case.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_bwd_cases.h"
#include "gpu_cases.h"
#include "gpu_device.h"
#include "gpu_families.h"
#include "gpu_graph.h"

static dwconv_backend gpu_backend;

static dwconv_context *gpu_context(void) { return gpu_device_context(gpu_backend, NULL, 0); }

/* Runs c on ctx through a plan with its strides and gradient dtype, every buffer
 * `shift` elements past dwconv_malloc's alignment, twice; fails the test on any
 * difference from the reference or between the calls, or a write beside an output. */
static void run_case(dwconv_context *ctx, const gpu_bwd_case *c, int shift) {
    char why[1024];
    const size_t xs = dwconv_dtype_size(c->desc.dtype) * shift;
    const size_t ws = dwconv_dtype_size(c->desc.weight_dtype) * shift;
    const size_t gs = dwconv_dtype_size((dwconv_dtype)c->grad_dtype) * shift;
    const size_t out_shift[GPU_BWD_OUTPUTS] = {xs, gs, gs, xs};
    char *x = gpu_device_input(ctx, c->x, c->x_bytes, xs);
    char *dy = gpu_device_input(ctx, c->dy, c->dy_bytes, xs);
    char *w = gpu_device_input(ctx, c->weight, c->weight_bytes, ws);
    char *b = c->bias ? gpu_device_input(ctx, c->bias, c->bias_bytes, ws) : NULL;
    char *state = c->state ? gpu_device_input(ctx, c->state, c->state_bytes, xs) : NULL;
    char *dstate_out =
        c->dstate_out ? gpu_device_input(ctx, c->dstate_out, c->dstate_out_bytes, xs) : NULL;
    gpu_guarded out[GPU_BWD_OUTPUTS];
    void *at[GPU_BWD_OUTPUTS] = {NULL, NULL, NULL, NULL}, *got[GPU_BWD_OUTPUTS] = {NULL, NULL, NULL, NULL};
    for (int o = 0; o < GPU_BWD_OUTPUTS; o++)
        if (c->out_bytes[o]) {
            gpu_guarded_make(&out[o], ctx, c->out_bytes[o], out_shift[o]);
            at[o] = out[o].at, got[o] = out[o].got;
        }
    dwconv_plan *plan = NULL;
    ck_assert_msg(dwconv_plan_create(&plan, ctx, &c->desc) == DWCONV_SUCCESS, "plan: %s",
                  dwconv_last_error());
    ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_X, c->x_stride[0], c->x_stride[1],
                                      c->x_stride[2]) == DWCONV_SUCCESS);
    ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_DY, c->dy_stride[0], c->dy_stride[1],
                                      c->dy_stride[2]) == DWCONV_SUCCESS);
    ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_DX, c->dx_stride[0], c->dx_stride[1],
                                      c->dx_stride[2]) == DWCONV_SUCCESS);
    ck_assert(dwconv_plan_set_grad_dtype(plan, (dwconv_dtype)c->grad_dtype) == DWCONV_SUCCESS);
    for (int call = 0; call < 2; call++) {
        for (int o = 0; o < GPU_BWD_OUTPUTS; o++)
            if (at[o] && call > 0) gpu_guarded_poison(&out[o]); /* made poisoned */
        const dwconv_status st =
            c->causal ? dwconv_causal_backward(ctx, &c->desc, x + xs, w + ws, b ? b + ws : NULL,
                                               state ? state + xs : NULL, dy + xs,
                                               dstate_out ? dstate_out + xs : NULL, at[0], at[1],
                                               at[2], at[3])
                      : dwconv_plan_backward(plan, x + xs, w + ws, b ? b + ws : NULL, dy + xs,
                                             at[0], at[1], at[2]);
        ck_assert_msg(st == DWCONV_SUCCESS, "%s: %s", gpu_bwd_case_string(c), dwconv_last_error());
        ck_assert_msg(dwconv_synchronize(ctx) == DWCONV_SUCCESS, "%s", dwconv_last_error());
        for (int o = 0; o < GPU_BWD_OUTPUTS; o++)
            if (at[o]) {
                char what[600];
                snprintf(what, sizeof what, "%s: output %d", gpu_bwd_case_string(c), o);
                gpu_guarded_fetch(&out[o]);
                ck_assert_msg(gpu_guarded_intact(&out[o], what, why, sizeof why) == 0,
                              "%s (call %d, offset %d)", why, call + 1, shift);
            }
        ck_assert_msg(gpu_bwd_case_compare(c, got, why, sizeof why) == 0,
                      "%s (call %d, offset %d elements)", why, call + 1, shift);
    }
    dwconv_plan_destroy(plan);
    for (int o = 0; o < GPU_BWD_OUTPUTS; o++)
        if (at[o]) gpu_guarded_free(&out[o]);
    dwconv_free(ctx, x), dwconv_free(ctx, dy), dwconv_free(ctx, w), dwconv_free(ctx, b);
    dwconv_free(ctx, state), dwconv_free(ctx, dstate_out);
}

static void check_desc(dwconv_context *ctx, test_rng *rng, const dwconv_desc *d, int cls,
                       int wanted, int shift) {
    char why[1024];
    gpu_bwd_case c;
    const int made = cls < -1 ? gpu_bwd_case_make_causal(&c, d, wanted, rng, why, sizeof why)
                              : gpu_bwd_case_make(&c, d, cls, wanted, rng, why, sizeof why);
    ck_assert_msg(made == 0, "%s", why);
    run_case(ctx, &c, shift);
    gpu_bwd_case_free(&c);
}

START_TEST(random_descriptors) {
    dwconv_context *ctx = gpu_context();
    test_rng rng = test_rng_seed(1202);
    const int n = test_quick() ? 40 : 300;
    for (int i = 0; i < n; i++) {
        dwconv_desc d = test_random_desc(&rng, 3000, 40);
        check_desc(ctx, &rng, &d, GPU_CASE_ANY_STRIDES, 0, i % 3 == 2 ? 1 : 0);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* The benchmarks' shapes, scaled down (rows of several tiles, odd lengths). */
START_TEST(targeted_shapes) {
    static const struct {
        int64_t K, stride, dilation, pad; /* -1: causal */
        int act;
    } shapes[] = {{3, 1, 1, 1, 0}, {4, 1, 1, -1, 2}, {31, 1, 1, 15, 0}, {3, 2, 1, 1, 0},
                  {3, 1, 4, 4, 1}, {7, 1, 1, 3, 2}};
    dwconv_context *ctx = gpu_context();
    test_rng rng = test_rng_seed(1203);
    int i = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int dt = 0; dt < 3; dt++)
            for (int layout = 0; layout < 2; layout++, i++) {
                dwconv_desc d;
                dwconv_desc_init(&d, 3, 37, 4099 + 64 * (i % 5), shapes[s].K);
                d.stride = shapes[s].stride, d.dilation = shapes[s].dilation;
                if (shapes[s].pad < 0) d.padding = DWCONV_PADDING_CAUSAL;
                else d.pad_left = d.pad_right = shapes[s].pad;
                d.padding_mode = shapes[s].pad < 0 ? DWCONV_PAD_ZEROS : (dwconv_padding_mode)(i % 4);
                d.activation = (dwconv_activation)shapes[s].act;
                d.dtype = (dwconv_dtype)dt, d.weight_dtype = i % 2 ? DWCONV_F32 : d.dtype;
                d.layout = (dwconv_layout)layout;
                ck_assert(dwconv_desc_resolve(&d, NULL, NULL, NULL) == DWCONV_SUCCESS);
                check_desc(ctx, &rng, &d, layout ? GPU_CHANNEL_LAST : GPU_CHANNEL_FIRST, 7, i % 2);
            }
    dwconv_context_destroy(ctx);
}
END_TEST

/* dx of more than 2^31 elements (64-bit offsets everywhere), f16; cheap to check:
 * stride 64 keeps the outputs few. */
START_TEST(over_two_billion_elements) {
    dwconv_context *ctx = gpu_context();
    test_rng rng = test_rng_seed(1204);
    dwconv_desc d;
    dwconv_desc_init(&d, 2, 3, ((int64_t)1 << 29) + 77, 2);
    d.stride = 64, d.dilation = 33, d.pad_left = 5, d.pad_right = 40;
    d.dtype = d.weight_dtype = DWCONV_F16;
    d.padding_mode = DWCONV_PAD_REFLECT;
    ck_assert(dwconv_desc_resolve(&d, NULL, NULL, NULL) == DWCONV_SUCCESS);
    check_desc(ctx, &rng, &d, GPU_CHANNEL_FIRST, 7, 0);
    dwconv_context_destroy(ctx);
}
END_TEST

/* dwconv_causal_backward: states given or not, dinitial_states wanted or not, both
 * layouts, the kernels' row lengths; CAUSAL marks check_desc's causal cases. */
#define CAUSAL -2
START_TEST(causal_with_states) {
    dwconv_context *ctx = gpu_context();
    test_rng rng = test_rng_seed(1205);
    static const int64_t lengths[] = {1, 5, 300, 1000, 4099};
    for (int i = 0; i < (test_quick() ? 20 : 80); i++) {
        dwconv_desc d;
        dwconv_desc_init(&d, 1 + i % 4, 1 + 37 * (i % 3), lengths[i % 5], 2 + i % 4);
        d.dilation = i % 5 == 4 ? 3 : 1;
        d.padding = DWCONV_PADDING_CAUSAL;
        d.dtype = (dwconv_dtype)(i % 3), d.weight_dtype = i % 2 ? DWCONV_F32 : d.dtype;
        d.activation = (dwconv_activation)(i / 3 % 3), d.layout = (dwconv_layout)(i / 2 % 2);
        check_desc(ctx, &rng, &d, CAUSAL, 0, i % 3 == 1);
    }
    dwconv_context_destroy(ctx);
}
END_TEST

/* Stream capture: after one uncaptured call (which sizes the context's scratch), the
 * same call captured into a graph runs nothing during the capture and replays the
 * reference's bits; the replay reads new inputs from the same buffers. */
START_TEST(graph_capture_replays_bitwise) {
    char why[1024];
    gpu_graph_api *api = NULL;
    void *stream = NULL, *exec = NULL;
    gpu_device_stream(gpu_backend, &api, &stream);
    dwconv_context *ctx = gpu_context();
    test_rng rng = test_rng_seed(1206);
    dwconv_desc d;
    dwconv_desc_init(&d, 2, 64, 4099, 3);
    d.pad_left = d.pad_right = 1, d.activation = DWCONV_ACT_SILU;
    gpu_bwd_case c;
    ck_assert_msg(gpu_bwd_case_make(&c, &d, GPU_CHANNEL_FIRST, 7, &rng, why, sizeof why) == 0, "%s", why);
    char *x = gpu_device_alloc(ctx, c.x_bytes), *dy = gpu_device_alloc(ctx, c.dy_bytes);
    char *w = gpu_device_alloc(ctx, c.weight_bytes);
    char *b = c.bias ? gpu_device_alloc(ctx, c.bias_bytes) : NULL;
    void *out[GPU_BWD_OUTPUTS] = {NULL, NULL, NULL, NULL}, *host[GPU_BWD_OUTPUTS] = {NULL, NULL, NULL, NULL};
    for (int o = 0; o < 3; o++) out[o] = gpu_device_alloc(ctx, c.out_bytes[o]), host[o] = malloc(c.out_bytes[o]);
    dwconv_plan *plan = NULL;
    ck_assert(dwconv_plan_create(&plan, ctx, &d) == DWCONV_SUCCESS);
    ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_X, c.x_stride[0], c.x_stride[1], c.x_stride[2]) == DWCONV_SUCCESS);
    ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_DY, c.dy_stride[0], c.dy_stride[1], c.dy_stride[2]) == DWCONV_SUCCESS);
    ck_assert(dwconv_plan_set_strides(plan, DWCONV_TENSOR_DX, c.dx_stride[0], c.dx_stride[1], c.dx_stride[2]) == DWCONV_SUCCESS);
    ck_assert(dwconv_plan_set_grad_dtype(plan, (dwconv_dtype)c.grad_dtype) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_set_stream(ctx, stream) == DWCONV_SUCCESS);
    for (int round = 0; round < 2; round++) {
        if (round == 1) /* new inputs in the same buffers */
            ck_assert_msg(gpu_bwd_case_refill(&c, &rng, why, sizeof why) == 0, "%s", why);
        ck_assert(dwconv_copy_to_backend(ctx, x, c.x, c.x_bytes) == DWCONV_SUCCESS);
        ck_assert(dwconv_copy_to_backend(ctx, dy, c.dy, c.dy_bytes) == DWCONV_SUCCESS);
        ck_assert(dwconv_copy_to_backend(ctx, w, c.weight, c.weight_bytes) == DWCONV_SUCCESS);
        if (b && c.bias) ck_assert(dwconv_copy_to_backend(ctx, b, c.bias, c.bias_bytes) == DWCONV_SUCCESS);
        if (round == 0) { /* the uncaptured call, then the capture */
            ck_assert_msg(dwconv_plan_backward(plan, x, w, c.bias ? b : NULL, dy, out[0], out[1], out[2]) ==
                              DWCONV_SUCCESS, "%s", dwconv_last_error());
            ck_assert(dwconv_synchronize(ctx) == DWCONV_SUCCESS);
        }
        for (int o = 0; o < 3; o++) {
            test_poison(host[o], c.out_bytes[o]);
            ck_assert(dwconv_copy_to_backend(ctx, out[o], host[o], c.out_bytes[o]) == DWCONV_SUCCESS);
        }
        if (round == 0) {
            gpu_device_capture_begin(api, stream);
            const dwconv_status st = dwconv_plan_backward(plan, x, w, c.bias ? b : NULL, dy, out[0], out[1], out[2]);
            exec = gpu_device_capture_end(api, stream, st);
            ck_assert(dwconv_copy_to_host(ctx, host[0], out[0], c.out_bytes[0]) == DWCONV_SUCCESS);
            ck_assert_msg(test_untouched(host[0], c.out_bytes[0]), "the capture ran the kernels");
        }
        gpu_device_replay(api, exec, stream);
        for (int o = 0; o < 3; o++) ck_assert(dwconv_copy_to_host(ctx, host[o], out[o], c.out_bytes[o]) == DWCONV_SUCCESS);
        ck_assert_msg(gpu_bwd_case_compare(&c, host, why, sizeof why) == 0, "%s (replay %d)", why, round + 1);
    }
    ck_assert(dwconv_context_set_stream(ctx, NULL) == DWCONV_SUCCESS);
    dwconv_plan_destroy(plan);
    for (int o = 0; o < 3; o++) dwconv_free(ctx, out[o]), free(host[o]);
    dwconv_free(ctx, x), dwconv_free(ctx, dy), dwconv_free(ctx, w), dwconv_free(ctx, b);
    gpu_bwd_case_free(&c);
    dwconv_context_destroy(ctx);
    gpu_graph_free(api, exec, stream);
    gpu_graph_close(api);
}
END_TEST

int main(void) {
    if (!gpu_device_find("check_gpu_backward", &gpu_backend, NULL)) return 77;
    Suite *s = suite_create("gpu_backward");
    TCase *t = tcase_create("bitwise");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, random_descriptors);
    tcase_add_test(t, targeted_shapes);
    tcase_add_test(t, causal_with_states);
    gpu_device_add(t, over_two_billion_elements, "over_two_billion_elements",
                   test_quick() ? "DWCONV_TEST_QUICK is set" : NULL);
    suite_add_tcase(s, t);
    t = tcase_create("streams");
    tcase_set_timeout(t, 0);
    char graph_why[256];
    gpu_device_add(t, graph_capture_replays_bitwise, "graph_capture_replays_bitwise",
                   gpu_device_graphs(gpu_backend, graph_why, sizeof graph_why) ? NULL : graph_why);
    suite_add_tcase(s, t);
    return gpu_device_run(s);
}
