/* The CUDA device-code layer: vendor headers and the warp, then the shared
 * GPU layer. */
#ifndef UF_CUDA_LAYER_H
#define UF_CUDA_LAYER_H

#include "cuda/vendor.h"
#include "gpu/layer_gpu.h"

#endif
