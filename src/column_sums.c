#include "column_sums.h"

#include <stdint.h>

#include "checks.h"
#include "kernels/activation_args.h"

typedef uf_status (*uf_colsum_launcher)(const uf_launch *, const uf_colsum_args *);
static const uf_colsum_launcher reducers[4] = {
    uf_colsum_reduce_f32_v1_launch, uf_colsum_reduce_f16_v1_launch, uf_colsum_reduce_bf16_v1_launch,
    uf_colsum_reduce_f64_v1_launch};

uf_status uf_colsum_begin(uf_colsum_args *a, uf_dtype dtype, uf_stream stream)
{
    const size_t acc = dtype == UF_F64 ? 8 : 4;
    size_t per_chunk = 0;
    uf_status st = uf_byte_count(a->cols, 2 * acc, &per_chunk);
    if (st != UF_OK)
        return st;
    if (a->nchunks > 0 && per_chunk > SIZE_MAX / (size_t)a->nchunks)
        return UF_ERR_OVERFLOW;
    void *p = NULL;
    st = ufb_malloc_async(&p, per_chunk * (size_t)a->nchunks, stream);
    a->partial = p;
    return st;
}

uf_status uf_colsum_finish(uf_colsum_args *a, uf_dtype dtype, uf_status st, uf_stream stream)
{
    if (st == UF_OK) {
        const int64_t col_blocks = (a->cols + UF_COLSUM_COLS - 1) / UF_COLSUM_COLS;
        const uf_launch l = {2 * col_blocks, UF_COLSUM_THREADS, stream, 0, 0};
        st = reducers[dtype - 1](&l, a);
    }
    const uf_status freed = ufb_free_async((void *)a->partial, stream);
    return st != UF_OK ? st : freed;
}

/* Blocks of UF_COLSUM_THREADS a multiprocessor holds at once, as a
 * fraction of its thread limit: the epilogue backward's kernels are bounded
 * to 2 blocks of 256 threads (128 registers a thread; kernels/epilogue_args.h),
 * a quarter of the threads on current GPUs. The grid is one such wave:
 * more chunks than the device holds only add partial sums to write and
 * read back, and twice as many blocks (two waves) cost the H100's epilogue
 * backward 4-10 points of copy (16-bit 69-74 -> 76-81%, fp32 80-86 ->
 * 85-90; the norm's column pass, uf_norm_cols, unchanged; docs/results.md,
 * 2026-12-07 night). */
#define UF_COLSUM_OCCUPANCY_DIV 4
/* A pass without column sums (the epilogue forward) takes twice the blocks
 * that the thread limit allows, for load balance: measured better than as
 * many as the registers allow (86% of copy against 79%, f32
 * relu(x + b) * s, H200). */
#define UF_COLSUM_OVERSUBSCRIBE 2

uf_status uf_colsum_plan(int64_t rows, int64_t cols, int sums, int *tpr, int64_t *col_tiles,
                         int64_t *chunk_rows, int64_t *nchunks, uf_launch *l)
{
    uf_device_limits lim;
    const uf_status st = ufb_device_limits(&lim);
    if (st != UF_OK)
        return st;
    const int64_t units = (cols + UF_ACT_UNIT - 1) / UF_ACT_UNIT;
    int t = 1;
    while (t < units && t < UF_COLSUM_THREADS)
        t *= 2;
    *tpr = t;
    *col_tiles = (units + t - 1) / t;
    const int64_t slots = UF_COLSUM_THREADS / t;
    const int by_threads = lim.max_threads_per_mp / UF_COLSUM_THREADS;
    const int per_mp =
        sums ? by_threads / UF_COLSUM_OCCUPANCY_DIV : by_threads * UF_COLSUM_OVERSUBSCRIBE;
    const int64_t target = (int64_t)lim.multiprocessors * (per_mp > 0 ? per_mp : 1);
    int64_t chunks = target / *col_tiles;
    chunks = chunks < 1 ? 1 : chunks;
    const int64_t per_chunk = (rows + chunks - 1) / chunks;
    *chunk_rows = (per_chunk + slots - 1) / slots * slots;
    *nchunks = (rows + *chunk_rows - 1) / *chunk_rows;
    l->blocks = *nchunks * *col_tiles;
    l->threads = UF_COLSUM_THREADS;
    return UF_OK;
}
