/* Everything the shared GPU code needs from CUDA, by the names it uses. */
#ifndef UF_CUDA_VENDOR_H
#define UF_CUDA_VENDOR_H

#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define UF_WARP 32
#define UF_SHFL_XOR(v, mask) __shfl_xor_sync(0xffffffffu, (v), (mask))
#define UF_GPU_BACKEND UF_BACKEND_CUDA

#endif
