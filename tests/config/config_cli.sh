#!/bin/sh
# The trainer's command line through the real binary: nanoGPT's spellings
# resolve to the same config as key=value, flags anywhere, no config file
# (the 124M defaults), and refusals with exit 2 on 1 and 2 ranks.
#   config_cli.sh good|refused GPT2_DDP CONFIG.ini MPIRUN...
# (refused alone runs under the sanitizers: an exit-0 run there reports
# Open MPI's own leaks at MPI_Finalize.)
set -u
mode=$1 bin=$2 tiny=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# same NAME -- ARGS_A -- ARGS_B: both --print-config outputs exit 0 and are equal.
same() {
    name=$1
    shift 2
    a=
    while [ "$1" != -- ]; do a="$a $1"; shift; done
    shift
    echo "check: $name: --print-config$a == --print-config $*"
    # shellcheck disable=SC2086
    "$bin" --print-config $a >"$work/a" 2>&1 || fail "$name: exit $? for$a: $(cat "$work/a")"
    "$bin" --print-config "$@" >"$work/b" 2>&1 || fail "$name: exit $? for $*: $(cat "$work/b")"
    cmp -s "$work/a" "$work/b" || fail "$name: configs differ: $(diff "$work/a" "$work/b")"
}

# expect RC ERE CMD...: exit code RC and some output line matches ERE.
expect() {
    rc=$1 re=$2
    shift 2
    echo "check: $* -> exit $rc, '$re'"
    "$@" >"$work/out" 2>&1
    got=$?
    [ "$got" -eq "$rc" ] || fail "$*: exit $got, expected $rc: $(head -5 "$work/out")"
    grep -Eq -- "$re" "$work/out" || fail "$*: no line matches '$re': $(head -5 "$work/out")"
}

if [ "$mode" = good ]; then
same eq_form -- "$tiny" max_steps=30 -- "$tiny" --max_steps=30
same space_form -- "$tiny" max_steps=30 -- "$tiny" --max_steps 30
same dashes -- "$tiny" max_steps=30 -- "$tiny" --max-steps 30
same bool_flag -- "$tiny" save_init=true dry_run=false -- "$tiny" --save_init --dry_run false
same print_config_last -- "$tiny" lr=0.01 -- "$tiny" --lr=0.01 --print-config
same no_file -- n_layer=12 n_embd=768 n_head=12 -- --max_steps=19073

expect 0 '^usage: gpt2_ddp' "$bin" "$tiny" lr=1 --help
expect 0 '^  max_steps = ' "$bin" "$tiny" --help
expect 0 '^gpt2_ddp ' "$bin" "$tiny" --version
expect 0 '^lr = 0\.02$' "$bin" "$tiny" --lr=0.01 lr=0.02 --print-config
expect 0 '^lr = 0\.03$' "$bin" "$tiny" lr=0.02 --lr 0.03 --print-config
# No config file: the key table's defaults are GPT-2 124M.
expect 0 '^n_layer = 12$' "$bin" --max_steps=10 --warmup_steps=1 --print-config
expect 0 '^n_embd = 768$' "$bin" --print-config max_steps=10 warmup_steps=1
expect 0 '^run_name = run$' "$bin" --print-config
else
expect 2 "command line: --lr_rate: unknown key \(did you mean '--lr'\?\)" "$bin" "$tiny" --lr_rate=1
expect 2 "did you mean '--max_steps'\?" "$bin" --max_iters 5
expect 2 '--max_steps needs a value \(write --max_steps=VALUE' "$bin" "$tiny" --max_steps
expect 2 "unknown option '-b'" "$bin" "$tiny" -b 32
expect 2 'nothing to run: give a config file' "$bin"
expect 2 "'.*tiny\.ini' after settings: a config file comes first" "$bin" lr=1 "$tiny"
expect 2 'lr = abc: not a number' "$bin" --lr abc
# Two ranks: every rank exits 2, rank 0 alone prints.
expect 2 '--max_steps needs a value' "$@" "$bin" "$tiny" --max_steps
n=$(grep -c 'error' "$work/out")
echo "check: 2 ranks print the error once"
[ "$n" -eq 1 ] || fail "2 ranks: $n error lines, expected 1"
fi

[ "$failed" -eq 0 ] && echo "config_cli: all checks passed"
exit "$failed"
