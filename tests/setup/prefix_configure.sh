#!/usr/bin/env bash
# The build configured from packages outside /usr, as a user without root
# does (docs/building.md#without-root): json-c, PCRE2 and HDF5 are copied
# from this machine's Debian packages into a prefix (no network), their
# .pc files rewritten to it; CMake is pointed there with PKG_CONFIG_PATH and
# HDF5_ROOT only, and must take headers and libraries from the prefix
# (CMakeCache.txt, compile_commands.json, ldd of gpt2_tokenize and
# gpt2_convert, both then run with LD_LIBRARY_PATH). CMAKE_PREFIX_PATH alone
# must do the same for json-c and PCRE2. The check itself must fail on a
# build pointed at an empty prefix, which finds /usr's copies.
# Skipped (77) without dpkg or the packages (not Debian/Ubuntu).
# usage: prefix_configure.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1 work=$2
rm -rf "$work"; mkdir -p "$work"
pfx=$work/prefix
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
packages=(libjson-c-dev libjson-c5 libpcre2-dev libpcre2-8-0 libhdf5-dev libhdf5-103-1 libhdf5-hl-100)
command -v dpkg-query >/dev/null || { echo "SKIP: no dpkg-query (not Debian/Ubuntu)"; exit 77; }
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "SKIP: package $p is not installed"; exit 77; }
done
fail() { echo "FAIL: $*"; exit 1; }

# The prefix: each package's files at the same paths under $pfx (as
# `dpkg -x` of the .deb would give), absolute links pointed into it.
for p in "${packages[@]}"; do
  while read -r f; do
    [ -f "$f" ] || [ -L "$f" ] || continue
    case $f in /usr/share/*) continue ;; esac
    mkdir -p "$pfx$(dirname "$f")"
    cp -a "$f" "$pfx$f"
  done < <(dpkg -L "$p")
done
while read -r l; do
  t=$(readlink "$l")
  ln -sfn "$pfx$t" "$l"
done < <(find "$pfx" -type l -lname '/*')
pcdir=$pfx/usr/lib/$arch/pkgconfig
for pc in "$pcdir"/*.pc; do
  sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\1=$pfx/usr#; s#-I/usr/#-I$pfx/usr/#; s#-L/usr/#-L$pfx/usr/#" "$pc"
done
hdf5_root=$pfx/usr/lib/$arch/hdf5/serial
[ -e "$hdf5_root/include/hdf5.h" ] || fail "the copied HDF5 has no $hdf5_root/include/hdf5.h"
echo "prefix: $pfx ($(find "$pfx" -type f | wc -l) files)"

# configure DIR VAR=VALUE...: a CPU-only configure with only these pointers
# (none inherited from the test's environment).
configure() {
  local dir=$1; shift
  env -u PKG_CONFIG_PATH -u CMAKE_PREFIX_PATH -u HDF5_ROOT -u HDF5_DIR "$@" \
    cmake -S "$src" -B "$dir" -G Ninja -DGPT2_CUDA=OFF -DCMAKE_BUILD_TYPE=Release >"$dir.log" 2>&1 ||
    { cat "$dir.log"; fail "configure of $dir with $* failed"; }
}
# from_prefix DIR KEY...: each cache entry KEY (and each path in it) lies
# under the prefix; prints the ones that do not and returns 1.
from_prefix() {
  local dir=$1 key value v bad=0; shift
  for key in "$@"; do
    value=$(sed -n "s/^$key:[A-Z]*=//p" "$dir/CMakeCache.txt")
    [ -n "$value" ] || { echo "  $key: not in $dir/CMakeCache.txt"; bad=1; continue; }
    for v in ${value//;/ }; do
      case $v in "$pfx"/*) echo "  ok: $key = $v" ;; *) echo "  not from the prefix: $key = $v"; bad=1 ;; esac
    done
  done
  return $bad
}
pkg_keys=(PCRE2_INCLUDE_DIRS PCRE2_LIBRARY_DIRS JSONC_INCLUDE_DIRS JSONC_LIBRARY_DIRS)
hdf5_keys=(HDF5_C_INCLUDE_DIR HDF5_hdf5_LIBRARY_RELEASE)

echo "== PKG_CONFIG_PATH and HDF5_ROOT pointing into the prefix"
build=$work/build
configure "$build" PKG_CONFIG_PATH="$pcdir" HDF5_ROOT="$hdf5_root"
from_prefix "$build" "${pkg_keys[@]}" "${hdf5_keys[@]}" || fail "CMake took packages from outside $pfx"
# The compile lines: the tokenizer's sources see the prefix's headers.
for inc in "$pfx/usr/include/json-c" "$hdf5_root/include"; do
  grep -q -- "-isystem $inc \|-I$inc " "$build/compile_commands.json" ||
    fail "no compile command has $inc on its include path"
  echo "  ok: compile commands include $inc"
done
ninja -C "$build" -j1 gpt2_tokenize gpt2_convert >"$build.ninja.log" 2>&1 ||
  { tail -30 "$build.ninja.log"; fail "building gpt2_tokenize gpt2_convert failed"; }
export LD_LIBRARY_PATH="$pfx/usr/lib/$arch:$hdf5_root${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# lib PROGRAM NAME: the library NAME* the program loads must be the prefix's.
lib() {
  local path
  path=$(ldd "$build/$1" | awk -v n="$2" 'index($1, n) == 1 { print $3 }')
  case $path in "$pfx"/*) echo "  ok: $1 loads $path" ;; *) fail "$1 loads $2 from '$path', not from $pfx" ;; esac
}
lib gpt2_tokenize libjson-c.so
lib gpt2_tokenize libpcre2-8.so
lib gpt2_convert libhdf5_serial.so
for t in gpt2_tokenize gpt2_convert; do
  "$build/$t" --help >"$work/$t.help" 2>&1 || { cat "$work/$t.help"; fail "$t --help exited $?"; }
  grep -qi "usage" "$work/$t.help" || { cat "$work/$t.help"; fail "$t --help printed no usage"; }
  echo "  ok: $t --help"
done

echo "== CMAKE_PREFIX_PATH alone: json-c and PCRE2 from the prefix"
configure "$work/build-cpp" CMAKE_PREFIX_PATH="$pfx/usr"
from_prefix "$work/build-cpp" "${pkg_keys[@]}" || fail "CMAKE_PREFIX_PATH=$pfx/usr did not reach pkg-config"

echo "== the check fails on a build pointed at an empty prefix (it finds /usr)"
mkdir -p "$work/empty/lib/pkgconfig"
configure "$work/build-wrong" PKG_CONFIG_PATH="$work/empty/lib/pkgconfig"
if from_prefix "$work/build-wrong" "${pkg_keys[@]}" "${hdf5_keys[@]}"; then
  fail "the check passed a build that took its packages from /usr"
fi
echo "  ok: the check refused it"
echo "PASS"
