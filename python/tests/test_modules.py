"""The modules: ActivationDropout and FusedEpilogue (fresh masks in
training, none in eval, the saved (seed, offset) reused by the backward
pass); FusedLayerNorm and FusedRMSNorm as stand-ins for PyTorch's."""

import unittest

import torch
import torch.nn.functional as F

from unifuse_torch import ActivationDropout, FusedEpilogue, FusedLayerNorm, FusedRMSNorm

from .support import Case, device, rounded, skip_without, skip_without_activation
from .test_norm import torch_rms_norm


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


@skip_without("epilogue")
class FusedEpilogueModule(Case):
    def operands(self):
        gen = torch.Generator().manual_seed(6)
        return (rounded((64, 40), torch.float64, gen), rounded(40, torch.float64, gen),
                rounded((64, 40), torch.float64, gen))

    def test_training_drops_eval_does_not(self):
        x, b, r = self.operands()
        m = FusedEpilogue(p=0.25)
        y = m(x, b, r)
        dropped = y == r
        self.assert_close(y, torch.where(dropped, r, (x + b) / 0.75 + r))
        self.assertAlmostEqual(dropped.double().mean().item(), 0.25, delta=0.05)
        self.assert_close(m.eval()(x, b, r), x + b + r)

    def test_bias_and_activation(self):
        x, b, _ = self.operands()
        self.assert_close(FusedEpilogue("gelu")(x, b), F.gelu(x + b))
        m = FusedEpilogue("leaky_relu", negative_slope=0.1)
        self.assert_close(m(x, b, scale=2.0), 2.0 * F.leaky_relu(x + b, 0.1))

    def test_new_mask_each_call_and_backward_uses_its_own(self):
        x, b, _ = self.operands()
        x = x.abs() + 0.5
        m = FusedEpilogue("relu", p=0.5)
        torch.manual_seed(3)
        xg = x.clone().requires_grad_()
        y = m(xg, b.abs())
        self.assertFalse(torch.equal(y == 0, m(x, b.abs()) == 0))
        (dx,) = torch.autograd.grad(y, xg, torch.ones_like(y))
        self.assertTrue(torch.equal(dx == 0, y == 0))
        torch.manual_seed(3)
        self.assertTrue(torch.equal(y, m(x, b.abs())))

    def test_repr_and_bad_p(self):
        self.assertEqual(repr(FusedEpilogue("elu", p=0.1, alpha=0.5)),
                         "FusedEpilogue('elu', p=0.1, alpha=0.5)")
        with self.assertRaises(ValueError):
            FusedEpilogue(p=-0.5)


@skip_without("norm")
class FusedNormModules(Case):
    def x(self, *shape):
        gen = torch.Generator().manual_seed(8)
        return rounded(shape, torch.float64, gen, 2.0, 1.0)

    def test_layer_norm_is_a_drop_in_for_torchs(self):
        theirs = torch.nn.LayerNorm(12, eps=1e-4, dtype=torch.float64)
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
            theirs.bias.uniform_(-1, 1)
        ours = FusedLayerNorm(12, eps=1e-4, dtype=torch.float64)
        self.assertEqual([n for n, _ in ours.named_parameters()], ["weight", "bias"])
        self.assertTrue(torch.equal(ours.weight, torch.ones(12, dtype=torch.float64)))
        self.assertTrue(torch.equal(ours.bias, torch.zeros(12, dtype=torch.float64)))
        ours.load_state_dict(theirs.state_dict())
        ours, theirs = ours.to(device()), theirs.to(device())
        x = self.x(2, 5, 12)
        self.assert_close(ours(x), theirs(x))
        (ours(x) * x).sum().backward()
        (theirs(x) * x).sum().backward()
        self.assert_close(ours.weight.grad, theirs.weight.grad)
        self.assert_close(ours.bias.grad, theirs.bias.grad)

    def test_options_and_several_normalised_dims(self):
        x, r = self.x(3, 4, 5), self.x(3, 4, 5)
        m = FusedLayerNorm((4, 5), elementwise_affine=False).to(device())
        self.assertEqual(list(m.parameters()), [])
        want = F.layer_norm(x + r, (4, 5))
        y, h = m(x, r)
        self.assert_close(y, want)
        self.assert_close(h, x + r)
        m = FusedLayerNorm(5, bias=False, dtype=torch.float64).to(device())
        self.assertIsNone(m.bias)
        self.assert_close(m(x), F.layer_norm(x, (5,)))
        self.assertEqual(repr(m), "FusedLayerNorm((5,), eps=1e-05, elementwise_affine=True)")

    def test_rms_norm(self):
        x = self.x(6, 10)
        m = FusedRMSNorm(10, dtype=torch.float64).to(device())
        with torch.no_grad():
            m.weight.uniform_(0.5, 1.5)
        eps = torch.finfo(torch.float64).eps  # eps=None: PyTorch's default
        self.assert_close(m(x), torch_rms_norm(x, m.weight, eps))
        x = x.reshape(6, 2, 5).float()
        y, h = FusedRMSNorm((2, 5), eps=1e-3).to(device())(x, x)
        want = torch_rms_norm(2 * x.double().reshape(6, 10), eps=1e-3)
        self.assert_close(y, want.reshape(6, 2, 5), torch.float32)
        self.assert_close(h, 2 * x)
        self.assertEqual(repr(FusedRMSNorm(4)), "FusedRMSNorm((4,), eps=None, "
                                                "elementwise_affine=True)")


if __name__ == "__main__":
    unittest.main()
