/*
 * Arguments of the softmax kernels, shared by the launchers in src/ (plain C)
 * and the kernel sources in kernels/ (every backend's device compiler).
 */
#ifndef UF_SOFTMAX_ARGS_H
#define UF_SOFTMAX_ARGS_H

#include "backend.h"
#include "kernels/divisor.h"

/* Whether the forward's register-path blocks take the rows of heads that
 * share a broadcast mask row together (src/softmax.c, order_rows), by
 * element size. fp32 only: on the H200 (docs/results.md, 2026-12-05) it
 * took fp32 masked rows of 1024 / 2048 keys from 80 / 85 to 89 / 88% of
 * copy bandwidth, but its instructions cost the 16-bit forwards, which are
 * bound by issue slots, 3 to 5 points, masked or not; fp64 not measured. */
#ifndef UF_SOFTMAX_ORDER_ROWS
#define UF_SOFTMAX_ORDER_ROWS(esize) ((esize) == 4)
#endif

/* How a mask element turns into an additive term. */
typedef enum uf_mask_kind {
    UF_MASK_NONE = 0,
    UF_MASK_ADD_SAME = 1, /* additive, x's dtype */
    UF_MASK_ADD_F32 = 2,  /* additive, fp32 */
    UF_MASK_BOOL = 3      /* one byte, nonzero hides the key */
} uf_mask_kind;

/* Per thread, the register path keeps this many bytes of row values in its
 * compute type: on GPUs 16 elements in fp32 arithmetic, 8 in fp64; a CPU
 * thread, whose "registers" are memory, UF_THREAD_WORK times as many, so
 * that its loops are long enough to vectorise (backend.h; on the 2-core
 * machine f32 rows of 1024-4096 keys 17-19 -> about 50% of copy). */
#define UF_SOFTMAX_REG_BYTES (64 * UF_THREAD_WORK)
/* The wide register paths keep twice as many (kernels/
 * softmax_forward_reg.h, softmax_backward_reg.h; src/softmax.c says when). */
#ifndef UF_SOFTMAX_WIDE_BYTES
#define UF_SOFTMAX_WIDE_BYTES (128 * UF_THREAD_WORK)
#endif

/* Where a thread's share is longer than a GPU thread's (CPUs), short rows
 * take a narrow register path with a GPU thread's share: a row of 16 keys
 * ran every loop of the regular path over all of a CPU thread's 256
 * values (3% of copy on the 2-core machine). GPUs have no narrow kernels:
 * their regular path is that already (src/softmax.c takes it there). */
#define UF_SOFTMAX_NARROW_BYTES 64
#define UF_SOFTMAX_HAS_NARROW (UF_SOFTMAX_REG_BYTES > UF_SOFTMAX_NARROW_BYTES)

/* Largest element size whose rows take the wide register paths. */
#ifndef UF_SOFTMAX_WIDE_MAX_ESIZE
#define UF_SOFTMAX_WIDE_MAX_ESIZE 2
#endif

/* The roomy register paths (GPUs): a thread holds one access more than on
 * the path a row of that pass and element size takes where it needs more
 * than a few threads (the wide forward for 16-bit rows, the regular one
 * otherwise). A row a little longer than a whole number of warps' shares
 * (16-bit, 4096 + 4 keys: 33 threads of 8 accesses, a block of 64 with
 * half its registers idle) then fits the threads below it (29 of 9);
 * src/softmax.c takes it where that leaves fewer register slots a row.
 * CPUs have none: a thread's share is long there, and rows are not
 * rounded to warps. */
#define UF_SOFTMAX_HAS_ROOMY (!UF_SOFTMAX_HAS_NARROW)
/* The share the roomy path adds an access to, by pass and element size. */
#define UF_SOFTMAX_ROOMY_BASE_BYTES(backward, esize)                                               \
    (!(backward) && (esize) <= UF_SOFTMAX_WIDE_MAX_ESIZE ? UF_SOFTMAX_WIDE_BYTES                   \
                                                         : UF_SOFTMAX_REG_BYTES)
/* Values a thread holds on the roomy paths, in the kernel sources (where
 * UF_T, UF_ACC and UF_VEC are bound). */
#define UF_SOFTMAX_ROOMY_N(backward)                                                               \
    (UF_SOFTMAX_ROOMY_BASE_BYTES(backward, (int)sizeof(UF_T)) / (int)sizeof(UF_ACC) + UF_VEC)
/* The shifted register kernels (softmax_forward.h, softmax_backward.h),
 * for rows that start anywhere: GPUs, as the roomy ones. */
#define UF_SOFTMAX_HAS_SHIFTED UF_SOFTMAX_HAS_ROOMY
/* Whether a pass's shifted rows of `esize`-byte elements take kernels for
 * ragged tensors (which end inside an access), where their rows past the
 * last access boundary read key by key: on an H100 ([1, 1, 16385, 16385])
 * the 16-bit forward gained 61 -> 77% of copy (89 causal) and every
 * backward 41-73 -> 79-93, but the fp32 forward lost 69 -> 64, so that
 * one stays element-wide. */
#define UF_SOFTMAX_RAGGED(backward, esize) ((backward) || (esize) == 2)

/* The span paths (a row held in the registers of several blocks): bytes
 * per thread for elements of `esize` bytes; 16-bit rows take the wide
 * share, as their register paths do. */
#define UF_SOFTMAX_SPAN_BYTES(esize) ((esize) <= 2 ? UF_SOFTMAX_WIDE_BYTES : UF_SOFTMAX_REG_BYTES)

/* Threads of a span block (src/softmax.c launches at most this many; the
 * forward's shared shares below are sized for it). */
#define UF_SOFTMAX_SPAN_THREADS 256

/* The forward's span path with shared shares (uf_softmax_fwd_span_kept):
 * at most UF_SOFTMAX_SPAN_SHARED shares of a thread's registers wait in
 * shared memory (as logits, then exps) beside the share in its registers,
 * 32 KiB a block on GPUs: a block then moves that many times the bytes per
 * exchange with its row's other blocks, whose latency is fixed.
 * src/softmax.c chooses how many (`shares`; with none it takes the plain
 * span kernel). The kernel is compiled for UF_SOFTMAX_SPAN_BLOCKS blocks a
 * multiprocessor. On the H200 (docs/results.md, 2026-12-04) fp32 rows of
 * 65536 to 4 Mi keys gained 3 to 15 points of copy bandwidth with 2; 16-bit
 * rows, whose share of registers is twice as long, lost 1 to 7 points with
 * one shared share at 3 blocks a multiprocessor (at 4 they spill), so they
 * take none, nor does fp64. None on CPUs, whose "registers" are memory
 * already. */
#ifndef UF_SOFTMAX_SPAN_SHARED
#define UF_SOFTMAX_SPAN_SHARED(esize) (UF_THREAD_WORK > 1 || (esize) != 4 ? 0 : 2)
#endif
/* The same for the backward (uf_softmax_bwd_span_kept), whose shares keep
 * y and dy as held (32 KiB a block), by element size and whether the
 * kernel is the 16-byte one (on GPUs it holds accesses as stored; the
 * element-wide and 8-byte 16-bit kernels hold values converted, twice the
 * bytes). */
#ifndef UF_SOFTMAX_SPAN_SHARED_BWD
#define UF_SOFTMAX_SPAN_SHARED_BWD(esize, access16)                                                \
    (UF_THREAD_WORK > 1 ? 0 : (esize) == 4 || ((esize) == 2 && (access16)))
#endif
#ifndef UF_SOFTMAX_SPAN_BLOCKS
#define UF_SOFTMAX_SPAN_BLOCKS(esize) 4
#endif

typedef struct uf_softmax_args {
    const void *x;  /* forward: input; backward: y */
    const void *x2; /* forward: mask (or NULL); backward: dy */
    void *out;      /* forward: y; backward: dx */
    int64_t rows;   /* product of all extents but the last */
    int64_t sk;     /* row length */
    int64_t sq;     /* query extent (second to last), for the causal rule */
    double scale;
    int causal;
    int mask_kind;   /* uf_mask_kind */
    int group;       /* register path: threads per row (a power of two <= warp, or the block) */
    int64_t chunk;   /* split and span paths: keys per chunk (a multiple of the vector width) */
    int64_t nchunks; /* split and span paths: chunks per row */
    int shares;      /* span paths: shares of a thread's chunk in shared memory */
    void *partial;   /* split and span paths: per chunk (max, sum) or (dot, unused), compute type */
    unsigned *arrived; /* span paths: per row, the chunks whose partial is stored; zeroed */
    int row_dims;      /* mask broadcast: number of collapsed row dimensions */
    int64_t row_extent[UF_MAX_DIMS];  /* collapsed extents of the row index, outermost first */
    int64_t mask_stride[UF_MAX_DIMS]; /* mask elements per step of each; 0 when broadcast */
    /* Forward register path with a mask broadcast over heads: the order in
     * which logical blocks take rows (uf_softmax_block_order). Rows are
     * [outer, heads, inner] by the mask's innermost broadcast dimension;
     * blocks take `tile` blocks of one head's rows, then the same rows of
     * the next head. order_heads 0: rows in order. */
    int order_heads;
    uint32_t order_tile;  /* blocks per tile */
    uint32_t order_tiles; /* tiles per head */
    uf_divisor by_tile, by_heads, by_tiles;
    /* Rows below 2^31 (rows_fast): a row's mask offset and causal bound
     * take quotients by multiply and shift (kernels/divisor.h), where a
     * division per row dimension cost a GPU thread about 25 instructions
     * per row. The row dimensions again, innermost first. */
    int rows_fast;
    uf_divisor by_sq;
    uint32_t inner_extent[UF_MAX_DIMS];
    uf_divisor by_inner[UF_MAX_DIMS];
    int64_t inner_stride[UF_MAX_DIMS]; /* mask elements per step */
} uf_softmax_args;

/* One launcher per kernel variant: <pass>_<path>_<dtype>_v<vector width>. */
#define UF_SOFTMAX_DECLARE_ONE(pass, path, dt, vec)                                                \
    uf_status uf_softmax_##pass##_##path##_##dt##_v##vec##_launch(const uf_launch *,               \
                                                                  const uf_softmax_args *);
#define UF_SOFTMAX_DECLARE(pass, dt, vec)                                                          \
    UF_SOFTMAX_DECLARE_ONE(pass, reg, dt, vec)                                                     \
    UF_SOFTMAX_DECLARE_ONE(pass, stream, dt, vec)                                                  \
    UF_SOFTMAX_DECLARE_ONE(pass, split_stats, dt, vec)                                             \
    UF_SOFTMAX_DECLARE_ONE(pass, split_apply, dt, vec)                                             \
    UF_SOFTMAX_DECLARE_ONE(pass, span, dt, vec)
#define UF_SOFTMAX_DECLARE_DTYPE(pass, dt, vec)                                                    \
    UF_SOFTMAX_DECLARE(pass, dt, 1) UF_SOFTMAX_DECLARE(pass, dt, vec)
#define UF_SOFTMAX_DECLARE_WIDE(dt, vec)                                                           \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_wide, dt, 1)                                                   \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_wide, dt, vec)                                                 \
    UF_SOFTMAX_DECLARE_ONE(bwd, reg_wide, dt, 1) UF_SOFTMAX_DECLARE_ONE(bwd, reg_wide, dt, vec)
#define UF_SOFTMAX_DECLARE_NARROW(dt, vec)                                                         \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_narrow, dt, 1)                                                 \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_narrow, dt, vec)                                               \
    UF_SOFTMAX_DECLARE_ONE(bwd, reg_narrow, dt, 1) UF_SOFTMAX_DECLARE_ONE(bwd, reg_narrow, dt, vec)
#define UF_SOFTMAX_DECLARE_ROOMY(dt, vec)                                                          \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_roomy, dt, 1)                                                  \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_roomy, dt, vec)                                                \
    UF_SOFTMAX_DECLARE_ONE(bwd, reg_roomy, dt, 1) UF_SOFTMAX_DECLARE_ONE(bwd, reg_roomy, dt, vec)
/* The shifted register kernels, and those for ragged tensors (GPUs,
 * 16-byte accesses; softmax_forward.h, softmax_backward.h; the fp32
 * forward defines no ragged ones: UF_SOFTMAX_RAGGED). */
#define UF_SOFTMAX_DECLARE_SHARES(pass, as, dt, vec)                                               \
    UF_SOFTMAX_DECLARE_ONE(pass, reg_##as, dt, vec)                                                \
    UF_SOFTMAX_DECLARE_ONE(pass, reg_wide_##as, dt, vec)                                           \
    UF_SOFTMAX_DECLARE_ONE(pass, reg_roomy_##as, dt, vec)
#define UF_SOFTMAX_DECLARE_SHIFTED(dt, vec)                                                        \
    UF_SOFTMAX_DECLARE_SHARES(fwd, shifted, dt, vec)                                               \
    UF_SOFTMAX_DECLARE_SHARES(fwd, ragged, dt, vec)                                                \
    UF_SOFTMAX_DECLARE_SHARES(bwd, shifted, dt, vec) UF_SOFTMAX_DECLARE_SHARES(bwd, ragged, dt, vec)
#define UF_SOFTMAX_DECLARE_KEPT(dt, vec)                                                           \
    UF_SOFTMAX_DECLARE_ONE(fwd, span_kept, dt, 1)                                                  \
    UF_SOFTMAX_DECLARE_ONE(fwd, span_kept, dt, vec)                                                \
    UF_SOFTMAX_DECLARE_ONE(bwd, span_kept, dt, 1) UF_SOFTMAX_DECLARE_ONE(bwd, span_kept, dt, vec)

/* The 8-byte kernels (instantiate_access8.h), every path. */
#define UF_SOFTMAX_DECLARE_ACCESS8(dt, vec)                                                        \
    UF_SOFTMAX_DECLARE(fwd, dt, vec)                                                               \
    UF_SOFTMAX_DECLARE(bwd, dt, vec)                                                               \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_wide, dt, vec)                                                 \
    UF_SOFTMAX_DECLARE_ONE(bwd, reg_wide, dt, vec)                                                 \
    UF_SOFTMAX_DECLARE_ONE(fwd, span_kept, dt, vec)                                                \
    UF_SOFTMAX_DECLARE_ONE(bwd, span_kept, dt, vec)                                                \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_narrow, dt, vec)                                               \
    UF_SOFTMAX_DECLARE_ONE(bwd, reg_narrow, dt, vec)                                               \
    UF_SOFTMAX_DECLARE_ONE(fwd, reg_roomy, dt, vec)                                                \
    UF_SOFTMAX_DECLARE_ONE(bwd, reg_roomy, dt, vec)

#ifdef __cplusplus
extern "C" {
#endif
UF_SOFTMAX_DECLARE_DTYPE(fwd, f32, 4)
UF_SOFTMAX_DECLARE_DTYPE(fwd, f16, 8)
UF_SOFTMAX_DECLARE_DTYPE(fwd, bf16, 8)
UF_SOFTMAX_DECLARE_DTYPE(fwd, f64, 2)
UF_SOFTMAX_DECLARE_DTYPE(bwd, f32, 4)
UF_SOFTMAX_DECLARE_DTYPE(bwd, f16, 8)
UF_SOFTMAX_DECLARE_DTYPE(bwd, bf16, 8)
UF_SOFTMAX_DECLARE_DTYPE(bwd, f64, 2)
UF_SOFTMAX_DECLARE_WIDE(f32, 4)
UF_SOFTMAX_DECLARE_WIDE(f16, 8)
UF_SOFTMAX_DECLARE_WIDE(bf16, 8)
UF_SOFTMAX_DECLARE_WIDE(f64, 2)
UF_SOFTMAX_DECLARE_KEPT(f32, 4)
UF_SOFTMAX_DECLARE_KEPT(f16, 8)
UF_SOFTMAX_DECLARE_KEPT(bf16, 8)
UF_SOFTMAX_DECLARE_KEPT(f64, 2)
#if UF_SOFTMAX_HAS_NARROW
UF_SOFTMAX_DECLARE_NARROW(f32, 4)
UF_SOFTMAX_DECLARE_NARROW(f16, 8)
UF_SOFTMAX_DECLARE_NARROW(bf16, 8)
UF_SOFTMAX_DECLARE_NARROW(f64, 2)
#endif
#if UF_SOFTMAX_HAS_ROOMY
UF_SOFTMAX_DECLARE_ROOMY(f32, 4)
UF_SOFTMAX_DECLARE_ROOMY(f16, 8)
UF_SOFTMAX_DECLARE_ROOMY(bf16, 8)
UF_SOFTMAX_DECLARE_ROOMY(f64, 2)
#endif
#if UF_SOFTMAX_HAS_SHIFTED
UF_SOFTMAX_DECLARE_SHIFTED(f32, 4)
UF_SOFTMAX_DECLARE_SHIFTED(f16, 8)
UF_SOFTMAX_DECLARE_SHIFTED(bf16, 8)
#endif
#if UF_ACCESS8_KERNELS
UF_SOFTMAX_DECLARE_ACCESS8(f32, 2)
UF_SOFTMAX_DECLARE_ACCESS8(f16, 4)
UF_SOFTMAX_DECLARE_ACCESS8(bf16, 4)
#endif
#ifdef __cplusplus
}
#endif

#endif
