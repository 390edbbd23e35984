/*
 * How a GPU thread takes its share of a logical block's items (see
 * backend.h): few items each, interleaved by thread, so that neighbouring
 * threads of a warp touch neighbouring items and their accesses coalesce.
 */
#ifndef UF_THREAD_WORK_GPU_H
#define UF_THREAD_WORK_GPU_H

#define UF_THREAD_WORK 1
#define UF_THREAD_ITEM(block, per_thread, k, t)                                                    \
    ((((int64_t)(block)) * (per_thread) + (k)) * UF_NTHREADS + (t))

/* A thread's loops are unrolled into scalar registers, not vectorised. */
#define UF_VECTORISED_LOOPS 0

#endif
