/* The CUDA build of the GPU module: the shared source with CUDA's own names. */
#include <cuda_runtime.h>

#include "gpu_module.cu"
