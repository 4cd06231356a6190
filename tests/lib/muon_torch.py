"""Muon in plain PyTorch, the tests' oracle, written from the published
algorithm (Keller Jordan's Muon as modded-nanogpt and nanochat run it), not
from our C: Nesterov momentum, five Newton-Schulz iterations of the quintic
(3.4445, -4.7750, 2.0315) on the normalised update, the update scaled by
max(1, rows / cols) ** 0.5, decoupled weight decay. Which tensors it takes
is the trainer's documented split (docs/optimizers.md): the blocks' 2-D
weights, attn.c_attn's as its three (C, C) maps q, k, v; everything else
goes to torch.optim.AdamW."""
import torch

NS_COEFFS = (3.4445, -4.7750, 2.0315)


def newton_schulz5(G, dtype, steps=5):
    """The orthogonalisation of G (..., rows, cols), computed in dtype (bf16
    on the GPU, as published; fp32/fp64 as the CPU's reference)."""
    a, b, c = NS_COEFFS
    X = G.to(dtype)
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.transpose(-2, -1)
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.transpose(-2, -1)
        B = b * A + c * A @ A
        X = a * X + B @ X
    if tall:
        X = X.transpose(-2, -1)
    return X


def is_muon(name, p):
    return p.dim() == 2 and name.startswith("h.")


class Muon:
    """Muon over params {name: tensor} (those is_muon takes)."""

    def __init__(self, params, momentum=0.95, weight_decay=0.0, ns_dtype=torch.float32):
        self.params = params
        self.momentum, self.weight_decay, self.ns_dtype = momentum, weight_decay, ns_dtype
        self.buf = {n: torch.zeros_like(p) for n, p in params.items()}

    @torch.no_grad()
    def step(self, lr):
        for name, p in self.params.items():
            g = p.grad
            buf = self.buf[name]
            buf.lerp_(g, 1 - self.momentum)
            u = g.lerp(buf, self.momentum)
            rows, cols = p.shape
            if name.endswith("attn.c_attn.weight") and rows == 3 * cols:
                x = newton_schulz5(u.view(3, cols, cols), self.ns_dtype).reshape(rows, cols)
                rows = cols
            else:
                x = newton_schulz5(u, self.ns_dtype)
            p.mul_(1 - lr * self.weight_decay)
            p.add_(x.to(p.dtype), alpha=-lr * max(1.0, rows / cols) ** 0.5)
