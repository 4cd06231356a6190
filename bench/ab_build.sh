# shellcheck shell=bash
# Sourced by the A/B scripts (ab_gpu.sh, ab_ops_gpu.sh): the other source
# tree built as this one is, unless its build already holds the target.
# ab_build_other OTHER_SRC TARGET: builds OTHER_SRC/build's TARGET (a path
# under the build folder, e.g. gpt2_ddp or tests/bench_ops_cuda) with
# CMAKE_ARGS; returns non-zero, with the configure log's end, on failure.
ab_build_other() {
  local other=$1 target=$2
  [ -x "$other/build/$target" ] && return 0
  # shellcheck disable=SC2086 # CMAKE_ARGS: a list of flags
  cmake -S "$other" -B "$other/build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >"$other.configure.log" 2>&1 \
    || { tail -20 "$other.configure.log"; return 1; }
  ninja -C "$other/build" "$(basename "$target")" >/dev/null
}
