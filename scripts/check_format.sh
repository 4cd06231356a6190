#!/usr/bin/env bash
# Checks that every tracked C and CUDA file (.c .h .cu .cuh) is formatted as
# .clang-format says, with clang-format 14 (what CI has: other versions may
# format some lines differently). Lists the files that are not and exits 1;
# --diff also shows what would change. To format: clang-format -i FILE...
#   scripts/check_format.sh [--diff]        (env: CLANG_FORMAT, default clang-format)
set -uo pipefail
cd "$(dirname "$0")/.."
show_diff=0
[ "${1:-}" = --diff ] && show_diff=1
cf=${CLANG_FORMAT:-clang-format}
version=$("$cf" --version 2>/dev/null) || {
  echo "check_format: $cf not found (apt-get install clang-format)" >&2
  exit 2
}
[[ $version == *" version 14."* ]] || echo "check_format: $version; CI has clang-format 14" >&2

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
bad=()
while IFS= read -r -d '' f; do
  "$cf" --style=file "$f" >"$tmp" || { echo "check_format: $cf failed on $f" >&2; exit 2; }
  if ! cmp -s "$tmp" "$f"; then
    bad+=("$f")
    ((show_diff)) && diff -u --label "$f" --label "$f (formatted)" "$f" "$tmp"
  fi
done < <(git ls-files -z -- '*.c' '*.h' '*.cu' '*.cuh')

if ((${#bad[@]})); then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} file(s) differ from .clang-format (clang-format -i FILE... formats them)"
  exit 1
fi
echo "check_format: every .c/.h/.cu/.cuh file is formatted"
