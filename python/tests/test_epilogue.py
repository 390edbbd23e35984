"""bias_act_dropout_residual against PyTorch's composition for every
combination of operands, forward and backward; dropout by its structure
and its mask; the refusals."""

import itertools
import unittest

import torch

from unifuse_torch import UnifuseError, bias_act_dropout_residual, dropout

from .support import DTYPES, Case, device, grads64, rounded, skip_without
from .test_activation import REFERENCES

ACTIVATIONS = ("identity", "gelu", "silu", "relu")
BIASES = (None, "row", "full")
SCALES = (None, "float", "row")
RESIDUALS = (None, "full")
FLOAT_SCALE = 0.7
SHAPE = (2, 3, 37)  # 6 rows of 37: odd, and more than one vector unit


def composition(x, bias, activation, scale, residual, p=0.0, keep=None):
    """PyTorch's ops for what the epilogue fuses; `keep`, when given, is
    the dropout mask to apply."""
    y = REFERENCES[activation](x if bias is None else x + bias)
    if scale is not None:
        y = y * scale
    if keep is not None:
        y = y * keep / (1 - p)
    return y if residual is None else y + residual


@skip_without("epilogue")
class Epilogue(Case):
    def setUp(self):
        self.gen = torch.Generator().manual_seed(9)

    def operands(self, dtype, bias, scale, residual, shape=SHAPE):
        x = rounded(shape, dtype, self.gen, 2.0)
        b = {None: None, "row": rounded(shape[-1], dtype, self.gen),
             "full": rounded(shape, dtype, self.gen)}[bias]
        s = {None: None, "float": FLOAT_SCALE,
             "row": rounded(shape[-1], dtype, self.gen, 0.5, 1.0)}[scale]
        r = rounded(shape, dtype, self.gen) if residual else None
        return x, b, s, r

    def check(self, dtype, activation, bias, scale, residual):
        x, b, s, r = self.operands(dtype, bias, scale, residual)
        dy = rounded(x.shape, dtype, self.gen)
        what = "%s bias=%s scale=%s residual=%s" % (activation, bias, scale, residual)
        float_scale = s if isinstance(s, float) else None
        tensors = [x, b, None if float_scale else s, r]

        def ours(x, b, s, r):
            return bias_act_dropout_residual(x, b, activation, float_scale or s, residual=r)

        def theirs(x, b, s, r):
            return composition(x, b, activation, float_scale or s, r)

        leaves = [None if t is None else t.clone().requires_grad_() for t in tensors]
        y = ours(*leaves)
        got = iter(torch.autograd.grad(y, [t for t in leaves if t is not None], dy))
        (want,), want_grads = grads64(theirs, tensors, (dy,))
        self.assertEqual((y.dtype, y.shape), (dtype, x.shape))
        self.assert_close(y, want, dtype, what)
        for name, t, g64 in zip(("dx", "dbias", "dscale", "dresidual"), tensors, want_grads):
            if t is not None:
                g = next(got)
                self.assertEqual((g.dtype, g.shape), (dtype, t.shape), name)
                self.assert_close(g, g64, dtype, "%s %s" % (what, name))

    def test_every_operand_combination_every_dtype(self):
        for dtype, activation in itertools.product(DTYPES, ACTIVATIONS):
            for bias, scale, residual in itertools.product(BIASES, SCALES, RESIDUALS):
                self.check(dtype, activation, bias, scale, residual)

    def test_row_sums_over_many_rows_every_dtype(self):
        for dtype in DTYPES:
            x, b, s, r = self.operands(dtype, "row", "row", "full", (1500, 7))
            dy = rounded(x.shape, dtype, self.gen)
            leaves = [t.clone().requires_grad_() for t in (x, b, s, r)]
            y = bias_act_dropout_residual(leaves[0], leaves[1], "gelu", leaves[2], residual=r)
            db, ds = torch.autograd.grad(y, leaves[1:3], dy)
            _, (dx64, db64, ds64, _) = grads64(
                lambda x, b, s, r: composition(x, b, "gelu", s, r), (x, b, s, r), (dy,))
            # The terms summed: dx's rows for dbias, dy * gelu(x + b) for dscale.
            act = REFERENCES["gelu"](x.double() + b.double())
            self.assert_close_sum(db, db64, dx64.abs().sum(0), 1500, "dbias")
            self.assert_close_sum(ds, ds64, (dy.double() * act).abs().sum(0), 1500, "dscale")

    def test_activation_parameters_reach_the_kernel(self):
        x = rounded(50, torch.float64, self.gen, 2.0)
        y = bias_act_dropout_residual(x, None, "leaky_relu", negative_slope=0.3)
        self.assert_close(y, torch.nn.functional.leaky_relu(x, 0.3))

    def test_gradcheck_float64(self):
        x, b, s, r = self.operands(torch.float64, "row", "row", "full", (3, 5))
        leaves = [t.requires_grad_() for t in (x, b, s, r)]
        fn = lambda x, b, s, r: bias_act_dropout_residual(  # noqa: E731
            x, b, "gelu_tanh", s, p=0.3, residual=r, rng=(4, 5))
        self.assertTrue(torch.autograd.gradcheck(fn, leaves))
        full = rounded((3, 5), torch.float64, self.gen).requires_grad_()
        fn = lambda x, b: bias_act_dropout_residual(x, b, "silu", 2.0)  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(fn, (leaves[0], full)))

    def test_row_sums_are_the_same_bits_every_run(self):
        # Enough rows for the sums over rows to be split into chunks.
        x, b, s, _ = self.operands(torch.float32, "row", "row", None, (4099, 24))
        dy = rounded(x.shape, torch.float32, self.gen)
        runs = []
        for _ in range(3):
            leaves = [t.clone().requires_grad_() for t in (x, b, s)]
            y = bias_act_dropout_residual(leaves[0], leaves[1], "gelu", leaves[2])
            runs.append(torch.autograd.grad(y, leaves, dy))
        for run in runs[1:]:
            for name, a, c in zip(("dx", "dbias", "dscale"), runs[0], run):
                self.assertTrue(torch.equal(a, c), name)

    def test_bias_in_another_dtype_is_cast(self):
        x = rounded((4, 16), torch.bfloat16, self.gen)
        bias = rounded(16, torch.float32, self.gen).requires_grad_()
        y = bias_act_dropout_residual(x, bias, "relu")
        (db,) = torch.autograd.grad(y, bias, torch.ones_like(y))
        self.assertEqual((y.dtype, db.dtype), (torch.bfloat16, torch.float32))

    def test_non_contiguous_and_empty(self):
        x = rounded((16, 6), torch.float64, self.gen).t()
        b = rounded(16, torch.float64, self.gen)
        self.assert_close(bias_act_dropout_residual(x, b, "tanh"), torch.tanh(x + b))
        bias = torch.ones(5, device=device(), requires_grad=True)
        y = bias_act_dropout_residual(torch.empty(0, 5, device=device()), bias)
        (db,) = torch.autograd.grad(y, bias, torch.ones_like(y))
        self.assertTrue(torch.equal(db, torch.zeros(5, device=device())))


@skip_without("epilogue")
class EpilogueDropout(Case):
    P = 0.3

    def setUp(self):
        self.gen = torch.Generator().manual_seed(10)

    def test_each_element_is_dropped_or_scaled(self):
        """Without a residual each element is 0 or act(x + b) * s / (1 - p);
        with one, the residual alone or the residual plus that."""
        for dtype, with_residual in itertools.product(DTYPES, (False, True)):
            x = rounded((40, 101), dtype, self.gen)
            b = rounded(101, dtype, self.gen)
            r = rounded((40, 101), dtype, self.gen) if with_residual else torch.zeros_like(x)
            y = bias_act_dropout_residual(x, b, "gelu", 1.5, self.P,
                                          r if with_residual else None, rng=(31, 32))
            kept = composition(x.double(), b.double(), "gelu", 1.5, None) / (1 - self.P)
            dropped = y == r
            self.assert_close(y, torch.where(dropped, r.double(), kept + r.double()),
                              msg="residual=%s" % with_residual)
            self.assertAlmostEqual(dropped.double().mean().item(), self.P, delta=0.03)

    def test_mask_is_dropouts_over_the_elements_in_order(self):
        x = 1.0 + rounded((9, 13), torch.float64, self.gen).abs()
        rng = (0xFEDCBA9876543210, 77)
        keep = dropout(torch.ones_like(x), self.P, rng) != 0
        y = bias_act_dropout_residual(x, rounded(13, torch.float64, self.gen).abs(), "relu",
                                      p=self.P, rng=rng)
        self.assertTrue(torch.equal(y != 0, keep))

    def test_backward_redraws_the_forwards_mask(self):
        for dtype in DTYPES:
            x = rounded((20, 33), dtype, self.gen).requires_grad_()
            b = rounded(33, dtype, self.gen).requires_grad_()
            s = rounded(33, dtype, self.gen, 0.5, 1.0).requires_grad_()
            r = rounded((20, 33), dtype, self.gen).requires_grad_()
            dy = rounded((20, 33), dtype, self.gen)
            rng = (5, 6)
            y = bias_act_dropout_residual(x, b, "silu", s, self.P, r, rng=rng)
            got = torch.autograd.grad(y, (x, b, s, r), dy)
            keep = (dropout(torch.ones(20, 33, dtype=torch.float64, device=device()), self.P,
                            rng) != 0).double()
            fn = lambda x, b, s, r: composition(x, b, "silu", s, r, self.P, keep)  # noqa: E731
            _, want = grads64(fn, (x, b, s, r), (dy,))
            for name, g, w in zip(("dx", "dbias", "dscale", "dresidual"), got, want):
                self.assert_close(g, w, dtype, name)

    def test_same_rng_same_result(self):
        x = rounded((8, 8), torch.float32, self.gen)
        a = bias_act_dropout_residual(x, p=0.5, rng=(1, 2))
        self.assertTrue(torch.equal(a, bias_act_dropout_residual(x, p=0.5, rng=(1, 2))))
        self.assertFalse(torch.equal(a, bias_act_dropout_residual(x, p=0.5, rng=(1, 3))))


@skip_without("epilogue")
class EpilogueRefusals(unittest.TestCase):
    UF_ERR_BAD_DTYPE, UF_ERR_BAD_VALUE = 2, 4

    def x(self, *shape, dtype=torch.float32):
        return torch.randn(shape, dtype=dtype, device=device())

    def assert_status(self, status, call):
        with self.assertRaises(UnifuseError) as caught:
            call()
        self.assertEqual((caught.exception.status, caught.exception.function),
                         (status, "uf_epilogue_forward"), str(caught.exception))

    def test_bad_p(self):
        for p in (1.5, -0.1, float("nan")):
            self.assert_status(self.UF_ERR_BAD_VALUE,
                               lambda: bias_act_dropout_residual(self.x(2, 3), p=p, rng=(1, 2)))

    def test_scale_out_of_domain(self):
        for scale in (float("inf"), float("nan"), 1e39):
            self.assert_status(self.UF_ERR_BAD_VALUE,
                               lambda: bias_act_dropout_residual(self.x(2, 3), scale=scale))
        # fp64 arithmetic takes what fp32 cannot hold
        bias_act_dropout_residual(self.x(2, 3, dtype=torch.float64), scale=1e39)

    def test_activation_parameter_out_of_domain(self):
        self.assert_status(self.UF_ERR_BAD_VALUE,
                           lambda: bias_act_dropout_residual(self.x(2, 3), None, "elu",
                                                             alpha=float("inf")))

    def test_integer_input(self):
        x = torch.ones(2, 3, dtype=torch.int32, device=device())
        self.assert_status(self.UF_ERR_BAD_DTYPE, lambda: bias_act_dropout_residual(x))

    def test_operands_that_do_not_fit_x(self):
        x = self.x(2, 3)
        for kwargs in ({"bias": self.x(4)}, {"bias": self.x(3, 2)}, {"scale": self.x(2, 3)},
                       {"residual": self.x(2, 3, dtype=torch.float64)},
                       {"residual": self.x(3)}):
            with self.assertRaises(ValueError, msg=str(list(kwargs))):
                bias_act_dropout_residual(x, **kwargs)

    def test_dropout_needs_rng_and_names_are_checked(self):
        with self.assertRaises(ValueError):
            bias_act_dropout_residual(self.x(2, 3), p=0.5)
        with self.assertRaises(ValueError):
            bias_act_dropout_residual(self.x(2, 3), None, "swish")


if __name__ == "__main__":
    unittest.main()
