#!/bin/sh
# Config test: config_format output parses back into the same config.
#   config_roundtrip.sh GPT2_DDP CONFIG.ini [key=value ...]
# Prints the resolved config, feeds that text back as an .ini and requires
# byte-identical output (strings with quotes/comments, exact doubles, uint64).
set -eu
bin=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" --print-config "$@" >"$dir/first.ini"
"$bin" --print-config "$dir/first.ini" >"$dir/second.ini"
if ! cmp -s "$dir/first.ini" "$dir/second.ini"; then
    echo "FAIL: printed config does not read back identically"
    diff "$dir/first.ini" "$dir/second.ini" || true
    exit 1
fi
echo "ok: $(grep -c ' = ' "$dir/first.ini") lines read back identically"
