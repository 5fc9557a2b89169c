/* Running a validated problem on a context: the backend checks each operand's memory,
 * then runs it. */
#include <config.h>

#include "internal.h"

dwconv_status dwconv_run(dwconv_context *ctx, const dwconv_problem *p, const char *who) {
    char msg[DWCONV_MSG_SIZE] = "";
    dwconv_status st;
    for (int r = 0; r < DWCONV_ROLE_COUNT; r++) {
        const dwconv_operand *t = &p->operand[r];
        if (!t->data || t->bytes == 0) continue;
        if ((st = ctx->ops->check_pointer(ctx->state, t->data, t->bytes,
                                          dwconv_role_name((dwconv_role)r), msg)))
            return dwconv_fail(st, "%s: %s", who, msg);
    }
    if ((st = ctx->ops->run(ctx->state, p, msg))) return dwconv_fail(st, "%s: %s", who, msg);
    return DWCONV_SUCCESS;
}
