"""activation_dropout and dropout against torch.nn.functional, forward and
backward; the dropout mask against the Philox rule."""

import unittest

import torch
import torch.nn.functional as F

import unifuse_torch
from unifuse_torch import UnifuseError, activation_dropout, activation_kinds, dropout

from . import philox
from .support import DTYPES, Case, device, skip_without_activation

# name -> the torch.nn.functional composition, taking the same keywords.
REFERENCES = {
    "identity": lambda x: x,
    "sigmoid": torch.sigmoid,
    "logsigmoid": F.logsigmoid,
    "tanh": torch.tanh,
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "relu6": F.relu6,
    "hardsigmoid": F.hardsigmoid,
    "hardtanh": F.hardtanh,
    "hardswish": F.hardswish,
    "selu": F.selu,
    "mish": F.mish,
    "softplus": F.softplus,
    "softsign": F.softsign,
    "tanhshrink": F.tanhshrink,
    "leaky_relu": F.leaky_relu,
    "elu": F.elu,
    "celu": F.celu,
    "hardshrink": F.hardshrink,
    "softshrink": F.softshrink,
}
# Parameters other than PyTorch's defaults, to see that they reach the kernel.
OTHER_PARAMS = {
    "hardtanh": {"min_val": -0.5, "max_val": 2.0},
    "softplus": {"beta": 2.0, "threshold": 5.0},
    "leaky_relu": {"negative_slope": 0.2},
    "elu": {"alpha": 0.7},
    "celu": {"alpha": 1.3},
    "hardshrink": {"lambd": 0.3},
    "softshrink": {"lambd": 0.8},
}
# Where the activations above change formula, where PyTorch's derivative
# choice at the breakpoint matters.
BREAKPOINTS = [-6.0, -3.0, -2.0, -1.0, -0.8, -0.5, -0.3, 0.0, 0.3, 0.5, 0.8, 1.0, 2.0, 2.5, 3.0,
               6.0, 20.0, 25.0]
U64_SEED = 0xFEDCBA9876543210  # above 2**63: must reach C as the same 64 bits


def settled(name, x):
    """Where PyTorch's own derivative is the same in every release: all but
    hard swish's knees. At x = -3 and 3, PyTorch 1.13 gives -0.5 and 1.5
    from one CPU code path and 0 and 1 from another, and 2.x gives 0 and 1."""
    if name != "hardswish":
        return torch.ones_like(x, dtype=torch.bool)
    return x.detach().abs() != 3


def cases():
    """(name, params) for every activation the library has."""
    for name in activation_kinds():
        yield name, {}
        if name in OTHER_PARAMS:
            yield name, OTHER_PARAMS[name]


@skip_without_activation
class Activations(Case):
    def setUp(self):
        self.gen = torch.Generator().manual_seed(3)

    def inputs(self, n, dtype):
        x = 4 * torch.randn(n, generator=self.gen, dtype=torch.float64)
        return x.to(dtype).to(device())

    def test_names_are_pytorchs(self):
        self.assertEqual(sorted(activation_kinds()), sorted(REFERENCES))

    def test_forward_every_dtype(self):
        for dtype in DTYPES:
            x = self.inputs(1000, dtype)
            for name, params in cases():
                want = REFERENCES[name](x.double(), **params).to(dtype)
                self.assert_close(activation_dropout(x, name, **params), want,
                                  msg="%s %s" % (name, params))

    def test_backward_every_dtype(self):
        for dtype in DTYPES:
            x = self.inputs(1000, dtype).requires_grad_()
            dy = self.inputs(1000, dtype)
            for name, params in cases():
                (dx,) = torch.autograd.grad(activation_dropout(x, name, **params), x, dy)
                x64 = x.detach().double().requires_grad_()
                (want,) = torch.autograd.grad(REFERENCES[name](x64, **params), x64, dy.double())
                keep = settled(name, x)
                self.assert_close(dx[keep], want.to(dtype)[keep], msg="%s %s" % (name, params))

    def test_breakpoints_float64(self):
        x = torch.tensor(BREAKPOINTS, dtype=torch.float64, device=device())
        x = torch.cat([x, -x]).requires_grad_()
        for name, params in cases():
            y = activation_dropout(x, name, **params)
            (dx,) = torch.autograd.grad(y, x, torch.ones_like(y))
            x64 = x.detach().clone().requires_grad_()
            want = REFERENCES[name](x64, **params)
            (dwant,) = torch.autograd.grad(want, x64, torch.ones_like(want))
            self.assert_close(y, want, msg="%s %s forward" % (name, params))
            keep = settled(name, x)
            self.assert_close(dx[keep], dwant[keep], msg="%s %s backward" % (name, params))

    def test_gradcheck_float64(self):
        x = self.inputs(20, torch.float64).requires_grad_()
        for name in ("gelu", "silu", "mish", "softplus"):
            fn = lambda t: activation_dropout(t, name)  # noqa: E731
            self.assertTrue(torch.autograd.gradcheck(fn, (x,)), name)


@skip_without_activation
class Dropout(Case):
    def setUp(self):
        self.gen = torch.Generator().manual_seed(4)

    def positive(self, n, dtype=torch.float64):
        return (0.5 + torch.rand(n, generator=self.gen, dtype=torch.float64)).to(dtype).to(device())

    def test_elements_are_dropped_or_scaled(self):
        p = 0.3
        for dtype in DTYPES:
            x = self.positive(20000, dtype)
            y = activation_dropout(x, "gelu", p=p, rng=(11, 12))
            scaled = (F.gelu(x.double()) / (1 - p)).to(dtype)
            dropped = y == 0
            self.assert_close(torch.where(dropped, scaled, y), scaled)
            self.assertAlmostEqual(dropped.double().mean().item(), p, delta=0.02)

    def test_mask_follows_philox_rule_with_full_64_bit_seed(self):
        for seed, offset in ((U64_SEED, 7), (1, 2**40 + 3), (0, 0)):
            want = philox.kept(0.5, seed, offset, 67)
            y = dropout(torch.ones(67, dtype=torch.float32, device=device()), 0.5, (seed, offset))
            self.assertEqual((y != 0).tolist(), want, (seed, offset))
            y = activation_dropout(self.positive(67), "relu", 0.5, rng=(seed, offset))
            self.assertEqual((y != 0).tolist(), want, (seed, offset))

    def test_rng_as_tensor_equals_rng_as_ints(self):
        x = self.positive(100)
        rng = unifuse_torch.new_rng()
        seed, offset = rng.tolist()
        a = activation_dropout(x, "silu", 0.4, rng=rng)
        b = activation_dropout(x, "silu", 0.4, rng=(seed, offset))
        self.assertTrue(torch.equal(a, b))

    def test_same_rng_same_mask_new_offset_new_mask(self):
        x = self.positive(1000)
        a = activation_dropout(x, "relu", 0.5, rng=(5, 1))
        self.assertTrue(torch.equal(a, activation_dropout(x, "relu", 0.5, rng=(5, 1))))
        self.assertFalse(torch.equal(a, activation_dropout(x, "relu", 0.5, rng=(5, 2))))

    def test_backward_redraws_the_same_mask(self):
        p = 0.4
        for dtype in DTYPES:
            x = self.positive(5000, dtype).requires_grad_()
            dy = self.positive(5000, dtype)
            y = activation_dropout(x, "silu", p, rng=(21, 22))
            (dx,) = torch.autograd.grad(y, x, dy)
            dropped = y == 0
            self.assertTrue(torch.equal(dropped, dx == 0))
            x64 = x.detach().double().requires_grad_()
            (full,) = torch.autograd.grad(F.silu(x64), x64, dy.double() / (1 - p))
            self.assert_close(dx, full.masked_fill(dropped, 0).to(dtype))

    def test_gradcheck_with_dropout_float64(self):
        x = (torch.randn(30, generator=self.gen, dtype=torch.float64)).to(device())
        fn = lambda t: activation_dropout(t, "gelu_tanh", 0.3, rng=(8, 9))  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(fn, (x.requires_grad_(),)))
        fn = lambda t: dropout(t, 0.3, rng=(8, 9))  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(fn, (x,)))

    def test_p_zero_keeps_p_one_drops_everything(self):
        x = self.positive(100)
        self.assertTrue(torch.equal(dropout(x, 0.0), x))
        self.assertTrue(torch.equal(dropout(x, 1.0, (1, 1)), torch.zeros_like(x)))

    def test_dropout_needs_rng(self):
        with self.assertRaises(ValueError):
            dropout(self.positive(4), 0.5)


@skip_without_activation
class ActivationStatuses(unittest.TestCase):
    UF_ERR_BAD_DTYPE, UF_ERR_BAD_VALUE = 2, 4

    def assert_status(self, status, function, call):
        with self.assertRaises(UnifuseError) as caught:
            call()
        self.assertEqual((caught.exception.status, caught.exception.function), (status, function),
                         str(caught.exception))

    def test_bad_p(self):
        x = torch.ones(4, device=device())
        for p in (1.5, -0.1, float("nan")):
            self.assert_status(self.UF_ERR_BAD_VALUE, "uf_activation_forward",
                               lambda: activation_dropout(x, "gelu", p, rng=(1, 2)))
            self.assert_status(self.UF_ERR_BAD_VALUE, "uf_dropout_forward",
                               lambda: dropout(x, p, rng=(1, 2)))

    def test_parameters_out_of_domain(self):
        x = torch.ones(4, device=device())
        for name, params in (("celu", {"alpha": 0.0}), ("softplus", {"beta": 0.0}),
                             ("hardtanh", {"min_val": 1.0, "max_val": -1.0}),
                             ("hardshrink", {"lambd": -1.0}), ("elu", {"alpha": float("inf")})):
            self.assert_status(self.UF_ERR_BAD_VALUE, "uf_activation_forward",
                               lambda: activation_dropout(x, name, **params))

    def test_integer_input(self):
        x = torch.ones(4, dtype=torch.int32, device=device())
        self.assert_status(self.UF_ERR_BAD_DTYPE, "uf_activation_forward",
                           lambda: activation_dropout(x, "relu"))

    def test_names_and_keywords_checked_in_python(self):
        x = torch.ones(4, device=device())
        with self.assertRaises(ValueError):
            activation_dropout(x, "swish")
        with self.assertRaises(ValueError):
            activation_dropout(x, "relu", alpha=1.0)


if __name__ == "__main__":
    unittest.main()
