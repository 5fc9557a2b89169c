/* The reference's entry: one operation of a validated problem. */
#include <config.h>

#include <stdio.h>

#include "reference.h"

dwconv_status dwconv_reference_run(const dwconv_problem *p, char *msg) {
    switch (p->op) {
    case DWCONV_OP_FORWARD: dwconv_ref_forward(p); return DWCONV_SUCCESS;
    case DWCONV_OP_BACKWARD: return dwconv_ref_backward(p, msg);
    case DWCONV_OP_CAUSAL_FORWARD: return dwconv_ref_causal_forward(p, msg);
    case DWCONV_OP_CAUSAL_UPDATE: return dwconv_ref_causal_update(p, msg);
    default: break;
    }
    snprintf(msg, DWCONV_MSG_SIZE, "operation %d is not a dwconv operation", (int)p->op);
    return DWCONV_ERROR_INVALID_VALUE;
}
