"""A small decoder-only transformer (pre-norm) whose fused parts are
pluggable: unifuse's kernels, or the PyTorch compositions they replace
(the reference). Those parts are the attention softmax, the LayerNorms,
and the epilogues of the linear layers: bias + dropout + residual after
the attention projection and after the MLP, bias + GELU inside the MLP.

Both variants build the same modules in the same order, so their
parameters, names and initial values are identical: a linear layer with
an epilogue keeps its nn.Linear weight and bias, and its bias is added by
the epilogue rather than by the matrix product.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class TorchCausalSoftmax(nn.Module):
    """Reference: softmax(x * scale) with keys after the query hidden."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, scores):
        sq, sk = scores.shape[-2], scores.shape[-1]
        hidden = torch.ones(sq, sk, dtype=torch.bool, device=scores.device).triu(sk - sq + 1)
        return torch.softmax((scores * self.scale).masked_fill(hidden, float("-inf")), -1)


class TorchEpilogue(nn.Module):
    """Reference: dropout(act(x + bias)) + residual in PyTorch ops."""

    def __init__(self, activation="identity", p=0.0):
        super().__init__()
        self.act = {"identity": lambda x: x, "gelu": F.gelu}[activation]
        self.p = p

    def forward(self, x, bias, residual=None):
        y = F.dropout(self.act(x + bias), self.p, self.training)
        return y if residual is None else residual + y


class Parts:
    """Factories for the pluggable parts, and what they are, for the log."""

    def __init__(self, reference):
        if reference:
            self.softmax, self.norm, self.epilogue = TorchCausalSoftmax, nn.LayerNorm, \
                TorchEpilogue
            self.kernels = {"softmax": "torch", "norm": "torch", "epilogue": "torch"}
            return
        import unifuse_torch

        if not (unifuse_torch.has_epilogue() and unifuse_torch.has_norm()):
            raise SystemExit("%s predates the epilogue or norm calls: rebuild it, or train "
                             "with --reference" % unifuse_torch.library().path)
        self.softmax = lambda scale: unifuse_torch.FusedScaleMaskSoftmax(scale, causal=True)
        self.norm, self.epilogue = unifuse_torch.FusedLayerNorm, unifuse_torch.FusedEpilogue
        self.kernels = {"softmax": "unifuse", "norm": "unifuse", "epilogue": "unifuse"}


class LinearEpilogue(nn.Linear):
    """nn.Linear (same parameters and initialisation) whose bias is added
    by the epilogue that follows it, with the activation, dropout and
    residual add the epilogue fuses."""

    def __init__(self, d_in, d_out, epilogue):
        super().__init__(d_in, d_out)
        self.epilogue = epilogue

    def forward(self, x, residual=None):
        return self.epilogue(F.linear(x, self.weight), self.bias, residual)


class Attention(nn.Module):
    def __init__(self, d_model, heads, parts, dropout):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = LinearEpilogue(d_model, d_model, parts.epilogue("identity", dropout))
        self.softmax = parts.softmax(1.0 / math.sqrt(d_model // heads))

    def forward(self, x, residual):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        probs = self.softmax(q @ k.transpose(-1, -2))
        return self.out((probs @ v).transpose(1, 2).reshape(b, s, d), residual)


class Block(nn.Module):
    def __init__(self, d_model, heads, parts, dropout):
        super().__init__()
        self.norm1 = parts.norm(d_model)
        self.norm2 = parts.norm(d_model)
        self.attention = Attention(d_model, heads, parts, dropout)
        self.up = LinearEpilogue(d_model, 4 * d_model, parts.epilogue("gelu"))
        self.down = LinearEpilogue(4 * d_model, d_model, parts.epilogue("identity", dropout))

    def forward(self, x):
        x = self.attention(self.norm1(x), residual=x)
        return self.down(self.up(self.norm2(x)), residual=x)


class TinyTransformer(nn.Module):
    """dropout: the probability on the attention and MLP outputs, before
    each residual add."""

    def __init__(self, vocab, seq_len, d_model, heads, layers, dropout, reference):
        super().__init__()
        parts = Parts(reference)
        self.kernels = parts.kernels
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(0.02 * torch.randn(seq_len, d_model))
        self.blocks = nn.ModuleList(Block(d_model, heads, parts, dropout) for _ in range(layers))
        self.norm = parts.norm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))
