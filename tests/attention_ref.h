/*
 * A float64 host reference of uf_attention_forward / uf_attention_backward,
 * written from the contract in src/unifuse/attention.h and independent of
 * the kernels: explicit scores, the visibility rules, softmax over visible
 * keys, dropout from the host Philox (philox_ref.h), then P V; and the
 * gradients. Tensors are double buffers read and written through the
 * desc's strides, exactly as the library addresses device memory; a bias or
 * mask is read through bias_stride (bias_dtype UF_BOOL: nonzero hides).
 *
 * Next to each result the reference returns the sum of the absolute values
 * of the terms that result adds up, from which the tests derive error
 * bounds.
 */
#ifndef UF_TEST_ATTENTION_REF_H
#define UF_TEST_ATTENTION_REF_H

#include <stdint.h>

#include "unifuse.h"

/* Whether key j is visible to query i under causal and the window (the
 * bias or mask is not considered). */
int atr_in_window(const uf_attention_desc *d, int64_t i, int64_t j);

/* Extents [B', H', Sq', Sk] of dbias for d's bias_stride. */
void atr_dbias_extents(const uf_attention_desc *d, int64_t ext[4]);

/* Dropout factor of (b, h, i, j): keep / (1 - p), 0 where dropped; 1
 * without dropout. */
double atr_dropout_factor(const uf_attention_desc *d, int64_t b, int64_t h, int64_t i, int64_t j);

typedef struct atr_inputs {
    const double *q, *k, *v; /* q_stride, k_stride, v_stride */
    const double *bias;      /* bias_stride; NULL without bias */
    const double *dout;      /* o_stride; backward only */
} atr_inputs;

typedef struct atr_forward_result {
    double *out, *out_abs; /* o_stride; out_abs[e] = sum_j |A_ij v_jd| */
    double *lse;           /* [B, Hq, Sq]; -inf for a row that sees no key */
    double logit_abs;      /* max over visible (b, h, i, j) of scale * sum_d |q k| + |bias| */
} atr_forward_result;

/* out, out_abs: buffers covering o_stride's span; lse: B * Hq * Sq values;
 * out_abs may be NULL. */
void atr_forward(const uf_attention_desc *d, const atr_inputs *in, atr_forward_result *res);

/*
 * Gradients of sum(out * dout). dq, dk, dv (and their abs sums) use the
 * strides of q, k, v; dbias is contiguous with atr_dbias_extents. With
 * A = P * dropout factor, dP = factor * dout.v, Delta = dout.out,
 * dS = P (dP - Delta), the abs sums are built from
 * |dP|~ = factor * sum_d |dout v| and |dS|~ = P (|dP|~ + sum_j P |dP|~)
 * (the latter bounds sum_d |dout out| too, so it covers Delta however it is
 * computed):
 *   dq_abs = scale * sum_j |dS|~ |k|, dk_abs = scale * sum_i |dS|~ |q|,
 *   dv_abs = sum_i A |dout|, dbias_abs = sum |dS|~.
 * Any pointer except dq, dk, dv may be NULL.
 */
typedef struct atr_backward_result {
    double *dq, *dk, *dv, *dbias;
    double *dq_abs, *dk_abs, *dv_abs, *dbias_abs;
    double logit_abs;
} atr_backward_result;

void atr_backward(const uf_attention_desc *d, const atr_inputs *in, atr_backward_result *res);

#endif
