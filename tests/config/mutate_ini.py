#!/usr/bin/python3
"""Mutation test of the configuration reader (src/config: ini.c, values.c,
keys.c, validate.c) through `gpt2_ddp --print-config FILE [key=value ...]`:
the shipped configs/*.ini with lines deleted, repeated, swapped, cut, or
replaced by generated ones (odd keys, values, sections, quotes, lengths and
bytes), and key=value overrides with the same values. An unknown key or a
syntax error planted on purpose must not exit 0 (tests/lib/mutate.py says
what else fails).
usage: mutate_ini.py --bin-dir BUILD --work DIR [--seed S] [--count N] [--only I]"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mutate as m  # noqa: E402

ODD_VALUES = [
    "", " ", "0", "-0", "1", "-1", "2147483647", "2147483648", "-2147483649", "4294967296",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "1e308", "1e309", "-1e309", "1e-320",
    "4.9e-324", "nan", "-nan", "inf", "infinity", "0x10", "010", "1_000", "1e", ".", "-", "+",
    "+5", "5.", "1,5", "true", "yes", "no", "2 3", "\"\"", "\"", "\"a\\\"b\"", "\"a\\\\\"",
    "\"a\" b", "\"unterminated", "a#b", "a #b", "a ;b", "#", ";", "=", "==", "a=b",
    "${HOME}", "${GPT2_MUTATE_UNDEFINED}", "${", "$", "${}", "$HOME", "%s%s%s%n", "%999999999d",
    "../x", "/", "a/b", "cpu", "cuda", "auto", "cosine", "none", "\t", "\x01", "\xff\xfe",
    "caf\u00e9", "\u2028",
]
ODD_KEYS = ["", "=", "a b", "n-layer", "N_LAYER", "n_layer ", "k\xe9y", "[model]", "_", "1",
            "grad_accum", "world", "padded_vocab_size", "zz_not_a_key"]
ODD_SECTIONS = ["[]", "[", "]", "[model", "[a b]", "[model] x", "[[model]]", "[m\xe9]", "[model];c",
                "[x.y-z]"]


PLANTED = b"zz_not_a_key = 1"  # a line that must be refused wherever it stands


def keys_of(gpt2_ddp):
    """Every key, from --help (the key table drives it)."""
    out = subprocess.run([gpt2_ddp, "--help"], capture_output=True, text=True).stdout
    return re.findall(r"^  ([a-z_0-9]+) = ", out, re.M)


def long_text(rng):
    return rng.choice(["a", "9", "\xe9", "# ", "\"", "${A}"]) * rng.choice([200, 511, 512, 1023,
                                                                            1024, 4096, 30000])  # argv: < 128 KiB


def odd_value(rng):
    r = rng.random()
    if r < 0.1:
        return long_text(rng)
    if r < 0.25:
        return str(rng.choice(m.BOUNDARY_INTS) + rng.choice([-1, 0, 0, 1]))
    return rng.choice(ODD_VALUES)


def odd_line(rng, keys):
    """A generated line: key = value with odd parts, a section, or junk."""
    r = rng.random()
    if r < 0.55:
        key = rng.choice(keys) if rng.random() < 0.85 else rng.choice(ODD_KEYS + [long_text(rng)])
        sep = rng.choice([" = ", "=", " =", "= ", "\t=\t", " = = "])
        return f"{key}{sep}{odd_value(rng)}"
    if r < 0.7:
        return rng.choice(ODD_SECTIONS + ["[" + long_text(rng) + "]"])
    if r < 0.85:
        return rng.choice(["", "#", ";", "   ", "\\", "key", "= value", "\"k\" = v", "\x00",
                           "\ufeffn_layer = 2", "n_layer = 2\r", "k = v \\", long_text(rng)])
    return bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))).decode("latin-1")


def setup(ctx):
    ctx.keys = keys_of(ctx.tool("gpt2_ddp"))
    if len(ctx.keys) < 30:
        sys.exit(f"mutate_ini: only {len(ctx.keys)} keys in gpt2_ddp --help")
    ctx.configs = [m.read(p) for p in sorted(glob.glob(os.path.join(ctx.root, "configs", "*.ini")))]
    return [m.Case([ctx.tool("gpt2_ddp"), "--print-config", p], os.path.basename(p))
            for p in sorted(glob.glob(os.path.join(ctx.root, "configs", "*.ini")))]


def make_case(ctx, rng, i):
    text = rng.choice(ctx.configs)
    lines = text.split(b"\n")
    what = []
    for _ in range(rng.randint(1, 4)):
        if not lines:  # every line deleted or mutated away: an empty file
            lines = [b""]
        r = rng.random()
        k = rng.randrange(len(lines))
        if r < 0.12:
            del lines[k]
            what.append(f"line {k + 1} deleted")
        elif r < 0.22:
            lines.insert(k, lines[rng.randrange(len(lines))])
            what.append(f"a line repeated at {k + 1}")
        elif r < 0.3:
            j = rng.randrange(len(lines))
            lines[k], lines[j] = lines[j], lines[k]
            what.append(f"lines {k + 1} and {j + 1} swapped")
        elif r < 0.8:
            line = odd_line(rng, ctx.keys)
            lines.insert(k, line.encode("utf-8", "surrogateescape"))
            what.append(f"line {k + 1} inserted: {line[:60]!r}")
        elif r < 0.88:
            lines.insert(k, PLANTED)
            what.append(f"unknown key at line {k + 1}")
        else:
            what.append("bytes mutated")
            lines = m.mutate_bytes(rng, b"\n".join(lines)).split(b"\n")
    invalid = PLANTED in lines  # unless a later change removed or broke it
    path = os.path.join(ctx.case_dir, "case.ini")
    m.write(path, b"\n".join(lines))
    overrides = []
    if rng.random() < 0.3:
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(ctx.keys) if rng.random() < 0.9 else rng.choice(ODD_KEYS)
            overrides.append(f"{key}={odd_value(rng)}".replace("\x00", ""))  # argv has no NUL
        what.append(f"overrides {[o[:40] for o in overrides]}")
    return m.Case([ctx.tool("gpt2_ddp"), "--print-config", path] + overrides, "; ".join(what),
                  invalid)


if __name__ == "__main__":
    m.run("mutate_ini", setup, make_case, default_count=400)
