#!/usr/bin/python3
"""Mutation test of the tokenizer's inputs (src/data/doc_reader.c,
encode_pool.c, tokenizer.c, tools/gpt2_tokenize.c) through `gpt2_tokenize`:
nlp-corpus excerpts as a text file, JSONL (ASCII-escaped or raw UTF-8) and
.jsonl.gz / .json.gz, mutated as text (bytes flipped, cut, added, invalid
UTF-8, NUL bytes, long lines), as JSON (fields retyped, odd escapes such as
lone surrogates and \\u0000, deep nesting) and as gzip (the compressed
stream flipped, cut, concatenated, with trailing bytes); a few cases mutate
the tokenizer's own encoder.json and vocab.bpe instead. A
gzip file cut before its trailer must not exit 0 (tests/lib/mutate.py says
what else fails).
usage: mutate_text.py --bin-dir BUILD --work DIR [--seed S] [--count N] [--only I]"""
import glob
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mutate as m  # noqa: E402

ODD_JSON = [None, True, 0, -1, 2**63, 1.5e308, "", [], {}, ["text"], {"text": "a"}, "\u0000",
            "\ud800", "\udc00\ud800", "\U0001f600", "<|endoftext|>"]
ODD_ESCAPES = [b"\\u0000", b"\\ud800", b"\\udfff", b"\\ud800\\u0041", b"\\u12", b"\\x41", b"\\",
               b"\\U0001F600", b"\\uD83D\\uDE00", b"\\/", b"\\'", b"\\\n"]


def tokenize_argv(ctx, path, out, field=None):
    argv = [ctx.tool("gpt2_tokenize")] + ctx.encoder_args() + ["--out-dir", out, "--threads", "1"]
    return argv + (["--jsonl-field", field] if field else []) + [path]


def setup(ctx):
    texts = []
    for p in sorted(glob.glob(os.path.join(ctx.root, "data", "nlp-corpus", "text", "*.txt")))[:6]:
        with open(p, encoding="utf-8") as f:
            texts.append(f.read(1500))
    if len(texts) < 3:
        sys.exit("mutate_text: data/nlp-corpus/text is missing: run tools/prepare_data.sh first")
    texts[1] += " \u2014 caf\u00e9 \U0001f600 <|endoftext|> 's"
    ctx.texts = texts
    ctx.bpe = [m.read(p) for p in ctx.encoder_args()[1::2]]
    d = ctx.seed_dir
    m.write(os.path.join(d, "doc.txt"), texts[0])
    m.write(os.path.join(d, "docs.jsonl"), "".join(json.dumps({"text": t}) + "\n" for t in texts))
    with gzip.open(os.path.join(d, "docs.jsonl.gz"), "wt", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts)
    return [m.Case(tokenize_argv(ctx, os.path.join(d, n), os.path.join(ctx.work, "seed_out", n)), n)
            for n in ("doc.txt", "docs.jsonl", "docs.jsonl.gz")]


def jsonl_bytes(ctx, rng, what):
    """JSONL of the excerpts with one to three line-level changes, and
    whether a line is surely refused (not an object, no string "text")."""
    docs = [{"text": t, "id": k} for k, t in enumerate(ctx.texts)]
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(docs))
        if not isinstance(docs[k], dict):
            continue  # replaced by a non-object already
        r = rng.random()
        if r < 0.3:
            docs[k]["text"] = rng.choice(ODD_JSON)
        elif r < 0.45:
            docs[k].pop("text", None)
        elif r < 0.55:
            docs[k] = rng.choice(ODD_JSON)
        elif r < 0.65:
            docs[k]["text"] = "x" * rng.choice([100000, 2**20 + 1])
        elif r < 0.75:
            depth = rng.choice([100, 5000, 100000])
            docs[k] = {"text": "a", "deep": json.loads("[" * min(depth, 900) + "]" * min(depth, 900))}
        what.append(f"document {k}: {json.dumps(docs[k])[:60]}")
    refused = any(not isinstance(d, dict) or not isinstance(d.get("text"), str) for d in docs)
    ensure_ascii = rng.random() < 0.5
    lines = [json.dumps(d, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass") for d in docs]
    r = rng.random()
    if r < 0.25:  # an odd escape inside a text string
        k = rng.randrange(len(lines))
        pos = lines[k].find(b'"text": "')
        if pos >= 0:
            pos += len(b'"text": "') + rng.randint(0, 20)
            esc = rng.choice(ODD_ESCAPES)
            lines[k] = lines[k][:pos] + esc + lines[k][pos:]
            what.append(f"line {k + 1}: escape {esc!r}")
    elif r < 0.35:  # nesting deeper than json-c's limit
        lines.append(b'{"text": "a", "x": ' + b"[" * 100000 + b"]" * 100000 + b"}")
        what.append("a line nested 100000 deep")
    data = rng.choice([b"\n", b"\r\n", b"\n\n \t\n"]).join(lines) + b"\n"
    if rng.random() < 0.4:
        data = m.mutate_bytes(rng, data, [data])
        what.append("bytes mutated")
        refused = False  # not judged
    return data, refused


def gz_bytes(rng, data, what):
    """data gzip-compressed, the stream itself sometimes damaged. Returns
    (bytes, how): "refused" (cut before the trailer, or not gzip at all),
    "changed" (what the reader sees differs: not judged) or "intact"."""
    z = gzip.compress(data, mtime=0)
    r = rng.random()
    if r < 0.25:
        n = rng.randint(1, len(z) - 9)
        what.append(f"gzip cut to {n} of {len(z)} bytes")
        return z[:n], "refused"
    if r < 0.45:
        what.append("gzip stream bytes flipped")
        return m.flip_bytes(rng, z, lo=rng.choice([0, 10])), "changed"
    if r < 0.55:
        what.append("two gzip members")
        return z + gzip.compress(data[:rng.randint(0, len(data))], mtime=0), "changed"
    if r < 0.65:
        what.append("bytes after the gzip member")
        return m.extend(rng, z), "changed"
    if r < 0.7 and data:
        what.append("not gzip at all")
        return data, "refused"
    return z, "intact"


def make_case(ctx, rng, i):
    what, invalid = [], False
    out = os.path.join(ctx.case_dir, "out")
    r = rng.random()
    if r < 0.1:  # the tokenizer's own files
        enc, voc = ctx.bpe
        if rng.random() < 0.5:
            enc = m.mutate_bytes(rng, enc)
            what.append("encoder.json mutated")
        else:
            lines = voc.split(b"\n")
            k = rng.randrange(len(lines))
            lines[k] = rng.choice([b"", b"a", b"a b c", b"\xff \xfe", b"#version: 0.2", lines[0],
                                   lines[k][::-1], b"\x00 \x00"])
            voc = m.mutate_bytes(rng, b"\n".join(lines)) if rng.random() < 0.3 else b"\n".join(lines)
            what.append(f"vocab.bpe line {k + 1} replaced")
        m.write(os.path.join(ctx.case_dir, "encoder.json"), enc)
        m.write(os.path.join(ctx.case_dir, "vocab.bpe"), voc)
        stdin_text = os.path.join(ctx.case_dir, "doc.txt")
        m.write(stdin_text, ctx.texts[1])
        argv = [ctx.tool("gpt2_tokenize"), "--encoder", os.path.join(ctx.case_dir, "encoder.json"),
                "--vocab", os.path.join(ctx.case_dir, "vocab.bpe"), "--out-dir", out, "--threads",
                "1", stdin_text]
        return m.Case(argv, "; ".join(what))
    if r < 0.35:  # a text file: one document
        data = ctx.texts[rng.randrange(len(ctx.texts))].encode()
        data = m.mutate_bytes(rng, data, [t.encode() for t in ctx.texts])
        if rng.random() < 0.2:
            data += rng.choice([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80"]) * rng.randint(1, 3000)
        what.append("text file mutated")
        name = rng.choice(["doc.txt", "doc", "doc.gz.txt"])
    else:
        data, invalid = jsonl_bytes(ctx, rng, what)
        name = rng.choice(["docs.jsonl", "docs.jsonl.gz", "docs.json.gz", "docs.jsonl.gz"])
    if name.endswith(".gz"):
        data, how = gz_bytes(rng, data, what)
        invalid = how == "refused" or (how == "intact" and invalid)
    path = os.path.join(ctx.case_dir, name)
    m.write(path, data)
    field = None
    if name != "doc.txt" and rng.random() < 0.1:
        field = rng.choice(["id", "missing", "text\u00e9", "deep", "\xff"])
        what.append(f"--jsonl-field {field}")
        invalid = False  # not judged
    return m.Case(tokenize_argv(ctx, path, out, field), f"{name}: " + "; ".join(what), invalid)


if __name__ == "__main__":
    m.run("mutate_text", setup, make_case, default_count=300)
