#!/usr/bin/env bash
# Runs test_loss_curve_cuda.py (the trainer's loss curve against PyTorch) with
# the first python3 that has torch (and, for --device cuda, sees a GPU): the
# GPU machines' python3 is a virtual environment, Debian's is /usr/bin/python3.
# Exits 77 (skipped) when there is none, or when the corpus shards are missing.
# usage: test_loss_curve_cuda.sh GPT2_DDP WORK_DIR [--device cuda|cuda-fp8|cuda-fp8-bf16-head|cuda-fp8-accum|cuda-muon|cpu|cpu-muon]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
device=cuda
[ "${3:-}" = "--device" ] && device=${4:-cuda}
ls "$here"/../../data/nlp-corpus/nlp_train_*.bin >/dev/null 2>&1 ||
    { echo "SKIP: no data/nlp-corpus shards (tools/prepare_data.sh)"; exit 77; }
probe='import sys, torch, h5py, numpy; sys.exit(0 if sys.argv[1].startswith("cpu") or torch.cuda.is_available() else 1)'
for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -c "$probe" "$device" 2>/dev/null; then
        PYTHONUNBUFFERED=1 exec "$py" "$here/test_loss_curve_cuda.py" "$@"
    fi
done
echo "SKIP: no python3 with torch, h5py and numpy$([ "${device#cpu}" = "$device" ] && echo ' and a GPU')"
exit 77
