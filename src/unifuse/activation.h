/*
 * Activations fused with dropout, forward and backward, and dropout alone.
 * Part of <unifuse.h>.
 *
 * The dropout mask is never stored: element i of a call is kept when the
 * uniform draw of Philox-4x32-10 for (seed, offset, i) is at least p, and the
 * backward pass draws it again from the same three numbers. The rule, the
 * same bits on every backend and for every launch shape:
 *   key     = (low 32 bits of seed, high 32 bits of seed)
 *   counter = (low, high 32 bits of i / 8;  low, high 32 bits of offset)
 *   r       = word (i % 8) / 2 of Philox-4x32-10(counter, key)
 *   d       = low 16 bits of r for even i, high 16 bits for odd i
 *   keep    = d >= ceil(p * 2^16)
 * that is, a 16-bit uniform draw u = d / 2^16 is kept when u >= p: the drop
 * probability is p rounded up to a multiple of 2^-16 (at most 1.5e-5 more).
 * Sixteen bits halve the generator's work per element against 32, which is
 * what limits 16-bit dtypes on GPUs. Calls with different offsets draw
 * independent masks; a caller advances `offset` (by 1 is enough) between
 * calls that share a seed.
 */
#ifndef UNIFUSE_ACTIVATION_H
#define UNIFUSE_ACTIVATION_H

#include "unifuse/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The activations, with PyTorch's definitions (torch.nn.functional) and the
 * derivative PyTorch's autograd uses at breakpoints. Parameters, in
 * uf_activation_desc.param[0] and [1] (PyTorch's defaults from
 * uf_activation_default):
 *   HARDTANH    min_val, max_val     (-1, 1)    min_val <= max_val
 *   SOFTPLUS    beta, threshold      (1, 20)    beta != 0
 *   LEAKY_RELU  negative_slope       (0.01)
 *   ELU         alpha                (1)
 *   CELU        alpha                (1)        alpha != 0
 *   HARDSHRINK  lambda               (0.5)      lambda >= 0
 *   SOFTSHRINK  lambda               (0.5)      lambda >= 0
 * Every parameter must be finite in fp32. GELU is the erf form, GELU_TANH
 * PyTorch's approximate="tanh". */
typedef enum uf_activation {
    UF_ACT_IDENTITY = 0,
    UF_ACT_SIGMOID = 1,
    UF_ACT_LOGSIGMOID = 2,
    UF_ACT_TANH = 3,
    UF_ACT_RELU = 4,
    UF_ACT_GELU = 5,
    UF_ACT_GELU_TANH = 6,
    UF_ACT_SILU = 7,
    UF_ACT_RELU6 = 8,
    UF_ACT_HARDSIGMOID = 9,
    UF_ACT_HARDTANH = 10,
    UF_ACT_HARDSWISH = 11,
    UF_ACT_SELU = 12,
    UF_ACT_MISH = 13,
    UF_ACT_SOFTPLUS = 14,
    UF_ACT_SOFTSIGN = 15,
    UF_ACT_TANHSHRINK = 16,
    UF_ACT_LEAKY_RELU = 17,
    UF_ACT_ELU = 18,
    UF_ACT_CELU = 19,
    UF_ACT_HARDSHRINK = 20,
    UF_ACT_SOFTSHRINK = 21,
    UF_ACT_COUNT = 22 /* number of activations, not one itself */
} uf_activation;

typedef struct uf_activation_desc {
    uf_activation kind;
    double param[2]; /* see uf_activation; ignored by activations without parameters */
} uf_activation_desc;

/* The activation `kind` with PyTorch's default parameters. */
uf_activation_desc uf_activation_default(uf_activation kind);

/* The activation's name as PyTorch spells it ("gelu_tanh" for the tanh
 * approximation), or NULL for an unknown kind. */
const char *uf_activation_name(uf_activation kind);

/* Dropout with probability p of dropping an element, in [0, 1]: kept
 * elements are scaled by 1 / (1 - p). p = 0 keeps everything unchanged;
 * p = 1 drops everything. A NULL uf_dropout_desc pointer means p = 0. */
typedef struct uf_dropout_desc {
    double p;
    uint64_t seed;
    uint64_t offset;
} uf_dropout_desc;

/*
 * y = act(x) * keep / (1 - p), elementwise over `count` contiguous elements
 * (p = 1: y = act(x) * 0).
 *
 * act: NULL means identity. drop: NULL means no dropout.
 * dtype: UF_F32, UF_F16, UF_BF16 (arithmetic in fp32) or UF_F64 (fp64).
 * x, y: device pointers to `count` elements, any alignment of the element
 *   type. y may equal x (in place); other overlaps are UF_ERR_ALIAS.
 * keep_bits: NULL, or a device pointer to ceil(count / 8) bytes that receive
 *   the mask: bit (i % 8) of byte i / 8 is 1 where element i was kept (all
 *   ones without dropout; the unused high bits of the last byte are 0). It
 *   must not overlap x or y.
 * A NaN in x gives NaN in y (also where dropped, as act(x) * 0).
 *
 * Status: UF_ERR_NULL_POINTER (x or y NULL with count > 0), UF_ERR_BAD_DTYPE,
 * UF_ERR_BAD_SHAPE (count < 0), UF_ERR_BAD_ARGUMENT (unknown activation),
 * UF_ERR_BAD_VALUE (p outside [0, 1] or NaN; a parameter out of its
 * domain), UF_ERR_OVERFLOW, UF_ERR_ALIAS, and the runtime statuses
 * (UF_ERR_NO_DEVICE, UF_ERR_LAUNCH, UF_ERR_DEVICE). count = 0 is a no-op.
 */
uf_status uf_activation_forward(const uf_activation_desc *act, const uf_dropout_desc *drop,
                                uf_dtype dtype, int64_t count, const void *x, void *y,
                                void *keep_bits, uf_stream stream);

/*
 * dx = dy * keep / (1 - p) * act'(x): the gradient of uf_activation_forward
 * with the same act and drop (the mask is drawn again from seed and offset).
 * x is not read for the identity, and may then be NULL; otherwise a NaN in x
 * gives NaN in dx.
 *
 * x, dy, dx: device pointers to `count` elements of dtype; dx may equal dy
 * or x; other overlaps are UF_ERR_ALIAS. Statuses as for the forward pass.
 */
uf_status uf_activation_backward(const uf_activation_desc *act, const uf_dropout_desc *drop,
                                 uf_dtype dtype, int64_t count, const void *x, const void *dy,
                                 void *dx, uf_stream stream);

/* Dropout alone: uf_activation_forward / _backward with the identity. */
uf_status uf_dropout_forward(const uf_dropout_desc *drop, uf_dtype dtype, int64_t count,
                             const void *x, void *y, void *keep_bits, uf_stream stream);
uf_status uf_dropout_backward(const uf_dropout_desc *drop, uf_dtype dtype, int64_t count,
                              const void *dy, void *dx, uf_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* UNIFUSE_ACTIVATION_H */
