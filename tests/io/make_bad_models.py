#!/usr/bin/env python3
"""Bad model files for weights_bad_inputs.sh, one per rule of the shape
check (src/model/shape.h) and of the readers: copies of a good weights .h5
(a tiny run's model.h5) edited with h5py, and of a good llm.c .bin (its
gpt2_convert export) with the header rewritten with struct (layout:
src/io/llmc_io.h). Writes OUT_DIR/CASE.h5, OUT_DIR/CASE.bin and a few
others, and prints each name.

usage: make_bad_models.py GOOD_H5 GOOD_BIN OUT_DIR
"""
import os
import shutil
import struct
import sys

import h5py
import numpy as np

good_h5, good_bin, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)


def h5_case(name, edit):
    path = os.path.join(out, name + ".h5")
    shutil.copy(good_h5, path)
    with h5py.File(path, "r+") as f:
        edit(f)
    print(path)


def set_attrs(**sizes):
    def edit(f):
        for k, v in sizes.items():
            f.attrs.modify(k, np.int64(v))
    return edit


def replace_dataset(name, shape):
    def edit(f):
        del f[name]
        f.create_dataset(name, data=np.zeros(shape, np.float32))
    return edit


def delete(what):
    def edit(f):
        if what in f.attrs:
            del f.attrs[what]
        else:
            del f[what]
    return edit


def string_attr(f):
    del f.attrs["n_layer"]
    f.attrs["n_layer"] = "2"


def small_vocab(f):
    """A consistent model of 1000 tokens: fewer than the GPT-2 tokenizer's."""
    set_attrs(vocab_size=1000, padded_vocab_size=1024)(f)
    replace_dataset("wte.weight", (1024, f.attrs["n_embd"]))(f)


h5_case("n_head_zero", set_attrs(n_head=0))
h5_case("n_layer_zero", set_attrs(n_layer=0))
h5_case("n_embd_negative", set_attrs(n_embd=-64))
h5_case("vocab_over_padded", set_attrs(vocab_size=60000))
h5_case("padded_not_rounded", set_attrs(padded_vocab_size=50432))
h5_case("head_not_dividing", set_attrs(n_head=3))
h5_case("sizes_huge", set_attrs(n_embd=1 << 40))
h5_case("sizes_large", set_attrs(n_layer=1024, n_embd=65536))
h5_case("block_size_over_wpe", set_attrs(block_size=256))
h5_case("wrong_shape", replace_dataset("h.0.attn.c_attn.weight", (192, 63)))
h5_case("missing_attr", delete("n_head"))
h5_case("string_attr", string_attr)
h5_case("missing_dataset", delete("h.1.mlp.c_fc.bias"))
h5_case("n_layer_lowered", set_attrs(n_layer=1))  # layer 1 stored but not declared
h5_case("head_size_32", set_attrs(n_head=2))  # fine on the CPU, not for the CUDA attention
h5_case("small_vocab", small_vocab)

body = open(good_bin, "rb").read()
header = list(struct.unpack("<256i", body[:1024]))


def bin_case(name, fields=None, data=None):
    """fields: {header index: value}; 0 magic, 1 version, 2 max_seq_len,
    3 vocab_size, 4 n_layer, 5 n_head, 6 n_embd, 7 padded_vocab_size."""
    h = list(header)
    for i, v in (fields or {}).items():
        h[i] = v
    path = os.path.join(out, name + ".bin")
    with open(path, "wb") as f:
        f.write(data if data is not None else struct.pack("<256i", *h) + body[1024:])
    print(path)


bin_case("bin_n_head_zero", {5: 0})
bin_case("bin_n_layer_negative", {4: -2})
bin_case("bin_vocab_over_padded", {3: 60000})
bin_case("bin_head_not_dividing", {5: 3})
bin_case("bin_sizes_huge", {6: 2**31 - 1})
bin_case("bin_sizes_large", {4: 1024, 6: 65536})
bin_case("bin_truncated", data=body[:-1000])
bin_case("bin_short_header", data=body[:100])
bin_case("bin_version", {1: 4})

# Neither format: text (as /etc/passwd is) and an empty file.
with open(os.path.join(out, "text_file"), "w") as f:
    f.write("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
open(os.path.join(out, "empty_file"), "w").close()
print(os.path.join(out, "text_file"), os.path.join(out, "empty_file"))
