/*
 * How a GPU thread takes its share of a logical block's items (see
 * backend.h): few items each, interleaved by thread, so that neighbouring
 * threads of a warp touch neighbouring items and their accesses coalesce.
 */
#ifndef UF_THREAD_WORK_GPU_H
#define UF_THREAD_WORK_GPU_H

#define UF_THREAD_WORK 1
#define UF_THREAD_ITEM(block, per_thread, k, t)                                                    \
    UF_THREAD_ITEM_IN(block, per_thread, k, t, UF_NTHREADS)
#define UF_THREAD_ITEM_IN(block, per_thread, k, t, nthreads)                                       \
    ((((int64_t)(block)) * (per_thread) + (k)) * (nthreads) + (t))

/* The same inside a group of `group` threads sharing a row: item k of the
 * group's thread `lane`. */
#define UF_GROUP_ITEM(per_thread, k, lane, group) ((int64_t)(k) * (group) + (lane))
/* 1: a group's items interleave by lane (host code sizes groups by it). */
#define UF_GROUP_ITEMS_INTERLEAVED 1

/* A thread's loops are unrolled into scalar registers, not vectorised. */
#define UF_VECTORISED_LOOPS 0

/* 1: the softmax kernels are built with 8-byte accesses too
 * (instantiate_access8.h), for rows whose length fits no 16-byte access:
 * element-wide, such rows ran at a third to a half of the copy bandwidth
 * of their 16-byte neighbours (docs/results.md, 2026-12-05). */
#define UF_ACCESS8_KERNELS 1

#endif
