/*
 * From (family, dtype, weight dtype, K, ...) to the one template instance that runs it:
 * the module launches the pointer this returns, the tests' CPU emulator calls it. Each
 * family of the registry (gpu_families.h) has a gpu_<name>_kernels struct here whose
 * instance<XT, WT>(a) returns its instance for a, or NULL where it has none (never
 * where the family applies: the tests run every family over its whole range).
 */
#ifndef DWCONV_GPU_DISPATCH_CUH
#define DWCONV_GPU_DISPATCH_CUH

#include <stddef.h>

#include "gpu_kernel_generic.cuh"
#include "gpu_kernel_ncl_lattice.cuh"
#include "gpu_kernel_ncl_lean.cuh"
#include "gpu_kernel_ncl_strip.cuh"
#include "gpu_kernel_ncl_tile.cuh"
#include "gpu_kernel_nlc.cuh"
#include "gpu_kernel_nlc_column.cuh"
#include "gpu_kernel_nlc_slide.cuh"
#include "gpu_launch.cuh"

/* F's instance for a run-time k in [1, K] (F::at<XT, WT, k>), NULL outside: the
 * family's K range (its registry entry) is the one place that says which exist. */
template <class F, int XT, int WT, int K> struct gpu_k_instance {
    static gpu_kernel_fn get(int64_t k) {
        return k == K ? F::template at<XT, WT, K>() : gpu_k_instance<F, XT, WT, K - 1>::get(k);
    }
};
template <class F, int XT, int WT> struct gpu_k_instance<F, XT, WT, 0> {
    static gpu_kernel_fn get(int64_t) { return NULL; }
};

struct gpu_generic_kernels {
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *) {
        return dwconv_generic_kernel<XT, WT>;
    }
};

/* lean's instances: tiles of a whole warp or (short rows, a->row_threads below it)
 * several rows per warp; silu's apart from the other activations'; the weight dtype
 * at run time (one instance for both). */
template <bool ROWS, bool SILU> struct gpu_lean_kind {
    template <int XT, int WT, int K> static gpu_kernel_fn at() {
        return dwconv_ncl_lean_kernel<XT, K, 1, 1, ROWS, SILU>;
    }
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *a) {
        if (a->stride == 1 && a->dilation == 1)
            return gpu_k_instance<gpu_lean_kind, XT, WT, GPU_LEAN_MAX_K>::get(a->kernel_size);
#define GPU_LEAN_INSTANCE(k, s, d)                                       \
    if (a->kernel_size == (k) && a->stride == (s) && a->dilation == (d)) \
        return dwconv_ncl_lean_kernel<XT, k, s, d, ROWS, SILU>;
        GPU_LEAN_STEPPED(GPU_LEAN_INSTANCE)
#undef GPU_LEAN_INSTANCE
        return NULL;
    }
};

struct gpu_lean_kernels {
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *a) {
        const bool rows = a->row_threads < GPU_WARP, silu = a->activation == DWCONV_ACT_SILU;
        return rows ? silu ? gpu_lean_kind<true, true>::instance<XT, WT>(a)
                           : gpu_lean_kind<true, false>::instance<XT, WT>(a)
               : silu ? gpu_lean_kind<false, true>::instance<XT, WT>(a)
                      : gpu_lean_kind<false, false>::instance<XT, WT>(a);
    }
};

/* strip's instances: K at compile time (the taps unrolled, the weights in registers). */
struct gpu_strip_kernels {
    template <int XT, int WT, int K> static gpu_kernel_fn at() { return dwconv_ncl_strip_kernel<XT, WT, K>; }
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *a) {
        return gpu_k_instance<gpu_strip_kernels, XT, WT, GPU_STRIP_MAX_K>::get(a->kernel_size);
    }
};

struct gpu_tile_kernels {
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *a) {
        return gpu_tile_phased(a->stride, a->dilation) ? dwconv_ncl_tile_kernel<XT, WT, true>
                                                       : dwconv_ncl_tile_kernel<XT, WT, false>;
    }
};

struct gpu_lattice_kernels {
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *) {
        return dwconv_ncl_lattice_kernel<XT, WT>;
    }
};

struct gpu_nlc_kernels {
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *) {
        return dwconv_nlc_kernel<XT, WT>;
    }
};

/* slide's instances: a 16-byte vector of channels a thread, or one (gpu_slide_width). */
template <bool VECTOR> struct gpu_slide_kind {
    template <int XT, int WT, int K> static gpu_kernel_fn at() {
        return dwconv_nlc_slide_kernel<XT, WT, K, VECTOR ? gpu_vec_width<XT>::value : 1>;
    }
};

struct gpu_slide_kernels {
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *a) {
        return gpu_slide_width(a) == 1
                   ? gpu_k_instance<gpu_slide_kind<false>, XT, WT, GPU_SLIDE_MAX_K>::get(a->kernel_size)
                   : gpu_k_instance<gpu_slide_kind<true>, XT, WT, GPU_SLIDE_MAX_K>::get(a->kernel_size);
    }
};

struct gpu_column_kernels {
    template <int XT, int WT> static gpu_kernel_fn instance(const gpu_conv_args *) {
        return dwconv_nlc_column_kernel<XT, WT>;
    }
};

/* F's instance for a's dtypes: the weight dtype is f32 or the dtype itself (the core
 * has checked). */
template <class F> static gpu_kernel_fn gpu_typed_instance(const gpu_conv_args *a) {
    const int same = a->weight_dtype == a->dtype;
    switch (a->dtype) {
    case DWCONV_F16:
        return same ? F::template instance<DWCONV_F16, DWCONV_F16>(a)
                    : F::template instance<DWCONV_F16, DWCONV_F32>(a);
    case DWCONV_BF16:
        return same ? F::template instance<DWCONV_BF16, DWCONV_BF16>(a)
                    : F::template instance<DWCONV_BF16, DWCONV_F32>(a);
    default: return F::template instance<DWCONV_F32, DWCONV_F32>(a);
    }
}

/* Family f's instance for a (NULL if it has none). */
static gpu_kernel_fn gpu_family_instance(int f, const gpu_conv_args *a) {
    switch (f) {
#define GPU_INSTANCE_CASE(id, name, layout, k_min, k_max) \
    case GPU_FAMILY_##id: return gpu_typed_instance<gpu_##name##_kernels>(a);
        GPU_FORWARD_FAMILIES(GPU_INSTANCE_CASE)
#undef GPU_INSTANCE_CASE
    default: return NULL;
    }
}

#endif /* DWCONV_GPU_DISPATCH_CUH */
