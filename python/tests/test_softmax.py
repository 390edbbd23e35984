"""scaled_masked_softmax against PyTorch's composition, forward and backward."""

import unittest

import torch

from unifuse_torch import FusedScaleMaskSoftmax, scaled_masked_softmax

from .support import DTYPES, LOW_PRECISION, Case, device

SCALE = 0.3


def causal_hidden(sq, sk):
    """True where the bottom-right aligned causal rule hides key j from query i."""
    i = torch.arange(sq).unsqueeze(1)
    j = torch.arange(sk).unsqueeze(0)
    return j > i + (sk - sq)


def reference(x, mask=None, scale=SCALE, causal=False):
    """PyTorch's composition, with unifuse's zeros for fully hidden rows."""
    s = x * scale
    hidden = torch.zeros(s.shape, dtype=torch.bool, device=x.device)
    if mask is not None and mask.dtype == torch.bool:
        hidden = hidden | mask
    elif mask is not None:
        s = s + mask
    if causal and x.dim() > 1:  # a 1-d x is one query that sees every key
        hidden = hidden | causal_hidden(x.shape[-2], x.shape[-1]).to(x.device)
    s = s.masked_fill(hidden, float("-inf"))
    y = torch.softmax(s, -1)
    empty = torch.isneginf(s).all(-1, keepdim=True)
    return y.masked_fill(empty, 0.0)


def softmax_backward_from(y, dy, scale):
    """The library's contract: dx from y and dy alone, in float64."""
    y, dy = y.double(), dy.double()
    return scale * y * (dy - (dy * y).sum(-1, keepdim=True))


class Forward(Case):
    def setUp(self):
        self.gen = torch.Generator().manual_seed(1)

    def randn(self, *shape, dtype=torch.float64):
        return torch.randn(*shape, generator=self.gen, dtype=torch.float64).to(dtype).to(device())

    def check(self, x, mask=None, causal=False, scale=SCALE):
        got = scaled_masked_softmax(x, mask, scale, causal)
        m = mask if mask is None or mask.dtype == torch.bool else mask.double()
        want = reference(x.double(), m, scale, causal).to(x.dtype)
        self.assert_close(got, want, msg="causal=%s mask=%s" % (
            causal, None if mask is None else (mask.dtype, tuple(mask.shape))))
        self.assertEqual((got.dtype, got.shape), (x.dtype, x.shape))
        self.assertTrue(got.is_contiguous())

    def test_plain_and_causal_every_dtype(self):
        for dtype in DTYPES:
            for shape in ((2, 3, 5, 7), (4, 4), (9,), (2, 1, 3, 64)):
                for causal in (False, True):
                    self.check(self.randn(*shape, dtype=dtype), causal=causal)

    def test_bool_mask_broadcast_shapes(self):
        for dtype in DTYPES:
            x = self.randn(2, 3, 6, 6, dtype=dtype)
            for mshape in ((2, 1, 6, 6), (1, 3, 1, 6), (6, 6), (6,), (2, 3, 6, 1)):
                mask = torch.rand(*mshape, generator=self.gen) < 0.3
                self.check(x, mask.to(device()))
                self.check(x, mask.to(device()), causal=True)

    def test_additive_mask_dtypes(self):
        for dtype in DTYPES:
            x = self.randn(2, 2, 4, 5, dtype=dtype)
            for mdtype in {dtype, torch.float32, torch.float64}:
                mask = self.randn(2, 1, 4, 5).to(mdtype)
                mask[0, 0, 1, 2] = float("-inf")
                self.check(x, mask)

    def test_expanded_mask_view_is_read_in_place(self):
        x = self.randn(2, 3, 4, 5)
        mask = (torch.rand(1, 1, 4, 5, generator=self.gen) < 0.5).to(device())
        self.check(x, mask.expand(2, 3, 4, 5))

    def test_non_contiguous_input(self):
        x = self.randn(2, 5, 3, 4).transpose(1, 2)
        self.assertFalse(x.is_contiguous())
        self.check(x, causal=True)

    def test_causal_rectangular_bottom_right(self):
        for sq, sk in ((3, 7), (7, 3)):
            x = self.randn(2, sq, sk)
            self.check(x, causal=True)
        # More queries than keys: the first Sq - Sk rows see no key at all.
        y = scaled_masked_softmax(self.randn(5, 2), causal=True)
        self.assertTrue(torch.equal(y[:3], torch.zeros(3, 2, dtype=y.dtype, device=y.device)))

    def test_fully_masked_rows_are_zero_not_nan(self):
        x = self.randn(2, 4, 6)
        mask = torch.zeros(2, 4, 6, dtype=torch.bool, device=device())
        mask[1, 2] = True
        y = scaled_masked_softmax(x, mask, SCALE)
        self.assertTrue(torch.equal(y[1, 2], torch.zeros(6, dtype=y.dtype, device=y.device)))
        self.assertFalse(torch.isnan(y).any())

    def test_empty_tensor(self):
        x = self.randn(0, 5)
        self.assertEqual(scaled_masked_softmax(x).shape, (0, 5))

    def test_module(self):
        x = self.randn(2, 2, 5, 5, dtype=torch.float32)
        mask = self.randn(1, 1, 5, 5, dtype=torch.float32)
        m = FusedScaleMaskSoftmax(scale=SCALE, causal=True)
        self.assertIn("causal=True", repr(m))
        self.assert_close(m(x, mask), scaled_masked_softmax(x, mask, SCALE, True))


class Backward(Case):
    def setUp(self):
        self.gen = torch.Generator().manual_seed(2)

    def randn(self, *shape, dtype=torch.float64):
        return torch.randn(*shape, generator=self.gen, dtype=torch.float64).to(dtype).to(device())

    def test_gradients_match_torch_autograd(self):
        for dtype in DTYPES:
            for causal in (False, True):
                x = self.randn(2, 3, 5, 6, dtype=dtype).requires_grad_()
                mask = (torch.rand(2, 1, 5, 6, generator=self.gen) < 0.2).to(device())
                dy = self.randn(2, 3, 5, 6, dtype=dtype)
                y = scaled_masked_softmax(x, mask, SCALE, causal)
                (dx,) = torch.autograd.grad(y, x, dy)
                if dtype in LOW_PRECISION:
                    # Rounding y to 8 or 11 bits moves dy - sum(dy * y) past
                    # the tolerance where it cancels: check the kernel's
                    # contract (dx from its own y) instead.
                    want = softmax_backward_from(y, dy, SCALE).to(dtype)
                else:
                    x64 = x.detach().double().requires_grad_()
                    (want,) = torch.autograd.grad(reference(x64, mask, SCALE, causal), x64,
                                                  dy.double())
                self.assert_close(dx, want.to(dtype), msg="causal=%s" % causal)

    def test_gradcheck_float64(self):
        x = self.randn(2, 3, 4).requires_grad_()
        mask = self.randn(1, 3, 4).requires_grad_()
        fn = lambda a, m: scaled_masked_softmax(a, m, SCALE, True)  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(fn, (x, mask)))

    def test_additive_mask_gradient_sums_over_broadcast(self):
        x = self.randn(2, 3, 4, 5).requires_grad_()
        mask = self.randn(3, 1, 5, dtype=torch.float32).requires_grad_()
        dy = self.randn(2, 3, 4, 5)
        y = scaled_masked_softmax(x, mask, SCALE)
        dx, dmask = torch.autograd.grad(y, (x, mask), dy)
        x64, m64 = x.detach().requires_grad_(), mask.detach().double().requires_grad_()
        want = torch.autograd.grad(torch.softmax(x64 * SCALE + m64, -1), (x64, m64), dy)
        self.assert_close(dx, want[0])
        self.assertEqual(dmask.dtype, torch.float32)
        self.assert_close(dmask, want[1].float())

    def test_module_trains(self):
        x = self.randn(1, 2, 3, 3).requires_grad_()
        FusedScaleMaskSoftmax(SCALE, causal=True)(x).pow(2).sum().backward()
        self.assertEqual(x.grad.shape, x.shape)
        self.assertTrue(torch.isfinite(x.grad).all())


if __name__ == "__main__":
    unittest.main()
