/*
 * Whether a device can run this module's code, decided before anything is launched:
 * a GPU whose architecture has no machine code in the module and no PTX it can
 * compile is reported unusable (dwconv info, AUTO skips it) instead of failing at its
 * first launch. DWCONV_GPU_ARCHS is the list the module was built for, from
 * configure: CUDA compute capabilities ("75 80 86 89 90"; the last one also as PTX),
 * HIP gfx targets ("gfx90a gfx1030"). Included by gpu_module.cu.
 */
#ifndef DWCONV_GPU_DEVICE_CHECK_CUH
#define DWCONV_GPU_DEVICE_CHECK_CUH

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DWCONV_GPU_IS_HIP
/* CUDA: machine code for sm_XY runs on X.Z with Z >= Y; PTX for compute_N (the last
 * architecture listed) is compiled by the driver for any N' >= N. */
static int gpu_arch_runs(const char *archs, int major, int minor) {
    const int cc = major * 10 + minor;
    int last = -1;
    for (const char *at = archs; *at;) {
        char *end;
        long arch = strtol(at, &end, 10);
        if (end == at) {
            at++;
            continue;
        }
        at = end;
        if (arch / 10 == major && arch % 10 <= minor) return 1;
        last = (int)arch;
    }
    return last >= 0 && cc >= last;
}

/* The device's compute capability (also gpu_module.cu's silu gate). */
static cudaError_t gpu_compute_capability(int device, int *major, int *minor) {
    cudaError_t err = cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device);
    return err == cudaSuccess ? cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device) : err;
}

static dwconv_status gpu_device_check(int device, char *msg) {
    if (!*DWCONV_GPU_ARCHS) return DWCONV_SUCCESS;
    int major = 0, minor = 0;
    const cudaError_t err = gpu_compute_capability(device, &major, &minor);
    if (err != cudaSuccess) return gpu_fail(err, "cudaDeviceGetAttribute", msg);
    if (gpu_arch_runs(DWCONV_GPU_ARCHS, major, minor)) return DWCONV_SUCCESS;
    snprintf(msg, DWCONV_MSG_SIZE, "compute capability %d.%d has no code in this module "
             "(built for %s, PTX for the last): rebuild with CUDA_ARCHS=\"%d%d\"", major, minor,
             DWCONV_GPU_ARCHS, major, minor);
    return DWCONV_ERROR_BACKEND_UNAVAILABLE;
}
#else
/* HIP: code objects are per gfx target (its name up to the first ':'). */
static dwconv_status gpu_device_check(int device, char *msg) {
    if (!*DWCONV_GPU_ARCHS) return DWCONV_SUCCESS;
    cudaDeviceProp prop;
    cudaError_t err = cudaGetDeviceProperties(&prop, device);
    if (err != cudaSuccess) return gpu_fail(err, "cudaGetDeviceProperties", msg);
    char target[64];
    snprintf(target, sizeof target, "%.*s", (int)strcspn(prop.gcnArchName, ":"), prop.gcnArchName);
    const char *archs = DWCONV_GPU_ARCHS;
    const size_t n = strlen(target);
    for (const char *at = strstr(archs, target); n && at; at = strstr(at + 1, target))
        if ((at == archs || at[-1] == ' ') && (at[n] == '\0' || at[n] == ' '))
            return DWCONV_SUCCESS;
    snprintf(msg, DWCONV_MSG_SIZE, "%s has no code in this module (built for %s): rebuild "
             "with HIP_ARCHS=\"%s\"", target, DWCONV_GPU_ARCHS, target);
    return DWCONV_ERROR_BACKEND_UNAVAILABLE;
}
#endif

#endif /* DWCONV_GPU_DEVICE_CHECK_CUH */
