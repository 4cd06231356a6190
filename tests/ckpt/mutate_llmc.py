#!/usr/bin/python3
"""Mutation test of the llm.c model file reader (src/io/llmc_io.c,
model_io.c) through `gpt2_convert IN.bin out.h5`, `gpt2_eval --weights` and
`gpt2_sample --weights`: gpt2_convert's fp32 and bf16 exports of a tiny
model with the header's ints (magic, version, maxT, V, L, NH, C, Vp, and
others) set to boundary values, the file cut or extended, bytes flipped.
Sizes that disagree with the file's length (or NH = 0, not dividing C,
V past Vp), another magic or version, a cut file must not exit 0
(tests/lib/mutate.py says what else fails).
Without the shape validator (model/shape.h) this found NH past C asking
for gigabytes and NH not dividing C exiting 0.
usage: mutate_llmc.py --bin-dir BUILD --work DIR [--seed S] [--count N] [--only I]"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mutate as m  # noqa: E402

# header int32 slots: magic, version, maxT, V, L, NH, C, Vp
FIELDS = ["magic", "version", "maxT", "V", "L", "NH", "C", "Vp"]


def n_params(h):
    """Floats an llm.c file of these sizes holds (llm.c's layout)."""
    maxT, V, L, NH, C, Vp = h[2:8]
    return (Vp * C + maxT * C + L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C
                                     + 4 * C + 4 * C * C + C) + 2 * C)


def certainly_invalid(h, orig, size):
    if h[0] != orig[0] or h[1] not in (3, 5):
        return True
    maxT, V, L, NH, C, Vp = h[2:8]
    if min(maxT, V, L, NH, C, Vp) <= 0 or C % NH or V > Vp:
        return True
    elem = 4 if h[1] == 3 else 2
    return 1024 + n_params(h) * elem != size


def setup(ctx):
    ctx.sh([ctx.tool("gpt2_ddp"), "configs/tiny.ini", "n_layer=2", "n_embd=16", "n_head=2",
            "block_size=32", "seq_len=16", "micro_batch=2", "total_batch=32", "max_steps=1",
            "warmup_steps=0", "eval_every=0", f"out_dir={ctx.seed_dir}", "run_name=run"], "a tiny run")
    model = os.path.join(ctx.seed_dir, "run", "model.h5")
    ctx.files = {}
    for name, extra in (("fp32.bin", []), ("bf16.bin", ["--bf16"])):
        path = os.path.join(ctx.seed_dir, name)
        ctx.sh([ctx.tool("gpt2_convert"), model, path] + extra, "llm.c export")
        ctx.files[name] = m.read(path)
    ctx.val = os.path.join(ctx.root, "data", "nlp-corpus", "nlp_val_*.bin")
    return [m.Case(argv, f"{name}: {what}") for name in ctx.files
            for argv, what in tools(ctx, os.path.join(ctx.seed_dir, name), os.path.join(ctx.work, "x"))]


def tools(ctx, path, out_prefix):
    return [([ctx.tool("gpt2_convert"), path, out_prefix + ".h5"], "gpt2_convert"),
            ([ctx.tool("gpt2_eval"), "--weights", path, "--val", ctx.val, "--val-batches", "1",
              "--batch", "1", "--seq-len", "8"], "gpt2_eval"),
            ([ctx.tool("gpt2_sample"), "--weights", path, "--tokens", "3", "--prompt", "Hi"]
             + ctx.encoder_args(), "gpt2_sample")]


def make_case(ctx, rng, i):
    name = rng.choice(sorted(ctx.files))
    data = ctx.files[name]
    orig = list(struct.unpack_from("<8i", data))
    what, r = [name], rng.random()
    if r < 0.65:
        for _ in range(rng.randint(1, 2)):
            slot = rng.choice(range(8)) if rng.random() < 0.9 else rng.randrange(8, 256)
            base = orig[slot] if slot < 8 else 0
            v = rng.choice(m.BOUNDARY_INTS + [base + 1, base - 1, base * 2, base // 2, 3, 5, 1024,
                                              50257, 50304, 20240326])
            data = m.pack_i32(data, slot, v)
            what.append(f"{FIELDS[slot] if slot < 8 else 'int ' + str(slot)} = {m.i32(v)}")
    elif r < 0.8:
        data = m.truncate(rng, data)
        what.append(f"cut to {len(data)} bytes")
    elif r < 0.9:
        data = m.extend(rng, data)
        what.append(f"extended to {len(data)} bytes")
    else:
        data = m.flip_bytes(rng, data)
        what.append("bytes flipped")
    header = list(struct.unpack_from("<8i", data)) if len(data) >= 1024 else None
    invalid = header is None or certainly_invalid(header, orig, len(data))
    path = os.path.join(ctx.case_dir, "model.bin")
    m.write(path, data)
    argv, tool = rng.choice(tools(ctx, path, os.path.join(ctx.case_dir, "out")))
    return m.Case(argv, f"{tool}: " + "; ".join(what), invalid)


if __name__ == "__main__":
    m.run("mutate_llmc", setup, make_case, default_count=200)
