#!/usr/bin/python3
"""Mutation test of the token shard reader (src/data/shard.c, loader.c)
through `gpt2_eval --val SHARDS` (a tiny model) and `gpt2_tokenize
--decode SHARD`: shards gpt2_tokenize wrote, with the header's magic,
version and token count set to boundary values, token ids past the
vocabulary, the file cut or extended, bytes flipped. A header that
disagrees with the file's size must not exit 0 (tests/lib/mutate.py says
what else fails).
usage: mutate_shard.py --bin-dir BUILD --work DIR [--seed S] [--count N] [--only I]"""
import glob
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mutate as m  # noqa: E402

HEADER = 1024  # 256 int32: magic, version, token count, then zeros


def setup(ctx):
    text = open(sorted(glob.glob(os.path.join(ctx.root, "data", "nlp-corpus", "text", "*.txt")))[0],
                encoding="utf-8").read(6000)
    m.write(os.path.join(ctx.seed_dir, "doc.txt"), text)
    ctx.sh([ctx.tool("gpt2_tokenize")] + ctx.encoder_args() + ["--out-dir", ctx.seed_dir, "--name",
           "s", "--threads", "1", os.path.join(ctx.seed_dir, "doc.txt")], "a shard")
    ctx.shard = m.read(os.path.join(ctx.seed_dir, "s_train_000000.bin"))
    ctx.sh([ctx.tool("gpt2_ddp"), "configs/tiny.ini", "n_layer=1", "n_embd=16", "block_size=32",
            "seq_len=16", "micro_batch=2", "total_batch=32", "max_steps=1", "warmup_steps=0",
            "eval_every=0", f"out_dir={ctx.seed_dir}", "run_name=run"], "a tiny run")
    ctx.model = os.path.join(ctx.seed_dir, "run", "model.h5")
    good = os.path.join(ctx.seed_dir, "s_train_000000.bin")
    return [m.Case(eval_argv(ctx, good), "gpt2_eval --val"), m.Case(decode_argv(ctx, good), "--decode")]


def eval_argv(ctx, pattern):
    return [ctx.tool("gpt2_eval"), "--weights", ctx.model, "--val", pattern, "--val-batches", "3",
            "--batch", "2", "--seq-len", "16"]


def decode_argv(ctx, path):
    return [ctx.tool("gpt2_tokenize")] + ctx.encoder_args() + ["--decode", path]


def make_case(ctx, rng, i):
    data, what, invalid = ctx.shard, [], False
    n_tokens = (len(data) - HEADER) // 2
    r = rng.random()
    if r < 0.45:
        slot = rng.choice([0, 1, 2, 2, 2, 3, 255])
        value = rng.choice(m.BOUNDARY_INTS + [n_tokens - 1, n_tokens + 1, 20240520, 20240801])
        data = m.pack_i32(data, slot, value)
        what.append(f"header int {slot} = {m.i32(value)}")
        invalid = m.i32(value) != struct.unpack_from("<i", ctx.shard, 4 * slot)[0] and slot < 3
    elif r < 0.65:
        b = bytearray(data)
        ids = [rng.choice([50256, 50257, 50303, 50304, 65535]) for _ in range(rng.randint(1, 5))]
        for v in ids:
            struct.pack_into("<H", b, HEADER + 2 * rng.randrange(n_tokens), v)
        data = bytes(b)
        what.append(f"token ids {ids} (the vocabulary has 50257)")
        invalid = max(ids) >= 50257  # every id is checked on open
    elif r < 0.8:
        data = m.truncate(rng, data)
        what.append(f"cut to {len(data)} bytes")
        invalid = True
    elif r < 0.9:
        data = m.extend(rng, data)
        what.append(f"extended to {len(data)} bytes")
        invalid = True
    else:
        data = m.flip_bytes(rng, data)
        what.append("bytes flipped")
    path = os.path.join(ctx.case_dir, "v_000000.bin")
    m.write(path, data)
    if rng.random() < 0.3:
        return m.Case(decode_argv(ctx, path), "; ".join(what) + " (--decode)", invalid)
    pattern = path
    if rng.random() < 0.3:  # beside a good shard: the bad one is the second
        m.write(os.path.join(ctx.case_dir, "v_000001.bin"), data)
        m.write(path, ctx.shard)
        pattern = os.path.join(ctx.case_dir, "v_*.bin")
        what.append("as the second of two shards")
    return m.Case(eval_argv(ctx, pattern), "; ".join(what), invalid)


if __name__ == "__main__":
    m.run("mutate_shard", setup, make_case, default_count=200)
