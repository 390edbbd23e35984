/*
 * The contract between src/ and a backend. src/ checks arguments and picks
 * kernels and launch shapes; a backend implements the runtime calls below
 * (backends/<name>/runtime.*) and the device-code layer (<name>/layer.h).
 * Functions here are called with arguments already validated.
 */
#ifndef UF_BACKEND_H
#define UF_BACKEND_H

#include "unifuse.h"
/* UF_THREAD_WORK and UF_THREAD_ITEM(block, per_thread, k, t): how many
 * times a GPU thread's items a thread of this backend takes in a logical
 * block (launchers size blocks by it), and the index of item k of thread t
 * of `block` when every thread takes per_thread items; the items of a block
 * are [block * per_thread * threads, (block + 1) * per_thread * threads)
 * in every backend's order. UF_THREAD_ITEM_IN(block, per_thread, k, t,
 * nthreads) is the same for a kernel that knows its block size as a
 * constant (then a thread's items lie constant strides apart, and GPUs
 * address them with immediate offsets from one pointer). */
#include "thread_work.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel launch: `blocks` logical blocks of `threads` threads. A backend
 * may run fewer physical blocks that loop over the logical ones, each taking
 * the logical blocks b, b + grid, b + 2 grid, ... in that order.
 *
 * group_blocks > 1: logical blocks wait for each other in groups of that
 * many consecutive ones (layer: uf_group_arrive, uf_group_wait). The backend
 * then runs a grid whose blocks are all running at once and hold at least
 * group_blocks blocks, which with the order above lets every group finish;
 * where it cannot (the device holds fewer such blocks at once, or cannot
 * promise it) the launcher returns UF_ERR_LAUNCH without launching, and the
 * caller takes another path. */
typedef struct uf_launch {
    int64_t blocks;
    int threads;
    uf_stream stream;
    int64_t max_grid;     /* physical blocks at most (0: the backend's cap) */
    int64_t group_blocks; /* 0 or 1: independent blocks */
} uf_launch;

/* Largest threads-per-block any backend's kernels are compiled for. */
#define UF_BLOCK_LIMIT 1024

/* The few device properties launch shapes are computed from; cheap to call. */
typedef struct uf_device_limits {
    int warp_size;
    int max_threads_per_block;
    int multiprocessors;
    int max_threads_per_mp; /* threads one multiprocessor holds at once */
} uf_device_limits;

/* Limits of the calling thread's current device. */
uf_status ufb_device_limits(uf_device_limits *limits);
uf_status ufb_device_count(int *count);
uf_status ufb_set_device(int device); /* device already checked against the count */
uf_status ufb_get_device(int *device);
uf_status ufb_stream_device(uf_stream s, int *device);

/* For the length of one public call, the calling thread's current device
 * is the stream's, so that launches, scratch and limits all refer to the
 * device that owns the stream; ufb_scope_leave restores the thread's device
 * and returns `st`, or the restore's failure when `st` is UF_OK. */
typedef struct uf_device_scope {
    int previous;
    int switched;
} uf_device_scope;
uf_status ufb_scope_enter(uf_stream s, uf_device_scope *scope);
uf_status ufb_scope_leave(const uf_device_scope *scope, uf_status st);
uf_status ufb_device_info(uf_device_info *info);
uf_status ufb_malloc(void **ptr, size_t bytes);
uf_status ufb_free(void *ptr);
/* Scratch memory ordered on a stream: usable by work queued after the
 * allocation, released after the work queued before the free. */
uf_status ufb_malloc_async(void **ptr, size_t bytes, uf_stream s);
uf_status ufb_free_async(void *ptr, uf_stream s);
uf_status ufb_memcpy(void *dst, const void *src, size_t bytes, uf_copy_kind kind, uf_stream s);
uf_status ufb_memset(void *dst, int value, size_t bytes, uf_stream s);
uf_status ufb_stream_create(uf_stream *s);
uf_status ufb_stream_destroy(uf_stream s);
uf_status ufb_stream_synchronize(uf_stream s);
uf_status ufb_device_synchronize(void);
uf_status ufb_event_create(uf_event *e);
uf_status ufb_event_destroy(uf_event e);
uf_status ufb_event_record(uf_event e, uf_stream s);
uf_status ufb_event_elapsed_ms(uf_event start, uf_event end, float *ms);

#ifdef __cplusplus
}
#endif

#endif
