/* The backward pass on the cpu. For now the reference computes it (one thread): the
 * fast path for it is the next step (issue "Training"). */
#include <config.h>

#include "cpu.h"
#include "reference.h"

dwconv_status dwconv_cpu_backward(const dwconv_problem *p, int threads, char *msg) {
    (void)threads;
    return dwconv_reference_run(p, msg);
}
