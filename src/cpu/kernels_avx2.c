/* The avx2 flavour of the fast path's kernels: AVX2 + FMA + F16C (built with AVX2_CFLAGS). */
#include <config.h>

#include "vec_avx2.h"

#define KERNELS_TABLE dwconv_cpu_kernels_avx2
#define KERNELS_NAME "avx2"
#include "kernels_impl.h"
