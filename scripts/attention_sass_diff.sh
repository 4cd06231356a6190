#!/usr/bin/env bash
# Shows that the production attention kernels' machine code (and that of
# matmul_wgmma.cu, which shares their wgmma and TMA helpers, wgmma.cuh) is
# the same in the working tree as at a base revision: by default cb1ac21,
# the last commit before the attention code was split into a dispatcher and
# one file per kernel family, and its kernels renamed; for a move of code
# since, give a recent base, e.g. main:
#
#   scripts/attention_sass_diff.sh [BASE_REV]          (e.g. MODE=elf scripts/attention_sass_diff.sh main)
#   BASE_SRC=DIR scripts/attention_sass_diff.sh   (the base's source tree, where
#                                                 there is no git: a GPU host)
#
# Compiles the translation units $TUS (default: src/kernels/cuda/attention*.cu
# and src/kernels/cuda/matmul_wgmma.cu, globbed on each side, so files that
# came or went between the base and the tree are taken as they are) of
# BASE_REV (git archive) and of the working tree (uncommitted changes
# included) with the build's nvcc flags (src/CMakeLists.txt: -O3 -DNDEBUG
# -Werror=all-warnings --expt-relaxed-constexpr, -DGPT2_HAVE_SM90A=1 as in a
# build whose GPT2_CUDA_ARCHS holds 90a, nvcc's default C++ standard; no
# GPT2_ATTN_TUNING, so only production kernels) into one cubin per
# translation unit and architecture (sm_90a, sm_80), then compares every
# kernel with its counterpart: by the table below where the base has the
# table's old name (the kernels were renamed at the split, so names alone
# cannot pair them), else by identical name (a base after the renaming, and
# every kernel the table does not list, matmul_wgmma.cu's among them):
#   sass: `cuobjdump -sass` of each kernel, addresses and branch labels
#         normalised (needs cuobjdump, part of the CUDA toolkit on GPU hosts);
#   elf:  the kernel's code section bytes, its register count, parameter
#         bank size and .nv.info attributes read from the cubin (needs only
#         python3).
# Prints one line per kernel and architecture, "same" or "DIFFERENT" (or
# "missing"), lists kernels found in the tree only (new, or renamed where
# the table has no pair for them), and exits 1 when any kernel is not "same"
# or is in the tree only. Kernels of the base only (tuning variants that
# were production-built then) are counted, not compared. The size
# of a kernel's static shared memory section is printed as a note, not
# compared: on sm_90 every kernel of a module in which some kernel uses
# shared memory gets a 1 KiB section, so it changes with what else the
# translation unit holds (the backward's passes, which use none, had it
# beside the mma.sync kernels and have not in the dispatcher's module).
# Env: NVCC (nvcc on PATH, else /usr/local/cuda/bin/nvcc), CUOBJDUMP
# (cuobjdump next to nvcc, else on PATH), ARCHS ("90a 80"), MODE (sass,
# elf, or both: the default, sass skipped where there is no cuobjdump),
# TUS (the translation units, paths from the repository root, globs
# allowed), EXTRA (more nvcc flags on both sides: with
# EXTRA=-DGPT2_ATTN_TUNING=1 and TUS adding src/kernels/cuda/tuning/*.cu
# the tuning variants are compared too, by name), JOBS (compilations at a time: nproc), KEEP=1 keeps the work directory (its path is printed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-cb1ac21}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUOBJDUMP=${CUOBJDUMP:-$(dirname "$NVCC")/cuobjdump}
[ -x "$CUOBJDUMP" ] || CUOBJDUMP=$(command -v cuobjdump || true)
ARCHS=${ARCHS:-90a 80}
MODE=${MODE:-both}
TUS=${TUS:-src/kernels/cuda/attention*.cu src/kernels/cuda/matmul_wgmma.cu}
PY=$(command -v python3)
if ! command -v c++filt >/dev/null; then
  echo "c++filt (binutils) is needed to read kernel names" >&2
  exit 2
fi
if [ "$MODE" = sass ] && [ -z "$CUOBJDUMP" ]; then
  echo "MODE=sass needs cuobjdump (CUOBJDUMP=...)" >&2
  exit 2
fi
[ -z "$CUOBJDUMP" ] && [ "$MODE" = both ] && MODE=elf

work=$(mktemp -d "${TMPDIR:-/tmp}/attention_sass_diff.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "work directory: $work"; else trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work/base" "$work/tree"
if [ -n "${BASE_SRC:-}" ]; then
  (cd "$BASE_SRC" && tar -c src) | tar -x -C "$work/base"
else
  git -C "$root" archive "$base" src | tar -x -C "$work/base"
fi
(cd "$root" && tar -c src) | tar -x -C "$work/tree"

FLAGS=(-O3 -DNDEBUG -DGPT2_HAVE_CUDA=1 -DGPT2_HAVE_SM90A=1 -Werror=all-warnings
       --expt-relaxed-constexpr ${EXTRA:-})
echo "nvcc: $NVCC ($("$NVCC" --version | grep -o 'release [0-9.]*'))"
echo "flags: ${FLAGS[*]} -Isrc -gencode=arch=compute_ARCH,code=sm_ARCH -cubin"
echo "base: ${BASE_SRC:-$(git -C "$root" rev-parse --short "$base")}, tree: $root (working tree)"
jobs_max=${JOBS:-$(nproc 2>/dev/null || echo 2)}
for side in base tree; do
  for tu in $(cd "$work/$side" && ls $TUS 2>/dev/null); do
    tu="$work/$side/$tu"
    for arch in $ARCHS; do
      out="$work/$side/$(basename "$tu" .cu).sm_$arch.cubin"
      while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
      { "$NVCC" "${FLAGS[@]}" -I"$work/$side/src" "-gencode=arch=compute_$arch,code=sm_$arch" \
          -cubin -o "$out" "$tu" 2>"$out.log" || echo "$tu" >"$out.failed"; } &
    done
  done
done
wait
if compgen -G "$work/*/*.failed" >/dev/null; then
  cat "$work"/*/*.log >&2
  echo "compilation failed: $(cat "$work"/*/*.failed | tr '\n' ' ')" >&2
  exit 2
fi
if [ "$MODE" != elf ]; then
  for cubin in "$work"/*/*.cubin; do "$CUOBJDUMP" -sass "$cubin" >"$cubin.sass"; done
fi

"$PY" - "$work" "$MODE" $ARCHS <<'PY'
import glob, hashlib, os, re, struct, subprocess, sys

work, mode, archs = sys.argv[1], sys.argv[2], sys.argv[3:]

# label: (the kernel at the base revision, its counterpart in the tree), as
# c++filt names them without "(anonymous namespace)::", the parameter list
# and spaces.
TABLE = [
    # mma.sync family (the path of every GPU but compute capability 9.0)
    ("mma fwd hs64", "attn_fwd_kernel<64,4,2,2>", "attn_fwd_mma_kernel<MmaFwd64>"),
    ("mma fwd hs128", "attn_fwd_kernel<128,8,1,1>", "attn_fwd_mma_kernel<MmaFwd128>"),
    ("mma bwd hs64", "attn_bwd_kernel<64,4,32,3>", "attn_bwd_mma_kernel<MmaBwd64>"),
    ("mma bwd hs128", "attn_bwd_kernel<128,8,32,1>", "attn_bwd_mma_kernel<MmaBwd128>"),
    # the backward's passes around either family's main kernel
    ("bwd prep hs64", "attn_bwd_prep_kernel<64>", "attn_bwd_prep_kernel<64>"),
    ("bwd prep hs128", "attn_bwd_prep_kernel<128>", "attn_bwd_prep_kernel<128>"),
    ("dq convert (mma layout)", "attn_dq_convert_kernel<false>", "attn_dq_convert_kernel<false>"),
    ("dq convert (wgmma layout)", "attn_dq_convert_kernel<true>", "attn_dq_convert_kernel<true>"),
    # wgmma family (sm_90a); the cp.async kernels run where no TMA tensor map can be made
    ("wgmma fwd hs64", "attn_fwd_sm90_kernel<64,2,64,2,true,4,true>",
     "attn_fwd_wgmma_kernel<WgmmaFwd64>"),
    ("wgmma fwd hs64 cp.async", "attn_fwd_sm90_kernel<64,2,64,2,true,0,false>",
     "attn_fwd_wgmma_kernel<CpAsyncFwd<WgmmaFwd64>>"),
    ("wgmma fwd hs128", "attn_fwd_sm90_kernel<128,2,64,2,true,2,false>",
     "attn_fwd_wgmma_kernel<WgmmaFwd128>"),
    ("wgmma fwd hs128 cp.async", "attn_fwd_sm90_kernel<128,2,64,2,true,0,false>",
     "attn_fwd_wgmma_kernel<CpAsyncFwd<WgmmaFwd128>>"),
    ("wgmma bwd hs64", "attn_bwd_sm90_kernel<64,3,false,true,3,0>",
     "attn_bwd_wgmma_kernel<WgmmaBwd64,false>"),
    ("wgmma bwd hs64 deterministic", "attn_bwd_sm90_kernel<64,3,true,true,3,0>",
     "attn_bwd_wgmma_kernel<WgmmaBwd64,true>"),
    ("wgmma bwd hs64 cp.async", "attn_bwd_sm90_kernel<64,3,false,false,2,0>",
     "attn_bwd_wgmma_kernel<CpAsyncBwd<WgmmaBwd64>,false>"),
    ("wgmma bwd hs64 cp.async deterministic", "attn_bwd_sm90_kernel<64,3,true,false,2,0>",
     "attn_bwd_wgmma_kernel<CpAsyncBwd<WgmmaBwd64>,true>"),
    ("wgmma bwd hs128", "attn_bwd_sm90_kernel<128,2,false,true,2,2>",
     "attn_bwd_wgmma_kernel<WgmmaBwd128,false>"),
    ("wgmma bwd hs128 deterministic", "attn_bwd_sm90_kernel<128,2,true,true,2,2>",
     "attn_bwd_wgmma_kernel<WgmmaBwd128,true>"),
    ("wgmma bwd hs128 cp.async", "attn_bwd_sm90_kernel<128,2,false,false,2,0>",
     "attn_bwd_wgmma_kernel<CpAsyncBwd<WgmmaBwd128>,false>"),
    ("wgmma bwd hs128 cp.async deterministic", "attn_bwd_sm90_kernel<128,2,true,false,2,0>",
     "attn_bwd_wgmma_kernel<CpAsyncBwd<WgmmaBwd128>,true>"),
]


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.split("\n")
    return dict(zip(names, out))


def key_of(demangled):
    s = demangled.replace("(anonymous namespace)::", "")
    if s.startswith("void "):
        s = s[5:]
    depth = 0
    for i, ch in enumerate(s):  # cut the parameter list: the first "(" outside <...>
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            s = s[:i]
            break
    return s.replace(" ", "")


# ---- elf: code bytes, register count and attributes of each kernel in a cubin

def elf_sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = []
    for i in range(shnum):
        name, typ, flags, _, off, size, link, info, _, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append(dict(name=name, type=typ, flags=flags, off=off, size=size, link=link,
                         info=info, entsize=entsize))
    names = secs[shstrndx]
    for s in secs:
        n = data[names["off"] + s["name"]:]
        s["name"] = n[:n.index(b"\0")].decode()
        s["data"] = data[s["off"]:s["off"] + s["size"]] if s["type"] != 8 else b""
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
        elif fmt == 0x03:  # EIFMT_HVAL: u16 value
            recs.append((fmt, attr, blob[i + 2:i + 4]))
            i += 4
        elif fmt == 0x02:  # EIFMT_BVAL: u8 value
            recs.append((fmt, attr, blob[i + 2:i + 3]))
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
        name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", symtab["data"],
                                                                   24 * i)
        syms.append(strtab[name:strtab.index(b"\0", name)].decode())
    by_name = {s["name"]: s for s in secs}
    # per-kernel attributes of the global .nv.info (register count, stack and
    # frame sizes ...): records whose payload starts with the kernel's symbol index
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
        # per-kernel .nv.info: attribute records; PARAM_CBANK (0x0a) names the
        # constant bank's symbol by index, which differs between files
        recs = [(f, a, p[4:].hex() if a == 0x0A else p.hex())
                for f, a, p in nv_info_records(info["data"])] if info else []
        const0 = by_name.get(".nv.constant0." + fn)
        shared = by_name.get(".nv.shared." + fn)
        kernels[fn] = {
            "code": hashlib.sha256(s["data"]).hexdigest(),
            "code bytes": len(s["data"]),
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
        if name is not None:
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
    kernels = {}
    for cubin in sorted(glob.glob(os.path.join(work, side, "*.sm_%s.cubin" % arch))):
        found = {}
        if mode in ("elf", "both"):
            for fn, v in elf_kernels(cubin).items():
                found.setdefault(fn, {}).update(v)
        if mode in ("sass", "both"):
            for fn, v in sass_kernels(cubin + ".sass").items():
                found.setdefault(fn, {}).update(v)
        kernels.update(found)
    names = demangle(list(kernels))
    return {key_of(names[fn]): v for fn, v in kernels.items()}


bad = 0
compared = ["code", "section flags", "global attributes", "attributes", "param bank bytes",
            "sass digest"]


def compare(label, old, new, a, b):
    """Prints one kernel's line; 1 when it differs."""
    diff = [k for k in compared if k in a and a.get(k) != b.get(k)]
    size = "%d bytes" % a["code bytes"] if "code bytes" in a else "%d lines" % len(a["sass"])
    key = "static shared bytes"
    if key in a and a[key] != b.get(key):
        size += "; note: static shared section %d -> %d bytes" % (a[key], b.get(key))
    print("  %-40s %s (%s)" % (label, "DIFFERENT in " + ", ".join(diff) if diff else "same", size))
    if diff and "sass" in a:
        import difflib
        lines = difflib.unified_diff(a["sass"], b["sass"], old, new, lineterm="", n=1)
        for l in list(lines)[:40]:
            print("      " + l)
    return int(bool(diff))


for arch in archs:
    base, tree = load("base", arch), load("tree", arch)
    print("sm_%s (%s):" % (arch, {"elf": "code sections and attributes", "sass": "cuobjdump -sass",
                                  "both": "cuobjdump -sass, code sections and attributes"}[mode]))
    done_base, done_tree = set(), set()
    # the table's pairs; at a base after the renaming (the kernel of the old
    # name absent), the new name on both sides
    for label, old, new in TABLE:
        if old not in base and new in base:
            old = new
        a, b = base.get(old), tree.get(new)
        if a is None and b is None:
            print("  %-40s in neither (not production at this base nor here)" % label)
            continue
        if a is None or b is None:
            print("  %-40s missing (%s)" % (label, "base: " + old if a is None else "tree: " + new))
            bad += 1
            continue
        bad += compare(label, old, new, a, b)
        done_base.add(old), done_tree.add(new)
    # every other kernel of the same name on both sides: the production
    # kernels since the table (attention's and matmul_wgmma.cu's)
    same_name = sorted((set(base) & set(tree)) - done_base - done_tree)
    if same_name:
        print("  by name:")
    for k in same_name:
        bad += compare(k, k, k, base[k], tree[k])
        done_base.add(k), done_tree.add(k)
    extra = sorted(set(tree) - done_tree)
    if extra:
        print("  in the tree only (new kernels, or renamed ones the table lacks):")
        for k in extra:
            print("    " + k)
        bad += len(extra)
    gone = sorted(set(base) - done_base)
    if gone:
        print("  %d kernels of the base only (tuning variants built then), not compared"
              % len(gone))
print("result: %s" % ("all production kernels the same" if not bad
                      else "%d DIFFERENT or missing" % bad))
sys.exit(1 if bad else 0)
PY
