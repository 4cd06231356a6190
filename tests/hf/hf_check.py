#!/usr/bin/python3
"""Checks for the Hugging Face tests (json, numpy, h5py; torch for `torch`).
The safetensors reader and writer here are written from the format's
specification (github.com/huggingface/safetensors, "Format"), independently
of src/io/safetensors.c:

  8 bytes   N, unsigned little-endian 64-bit: the header's length
  N bytes   JSON: {"name": {"dtype", "shape", "data_offsets": [begin, end]},
            "__metadata__": {str: str}}; begins with '{', may end in spaces
  rest      the byte buffer: tensors little-endian, row-major, covering it
            exactly (no holes, no overlaps)

  hf_check.py export DIR H5 ENCODER VOCAB
      DIR (gpt2_convert's export of the weights file H5) read by the reader
      here: every rule above, GPT2LMHeadModel's tensor names and Conv1D
      shapes, the values of H5 (fp32: the same bits; bf16: each rounded to
      nearest even), config.json, and vocab.json / merges.txt equal to
      ENCODER / VOCAB byte for byte
  hf_check.py torch DIR RUN STEP VAL_GLOB B T BATCHES
      a PyTorch GPT-2 (tests/lib/gpt2_torch.py) built from DIR's
      model.safetensors gives the val loss the one-rank run logged at STEP
  hf_check.py hub DIR OUT
      rewrites the export DIR the way the Hub ships GPT-2
      (openai-community/gpt2: GPT2Model names without "transformer.", the
      causal-mask buffers h.N.attn.bias and h.N.attn.masked_bias, a tied
      lm_head.weight; tensors in the reference writer's order, unpadded header)
  hf_check.py break DIR OUT CASE
      a copy of DIR broken one way (CASE, see BREAKS), for the bad-input tests
"""
import glob
import json
import os
import shutil
import struct
import sys

import numpy as np

# Element types as stored (bf16 as its raw 16 bits), little-endian.
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4",
          "U8": "u1", "BOOL": "?"}
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
BLOCK = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
         "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
         "mlp.c_proj.weight", "mlp.c_proj.bias"]


def read_safetensors(path):
    """(header dict, {name: raw bytes}), checking every rule of the format."""
    data = open(path, "rb").read()
    assert len(data) >= 8, f"{path}: shorter than 8 bytes"
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), f"{path}: header length {n} past the end"
    text = data[8:8 + n]
    assert text[:1] == b"{" and text.rstrip(b" ").endswith(b"}"), "header: '{' ... '}' then spaces"
    header = json.loads(text.decode("utf-8"))
    meta = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in meta.values()), "metadata values must be strings"
    buffer = data[8 + n:]
    spans, raw = [], {}
    for name, e in header.items():
        assert set(e) == {"dtype", "shape", "data_offsets"}, f"{name}: fields {sorted(e)}"
        begin, end = e["data_offsets"]
        size = np.dtype(DTYPES[e["dtype"]]).itemsize
        assert end - begin == size * int(np.prod(e["shape"], dtype=np.int64)), f"{name}: size"
        spans.append((begin, end, name))
        raw[name] = buffer[begin:end]
    at = 0
    for begin, end, name in sorted(spans):
        assert begin == at, f"{name}: begins at {begin}, previous ends at {at} (hole or overlap)"
        at = end
    assert at == len(buffer), f"data covers {at} of {len(buffer)} bytes"
    header["__metadata__"] = meta
    return header, raw


def tensor(header, raw, name):
    """A tensor as float32 (bf16 widened) in its stored shape."""
    e = header[name]
    if e["dtype"] == "BF16":
        bits = np.frombuffer(raw[name], dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(e["shape"])
    return np.frombuffer(raw[name], dtype=DTYPES[e["dtype"]]).reshape(e["shape"]).astype(np.float32)


def write_safetensors(path, tensors, metadata=None, pad=True, order=None):
    """tensors: {name: (dtype string, numpy array)}; the reference's layout."""
    names = order or list(tensors)
    header, offset, blobs = {}, 0, []
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in names:
        dtype, arr = tensors[name]
        blob = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def hf_names(n_layer):
    return (["transformer.wte.weight", "transformer.wpe.weight"]
            + [f"transformer.h.{l}.{b}" for l in range(n_layer) for b in BLOCK]
            + ["transformer.ln_f.weight", "transformer.ln_f.bias"])


def to_bf16(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


def cmd_export(hf_dir, h5, encoder, vocab):
    import h5py
    header, raw = read_safetensors(os.path.join(hf_dir, "model.safetensors"))
    cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    assert header["__metadata__"].get("format") == "pt", "transformers needs format pt"
    with h5py.File(h5, "r") as f:
        L, V = int(f.attrs["n_layer"]), int(f.attrs["vocab_size"])
        names = hf_names(L)
        assert list(k for k in header if k != "__metadata__") == names, "names/order differ from GPT2LMHeadModel's"
        dtypes = {header[n]["dtype"] for n in names}
        assert len(dtypes) == 1 and dtypes <= {"F32", "BF16"}, dtypes
        bf16 = dtypes == {"BF16"}
        for n in names:
            ours = f[n[len("transformer."):]][()]
            if n.endswith(CONV1D):
                ours = ours.T  # nn.Linear (out, in) -> Conv1D (in, out)
            if n == "transformer.wte.weight":
                ours = ours[:V]  # no padded rows
            want = to_bf16(ours) if bf16 else ours
            got = tensor(header, raw, n)
            assert got.shape == want.shape, f"{n}: shape {got.shape}, want {want.shape}"
            assert got.tobytes() == want.astype(np.float32).tobytes(), f"{n}: values differ"
        expect = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": L,
                  "n_embd": int(f.attrs["n_embd"]), "n_head": int(f.attrs["n_head"]),
                  "n_positions": int(f.attrs["block_size"]), "vocab_size": V,
                  "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
                  "tie_word_embeddings": True, "torch_dtype": "bfloat16" if bf16 else "float32"}
    for k, v in expect.items():
        assert cfg.get(k) == v, f"config.json {k} = {cfg.get(k)!r}, want {v!r}"
    for ours, theirs in (("vocab.json", encoder), ("merges.txt", vocab)):
        assert open(os.path.join(hf_dir, ours), "rb").read() == open(theirs, "rb").read(), ours
    tok = json.load(open(os.path.join(hf_dir, "tokenizer_config.json")))
    assert tok["model_max_length"] == cfg["n_positions"] and tok["eos_token"] == "<|endoftext|>"
    print(f"{hf_dir}: {len(names)} tensors in GPT2LMHeadModel's names and order, Conv1D (in, out), "
          f"wte {V} rows, {'bf16 roundings of' if bf16 else 'the bits of'} {os.path.basename(h5)}'s "
          f"weights; header {struct.unpack('<Q', open(os.path.join(hf_dir, 'model.safetensors'), 'rb').read(8))[0]} "
          f"bytes, offsets contiguous; config.json and tokenizer files as expected")
    return 0


def trainer_params(hf_dir):
    """The export's tensors under the trainer's names and layout (float64)."""
    import torch
    header, raw = read_safetensors(os.path.join(hf_dir, "model.safetensors"))
    P = {}
    for n in header:
        if n == "__metadata__":
            continue
        x = tensor(header, raw, n)
        name = n[len("transformer."):] if n.startswith("transformer.") else n
        P[name] = torch.tensor(x.T.copy() if name.endswith(CONV1D) else x, dtype=torch.float64)
    return P


def cmd_torch(hf_dir, run, step, pattern, B, T, batches):
    import torch
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "lib"))
    import gpt2_torch
    from ckpt_check import val_batches
    cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    P = trainer_params(hf_dir)
    total = 0.0
    for x in val_batches(pattern, int(B), int(T), int(batches)):
        x = torch.tensor(x)
        total += gpt2_torch.forward(P, x[:, :-1], x[:, 1:], cfg["n_layer"], cfg["n_head"],
                                    vocab=cfg["vocab_size"]).item()
    ours = total / int(batches)
    logged = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
    trainer = [r["val_loss"] for r in logged if r["type"] == "eval" and r["step"] == int(step)][-1]
    rel = abs(ours - trainer) / trainer
    print(f"val loss at step {step}: trainer {trainer:.9f}, PyTorch (float64) from the exported "
          f"model.safetensors {ours:.9f}: relative difference {rel:.2e} (tolerance 1e-5)")
    return 0 if rel <= 1e-5 else 1


def load_dir(hf_dir):
    """{name: (dtype string, array of the stored elements)}, metadata."""
    header, raw = read_safetensors(os.path.join(hf_dir, "model.safetensors"))
    meta = header.pop("__metadata__")
    return {n: (e["dtype"], np.frombuffer(raw[n], dtype=DTYPES[e["dtype"]]).reshape(e["shape"]))
            for n, e in header.items()}, meta


def copy_dir(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)


def cmd_hub(hf_dir, out):
    copy_dir(hf_dir, out)
    tensors, _ = load_dir(hf_dir)
    cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    T = cfg["n_positions"]
    hub = {n[len("transformer."):]: v for n, v in tensors.items()}
    for l in range(cfg["n_layer"]):
        hub[f"h.{l}.attn.bias"] = ("F32", np.tril(np.ones((T, T), np.float32)).reshape(1, 1, T, T))
        hub[f"h.{l}.attn.masked_bias"] = ("F32", np.array(-1e4, np.float32))
    hub["lm_head.weight"] = hub["wte.weight"]
    # The reference writer's order: by dtype size, then name.
    write_safetensors(os.path.join(out, "model.safetensors"), hub, {"format": "pt"}, pad=False,
                      order=sorted(hub))
    print(f"{out}: the Hub's GPT-2 layout ({len(hub)} tensors, no prefix, mask buffers, tied lm_head)")
    return 0


def edit_config(out, **changes):
    path = os.path.join(out, "config.json")
    cfg = json.load(open(path))
    for k, v in changes.items():
        if v is ...:
            cfg.pop(k)
        else:
            cfg[k] = v
    json.dump(cfg, open(path, "w"))


def edit_tensors(out, fn):
    tensors, meta = load_dir(out)
    fn(tensors)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, meta)


def edit_bytes(out, fn):
    path = os.path.join(out, "model.safetensors")
    data = bytearray(open(path, "rb").read())
    open(path, "wb").write(fn(data))


def flip_header(data):
    i = data.index(b'"dtype"')
    data[i] = ord("#")
    return data


def c_attn_transposed(t):
    d, a = t["transformer.h.0.attn.c_attn.weight"]
    t["transformer.h.0.attn.c_attn.weight"] = (d, np.ascontiguousarray(a.T))


def as_int(t):
    d, a = t["transformer.h.0.ln_1.bias"]
    t["transformer.h.0.ln_1.bias"] = ("I32", a.view(np.int32))


def untied_head(t):
    d, a = t["transformer.wte.weight"]
    t["lm_head.weight"] = (d, (a * np.float32(2)).astype(a.dtype))


def sharded_missing(out):
    os.remove(os.path.join(out, "model.safetensors"))
    json.dump({"metadata": {}, "weight_map": {"transformer.wte.weight": "model-00001-of-00002.safetensors"}},
              open(os.path.join(out, "model.safetensors.index.json"), "w"))


def sharded_empty(out):
    os.remove(os.path.join(out, "model.safetensors"))
    json.dump({"metadata": {}, "weight_map": {}}, open(os.path.join(out, "model.safetensors.index.json"), "w"))


BREAKS = {
    "no_config": lambda o: os.remove(os.path.join(o, "config.json")),
    "config_not_json": lambda o: open(os.path.join(o, "config.json"), "w").write('{"model_type": "gpt2",'),
    "model_type": lambda o: edit_config(o, model_type="llama"),
    "no_model_type": lambda o: edit_config(o, model_type=...),
    "n_embd_string": lambda o: edit_config(o, n_embd="64"),
    "activation": lambda o: edit_config(o, activation_function="relu"),
    "epsilon": lambda o: edit_config(o, layer_norm_epsilon=1e-6),
    "untied_config": lambda o: edit_config(o, tie_word_embeddings=False),
    "config_more_layers": lambda o: edit_config(o, n_layer=3),
    "config_wider": lambda o: edit_config(o, n_embd=128),
    "config_vocab": lambda o: edit_config(o, vocab_size=50000),
    "no_weights": lambda o: os.remove(os.path.join(o, "model.safetensors")),
    "missing_tensor": lambda o: edit_tensors(o, lambda t: t.pop("transformer.h.1.mlp.c_fc.bias")),
    "wrong_shape": lambda o: edit_tensors(o, c_attn_transposed),
    "int_dtype": lambda o: edit_tensors(o, as_int),
    "unknown_tensor": lambda o: edit_tensors(o, lambda t: t.__setitem__("transformer.h.0.attn.q_proj.weight", t["transformer.h.0.attn.c_proj.weight"])),
    "stored_twice": lambda o: edit_tensors(o, lambda t: t.__setitem__("wpe.weight", t["transformer.wpe.weight"])),
    "untied_lm_head": lambda o: edit_tensors(o, untied_head),
    "truncated": lambda o: edit_bytes(o, lambda d: d[:-1000]),
    "truncated_header": lambda o: edit_bytes(o, lambda d: d[:100]),
    "corrupt_header": lambda o: edit_bytes(o, flip_header),
    "header_length": lambda o: edit_bytes(o, lambda d: struct.pack("<Q", 1 << 62) + d[8:]),
    "shard_missing": sharded_missing,
    "shard_none": sharded_empty,
}


def cmd_break(hf_dir, out, case):
    copy_dir(hf_dir, out)
    BREAKS[case](out)
    return 0


if __name__ == "__main__":
    cmds = {"export": cmd_export, "torch": cmd_torch, "hub": cmd_hub, "break": cmd_break}
    sys.exit(cmds[sys.argv[1]](*sys.argv[2:]))
