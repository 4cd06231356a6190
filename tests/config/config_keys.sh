#!/bin/sh
# Config test: every field of the config struct is a key, listed by --help
# and printed by --print-config; derived fields are printed as comments and
# refuse to be set. The field list comes from config.h, not from the binary,
# so a field missing from the key table fails here (a field marked
# "/* not a key */" is none: the path keys as written).
#   config_keys.sh GPT2_DDP src/config/config.h CONFIG.ini
set -u
bin=$1 header=$2 ini=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# "name" or "name derived" for each field of "typedef struct { ... } config;".
awk '
/typedef struct[ \t]*\{/ { n = 0; inside = 1; next }
inside && /^\}[ \t]*config[ \t]*;/ { for (i = 1; i <= n; i++) print names[i]; exit }
inside {
    line = $0
    derived = (line ~ /\/\*[ \t]*derived:/)
    if (line ~ /\/\*[ \t]*not a key[ \t]*\*\//) next
    sub(/\/\*.*$/, "", line)
    if (line !~ /;/) next
    sub(/;.*/, "", line)
    sub(/^[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]+/, "", line)
    m = split(line, parts, ",")
    for (j = 1; j <= m; j++) {
        p = parts[j]
        gsub(/[ \t*]/, "", p)
        sub(/\[.*/, "", p)
        if (p != "") names[++n] = p (derived ? " derived" : "")
    }
}' "$header" >"$dir/fields"

"$bin" --help >"$dir/help" || { echo "FAIL: --help exited $?"; exit 1; }
"$bin" --print-config "$ini" >"$dir/config" || { echo "FAIL: --print-config exited $?"; exit 1; }

failed=0
keys=0
while read -r name kind; do
    if [ "$kind" = derived ]; then
        grep -q "^# $name = " "$dir/config" || { echo "FAIL: derived $name not printed as a comment"; failed=1; }
        "$bin" --print-config "$ini" "$name=1" >/dev/null 2>"$dir/err"
        rc=$?
        { [ $rc -eq 2 ] && grep -q "$name" "$dir/err"; } ||
            { echo "FAIL: setting derived $name gave exit code $rc"; failed=1; }
        continue
    fi
    keys=$((keys + 1))
    grep -q "^  $name = " "$dir/help" || { echo "FAIL: --help does not list $name"; failed=1; }
    grep -q "^$name = " "$dir/config" || { echo "FAIL: --print-config does not print $name"; failed=1; }
done <"$dir/fields"

printed=$(grep -Ec '^[a-z_0-9]+ = ' "$dir/config")
[ "$printed" -eq "$keys" ] || { echo "FAIL: --print-config prints $printed keys, config.h has $keys settable fields"; failed=1; }
[ "$keys" -ge 30 ] || { echo "FAIL: found only $keys fields in $header (parser broken?)"; failed=1; }
[ "$failed" -eq 0 ] && echo "ok: $keys keys listed by --help and --print-config"
exit "$failed"
