/* How a thread takes its share of a block's items: the GPU rule. */
#ifndef UF_CUDA_THREAD_WORK_H
#define UF_CUDA_THREAD_WORK_H

#include "gpu/thread_work_gpu.h"

#endif
