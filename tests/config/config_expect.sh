#!/bin/sh
# Config tests: runs one command and checks its exit code and output.
#   config_expect.sh RC [--stderr ERE] [--stdout ERE] [--once ERE] [--quiet] -- CMD [ARG...]
# --stderr / --stdout: some line of that stream matches the extended regex
# (repeatable); --once: exactly one stderr line matches (under mpirun: rank 0
# alone printed the error); --quiet: stdout is empty (nothing printed on error).
set -u
want_rc=$1
shift
checks_file=$(mktemp)
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$checks_file" "$out" "$err"' EXIT
quiet=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
    --stderr | --stdout | --once) printf '%s\t%s\n' "$1" "$2" >>"$checks_file"; shift 2 ;;
    --quiet) quiet=1; shift ;;
    *) echo "config_expect.sh: unknown option $1" >&2; exit 99 ;;
    esac
done
[ $# -gt 1 ] || { echo "config_expect.sh: missing -- CMD" >&2; exit 99; }
shift

"$@" >"$out" 2>"$err"
rc=$?
failed=0
complain() { echo "FAIL: $*"; failed=1; }

[ "$rc" -eq "$want_rc" ] || complain "exit code $rc, expected $want_rc"
[ "$quiet" -eq 0 ] || [ ! -s "$out" ] || complain "stdout should be empty"
while IFS="$(printf '\t')" read -r kind regex; do
    case $kind in
    --stderr) grep -Eq -- "$regex" "$err" || complain "stderr does not match: $regex" ;;
    --stdout) grep -Eq -- "$regex" "$out" || complain "stdout does not match: $regex" ;;
    --once)
        n=$(grep -Ec -- "$regex" "$err")
        [ "$n" -eq 1 ] || complain "stderr has $n lines matching '$regex', expected exactly 1" ;;
    esac
done <"$checks_file"

if [ "$failed" -ne 0 ]; then
    echo "command: $*"
    echo "--- stdout"; cat "$out"
    echo "--- stderr"; cat "$err"
    exit 1
fi
echo "ok: exit code $rc"
