/* The causal operations on the cpu. For now the reference computes them (one
 * thread): the fast path for them is the next step (issue "Serving causal models"). */
#include <config.h>

#include "cpu.h"
#include "reference.h"

dwconv_status dwconv_cpu_causal(const dwconv_problem *p, int threads, char *msg) {
    (void)threads;
    return dwconv_reference_run(p, msg);
}
