/* The HIP build of the GPU module: the CUDA source, names mapped by hip_compat.h. */
#include "hip_compat.h"

#include "../cuda/gpu_module.cu"
