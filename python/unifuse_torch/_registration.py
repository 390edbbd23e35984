"""How a unifuse kernel becomes a PyTorch operator.

On PyTorch >= 2.4 each op is a torch.library custom op in the "unifuse"
namespace, with a fake implementation (shapes only, so torch.compile and
FakeTensor tracing never call the library) and its autograd formula
registered. Older PyTorch gets a torch.autograd.Function with the same
forward, setup_context and backward, so callers see one Python API.

In eager mode the custom op is bypassed: the same functions run through a
torch.autograd.Function, whose dispatch costs the host a fraction of a
custom op's (on PyTorch 2.11 a custom op with autograd spent about 0.5 ms
of host time per forward + backward in the training example, most of a
step). While torch.compile traces, the custom op is what it sees, so graphs
hold `torch.ops.unifuse.*` and their fake implementations.

Ops are described by plain functions with the custom-op contract:
  impl(*args) -> Tensor or tuple    annotated, for schema inference
  fake(*args) -> Tensor or tuple    same signature, metadata only
  setup_context(ctx, inputs, output)
  backward(ctx, *grads) -> one gradient (or None) per input, from one
                           gradient per output
"""

import threading

import torch

NAMESPACE = "unifuse"

# torch.library.custom_op and register_fake arrived together in 2.4.
HAS_CUSTOM_OP = hasattr(torch.library, "custom_op") and hasattr(torch.library, "register_fake")

_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)

# Set while an eager Function's backward runs, so that the backward kernels
# it calls (plain ops) run directly too.
_eager_backward = threading.local()


def plain_op(name, impl, fake):
    """An op without autograd (the backward kernels)."""
    if not HAS_CUSTOM_OP:
        return impl
    op = torch.library.custom_op("%s::%s" % (NAMESPACE, name), impl, mutates_args=())
    op.register_fake(fake)

    def call(*args):
        return impl(*args) if getattr(_eager_backward, "active", False) else op(*args)

    call.op = op
    return call


def differentiable_op(name, impl, fake, setup_context, backward):
    """An op whose gradient is `backward`; called positionally."""

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            out = impl(*args)
            setup_context(ctx, args, out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            outer = getattr(_eager_backward, "active", False)
            _eager_backward.active = True
            try:
                return backward(ctx, *grads)
            finally:
                _eager_backward.active = outer

    Function.__name__ = Function.__qualname__ = name
    if not HAS_CUSTOM_OP:
        return Function.apply
    op = torch.library.custom_op("%s::%s" % (NAMESPACE, name), impl, mutates_args=())
    op.register_fake(fake)
    op.register_autograd(backward, setup_context=setup_context)

    def call(*args):
        return op(*args) if _is_compiling() else Function.apply(*args)

    call.op = op
    return call
