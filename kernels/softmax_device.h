/* Device helpers shared by the softmax kernels (every dtype). */
#ifndef UF_SOFTMAX_DEVICE_H
#define UF_SOFTMAX_DEVICE_H

#include "layer.h"
#include "kernels/softmax_args.h"

/* Offset of a row's mask in mask elements, from the collapsed row dims.
 * The loop is unrolled to constant indices so GPU arguments stay in the
 * parameter space. */
UF_FN int64_t uf_softmax_mask_offset(const uf_softmax_args *a, int64_t row)
{
    int64_t off = 0;
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
    return a->causal ? row % a->sq + (a->sk - a->sq) : a->sk - 1;
}

/* One access's UF_VEC values as stored, between a local array and memory
 * (`op` UF_LOAD16 or UF_STORE16; a plain copy for scalar accesses). */
#define UF_SOFTMAX_ACCESS(op, dst, src)                                                            \
    do {                                                                                           \
        if (UF_VEC == 1)                                                                           \
            *(dst) = *(src);                                                                       \
        else                                                                                       \
            op((dst), (src));                                                                      \
    } while (0)

/* Register paths: the row of thread t in logical block b, `group` threads
 * a row and rows_per_block rows a block, with the thread's keys counted
 * from *first = 0; or, where a row spans blocks (`span`, a constant in each
 * kernel), chunk b % nchunks of row b / nchunks, whose keys start at
 * *first. */
UF_FN int64_t uf_softmax_reg_row(const uf_softmax_args *a, int span, int64_t b, int t,
                                 int rows_per_block, int64_t *first)
{
    if (span) {
        *first = (b % a->nchunks) * a->chunk;
        return b / a->nchunks;
    }
    *first = 0;
    return b * rows_per_block + t / a->group;
}

/* Span paths, thread 0 of logical block b once its partial is stored:
 * counts the block in on its row and returns when every chunk of the row
 * is in (a barrier after it passes that on to the block). */
UF_FN void uf_softmax_span_meet(const uf_softmax_args *a, int64_t b)
{
    unsigned *count = &a->arrived[b / a->nchunks];
    uf_group_arrive(count);
    uf_group_wait(count, (unsigned)a->nchunks);
}

/* Split path: logical block b is chunk c of row b / nchunks, covering keys
 * [*begin, *end). */
UF_FN int64_t uf_softmax_chunk(const uf_softmax_args *a, int64_t b, int64_t *begin, int64_t *end)
{
    *begin = (b % a->nchunks) * a->chunk;
    *end = *begin + a->chunk < a->sk ? *begin + a->chunk : a->sk;
    return b / a->nchunks;
}

#endif
