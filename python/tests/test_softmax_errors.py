"""Arguments the library refuses come back as UnifuseError with its status."""

import unittest

import torch

from unifuse_torch import HAS_CUSTOM_OP, UnifuseError, scaled_masked_softmax

from .support import device

UF_ERR_BAD_DTYPE, UF_ERR_BAD_SHAPE, UF_ERR_BAD_VALUE = 2, 3, 4


class Statuses(unittest.TestCase):
    def assert_status(self, status, *args, **kwargs):
        with self.assertRaises(UnifuseError) as caught:
            scaled_masked_softmax(*args, **kwargs)
        e = caught.exception
        self.assertEqual(e.status, status, str(e))
        self.assertEqual(e.function, "uf_softmax_forward")
        self.assertTrue(e.status_text)

    def x(self, *shape, dtype=torch.float32):
        return torch.randn(shape, dtype=dtype, device=device())

    def test_non_finite_scale(self):
        self.assert_status(UF_ERR_BAD_VALUE, self.x(2, 3), scale=float("inf"))
        self.assert_status(UF_ERR_BAD_VALUE, self.x(2, 3), scale=float("nan"))

    def test_scale_beyond_fp32_only_for_fp32_arithmetic(self):
        self.assert_status(UF_ERR_BAD_VALUE, self.x(2, 3), scale=1e39)
        scaled_masked_softmax(self.x(2, 3, dtype=torch.float64), scale=1e39)

    def test_integer_input(self):
        x = torch.ones(2, 3, dtype=torch.int32, device=device())
        self.assert_status(UF_ERR_BAD_DTYPE, x)

    def test_integer_mask(self):
        mask = torch.zeros(2, 3, dtype=torch.int64, device=device())
        self.assert_status(UF_ERR_BAD_DTYPE, self.x(2, 3), mask)

    def test_mask_that_does_not_broadcast(self):
        mask = torch.zeros(3, 3, dtype=torch.bool, device=device())
        self.assert_status(UF_ERR_BAD_SHAPE, self.x(2, 3), mask)

    def test_mask_with_more_dims_than_x(self):
        mask = torch.zeros(1, 2, 3, dtype=torch.bool, device=device())
        self.assert_status(UF_ERR_BAD_SHAPE, self.x(2, 3), mask)

    def test_rank_out_of_range(self):
        self.assert_status(UF_ERR_BAD_SHAPE, self.x())
        self.assert_status(UF_ERR_BAD_SHAPE, self.x(*[1] * 9))

    def test_wrong_device_is_refused_before_the_library(self):
        if device().type == "cuda":
            other = "cpu"
        elif torch.cuda.is_available():
            other = "cuda"
        elif not HAS_CUSTOM_OP:
            other = "meta"  # a custom op would answer a meta tensor from its fake kernel
        else:
            self.skipTest("no device other than the library's to try")
        with self.assertRaises(RuntimeError) as caught:
            scaled_masked_softmax(torch.zeros(2, 3, device=other))
        self.assertNotIsInstance(caught.exception, UnifuseError)
        self.assertIn(other, str(caught.exception))

    def test_backward_status(self):
        x = self.x(2, 3, dtype=torch.float64).requires_grad_()
        y = scaled_masked_softmax(x, scale=0.5)
        y.sum().backward()  # fine
        from unifuse_torch.softmax import _backward

        with self.assertRaises(UnifuseError) as caught:
            _backward(y.detach(), torch.ones_like(y), float("inf"))
        self.assertEqual(caught.exception.status, UF_ERR_BAD_VALUE)
        self.assertEqual(caught.exception.function, "uf_softmax_backward")


if __name__ == "__main__":
    unittest.main()
