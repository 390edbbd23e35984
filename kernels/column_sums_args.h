/*
 * Deterministic sums over rows, for backward passes that reduce a gradient
 * over the rows of [rows, cols] (epilogue dbias/dscale, norm dweight/dbias)
 * without atomics: each row chunk writes its column sums to `partial`
 * ([nchunks][2][cols], compute type), then uf_colsum_reduce adds the chunks
 * in chunk order and stores out[0] and out[1] (either may be NULL).
 */
#ifndef UF_COLUMN_SUMS_ARGS_H
#define UF_COLUMN_SUMS_ARGS_H

#include "backend.h"

/* Threads per block of the kernels that fill `partial` by slots, and of
 * the reduction, whose blocks own UF_COLSUM_COLS columns each (a multiple
 * of the widest warp, for coalesced loads). */
#define UF_COLSUM_THREADS 256
#define UF_COLSUM_COLS 64

typedef struct uf_colsum_args {
    const void *partial;
    void *out[2];
    int64_t cols, nchunks;
} uf_colsum_args;

#ifdef __cplusplus
extern "C" {
#endif
uf_status uf_colsum_reduce_f32_v1_launch(const uf_launch *, const uf_colsum_args *);
uf_status uf_colsum_reduce_f16_v1_launch(const uf_launch *, const uf_colsum_args *);
uf_status uf_colsum_reduce_bf16_v1_launch(const uf_launch *, const uf_colsum_args *);
uf_status uf_colsum_reduce_f64_v1_launch(const uf_launch *, const uf_colsum_args *);
#ifdef __cplusplus
}
#endif

#endif
