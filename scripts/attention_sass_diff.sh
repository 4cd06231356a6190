#!/usr/bin/env bash
# Shows that the attention kernels' and our wgmma GEMM's machine code is the
# same in the working tree as at a base revision: scripts/kernel_code_diff.sh
# over every src/kernels/cuda/attention*.cu and matmul_wgmma.cu (the sources
# that share wgmma.cuh), kernels paired by name; with
# DEFINES=-DGPT2_ATTN_TUNING=1 also the tuning variants
# (kernels/cuda/tuning/attention_*.cu).
#
#   scripts/attention_sass_diff.sh [BASE_REV]     (default: main)
#   BASE_SRC=DIR scripts/attention_sass_diff.sh   (the base's source tree, where
#                                                 there is no git: a GPU host)
#
# The other settings (ARCHS, MODE, JOBS, KEEP, NVCC, CUOBJDUMP) are
# kernel_code_diff.sh's. Until 2026-12-06 this script paired the kernels
# through a table of the names they had before the dispatcher split
# (cb1ac21); the kernels have changed since, so that base no longer
# compares (its git history has the table).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/src"
tus=(kernels/cuda/attention*.cu kernels/cuda/matmul_wgmma.cu)
[[ ${DEFINES:-} == *GPT2_ATTN_TUNING* ]] && tus+=(kernels/cuda/tuning/attention_*.cu)
cd "$root"
TUS="${tus[*]}" exec scripts/kernel_code_diff.sh "$@"
