"""layer_norm and rms_norm against PyTorch, forward and backward, with and
without weight, bias and the fused residual add, in every dtype."""

import itertools
import unittest

import torch
import torch.nn.functional as F

from unifuse_torch import layer_norm, rms_norm
from unifuse_torch.norm import _norm_op

from .support import DTYPES, Case, device, grads64, rounded, skip_without

# Row lengths: one element, odd, and longer than one thread's share; many rows
# for the weight and bias gradients' sums.
SHAPES = [(4, 1), (5, 3), (2, 3, 1000), (1000,), (37, 64), (300, 7)]


def torch_layer_norm(x, weight=None, bias=None, eps=1e-5, residual=None):
    """The composition unifuse fuses, in PyTorch ops."""
    h = x if residual is None else x + residual
    y = F.layer_norm(h, h.shape[-1:], weight, bias, eps)
    return y if residual is None else (y, h)


def torch_rms_norm(x, weight=None, eps=1e-6, residual=None):
    """RMSNorm in PyTorch ops (torch 1.13 has no F.rms_norm)."""
    h = x if residual is None else x + residual
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    y = y if weight is None else y * weight
    return y if residual is None else (y, h)


KINDS = {"layer_norm": (layer_norm, torch_layer_norm, 1e-5),
         "rms_norm": (rms_norm, torch_rms_norm, 1e-6)}


def options(kind):
    """(weight, bias, residual) present or not; RMSNorm has no bias."""
    for w, b, r in itertools.product((False, True), repeat=3):
        if not (b and kind == "rms_norm"):
            yield w, b, r


@skip_without("norm")
class Norms(Case):
    def setUp(self):
        self.gen = torch.Generator().manual_seed(7)

    def grid(self, shape, dtype):
        """Multiples of 1/16 in [-4, 4]: two of them add up exactly in every
        dtype, bfloat16's 8 bits included."""
        k = torch.randint(-64, 65, shape, generator=self.gen, dtype=torch.int64)
        return (k / 16).to(dtype).to(device())

    def operands(self, shape, dtype, w, b, r):
        """x, residual, weight, bias (None where absent), upstream dy, dh.
        With a residual, x and it are on the grid: the backward pass
        differentiates at h as stored, rounded to the dtype, where the
        float64 reference sees the exact sum (tests/test_norm.c checks that
        rounding against a reference that sees it too)."""
        cols = shape[-1]
        x = self.grid(shape, dtype) if r else rounded(shape, dtype, self.gen, 2.0, 0.5)
        res = self.grid(shape, dtype) if r else None
        weight = rounded(cols, dtype, self.gen, 0.5, 1.0) if w else None
        bias = rounded(cols, dtype, self.gen) if b else None
        return x, res, weight, bias, rounded(shape, dtype, self.gen), rounded(shape, dtype,
                                                                              self.gen)

    def check(self, kind, shape, dtype, w, b, r):
        ours, theirs, eps = KINDS[kind]
        x, res, weight, bias, dy, dh = self.operands(shape, dtype, w, b, r)
        what = "%s %s weight=%s bias=%s residual=%s" % (kind, shape, w, b, r)

        def call(fn, x, res, weight, bias):
            args = (weight, bias) if kind == "layer_norm" else (weight,)
            return fn(x, *args, eps=eps, residual=res)

        tensors = [x, res, weight, bias]
        leaves = [None if t is None else t.clone().requires_grad_() for t in tensors]
        outs = call(ours, *leaves)
        outs = outs if isinstance(outs, tuple) else (outs,)
        upstream = (dy, dh)[:len(outs)]
        got = torch.autograd.grad(outs, [t for t in leaves if t is not None], upstream)
        want_outs, want_grads = grads64(lambda *t: call(theirs, *t), tensors, upstream)
        for name, o, wo in zip(("y", "h"), outs, want_outs):
            self.assertEqual((o.dtype, o.shape), (dtype, x.shape))
            self.assert_close(o, wo, dtype, "%s %s" % (what, name))
        # dweight and dbias are sums over rows of dy * hhat and of dy.
        rows = x.numel() // x.shape[-1]
        hhat = call(theirs, x.double() if res is None else x.double() + res.double(), None,
                    None, None)
        terms = {"dweight": (dy.double() * hhat).abs(), "dbias": dy.double().abs()}
        got = iter(got)
        for name, t, want in zip(("dx", "dresidual", "dweight", "dbias"), tensors, want_grads):
            if t is None:
                continue
            g = next(got)
            self.assertEqual(g.dtype, dtype, name)
            if name in terms:
                abs_sum = terms[name].reshape(rows, -1).sum(0)
                self.assert_close_sum(g, want, abs_sum, rows, "%s %s" % (what, name))
            else:
                self.assert_close(g, want, dtype, "%s %s" % (what, name))

    def test_every_dtype_shape_and_option(self):
        for kind, dtype, shape in itertools.product(KINDS, DTYPES, SHAPES):
            for w, b, r in options(kind):
                self.check(kind, shape, dtype, w, b, r)

    def test_gradcheck_float64(self):
        x, res, weight, bias, _, _ = self.operands((3, 5), torch.float64, True, True, True)
        leaves = [t.requires_grad_() for t in (x, res, weight, bias)]
        fn = lambda x, r, w, b: layer_norm(x, w, b, residual=r)  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(fn, leaves))
        fn = lambda x, r, w: rms_norm(x, w, residual=r)  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(fn, leaves[:3]))
        self.assertTrue(torch.autograd.gradcheck(lambda x: layer_norm(x), leaves[:1]))

    def test_saved_statistics(self):
        """The op's mean and rstd, which its backward pass reads: fp32 for
        the narrower dtypes, fp64 for float64."""
        for dtype in DTYPES:
            x = rounded((6, 40), dtype, self.gen, 3.0, 1.0)
            _, _, mean, rstd = _norm_op(x, None, None, None, 1, 1e-5)
            stat_dtype = torch.float64 if dtype == torch.float64 else torch.float32
            self.assertEqual((mean.dtype, rstd.dtype), (stat_dtype, stat_dtype))
            x64 = x.double()
            want = 1 / torch.sqrt(x64.var(-1, unbiased=False) + 1e-5)
            self.assert_close(mean, x64.mean(-1), stat_dtype)
            self.assert_close(rstd, want, stat_dtype)
            _, _, mean, rstd = _norm_op(x, None, None, None, 2, 1e-6)
            self.assertEqual(mean.numel(), 0)
            self.assert_close(rstd, torch.rsqrt(x64.pow(2).mean(-1) + 1e-6), stat_dtype)

    def test_weight_gradients_are_the_same_bits_every_run(self):
        # Enough rows for the column sums to be split into chunks.
        x, res, weight, bias, dy, _ = self.operands((4099, 48), torch.float32, True, True, True)
        runs = []
        for _ in range(3):
            leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
            y = layer_norm(leaves[0], leaves[1], leaves[2])
            runs.append(torch.autograd.grad(y, leaves, dy))
        for run in runs[1:]:
            for name, a, b in zip(("dx", "dweight", "dbias"), runs[0], run):
                self.assertTrue(torch.equal(a, b), name)

    def test_parameters_in_another_dtype_are_cast(self):
        x = rounded((8, 32), torch.bfloat16, self.gen)
        weight = rounded(32, torch.float32, self.gen).requires_grad_()
        bias = rounded(32, torch.float32, self.gen).requires_grad_()
        y = layer_norm(x, weight, bias)
        self.assertEqual(y.dtype, torch.bfloat16)
        dw, db = torch.autograd.grad(y, (weight, bias), torch.ones_like(y))
        self.assertEqual((dw.dtype, db.dtype), (torch.float32, torch.float32))
        want = torch_layer_norm(x.double(), weight.detach().bfloat16().double(),
                                bias.detach().bfloat16().double())
        self.assert_close(y, want)

    def test_only_h_used_downstream(self):
        """With a residual and y unused, x and the residual get h's gradient."""
        x = rounded((3, 9), torch.float64, self.gen).requires_grad_()
        res = rounded((3, 9), torch.float64, self.gen).requires_grad_()
        _, h = rms_norm(x, residual=res)
        dh = rounded((3, 9), torch.float64, self.gen)
        dx, dres = torch.autograd.grad(h, (x, res), dh)
        self.assert_close(dx, dh)
        self.assert_close(dres, dh)

    def test_non_contiguous_and_empty_inputs(self):
        x = rounded((16, 6), torch.float32, self.gen).t()
        self.assert_close(layer_norm(x), torch_layer_norm(x.double()), torch.float32)
        weight = torch.ones(5, device=device(), requires_grad=True)
        empty = torch.empty(0, 5, device=device(), requires_grad=True)
        y = layer_norm(empty, weight)
        self.assertEqual(y.shape, (0, 5))
        (dw,) = torch.autograd.grad(y, weight, torch.ones_like(y))
        self.assertTrue(torch.equal(dw, torch.zeros(5, device=device())))


if __name__ == "__main__":
    unittest.main()
