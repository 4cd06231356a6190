#!/usr/bin/env bash
# The C code under AddressSanitizer (with LeakSanitizer) and
# UndefinedBehaviorSanitizer: builds the CPU backend with GPT2_SANITIZE=ON
# into BUILD_DIR (default build-asan) and runs the unit tests and every test
# that feeds bad input to a parser or tool (ctest -L 'unit|bad_input').
#
# Every sanitizer report fails the run, also one from a program that a test
# expected to fail (exit 1 or 2 on bad input) or whose output it kept to
# itself: reports go to files under BUILD_DIR/sanitizer-reports (log_path,
# named after the program and its pid), which are printed at the end; a
# program with a report also exits 86. Leaks are checked (exit of every
# program but the trainer: src/main.c says why), except those of Open MPI
# and the libraries under it (tests/lib/lsan.supp says why). mpirun hands the ASAN_/UBSAN_/LSAN_OPTIONS
# below to every rank: it starts local ranks with its own environment.
# Allocation stacks are taken the fast way (frame pointers): only Open MPI's
# leaks needed the slow, complete ones for their suppressions, and only the
# trainer initialises MPI, which runs without the leak check; the slow way
# doubled the tokenizer tests' time. GPT2_ASAN_OPTIONS adds options (e.g.
# "detect_leaks=1:fast_unwind_on_malloc=0" for the trainer's leaks).
#   scripts/run_sanitizers.sh [BUILD_DIR] [ctest option ...]
#   e.g. scripts/run_sanitizers.sh build-asan -R hf_bad_inputs
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}; shift || true
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPT2_CUDA=OFF -DGPT2_SANITIZE=ON \
  >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" || exit 1

reports=$(realpath "$build")/sanitizer-reports
rm -rf "$reports"; mkdir -p "$reports"
common="exitcode=86:log_exe_name=1:print_summary=1"
export ASAN_OPTIONS="$common:log_path=$reports/asan:halt_on_error=1${GPT2_ASAN_OPTIONS:+:$GPT2_ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$PWD/tests/lib/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="$common:log_path=$reports/ubsan:halt_on_error=1:print_stacktrace=1"

ctest --test-dir "$build" -L 'unit|bad_input' -j"$(nproc)" --output-on-failure "$@"
status=$?
shopt -s nullglob
found=("$reports"/*)
if ((${#found[@]})); then
  for f in "${found[@]}"; do echo "==== sanitizer report $f"; cat "$f"; done
  echo "run_sanitizers: ${#found[@]} sanitizer report(s) (above)"
  status=1
fi
exit $status
