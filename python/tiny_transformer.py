"""A small decoder-only transformer whose attention softmax and MLP
activation + dropout are pluggable: unifuse's ops, or the PyTorch
compositions they replace (the reference).

LayerNorm and the residual adds are plain PyTorch in both variants, until
unifuse's norms and epilogue kernels land.
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


class TorchActivationDropout(nn.Module):
    """Reference: F.gelu, then dropout."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.dropout(F.gelu(x), self.p, self.training)


def unifuse_parts(dropout):
    """(softmax factory, activation + dropout module, description) using
    unifuse; the MLP falls back to PyTorch when the library predates the
    activation kernels."""
    import unifuse_torch

    softmax = lambda scale: unifuse_torch.FusedScaleMaskSoftmax(scale, causal=True)  # noqa: E731
    if unifuse_torch.has_activation():
        return softmax, lambda: unifuse_torch.ActivationDropout("gelu", p=dropout), "unifuse"
    lib = unifuse_torch.library()
    return (softmax, lambda: TorchActivationDropout(dropout),
            "torch (%s has no uf_activation_forward yet)" % lib.path)


class Attention(nn.Module):
    def __init__(self, d_model, heads, softmax):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.softmax = softmax(1.0 / math.sqrt(d_model // heads))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        probs = self.softmax(q @ k.transpose(-1, -2))
        return self.out((probs @ v).transpose(1, 2).reshape(b, s, d))


class Block(nn.Module):
    def __init__(self, d_model, heads, softmax, activation):
        super().__init__()
        # PyTorch LayerNorm and residual adds until unifuse's norms/epilogue land.
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.attention = Attention(d_model, heads, softmax)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), activation(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, vocab, seq_len, d_model, heads, layers, dropout, reference):
        super().__init__()
        if reference:
            softmax, activation = TorchCausalSoftmax, lambda: TorchActivationDropout(dropout)
            self.kernels = {"softmax": "torch", "mlp_activation": "torch"}
        else:
            softmax, activation, mlp = unifuse_parts(dropout)
            self.kernels = {"softmax": "unifuse", "mlp_activation": mlp}
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(0.02 * torch.randn(seq_len, d_model))
        self.blocks = nn.ModuleList(Block(d_model, heads, softmax, activation)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))
