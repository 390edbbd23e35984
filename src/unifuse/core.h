/*
 * unifuse core: status codes, dtypes, version, and the runtime surface
 * (memory, streams, events, device information). Part of <unifuse.h>; the
 * conventions stated there hold here.
 */
#ifndef UNIFUSE_CORE_H
#define UNIFUSE_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UF_VERSION_MAJOR 0
#define UF_VERSION_MINOR 1
#define UF_VERSION_PATCH 0

/* Largest number of dimensions a tensor argument may have. */
#define UF_MAX_DIMS 8

typedef enum uf_status {
    UF_OK = 0,
    UF_ERR_NULL_POINTER = 1, /* a required pointer is NULL while its tensor is not empty */
    UF_ERR_BAD_DTYPE = 2,    /* a dtype the call does not accept */
    UF_ERR_BAD_SHAPE = 3,    /* ndim out of range, negative extent, mask that does not broadcast */
    UF_ERR_BAD_VALUE = 4,    /* a scalar argument out of its domain (e.g. non-finite scale) */
    UF_ERR_OVERFLOW = 5,     /* element or byte count does not fit in 64 bits / size_t */
    UF_ERR_ALIAS = 6,        /* buffers overlap in a way the call does not allow */
    UF_ERR_NO_DEVICE = 7,    /* the backend found no usable device */
    UF_ERR_OUT_OF_MEMORY = 8,
    UF_ERR_LAUNCH = 9,       /* a kernel could not be launched */
    UF_ERR_DEVICE = 10,      /* any other runtime failure reported by the backend */
    UF_ERR_BAD_ARGUMENT = 11 /* any other invalid argument (unknown enum value, bad handle) */
} uf_status;

typedef enum uf_dtype {
    UF_DTYPE_NONE = 0, /* "no tensor" (e.g. no mask) */
    UF_F32 = 1,
    UF_F16 = 2,  /* IEEE binary16 */
    UF_BF16 = 3, /* bfloat16 */
    UF_F64 = 4,
    UF_BOOL = 5 /* one byte per element, nonzero is true */
} uf_dtype;

/* Bytes per element of a dtype, 0 for UF_DTYPE_NONE or an unknown value. */
size_t uf_dtype_size(uf_dtype dtype);

/* A short English description of a status code (never NULL). */
const char *uf_status_string(uf_status status);

/* The library version as "MAJOR.MINOR.PATCH". */
const char *uf_version(void);

/* ---------------------------------------------------------------------- */
/* Runtime surface: memory, streams, events, device information.           */
/* ---------------------------------------------------------------------- */

typedef struct uf_stream_s *uf_stream;
typedef struct uf_event_s *uf_event;

/* Which backend the library was built for; UF_BACKEND_CPU is the OpenMP
 * build. */
typedef enum uf_backend { UF_BACKEND_CPU = 1, UF_BACKEND_CUDA = 2, UF_BACKEND_HIP = 3 } uf_backend;

typedef enum uf_copy_kind {
    UF_HOST_TO_DEVICE = 1,
    UF_DEVICE_TO_HOST = 2,
    UF_DEVICE_TO_DEVICE = 3,
    UF_HOST_TO_HOST = 4
} uf_copy_kind;

typedef struct uf_device_info {
    char name[256];                 /* device name as the backend reports it */
    uf_backend backend;             /* which backend this library was built for */
    int multiprocessors;            /* SMs / CUs; CPU: OpenMP threads available */
    int warp_size;                  /* threads per warp (wavefront); CPU: the emulated width */
    int max_threads_per_block;      /* the most threads a unifuse block may have */
    size_t shared_memory_per_block; /* bytes */
    size_t total_memory; /* bytes of device memory (CPU: physical memory, 0 if unknown) */
} uf_device_info;

/* Name of a backend ("openmp", "cuda", "hip"); "unknown" otherwise. */
const char *uf_backend_name(uf_backend backend);

/* Describes the current device. UF_ERR_NO_DEVICE when the GPU backend finds
 * none (the OpenMP backend always has one). */
uf_status uf_get_device_info(uf_device_info *info);

/* Devices. Each host thread has a current device (0 until it chooses
 * another), as in the vendor runtimes; it is the one uf_malloc,
 * uf_stream_create, uf_event_create, uf_get_device_info,
 * uf_device_synchronize and the default stream (NULL) refer to. A kernel
 * call or copy given a stream runs on that stream's device, whatever the
 * calling thread's current device, and leaves the thread's current device
 * as it found it; the tensors passed must live on that device. The OpenMP
 * backend has one device, 0. */

/* Number of devices the backend sees (0 on a GPU build without a device). */
uf_status uf_device_count(int *count);
/* Makes `device` the calling thread's current device. UF_ERR_NO_DEVICE for
 * an index outside [0, count). */
uf_status uf_set_device(int device);
/* The calling thread's current device. */
uf_status uf_get_device(int *device);
/* The device `stream` belongs to; the current device for NULL. */
uf_status uf_stream_device(uf_stream stream, int *device);

/* Device memory. uf_malloc of 0 bytes sets *ptr to NULL and succeeds;
 * uf_free(NULL) succeeds. */
uf_status uf_malloc(void **ptr, size_t bytes);
uf_status uf_free(void *ptr);

/* Copies `bytes` in the order of `stream`. Host memory need not be pinned;
 * copies that touch pageable host memory return when the copy is done. */
uf_status uf_memcpy(void *dst, const void *src, size_t bytes, uf_copy_kind kind, uf_stream stream);

/* Sets `bytes` of device memory to the byte `value`, in stream order. */
uf_status uf_memset(void *dst, int value, size_t bytes, uf_stream stream);

uf_status uf_stream_create(uf_stream *stream);
uf_status uf_stream_destroy(uf_stream stream);
/* Waits for all work on the stream; reports asynchronous faults as a status. */
uf_status uf_stream_synchronize(uf_stream stream);
/* Waits for all work on the current device. */
uf_status uf_device_synchronize(void);

/* Timing events (wall clock on OpenMP, where work is synchronous). */
uf_status uf_event_create(uf_event *event);
uf_status uf_event_destroy(uf_event event);
uf_status uf_event_record(uf_event event, uf_stream stream);
/* Milliseconds between two recorded events; waits for `end` to complete. */
uf_status uf_event_elapsed_ms(uf_event start, uf_event end, float *ms);

/* Host-side element conversion between UF_F32, UF_F16, UF_BF16 and UF_F64
 * (round to nearest even, NaN and infinities kept). `dst` and `src` are host
 * pointers to `count` elements; they must not overlap unless identical with
 * the same element size. */
uf_status uf_convert_host(void *dst, uf_dtype dst_dtype, const void *src, uf_dtype src_dtype,
                          size_t count);

#ifdef __cplusplus
}
#endif

#endif /* UNIFUSE_CORE_H */
