/* The avx512 flavour of the fast path's kernels: AVX-512 F/BW/VL/DQ + F16C (built with AVX512_CFLAGS). */
#include <config.h>

#include "vec_avx512.h"

#define KERNELS_TABLE dwconv_cpu_kernels_avx512
#define KERNELS_NAME "avx512"
#include "kernels_impl.h"
