"""What the tests share: the library (or the reason it is unusable),
tolerances, and comparisons against float64 references."""

import sys
import unittest

import torch

import unifuse_torch

# dtype -> (rtol, atol): unifuse's own tolerance table (docs/api.md), with
# fp32 loosened to 1e-5 relative for the activations' transcendental
# functions.
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
}
DTYPES = tuple(TOLERANCES)
LOW_PRECISION = (torch.float16, torch.bfloat16)


def device():
    """The torch device matching the library's backend."""
    dev = "cpu" if unifuse_torch.library().backend_name == "openmp" else "cuda"
    return torch.device(dev)


def activation_missing():
    """Why the activation tests cannot run, or None when they can."""
    lib = unifuse_torch.library()
    if lib.has_activation():
        return None
    return "%s lacks uf_activation_forward & co. (not built into this library yet)" % lib.path


def skip_without_activation(cls):
    reason = activation_missing()
    if reason:
        # Said once on stderr too, so a CI log shows why these did not run.
        print("skipping %s: %s" % (cls.__name__, reason), file=sys.stderr)
        return unittest.skip(reason)(cls)
    return cls


class Case(unittest.TestCase):
    """assert_close in the dtype's tolerance, NaN equal to NaN."""

    def assert_close(self, got, want, dtype=None, msg=""):
        rtol, atol = TOLERANCES[dtype or got.dtype]
        self.assertEqual(got.shape, want.shape, msg)
        g, w = got.detach().double().cpu(), want.detach().double().cpu()
        both_nan = torch.isnan(g) & torch.isnan(w)
        err = torch.where(both_nan, torch.zeros_like(g), (g - w).abs())
        bad = ~(err <= atol + rtol * w.abs())
        if bad.any():
            i = int(bad.flatten().nonzero()[0])
            self.fail("%s %s: %d of %d elements off, first at %d: got %r, want %r (rtol %g, "
                      "atol %g)" % (msg, got.dtype, int(bad.sum()), bad.numel(), i,
                                    g.flatten()[i].item(), w.flatten()[i].item(), rtol, atol))
