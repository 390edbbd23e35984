/*
 * Everything the shared GPU code needs from HIP, under the CUDA names it is
 * written with. This header is the whole CUDA-to-HIP difference.
 */
#ifndef UF_HIP_VENDOR_H
#define UF_HIP_VENDOR_H

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

/* 64 on CDNA (gfx90a, gfx940), 32 on RDNA (gfx1030): fixed per target. The
 * host pass sees the compiler's default and never runs device code. */
#define UF_WARP __AMDGCN_WAVEFRONT_SIZE
#define UF_SHFL_XOR(v, mask) __shfl_xor((v), (mask))
/* Value of `lane` within the caller's group of 32 lanes (half a wave64). */
#define UF_SHFL(v, lane) __shfl((v), (lane), 32)
#define UF_GPU_BACKEND UF_BACKEND_HIP
/* Most threads per block; HIP's second bound counts waves per execution
 * unit, not blocks, so the block count is not passed on. */
#define UF_VENDOR_BOUNDS(threads, blocks) __launch_bounds__(threads)
/* A short sleep between polls of a flag another block sets. */
#if defined(__HIP_DEVICE_COMPILE__)
#define UF_VENDOR_PAUSE() __builtin_amdgcn_s_sleep(1)
#endif
/* 1 / x to within an ulp: v_rcp_f32, without IEEE division's fix-up. */
#define UF_VENDOR_RCP(x) __builtin_amdgcn_rcpf(x)

/* Products clang does not contract into an FMA: HIP's __fmul_rn is a plain
 * product that it does fuse (checked in gfx90a assembly), so the product
 * is made where contraction is off. */
static __device__ __forceinline__ float uf_hip_mul_rn_f32(float a, float b)
{
#pragma clang fp contract(off)
    return a * b;
}
static __device__ __forceinline__ double uf_hip_mul_rn_f64(double a, double b)
{
#pragma clang fp contract(off)
    return a * b;
}
#define UF_VENDOR_MUL_RN_F32(a, b) uf_hip_mul_rn_f32((a), (b))
#define UF_VENDOR_MUL_RN_F64(a, b) uf_hip_mul_rn_f64((a), (b))

#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaErrorInvalidDevice hipErrorInvalidDevice
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaErrorInvalidConfiguration hipErrorInvalidConfiguration
#define cudaErrorLaunchOutOfResources hipErrorLaunchOutOfResources
#define cudaErrorInvalidDeviceFunction hipErrorInvalidDeviceFunction
#define cudaErrorNoKernelImageForDevice hipErrorNoBinaryForGpu
#define cudaGetLastError hipGetLastError

#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDevice hipGetDevice
#define cudaSetDevice hipSetDevice
#define cudaDeviceAttr hipDeviceAttribute_t
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrWarpSize hipDeviceAttributeWarpSize
#define cudaDevAttrMaxThreadsPerBlock hipDeviceAttributeMaxThreadsPerBlock
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDevAttrMaxThreadsPerMultiProcessor hipDeviceAttributeMaxThreadsPerMultiProcessor
#define cudaDevAttrCooperativeLaunch hipDeviceAttributeCooperativeLaunch
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaLaunchCooperativeKernel hipLaunchCooperativeKernel
#define cudaDeviceProp hipDeviceProp_t
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceSynchronize hipDeviceSynchronize

#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMallocAsync hipMallocAsync
#define cudaFreeAsync hipFreeAsync
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyKind hipMemcpyKind
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice

#define cudaStream_t hipStream_t
/* HIP 5.x reports a stream's device by return value, -1 for a bad handle. */
static inline hipError_t uf_hip_stream_device(hipStream_t s, int *device)
{
    const int d = hipGetStreamDeviceId(s);
    if (d < 0)
        return hipErrorInvalidHandle;
    *device = d;
    return hipSuccess;
}
#define cudaStreamGetDevice uf_hip_stream_device
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize

#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime

#endif
