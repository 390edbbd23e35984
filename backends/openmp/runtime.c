/*
 * Runtime glue for the OpenMP backend: "device" memory is host memory,
 * kernels run to completion inside the call, so streams are in-order by
 * construction and events are wall-clock timestamps.
 */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "layer.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

struct uf_stream_s {
    int unused; /* streams carry no state: work is done when a call returns */
};

struct uf_event_s {
    double seconds;
};

/* Allocations are aligned to a cache line so that 16-byte vectors apply. */
#define UF_CPU_ALIGN 64

/* What this CPU can run (cpu_level.h): 0, 3 or 4. The copies are built
 * for x86-64 with gcc or clang only; elsewhere every launch runs the
 * baseline compile and the answer does not matter. */
static int cpu_level_supported(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    /* F16C by cpuid: clang 14 does not know it as a feature name. */
    unsigned eax, ebx, ecx, edx;
    const int f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
    const int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                   __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && f16c;
    const int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512cd");
    return v4 ? 4 : v3 ? 3 : 0;
#else
    return 0;
#endif
}

/* UF_CPU_LEVEL=base|v3|v4 lowers the level (never raises it). */
static int cpu_level_allowed(void)
{
    const char *e = getenv("UF_CPU_LEVEL");
    if (!e || !*e)
        return 4;
    if (strcmp(e, "v4") == 0)
        return 4;
    if (strcmp(e, "v3") == 0)
        return 3;
    return 0; /* base, or anything unknown: the safe choice */
}

int ufb_cpu_level(void)
{
    /* Computed once; a race between first callers stores the same value. */
    static _Atomic int level = -1;
    int l = level;
    if (l < 0) {
        const int s = cpu_level_supported(), a = cpu_level_allowed();
        l = s < a ? s : a;
        level = l;
    }
    return l;
}

uf_status ufb_cpu_grid(const uf_launch *l, uf_kdims *d)
{
    const int team = omp_get_max_threads();
    d->team = team;
    if (l->group_blocks > 1) {
        /* Blocks that wait for each other need threads that all run: a
         * nested region, or one that the runtime may cut to fewer threads,
         * cannot promise that. */
        if (omp_in_parallel() || omp_get_dynamic() || omp_get_thread_limit() < team ||
            team < l->group_blocks)
            return UF_ERR_LAUNCH;
        d->chunk = 1;
        return UF_OK;
    }
    const int64_t share = (l->blocks + team - 1) / team;
    d->chunk = share > 1 ? share : 1;
    return UF_OK;
}

void ufb_cpu_pause(void)
{
    sched_yield();
}

uf_status ufb_device_limits(uf_device_limits *limits)
{
    limits->warp_size = UF_WARP;
    limits->max_threads_per_block = UF_MAX_THREADS;
    limits->multiprocessors = omp_get_max_threads();
    limits->max_threads_per_mp = UF_MAX_THREADS; /* one block per OpenMP thread */
    return UF_OK;
}

uf_status ufb_device_count(int *count)
{
    *count = 1;
    return UF_OK;
}

uf_status ufb_set_device(int device)
{
    (void)device; /* always 0 here: checked against the count */
    return UF_OK;
}

uf_status ufb_get_device(int *device)
{
    *device = 0;
    return UF_OK;
}

uf_status ufb_stream_device(uf_stream s, int *device)
{
    (void)s;
    *device = 0;
    return UF_OK;
}

uf_status ufb_scope_enter(uf_stream s, uf_device_scope *scope)
{
    (void)s;
    scope->previous = 0;
    scope->switched = 0;
    return UF_OK;
}

uf_status ufb_scope_leave(const uf_device_scope *scope, uf_status st)
{
    (void)scope;
    return st;
}

uf_status ufb_device_info(uf_device_info *info)
{
    uf_device_limits lim;
    ufb_device_limits(&lim);
    memset(info, 0, sizeof *info);
    static const char *const level_names[] = {"x86-64 baseline", "", "", "x86-64-v3", "x86-64-v4"};
    snprintf(info->name, sizeof info->name, "CPU (OpenMP, %d threads, emulated warp %d%s%s)",
             lim.multiprocessors, lim.warp_size, UF_CPU_COPIES_BUILT ? ", kernels for " : "",
             UF_CPU_COPIES_BUILT ? level_names[ufb_cpu_level()] : "");
    info->backend = UF_BACKEND_CPU;
    info->multiprocessors = lim.multiprocessors;
    info->warp_size = lim.warp_size;
    info->max_threads_per_block = lim.max_threads_per_block;
    info->shared_memory_per_block = 48 * 1024; /* what kernels may declare, as on a GPU */
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    info->total_memory = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    return UF_OK;
}

uf_status ufb_malloc(void **ptr, size_t bytes)
{
    const size_t rounded = (bytes + UF_CPU_ALIGN - 1) / UF_CPU_ALIGN * UF_CPU_ALIGN;
    if (rounded < bytes)
        return UF_ERR_OUT_OF_MEMORY;
    void *p = aligned_alloc(UF_CPU_ALIGN, rounded);
    if (!p)
        return UF_ERR_OUT_OF_MEMORY;
    *ptr = p;
    return UF_OK;
}

uf_status ufb_free(void *ptr)
{
    free(ptr);
    return UF_OK;
}

uf_status ufb_malloc_async(void **ptr, size_t bytes, uf_stream s)
{
    (void)s;
    return ufb_malloc(ptr, bytes);
}

uf_status ufb_free_async(void *ptr, uf_stream s)
{
    (void)s;
    return ufb_free(ptr);
}

uf_status ufb_memcpy(void *dst, const void *src, size_t bytes, uf_copy_kind kind, uf_stream s)
{
    (void)kind;
    (void)s;
    memmove(dst, src, bytes);
    return UF_OK;
}

uf_status ufb_memset(void *dst, int value, size_t bytes, uf_stream s)
{
    (void)s;
    memset(dst, value, bytes);
    return UF_OK;
}

uf_status ufb_stream_create(uf_stream *s)
{
    uf_stream p = (uf_stream)calloc(1, sizeof *p);
    if (!p)
        return UF_ERR_OUT_OF_MEMORY;
    *s = p;
    return UF_OK;
}

uf_status ufb_stream_destroy(uf_stream s)
{
    free(s);
    return UF_OK;
}

uf_status ufb_stream_synchronize(uf_stream s)
{
    (void)s;
    return UF_OK;
}

uf_status ufb_device_synchronize(void)
{
    return UF_OK;
}

uf_status ufb_event_create(uf_event *e)
{
    uf_event p = (uf_event)calloc(1, sizeof *p);
    if (!p)
        return UF_ERR_OUT_OF_MEMORY;
    *e = p;
    return UF_OK;
}

uf_status ufb_event_destroy(uf_event e)
{
    free(e);
    return UF_OK;
}

uf_status ufb_event_record(uf_event e, uf_stream s)
{
    (void)s;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    e->seconds = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return UF_OK;
}

uf_status ufb_event_elapsed_ms(uf_event start, uf_event end, float *ms)
{
    *ms = (float)((end->seconds - start->seconds) * 1e3);
    return UF_OK;
}
