#!/usr/bin/env python3
"""The PyTorch peer for bench/bench_gpt2_gpu.sh: GPT-2 124M as nanoGPT trains
it (torch.compile, SDPA attention, fused AdamW, bf16 autocast, vocab 50304,
TF32 on), random tokens, no gradient accumulation. --sdpa picks SDPA's
backend: `cudnn` pins it to cuDNN's attention (PyTorch's fastest on Hopper;
flash, memory-efficient and math off), `default` leaves PyTorch's own choice.
--compile-mode is torch.compile's mode (`default`, or `max-autotune`: Inductor
times Triton and cuBLAS choices for every matrix product and captures CUDA
graphs; minutes of compiling).
Prints one line per micro-batch:
`peer sdpa=<sdpa> B=<B> T=<T> ms=<median step ms> tok/s=<tokens/s> loss=<last>`
(with `mode=<mode>` after sdpa when the mode is not the default).
usage: torch_peer.py B [B ...] [--seq-len T] [--sdpa cudnn|default]
       [--compile-mode default|max-autotune|max-autotune-no-cudagraphs] [--steps N]"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

L, C, NH, V = 12, 768, 12, 50304
T = 1024  # sequence length (and positions), set from --seq-len


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.attn_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (z.view(b, t, NH, C // NH).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, V), targets.view(-1))


def make_optimizer(model):
    """nanoGPT's AdamW: weight decay on 2-D tensors only, fused."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                             lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)


def bench(batch, steps, sdpa, mode):
    torch.manual_seed(0)
    model = GPT().cuda()
    opt = make_optimizer(model)
    model = torch.compile(model) if mode == "default" else torch.compile(model, mode=mode)
    x = torch.randint(0, 50257, (batch, T), device="cuda")
    y = torch.randint(0, 50257, (batch, T), device="cuda")
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        if mode == "max-autotune":  # a new step for the CUDA graph trees
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times[5:]) * 1e3
    tag = f"sdpa={sdpa}" + (f" mode={mode}" if mode != "default" else "")
    print(f"peer {tag} B={batch} T={T} ms={ms:.2f} tok/s={batch * T / ms * 1e3:.0f} loss={loss.item():.3f}",
          flush=True)
    del model, opt
    torch.cuda.empty_cache()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("batches", type=int, nargs="+")
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--sdpa", choices=["cudnn", "default"], default="default")
    ap.add_argument("--compile-mode", default="default",
                    choices=["default", "max-autotune", "max-autotune-no-cudagraphs"])
    a = ap.parse_args()
    T = a.seq_len
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if a.sdpa == "cudnn":
        torch.backends.cuda.enable_cudnn_sdp(True)
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        torch.backends.cuda.enable_math_sdp(False)
    for b in a.batches:
        bench(b, a.steps, a.sdpa, a.compile_mode)
