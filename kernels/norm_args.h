/*
 * Arguments of the LayerNorm / RMSNorm kernels (src/norm.c and
 * kernels/norm.h). Rows are handled by `group` threads each (a power of
 * two: up to a warp with several rows per block, or the whole block); the
 * backward's column sums use the tiling of the epilogue (tpr threads across
 * a row, row chunks) and kernels/column_sums_args.h.
 */
#ifndef UF_NORM_ARGS_H
#define UF_NORM_ARGS_H

#include "kernels/column_sums_args.h"

/* Units (of UF_ACT_UNIT elements) each thread of a row group walks per pass
 * where the row is long enough; the row loops are unrolled by as much, so
 * that a thread's loads are in flight together rather than one 16-byte
 * load per barrier-separated pass (a plain literal: it goes into a pragma). */
#ifndef UF_NORM_UNITS
#define UF_NORM_UNITS 4
#endif

/* Units per thread of the forward, by element size: 16-bit rows take 8
 * (the 64 bytes of fp32's 4 per tensor), which on the H200 took the plain
 * 16-bit forward from 47-67% to 61-73% of copy; fp32's 8 would spill. */
#define UF_NORM_FWD_UNITS(esize) ((esize) <= 2 ? 8 : UF_NORM_UNITS)

/* Largest block of the fused backward (uf_norm_bwd_fused): its column sums
 * take registers, so it is bounded below the largest block; rows of up to
 * this many threads' UF_NORM_UNITS units take that path. */
#define UF_NORM_FUSED_THREADS 512

/* Largest block of the forward that holds its row in registers
 * (uf_norm_fwd_held): rows of up to this many threads' UF_NORM_FWD_UNITS
 * units take it, longer rows the forward that reads the row twice. */
#define UF_NORM_HELD_THREADS 512

/* Words of h (and of dy) a thread of the held backward
 * (kernels/norm_backward_held.h) holds at most for it to load its next row
 * while it writes the row it holds: 2 16-bit units (ptxas, sm_90: f16 128
 * registers before and after, bf16 120 -> 128, no spills); 2 fp32 units
 * spilled 84 bytes. */
#ifndef UF_NORM_HELD_PIPE_WORDS
#define UF_NORM_HELD_PIPE_WORDS 8
#endif

typedef struct uf_norm_args {
    const void *x, *residual, *weight, *bias; /* forward inputs (backward: x is h) */
    const void *dy, *dh_extra;                /* backward inputs */
    const void *mean_in, *rstd_in;            /* backward: the forward's statistics */
    void *y;                                  /* forward: y; backward: dx */
    void *h_out, *mean, *rstd;                /* forward outputs (optional) */
    void *shift;   /* backward: per row, mean correction for the column pass */
    void *partial; /* backward: column sums, see column_sums_args.h */
    int64_t rows, cols;
    double inv_cols; /* 1 / cols: the backward's row terms, without a division a row */
    int kind;        /* uf_norm_kind */
    int has_weight, has_bias;
    double eps;
    int group; /* threads per row */
    int vec;   /* every row of every tensor allows 16-byte access */
    int whole; /* vec, and rows of whole units (uf_norm_fwd_held, norm_backward_held.h) */
    int tpr;   /* column pass: threads across a row */
    int64_t col_tiles, chunk_rows, nchunks;
} uf_norm_args;

#define UF_NORM_DECLARE_ONE(pass, dt, vec)                                                         \
    uf_status uf_norm_##pass##_##dt##_v##vec##_launch(const uf_launch *, const uf_norm_args *);
#define UF_NORM_DECLARE(dt, vec)                                                                   \
    UF_NORM_DECLARE_ONE(fwd, dt, 1)                                                                \
    UF_NORM_DECLARE_ONE(fwd, dt, vec)                                                              \
    UF_NORM_DECLARE_ONE(fwd_held, dt, 1)                                                           \
    UF_NORM_DECLARE_ONE(fwd_held, dt, vec)                                                         \
    UF_NORM_DECLARE_ONE(fwd_held_plain, dt, 1)                                                     \
    UF_NORM_DECLARE_ONE(fwd_held_plain, dt, vec)                                                   \
    UF_NORM_DECLARE_ONE(bwd, dt, 1)                                                                \
    UF_NORM_DECLARE_ONE(bwd_fused, dt, 1)                                                          \
    UF_NORM_DECLARE_ONE(bwd_fused, dt, vec)                                                        \
    UF_NORM_DECLARE_ONE(bwd_held2, dt, 1)                                                          \
    UF_NORM_DECLARE_ONE(bwd_held2, dt, vec)                                                        \
    UF_NORM_DECLARE_ONE(bwd_held4, dt, 1)                                                          \
    UF_NORM_DECLARE_ONE(bwd_held4, dt, vec)                                                        \
    UF_NORM_DECLARE_ONE(bwd, dt, vec)                                                              \
    UF_NORM_DECLARE_ONE(cols, dt, 1) UF_NORM_DECLARE_ONE(cols, dt, vec)

#ifdef __cplusplus
extern "C" {
#endif
UF_NORM_DECLARE(f32, 4)
UF_NORM_DECLARE(f16, 8)
UF_NORM_DECLARE(bf16, 8)
UF_NORM_DECLARE(f64, 2)
#ifdef __cplusplus
}
#endif

#endif
