/* The HIP device-code layer: the CUDA-to-HIP renames, then the shared GPU
 * layer. */
#ifndef UF_HIP_LAYER_H
#define UF_HIP_LAYER_H

#include "hip/vendor.h"
#include "gpu/layer_gpu.h"

#endif
