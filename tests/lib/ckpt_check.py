#!/usr/bin/python3
"""Checks for the checkpoint tests (h5py and numpy only; torch for `torch`).

  ckpt_check.py losses REF_RUN RUN FIRST LAST RTOL
      losses of steps FIRST..LAST in both runs' metrics.jsonl; RTOL 0: bit
      for bit (the jsonl holds 17 digits: the exact double); needs no h5py
  ckpt_check.py state CKPT_A CKPT_B
      every dataset and attribute of model.h5 and of every shard: bit for bit
      (but the config text, which names the run)
  ckpt_check.py torch CKPT_DIR RUN STEP VAL_GLOB N_LAYER N_HEAD B T BATCHES
      a PyTorch GPT-2 built from the rank-0 file's named weights (h5py alone)
      gives the val loss the one-rank run logged at STEP on the same batches
  ckpt_check.py llmc H5 BIN
      the llm.c model file holds the .h5 weights in llm.c's order (fp32: the
      same bits; bf16: each value rounded to nearest even)
  ckpt_check.py same_weights H5_A H5_B
      the named datasets of two weights files: bit for bit
"""
import glob
import json
import os
import sys

# h5py and numpy are imported where used: `losses` needs neither (the GPU
# machine's python3 has no h5py).
try:
    import h5py
    import numpy as np
except ImportError:
    h5py = np = None

LLMC_MAGIC = 20240326


def step_losses(run_dir):
    """Loss by step; a step logged twice (resumed after it) keeps the last."""
    out = {}
    for line in open(os.path.join(run_dir, "metrics.jsonl")):
        r = json.loads(line)
        if r["type"] == "step":
            out[r["step"]] = r["loss"]
    return out


def cmd_losses(ref, run, first, last, rtol):
    a, b = step_losses(ref), step_losses(run)
    worst = 0.0
    for s in range(int(first), int(last) + 1):
        assert s in a and s in b, f"step {s} missing ({ref}: {s in a}, {run}: {s in b})"
        worst = max(worst, abs(a[s] - b[s]) / abs(a[s]))
    rtol = float(rtol)
    what = "bit for bit" if rtol == 0 else f"rtol {rtol:g}"
    print(f"losses of steps {first}..{last}: max relative difference {worst:.3e} ({what}); "
          f"{os.path.basename(run)} step {last}: {b[int(last)]!r}")
    return 0 if worst <= rtol else 1


def h5_items(path):
    """Every attribute and dataset of a file as {name: bytes}."""
    items = {}
    with h5py.File(path, "r") as f:
        for k, v in f.attrs.items():
            items["@" + k] = np.asarray(v).tobytes()
        f.visititems(lambda n, o: items.__setitem__(n, o[()].tobytes()) if isinstance(o, h5py.Dataset) else None)
    return items


def cmd_state(a, b):
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(a, "*.h5")))
    assert files == sorted(os.path.basename(p) for p in glob.glob(os.path.join(b, "*.h5"))), "different files"
    n = 0
    for name in files:
        x, y = h5_items(os.path.join(a, name)), h5_items(os.path.join(b, name))
        assert x.keys() == y.keys(), f"{name}: different objects"
        # The config text names each run's directory; everything else must match.
        diff = [k for k in x if x[k] != y[k] and k != "@config"]
        if diff:
            print(f"FAIL {name}: differs in {diff[:5]}")
            return 1
        n += len(x)
    print(f"state: {len(files)} files, {n} datasets and attributes identical bit for bit "
          f"(master, m, v of every shard; weights; step, optimizer step, data position)")
    return 0


def val_batches(pattern, B, T, count):
    """The trainer's validation batches for one rank: samples k*B .. k*B+B-1
    in file order; sample i is tokens [i*T, i*T+T+1) of its shard."""
    samples = []
    for path in sorted(glob.glob(pattern)):
        tok = np.fromfile(path, dtype=np.uint16, offset=256 * 4).astype(np.int64)
        samples += [tok[i * T:i * T + T + 1] for i in range((len(tok) - 1) // T)]
    return [np.stack(samples[k * B:(k + 1) * B]) for k in range(count)]


def cmd_torch(ckpt, run, step, pattern, n_layer, n_head, B, T, batches):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/lib
    import gpt2_torch
    P = gpt2_torch.load_h5(os.path.join(ckpt, "model.h5"))  # datasets only: named weights
    total = 0.0
    for x in val_batches(pattern, int(B), int(T), int(batches)):
        x = torch.tensor(x)
        total += gpt2_torch.forward(P, x[:, :-1], x[:, 1:], int(n_layer), int(n_head)).item()
    ours = total / int(batches)
    logged = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
    trainer = [r["val_loss"] for r in logged if r["type"] == "eval" and r["step"] == int(step)][-1]
    rel = abs(ours - trainer) / trainer
    print(f"val loss at step {step}: trainer {trainer:.9f}, PyTorch (float64) from {len(P)} named "
          f"tensors of model.h5 {ours:.9f}: relative difference {rel:.2e} (tolerance 1e-5)")
    return 0 if rel <= 1e-5 else 1


def llmc_tensors(h5):
    """The weights in llm.c's file order: wte, wpe, then each per-layer
    tensor stacked over layers, then ln_f (llm.c's fill_in_parameter_sizes)."""
    per_layer = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                 "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                 "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]
    with h5py.File(h5, "r") as f:
        L = int(f.attrs["n_layer"])
        order = [f["wte.weight"][()], f["wpe.weight"][()]]
        order += [f[f"h.{l}.{name}"][()] for name in per_layer for l in range(L)]
        order += [f["ln_f.weight"][()], f["ln_f.bias"][()]]
        sizes = [int(f.attrs[k]) for k in ("block_size", "vocab_size", "n_layer", "n_head", "n_embd", "padded_vocab_size")]
    return np.concatenate([t.reshape(-1) for t in order]).astype(np.float32), sizes


def to_bf16_bits(x):
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def cmd_llmc(h5, bin_path):
    header = np.fromfile(bin_path, dtype=np.int32, count=256)
    want, sizes = llmc_tensors(h5)
    assert header[0] == LLMC_MAGIC, f"magic {header[0]}"
    assert list(header[2:8]) == sizes, f"header {list(header[2:8])}, expected {sizes}"
    if header[1] == 3:
        got = np.fromfile(bin_path, dtype=np.float32, offset=1024)
        same = got.view(np.uint32).tobytes() == want.view(np.uint32).tobytes()
    else:
        assert header[1] == 5, f"version {header[1]}"
        got = np.fromfile(bin_path, dtype=np.uint16, offset=1024)
        same = got.tobytes() == to_bf16_bits(want).tobytes()
    what = "the bits of" if header[1] == 3 else "bf16 roundings (nearest even) of"
    print(f"{os.path.basename(bin_path)}: llm.c version {header[1]}, {len(want)} parameters in "
          f"llm.c's order: {what if same else 'NOT'} {os.path.basename(h5)}'s weights")
    return 0 if same and len(got) == len(want) else 1


def cmd_same_weights(a, b):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        names = [n for n in fa if isinstance(fa[n], h5py.Dataset)]
        diff = [n for n in names if fa[n][()].tobytes() != fb[n][()].tobytes()]
    print(f"{len(names)} named tensors, {len(diff)} differ")
    return 0 if not diff else 1


if __name__ == "__main__":
    cmds = {"losses": cmd_losses, "state": cmd_state, "torch": cmd_torch, "llmc": cmd_llmc,
            "same_weights": cmd_same_weights}
    sys.exit(cmds[sys.argv[1]](*sys.argv[2:]))
