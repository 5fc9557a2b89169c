/* The backward operation's validator: dwconv_backward, dwconv_plan_backward,
 * dwconv_reference_backward and dwconv_causal_backward build their problem here. */
#include <config.h>

#include "internal.h"

/* The plain backward's problem; `wanted` says whether the caller wants some output
 * besides dx, dweight and dbias (dinitial_states), so that all three may be NULL. */
static dwconv_status build(dwconv_problem *p, const dwconv_desc *desc,
                           const dwconv_layout_options *opt, const void *x, const void *weight,
                           const void *bias, const void *dy, void *dx, void *dweight,
                           void *dbias, int wanted, const char *who) {
    dwconv_status st;
    DWCONV_REQUIRE(desc, DWCONV_ERROR_NULL_POINTER, "%s: desc is NULL", who);
    DWCONV_REQUIRE(x, DWCONV_ERROR_NULL_POINTER, "%s: x is NULL", who);
    DWCONV_REQUIRE(weight, DWCONV_ERROR_NULL_POINTER, "%s: weight is NULL", who);
    DWCONV_REQUIRE(dy, DWCONV_ERROR_NULL_POINTER, "%s: dy is NULL", who);
    DWCONV_REQUIRE(dx || dweight || dbias || wanted, DWCONV_ERROR_NULL_POINTER,
                   "%s: every gradient output is NULL: nothing to compute", who);
    if ((st = dwconv_problem_init(p, DWCONV_OP_BACKWARD, desc, who))) return st;
    if (opt && opt->grad_dtype >= 0) p->grad_dtype = opt->grad_dtype;
    if ((st = dwconv_set_conv_shapes(p, opt, 1, who))) return st;
    dwconv_attach(p, DWCONV_ROLE_X, x, 1, who);
    dwconv_attach(p, DWCONV_ROLE_WEIGHT, weight, 1, who);
    dwconv_attach(p, DWCONV_ROLE_BIAS, bias, 0, who);
    dwconv_attach(p, DWCONV_ROLE_DY, dy, 1, who);
    dwconv_attach(p, DWCONV_ROLE_DX, dx, 0, who);
    dwconv_attach(p, DWCONV_ROLE_DWEIGHT, dweight, 0, who);
    dwconv_attach(p, DWCONV_ROLE_DBIAS, dbias, 0, who);
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_validate_backward(dwconv_problem *p, const dwconv_desc *desc,
                                       const dwconv_layout_options *opt, const void *x,
                                       const void *weight, const void *bias, const void *dy,
                                       void *dx, void *dweight, void *dbias, const char *who) {
    dwconv_status st = build(p, desc, opt, x, weight, bias, dy, dx, dweight, dbias, 0, who);
    return st ? st : dwconv_check_overlaps(p, NULL, who);
}

dwconv_status dwconv_validate_causal_backward(dwconv_problem *p, const dwconv_desc *desc,
                                              const void *x, const void *weight,
                                              const void *bias, const void *initial_states,
                                              const void *dy, const void *dfinal_states,
                                              void *dx, void *dweight, void *dbias,
                                              void *dinitial_states, const char *who) {
    dwconv_status st = build(p, desc, NULL, x, weight, bias, dy, dx, dweight, dbias,
                             dinitial_states != NULL, who);
    if (st || (st = dwconv_check_causal(p, who))) return st;
    p->state_length = p->span;
    p->state_count = p->desc.batch;
    if ((st = dwconv_set_states(p, DWCONV_ROLE_STATE_IN, 0, p->desc.batch, p->span, who)) ||
        (st = dwconv_set_states(p, DWCONV_ROLE_DSTATE_OUT, 0, p->desc.batch, p->span, who)) ||
        (st = dwconv_set_states(p, DWCONV_ROLE_DSTATE_IN, 1, p->desc.batch, p->span, who)))
        return st;
    dwconv_attach(p, DWCONV_ROLE_STATE_IN, initial_states, 0, who);
    dwconv_attach(p, DWCONV_ROLE_DSTATE_OUT, dfinal_states, 0, who);
    dwconv_attach(p, DWCONV_ROLE_DSTATE_IN, dinitial_states, 0, who);
    return dwconv_check_overlaps(p, NULL, who);
}
