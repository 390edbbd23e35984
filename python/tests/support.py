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


# Calls that arrived after the softmax, by the Library.has_* that tells.
_CALLS = {"activation": "uf_activation_forward", "epilogue": "uf_epilogue_forward",
          "norm": "uf_norm_forward"}


def missing(group="activation"):
    """Why tests of a later group of calls cannot run, or None when they can."""
    lib = unifuse_torch.library()
    if getattr(lib, "has_" + group)():
        return None
    return "%s lacks %s & co. (not built into this library yet)" % (lib.path, _CALLS[group])


def activation_missing():
    return missing("activation")


def skip_without(*groups):
    """A class decorator: skip the whole class, saying why, unless the
    library has every group of calls named ("activation", "epilogue",
    "norm")."""
    def decorate(cls):
        reason = next(filter(None, map(missing, groups)), None)
        if reason:
            # Said once on stderr too, so a CI log shows why these did not run.
            print("skipping %s: %s" % (cls.__name__, reason), file=sys.stderr)
            return unittest.skip(reason)(cls)
        return cls
    return decorate


skip_without_activation = skip_without("activation")


def rounded(shape, dtype, gen, scale=1.0, shift=0.0):
    """Random normal values rounded to dtype, on the library's device."""
    x = shift + scale * torch.randn(shape, generator=gen, dtype=torch.float64)
    return x.to(dtype).to(device())


def grads64(fn, tensors, upstream):
    """fn's outputs and the gradients of sum(output * upstream) for each
    tensor (None where it is None), all in float64 from the same values."""
    leaves = [None if t is None else t.detach().double().requires_grad_() for t in tensors]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    loss = sum((o * u.double()).sum() for o, u in zip(outs, upstream))
    wanted = [t for t in leaves if t is not None]
    got = iter(torch.autograd.grad(loss, wanted))
    return outs, [None if t is None else next(got) for t in leaves]


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

    def assert_close_sum(self, got, want, abs_sum, terms, msg=""):
        """For sums over `terms` rows, accumulated in fp32 (fp64 for
        float64): the table's tolerance on the result plus the bound of
        recursive summation, terms * u * sum(|term|), in whatever order the
        library adds; as tests/harness.c's th_compare_sum."""
        u = 2.0 ** -53 if got.dtype == torch.float64 else 2.0 ** -24
        rtol, atol = TOLERANCES[got.dtype]
        self.assertEqual(got.shape, want.shape, msg)
        g, w, a = (t.detach().double().cpu() for t in (got, want, abs_sum))
        bad = ~((g - w).abs() <= atol + rtol * w.abs() + terms * u * a)
        if bad.any():
            i = int(bad.flatten().nonzero()[0])
            self.fail("%s %s: %d of %d sums off, first at %d: got %r, want %r" % (
                msg, got.dtype, int(bad.sum()), bad.numel(), i, g.flatten()[i].item(),
                w.flatten()[i].item()))
