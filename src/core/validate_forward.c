/* The forward operation's validator: dwconv_forward, dwconv_plan_forward and
 * dwconv_reference_forward all build their problem here. */
#include <config.h>

#include "internal.h"

dwconv_status dwconv_validate_forward(dwconv_problem *p, const dwconv_desc *desc,
                                      const dwconv_layout_options *opt, const void *x,
                                      const void *weight, const void *bias, void *y,
                                      const char *who) {
    dwconv_status st;
    DWCONV_REQUIRE(desc, DWCONV_ERROR_NULL_POINTER, "%s: desc is NULL", who);
    DWCONV_REQUIRE(x, DWCONV_ERROR_NULL_POINTER, "%s: x is NULL", who);
    DWCONV_REQUIRE(weight, DWCONV_ERROR_NULL_POINTER, "%s: weight is NULL", who);
    DWCONV_REQUIRE(y, DWCONV_ERROR_NULL_POINTER, "%s: y is NULL", who);
    if ((st = dwconv_problem_init(p, DWCONV_OP_FORWARD, desc, who)) ||
        (st = dwconv_set_conv_shapes(p, opt, 0, who)))
        return st;
    dwconv_attach(p, DWCONV_ROLE_X, x, 1, who);
    dwconv_attach(p, DWCONV_ROLE_WEIGHT, weight, 1, who);
    dwconv_attach(p, DWCONV_ROLE_BIAS, bias, 0, who);
    dwconv_attach(p, DWCONV_ROLE_Y, y, 1, who);
    return dwconv_check_overlaps(p, NULL, who);
}
