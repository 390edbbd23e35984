/*
 * unifuse: fused memory-bound kernels for transformer models, one C API for
 * the CUDA, HIP and OpenMP (CPU) builds.
 *
 * Conventions for every function below:
 *  - Every call returns a uf_status; UF_OK is 0. Nothing in the library
 *    aborts, exits or prints.
 *  - Tensor pointers are device pointers of the build's backend (host memory
 *    on the OpenMP build), obtained from uf_malloc or from the caller's own
 *    allocator (cudaMalloc, hipMalloc, a framework's caching allocator).
 *  - A uf_stream is the backend's stream handle: a cudaStream_t on CUDA, a
 *    hipStream_t on HIP, a library object on OpenMP. NULL is the default
 *    stream. Kernels are asynchronous with respect to the host on GPU
 *    backends; on OpenMP they have finished when the call returns.
 *  - When a call returns an error status, it has written no output and
 *    changed no state.
 */
#ifndef UNIFUSE_H
#define UNIFUSE_H

#include "unifuse/core.h"
#include "unifuse/softmax.h"
#include "unifuse/activation.h"
#include "unifuse/epilogue.h"
#include "unifuse/norm.h"
#include "unifuse/attention.h"

#endif /* UNIFUSE_H */
