"""The norms' refusals: the library's statuses as UnifuseError, and
operands the library could only read out of bounds as ValueError."""

import unittest

import torch

from unifuse_torch import FusedLayerNorm, UnifuseError, layer_norm, rms_norm
from unifuse_torch.norm import _backward, _norm_op

from .support import device, skip_without

UF_ERR_BAD_DTYPE, UF_ERR_BAD_VALUE, UF_ERR_BAD_ARGUMENT = 2, 4, 11


@skip_without("norm")
class NormStatuses(unittest.TestCase):
    def x(self, *shape, dtype=torch.float32):
        return torch.randn(shape, dtype=dtype, device=device())

    def assert_status(self, status, function, call):
        with self.assertRaises(UnifuseError) as caught:
            call()
        self.assertEqual((caught.exception.status, caught.exception.function), (status, function),
                         str(caught.exception))

    def test_eps_out_of_domain(self):
        for eps in (-1e-5, float("nan"), float("inf")):
            self.assert_status(UF_ERR_BAD_VALUE, "uf_norm_forward",
                               lambda: layer_norm(self.x(2, 3), eps=eps))
            self.assert_status(UF_ERR_BAD_VALUE, "uf_norm_forward",
                               lambda: rms_norm(self.x(2, 3), eps=eps))

    def test_integer_input(self):
        x = torch.ones(2, 3, dtype=torch.int32, device=device())
        self.assert_status(UF_ERR_BAD_DTYPE, "uf_norm_forward", lambda: layer_norm(x))
        self.assert_status(UF_ERR_BAD_DTYPE, "uf_norm_forward", lambda: rms_norm(x))

    def test_rms_norm_has_no_bias(self):
        v = self.x(3)
        self.assert_status(UF_ERR_BAD_ARGUMENT, "uf_norm_forward",
                           lambda: _norm_op(self.x(2, 3), None, v, v, 2, 1e-6))

    def test_backward_status(self):
        x = self.x(2, 3, dtype=torch.float64)
        _, _, mean, rstd = _norm_op(x, None, None, None, 1, 1e-5)
        with self.assertRaises(UnifuseError) as caught:
            _backward(x, None, mean, rstd, torch.ones_like(x), None, 1, -1.0, False, False)
        self.assertEqual((caught.exception.status, caught.exception.function),
                         (UF_ERR_BAD_VALUE, "uf_norm_backward"))

    def test_operands_that_do_not_fit_x(self):
        x = self.x(2, 3)
        for call in (lambda: layer_norm(x, self.x(4)),                    # weight too long
                     lambda: layer_norm(x, None, self.x(2, 3)),           # bias not a row
                     lambda: rms_norm(x, residual=self.x(3, 2)),          # residual's shape
                     lambda: layer_norm(x, residual=self.x(2, 3, dtype=torch.float64)),
                     lambda: _norm_op(x, None, self.x(3, dtype=torch.float64), None, 1, 1e-5)):
            with self.assertRaises(ValueError):
                call()

    def test_backward_checks_the_statistics(self):
        x = self.x(2, 3)
        _, _, mean, rstd = _norm_op(x, None, None, None, 1, 1e-5)
        for m, r in ((mean[:1], rstd), (mean, rstd.double())):
            with self.assertRaises(ValueError):
                _backward(x, None, m, r, torch.ones_like(x), None, 1, 1e-5, False, False)

    def test_module_shape_mismatch(self):
        with self.assertRaises(ValueError):
            FusedLayerNorm(4)(self.x(2, 3))


if __name__ == "__main__":
    unittest.main()
