"""Checks a run log's profile_ops tables (see profile_ops.sh) against the
model's shape; exits 1 with the reasons on any mismatch."""
import argparse
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("log")
p.add_argument("--layers", type=int, required=True)
p.add_argument("--micro-steps", type=int, required=True)
p.add_argument("--embd", type=int, required=True)
p.add_argument("--tokens", type=int, required=True, help="tokens per micro-step")
p.add_argument("--steps", type=int, required=True, help="the run's max_steps")
p.add_argument("--floors", action="store_true", help="the GPU's floors columns")
p.add_argument("--fp8", action="store_true", help="fp8=1: FP8 products and clipping")
p.add_argument("--attn-proj-bf16", action="store_true", help="fp8_attn_proj=false: attn.c_proj in bf16")
p.add_argument("--lm-head-bf16", action="store_true", help="fp8_lm_head=false: the lm head in bf16")
p.add_argument("--stream", action="store_true", help="profile_ops_timing=stream: ops timed on the stream")
a = p.parse_args()

text = open(a.log).read().splitlines()
problems = []


def want(ok, what):
    if not ok:
        problems.append(what)


start = next((i for i, line in enumerate(text) if line.startswith("per-op profile")), None)
if start is None:
    sys.exit("no per-op profile in the log")
rows, totals = {}, {}
floor_line = None
for line in text[start + 1 :]:
    if line.startswith("floor = "):
        floor_line = line
        continue
    if line.startswith("op "):
        continue
    m = re.match(r"(.+?)\s{2,}([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)(.*)$", line)
    if line.startswith(("untimed", "between ops", "step (profiled)")):
        totals[line.split("  ")[0]] = float(line.split()[-2])
        if line.startswith("step (profiled)"):
            break
        continue
    if not m:
        problems.append(f"a row that does not parse: {line!r}")
        continue
    rows[m.group(1).strip()] = (float(m.group(2)), float(m.group(3)), m.group(5).split())

head = text[start]
want(("timed on the stream" in head) == a.stream, f"the header says how ops were timed: {head!r}")
want(("untimed (host work between ops)" in totals) != a.stream and
     ("between ops (waits, idle stream)" in totals) == a.stream,
     f"the line after 'all ops' names what is left out: {sorted(totals)}")

L, M, C, N = a.layers, a.micro_steps, a.embd, a.tokens
per_block = L * M


def calls(label):
    return rows[label][0] if label in rows else None


# in FP8 with attn.c_proj in FP8 (after its input's first cast) the forward also casts O
attn_fwd = (calls("attention_forward") or 0) + (calls("attention_forward_fp8") or 0)
want(attn_fwd == per_block, f"attention_forward (+ _fp8) {attn_fwd}/step, want {per_block}")
# in FP8 (after each tensor's first cast) the backward also casts dqkv
attn_bwd = (calls("attention_backward") or 0) + (calls("attention_backward_fp8") or 0)
want(attn_bwd == per_block, f"attention_backward (+ _fp8) {attn_bwd}/step")
want(a.fp8 or calls("attention_backward_fp8") is None, "attention_backward_fp8 without fp8")
want((a.fp8 and not a.attn_proj_bf16) or calls("attention_forward_fp8") is None,
     "attention_forward_fp8 without attn.c_proj in fp8")
# in FP8 those whose new dinp is a projection's output gradient also cast it
ln_bwd = (calls("layernorm_backward") or 0) + (calls("layernorm_backward_fp8") or 0)
want(ln_bwd == (2 * L + 1) * M, f"layernorm_backward (+ _fp8) {ln_bwd}/step")
want(a.fp8 or calls("layernorm_backward_fp8") is None, "layernorm_backward_fp8 without fp8")
sfx = "_fp8" if a.fp8 else ""
proj_fp8 = a.fp8 and not a.attn_proj_bf16  # attn.c_proj in FP8
forward = {
    f"matmul_forward{sfx} {N}x{C}->{3 * C}": per_block,  # attn.c_attn
    # attn.c_proj, its residual add in the epilogue (in FP8 the LayerNorm's)
    (f"matmul_forward_fp8 {N}x{C}->{C}" if proj_fp8 else f"matmul_residual_forward {N}x{C}->{C}"): per_block,
    f"matmul_residual_forward{sfx} {N}x{4 * C}->{C}": per_block,  # mlp.c_proj
    # mlp.c_fc: with its GELU epilogue in bf16; in FP8 its product writes pre
    (f"matmul_forward_fp8 {N}x{C}->{4 * C}" if a.fp8 else f"matmul_gelu_forward {N}x{C}->{4 * C}"): per_block,
    f"matmul_backward{sfx} {N}x{C}->{3 * C}": per_block,
    f"matmul_backward{'_fp8' if proj_fp8 else ''} {N}x{C}->{C}": per_block,
    f"matmul_backward{sfx} {N}x{C}->{4 * C}": per_block,
    # mlp.c_proj through the GELU (in FP8 the GELU backward is fused into a cast)
    (f"matmul_backward_fp8 {N}x{4 * C}->{C}" if a.fp8 else f"matmul_backward_gelu {N}x{4 * C}->{C}"): per_block,
}
for label, n in forward.items():
    want(calls(label) == n, f"{label}: {calls(label)} calls/step, want {n}")
# the lm head: with fp8 (unless fp8_lm_head=false) the classifier writes FP8
# dlogits and a transpose of them follows, a call each per chunk
lm_fp8 = a.fp8 and not a.lm_head_bf16
cls = calls("classifier_forward_backward_fp8" if lm_fp8 else "classifier_forward_backward")
want(cls is not None and cls >= M and cls == int(cls),
     f"the classifier{' (FP8 dlogits)' if lm_fp8 else ''}: {cls} calls/step, want a chunk or more a micro-step")
want(calls("fp8_transpose") == (cls if lm_fp8 else None),
     f"fp8_transpose {calls('fp8_transpose')}/step, want {cls if lm_fp8 else None}")
want(calls("classifier_forward_backward_fp8" if not lm_fp8 else "classifier_forward_backward") is None,
     "the other classifier ran too")
if a.fp8:
    # the weights' FP8 copies are cast once a step, held through its later micro-steps
    want(calls("fp8_cast_batch") == L, f"fp8_cast_batch {calls('fp8_cast_batch')}/step, want {L} (a block's once a step)")
    if lm_fp8:  # x's amax pass every micro-step, wte's once a step
        want(calls("fp8_cast") == M + 1, f"fp8_cast {calls('fp8_cast')}/step, want {M + 1}")
    want(calls("fp8_gelu_cast") == per_block, f"fp8_gelu_cast {calls('fp8_gelu_cast')}/step")
    want(calls("fp8_gelu_backward_cast") == per_block, f"fp8_gelu_backward_cast {calls('fp8_gelu_backward_cast')}/step")

ops_ms = sum(r[1] for label, r in rows.items() if label != "all ops")
all_ops = rows.get("all ops", (0, -1.0, []))[1]
step = totals.get("step (profiled)", -1.0)
want(abs(ops_ms - all_ops) <= 0.002 * len(rows) + 1e-3, f"the ops sum to {ops_ms:.3f} ms, 'all ops' says {all_ops}")
want(0 < all_ops <= step + 1e-3, f"all ops {all_ops} ms against a profiled step of {step} ms")

if a.floors:
    want(floor_line is not None, "no floors line")
    rates = re.findall(r"/ ([0-9.]+)", floor_line or "")
    if a.fp8:
        want(len(rates) == 3 and float(rates[1]) > float(rates[0]),
             f"floors line: the FP8 rate should exceed the BF16 one: {floor_line}")
    for label, (_, ms, extra) in rows.items():
        if label.startswith("matmul"):
            ok = len(extra) >= 4 and extra[-1] == "TF/s" and float(extra[1]) > 0
            want(ok, f"{label}: no floor, x floor and TF/s: {extra}")

if a.fp8:
    head = next((line for line in text if line.startswith("fp8 clipping:")), None)
    want(head is not None, "no fp8 clipping line")
    m = re.match(r"fp8 clipping: (\d+) of (\d+) tensors .* of the (\d+) scale updates", head or "")
    want(m is not None, f"the clipping line does not parse: {head!r}")
    if m:
        hit, n, updates = map(int, m.groups())
        n_tensors = (9 if a.attn_proj_bf16 else 12) * L  # 3 a linear in FP8
        want(n == n_tensors, f"{n} scaled tensors, want {n_tensors}")
        want(updates == a.steps * M - 1,
             f"{updates} scale updates, want {a.steps * M - 1} (one per forward after the first)")
        i = text.index(head)
        listed = []
        for line in text[i + 2 : i + 2 + min(hit, 20)] if hit else []:
            r = re.match(r"h\.(\d+)\.(attn|mlp)\.\w+ (input|weight|output gradient) \((E4M3|E5M2)\)\s+(\d+)\s+([0-9.]+|inf)$", line)
            want(r is not None, f"a clipping row that does not parse: {line!r}")
            if r:
                listed.append(r)
                want(int(r.group(1)) < L, f"block {r.group(1)} of {L}")
                want(1 <= int(r.group(5)) <= updates, f"{line}: a count outside 1..{updates}")
                limit = 464 / 448 if r.group(4) == "E4M3" else 61440 / 57344
                want(float(r.group(6)) >= limit - 1e-3, f"{line}: overshoot below the rounding limit {limit:.4f}")
                want((r.group(4) == "E5M2") == (r.group(3) == "output gradient"), f"{line}: format")
        want(len(listed) == min(hit, 20), f"{len(listed)} rows listed for {hit} clipped tensors")
        counts = [int(r.group(5)) for r in listed]
        want(counts == sorted(counts, reverse=True), f"rows not ordered by count: {counts}")
        print(f"clipping: {hit} of {n} tensors in {updates} updates, {len(listed)} listed")

    # underflow: every count within the values the tensor's casts saw (one
    # cast per forward, the first scale's extra pass not counted)
    C, T, forwards = a.embd, a.tokens, a.steps * M
    widths = {"attn.c_attn": (C, 3 * C), "attn.c_proj": (C, C), "mlp.c_fc": (C, 4 * C), "mlp.c_proj": (4 * C, C)}
    if a.attn_proj_bf16:
        del widths["attn.c_proj"]
    def size(layer, operand):
        i, o = widths[layer]
        return {"input": T * i, "weight": i * o, "output gradient": T * o}[operand]
    all_values = L * forwards * sum(size(l, op) for l in widths for op in ("input", "weight", "output gradient"))
    head = next((line for line in text if line.startswith("fp8 underflow:")), None)
    want(head is not None, "no fp8 underflow line")
    m = re.match(r"fp8 underflow: (\d+) of (\d+) tensors .*; (\d+) of (\d+) nonzero values cast \(([0-9.e+-]+)%\) in all$", head or "")
    want(m is not None, f"the underflow line does not parse: {head!r}")
    if m:
        hit, n, flushed, nonzero = map(int, m.groups()[:4])
        want(n == n_tensors, f"{n} tensors in the underflow line, want {n_tensors}")
        want(all_values // 2 < nonzero <= all_values,
             f"{nonzero} nonzero values counted of the {all_values} that the casts saw")
        want(flushed <= nonzero, f"{flushed} flushed of {nonzero} nonzero")
        want(abs(float(m.group(5)) - 100 * flushed / nonzero) <= 1e-3 * max(1e-9, 100 * flushed / nonzero),
             f"the share {m.group(5)}% is not {flushed} / {nonzero}")
        i = text.index(head)
        listed, flushed_listed = [], 0
        for line in text[i + 2 : i + 2 + min(hit, 20)] if hit else []:
            r = re.match(r"h\.(\d+)\.((?:attn|mlp)\.\w+) (input|weight|output gradient) \((E4M3|E5M2)\)\s+(\d+)\s+(\d+)\s+([0-9.e+-]+)%$", line)
            want(r is not None, f"an underflow row that does not parse: {line!r}")
            if not r:
                continue
            listed.append(float(r.group(7)))
            rn, rf = int(r.group(5)), int(r.group(6))
            flushed_listed += rf
            want(int(r.group(1)) < L, f"block {r.group(1)} of {L}")
            want(0 < rf <= rn <= forwards * size(r.group(2), r.group(3)),
                 f"{line}: counts outside 0 < flushed <= nonzero <= {forwards * size(r.group(2), r.group(3))}")
        want(len(listed) == min(hit, 20), f"{len(listed)} rows listed for {hit} tensors that flushed")
        want(listed == sorted(listed, reverse=True), f"rows not ordered by share: {listed}")
        want(flushed_listed <= flushed and (hit > 20 or flushed_listed == flushed),
             f"the rows' {flushed_listed} flushed values against the line's {flushed}")
        print(f"underflow: {hit} of {n} tensors, {flushed} of {nonzero} nonzero values flushed")

print(f"{len(rows)} rows; all ops {all_ops} ms of a {step} ms step")
if problems:
    print("\n".join("problem: " + p for p in problems))
    sys.exit(1)
