#!/usr/bin/env python3
"""PyTorch SDPA's causal attention timed the way bench_attention times ours,
for the side-by-side table of bench/bench_attention.sh: cuDNN's kernels
(SDPBackend.CUDNN_ATTENTION, PyTorch's fastest on Hopper) and
FlashAttention-2 (SDPBackend.FLASH_ATTENTION), bf16. After 10 warm-ups,
the median of 10 samples, each the mean of 10 back-to-back calls between
two CUDA events, so that the host's launch time hides behind the GPU's work
(bench_attention times ours the same way). The forward is the training
forward: it keeps what the backward needs (the log-sum-exp), as ours does.

The peer gets its best case: q, k, v contiguous (B, H, T, D) tensors and the
backward through torch.autograd.grad (no .grad accumulation, no qkv
interleaving). Prints one line per backend:
  BENCH attention impl=<name> B= H= T= D= fwd_ms= fwdbwd_ms=
or "BENCH attention impl=<name> ... unavailable: <why>". Exits 77 when torch
or a GPU is missing.
usage: attention_peers.py B H T D"""
import statistics
import sys


def time_median(fn, warm=10, samples=10, calls=10):
    """Median over samples of the mean time of `calls` back-to-back calls (ms)."""
    import torch
    for _ in range(warm):
        fn()
    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def main():
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print(f"attention_peers: no torch ({e}), skipped")
        return 77
    if not torch.cuda.is_available():
        print("attention_peers: no GPU, skipped")
        return 77
    B, H, T, D = (int(a) for a in sys.argv[1:5])
    gen = torch.Generator(device="cuda").manual_seed(0)
    shape = (B, H, T, D)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen)
               .requires_grad_() for _ in range(3))
    dout = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("fa2", SDPBackend.FLASH_ATTENTION)):
        head = f"BENCH attention impl={name} B={B} H={H} T={T} D={D}"
        try:
            with sdpa_kernel([backend]):
                def fwd():
                    sdpa(q, k, v, is_causal=True)

                def fwd_bwd():
                    out = sdpa(q, k, v, is_causal=True)
                    torch.autograd.grad(out, (q, k, v), dout)

                t_fwd, t_all = time_median(fwd), time_median(fwd_bwd)
        except RuntimeError as e:  # the backend refused this shape or GPU
            print(f"{head} unavailable: {str(e).splitlines()[0]}")
            continue
        print(f"{head} fwd_ms={t_fwd:.4f} fwdbwd_ms={t_all:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
