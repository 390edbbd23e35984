/* Device helpers shared by the softmax kernels (every dtype). */
#ifndef UF_SOFTMAX_DEVICE_H
#define UF_SOFTMAX_DEVICE_H

#include "layer.h"
#include "kernels/softmax_args.h"

/* Maps a logical row (the order blocks take rows in) to x's row and the
 * row's mask offset in mask elements. Without a mask the order is x's.
 * With a broadcast mask, src/ orders the broadcast dims innermost, so rows
 * that share a mask row run together and the mask is read from HBM about
 * once. The loop is unrolled to constant indices so GPU arguments stay in
 * the parameter space. */
UF_FN int64_t uf_softmax_locate(const uf_softmax_args *a, int64_t logical, int64_t *mask_offset)
{
    int64_t row = 0, off = 0;
    if (a->row_dims == 0) {
        *mask_offset = 0;
        return logical;
    }
    UF_UNROLL for (int d = UF_MAX_DIMS - 1; d >= 0; --d)
    {
        if (d < a->row_dims) {
            const int64_t ext = a->row_extent[d], i = logical % ext;
            row += i * a->row_stride[d];
            off += i * a->mask_stride[d];
            logical /= ext;
        }
    }
    *mask_offset = off;
    return row;
}

/* Last visible key of a row under the causal rule (bottom-right aligned);
 * every key is visible without it. */
UF_FN int64_t uf_softmax_last_key(const uf_softmax_args *a, int64_t row)
{
    return a->causal ? row % a->sq + (a->sk - a->sq) : a->sk - 1;
}

#endif
