/*
 * The thin layer that lets hipcc compile the CUDA module source (src/cuda/) unchanged:
 * CUDA runtime names mapped to HIP's. Only names, never logic: the kernels and the
 * host code are the ones in src/cuda/.
 */
#ifndef DWCONV_HIP_COMPAT_H
#define DWCONV_HIP_COMPAT_H

#include <hip/hip_runtime.h>

#define DWCONV_GPU_NAME "hip"
#define DWCONV_GPU_RUNTIME "HIP"
#define DWCONV_GPU_IS_HIP 1
/* HIP's null stream is its legacy-like default (it synchronises with other streams) */
#define DWCONV_GPU_DEFAULT_STREAM ((hipStream_t)0)
/* ROCm 5.x names the pointer kind memoryType and flags managed memory apart;
 * CUDA and ROCm 6 name it type, with a managed kind. */
#if HIP_VERSION_MAJOR >= 6
#define DWCONV_PTR_TYPE(attr) ((attr).type)
#define DWCONV_PTR_MANAGED(attr) ((attr).type == hipMemoryTypeManaged)
#else
#define DWCONV_PTR_TYPE(attr) ((attr).memoryType)
#define DWCONV_PTR_MANAGED(attr) ((attr).isManaged)
#endif

#define cudaDeviceProp hipDeviceProp_t
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaError_t hipError_t
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEvent_t hipEvent_t
#define cudaFree hipFree
#define cudaFreeHost hipHostFree
#define cudaHostAlloc hipHostMalloc
#define cudaHostAllocMapped hipHostMallocMapped
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaLaunchKernel hipLaunchKernel
#define cudaMalloc hipMalloc
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyKind hipMemcpyKind
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemoryTypeDevice hipMemoryTypeDevice
#define cudaPointerAttributes hipPointerAttribute_t
#define cudaPointerGetAttributes hipPointerGetAttributes
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaSetDevice hipSetDevice
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStream_t hipStream_t
#define cudaSuccess hipSuccess

#endif /* DWCONV_HIP_COMPAT_H */
