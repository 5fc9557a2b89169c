/* Plans: a descriptor validated once and bound to a context, with the options added
 * since 0.1 (strides, gradient dtype). Running a plan re-checks only what changes
 * between calls: the pointers. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct dwconv_plan {
    dwconv_context *ctx;
    dwconv_desc desc;
    int64_t strides[4][3];  /* per dwconv_tensor; zeros: contiguous in desc.layout */
    dwconv_layout_options options;
    dwconv_problem forward; /* validated with these options, pointers unset */
    dwconv_problem backward;
};

/* Re-validates both operations' shapes with the plan's options (pointers unset). */
static dwconv_status shape_plan(dwconv_plan *plan, const char *who) {
    dwconv_problem forward, backward;
    dwconv_status st;
    if ((st = dwconv_problem_init(&forward, DWCONV_OP_FORWARD, &plan->desc, who)) ||
        (st = dwconv_set_conv_shapes(&forward, &plan->options, 0, who)))
        return st;
    if ((st = dwconv_problem_init(&backward, DWCONV_OP_BACKWARD, &plan->desc, who))) return st;
    if (plan->options.grad_dtype >= 0) backward.grad_dtype = plan->options.grad_dtype;
    if ((st = dwconv_set_conv_shapes(&backward, &plan->options, 1, who))) return st;
    plan->forward = forward;
    plan->backward = backward;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_plan_create(dwconv_plan **plan, dwconv_context *context,
                                 const dwconv_desc *desc) {
    static const char who[] = "dwconv_plan_create";
    dwconv_clear_error();
    DWCONV_REQUIRE(plan, DWCONV_ERROR_NULL_POINTER, "%s: plan is NULL", who);
    DWCONV_REQUIRE(context, DWCONV_ERROR_NULL_POINTER, "%s: context is NULL", who);
    DWCONV_REQUIRE(desc, DWCONV_ERROR_NULL_POINTER, "%s: desc is NULL", who);
    dwconv_plan *p = calloc(1, sizeof *p);
    DWCONV_REQUIRE(p, DWCONV_ERROR_OUT_OF_MEMORY, "%s: out of host memory", who);
    p->ctx = context;
    p->desc = *desc;
    p->options.strides = (const int64_t(*)[3])p->strides;
    p->options.grad_dtype = -1;
    dwconv_status st = shape_plan(p, who);
    char msg[DWCONV_MSG_SIZE] = "";
    if (!st && (st = context->ops->supports(context->state, &p->forward, msg)))
        st = dwconv_fail(st, "%s: %s", who, msg);
    if (st) {
        free(p);
        return st;
    }
    *plan = p;
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_plan_destroy(dwconv_plan *plan) {
    dwconv_clear_error();
    free(plan);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_plan_set_strides(dwconv_plan *plan, dwconv_tensor tensor,
                                      int64_t batch_stride, int64_t channel_stride,
                                      int64_t position_stride) {
    static const char who[] = "dwconv_plan_set_strides";
    dwconv_clear_error();
    DWCONV_REQUIRE(plan, DWCONV_ERROR_NULL_POINTER, "%s: plan is NULL", who);
    DWCONV_REQUIRE((unsigned)tensor <= DWCONV_TENSOR_DY, DWCONV_ERROR_INVALID_VALUE,
                   "%s: tensor %d is not a dwconv_tensor", who, (int)tensor);
    int64_t saved[3];
    memcpy(saved, plan->strides[tensor], sizeof saved);
    plan->strides[tensor][0] = batch_stride;
    plan->strides[tensor][1] = channel_stride;
    plan->strides[tensor][2] = position_stride;
    /* a stride < 1 would read as "unset": reject it here, by name */
    dwconv_status st = DWCONV_SUCCESS;
    if (batch_stride < 1 || channel_stride < 1 || position_stride < 1)
        st = dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                         "%s: strides (%lld, %lld, %lld) must all be >= 1", who,
                         (long long)batch_stride, (long long)channel_stride,
                         (long long)position_stride);
    if (!st) st = shape_plan(plan, who);
    if (st) memcpy(plan->strides[tensor], saved, sizeof saved); /* the plan stays as it was */
    return st;
}

dwconv_status dwconv_plan_set_grad_dtype(dwconv_plan *plan, dwconv_dtype dtype) {
    static const char who[] = "dwconv_plan_set_grad_dtype";
    dwconv_clear_error();
    DWCONV_REQUIRE(plan, DWCONV_ERROR_NULL_POINTER, "%s: plan is NULL", who);
    DWCONV_REQUIRE(dtype == DWCONV_F32 || dtype == plan->desc.weight_dtype,
                   DWCONV_ERROR_INVALID_VALUE,
                   "%s: dtype %d: the gradients of the weight and bias are F32 or the weight's "
                   "dtype", who, (int)dtype);
    int saved = plan->options.grad_dtype;
    plan->options.grad_dtype = dtype;
    dwconv_status st = shape_plan(plan, who);
    if (st) plan->options.grad_dtype = saved;
    return st;
}

dwconv_status dwconv_plan_forward(dwconv_plan *plan, const void *x, const void *weight,
                                  const void *bias, void *y) {
    static const char who[] = "dwconv_plan_forward";
    dwconv_clear_error();
    DWCONV_REQUIRE(plan, DWCONV_ERROR_NULL_POINTER, "%s: plan is NULL", who);
    dwconv_problem p = plan->forward;
    dwconv_status st;
    if ((st = dwconv_attach(&p, DWCONV_ROLE_X, x, 1, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_WEIGHT, weight, 1, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_Y, y, 1, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_BIAS, bias, 0, who)) ||
        (st = dwconv_check_overlaps(&p, NULL, who)))
        return st;
    return dwconv_run(plan->ctx, &p, who);
}

dwconv_status dwconv_plan_backward(dwconv_plan *plan, const void *x, const void *weight,
                                   const void *bias, const void *dy, void *dx, void *dweight,
                                   void *dbias) {
    static const char who[] = "dwconv_plan_backward";
    dwconv_clear_error();
    DWCONV_REQUIRE(plan, DWCONV_ERROR_NULL_POINTER, "%s: plan is NULL", who);
    DWCONV_REQUIRE(dx || dweight || dbias, DWCONV_ERROR_NULL_POINTER,
                   "%s: every gradient output is NULL: nothing to compute", who);
    dwconv_problem p = plan->backward;
    dwconv_status st;
    if ((st = dwconv_attach(&p, DWCONV_ROLE_X, x, 1, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_WEIGHT, weight, 1, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_DY, dy, 1, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_BIAS, bias, 0, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_DX, dx, 0, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_DWEIGHT, dweight, 0, who)) ||
        (st = dwconv_attach(&p, DWCONV_ROLE_DBIAS, dbias, 0, who)) ||
        (st = dwconv_check_overlaps(&p, NULL, who)))
        return st;
    return dwconv_run(plan->ctx, &p, who);
}
