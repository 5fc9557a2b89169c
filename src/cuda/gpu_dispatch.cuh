/*
 * From (kernel, dtype, weight dtype, K) to the one template instance that runs it:
 * the module launches the pointer this returns, the tests' CPU emulator calls it.
 */
#ifndef DWCONV_GPU_DISPATCH_CUH
#define DWCONV_GPU_DISPATCH_CUH

#include "gpu_launch.cuh"

template <int XT, int WT> static gpu_kernel_fn gpu_vector_instance(int64_t K) {
    switch (K) {
    case 1: return dwconv_ncl_vector_kernel<XT, WT, 1>;
    case 2: return dwconv_ncl_vector_kernel<XT, WT, 2>;
    case 3: return dwconv_ncl_vector_kernel<XT, WT, 3>;
    case 4: return dwconv_ncl_vector_kernel<XT, WT, 4>;
    case 5: return dwconv_ncl_vector_kernel<XT, WT, 5>;
    case 6: return dwconv_ncl_vector_kernel<XT, WT, 6>;
    case 7: return dwconv_ncl_vector_kernel<XT, WT, 7>;
    default: return dwconv_ncl_vector_kernel<XT, WT, 8>;
    }
}

template <int XT, int WT> static gpu_kernel_fn gpu_typed_instance(int kernel, int64_t K) {
    switch (kernel) {
    case GPU_KERNEL_NCL_VECTOR: return gpu_vector_instance<XT, WT>(K);
    case GPU_KERNEL_NCL_TILE: return dwconv_ncl_tile_kernel<XT, WT>;
    case GPU_KERNEL_NCL_LATTICE: return dwconv_ncl_lattice_kernel<XT, WT>;
    case GPU_KERNEL_NLC: return dwconv_nlc_kernel<XT, WT>;
    default: return dwconv_generic_kernel;
    }
}

/* The weight dtype is f32 or the dtype itself (the core has checked). */
static gpu_kernel_fn gpu_kernel_instance(const gpu_conv_args *a, int kernel) {
    const int same = a->weight_dtype == a->dtype;
    switch (a->dtype) {
    case DWCONV_F16:
        return same ? gpu_typed_instance<DWCONV_F16, DWCONV_F16>(kernel, a->kernel_size)
                    : gpu_typed_instance<DWCONV_F16, DWCONV_F32>(kernel, a->kernel_size);
    case DWCONV_BF16:
        return same ? gpu_typed_instance<DWCONV_BF16, DWCONV_BF16>(kernel, a->kernel_size)
                    : gpu_typed_instance<DWCONV_BF16, DWCONV_F32>(kernel, a->kernel_size);
    default: return gpu_typed_instance<DWCONV_F32, DWCONV_F32>(kernel, a->kernel_size);
    }
}

#endif /* DWCONV_GPU_DISPATCH_CUH */
