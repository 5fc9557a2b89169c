/*
 * From (kernel, dtype, weight dtype, K) to the one template instance that runs it:
 * the module launches the pointer this returns, the tests' CPU emulator calls it.
 */
#ifndef DWCONV_GPU_DISPATCH_CUH
#define DWCONV_GPU_DISPATCH_CUH

#include "gpu_launch.cuh"

/* The instance of a kernel templated on <XT, WT, K> for K = 1 .. 8 (larger K: 8; the
 * launch rules never choose these kernels for K above 8). */
#define GPU_BY_K(kernel, K)                                                                  \
    switch (K) {                                                                              \
    case 1: return kernel<XT, WT, 1>;                                                         \
    case 2: return kernel<XT, WT, 2>;                                                         \
    case 3: return kernel<XT, WT, 3>;                                                         \
    case 4: return kernel<XT, WT, 4>;                                                         \
    case 5: return kernel<XT, WT, 5>;                                                         \
    case 6: return kernel<XT, WT, 6>;                                                         \
    case 7: return kernel<XT, WT, 7>;                                                         \
    default: return kernel<XT, WT, 8>;                                                        \
    }

/* The lean kernel's strided and dilated instances (gpu_lean_applies), then K <= 8. */
template <int XT, int WT> static gpu_kernel_fn gpu_lean_instance(const gpu_conv_args *a) {
    if (a->stride == 2) return dwconv_ncl_lean_kernel<XT, WT, 3, 2, 1>;
    if (a->dilation == 2) return dwconv_ncl_lean_kernel<XT, WT, 3, 1, 2>;
    if (a->dilation == 4) return dwconv_ncl_lean_kernel<XT, WT, 3, 1, 4>;
    GPU_BY_K(dwconv_ncl_lean_kernel, a->kernel_size)
}

template <int XT, int WT> static gpu_kernel_fn gpu_typed_instance(int kernel, const gpu_conv_args *a) {
    const int64_t K = a->kernel_size;
    switch (kernel) {
    case GPU_KERNEL_NCL_VECTOR: GPU_BY_K(dwconv_ncl_vector_kernel, K)
    case GPU_KERNEL_NCL_LEAN: return gpu_lean_instance<XT, WT>(a);
    case GPU_KERNEL_NLC_SLIDE: GPU_BY_K(dwconv_nlc_slide_kernel, K)
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
        return same ? gpu_typed_instance<DWCONV_F16, DWCONV_F16>(kernel, a)
                    : gpu_typed_instance<DWCONV_F16, DWCONV_F32>(kernel, a);
    case DWCONV_BF16:
        return same ? gpu_typed_instance<DWCONV_BF16, DWCONV_BF16>(kernel, a)
                    : gpu_typed_instance<DWCONV_BF16, DWCONV_F32>(kernel, a);
    default: return gpu_typed_instance<DWCONV_F32, DWCONV_F32>(kernel, a);
    }
}

#endif /* DWCONV_GPU_DISPATCH_CUH */
