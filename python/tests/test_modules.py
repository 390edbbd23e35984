"""ActivationDropout: fresh masks in training, act(x) in eval, the saved
(seed, offset) reused by the backward pass."""

import unittest

import torch
import torch.nn.functional as F

from unifuse_torch import ActivationDropout

from .support import Case, device, skip_without_activation


@skip_without_activation
class ActivationDropoutModule(Case):
    def x(self, n=4000):
        gen = torch.Generator().manual_seed(5)
        return (0.5 + torch.rand(n, generator=gen, dtype=torch.float64)).to(device())

    def test_training_drops_and_scales(self):
        m = ActivationDropout("gelu", p=0.25)
        x = self.x()
        y = m(x)
        scaled = F.gelu(x) / 0.75
        dropped = y == 0
        self.assert_close(torch.where(dropped, scaled, y), scaled)
        self.assertAlmostEqual(dropped.double().mean().item(), 0.25, delta=0.03)

    def test_each_call_draws_a_new_mask_reproducible_by_seed(self):
        m = ActivationDropout("relu", p=0.5)
        x = self.x()
        torch.manual_seed(123)
        a, b = m(x), m(x)
        self.assertFalse(torch.equal(a, b))
        torch.manual_seed(123)
        self.assertTrue(torch.equal(a, m(x)))

    def test_eval_and_p_zero_are_the_activation(self):
        x = self.x()
        m = ActivationDropout("leaky_relu", p=0.5, negative_slope=0.3).eval()
        self.assert_close(m(x - 1.0), F.leaky_relu(x - 1.0, 0.3))
        self.assert_close(ActivationDropout("silu")(x), F.silu(x))

    def test_backward_uses_the_forwards_mask(self):
        m = ActivationDropout("silu", p=0.5)
        x = self.x().requires_grad_()
        y = m(x)
        m(x)  # a second draw in between must not change the first call's backward
        (dx,) = torch.autograd.grad(y, x, torch.ones_like(y))
        self.assertTrue(torch.equal(y == 0, dx == 0))
        x64 = x.detach().clone().requires_grad_()
        (full,) = torch.autograd.grad(F.silu(x64).sum() / 0.5, x64)
        self.assert_close(dx, full.masked_fill(y == 0, 0))

    def test_repr_and_bad_p(self):
        self.assertEqual(repr(ActivationDropout("elu", p=0.1, alpha=0.5)),
                         "ActivationDropout('elu', p=0.1, alpha=0.5)")
        with self.assertRaises(ValueError):
            ActivationDropout("relu", p=1.5)


if __name__ == "__main__":
    unittest.main()
