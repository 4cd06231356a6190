"""GPT-2 in plain PyTorch: the reference model the tests hold the trainer to.
Parameters are a dict of tensors under the trainer's names (GPT-2 / Hugging
Face names, linear weights in nn.Linear (out, in) layout), as stored in its
.h5 weights files and in a checkpoint's model.h5."""
import math

import h5py
import numpy as np
import torch
import torch.nn.functional as F

VOCAB = 50257  # GPT-2's real vocabulary; wte has padded rows beyond it


def load_h5(path, dtype=torch.float64):
    """Every dataset of a weights file (h5py alone), as tensors by name."""
    with h5py.File(path, "r") as f:
        return {name: torch.tensor(np.array(f[name]), dtype=dtype) for name in f}


def forward(P, idx, tgt, n_layer, n_head, vocab=VOCAB):
    """Mean cross-entropy of GPT-2 on idx (B, T) against tgt (B, T)."""
    out = logits(P, idx, n_layer, n_head, vocab)
    return F.cross_entropy(out.reshape(-1, vocab), tgt.reshape(-1))


def logits(P, idx, n_layer, n_head, vocab=VOCAB):
    """GPT-2's logits (B, T, vocab) for idx (B, T)."""
    b, t = idx.shape
    C = P["wte.weight"].shape[1]
    hs = C // n_head
    x = P["wte.weight"][idx] + P["wpe.weight"][:t]
    for l in range(n_layer):
        p = lambda n: P[f"h.{l}.{n}"]
        h = F.layer_norm(x, (C,), p("ln_1.weight"), p("ln_1.bias"), 1e-5)
        qkv = h @ p("attn.c_attn.weight").T + p("attn.c_attn.bias")
        q, k, v = (z.view(b, t, n_head, hs).transpose(1, 2) for z in qkv.split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=idx.device))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, C)
        x = x + y @ p("attn.c_proj.weight").T + p("attn.c_proj.bias")
        h = F.layer_norm(x, (C,), p("ln_2.weight"), p("ln_2.bias"), 1e-5)
        h = F.gelu(h @ p("mlp.c_fc.weight").T + p("mlp.c_fc.bias"), approximate="tanh")
        x = x + h @ p("mlp.c_proj.weight").T + p("mlp.c_proj.bias")
    x = F.layer_norm(x, (C,), P["ln_f.weight"], P["ln_f.bias"], 1e-5)
    return (x @ P["wte.weight"].T)[..., :vocab]  # padded vocabulary rows never count
