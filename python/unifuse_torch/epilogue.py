"""A linear layer's elementwise epilogue as a PyTorch op:
y = dropout(act(x + bias) * scale) + residual in one pass, through
uf_epilogue_forward / uf_epilogue_backward.

How each operand is applied follows from its shape against x read as
[rows, cols]: a bias of x's shape is added element for element (FULL),
a [cols] bias is broadcast over the rows (ROW, a linear layer's bias); a
[cols] scale tensor is ROW, a float scale is one constant (SCALAR). As in
activation.py, the dropout mask is not stored but redrawn by the backward
pass from the saved (seed, offset).
"""

import ctypes
from typing import Optional, Tuple

import torch

from . import _device
from ._library import UF_OPERAND_FULL, UF_OPERAND_NONE, UF_OPERAND_ROW, UF_OPERAND_SCALAR, \
    EpilogueDesc, library
from ._operands import as_row_vector, dtype_code, empty_unless, like_x, row_vector, rows_cols
from ._registration import differentiable_op, plain_op
from .activation import _descs, _ref, _rng_tensor, resolve_activation

_OP = "bias_act_dropout_residual"


def _checked(x, bias, scale, residual):
    x = x.contiguous()
    if bias is not None:
        full = bias.shape == x.shape
        bias = like_x(bias, x, _OP, "bias") if full else row_vector(bias, x, _OP, "bias")
    return x, bias, row_vector(scale, x, _OP, "scale"), like_x(residual, x, _OP, "residual")


def _bias_kind(x, bias):
    if bias is None:
        return UF_OPERAND_NONE
    return UF_OPERAND_FULL if bias.shape == x.shape else UF_OPERAND_ROW


def _desc(x, bias, scale, scale_value, residual, act):
    d = EpilogueDesc()
    d.dtype = dtype_code(x)
    d.rows, d.cols = rows_cols(x)
    d.bias = _bias_kind(x, bias)
    d.act = act
    if scale is not None:
        d.scale = UF_OPERAND_ROW
    else:  # 1.0 is no scale at all; anything else, NaN included, goes to the library
        d.scale = UF_OPERAND_NONE if scale_value == 1.0 else UF_OPERAND_SCALAR
    d.scale_value = scale_value
    d.residual = UF_OPERAND_NONE if residual is None else UF_OPERAND_FULL
    return d


def _forward(x: torch.Tensor, bias: Optional[torch.Tensor], scale: Optional[torch.Tensor],
             residual: Optional[torch.Tensor], rng: Optional[torch.Tensor], scale_value: float,
             kind: int, param0: float, param1: float, p: float) -> torch.Tensor:
    lib = library()
    _device.check_tensors(lib, _OP, x, bias, scale, residual)
    x, bias, scale, residual = _checked(x, bias, scale, residual)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    act, drop = _descs(kind, param0, param1, p, rng)
    d = _desc(x, bias, scale, scale_value, residual, act)
    ptr = _device.pointer
    with _device.launch_on(x.device) as stream:
        lib.call("uf_epilogue_forward", ctypes.byref(d), _ref(drop), ptr(x), ptr(bias), ptr(scale),
                 ptr(residual), ptr(y), stream)
    return y


def _forward_fake(x, bias, scale, residual, rng, scale_value, kind, param0, param1, p):
    x, _, _, _ = _checked(x, bias, scale, residual)
    return x.new_empty(x.shape)


def _backward(x: torch.Tensor, bias: Optional[torch.Tensor], scale: Optional[torch.Tensor],
              dy: torch.Tensor, rng: Optional[torch.Tensor], scale_value: float, kind: int,
              param0: float, param1: float, p: float, want_dbias: bool,
              want_dscale: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dbias, dscale): dbias for a ROW bias only (a FULL bias's
    gradient is dx itself) and dscale for a scale tensor, each an empty
    placeholder when not asked for."""
    lib = library()
    _device.check_tensors(lib, _OP + "_backward", x, bias, scale, dy)
    x, bias, scale, _ = _checked(x, bias, scale, None)
    dy = like_x(dy, x, _OP, "dy")
    cols = rows_cols(x)[1]
    want_dbias = want_dbias and _bias_kind(x, bias) == UF_OPERAND_ROW
    want_dscale = want_dscale and scale is not None
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dbias, dscale = empty_unless(want_dbias, cols, x), empty_unless(want_dscale, cols, x)
    act, drop = _descs(kind, param0, param1, p, rng)
    d = _desc(x, bias, scale, scale_value, None, act)
    ptr = _device.pointer
    with _device.launch_on(x.device) as stream:
        lib.call("uf_epilogue_backward", ctypes.byref(d), _ref(drop), ptr(x), ptr(bias),
                 ptr(scale), ptr(dy), ptr(dx), ptr(dbias) if want_dbias else None,
                 ptr(dscale) if want_dscale else None, None, stream)
    return dx, dbias, dscale


def _backward_fake(x, bias, scale, dy, rng, scale_value, kind, param0, param1, p, want_dbias,
                   want_dscale):
    cols = rows_cols(x)[1]
    row_bias = _bias_kind(x, bias) == UF_OPERAND_ROW
    return (x.new_empty(x.shape), x.new_empty(cols if want_dbias and row_bias else 0),
            x.new_empty(cols if want_dscale and scale is not None else 0))


_backward_op = plain_op("epilogue_backward", _backward, _backward_fake)


def _setup_context(ctx, inputs, output):
    x, bias, scale, _, rng, *args = inputs
    ctx.save_for_backward(x, bias, scale, rng)
    ctx.args = tuple(args)
    ctx.bias_full = _bias_kind(x, bias) == UF_OPERAND_FULL


def _grad(ctx, dy):
    x, bias, scale, rng = ctx.saved_tensors
    need = ctx.needs_input_grad
    dx = dbias = dscale = None
    if any(need[:3]):
        want_dbias, want_dscale = need[1] and not ctx.bias_full, need[2]
        dx, dbias, dscale = _backward_op(x, bias, scale, dy, rng, *ctx.args, want_dbias,
                                         want_dscale)
        if ctx.bias_full:
            dbias = dx  # x + bias: a full bias's gradient is x's
    return (dx if need[0] else None, dbias if need[1] else None, dscale if need[2] else None,
            dy if need[3] else None) + (None,) * 6


_epilogue_op = differentiable_op("epilogue", _forward, _forward_fake, _setup_context, _grad)


def split_scale(scale, x):
    """scale given as None, a float or a [C] tensor -> (tensor or None, float)."""
    if isinstance(scale, torch.Tensor):
        return as_row_vector(scale, x), 1.0
    return None, 1.0 if scale is None else float(scale)


def row_bias(bias, x):
    """A bias that is not x's shape is a row bias: cast and flattened."""
    return bias if bias is None or bias.shape == x.shape else as_row_vector(bias, x)


def bias_act_dropout_residual(x, bias=None, activation="identity", scale=None, p=0.0,
                              residual=None, rng=None, **params):
    """y = dropout(act(x + bias) * scale, p) + residual in one unifuse pass.

    x: float32, float16, bfloat16 or float64, any shape, read as [rows, C]
      with C = x.shape[-1]; copied first if not contiguous.
    bias: None; a [C] vector added to every row (a linear layer's bias;
      another float dtype is cast to x's, differentiably); or a tensor of
      x's shape and dtype.
    activation, params: as for activation_dropout ("identity" for none).
    scale: None, a float, or a [C] tensor (gets a gradient).
    p, rng: dropout probability and the mask's (seed, offset), as for
      activation_dropout; the mask is drawn over x's elements in order.
    residual: None or a tensor of x's shape and dtype, added last.
    Gradients reach x, bias, a scale tensor and the residual. Invalid
    arguments raise UnifuseError with the library's status; operands of
    the wrong shape or dtype raise ValueError.
    """
    kind, (param0, param1) = resolve_activation(activation, **params)
    scale_t, scale_value = split_scale(scale, x)
    return _epilogue_op(x, row_bias(bias, x), scale_t, residual, _rng_tensor(rng) if p else None,
                        scale_value, kind, param0, param1, float(p))
