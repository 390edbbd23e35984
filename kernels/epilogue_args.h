/*
 * Arguments of the epilogue kernels (src/epilogue.c and kernels/epilogue.h).
 * Both passes walk x as [rows, cols] in tiles: a thread owns UF_ACT_UNIT
 * consecutive columns of one row slot and steps down a chunk of rows, so a
 * column's sum over the chunk stays in one thread's registers.
 */
#ifndef UF_EPILOGUE_ARGS_H
#define UF_EPILOGUE_ARGS_H

#include "kernels/column_sums_args.h"

/* Blocks of UF_COLSUM_THREADS threads each multiprocessor should hold; the
 * register budget per thread follows (CUDA: 65536 / (256 * 2) = 128). At 4
 * blocks (64 registers) both kernels spilled 40-140 bytes on the H200's
 * build, and the whole-unit loads below spilled 300-800. */
#ifndef UF_EPI_FWD_BLOCKS
#define UF_EPI_FWD_BLOCKS 2
#endif
#ifndef UF_EPI_BWD_BLOCKS
#define UF_EPI_BWD_BLOCKS 2
#endif
/* The backward without a row scale (uf_epi_bwd_scalar), and the same for
 * the identity (uf_epi_bwd_dy), which holds no activation's registers. */
#ifndef UF_EPI_BWD_SCALAR_BLOCKS
#define UF_EPI_BWD_SCALAR_BLOCKS 2
#endif
#ifndef UF_EPI_BWD_DY_BLOCKS
#define UF_EPI_BWD_DY_BLOCKS 2
#endif
/* The forward with dropout and the identity (uf_epi_fwd_identity). */
#ifndef UF_EPI_FWD_IDENTITY_BLOCKS
#define UF_EPI_FWD_IDENTITY_BLOCKS 2
#endif
/* The forward with dropout and the GELU (uf_epi_fwd_gelu), by UF_DT (2:
 * f16): its resident blocks, and the rows a thread loads at once where rows
 * are whole units (`rows`: the other kernels' count, UF_EPI_ROWS_OF, or
 * fewer). f16 takes 2 rows and 3 blocks (56 bytes of spills at 80
 * registers): on an H100 its `full` forward rose from 83.7 to 91.8% of
 * copy, where bf16 fell from 89.8 to 88.5 and fp32 from 98.2 to 88.3
 * (docs/results.md, 2026-12-07). */
#ifndef UF_EPI_FWD_GELU_BLOCKS_OF
#define UF_EPI_FWD_GELU_BLOCKS_OF(dt) ((dt) == 2 ? 3 : 2)
#endif
#ifndef UF_EPI_FWD_GELU_ROWS_OF
#define UF_EPI_FWD_GELU_ROWS_OF(dt, rows) ((dt) == 2 ? 2 : (rows))
#endif
/* Rows a forward thread loads at once where rows are whole aligned units,
 * by element size: 64 bytes of each tensor in flight per thread. */
#ifndef UF_EPI_ROWS_OF
#define UF_EPI_ROWS_OF(bytes) (8 / (bytes))
#endif
/* The same for the backward, which keeps its column sums beside them: two
 * 16-bit rows, one fp32 row (two spilled 120 bytes); uf_epi_bwd_scalar too. */
#ifndef UF_EPI_BWD_ROWS_OF
#define UF_EPI_BWD_ROWS_OF(bytes) ((bytes) >= 4 ? 1 : 4 / (bytes))
#endif
/* Rows at once where the backward reads dy alone (uf_epi_bwd_dy). */
#ifndef UF_EPI_BWD_DY_ROWS_OF
#define UF_EPI_BWD_DY_ROWS_OF(bytes) ((bytes) >= 4 ? 1 : 8 / (bytes))
#endif
/* 1: the backward's rows of whole units keep a second set of registers
 * for the next rows, whose loads are issued before the rows held are
 * worked on (kernels/epilogue.h). uf_epi_bwd_dy, which holds no
 * activation, has the registers for it (ptxas, sm_90: f16 and bf16
 * 82 -> 110, fp32 64 -> 88, no spills; H100, 16-bit 68.8 -> 69.7% of
 * copy); the others spilled 12-204 bytes with it. */
#ifndef UF_EPI_BWD_PIPE
#define UF_EPI_BWD_PIPE 0
#endif
#ifndef UF_EPI_BWD_DY_PIPE
#define UF_EPI_BWD_DY_PIPE 1
#endif

typedef struct uf_epilogue_args {
    const void *x, *bias, *scale, *residual, *dy;
    void *out;       /* forward: y; backward: dx */
    void *dbias;     /* backward: FULL bias gradient (ROW: through `partial`) */
    void *dresidual; /* backward: copy of dy */
    void *partial;   /* backward: per row chunk column sums, [nchunks][2][cols], compute type */
    int64_t rows, cols;
    int bias_kind, scale_kind, residual_kind; /* uf_operand */
    int kind;                                 /* uf_activation */
    double param[2];
    double scale_value;
    uint64_t seed, offset;
    uint32_t threshold;
    double keep_scale;
    int tpr;            /* threads across a row (power of two) */
    int64_t col_tiles;  /* column tiles of tpr * UF_ACT_UNIT columns */
    int64_t chunk_rows; /* rows per chunk */
    int64_t nchunks;
    int vec;   /* rows start 16-byte aligned for every full-tensor pointer */
    int whole; /* vec, and rows of whole units: no per-unit tests */
} uf_epilogue_args;

#define UF_EPI_DECLARE_ONE(pass, dt, vec)                                                          \
    uf_status uf_epi_##pass##_##dt##_v##vec##_launch(const uf_launch *, const uf_epilogue_args *);
#define UF_EPI_DECLARE(dt, vec)                                                                    \
    UF_EPI_DECLARE_ONE(fwd, dt, 1)                                                                 \
    UF_EPI_DECLARE_ONE(fwd, dt, vec)                                                               \
    UF_EPI_DECLARE_ONE(fwd_plain, dt, 1)                                                           \
    UF_EPI_DECLARE_ONE(fwd_plain, dt, vec)                                                         \
    UF_EPI_DECLARE_ONE(fwd_identity, dt, 1)                                                        \
    UF_EPI_DECLARE_ONE(fwd_identity, dt, vec)                                                      \
    UF_EPI_DECLARE_ONE(fwd_gelu, dt, 1)                                                            \
    UF_EPI_DECLARE_ONE(fwd_gelu, dt, vec)                                                          \
    UF_EPI_DECLARE_ONE(bwd, dt, 1)                                                                 \
    UF_EPI_DECLARE_ONE(bwd, dt, vec)                                                               \
    UF_EPI_DECLARE_ONE(bwd_scalar, dt, 1)                                                          \
    UF_EPI_DECLARE_ONE(bwd_scalar, dt, vec)                                                        \
    UF_EPI_DECLARE_ONE(bwd_gelu, dt, 1)                                                            \
    UF_EPI_DECLARE_ONE(bwd_gelu, dt, vec)                                                          \
    UF_EPI_DECLARE_ONE(bwd_scalar_gelu, dt, 1)                                                     \
    UF_EPI_DECLARE_ONE(bwd_scalar_gelu, dt, vec)                                                   \
    UF_EPI_DECLARE_ONE(bwd_dy, dt, 1)                                                              \
    UF_EPI_DECLARE_ONE(bwd_dy, dt, vec)

#ifdef __cplusplus
extern "C" {
#endif
UF_EPI_DECLARE(f32, 4)
UF_EPI_DECLARE(f16, 8)
UF_EPI_DECLARE(bf16, 8)
UF_EPI_DECLARE(f64, 2)
#ifdef __cplusplus
}
#endif

#endif
