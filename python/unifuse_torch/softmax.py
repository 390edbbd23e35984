"""Scaled masked softmax as a PyTorch op: forward and backward through
uf_softmax_forward / uf_softmax_backward."""

import ctypes
from typing import Optional

import torch

from . import _device
from ._library import UF_DTYPE_NONE, UF_MAX_DIMS, SoftmaxDesc, library, torch_dtype_codes
from ._registration import differentiable_op, plain_op

# Not a uf_dtype: the library answers UF_ERR_BAD_DTYPE, as for any unknown value.
_UNKNOWN_DTYPE = -1


def _compact_mask(mask, x):
    """The mask as the C call reads it: contiguous, with expanded
    (stride-0) dimensions folded back to extent 1 so that a broadcast view
    is not copied out in full, a key dimension of 1 widened to Sk (the
    library never broadcasts keys), and additive masks of another float
    dtype cast to fp32 (fp64 for an fp64 x). Integer masks are passed on
    for the library to reject."""
    if mask is None:
        return None, UF_DTYPE_NONE
    if mask.dim() == 0:
        mask = mask.reshape(1)
    for d in range(mask.dim()):
        if mask.stride(d) == 0 and mask.shape[d] > 1:
            mask = mask.narrow(d, 0, 1)
    sk = x.shape[-1] if x.dim() else 1
    if mask.shape[-1] == 1 and sk != 1:
        mask = mask.expand(*mask.shape[:-1], sk)
    if mask.dtype not in (torch.bool, x.dtype, torch.float32) and mask.is_floating_point():
        mask = mask.to(torch.float64 if x.dtype == torch.float64 else torch.float32)
    return mask.contiguous(), torch_dtype_codes().get(mask.dtype, _UNKNOWN_DTYPE)


def _desc(x, scale, causal=False, mask=None, mask_code=UF_DTYPE_NONE):
    """uf_softmax_desc for x; shapes beyond UF_MAX_DIMS are left for the
    library to reject by ndim."""
    d = SoftmaxDesc()
    d.dtype = torch_dtype_codes().get(x.dtype, _UNKNOWN_DTYPE)
    d.ndim = x.dim()
    for i, e in enumerate(x.shape[:UF_MAX_DIMS]):
        d.shape[i] = e
    d.scale = scale
    d.causal = int(causal)
    d.mask_dtype = mask_code
    if mask is not None:
        d.mask_ndim = mask.dim()
        for i, e in enumerate(mask.shape[:UF_MAX_DIMS]):
            d.mask_shape[i] = e
    return d


def _forward(x: torch.Tensor, mask: Optional[torch.Tensor], scale: float,
             causal: bool) -> torch.Tensor:
    lib = library()
    _device.check_tensors(lib, "scaled_masked_softmax", x, mask)
    x = x.contiguous()
    mask, mask_code = _compact_mask(mask, x)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    d = _desc(x, scale, causal, mask, mask_code)
    with _device.launch_on(x.device) as stream:
        lib.call("uf_softmax_forward", ctypes.byref(d), _device.pointer(x), _device.pointer(mask),
                 _device.pointer(y), stream)
    return y


def _forward_fake(x, mask, scale, causal):
    return x.new_empty(x.shape)


def _backward(y: torch.Tensor, dy: torch.Tensor, scale: float) -> torch.Tensor:
    lib = library()
    _device.check_tensors(lib, "scaled_masked_softmax_backward", y, dy)
    y, dy = y.contiguous(), dy.contiguous()
    if dy.dtype != y.dtype or dy.shape != y.shape:
        raise ValueError("softmax backward: dy is %s %s, y %s %s"
                         % (dy.dtype, tuple(dy.shape), y.dtype, tuple(y.shape)))
    dx = torch.empty(y.shape, dtype=y.dtype, device=y.device)
    d = _desc(y, scale)
    with _device.launch_on(y.device) as stream:
        lib.call("uf_softmax_backward", ctypes.byref(d), _device.pointer(y), _device.pointer(dy),
                 _device.pointer(dx), stream)
    return dx


def _backward_fake(y, dy, scale):
    return y.new_empty(y.shape)


_backward_op = plain_op("scaled_masked_softmax_backward", _backward, _backward_fake)


def _setup_context(ctx, inputs, output):
    _, mask, scale, _ = inputs
    ctx.save_for_backward(output)
    ctx.scale = scale
    ctx.mask_meta = None if mask is None else (mask.shape, mask.dtype)


def _grad(ctx, dy):
    (y,) = ctx.saved_tensors
    want_x, want_mask = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    if not want_mask:
        return (_backward_op(y, dy, ctx.scale) if want_x else None), None, None, None
    # An additive mask is differentiable too (a learned bias): its gradient
    # is the unscaled softmax gradient summed over the dims it broadcasts on.
    g = _backward_op(y, dy, 1.0)
    shape, dtype = ctx.mask_meta
    dmask = g.to(dtype).sum_to_size(shape)
    return (g * ctx.scale if want_x else None), dmask, None, None


_softmax_op = differentiable_op("scaled_masked_softmax", _forward, _forward_fake, _setup_context,
                                _grad)


def scaled_masked_softmax(x, mask=None, scale=1.0, causal=False):
    """softmax(x * scale + mask) over the last dimension, by unifuse.

    x: float32, float16, bfloat16 or float64, 1 to 8 dims, read as
      [..., Sq, Sk]; copied first if not contiguous. The result is a new
      contiguous tensor of x's shape and dtype.
    mask: None; a bool tensor (True hides a key); or an additive float
      tensor (-inf hides a key), broadcastable to x with at most x's number
      of dims. An additive mask can require grad.
    causal: hide key j from query i when j > i + Sk - Sq (bottom-right
      aligned, the usual lower triangle when Sq == Sk).
    A row whose keys are all hidden gives zeros (PyTorch's softmax gives
    NaN there). Invalid arguments raise UnifuseError with the library's
    status.
    """
    return _softmax_op(x, mask, float(scale), bool(causal))
