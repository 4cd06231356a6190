#!/usr/bin/python3
"""Mutation test of the weights .h5 reader (src/io/weights_h5.c, h5_io.c,
model_io.c) through `gpt2_eval --weights`, `gpt2_sample --weights` and
`gpt2_convert IN out.bin`: a tiny run's model.h5 with h5py setting the size
attributes (n_layer, n_embd, n_head, vocab_size, padded_vocab_size,
block_size) to 0, -1, 2^31-1, 2^62, ... or to other types, datasets
reshaped, retyped, deleted or replaced by groups, and the file cut or its
bytes flipped. Sizes that disagree with the stored tensors (or n_head = 0,
not dividing n_embd, vocab_size past padded_vocab_size) must not exit 0
(tests/lib/mutate.py says what else fails).
Without the shape validator (model/shape.h) this found n_head = 0 SIGFPE,
multi-gigabyte allocations and int overflow in layout.c, n_head not
dividing n_embd exiting 0.
usage: mutate_weights_h5.py --bin-dir BUILD --work DIR [--seed S] [--count N] [--only I]"""
import os
import shutil
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mutate as m  # noqa: E402

SIZES = ["n_layer", "n_embd", "n_head", "vocab_size", "padded_vocab_size", "block_size"]


def setup(ctx):
    ctx.sh([ctx.tool("gpt2_ddp"), "configs/tiny.ini", "n_layer=2", "n_embd=16", "n_head=2",
            "block_size=32", "seq_len=16", "micro_batch=2", "total_batch=32", "max_steps=1",
            "warmup_steps=0", "eval_every=0", f"out_dir={ctx.seed_dir}", "run_name=run"], "a tiny run")
    ctx.model = os.path.join(ctx.seed_dir, "run", "model.h5")
    with h5py.File(ctx.model, "r") as f:
        ctx.sizes = {k: int(f.attrs[k]) for k in SIZES}
        ctx.datasets = sorted(k for k in f.keys())
    ctx.val = os.path.join(ctx.root, "data", "nlp-corpus", "nlp_val_*.bin")
    return [m.Case(argv, what) for argv, what in tools(ctx, ctx.model, os.path.join(ctx.work, "x"))]


def tools(ctx, path, out_prefix):
    return [([ctx.tool("gpt2_eval"), "--weights", path, "--val", ctx.val, "--val-batches", "1",
              "--batch", "1", "--seq-len", "8"], "gpt2_eval"),
            ([ctx.tool("gpt2_sample"), "--weights", path, "--tokens", "3", "--prompt", "Hi"]
             + ctx.encoder_args(), "gpt2_sample"),
            ([ctx.tool("gpt2_convert"), path, out_prefix + ".bin"], "gpt2_convert")]


def wrong_sizes(s, orig):
    """Sizes no reader may accept for the stored tensors."""
    if any(v <= 0 for v in s.values()):
        return True
    if s["n_embd"] % s["n_head"] or s["vocab_size"] > s["padded_vocab_size"]:
        return True
    # fewer layers than stored leaves datasets unread: not judged here
    return s["n_layer"] > orig["n_layer"] or any(
        s[k] != orig[k] for k in ("n_embd", "padded_vocab_size", "block_size"))


def mutate_attrs(rng, f, ctx, what):
    """Size attributes set to boundary values or other types; True if surely invalid."""
    sizes = dict(ctx.sizes)
    for _ in range(rng.randint(1, 2)):
        k = rng.choice(SIZES)
        r = rng.random()
        if r < 0.75:
            v = rng.choice(m.BOUNDARY_INTS + [sizes[k] + 1, sizes[k] - 1, sizes[k] * 2, sizes[k] // 2,
                                              3, 5, 50257, 50304, 50305, 65536])
            f.attrs[k] = np.int64(v)
            sizes[k] = m.i32(v) if abs(v) >= 2**31 else v  # the reader casts to int
            what.append(f"{k} = {v}")
        elif r < 0.85:
            f.attrs[k] = rng.choice([np.float64(sizes[k]) + 0.5, np.bytes_(b"16"), "16",
                                     np.array([1, 2], dtype=np.int64), np.int8(-1), np.uint64(2**64 - 1)])
            what.append(f"{k} retyped ({type(f.attrs[k]).__name__})")
            return False
        else:
            del f.attrs[k]
            what.append(f"{k} deleted")
            return True
    return wrong_sizes(sizes, ctx.sizes)


def mutate_dataset(rng, f, ctx, what):
    name = rng.choice(ctx.datasets)
    data = f[name][...]
    del f[name]
    r = rng.random()
    if r < 0.3:
        shape = list(data.shape)
        k = rng.randrange(len(shape))
        shape[k] = rng.choice([0, 1, shape[k] - 1, shape[k] + 1, shape[k] * 2])
        f.create_dataset(name, data=np.resize(data, shape))
        what.append(f"{name} reshaped to {shape}")
        return shape != list(data.shape)
    if r < 0.45:
        f.create_dataset(name, data=data.reshape(-1) if data.ndim > 1 else data.reshape(1, -1))
        what.append(f"{name} re-ranked")
        return True
    if r < 0.7:
        dtype = rng.choice([np.float64, np.float16, np.int32, np.int8, np.uint64])
        f.create_dataset(name, data=data.astype(dtype))
        what.append(f"{name} stored as {np.dtype(dtype).name}")
        return False  # HDF5 converts numeric types
    if r < 0.8:
        f.create_group(name)
        what.append(f"{name} replaced by a group")
        return True
    if r < 0.9:
        f.create_dataset(name, data=np.bytes_(b"not a tensor"))
        what.append(f"{name} replaced by a string")
        return True
    what.append(f"{name} deleted")
    return True


def make_case(ctx, rng, i):
    path = os.path.join(ctx.case_dir, "model.h5")
    shutil.copy(ctx.model, path)
    what, invalid = [], False
    r = rng.random()
    if r < 0.6:
        with h5py.File(path, "r+") as f:
            invalid = mutate_attrs(rng, f, ctx, what)
    elif r < 0.85:
        with h5py.File(path, "r+") as f:
            invalid = mutate_dataset(rng, f, ctx, what)
    elif r < 0.93:
        data = m.read(path)
        m.write(path, m.truncate(rng, data))
        what.append("file cut")
        invalid = True
    else:
        data = m.read(path)
        # the datasets' data (the file's second half): their CRC32C must catch it
        m.write(path, m.flip_bytes(rng, data, lo=len(data) // 2))
        what.append("data bytes flipped")
    argv, tool = rng.choice(tools(ctx, path, os.path.join(ctx.case_dir, "out")))
    return m.Case(argv, f"{tool}: " + "; ".join(what), invalid)


if __name__ == "__main__":
    m.run("mutate_weights_h5", setup, make_case, default_count=200)
