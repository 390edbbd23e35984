/*
 * The fused elementwise epilogue of a linear layer, forward and backward:
 *   y = dropout(act(x + bias) * scale) + residual
 * in one pass. Part of <unifuse.h>.
 */
#ifndef UNIFUSE_EPILOGUE_H
#define UNIFUSE_EPILOGUE_H

#include "unifuse/activation.h"
#include "unifuse/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How an optional operand is shaped against x viewed as [rows, cols]. */
typedef enum uf_operand {
    UF_OPERAND_NONE = 0,   /* absent (bias 0, scale 1, no residual) */
    UF_OPERAND_SCALAR = 1, /* scale only: uf_epilogue_desc.scale_value */
    UF_OPERAND_ROW = 2,    /* a [cols] vector broadcast over rows (a linear layer's bias) */
    UF_OPERAND_FULL = 3    /* a tensor like x */
} uf_operand;

/*
 * x is contiguous, viewed as [rows, cols] (cols: the last dimension).
 * dtype: UF_F32, UF_F16, UF_BF16 (fp32 arithmetic) or UF_F64. Vectors and
 *   tensors passed with it have the same dtype.
 * bias: NONE, ROW or FULL. act: any activation (UF_ACT_IDENTITY for none).
 * scale: NONE, SCALAR (scale_value, finite in fp32) or ROW.
 * residual: NONE or FULL.
 */
typedef struct uf_epilogue_desc {
    uf_dtype dtype;
    int64_t rows, cols;
    uf_operand bias;
    uf_activation_desc act;
    uf_operand scale;
    double scale_value;
    uf_operand residual;
} uf_epilogue_desc;

/*
 * y = dropout(act(x + bias) * scale) + residual, with the dropout rule of
 * activation.h applied to the element's linear index in [rows, cols] (drop
 * NULL or p = 0: none). Pointers for absent operands are ignored (may be
 * NULL). y may equal x or the residual; other overlaps between y and an
 * input are UF_ERR_ALIAS. Any alignment, any cols >= 1.
 *
 * Status: UF_ERR_NULL_POINTER (desc NULL, or a needed pointer NULL with
 * rows * cols > 0), UF_ERR_BAD_DTYPE, UF_ERR_BAD_SHAPE (negative extents),
 * UF_ERR_BAD_ARGUMENT (an operand kind not allowed for its slot, unknown
 * activation), UF_ERR_BAD_VALUE (p, activation parameters, scale_value),
 * UF_ERR_OVERFLOW, UF_ERR_ALIAS, runtime statuses. rows * cols = 0 is a
 * no-op.
 */
uf_status uf_epilogue_forward(const uf_epilogue_desc *desc, const uf_dropout_desc *drop,
                              const void *x, const void *bias, const void *scale,
                              const void *residual, void *y, uf_stream stream);

/*
 * Gradients of uf_epilogue_forward from dy, with the same desc and drop:
 *   dx        = dy * keep / (1 - p) * scale * act'(x + bias)     (required)
 *   dbias     = dx summed over rows (ROW bias) or dx itself (FULL bias)
 *   dscale    = (dy * keep / (1 - p) * act(x + bias)) summed over rows
 *               (ROW scale only)
 *   dresidual = dy (FULL residual)
 * Every gradient pointer but dx may be NULL to skip it. Sums over rows are
 * accumulated in the arithmetic type in a fixed order: the same inputs on
 * the same device give the same bits on every run. dx may equal dy or x;
 * other overlaps of an output with any tensor are UF_ERR_ALIAS. Statuses as
 * for the forward pass, plus UF_ERR_OUT_OF_MEMORY for the reduction's
 * scratch.
 */
uf_status uf_epilogue_backward(const uf_epilogue_desc *desc, const uf_dropout_desc *drop,
                               const void *x, const void *bias, const void *scale, const void *dy,
                               void *dx, void *dbias, void *dscale, void *dresidual,
                               uf_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* UNIFUSE_EPILOGUE_H */
