/*
 * Fused attention (flash style), forward and backward. Part of <unifuse.h>.
 *
 *   out = softmax(Q K^T * scale + bias) V        per batch b and query head h
 *
 * The [Sq, Sk] score matrix is never written to memory: tiles of Q, K and V
 * stay on chip and the softmax is computed online. The forward pass writes
 * the output and, for the backward pass, each query row's log-sum-exp.
 */
#ifndef UNIFUSE_ATTENTION_H
#define UNIFUSE_ATTENTION_H

#include "unifuse/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest head dimension the kernels take. */
#define UF_ATTENTION_MAX_HEAD_DIM 256

/*
 * Describes one attention call.
 *
 * dtype: UF_F16, UF_BF16 or UF_F32, for q, k, v, out and their gradients.
 *   Products accumulate in fp32; probabilities are rounded to dtype before
 *   they multiply V (as every flash implementation does).
 * batch B, heads_q Hq, heads_kv Hkv, seq_q Sq, seq_k Sk, head_dim D:
 *   q and out are [B, Hq, Sq, D], k and v [B, Hkv, Sk, D]. Hkv >= 1 divides
 *   Hq (query head h reads key/value head h / (Hq / Hkv): multi-query and
 *   grouped-query attention). D is a multiple of 8 in 8..256. B, Hq, Sq or
 *   Sk may be 0: Sk = 0 gives zero rows (and zero dq); Sq = 0 or Hq = 0
 *   leaves the forward pass nothing to do and the backward pass writes
 *   zeros to dk and dv.
 * q_stride, k_stride, v_stride, o_stride: elements per step of the batch,
 *   head and sequence index of q, k, v and out; the D elements of a row are
 *   contiguous. Any non-negative strides (the [B, S, H, D] layout is
 *   {S*H*D, D, H*D}). Gradients have the strides of their tensor: dq
 *   q_stride, dk k_stride, dv v_stride, dout o_stride.
 * scale: multiplies Q K^T; finite. uf_attention_desc_init sets 1/sqrt(D).
 * causal: nonzero hides key j from query i when j > i + (Sk - Sq)
 *   (bottom-right aligned, as the softmax's causal rule).
 * window_left, window_right: a sliding window; with d = j - i - (Sk - Sq),
 *   key j is visible to query i only if d >= -window_left (when
 *   window_left >= 0) and d <= window_right (when window_right >= 0). -1 is
 *   unlimited. causal is window_right = 0 combined with the window.
 * bias_dtype: UF_DTYPE_NONE; dtype or UF_F32 for an additive bias; UF_BOOL
 *   for a boolean mask, one byte per element, nonzero hides the key.
 * bias_stride: elements per step of b, h (query head), i, j in the bias or
 *   mask; 0 broadcasts along that index (e.g. {0, 0, Sk, 1} for one [Sq,
 *   Sk] bias shared by every batch and head; {Sk, 0, 0, 1} for a key-padding
 *   mask [B, 1, 1, Sk]). bias_stride[3] must be 1.
 * dropout_p: probability of dropping an attention probability, in [0, 1];
 *   kept ones are scaled by 1 / (1 - p). Element (b, h, i, j) is kept when
 *   the dropout rule of <unifuse/activation.h> keeps index
 *   ((b * Hq + h) * Sq + i) * Sk + j for (seed, offset): the same mask as
 *   uf_dropout_forward would draw for a [B, Hq, Sq, Sk] tensor, on every
 *   backend, and the backward pass rebuilds it.
 *
 * Rules, identical on every backend: a query row that sees no key (masked,
 * outside the window, or Sk = 0) gives zeros and log-sum-exp -inf; a NaN in
 * the inputs spreads to the rows it reaches.
 */
typedef struct uf_attention_desc {
    uf_dtype dtype;
    int64_t batch, heads_q, heads_kv, seq_q, seq_k, head_dim;
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
    double scale;
    int causal;
    int64_t window_left, window_right;
    uf_dtype bias_dtype;
    int64_t bias_stride[4];
    double dropout_p;
    uint64_t seed, offset;
} uf_attention_desc;

/*
 * Fills *desc for contiguous [B, H, S, D] tensors: strides of that layout,
 * scale 1/sqrt(D), no causal rule, no window, no bias, no dropout.
 * Status: UF_ERR_NULL_POINTER, UF_ERR_BAD_SHAPE (a negative extent, or D
 * <= 0), UF_ERR_OVERFLOW (strides beyond int64).
 */
uf_status uf_attention_desc_init(uf_attention_desc *desc, uf_dtype dtype, int64_t batch,
                                 int64_t heads_q, int64_t heads_kv, int64_t seq_q, int64_t seq_k,
                                 int64_t head_dim);

/*
 * Forward pass. q, k, v, bias (iff bias_dtype != UF_DTYPE_NONE): inputs;
 * out: written; lse: NULL, or an fp32 [B, Hq, Sq] contiguous tensor that
 * receives each row's log-sum-exp of the visible logits (natural log,
 * before dropout), which uf_attention_backward needs.
 * q, k, v and bias may overlap one another (a packed QKV tensor); out and
 * lse must not overlap any tensor of the call.
 *
 * Status: UF_ERR_NULL_POINTER (desc NULL, or a needed pointer NULL for a
 * non-empty call), UF_ERR_BAD_DTYPE, UF_ERR_BAD_SHAPE (extents, head_dim,
 * heads, negative strides, bias_stride[3] != 1), UF_ERR_BAD_VALUE (scale
 * not finite, dropout_p outside [0, 1] or NaN, window below -1),
 * UF_ERR_OVERFLOW, UF_ERR_ALIAS, and runtime statuses.
 */
uf_status uf_attention_forward(const uf_attention_desc *desc, const void *q, const void *k,
                               const void *v, const void *bias, void *out, float *lse,
                               uf_stream stream);

/*
 * Backward pass: dq, dk, dv (and dbias) from q, k, v, bias, out, lse (as the
 * forward pass with the same desc wrote them) and dout. The results do not
 * depend on scheduling: no atomics, the same bits run to run. The grouped
 * heads' contributions to dk and dv are summed in a fixed order.
 *
 * dbias: NULL, or (additive bias only) an fp32 contiguous tensor [B', H',
 *   Sq', Sk] with B' = B, H' = Hq, Sq' = Sq where bias_stride's entry is
 *   nonzero and 1 where it is 0; it receives the gradient of the bias,
 *   summed over the broadcast indices.
 * Inputs may overlap one another; dq, dk, dv and dbias must not overlap an
 * input. dq, dk and dv may share one packed buffer as long as no element is
 * written by two of them (checked exactly where their strides are equal
 * and nest, as in a packed [B, S, 3, H, D] buffer; otherwise overlapping
 * extents are UF_ERR_ALIAS).
 *
 * Status: as for the forward pass; UF_ERR_BAD_ARGUMENT for dbias with a
 * boolean mask or without a bias; UF_ERR_NULL_POINTER for a NULL lse.
 */
uf_status uf_attention_backward(const uf_attention_desc *desc, const void *q, const void *k,
                                const void *v, const void *bias, const void *out, const float *lse,
                                const void *dout, void *dq, void *dk, void *dv, float *dbias,
                                uf_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* UNIFUSE_ATTENTION_H */
