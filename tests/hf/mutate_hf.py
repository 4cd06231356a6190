#!/usr/bin/python3
"""Mutation test of the Hugging Face readers (src/io/safetensors.c,
hf_config.c, hf_gpt2.c, json_util.c) through `gpt2_convert DIR out.h5` (and
some `gpt2_eval --weights DIR`): gpt2_convert's export of a tiny model (fp32
and bf16) the Hub's layout of it (tests/hf/hf_check.py hub) and a two-shard layout
with model.safetensors.index.json (its weight_map mutated too), with
config.json's fields set to boundary values or other types, its text
flipped, cut or nested; model.safetensors' 8-byte header length, its JSON
header (dtype, shape, data_offsets, names, __metadata__) and its bytes
mutated. A file cut short or a config whose sizes differ from the tensors
must not exit 0 (tests/lib/mutate.py says what else fails).
usage: mutate_hf.py --bin-dir BUILD --work DIR [--seed S] [--count N] [--only I]"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mutate as m  # noqa: E402

SIZE_FIELDS = ["n_layer", "n_embd", "n_head", "vocab_size", "n_positions", "n_ctx", "n_inner"]
OTHER_FIELDS = ["model_type", "activation_function", "layer_norm_epsilon", "tie_word_embeddings",
                "architectures", "scale_attn_weights", "torch_dtype"]
ODD_JSON = [None, True, False, 0, -1, 1, 3, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, -2**63,
            2**64, 1.5, 1e308, "2", "", "gpt2", "gelu", [], {}, [1], "\ud800"]
DTYPES = ["F32", "F16", "BF16", "F64", "I32", "U8", "BOOL", "F8_E4M3", "f32", "", "F32 ", "X" * 100]


def split_safetensors(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def join_safetensors(header, body, rng, what):
    text = json.dumps(header, ensure_ascii=rng.random() < 0.7).encode("utf-8", "surrogatepass")
    if rng.random() < 0.5:
        text += b" " * (-len(text) % 8)  # the writer's padding
    n = len(text)
    r = rng.random()
    if r < 0.15:
        n = rng.choice([0, 1, 2, n - 1, n + 1, n + 8, len(text) + len(body), 2**31, 2**63,
                        2**64 - 1, 100000001])
        what.append(f"header length {n} (real {len(text)})")
    return struct.pack("<Q", n) + text + body


def mutate_header(rng, header, what):
    """A change to one entry of the safetensors JSON header; True if the file is surely invalid."""
    names = [k for k in header if k != "__metadata__" and isinstance(header[k], dict)]
    if not names:
        return False
    name = rng.choice(names)
    t = header[name]
    if not (isinstance(t.get("shape"), list) and isinstance(t.get("data_offsets"), list)
            and len(t["data_offsets"]) == 2):
        return False  # changed already
    r = rng.random()
    if r < 0.15:
        t["dtype"] = rng.choice(DTYPES)
        what.append(f"{name}: dtype {t['dtype']!r}")
        return t["dtype"] not in ("F32", "F16", "BF16", "F64")
    if r < 0.35:
        k = rng.randrange(len(t["shape"]) + 1)
        choice = rng.random()
        if choice < 0.3 and k < len(t["shape"]):
            t["shape"][k] = rng.choice(m.BOUNDARY_INTS + [t["shape"][k] + 1, t["shape"][k] * 2])
        elif choice < 0.5:
            t["shape"].insert(k, rng.choice([1, 2, 0]))
        elif choice < 0.7 and t["shape"]:
            del t["shape"][k % len(t["shape"])]
        else:
            t["shape"] = rng.choice([[], [0], [-1], "x", None, [1.5], [[2]], [1] * 9, [2**40, 2**40]])
        what.append(f"{name}: shape {t['shape']!r}")
        return False
    if r < 0.6:
        off = t["data_offsets"]
        choice = rng.random()
        if choice < 0.5:
            off[rng.randrange(2)] = rng.choice(m.BOUNDARY_INTS + [off[0] + 1, off[1] + 1, off[1] - 1])
        elif choice < 0.7:
            off.reverse()
        else:
            t["data_offsets"] = rng.choice([[], [0], [0, 0, 0], None, "0", [0.5, 1], [-0, 2**64]])
        what.append(f"{name}: data_offsets {t['data_offsets']!r}")
        return False
    if r < 0.7:
        del t[rng.choice(["dtype", "shape", "data_offsets"])]
        what.append(f"{name}: a field deleted")
        return True
    if r < 0.78:
        header[name] = rng.choice(ODD_JSON)
        what.append(f"{name}: {header[name]!r}")
        return True
    if r < 0.86:
        new = rng.choice(["transformer.h.99.ln_1.weight", "", "\ud800", "lm_head.weight",
                          "h.0.attn.bias", "x" * 1000, name + " "])
        header[new] = header.pop(name)
        what.append(f"{name} renamed {new[:40]!r}")
        return False
    if r < 0.93:
        header["__metadata__"] = rng.choice([None, 1, [], {"format": 1}, {"format": "pt" * 1000},
                                             {"a": {"b": "c"}}, {}])
        what.append(f"__metadata__ {str(header['__metadata__'])[:40]}")
        return False
    del header[name]
    what.append(f"{name} deleted")
    return True


def shard_files(st):
    """The tensors of one safetensors file in two: {file name: bytes}, index."""
    header, body = split_safetensors(st)
    header.pop("__metadata__", None)
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    files, weight_map = {}, {}
    for part, chunk in enumerate((names[:len(names) // 2], names[len(names) // 2:])):
        fname = f"model-0000{part + 1}-of-00002.safetensors"
        h, blobs, at = {}, [], 0
        for k in chunk:
            b, e = header[k]["data_offsets"]
            h[k] = dict(header[k], data_offsets=[at, at + e - b])
            blobs.append(body[b:e])
            at += e - b
            weight_map[k] = fname
        text = json.dumps(h).encode()
        files[fname] = struct.pack("<Q", len(text)) + text + b"".join(blobs)
    index = {"metadata": {"total_size": len(body)}, "weight_map": weight_map}
    return files, index


def write_sharded(ctx, config, st):
    d = os.path.join(ctx.seed_dir, "sharded")
    m.write(os.path.join(d, "config.json"), config)
    ctx.shards, ctx.index = shard_files(st)
    for name, data in ctx.shards.items():
        m.write(os.path.join(d, name), data)
    m.write(os.path.join(d, "model.safetensors.index.json"), json.dumps(ctx.index))
    return d


def mutate_index(rng, ctx, what):
    """model.safetensors.index.json changed; the shards as they are."""
    index = json.loads(json.dumps(ctx.index))
    wm = index["weight_map"]
    r = rng.random()
    if r < 0.4:
        k = rng.choice(sorted(wm))
        wm[k] = rng.choice(["", ".", "..", "../fp32/model.safetensors", "/etc/passwd", "config.json",
                            "model.safetensors.index.json", "missing.safetensors", "a/b", None, 1,
                            [], "x" * 5000, "\ud800"])
        what.append(f"weight_map[{k}] = {str(wm[k])[:40]!r}")
        text = json.dumps(index).encode("utf-8", "surrogatepass")
    elif r < 0.6:
        index["weight_map"] = rng.choice([None, [], {}, "x", {"": "a"}])
        what.append(f"weight_map = {index['weight_map']!r}")
        text = json.dumps(index).encode()
    else:
        text = m.mutate_bytes(rng, json.dumps(index).encode())
        what.append("index bytes mutated")
    return text


def setup(ctx):
    run = os.path.join(ctx.seed_dir, "run")
    ctx.sh([ctx.tool("gpt2_ddp"), "configs/tiny.ini", "n_layer=1", "n_embd=16", "block_size=32",
            "seq_len=16", "micro_batch=2", "total_batch=32", "max_steps=1", "warmup_steps=0",
            "eval_every=0", f"out_dir={ctx.seed_dir}", "run_name=run"], "a tiny run")
    ctx.dirs = {}
    for name, extra in (("fp32", []), ("bf16", ["--bf16"])):
        d = os.path.join(ctx.seed_dir, name)
        ctx.sh([ctx.tool("gpt2_convert"), os.path.join(run, "model.h5"), d] + extra, "export")
        ctx.dirs[name] = d
    hub = os.path.join(ctx.seed_dir, "hub")
    ctx.sh(["/usr/bin/python3", os.path.join(ctx.root, "tests", "hf", "hf_check.py"), "hub",
            ctx.dirs["fp32"], hub], "the Hub layout")
    ctx.dirs["hub"] = hub
    ctx.files = {k: (m.read(os.path.join(d, "config.json")), m.read(os.path.join(d, "model.safetensors")))
                 for k, d in ctx.dirs.items()}
    ctx.dirs["sharded"] = write_sharded(ctx, *ctx.files["fp32"])
    ctx.val = os.path.join(ctx.root, "data", "nlp-corpus", "nlp_val_*.bin")
    return [m.Case(convert_argv(ctx, d, os.path.join(ctx.work, f"{k}.h5")), k)
            for k, d in ctx.dirs.items()]


def convert_argv(ctx, d, out):
    return [ctx.tool("gpt2_convert"), d, out]


def eval_argv(ctx, d):
    return [ctx.tool("gpt2_eval"), "--weights", d, "--val", ctx.val, "--val-batches", "1", "--batch",
            "1", "--seq-len", "8"]


def config_refused(c, orig):
    """Is config c surely refused for the tensors of orig's model? A JSON
    null counts as absent (the default applies): not judged."""
    if not isinstance(c, dict):
        return True
    for key in ("n_layer", "n_embd", "n_positions", "vocab_size", "n_head", "n_inner"):
        v = c.get(key)
        if v is not None and (type(v) is not int or v < 1):
            return True
    if any(c.get(k) is not None and c[k] != orig[k] for k in ("n_embd", "n_positions", "vocab_size")):
        return True  # the tensors' shapes fix these
    if c.get("n_layer") is not None and c["n_layer"] > orig["n_layer"]:
        return True  # tensors missing
    n_embd = c.get("n_embd") or orig["n_embd"]
    return (c.get("n_head") is not None and n_embd % c["n_head"] != 0) or (
        c.get("n_inner") is not None and c["n_inner"] != 4 * n_embd)


def mutate_config(rng, text, what):
    """config.json changed as JSON or as text; True if surely invalid."""
    if rng.random() < 0.3:
        what.append("config.json bytes mutated")
        return m.mutate_bytes(rng, text, [text, b"[" * 100000, b'{"a":' * 5000]), False
    c = json.loads(text)
    for _ in range(rng.randint(1, 2)):
        r = rng.random()
        key = rng.choice(SIZE_FIELDS if r < 0.6 else OTHER_FIELDS)
        if r < 0.45 and key in c and type(c[key]) is int:
            c[key] = rng.choice(m.BOUNDARY_INTS + [c[key] + 1, c[key] - 1, c[key] * 2, c[key] // 2])
        elif r < 0.85:
            c[key] = rng.choice(ODD_JSON)
        else:
            c.pop(key, None)
        what.append(f"config {key} = {str(c.get(key, '(deleted)'))[:40]}")
    out = json.dumps(c, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.7)
    return out.encode("utf-8", "surrogatepass"), config_refused(c, json.loads(text))


def make_case(ctx, rng, i):
    kind = rng.choice(["fp32", "fp32", "bf16", "hub", "sharded"])
    if kind == "sharded":
        return sharded_case(ctx, rng)
    config, st = ctx.files[kind]
    what, invalid = [f"{kind} export"], False
    r = rng.random()
    if r < 0.35:
        config, invalid = mutate_config(rng, config, what)
    elif r < 0.75:
        header, body = split_safetensors(st)
        for _ in range(rng.randint(1, 2)):
            invalid |= mutate_header(rng, header, what)
        st = join_safetensors(header, body, rng, what)
    else:
        n = struct.unpack("<Q", st[:8])[0]
        choice = rng.random()
        if choice < 0.3:
            st = st[:rng.randint(0, len(st) - 1)]
            what.append(f"model.safetensors cut to {len(st)} bytes")
            invalid = True
        elif choice < 0.6:
            st = m.flip_bytes(rng, st[:8 + n], lo=8) + st[8 + n:]
            what.append("header bytes flipped")
        elif choice < 0.8:
            st = m.mutate_bytes(rng, st)
            what.append("model.safetensors bytes mutated")
        else:
            st = m.pack_i32(st, 0, rng.choice(m.BOUNDARY_INTS))
            what.append("the header length's low 4 bytes overwritten")
    d = os.path.join(ctx.case_dir, "model")
    m.write(os.path.join(d, "config.json"), config)
    m.write(os.path.join(d, "model.safetensors"), st)
    if rng.random() < 0.2:
        return m.Case(eval_argv(ctx, d), "; ".join(what) + " (gpt2_eval)", invalid)
    return m.Case(convert_argv(ctx, d, os.path.join(ctx.case_dir, "out.h5")), "; ".join(what), invalid)


def sharded_case(ctx, rng):
    """The two-file layout: its index, or one shard, mutated."""
    d = os.path.join(ctx.case_dir, "model")
    config, _ = ctx.files["fp32"]
    m.write(os.path.join(d, "config.json"), config)
    what, invalid = ["sharded"], False
    shards = dict(ctx.shards)
    if rng.random() < 0.5:
        index = mutate_index(rng, ctx, what)
    else:
        index = json.dumps(ctx.index).encode()
        name = rng.choice(sorted(shards))
        header, body = split_safetensors(shards[name])
        invalid = mutate_header(rng, header, what)
        shards[name] = join_safetensors(header, body, rng, what)
    for name, data in shards.items():
        m.write(os.path.join(d, name), data)
    m.write(os.path.join(d, "model.safetensors.index.json"), index)
    return m.Case(convert_argv(ctx, d, os.path.join(ctx.case_dir, "out.h5")), "; ".join(what), invalid)


if __name__ == "__main__":
    m.run("mutate_hf", setup, make_case, default_count=600)
