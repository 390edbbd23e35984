"""The training example's two models: the same parameters, and, without
dropout, the same outputs and gradients."""

import unittest

import torch

from tiny_transformer import TinyTransformer

from .support import Case, device, skip_without

ARGS = dict(vocab=11, seq_len=9, d_model=16, heads=2, layers=2)


def build(reference, dropout=0.0):
    torch.manual_seed(0)
    return TinyTransformer(dropout=dropout, reference=reference, **ARGS).double().to(device())


@skip_without("activation", "epilogue", "norm")
class TwoModels(Case):
    def test_same_parameters(self):
        ours, theirs = build(False).state_dict(), build(True).state_dict()
        self.assertEqual(list(ours), list(theirs))
        for name in ours:
            self.assertTrue(torch.equal(ours[name], theirs[name]), name)

    def test_same_outputs_and_gradients_without_dropout(self):
        tokens = torch.randint(0, ARGS["vocab"], (3, ARGS["seq_len"]),
                               generator=torch.Generator().manual_seed(1)).to(device())
        models = build(False), build(True)
        for m in models:
            m(tokens).pow(2).mean().backward()
        (ours, theirs) = (dict(m.named_parameters()) for m in models)
        self.assert_close(models[0](tokens), models[1](tokens))
        for name, p in ours.items():
            self.assert_close(p.grad, theirs[name].grad, msg=name)

    def test_dropout_only_in_training(self):
        tokens = torch.zeros(1, ARGS["seq_len"], dtype=torch.int64, device=device())
        m = build(False, dropout=0.5)
        self.assertFalse(torch.equal(m(tokens), m(tokens)))
        m.eval()
        self.assertTrue(torch.equal(m(tokens), m(tokens)))
        self.assert_close(m(tokens), build(True, dropout=0.5).eval()(tokens))


if __name__ == "__main__":
    unittest.main()
