/* Device helpers shared by the softmax kernels (every dtype). */
#ifndef UF_SOFTMAX_DEVICE_H
#define UF_SOFTMAX_DEVICE_H

#include "layer.h"
#include "kernels/softmax_args.h"

/* Offset of a row's mask in mask elements, from the collapsed row dims.
 * The loops are unrolled to constant indices so GPU arguments stay in the
 * parameter space. */
UF_FN int64_t uf_softmax_mask_offset(const uf_softmax_args *a, int64_t row)
{
    int64_t off = 0;
    if (a->rows_fast) {
        uint32_t r = (uint32_t)row;
        UF_UNROLL for (int d = 0; d < UF_MAX_DIMS; ++d)
        {
            if (d >= a->row_dims)
                break;
            const uint32_t q = UF_QUOTIENT(r, a->by_inner[d]);
            off += (int64_t)(r - q * a->inner_extent[d]) * a->inner_stride[d];
            r = q;
        }
        return off;
    }
    UF_UNROLL for (int d = UF_MAX_DIMS - 1; d >= 0; --d)
    {
        if (d < a->row_dims) {
            const int64_t ext = a->row_extent[d];
            off += (row % ext) * a->mask_stride[d];
            row /= ext;
        }
    }
    return off;
}

/* Last visible key of a row under the causal rule (bottom-right aligned);
 * every key is visible without it. */
UF_FN int64_t uf_softmax_last_key(const uf_softmax_args *a, int64_t row)
{
    if (!a->causal)
        return a->sk - 1;
    const int64_t q = a->rows_fast
                          ? (int64_t)((uint32_t)row - UF_QUOTIENT(row, a->by_sq) * (uint32_t)a->sq)
                          : row % a->sq;
    return q + (a->sk - a->sq);
}

/* The logical block whose rows block b takes, rows in the order that
 * a.order_* set (softmax_args.h): a tile's blocks of one head, then the
 * tile's blocks of the next head, so that the heads sharing a mask row
 * read it close together in time and L2 serves all but the first; only
 * where `order` (a constant of each kernel: UF_SOFTMAX_ORDER_ROWS) is set,
 * so that the others carry none of its instructions. Every thread of a
 * block computes the same value. */
UF_FN int64_t uf_softmax_block_order(const uf_softmax_args *a, int order, int64_t b)
{
    if (!order || a->order_heads <= 1)
        return b;
    const uint32_t u = UF_QUOTIENT(b, a->by_tile); /* (outer, tile, head) */
    const uint32_t k = (uint32_t)b - u * a->order_tile;
    const uint32_t w = UF_QUOTIENT(u, a->by_heads); /* (outer, tile) */
    const uint32_t h = u - w * (uint32_t)a->order_heads;
    const uint32_t o = UF_QUOTIENT(w, a->by_tiles);
    const uint32_t tile = w - o * a->order_tiles;
    /* Blocks fit 31 bits where rows are ordered (src/softmax.c). */
    return (int64_t)(((o * (uint32_t)a->order_heads + h) * a->order_tiles + tile) * a->order_tile +
                     k);
}

/* Register paths: the row of thread t in logical block b, `group` threads
 * a row and rows_per_block rows a block, with the thread's keys counted
 * from *first = 0; or, where a row spans blocks (`span`, a constant in each
 * kernel), chunk b % nchunks of row b / nchunks, whose keys start at
 * *first. */
UF_FN int64_t uf_softmax_reg_row(const uf_softmax_args *a, int span, int order, int64_t b, int t,
                                 int rows_per_block, int64_t *first)
{
    if (span) {
        *first = (b % a->nchunks) * a->chunk;
        return b / a->nchunks;
    }
    *first = 0;
    return uf_softmax_block_order(a, order, b) * rows_per_block + t / a->group;
}

/* A shifted row's (register paths, UF_REG_SHIFTED) accesses start this
 * many keys (<= 0) from its start: back to the tensor's access boundary
 * (the tensor's start is one). `shifted` is a constant of each kernel;
 * UF_VEC is the including kernel's. */
#define UF_SOFTMAX_SHIFT(shifted, a, row)                                                          \
    ((shifted) ? -(((row) * (a).sk) & (UF_VEC - 1)) : (int64_t)0)

/* Whether a row of a ragged tensor (one that ends inside an access) has
 * keys past the tensor's last access boundary: a shifted row's access
 * there would pass the tensor's end (UF_REG_SHIFTED 2 reads such rows key
 * by key). Several rows shorter than an access may share that access. */
#define UF_SOFTMAX_PAST_END(a, row)                                                                \
    (((row) + 1) * (a).sk > ((a).rows * (a).sk & ~(int64_t)(UF_VEC - 1)))

/* The UF_VEC keys from key j of a row (`keys`, sk long) read one by one,
 * each index kept inside the row, into the held access h: a shifted
 * row's access that may pass the tensor's end (the ragged kernels). UF_T,
 * UF_VEC and UF_HOLD_RUN are the including kernel's. */
#define UF_SOFTMAX_HOLD_KEYS(h, keys, j, sk)                                                       \
    do {                                                                                           \
        UF_T k_[UF_VEC];                                                                           \
        UF_UNROLL for (int e_ = 0; e_ < UF_VEC; ++e_)                                              \
        {                                                                                          \
            const int64_t i_ = (j) + e_ < 0 ? 0 : (j) + e_ < (sk) ? (j) + e_ : (sk)-1;             \
            k_[e_] = (keys)[i_];                                                                   \
        }                                                                                          \
        UF_HOLD_RUN((h), k_, UF_VEC);                                                              \
    } while (0)

/* Span paths, thread 0 of logical block b once its partial is stored:
 * counts the block in on its row and returns when every chunk of the row
 * is in (a barrier after it passes that on to the block). The row's last
 * block in goes on at once: on the H200 a poll costs it a round trip to L2,
 * and the rows that wait for it wait that much longer. */
UF_FN void uf_softmax_span_meet(const uf_softmax_args *a, int64_t b)
{
    unsigned *count = &a->arrived[b / a->nchunks];
    if (uf_group_arrive(count) + 1 < (unsigned)a->nchunks)
        uf_group_wait(count, (unsigned)a->nchunks);
}

/* Rows of this many chunks or fewer have their partials combined by each
 * warp on its own, two or fewer a lane (span paths): no barrier, where the
 * block's combine took about 1.3 us of each 7.3 us turn on the H200 (fp32
 * rows of 65536 keys, 16 chunks); longer rows by the whole block, one or
 * two a thread, where a lane's serial reads of more partials cost more
 * (fp32 rows of 1 Mi keys, 256 chunks: 46 -> 25% of copy). */
#ifndef UF_SOFTMAX_WARP_FOLD_MAX
#define UF_SOFTMAX_WARP_FOLD_MAX (2 * UF_WARP)
#endif

/* Split path: logical block b is chunk c of row b / nchunks, covering keys
 * [*begin, *end). */
UF_FN int64_t uf_softmax_chunk(const uf_softmax_args *a, int64_t b, int64_t *begin, int64_t *end)
{
    *begin = (b % a->nchunks) * a->chunk;
    *end = *begin + a->chunk < a->sk ? *begin + a->chunk : a->sk;
    return b / a->nchunks;
}

#endif
