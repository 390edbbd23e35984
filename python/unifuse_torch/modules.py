"""nn.Module wrappers of the unifuse ops, for model code."""

import torch

from .activation import _activation_op, new_rng, resolve_activation
from .epilogue import _epilogue_op, row_bias, split_scale
from .softmax import scaled_masked_softmax


class FusedScaleMaskSoftmax(torch.nn.Module):
    """softmax(x * scale + mask) over the last dim, optionally causal
    (bottom-right aligned), in one unifuse kernel.

    forward(x, mask=None): mask is None, a bool tensor (True hides a key)
    or an additive float tensor, broadcastable to x ([B, H, Sq, Sk] for
    attention scores). Rows with every key hidden come out as zeros.
    """

    def __init__(self, scale=1.0, causal=False):
        super().__init__()
        self.scale = float(scale)
        self.causal = bool(causal)

    def forward(self, x, mask=None):
        return scaled_masked_softmax(x, mask, self.scale, self.causal)

    def extra_repr(self):
        return "scale=%g, causal=%s" % (self.scale, self.causal)


class ActivationDropout(torch.nn.Module):
    """dropout(act(x), p) in one unifuse kernel.

    ActivationDropout("gelu", p=0.1), ActivationDropout("leaky_relu",
    negative_slope=0.2): the activation by its PyTorch name, its parameters
    by torch.nn.functional's keyword names. In training mode each call
    draws a fresh (seed, offset) from torch's global CPU generator (so
    torch.manual_seed makes runs repeatable) and the backward pass redraws
    the same mask from it; in eval mode, or with p = 0, dropout is off and
    the module is act(x).
    """

    def __init__(self, activation="gelu", p=0.0, **params):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError("dropout probability must be in [0, 1], got %r" % p)
        self.activation = activation
        self.params = dict(params)
        self.p = float(p)
        self.kind, self.param = resolve_activation(activation, **params)

    def forward(self, x):
        if self.training and self.p > 0.0:
            return _activation_op(x, new_rng(), self.kind, self.param[0], self.param[1], self.p)
        return _activation_op(x, None, self.kind, self.param[0], self.param[1], 0.0)

    def extra_repr(self):
        args = ["%r" % self.activation, "p=%g" % self.p]
        args += ["%s=%g" % kv for kv in sorted(self.params.items())]
        return ", ".join(args)


class FusedEpilogue(torch.nn.Module):
    """dropout(act(x + bias) * scale) + residual in one unifuse kernel: the
    "bias + dropout + residual" after a transformer's projections, and the
    MLP's "bias + activation".

    FusedEpilogue(p=0.1) for bias + dropout + residual,
    FusedEpilogue("gelu") for bias + GELU; activations and their parameters
    as for ActivationDropout. The module holds no parameters: forward(x,
    bias=None, residual=None, scale=None) takes them, so a linear layer
    keeps its own bias and applies it here, F.linear(h, lin.weight) giving
    x. bias is [C] or x's shape, scale a float or a [C] tensor. Dropout
    draws a fresh (seed, offset) per training call, as ActivationDropout
    does; in eval mode, or with p = 0, there is none.
    """

    def __init__(self, activation="identity", p=0.0, **params):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError("dropout probability must be in [0, 1], got %r" % p)
        self.activation = activation
        self.params = dict(params)
        self.p = float(p)
        self.kind, self.param = resolve_activation(activation, **params)

    def forward(self, x, bias=None, residual=None, scale=None):
        dropping = self.training and self.p > 0.0
        scale_t, scale_value = split_scale(scale, x)
        return _epilogue_op(x, row_bias(bias, x), scale_t, residual,
                            new_rng() if dropping else None, scale_value, self.kind,
                            self.param[0], self.param[1], self.p if dropping else 0.0)

    def extra_repr(self):
        args = ["%r" % self.activation, "p=%g" % self.p]
        args += ["%s=%g" % kv for kv in sorted(self.params.items())]
        return ", ".join(args)
