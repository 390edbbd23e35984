"""Two GPUs in one process: each op on tensors of cuda:1 while cuda:0 is
current (and the reverse) gives the bits it gives on the current device,
forward and backward, and leaves torch's current device alone. Skipped,
saying why, with fewer than two GPUs or on the CPU build."""

import unittest

import torch

import unifuse_torch as uf

from .support import device, skip_without


def _two_gpus():
    if device().type != "cuda":
        return "the library is the CPU build"
    if torch.cuda.device_count() < 2:
        return "needs two GPUs; torch sees %d" % torch.cuda.device_count()
    return None


def _ops():
    """name -> f(x, aux) over a [rows, 96] float32 x (aux: a second tensor
    like x), each deterministic for a given generator seed."""
    return {
        "softmax": lambda x, aux: uf.scaled_masked_softmax(x, scale=0.5, causal=True),
        "gelu_dropout": lambda x, aux: uf.activation_dropout(x, "gelu", p=0.25, rng=(3, 0)),
        "epilogue": lambda x, aux: uf.bias_act_dropout_residual(
            x, bias=aux[0], activation="silu", p=0.1, residual=aux, rng=(4, 0)),
        "layer_norm": lambda x, aux: uf.layer_norm(x, aux[1], aux[2], residual=aux)[0],
        "rms_norm": lambda x, aux: uf.rms_norm(x, aux[1]),
    }


@unittest.skipIf(_two_gpus(), _two_gpus() or "")
@skip_without("activation", "epilogue", "norm")
class TwoGpus(unittest.TestCase):
    def run_on(self, name, where, current):
        gen = torch.Generator().manual_seed(11)
        x = torch.randn(64, 96, generator=gen).to(where).requires_grad_()
        aux = torch.randn(64, 96, generator=gen).to(where)
        dy = torch.randn(64, 96, generator=gen).to(where)
        with torch.cuda.device(current):
            y = _ops()[name](x, aux)
            (dx,) = torch.autograd.grad(y, x, dy)
            self.assertEqual(torch.cuda.current_device(), current)
        self.assertEqual(y.device, torch.device(where))
        torch.cuda.synchronize(where)
        return y.detach().cpu(), dx.cpu()

    def test_each_op_on_the_other_device(self):
        for name in _ops():
            for where, current in (("cuda:1", 0), ("cuda:0", 1)):
                with self.subTest(op=name, tensors=where, current=current):
                    want = self.run_on(name, where, int(where[-1]))
                    got = self.run_on(name, where, current)
                    self.assertTrue(torch.equal(got[0], want[0]), "forward differs")
                    self.assertTrue(torch.equal(got[1], want[1]), "backward differs")


if __name__ == "__main__":
    unittest.main()
