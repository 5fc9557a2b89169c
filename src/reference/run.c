/* The reference's entry: one operation of a validated problem. */
#include <config.h>

#include <stdio.h>

#include "reference.h"

dwconv_status dwconv_reference_run(const dwconv_problem *p, char *msg) {
    switch (p->op) {
    case DWCONV_OP_FORWARD: dwconv_ref_forward(p); return DWCONV_SUCCESS;
    default: break;
    }
    snprintf(msg, DWCONV_MSG_SIZE, "the reference has no operation %d yet", (int)p->op);
    return DWCONV_ERROR_UNSUPPORTED;
}
