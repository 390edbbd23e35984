/*
 * LayerNorm and RMSNorm over the last dimension, forward and backward, with
 * an optional fused residual add before the norm. Part of <unifuse.h>.
 */
#ifndef UNIFUSE_NORM_H
#define UNIFUSE_NORM_H

#include "unifuse/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum uf_norm_kind {
    UF_NORM_LAYER = 1, /* y = (h - mean) * rstd * weight + bias, rstd = 1/sqrt(var + eps) */
    UF_NORM_RMS = 2    /* y = h * rstd * weight, rstd = 1/sqrt(mean(h^2) + eps) */
} uf_norm_kind;

/*
 * h = x (+ residual) is contiguous [rows, cols]; the norm is over cols.
 * dtype: UF_F32, UF_F16, UF_BF16 (fp32 arithmetic and statistics) or UF_F64
 *   (fp64); x, residual, weight, bias, y and the gradients share it.
 * eps: >= 0 and finite. weight ([cols]) and bias ([cols], LayerNorm only)
 *   are optional (has_weight, has_bias). add_residual: h = x + residual.
 * The variance is the biased one (divided by cols), as in PyTorch.
 */
typedef struct uf_norm_desc {
    uf_norm_kind kind;
    uf_dtype dtype;
    int64_t rows, cols;
    double eps;
    int has_weight, has_bias, add_residual;
} uf_norm_desc;

/*
 * y = norm(h) with h = x (+ residual). Writes, when the pointers are not
 * NULL: h_out ([rows, cols], dtype: the sum, for add_residual), mean (LayerNorm)
 * and rstd ([rows], fp32, or fp64 for UF_F64) for the backward pass.
 * y may equal x or the residual; h_out may equal x or the residual (not y);
 * other overlaps are UF_ERR_ALIAS.
 *
 * Status: UF_ERR_NULL_POINTER (desc; x, y, or a declared operand NULL with
 * rows * cols > 0), UF_ERR_BAD_DTYPE, UF_ERR_BAD_SHAPE (negative extents),
 * UF_ERR_BAD_ARGUMENT (unknown kind; has_bias with RMSNorm), UF_ERR_BAD_VALUE
 * (eps negative or not finite), UF_ERR_OVERFLOW, UF_ERR_ALIAS, runtime
 * statuses. rows * cols = 0 is a no-op.
 */
uf_status uf_norm_forward(const uf_norm_desc *desc, const void *x, const void *residual,
                          const void *weight, const void *bias, void *y, void *h_out, void *mean,
                          void *rstd, uf_stream stream);

/*
 * Gradients from dy and the forward's h (the normalised input: x, or x +
 * residual), mean (LayerNorm) and rstd:
 *   dx      = the gradient with respect to h, plus dh_extra when not NULL
 *             (the gradient reaching h_out from elsewhere); with
 *             add_residual it is the gradient of x and of the residual alike
 *   dweight = sum over rows of dy * hhat      (has_weight; may be NULL)
 *   dbias   = sum over rows of dy             (has_bias; may be NULL)
 * The sums over rows are added in a fixed order without atomics: the same
 * inputs on the same device give the same bits on every run. dx may equal
 * dy or dh_extra; other overlaps of an output with any input or output are
 * UF_ERR_ALIAS. Statuses as for the forward pass, plus UF_ERR_OUT_OF_MEMORY
 * for the reduction's scratch.
 */
uf_status uf_norm_backward(const uf_norm_desc *desc, const void *h, const void *weight,
                           const void *mean, const void *rstd, const void *dy, const void *dh_extra,
                           void *dx, void *dweight, void *dbias, uf_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* UNIFUSE_NORM_H */
