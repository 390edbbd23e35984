"""Activation fused with dropout as a PyTorch op: uf_activation_forward /
_backward, and uf_dropout_forward / _backward for the identity.

The dropout mask is never stored: the backward pass redraws it from the
same (seed, offset), which the op saves as a two-element int64 CPU tensor
`rng`. Keeping them in a tensor lets torch.compile trace a fresh draw per
call without baking the numbers into the graph.
"""

import ctypes
from typing import Optional

import torch

from . import _device
from ._library import ACTIVATION_SYMBOLS, UF_ACT_IDENTITY, ActivationDesc, DropoutDesc, library, \
    torch_dtype_codes
from ._registration import differentiable_op, plain_op

_UNKNOWN_DTYPE = -1
_U64 = (1 << 64) - 1

# The parameters of uf_activation_desc.param[0..1], by the keyword names
# torch.nn.functional uses for them.
_PARAM_NAMES = {
    "hardtanh": ("min_val", "max_val"),
    "softplus": ("beta", "threshold"),
    "leaky_relu": ("negative_slope",),
    "elu": ("alpha",),
    "celu": ("alpha",),
    "hardshrink": ("lambd",),
    "softshrink": ("lambd",),
}


def _table():
    lib = library()
    if not lib.has_activation():
        for name in ACTIVATION_SYMBOLS:
            lib.function(name)  # MissingSymbolError for the first one missing
    return lib.activations


def activation_kinds():
    """{name: uf_activation value}, as the library spells the names."""
    return {name: kind for name, (kind, _) in _table().items()}


def resolve_activation(name, **params):
    """(kind, (param0, param1)) for an activation name and its parameters
    given by PyTorch's keyword names; the others keep PyTorch's defaults
    (from uf_activation_default)."""
    table = _table()
    if name not in table:
        raise ValueError("unknown activation %r; unifuse has %s" % (name, ", ".join(table)))
    names = _PARAM_NAMES.get(name, ())
    unknown = set(params) - set(names)
    if unknown:
        raise ValueError("%s takes %s, not %s" % (name, names or "no parameters",
                                                  ", ".join(sorted(unknown))))
    kind, defaults = table[name]
    values = list(defaults)
    for i, key in enumerate(names):
        if key in params:
            values[i] = float(params[key])
    return kind, (values[0], values[1])


def new_rng(generator=None):
    """A fresh (seed, offset) pair drawn from torch's CPU generator (the
    global one unless `generator` is given), as an int64 tensor."""
    return torch.randint(-(1 << 63), (1 << 63) - 1, (2,), dtype=torch.int64, generator=generator)


def _rng_tensor(rng):
    """rng given as None, a pair of ints, or a tensor -> int64 CPU tensor."""
    if rng is None or isinstance(rng, torch.Tensor):
        return rng
    seed, offset = rng
    # Two's complement: 64-bit unsigned values fit an int64 tensor.
    return torch.tensor([(v & _U64) - ((v & (1 << 63)) << 1) for v in (seed, offset)],
                        dtype=torch.int64)


def _descs(kind, param0, param1, p, rng):
    act = ActivationDesc()
    act.kind = kind
    act.param[0], act.param[1] = param0, param1
    if p == 0.0:
        return act, None  # NULL: no dropout, no draw
    if rng is None:
        raise ValueError("dropout with p=%g needs rng (seed, offset)" % p)
    seed, offset = (int(v) & _U64 for v in rng.tolist())
    drop = DropoutDesc()
    drop.p, drop.seed, drop.offset = p, seed, offset
    return act, drop


def _ref(desc):
    return None if desc is None else ctypes.byref(desc)


def _forward(x: torch.Tensor, rng: Optional[torch.Tensor], kind: int, param0: float,
             param1: float, p: float) -> torch.Tensor:
    lib = library()
    _device.check_tensors(lib, "activation_dropout", x)
    x = x.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    act, drop = _descs(kind, param0, param1, p, rng)
    code = torch_dtype_codes().get(x.dtype, _UNKNOWN_DTYPE)
    xp, yp = _device.pointer(x), _device.pointer(y)
    with _device.launch_on(x.device) as stream:
        if kind == UF_ACT_IDENTITY:
            lib.call("uf_dropout_forward", _ref(drop), code, x.numel(), xp, yp, None, stream)
        else:
            lib.call("uf_activation_forward", ctypes.byref(act), _ref(drop), code, x.numel(), xp,
                     yp, None, stream)
    return y


def _forward_fake(x, rng, kind, param0, param1, p):
    return x.new_empty(x.shape)


def _backward(x: Optional[torch.Tensor], dy: torch.Tensor, rng: Optional[torch.Tensor],
              kind: int, param0: float, param1: float, p: float) -> torch.Tensor:
    lib = library()
    _device.check_tensors(lib, "activation_dropout_backward", x, dy)
    dy = dy.contiguous()
    dx = torch.empty(dy.shape, dtype=dy.dtype, device=dy.device)
    act, drop = _descs(kind, param0, param1, p, rng)
    code = torch_dtype_codes().get(dy.dtype, _UNKNOWN_DTYPE)
    with _device.launch_on(dy.device) as stream:
        if kind == UF_ACT_IDENTITY:
            lib.call("uf_dropout_backward", _ref(drop), code, dy.numel(), _device.pointer(dy),
                     _device.pointer(dx), stream)
        else:
            x = x.contiguous()
            if x.dtype != dy.dtype or x.shape != dy.shape:
                raise ValueError("activation backward: dy is %s %s, x %s %s"
                                 % (dy.dtype, tuple(dy.shape), x.dtype, tuple(x.shape)))
            lib.call("uf_activation_backward", ctypes.byref(act), _ref(drop), code, dy.numel(),
                     _device.pointer(x), _device.pointer(dy), _device.pointer(dx), stream)
    return dx


def _backward_fake(x, dy, rng, kind, param0, param1, p):
    return dy.new_empty(dy.shape)


_backward_op = plain_op("activation_dropout_backward", _backward, _backward_fake)


def _setup_context(ctx, inputs, output):
    x, rng, kind, param0, param1, p = inputs
    # The identity's gradient needs only the mask, not x.
    ctx.save_for_backward(None if kind == UF_ACT_IDENTITY else x, rng)
    ctx.args = (kind, param0, param1, p)


def _grad(ctx, dy):
    x, rng = ctx.saved_tensors
    dx = _backward_op(x, dy, rng, *ctx.args) if ctx.needs_input_grad[0] else None
    return dx, None, None, None, None, None


_activation_op = differentiable_op("activation_dropout", _forward, _forward_fake, _setup_context,
                                   _grad)


def activation_dropout(x, activation="gelu", p=0.0, rng=None, **params):
    """dropout(act(x), p): y = act(x) * keep / (1 - p), by unifuse.

    activation: a name as PyTorch spells it ("gelu", "gelu_tanh" for
      approximate="tanh", "relu", "silu", ...: see activation_kinds()), with
      its parameters as keywords named as in torch.nn.functional (e.g.
      negative_slope=0.2 for "leaky_relu").
    p: dropout probability in [0, 1]; 0 turns dropout off.
    rng: the mask's (seed, offset): a pair of ints or an int64 tensor of
      two elements (new_rng() draws one); required when p > 0. The same rng
      gives the same mask, in the forward and in the backward pass.
    x is copied first if not contiguous; the result is a new contiguous
    tensor. Invalid arguments raise UnifuseError with the library's status.
    """
    kind, (param0, param1) = resolve_activation(activation, **params)
    return _activation_op(x, _rng_tensor(rng) if p else None, kind, param0, param1, float(p))


def dropout(x, p, rng=None):
    """Dropout alone (activation_dropout with the identity)."""
    return _activation_op(x, _rng_tensor(rng) if p else None, UF_ACT_IDENTITY, 0.0, 0.0, float(p))
