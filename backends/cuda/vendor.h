/* Everything the shared GPU code needs from CUDA, by the names it uses. */
#ifndef UF_CUDA_VENDOR_H
#define UF_CUDA_VENDOR_H

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <string.h>

#define UF_WARP 32
#define UF_SHFL_XOR(v, mask) __shfl_xor_sync(0xffffffffu, (v), (mask))
#define UF_GPU_BACKEND UF_BACKEND_CUDA

/* Two floats to two bf16 in one instruction (sm_80 and later). */
static __device__ __forceinline__ unsigned uf_cuda_f32x2_to_bf16x2(float lo, float hi)
{
    const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);
    unsigned w;
    memcpy(&w, &b, sizeof w);
    return w;
}
#define UF_VENDOR_F32X2_TO_BF16X2(lo, hi) uf_cuda_f32x2_to_bf16x2((lo), (hi))

#endif
