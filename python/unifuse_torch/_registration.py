"""How a unifuse kernel becomes a PyTorch operator.

On PyTorch >= 2.4 each op is a torch.library custom op in the "unifuse"
namespace, with a fake implementation (shapes only, so torch.compile and
FakeTensor tracing never call the library) and its autograd formula
registered. Older PyTorch gets a torch.autograd.Function with the same
forward, setup_context and backward, so callers see one Python API.

Ops are described by plain functions with the custom-op contract:
  impl(*args) -> Tensor or tuple    annotated, for schema inference
  fake(*args) -> Tensor or tuple    same signature, metadata only
  setup_context(ctx, inputs, output)
  backward(ctx, *grads) -> one gradient (or None) per input, from one
                           gradient per output
"""

import torch

NAMESPACE = "unifuse"

# torch.library.custom_op and register_fake arrived together in 2.4.
HAS_CUSTOM_OP = hasattr(torch.library, "custom_op") and hasattr(torch.library, "register_fake")


def plain_op(name, impl, fake):
    """An op without autograd (the backward kernels)."""
    if not HAS_CUSTOM_OP:
        return impl
    op = torch.library.custom_op("%s::%s" % (NAMESPACE, name), impl, mutates_args=())
    op.register_fake(fake)
    return op


def differentiable_op(name, impl, fake, setup_context, backward):
    """An op whose gradient is `backward`; called positionally."""
    if HAS_CUSTOM_OP:
        op = torch.library.custom_op("%s::%s" % (NAMESPACE, name), impl, mutates_args=())
        op.register_fake(fake)
        op.register_autograd(backward, setup_context=setup_context)
        return op

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            out = impl(*args)
            setup_context(ctx, args, out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            return backward(ctx, *grads)

    Function.__name__ = Function.__qualname__ = name
    return Function.apply
