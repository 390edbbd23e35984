/* Scaled masked softmax, forward and backward. Part of <unifuse.h>. */
#ifndef UNIFUSE_SOFTMAX_H
#define UNIFUSE_SOFTMAX_H

#include "unifuse/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Describes x: a contiguous tensor of `ndim` (1..UF_MAX_DIMS) dimensions
 * `shape`, read as [..., Sq, Sk] (Sq = 1 when ndim == 1), and an optional mask.
 *
 * dtype: UF_F32, UF_F16, UF_BF16 or UF_F64. Arithmetic is fp32 (fp64 for
 *   UF_F64).
 * scale: multiplies x before the mask is added; must be finite in the
 *   compute type (|scale| <= FLT_MAX unless dtype is UF_F64).
 * causal: nonzero hides key j from query i when j > i + (Sk - Sq)
 *   (bottom-right aligned: the usual lower triangle when Sq == Sk).
 * mask_dtype: UF_DTYPE_NONE for no mask; x's dtype or UF_F32 for an additive
 *   mask; UF_BOOL for a boolean mask where nonzero means "hidden".
 * mask_ndim, mask_shape: a contiguous mask broadcast against x numpy-style
 *   (aligned at the last dimension, each mask extent 1 or equal to x's, no
 *   more dimensions than x). Its last extent must equal Sk. Typical shapes
 *   are [B|1, H|1, Sq|1, Sk] for x [B, H, Sq, Sk]. No copy is made.
 */
typedef struct uf_softmax_desc {
    uf_dtype dtype;
    int ndim;
    int64_t shape[UF_MAX_DIMS];
    double scale;
    int causal;
    uf_dtype mask_dtype;
    int mask_ndim;
    int64_t mask_shape[UF_MAX_DIMS];
} uf_softmax_desc;

/*
 * y = softmax(x * scale + mask) over the last dimension, with the causal rule.
 *
 * Rules, identical on every backend:
 *  - hidden keys (boolean mask, causal rule, or -inf in x*scale + mask)
 *    get probability 0;
 *  - a row in which every key is hidden gives all zeros, never NaN;
 *  - a NaN in x or the mask, or +inf in x*scale + mask, gives NaN in the
 *    row (the NaN spreads through the row's sum);
 *  - any Sk >= 1 is accepted; tensors may exceed 2^31 elements.
 *
 * x, y: device pointers to the tensor described by desc; y may equal x
 *   (in place), otherwise they must not overlap.
 * mask: device pointer, required iff desc->mask_dtype != UF_DTYPE_NONE.
 *
 * Status: UF_ERR_NULL_POINTER (desc NULL, or a needed pointer NULL for a
 * non-empty tensor), UF_ERR_BAD_DTYPE, UF_ERR_BAD_SHAPE, UF_ERR_BAD_VALUE
 * (scale not finite), UF_ERR_OVERFLOW (byte count beyond size_t / int64),
 * UF_ERR_ALIAS (y overlaps x without being equal, or overlaps the mask),
 * and runtime statuses
 * (UF_ERR_NO_DEVICE, UF_ERR_LAUNCH, UF_ERR_DEVICE). An empty tensor (some
 * extent 0) is a valid no-op.
 */
uf_status uf_softmax_forward(const uf_softmax_desc *desc, const void *x, const void *mask, void *y,
                             uf_stream stream);

/*
 * dx = scale * y * (dy - sum_j dy_j * y_j) over the last dimension: the
 * gradient of uf_softmax_forward with respect to x, from its output y and the
 * incoming gradient dy only. Mask and causal rule are implied by y (hidden
 * keys have y = 0, hence dx = 0); desc's mask fields are ignored.
 *
 * y, dy, dx: device pointers with desc's shape and dtype; dx may equal dy
 * (or y); other overlaps are UF_ERR_ALIAS. Statuses as for the forward pass.
 */
uf_status uf_softmax_backward(const uf_softmax_desc *desc, const void *y, const void *dy, void *dx,
                              uf_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* UNIFUSE_SOFTMAX_H */
