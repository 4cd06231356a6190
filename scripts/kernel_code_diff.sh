#!/usr/bin/env bash
# Shows whether kernels' machine code is the same in the working tree as at
# a base revision, kernel by kernel, paired by name: for a change that moves
# code around (a split into headers, tuning variants moved out) and must
# leave the kernels as they were. (attention_sass_diff.sh runs it over the
# attention family and our wgmma GEMM.)
#
#   scripts/kernel_code_diff.sh [BASE_REV]        (default: main)
#   TUS="kernels/cuda/layernorm.cu kernels/cuda/tuning/layernorm_tuning.cu" \
#     DEFINES=-DGPT2_LN_TUNING=1 scripts/kernel_code_diff.sh
#   BASE_SRC=DIR scripts/kernel_code_diff.sh      (the base's source tree, where
#                                                 there is no git: a GPU host)
#
# Compiles the translation units TUS (paths under src/; one missing on a side
# is left out there, so a kernel may move from one TU to another) of
# BASE_REV (git archive) and of the working tree (uncommitted changes
# included) with the build's nvcc flags (src/CMakeLists.txt: -O3 -DNDEBUG
# -Werror=all-warnings --expt-relaxed-constexpr, -DGPT2_HAVE_SM90A=1 as in a
# build whose GPT2_CUDA_ARCHS holds 90a, nvcc's default C++ standard) plus
# DEFINES, into one cubin per TU and architecture, then compares each
# kernel with the kernel of the same name on the other side (demangled,
# anonymous namespaces left out: nvcc mangles them with a hash of the
# file's path):
#   elf:  its code section bytes, register count, parameter bank size and
#         .nv.info attributes read from the cubin (needs only python3);
#   sass: `cuobjdump -sass` of it, addresses and branch labels normalised
#         (needs cuobjdump, part of the CUDA toolkit on GPU hosts).
# Prints one line per kernel and architecture: "same", "DIFFERENT in ..."
# (with the values that differ), or on one side only; exits 1 when any
# kernel is not "same" on both sides. The static shared memory section's
# size is a note, not compared (on sm_90 it follows what else the module
# holds).
# Env: TUS (default kernels/cuda/layernorm.cu), DEFINES, ARCHS ("90a 80"),
# MODE (elf, sass, or both: the default, sass skipped without cuobjdump),
# NVCC (nvcc on PATH, else /usr/local/cuda/bin/nvcc), CUOBJDUMP (next to
# nvcc, else on PATH), JOBS (parallel nvcc runs, 2), KEEP=1 keeps the work
# directory (its path is printed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-main}
TUS=${TUS:-kernels/cuda/layernorm.cu}
DEFINES=${DEFINES:-}
ARCHS=${ARCHS:-90a 80}
MODE=${MODE:-both}
JOBS=${JOBS:-2}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUOBJDUMP=${CUOBJDUMP:-$(dirname "$NVCC")/cuobjdump}
[ -x "$CUOBJDUMP" ] || CUOBJDUMP=$(command -v cuobjdump || true)
PY=$(command -v python3)
if [ "$MODE" = sass ] && [ -z "$CUOBJDUMP" ]; then
  echo "MODE=sass needs cuobjdump (CUOBJDUMP=...)" >&2
  exit 2
fi
[ -z "$CUOBJDUMP" ] && [ "$MODE" = both ] && MODE=elf

work=$(mktemp -d "${TMPDIR:-/tmp}/kernel_code_diff.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "work directory: $work"; else trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work/base" "$work/tree"
if [ -n "${BASE_SRC:-}" ]; then
  (cd "$BASE_SRC" && tar -c src) | tar -x -C "$work/base"
else
  git -C "$root" archive "$base" src | tar -x -C "$work/base"
fi
(cd "$root" && tar -c src) | tar -x -C "$work/tree"

# shellcheck disable=SC2206 # DEFINES is a list of flags
FLAGS=(-O3 -DNDEBUG -DGPT2_HAVE_CUDA=1 -DGPT2_HAVE_SM90A=1 -Werror=all-warnings
       --expt-relaxed-constexpr $DEFINES)
echo "nvcc: $NVCC ($("$NVCC" --version | grep -o 'release [0-9.]*'))"
echo "flags: ${FLAGS[*]} -Isrc -gencode=arch=compute_ARCH,code=sm_ARCH -cubin"
echo "base: ${BASE_SRC:-$(git -C "$root" rev-parse --short "$base")}, tree: $root (working tree)"
echo "translation units: $TUS"
compile() { # side tu arch; the cubin's name is the TU's path, + for /
  local out
  out="$work/$1/$(echo "$2" | tr / +).sm_$3.cubin"
  "$NVCC" "${FLAGS[@]}" -I"$work/$1/src" "-gencode=arch=compute_$3,code=sm_$3" -cubin \
    -o "$out" "$work/$1/src/$2" 2>"$out.log" || { cat "$out.log" >&2; return 1; }
}
pids=()
failed=0
for side in base tree; do
  for tu in $TUS; do
    if [ ! -f "$work/$side/src/$tu" ]; then
      echo "  ($side has no src/$tu)"
      continue
    fi
    for arch in $ARCHS; do
      if [ ${#pids[@]} -ge "$JOBS" ]; then # at most JOBS at once, oldest first
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
      fi
      compile "$side" "$tu" "$arch" &
      pids+=($!)
    done
  done
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
if [ $failed = 1 ]; then
  echo "compilation failed" >&2
  exit 2
fi
if [ "$MODE" != elf ]; then
  for cubin in "$work"/*/*.cubin; do "$CUOBJDUMP" -sass "$cubin" >"$cubin.sass"; done
fi

# shellcheck disable=SC2086 # ARCHS: one argument each
"$PY" - "$work" "$MODE" $ARCHS <<'PY'
import glob, hashlib, os, re, struct, subprocess, sys

work, mode, archs = sys.argv[1], sys.argv[2], sys.argv[3:]


def demangle(name):
    try:
        return subprocess.run(["c++filt"], input=name, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return name


# ---- elf: code bytes, register count and attributes of each kernel in a cubin

def elf_sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = []
    for i in range(shnum):
        name, typ, flags, _, off, size, link, info, _, _ = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append(dict(name=name, type=typ, flags=flags, off=off, size=size, link=link,
                         info=info))
    names = secs[shstrndx]
    for s in secs:
        n = data[names["off"] + s["name"]:]
        s["name"] = n[:n.index(b"\0")].decode()
        s["data"] = data[s["off"]:s["off"] + s["size"]] if s["type"] != 8 else b""  # NOBITS
    return secs


def nv_info_records(blob):
    """(format, attribute, payload) records of an .nv.info section."""
    i, recs = 0, []
    while i + 2 <= len(blob):
        fmt, attr = blob[i], blob[i + 1]
        if fmt == 0x04:  # EIFMT_SVAL: u16 size, payload
            size, = struct.unpack_from("<H", blob, i + 2)
            recs.append((fmt, attr, blob[i + 4:i + 4 + size]))
            i += 4 + size
        elif fmt in (0x03, 0x02):  # EIFMT_HVAL (u16), EIFMT_BVAL (u8), in 4 bytes
            recs.append((fmt, attr, blob[i + 2:i + (4 if fmt == 0x03 else 3)]))
            i += 4
        else:  # EIFMT_NVAL
            recs.append((fmt, attr, b""))
            i += 4
    return recs


def elf_kernels(path):
    data = open(path, "rb").read()
    secs = elf_sections(data)
    symtab = next(s for s in secs if s["type"] == 2)
    strtab = secs[symtab["link"]]["data"]
    syms = []
    for i in range(symtab["size"] // 24):
        name, = struct.unpack_from("<I", symtab["data"], 24 * i)
        syms.append(strtab[name:strtab.index(b"\0", name)].decode())
    by_name = {s["name"]: s for s in secs}
    # the global .nv.info's records about a kernel (register count, stack and
    # frame sizes ...) start with its symbol index
    global_attrs = {}
    if ".nv.info" in by_name:
        for fmt, attr, payload in nv_info_records(by_name[".nv.info"]["data"]):
            if fmt == 0x04 and len(payload) >= 4:
                sym, = struct.unpack_from("<I", payload)
                global_attrs.setdefault(syms[sym], []).append((attr, payload[4:].hex()))
    kernels = {}
    for s in secs:
        if not s["name"].startswith(".text."):
            continue
        fn = s["name"][len(".text."):]
        info = by_name.get(".nv.info." + fn)
        # PARAM_CBANK (0x0a) names the constant bank's symbol by index, which
        # differs between files: its payload without the index
        recs = [(f, a, p[4:].hex() if a == 0x0A else p.hex())
                for f, a, p in nv_info_records(info["data"])] if info else []
        const0 = by_name.get(".nv.constant0." + fn)
        shared = by_name.get(".nv.shared." + fn)
        regs = [struct.unpack("<I", bytes.fromhex(p[:8]))[0]
                for a, p in global_attrs.get(fn, []) if a == 0x2F]  # EIATTR_REGCOUNT
        kernels[fn] = {
            "code": hashlib.sha256(s["data"]).hexdigest()[:16],
            "code bytes": len(s["data"]),
            "registers": regs[0] if regs else None,
            "section flags": (s["flags"], s["info"] >> 24),
            "global attributes": sorted(global_attrs.get(fn, [])),
            "attributes": recs,
            "param bank bytes": const0["size"] if const0 else 0,
            "static shared bytes": shared["size"] if shared else 0,
        }
    return kernels


# ---- sass: cuobjdump -sass text per kernel, addresses and labels normalised

def sass_kernels(path):
    kernels, name, lines = {}, None, []

    def flush():
        if name is None:
            return
        labels = {}

        def label(m):
            return labels.setdefault(m.group(0), ".L_%d" % len(labels))
        body = [re.sub(r"\.L_x_\d+", label, re.sub(r"^\s*/\*[0-9a-f]{4,}\*/", "", l))
                for l in lines]
        body = [" ".join(l.split()) for l in body if l.strip()]  # column padding varies
        kernels[name] = {"sass": body,
                         "sass digest": hashlib.sha256("\n".join(body).encode()).hexdigest()}
    for line in open(path):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            flush()
            name, lines = m.group(1), []
        elif name is not None and not line.lstrip().startswith(".headerflags"):
            lines.append(line.rstrip("\n"))
    flush()
    return kernels


def load(side, arch):
    """{kernel: facts, with "tu": the translation unit it came from}"""
    kernels = {}
    for cubin in sorted(glob.glob(os.path.join(work, side, "*.sm_%s.cubin" % arch))):
        found = {}
        if mode in ("elf", "both"):
            for fn, v in elf_kernels(cubin).items():
                found.setdefault(fn, {}).update(v)
        if mode in ("sass", "both"):
            for fn, v in sass_kernels(cubin + ".sass").items():
                found.setdefault(fn, {}).update(v)
        for fn, v in found.items():
            v["tu"] = os.path.basename(cubin)[:-len(".sm_%s.cubin" % arch)].replace("+", "/")
            kernels[key(fn)] = v
    return kernels


def plain(fn):
    """the demangled name without "void " and anonymous namespaces: nvcc
    mangles an anonymous namespace with a hash of the file's path, which
    differs between the base's and the tree's copies"""
    s = demangle(fn).replace("(anonymous namespace)::", "")
    return s[5:] if s.startswith("void ") else s


def key(fn):
    """what pairs a kernel with its counterpart: its plain name, parameters too"""
    return plain(fn).replace(" ", "")


def short(k):
    """a pairing key without its parameter list"""
    s = k
    depth = 0
    for i, ch in enumerate(s):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0:
            return s[:i]
    return s


bad = 0
compared = ["code", "registers", "section flags", "global attributes", "attributes",
            "param bank bytes", "sass digest"]
for arch in archs:
    base, tree = load("base", arch), load("tree", arch)
    print("sm_%s (%s):" % (arch, {"elf": "code sections and attributes", "sass": "cuobjdump -sass",
                                  "both": "cuobjdump -sass, code sections and attributes"}[mode]))
    for fn in sorted(set(base) | set(tree), key=short):
        a, b = base.get(fn), tree.get(fn)
        label = short(fn)
        if a is None or b is None:
            print("  %-52s only in the %s (%s)" % (label, "tree" if a is None else "base",
                                                  (b or a)["tu"]))
            bad += 1
            continue
        diff = [k for k in compared if k in a and a.get(k) != b.get(k)]
        facts = "%s bytes" % a.get("code bytes", "?")
        if a.get("registers") is not None:
            facts += ", %d registers" % a["registers"]
        if a["tu"] != b["tu"]:
            facts += "; moved %s -> %s" % (a["tu"], b["tu"])
        shared = "static shared bytes"
        if shared in a and a[shared] != b.get(shared):
            facts += "; note: static shared section %d -> %d bytes" % (a[shared], b.get(shared))
        print("  %-52s %s (%s)" % (label, "DIFFERENT in " + ", ".join(diff) if diff else "same",
                                   facts))
        bad += bool(diff)
        for k in diff:
            if k not in ("sass digest", "code"):
                print("      %s: %s -> %s" % (k, a[k], b[k]))
            elif k == "code":
                print("      code: %s (%d bytes) -> %s (%d bytes)" % (
                    a["code"], a["code bytes"], b["code"], b["code bytes"]))
        if diff and "sass" in a:
            import difflib
            for l in list(difflib.unified_diff(a["sass"], b["sass"], "base", "tree", lineterm="",
                                               n=1))[:40]:
                print("      " + l)
print("result: %s" % ("every kernel the same" if not bad
                      else "%d DIFFERENT or on one side only" % bad))
sys.exit(1 if bad else 0)
PY
