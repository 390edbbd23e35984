"""PyTorch >= 2.4 only: the ops as torch.library custom ops pass opcheck
(schema, fake tensors, autograd registration, AOT dispatch) and compile
with fullgraph=True to the same numbers as eager."""

import unittest

import torch

import unifuse_torch
from unifuse_torch import HAS_CUSTOM_OP, activation_dropout, bias_act_dropout_residual, \
    layer_norm, rms_norm, scaled_masked_softmax

from .support import Case, activation_missing, device, missing

REASON = ("torch %s has no torch.library.custom_op (needs >= 2.4); the ops are "
          "torch.autograd.Functions there" % torch.__version__)


def randn(*shape, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=dtype).to(device())


@unittest.skipUnless(HAS_CUSTOM_OP, REASON)
class OpCheck(unittest.TestCase):
    def test_softmax(self):
        op = torch.ops.unifuse.scaled_masked_softmax.default
        x = randn(2, 3, 4, 5).requires_grad_()
        bool_mask = randn(2, 1, 4, 5, seed=1) > 0.5
        bias = randn(1, 3, 1, 5, seed=2).requires_grad_()
        for args in ((x, None, 0.5, False), (x, bool_mask, 0.5, True), (x, bias, 0.25, False)):
            torch.library.opcheck(op, args)
        y = scaled_masked_softmax(x.detach(), None, 0.5)
        torch.library.opcheck(torch.ops.unifuse.scaled_masked_softmax_backward.default,
                              (y, randn(2, 3, 4, 5, seed=3), 0.5))

    def test_activation(self):
        if activation_missing():
            self.skipTest(activation_missing())
        op = torch.ops.unifuse.activation_dropout.default
        kind = unifuse_torch.activation_kinds()["gelu"]
        x = randn(64).requires_grad_()
        rng = torch.tensor([3, 4], dtype=torch.int64)
        for args in ((x, None, kind, 0.0, 0.0, 0.0), (x, rng, kind, 0.0, 0.0, 0.3),
                     (x, rng, 0, 0.0, 0.0, 0.3)):
            torch.library.opcheck(op, args)

    def test_norm(self):
        if missing("norm"):
            self.skipTest(missing("norm"))
        op = torch.ops.unifuse.norm.default
        x, res = randn(3, 2, 16).requires_grad_(), randn(3, 2, 16, seed=1).requires_grad_()
        w, b = randn(16, seed=2).requires_grad_(), randn(16, seed=3).requires_grad_()
        for args in ((x, None, w, b, 1, 1e-5), (x, res, w, b, 1, 1e-5),
                     (x, res, None, None, 1, 0.0), (x, None, w, None, 2, 1e-6),
                     (x, res, w, None, 2, 1e-6)):
            torch.library.opcheck(op, args)
        h = x.detach()
        _, _, mean, rstd = op(h, None, w.detach(), None, 1, 1e-5)
        torch.library.opcheck(torch.ops.unifuse.norm_backward.default,
                              (h, w.detach(), mean, rstd, randn(3, 2, 16, seed=4), None, 1, 1e-5,
                               True, True))

    def test_epilogue(self):
        if missing("epilogue"):
            self.skipTest(missing("epilogue"))
        op = torch.ops.unifuse.epilogue.default
        kind = unifuse_torch.activation_kinds()["gelu"]
        x, full = randn(4, 24).requires_grad_(), randn(4, 24, seed=1).requires_grad_()
        row, scale = randn(24, seed=2).requires_grad_(), randn(24, seed=3).requires_grad_()
        rng = torch.tensor([3, 4], dtype=torch.int64)
        for args in ((x, None, None, None, None, 1.0, 0, 0.0, 0.0, 0.0),
                     (x, row, None, full, rng, 1.0, 0, 0.0, 0.0, 0.2),
                     (x, full, scale, None, None, 1.0, kind, 0.0, 0.0, 0.0),
                     (x, row, scale, full, rng, 1.0, kind, 0.0, 0.0, 0.3),
                     (x, None, None, full, None, 0.5, kind, 0.0, 0.0, 0.0)):
            torch.library.opcheck(op, args)
        torch.library.opcheck(torch.ops.unifuse.epilogue_backward.default,
                              (x.detach(), row.detach(), scale.detach(), randn(4, 24, seed=4), rng,
                               1.0, kind, 0.0, 0.0, 0.3, True, True))


def attention_probs(x, mask, rng):
    """Scores -> probabilities -> a dropout-activated copy, all through unifuse."""
    probs = scaled_masked_softmax(x, mask, 0.5, True)
    if rng is None:
        return probs
    return activation_dropout(probs, "gelu_tanh", 0.2, rng=rng)


@unittest.skipUnless(HAS_CUSTOM_OP, REASON)
class Compile(Case):
    def run_both(self, fn, *args):
        """fn eager and compiled (fullgraph: any graph break fails), outputs
        and gradients w.r.t. the first argument."""
        results = []
        for f in (fn, torch.compile(fn, fullgraph=True)):
            x = args[0].detach().clone().requires_grad_()
            y = f(x, *args[1:])
            (dx,) = torch.autograd.grad(y, x, torch.ones_like(y))
            results.append((y.detach(), dx))
        return results

    def test_softmax_fullgraph(self):
        x, mask = randn(2, 3, 8, 8), randn(1, 1, 8, 8, seed=1)
        (y, dx), (yc, dxc) = self.run_both(attention_probs, x, mask, None)
        self.assert_close(yc, y)
        self.assert_close(dxc, dx)

    def test_softmax_and_dropout_fullgraph(self):
        if activation_missing():
            self.skipTest(activation_missing())
        x, mask = randn(2, 3, 8, 8), randn(1, 1, 8, 8, seed=1) > 1.0
        rng = torch.tensor([7, 8], dtype=torch.int64)
        (y, dx), (yc, dxc) = self.run_both(attention_probs, x, mask, rng)
        self.assert_close(yc, y)
        self.assert_close(dxc, dx)

    def test_norm_and_epilogue_fullgraph(self):
        if missing("norm") or missing("epilogue"):
            self.skipTest(missing("norm") or missing("epilogue"))
        w, b = randn(32, seed=1), randn(32, seed=2)

        def block(x, res, rng):
            y, h = layer_norm(x, w, b, residual=res)
            y = bias_act_dropout_residual(y, b, "gelu", p=0.1, rng=rng, residual=h)
            return rms_norm(y, w)

        x, res = randn(2, 5, 32), randn(2, 5, 32, seed=3)
        (y, dx), (yc, dxc) = self.run_both(block, x, res, torch.tensor([5, 6], dtype=torch.int64))
        self.assert_close(yc, y)
        self.assert_close(dxc, dx)

    def test_module_draws_fresh_masks_when_compiled(self):
        if activation_missing():
            self.skipTest(activation_missing())
        m = unifuse_torch.ActivationDropout("gelu", p=0.5)
        f = torch.compile(m, fullgraph=True)
        x = randn(256).abs() + 0.5
        a, b = f(x), f(x)
        self.assertFalse(torch.equal(a == 0, b == 0))
        dropped = a == 0
        self.assert_close(a[~dropped], torch.nn.functional.gelu(x)[~dropped] / 0.5)


if __name__ == "__main__":
    unittest.main()
