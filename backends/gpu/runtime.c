/*
 * Runtime glue for the GPU backends, written once with CUDA names; the HIP
 * build reads them through hip/vendor.h's renames. Compiled by the device
 * compiler (nvcc, hipcc) as C++.
 */
#include <stdio.h>
#include <string.h>

#include "layer.h"

static uf_status status_from(cudaError_t err)
{
    switch (err) {
    case cudaSuccess:
        return UF_OK;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
        return UF_ERR_NO_DEVICE;
    case cudaErrorMemoryAllocation:
        return UF_ERR_OUT_OF_MEMORY;
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorNoKernelImageForDevice:
        return UF_ERR_LAUNCH;
    default:
        return UF_ERR_DEVICE;
    }
}

extern "C" uf_status ufb_launch_status(void)
{
    return status_from(cudaGetLastError());
}

static uf_status current_device(int *dev)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        (void)cudaGetLastError(); /* clear the non-sticky error */
        return UF_ERR_NO_DEVICE;
    }
    return status_from(cudaGetDevice(dev));
}

static uf_status attribute(int *value, cudaDeviceAttr attr, int dev)
{
    return status_from(cudaDeviceGetAttribute(value, attr, dev));
}

extern "C" uf_status ufb_launch_grouped(const void *kernel, const uf_launch *l, void **params,
                                        int64_t cap)
{
    /* Blocks that wait for each other need a grid that is resident all at
     * once: the cooperative launch promises it (or fails), and the grid is
     * what the device holds of this kernel, so a group fits when it is no
     * larger. */
    int dev = 0, cooperative = 0, mps = 0, per_mp = 0;
    uf_status st = current_device(&dev);
    if (st == UF_OK)
        st = attribute(&cooperative, cudaDevAttrCooperativeLaunch, dev);
    if (st == UF_OK)
        st = attribute(&mps, cudaDevAttrMultiProcessorCount, dev);
    if (st == UF_OK)
        st = status_from(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_mp, kernel, l->threads, 0));
    if (st != UF_OK)
        return st;
    int64_t grid = (int64_t)per_mp * mps;
    grid = grid < cap ? grid : cap;
    if (!cooperative || grid < l->group_blocks)
        return UF_ERR_LAUNCH;
    grid = grid < l->blocks ? grid : l->blocks;
    return status_from(cudaLaunchCooperativeKernel(kernel, dim3((unsigned)grid),
                                                   dim3((unsigned)l->threads), params, 0,
                                                   (cudaStream_t)l->stream));
}

extern "C" uf_status ufb_device_limits(uf_device_limits *limits)
{
    int dev = 0;
    uf_status st = current_device(&dev);
    if (st == UF_OK)
        st = attribute(&limits->warp_size, cudaDevAttrWarpSize, dev);
    if (st == UF_OK)
        st = attribute(&limits->max_threads_per_block, cudaDevAttrMaxThreadsPerBlock, dev);
    if (st == UF_OK)
        st = attribute(&limits->multiprocessors, cudaDevAttrMultiProcessorCount, dev);
    if (st == UF_OK)
        st = attribute(&limits->max_threads_per_mp, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
    if (st == UF_OK && limits->max_threads_per_block > UF_MAX_THREADS)
        limits->max_threads_per_block = UF_MAX_THREADS;
    return st;
}

extern "C" uf_status ufb_device_count(int *count)
{
    /* No device or no driver is a count of 0, not a failure. */
    if (cudaGetDeviceCount(count) != cudaSuccess) {
        (void)cudaGetLastError();
        *count = 0;
    }
    return UF_OK;
}

extern "C" uf_status ufb_set_device(int device)
{
    return status_from(cudaSetDevice(device));
}

extern "C" uf_status ufb_get_device(int *device)
{
    return current_device(device);
}

extern "C" uf_status ufb_stream_device(uf_stream s, int *device)
{
    if (!s)
        return current_device(device);
    return status_from(cudaStreamGetDevice((cudaStream_t)s, device));
}

/* The current device is the vendor runtime's per-thread state, so switching
 * it here is invisible to other threads; it is switched back on leaving. */
extern "C" uf_status ufb_scope_enter(uf_stream s, uf_device_scope *scope)
{
    scope->previous = 0;
    scope->switched = 0;
    if (!s)
        return UF_OK; /* the default stream of the current device */
    int dev = 0, cur = 0;
    uf_status st = ufb_stream_device(s, &dev);
    if (st == UF_OK)
        st = current_device(&cur);
    if (st == UF_OK && dev != cur) {
        st = status_from(cudaSetDevice(dev));
        scope->previous = cur;
        scope->switched = st == UF_OK;
    }
    return st;
}

extern "C" uf_status ufb_scope_leave(const uf_device_scope *scope, uf_status st)
{
    if (!scope->switched)
        return st;
    const uf_status restored = status_from(cudaSetDevice(scope->previous));
    return st != UF_OK ? st : restored;
}

extern "C" uf_status ufb_device_info(uf_device_info *info)
{
    int dev = 0;
    uf_device_limits lim;
    uf_status st = ufb_device_limits(&lim);
    if (st == UF_OK)
        st = current_device(&dev);
    cudaDeviceProp prop;
    if (st == UF_OK)
        st = status_from(cudaGetDeviceProperties(&prop, dev));
    if (st != UF_OK)
        return st;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->backend = UF_GPU_BACKEND;
    info->multiprocessors = lim.multiprocessors;
    info->warp_size = lim.warp_size;
    info->max_threads_per_block = lim.max_threads_per_block;
    info->shared_memory_per_block = prop.sharedMemPerBlock;
    info->total_memory = prop.totalGlobalMem;
    return UF_OK;
}

extern "C" uf_status ufb_malloc(void **ptr, size_t bytes)
{
    return status_from(cudaMalloc(ptr, bytes));
}

extern "C" uf_status ufb_free(void *ptr)
{
    return status_from(cudaFree(ptr));
}

extern "C" uf_status ufb_malloc_async(void **ptr, size_t bytes, uf_stream s)
{
    return status_from(cudaMallocAsync(ptr, bytes, (cudaStream_t)s));
}

extern "C" uf_status ufb_free_async(void *ptr, uf_stream s)
{
    return status_from(cudaFreeAsync(ptr, (cudaStream_t)s));
}

extern "C" uf_status ufb_memcpy(void *dst, const void *src, size_t bytes, uf_copy_kind kind,
                                uf_stream s)
{
    cudaStream_t st = (cudaStream_t)s;
    switch (kind) {
    case UF_DEVICE_TO_DEVICE:
        return status_from(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st));
    case UF_HOST_TO_DEVICE:
    case UF_DEVICE_TO_HOST: {
        /* Pageable host memory: finish before returning, as documented. */
        const cudaMemcpyKind k =
            kind == UF_HOST_TO_DEVICE ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        uf_status r = status_from(cudaMemcpyAsync(dst, src, bytes, k, st));
        return r == UF_OK ? status_from(cudaStreamSynchronize(st)) : r;
    }
    case UF_HOST_TO_HOST: {
        uf_status r = status_from(cudaStreamSynchronize(st));
        if (r == UF_OK)
            memmove(dst, src, bytes);
        return r;
    }
    }
    return UF_ERR_BAD_ARGUMENT;
}

extern "C" uf_status ufb_memset(void *dst, int value, size_t bytes, uf_stream s)
{
    return status_from(cudaMemsetAsync(dst, value, bytes, (cudaStream_t)s));
}

extern "C" uf_status ufb_stream_create(uf_stream *s)
{
    cudaStream_t st;
    uf_status r = status_from(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    if (r == UF_OK)
        *s = (uf_stream)st;
    return r;
}

extern "C" uf_status ufb_stream_destroy(uf_stream s)
{
    return status_from(cudaStreamDestroy((cudaStream_t)s));
}

extern "C" uf_status ufb_stream_synchronize(uf_stream s)
{
    return status_from(cudaStreamSynchronize((cudaStream_t)s));
}

extern "C" uf_status ufb_device_synchronize(void)
{
    return status_from(cudaDeviceSynchronize());
}

extern "C" uf_status ufb_event_create(uf_event *e)
{
    cudaEvent_t ev;
    uf_status r = status_from(cudaEventCreate(&ev));
    if (r == UF_OK)
        *e = (uf_event)ev;
    return r;
}

extern "C" uf_status ufb_event_destroy(uf_event e)
{
    return status_from(cudaEventDestroy((cudaEvent_t)e));
}

extern "C" uf_status ufb_event_record(uf_event e, uf_stream s)
{
    return status_from(cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s));
}

extern "C" uf_status ufb_event_elapsed_ms(uf_event start, uf_event end, float *ms)
{
    uf_status r = status_from(cudaEventSynchronize((cudaEvent_t)end));
    return r == UF_OK ? status_from(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end))
                      : r;
}
