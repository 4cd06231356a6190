#!/usr/bin/python3
"""Rewrites a checkpoint directory in place (h5py), for the tests of
checkpoints written by other versions.

  rewrite_shard_map.py even CKPT_DIR
      the state as a checkpoint written before the shard map went along
      whole tensors (2026-12): every optimizer array re-sliced over the
      same ranks by the old even map (whole 128-element units spread as
      evenly as integers allow), the shard files' lo/hi and model.h5's
      shard_lo/shard_hi to match, and no `optimizer` attribute (files of
      that time had none: AdamW's). Prints both maps.
  rewrite_shard_map.py optimizer CKPT_DIR NAME
      model.h5 says its shards hold optimizer NAME's state.
The COMPLETE marker's file sizes are updated; the re-sliced datasets are
written without the CRC32C attributes (as files before 2026-11-24 were
checksummed by HDF5 instead: the reader accepts both).
"""
import glob
import os
import sys

import h5py
import numpy as np

ARRAYS = ("master", "m", "v")


def update_marker(ckpt):
    path = os.path.join(ckpt, "COMPLETE")
    out = []
    for line in open(path):
        words = line.split()
        if words and words[0] == "file":
            size = os.path.getsize(os.path.join(ckpt, words[1]))
            line = f"file {words[1]} {size}\n"
        out.append(line)
    open(path, "w").write("".join(out))


def even(ckpt):
    model = os.path.join(ckpt, "model.h5")
    with h5py.File(model, "r") as f:
        world = int(f.attrs["world_size"])
        n = int(f.attrs["n_elements"])
        old_lo = np.array(f.attrs["shard_lo"], dtype=np.int64)
        old_hi = np.array(f.attrs["shard_hi"], dtype=np.int64)
    full = {name: np.zeros(n, dtype=np.float32) for name in ARRAYS}
    attrs = []
    for r in range(world):
        with h5py.File(os.path.join(ckpt, f"shard_{r:05d}.h5"), "r") as f:
            assert int(f.attrs["lo"]) == old_lo[r] and int(f.attrs["hi"]) == old_hi[r]
            for name in ARRAYS:
                full[name][old_lo[r]:old_hi[r]] = f[name][:]
            attrs.append({k: f.attrs[k] for k in f.attrs})
    units = n // 128
    lo = np.array([units * r // world * 128 for r in range(world)], dtype=np.int64)
    hi = np.array([units * (r + 1) // world * 128 for r in range(world)], dtype=np.int64)
    print(f"shard map of {ckpt}: {list(zip(old_lo.tolist(), old_hi.tolist()))} -> even "
          f"{list(zip(lo.tolist(), hi.tolist()))}")
    assert (lo != old_lo).any(), "the even map is the checkpoint's own: the test would prove nothing"
    for r in range(world):
        path = os.path.join(ckpt, f"shard_{r:05d}.h5")
        os.remove(path)
        with h5py.File(path, "w") as f:
            for k, v in attrs[r].items():
                f.attrs[k] = v
            f.attrs["lo"] = np.int64(lo[r])
            f.attrs["hi"] = np.int64(hi[r])
            for name in ARRAYS:
                f.create_dataset(name, data=full[name][lo[r]:hi[r]])
    with h5py.File(model, "r+") as f:
        f.attrs["shard_lo"] = lo
        f.attrs["shard_hi"] = hi
        if "optimizer" in f.attrs:
            del f.attrs["optimizer"]
    update_marker(ckpt)


def optimizer(ckpt, name):
    with h5py.File(os.path.join(ckpt, "model.h5"), "r+") as f:
        f.attrs["optimizer"] = np.bytes_(name)
    update_marker(ckpt)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "even":
        even(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "optimizer":
        optimizer(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
