"""The operands of the row-wise ops (epilogue, norms): x read as [rows,
cols] over its last dimension, and the other tensors the C calls read with
x's dtype and extents. The library sees only pointers, so a tensor of the
wrong size or dtype is refused here, before it could be read out of bounds.
"""

import math

import torch

from ._library import torch_dtype_codes

# Not a uf_dtype: the library answers UF_ERR_BAD_DTYPE, as for any unknown value.
UNKNOWN_DTYPE = -1


def dtype_code(t):
    return torch_dtype_codes().get(t.dtype, UNKNOWN_DTYPE)


def rows_cols(x):
    """(rows, cols) of x viewed as [rows, cols]; a 0-dim x is one element."""
    if x.dim() == 0:
        return 1, 1
    return math.prod(x.shape[:-1]), x.shape[-1]


def stats_dtype(x):
    """The dtype of per-row statistics: the arithmetic type."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def like_x(t, x, op, name):
    """t contiguous, after checking it has x's shape and dtype (None passes)."""
    if t is None:
        return None
    if t.shape != x.shape or t.dtype != x.dtype:
        raise ValueError("%s: %s is %s %s, x %s %s" % (op, name, t.dtype, tuple(t.shape), x.dtype,
                                                        tuple(x.shape)))
    return t.contiguous()


def row_vector(t, x, op, name):
    """t contiguous, after checking it is a [cols] vector of x's dtype."""
    if t is None:
        return None
    cols = rows_cols(x)[1]
    if tuple(t.shape) != (cols,) or t.dtype != x.dtype:
        raise ValueError("%s: %s is %s %s, must be %s (%d,) for x %s" % (
            op, name, t.dtype, tuple(t.shape), x.dtype, cols, tuple(x.shape)))
    return t.contiguous()


def as_row_vector(t, x):
    """Caller-side convenience, outside the ops and so differentiable: a
    float vector of another dtype cast to x's (parameters kept in fp32 for
    an fp16 model), and a row-like shape such as [1, 1, C] flattened to
    [C]. Anything else is left for row_vector to refuse."""
    if t is None:
        return None
    if t.dtype != x.dtype and t.is_floating_point() and x.is_floating_point():
        t = t.to(x.dtype)
    if t.dim() > 1 and t.shape[-1] == t.numel():
        t = t.reshape(-1)
    return t


def empty_unless(flag, n, like):
    """A zeroed [n] tensor when the call writes it (zero where the library
    has no rows to sum), else an empty placeholder: custom ops cannot
    return None."""
    return like.new_zeros(n if flag else 0)
