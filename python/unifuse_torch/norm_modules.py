"""FusedLayerNorm and FusedRMSNorm: drop-in modules for torch.nn.LayerNorm
and torch.nn.RMSNorm (same arguments, parameter names and initial values,
so state dicts load either way), with the residual add fusable in front."""

import math

import torch

from ._library import UF_NORM_LAYER, UF_NORM_RMS
from .norm import _norm


class _FusedNorm(torch.nn.Module):
    kind = None

    def __init__(self, normalized_shape, eps, elementwise_affine, bias, device, dtype):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        for name, wanted in (("weight", elementwise_affine), ("bias", elementwise_affine and bias)):
            value = torch.empty(self.normalized_shape, device=device, dtype=dtype)
            self.register_parameter(name, torch.nn.Parameter(value) if wanted else None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            torch.nn.init.ones_(self.weight)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, x, residual=None):
        """norm(x), or with a residual (y, h) where h = x + residual is
        normalised and returned for the residual stream."""
        k = len(self.normalized_shape)
        if x.dim() < k or tuple(x.shape[x.dim() - k:]) != self.normalized_shape:
            raise ValueError("%s%s: input of shape %s does not end in %s" % (
                type(self).__name__, self.normalized_shape, tuple(x.shape),
                self.normalized_shape))
        if k == 1:
            return _norm(self.kind, x, self.weight, self.bias, self.eps, residual)
        # Several normalised dims are one row of their product.
        n = math.prod(self.normalized_shape)
        flat = lambda t: t if t is None else t.reshape(*t.shape[:t.dim() - k], n)  # noqa: E731
        out = _norm(self.kind, flat(x), flat(self.weight), flat(self.bias), self.eps,
                    flat(residual))
        if residual is None:
            return out.reshape(x.shape)
        return out[0].reshape(x.shape), out[1].reshape(x.shape)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(
            **self.__dict__)


class FusedLayerNorm(_FusedNorm):
    """torch.nn.LayerNorm by unifuse: normalised over the trailing
    normalized_shape dims, weight ones and bias zeros to start with.
    forward(x, residual=None) returns y, or (y, x + residual) with a
    residual."""

    kind = UF_NORM_LAYER

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, bias, device, dtype)


class FusedRMSNorm(_FusedNorm):
    """torch.nn.RMSNorm by unifuse: y = h / sqrt(mean(h^2) + eps) * weight;
    eps=None takes torch.finfo(x.dtype).eps, as PyTorch's does.
    forward(x, residual=None) as for FusedLayerNorm."""

    kind = UF_NORM_RMS

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, False, device, dtype)
