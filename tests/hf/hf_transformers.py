#!/usr/bin/env python3
"""gpt2_ddp and Hugging Face transformers on the same files (label hf).

  export: gpt2_ddp trains the tiny GPT-2, gpt2_convert exports the run as a
          Hugging Face directory, and transformers' own classes load it:
          GPT2LMHeadModel.from_pretrained gives the trainer's val loss on
          the same batches (fp32 CPU trainer: relative 1e-4; bf16 CUDA
          trainer against fp32 transformers: 1e-2), generates text, and
          AutoTokenizer.from_pretrained encodes every nlp-corpus document to
          the ids gpt2_tokenize gives (documents with U+0085, U+180E or U+FEFF
          are counted apart: JavaScript's \\s, which our tokenizer follows as
          the npm gpt-3-encoder does, differs there from Python's and Rust's).
  import: transformers makes a GPT-2 (random weights, seeded) and
          save_pretrained's it; gpt2_ddp starts a run from it (init_from=DIR)
          whose step-0 val loss is what transformers computes on the same
          batches (CPU: 1e-5; CUDA: 1e-2, bf16), and the run trains. On CUDA
          the model is GPT-2 124M under configs/124M.ini: docs/hugging-face.md's
          fine-tuning command with a transformers-made directory in place of
          the Hub's download.

usage: hf_transformers.py export|import GPT2_DDP GPT2_CONVERT GPT2_TOKENIZE WORK_DIR --device cpu|cuda
Exit 0 pass, 1 fail, 77 skipped (no transformers; cuda: no GPU or no CUDA build)."""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VAL_GLOB = os.path.join(ROOT, "data", "nlp-corpus", "nlp_val_*.bin")
SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


try:
    import numpy as np
    import torch
    import transformers
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel
except ImportError as e:
    skip(f"{e} (the hf tests need numpy, torch and transformers)")


def run(cmd, log):
    print("+", " ".join(cmd))
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    if rc != 0:
        print(open(log).read())
        sys.exit(f"FAIL: exit {rc}: {' '.join(cmd)}")
    return open(log).read()


def val_batches(B, T, count):
    """The trainer's validation batches on one rank: samples k*B .. k*B+B-1 in
    file order; sample i is tokens [i*T, i*T+T+1) of its shard."""
    samples = []
    for path in sorted(glob.glob(VAL_GLOB)):
        tok = np.fromfile(path, dtype=np.uint16, offset=256 * 4).astype(np.int64)
        samples += [tok[i * T:i * T + T + 1] for i in range((len(tok) - 1) // T)]
    return [torch.tensor(np.stack(samples[k * B:(k + 1) * B])) for k in range(count)]


@torch.no_grad()
def transformers_loss(model, batches, device):
    total = 0.0
    for x in batches:
        x = x.to(device)
        logits = model(input_ids=x[:, :-1]).logits.float()
        total += torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                   x[:, 1:].reshape(-1)).item()
    return total / len(batches)


def logged_val(run_dir, step):
    rows = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    return [r["val_loss"] for r in rows if r["type"] == "eval" and r["step"] == step][-1]


def logged_losses(run_dir):
    return [json.loads(l)["loss"] for l in open(os.path.join(run_dir, "metrics.jsonl"))
            if '"type":"step"' in l]


def compare(what, ours, theirs, tol):
    rel = abs(ours - theirs) / abs(theirs)
    print(f"{what}: gpt2_ddp {ours:.9f}, transformers {theirs:.9f}: relative difference "
          f"{rel:.2e} (tolerance {tol:g})")
    return rel <= tol


def check_tokenizer(hf_dir, tokenize, work):
    tok = AutoTokenizer.from_pretrained(hf_dir)
    docs = sorted(glob.glob(os.path.join(ROOT, "data", "nlp-corpus", "text", "*.txt")))
    same = differ_js_space = 0
    bad = []
    for path in docs:
        text = open(path, encoding="utf-8").read()
        theirs = tok.encode(text)
        with open(path, "rb") as f:
            out = subprocess.run([tokenize, "--encode-stdin"], stdin=f, capture_output=True, check=True, cwd=ROOT)
        ours = [int(v) for v in out.stdout.split()]
        js_space = any(c in text for c in "\u0085\u180e\ufeff")
        if ours == theirs:
            same += 1
        elif js_space:
            differ_js_space += 1
        else:
            bad.append(os.path.basename(path))
    print(f"AutoTokenizer ({type(tok).__name__}) from the export: {same} of {len(docs)} nlp-corpus "
          f"documents give gpt2_tokenize's ids; {differ_js_space} differ, all of them with U+0085 "
          f"(whitespace to Python/Rust, not to JavaScript); other differences: {bad or 'none'}")
    roundtrip = tok.decode(tok.encode("Hello, world! <|endoftext|>"))
    return not bad and same >= len(docs) // 2 and tok.eos_token_id == 50256 and \
        roundtrip == "Hello, world! <|endoftext|>"


def mode_export(a, device):
    tiny = ["configs/tiny.ini", "max_steps=20", "warmup_steps=2", "eval_every=20", "eval_batches=2",
            "log_every=10", f"device={a.device}", f"out_dir={a.work}", "run_name=src"]
    run([a.gpt2_ddp] + tiny, os.path.join(a.work, "train.log"))
    hf_dir = os.path.join(a.work, "hf")
    run([a.gpt2_convert, os.path.join(a.work, "src", "model.h5"), hf_dir], os.path.join(a.work, "convert.log"))
    model = GPT2LMHeadModel.from_pretrained(hf_dir).to(device).eval()
    print(f"transformers {transformers.__version__}: GPT2LMHeadModel.from_pretrained({hf_dir}): "
          f"{sum(p.numel() for p in model.parameters())} parameters, {next(model.parameters()).dtype}")
    ours = logged_val(os.path.join(a.work, "src"), 20)
    theirs = transformers_loss(model, val_batches(8, 64, 2), device)
    ok = compare("val loss at step 20", ours, theirs, 1e-4 if a.device == "cpu" else 1e-2)
    prompt = torch.tensor([[464, 3290]], device=device)  # "The meaning"
    out = model.generate(prompt, max_new_tokens=8, do_sample=False, pad_token_id=50256)
    print(f"generate: {out[0].tolist()}")
    ok &= out.shape[1] == 10
    ok &= check_tokenizer(hf_dir, a.gpt2_tokenize, a.work)
    return ok


def mode_import(a, device):
    torch.manual_seed(1234)
    if a.device == "cpu":
        config = GPT2Config(n_layer=2, n_embd=64, n_head=1, n_positions=128, vocab_size=50257)
        ini, B, T = ["configs/tiny.ini"], 8, 64
        extra = ["max_steps=5", "warmup_steps=0", "eval_every=5"]
    else:  # GPT-2 124M, as the Hub's openai-community/gpt2 (random weights)
        config = GPT2Config()
        ini, B, T = ["configs/124M.ini", "micro_batch=8", "total_batch=16384"], 8, 1024
        extra = ["max_steps=20", "warmup_steps=2", "lr=3e-4", "eval_every=20", "checkpoint_every=0"]
    model = GPT2LMHeadModel(config).eval()
    tf_dir = os.path.join(a.work, "from_transformers")
    model.save_pretrained(tf_dir)
    print(f"transformers {transformers.__version__} save_pretrained: {sorted(os.listdir(tf_dir))}")
    theirs = transformers_loss(model.to(device), val_batches(B, T, 2), device)
    run([a.gpt2_ddp] + ini + extra + [f"init_from={tf_dir}", "eval_batches=2", "log_every=1",
                                      f"device={a.device}", f"out_dir={a.work}", "run_name=init"],
        os.path.join(a.work, "init.log"))
    run_dir = os.path.join(a.work, "init")
    ok = compare("step-0 val loss", logged_val(run_dir, 0), theirs, 1e-5 if a.device == "cpu" else 1e-2)
    losses = logged_losses(run_dir)
    print(f"training from it: loss {losses[0]:.4f} at step 1 -> {losses[-1]:.4f} at step {len(losses)}")
    return ok and losses[-1] < losses[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["export", "import"])
    p.add_argument("gpt2_ddp")
    p.add_argument("gpt2_convert")
    p.add_argument("gpt2_tokenize")
    p.add_argument("work")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = p.parse_args()
    if a.device == "cuda":
        if not torch.cuda.is_available():
            skip("no GPU visible to torch")
        version = subprocess.run([a.gpt2_ddp, "--version"], capture_output=True, text=True).stdout
        if "cuda (" not in version:
            skip("gpt2_ddp was built without the CUDA backend")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    torch.set_num_threads(max(1, os.cpu_count() // 2))
    device = torch.device(a.device)
    ok = mode_export(a, device) if a.mode == "export" else mode_import(a, device)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
