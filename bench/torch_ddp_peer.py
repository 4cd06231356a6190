#!/usr/bin/env python3
"""The PyTorch DDP peer for bench/bench_scaling.sh: GPT-2 124M as in
bench/torch_peer.py (torch.compile, SDPA flash attention, fused AdamW, bf16
autocast, vocab 50304, TF32 on) wrapped in DistributedDataParallel (NCCL,
25 MiB buckets, gradient reduction overlapped with backward), one process per
GPU, random tokens; with --accum K, K micro-steps per step, the first K-1
under no_sync(). Rank 0 prints one line:
  torchddp N=<ranks> B=<micro-batch> accum=<K> ms=<median step ms> tok/s=<tokens/s, all GPUs>
usage: torchrun --nproc_per_node=N bench/torch_ddp_peer.py [--batch 32] [--accum 1] [--steps 25]"""
import argparse
import contextlib
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peer import GPT, T, make_optimizer  # noqa: E402  (the same model as the one-GPU peer)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--steps", type=int, default=25)
    a = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    model = GPT().cuda()
    opt = make_optimizer(model)
    model = DDP(torch.compile(model), device_ids=[local])  # nanoGPT's order
    g = torch.Generator(device="cuda").manual_seed(1 + rank)
    x = torch.randint(0, 50257, (a.batch, T), device="cuda", generator=g)
    y = torch.randint(0, 50257, (a.batch, T), device="cuda", generator=g)
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        for micro in range(a.accum):
            sync = micro == a.accum - 1
            with (contextlib.nullcontext() if sync else model.no_sync()):
                with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                    loss = model(x, y) / a.accum
                loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times[min(5, len(times) // 2):]) * 1e3
    if rank == 0:
        tokens = a.batch * T * a.accum * world
        print(f"torchddp N={world} B={a.batch} accum={a.accum} ms={ms:.2f} tok/s={tokens / ms * 1e3:.0f}",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
