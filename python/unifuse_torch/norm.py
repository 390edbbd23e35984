"""LayerNorm and RMSNorm over the last dimension, optionally with the
residual add fused in front, as PyTorch ops: uf_norm_forward /
uf_norm_backward.

One op serves both kinds and returns (y, h, mean, rstd): h = x + residual
when there is a residual (an empty placeholder otherwise, since a custom op
cannot return None or an alias of its input), and the per-row statistics,
which the backward pass reads instead of recomputing them.
"""

import ctypes
from typing import Optional, Tuple

import torch

from . import _device
from ._library import UF_NORM_LAYER, UF_NORM_RMS, NormDesc, library
from ._operands import as_row_vector, dtype_code, empty_unless, like_x, row_vector, rows_cols, \
    stats_dtype
from ._registration import differentiable_op, plain_op


def _name(kind):
    return "layer_norm" if kind == UF_NORM_LAYER else "rms_norm"


def _desc(kind, x, eps, has_weight, has_bias, add_residual):
    d = NormDesc()
    d.kind, d.dtype = kind, dtype_code(x)
    d.rows, d.cols = rows_cols(x)
    d.eps = eps
    d.has_weight, d.has_bias, d.add_residual = int(has_weight), int(has_bias), int(add_residual)
    return d


def _outputs(x, has_residual, kind):
    """Empty (y, h, mean, rstd) for x: the real outputs and the fake ones alike."""
    rows = rows_cols(x)[0]
    stats = stats_dtype(x)
    return (x.new_empty(x.shape), x.new_empty(x.shape if has_residual else (0,)),
            x.new_empty(rows if kind == UF_NORM_LAYER else 0, dtype=stats),
            x.new_empty(rows, dtype=stats))


def _checked(x, residual, weight, bias, op):
    return (x.contiguous(), like_x(residual, x, op, "residual"),
            row_vector(weight, x, op, "weight"), row_vector(bias, x, op, "bias"))


def _forward(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
             bias: Optional[torch.Tensor], kind: int,
             eps: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    lib = library()
    op = _name(kind)
    _device.check_tensors(lib, op, x, residual, weight, bias)
    x, residual, weight, bias = _checked(x, residual, weight, bias, op)
    y, h, mean, rstd = _outputs(x, residual is not None, kind)
    d = _desc(kind, x, eps, weight is not None, bias is not None, residual is not None)
    p = _device.pointer
    with _device.launch_on(x.device) as stream:
        lib.call("uf_norm_forward", ctypes.byref(d), p(x), p(residual), p(weight), p(bias), p(y),
                 p(h) if residual is not None else None,
                 p(mean) if kind == UF_NORM_LAYER else None, p(rstd), stream)
    return y, h, mean, rstd


def _forward_fake(x, residual, weight, bias, kind, eps):
    x, residual, _, _ = _checked(x, residual, weight, bias, _name(kind))
    return _outputs(x, residual is not None, kind)


def _check_stats(stat, h, n, op, name):
    """The statistics the C call reads: [n] in the arithmetic type."""
    if tuple(stat.shape) != (n,) or stat.dtype != stats_dtype(h):
        raise ValueError("%s backward: %s is %s %s, must be %s (%d,)"
                         % (op, name, stat.dtype, tuple(stat.shape), stats_dtype(h), n))
    return stat.contiguous()


def _backward(h: torch.Tensor, weight: Optional[torch.Tensor], mean: torch.Tensor,
              rstd: torch.Tensor, dy: torch.Tensor, dh_extra: Optional[torch.Tensor], kind: int,
              eps: float, want_dweight: bool,
              want_dbias: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    lib = library()
    op = _name(kind)
    _device.check_tensors(lib, op + "_backward", h, weight, mean, rstd, dy, dh_extra)
    h = h.contiguous()
    dy, dh_extra = like_x(dy, h, op, "dy"), like_x(dh_extra, h, op, "dh_extra")
    weight = row_vector(weight, h, op, "weight")
    rows, cols = rows_cols(h)
    layer = kind == UF_NORM_LAYER
    mean = _check_stats(mean, h, rows, op, "mean") if layer else None
    rstd = _check_stats(rstd, h, rows, op, "rstd")
    want_dweight = want_dweight and weight is not None
    dx = torch.empty(h.shape, dtype=h.dtype, device=h.device)
    dweight, dbias = empty_unless(want_dweight, cols, h), empty_unless(want_dbias, cols, h)
    # The bias is not read here: has_bias only asks for its gradient.
    d = _desc(kind, h, eps, weight is not None, want_dbias, False)
    p = _device.pointer
    with _device.launch_on(h.device) as stream:
        lib.call("uf_norm_backward", ctypes.byref(d), p(h), p(weight), p(mean), p(rstd), p(dy),
                 p(dh_extra), p(dx), p(dweight) if want_dweight else None,
                 p(dbias) if want_dbias else None, stream)
    return dx, dweight, dbias


def _backward_fake(h, weight, mean, rstd, dy, dh_extra, kind, eps, want_dweight, want_dbias):
    cols = rows_cols(h)[1]
    return (h.new_empty(h.shape), h.new_empty(cols if want_dweight and weight is not None else 0),
            h.new_empty(cols if want_dbias else 0))


_backward_op = plain_op("norm_backward", _backward, _backward_fake)


def _setup_context(ctx, inputs, output):
    x, residual, weight, _, kind, eps = inputs
    _, h, mean, rstd = output
    ctx.mark_non_differentiable(mean, rstd)
    if residual is None:
        ctx.mark_non_differentiable(h)
    # The backward pass normalises h again: x itself when there is no residual.
    ctx.save_for_backward(x if residual is None else h, weight, mean, rstd)
    ctx.args = (kind, eps)
    ctx.has_residual = residual is not None


def _grad(ctx, dy, dh, dmean, drstd):
    h, weight, mean, rstd = ctx.saved_tensors
    need = ctx.needs_input_grad
    if not any(need[:4]):
        return None, None, None, None, None, None
    want_dweight, want_dbias = weight is not None and need[2], need[3]
    if dy is None:
        dy = torch.zeros_like(h)
    dh_extra = dh if ctx.has_residual else None
    dx, dweight, dbias = _backward_op(h, weight, mean, rstd, dy, dh_extra, *ctx.args,
                                      want_dweight, want_dbias)
    # h = x + residual: both get h's gradient.
    return (dx if need[0] else None, dx if need[1] else None, dweight if want_dweight else None,
            dbias if want_dbias else None, None, None)


_norm_op = differentiable_op("norm", _forward, _forward_fake, _setup_context, _grad)


def _norm(kind, x, weight, bias, eps, residual):
    if eps is None:  # torch.nn.RMSNorm's default
        eps = torch.finfo(x.dtype).eps if x.is_floating_point() else 0.0
    y, h, _, _ = _norm_op(x, residual, as_row_vector(weight, x), as_row_vector(bias, x), kind,
                          float(eps))
    return y if residual is None else (y, h)


def layer_norm(x, weight=None, bias=None, eps=1e-5, residual=None):
    """LayerNorm over the last dimension of x, by unifuse.

    y = (h - mean) / sqrt(var + eps) * weight + bias with h = x, or with
    h = x + residual when a residual (x's shape and dtype) is given; then
    the result is (y, h), h being the sum to carry on as the residual
    stream, and gradients reaching h are added to those from y.
    x: float32, float16, bfloat16 or float64, any leading shape (the norm
      is over x.shape[-1]); copied first if not contiguous.
    weight, bias: None or [C] tensors (C = x.shape[-1]); another float
      dtype is cast to x's, differentiably.
    The variance is the biased one, as in torch.nn.functional.layer_norm.
    Invalid arguments raise UnifuseError with the library's status; a
    residual or vector of the wrong shape or dtype raises ValueError.
    """
    return _norm(UF_NORM_LAYER, x, weight, bias, eps, residual)


def rms_norm(x, weight=None, eps=1e-6, residual=None):
    """RMSNorm over the last dimension of x, by unifuse:
    y = h / sqrt(mean(h^2) + eps) * weight. eps=None takes
    torch.finfo(x.dtype).eps, as torch.nn.RMSNorm does. Otherwise as
    layer_norm (no bias): with a residual, returns (y, h = x + residual).
    """
    return _norm(UF_NORM_RMS, x, weight, None, eps, residual)
