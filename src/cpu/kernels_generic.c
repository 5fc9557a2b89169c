/* The generic flavour of the fast path's kernels: plain C, any processor: the fallback and the template's scalar check. */
#include <config.h>

#include "vec_generic.h"

#define KERNELS_TABLE dwconv_cpu_kernels_generic
#define KERNELS_NAME "generic"
#include "kernels_impl.h"
