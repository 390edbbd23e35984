/*
 * How a CPU thread takes its share of a logical block's items (see
 * backend.h). A CPU "thread" is one turn of a loop on one core: it takes
 * UF_THREAD_WORK times a GPU thread's items, so that the loops over them
 * are long enough for the compiler to vectorise, and takes them
 * consecutively, so that one thread's accesses fill whole cache lines and
 * form one stream for the prefetcher (the GPU's interleaved order puts one
 * thread's units 8 KiB apart, all in one L1 set). Together with the loop
 * changes in kernels/activation_dropout.h: f32 relu forward 28% -> 79% of
 * copy on the 2-core Debian machine, baseline x86-64 (docs/results.md).
 */
#ifndef UF_OPENMP_THREAD_WORK_H
#define UF_OPENMP_THREAD_WORK_H

#define UF_THREAD_WORK 16
#define UF_THREAD_ITEM(block, per_thread, k, t)                                                    \
    UF_THREAD_ITEM_IN(block, per_thread, k, t, UF_NTHREADS)
#define UF_THREAD_ITEM_IN(block, per_thread, k, t, nthreads)                                       \
    ((((int64_t)(block)) * (nthreads) + (t)) * (per_thread) + (k))

/* The same inside a group of `group` threads sharing a row: item k of the
 * group's thread `lane`, consecutive for each thread. */
#define UF_GROUP_ITEM(per_thread, k, lane, group)                                                  \
    ((void)(group), (int64_t)(lane) * (per_thread) + (k))
#define UF_GROUP_ITEMS_INTERLEAVED 0

/* Loops are vectorised by the compiler, across iterations: code may then
 * prefer loops whose results are narrow (more lanes per vector). */
#define UF_VECTORISED_LOOPS 1

/* The softmax kernels with 8-byte accesses too (see thread_work_gpu.h):
 * here a row of element-wide accesses takes the scalar code, which does not
 * vectorise (2-core machine, backward of f16 rows of 1028 and 4100 keys
 * 13 -> 29% of copy, of fp32 rows of 1026 keys 25 -> 37%); and so the CPU
 * tests run the kernels the GPUs take for such rows. -DUF_ACCESS8_KERNELS=0
 * leaves them out. */
#ifndef UF_ACCESS8_KERNELS
#define UF_ACCESS8_KERNELS 1
#endif

#endif
