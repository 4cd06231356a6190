#!/usr/bin/env bash
# tools/setup.sh's install step with faked system tools (id, sudo,
# dpkg-query, apt-get, cmake on PATH; nothing is installed or built): which
# packages it installs with and without --tests, as root and through
# password-less sudo; without root and sudo, or with a sudo that asks for a
# password, or off Debian, it names what is missing and the non-root path
# and exits 2 without installing; --no-install and GPT2_NO_INSTALL=1 go on to
# CMake, whose error it shows.
# usage: setup_install.sh WORK_DIR
set -euo pipefail
work=$1
cd "$(dirname "$0")/../.."
rm -rf "$work"; mkdir -p "$work/bin" "$work/sudo" "$work/sys" "$work/nodeb"
failures=0 cases=0

# Fakes: FAKE_UID is id -u; FAKE_SUDO is ok (password-less), password
# (sudo -n fails) or absent; FAKE_MISSING the packages dpkg-query calls not
# installed. apt-get and cmake log their arguments to $work/calls.
cat >"$work/bin/id" <<'EOF'
#!/usr/bin/env bash
[ "$1" = -u ] && { echo "${FAKE_UID:-1000}"; exit 0; }
exec /usr/bin/id "$@"
EOF
cat >"$work/sudo/sudo" <<'EOF'
#!/usr/bin/env bash
case ${FAKE_SUDO:-absent} in
  ok) [ "$1" = -n ] && shift; [ "$1" = true ] && exit 0; exec "$@" ;;
  password) echo "sudo: a password is required" >&2; exit 1 ;;
  *) echo "fake sudo: should not be called (FAKE_SUDO=${FAKE_SUDO:-absent})" >&2; exit 99 ;;
esac
EOF
cat >"$work/bin/dpkg-query" <<'EOF'
#!/usr/bin/env bash
p=${*: -1}
for m in ${FAKE_MISSING:-}; do [ "$m" = "$p" ] && { echo "dpkg-query: no packages found matching $p" >&2; exit 1; }; done
printf 'install ok installed'
EOF
cat >"$work/bin/apt-get" <<'EOF'
#!/usr/bin/env bash
echo "apt-get uid=$(id -u) $*" >>"$FAKE_CALLS"
EOF
cat >"$work/bin/cmake" <<'EOF'
#!/usr/bin/env bash
echo "cmake $*" >>"$FAKE_CALLS"
echo "CMake Error: Could NOT find HDF5 (fake cmake)"
exit 1
EOF
chmod +x "$work/bin/"* "$work/sudo/sudo"
# The PATH of every case: the fakes, then only the system commands setup.sh
# uses before CMake (no real sudo, apt-get or dpkg-query can be reached);
# $work/sudo in front where a case has sudo; $work/nodeb off Debian.
for c in bash dirname grep mkdir nproc ln cat sed env node npm; do
  ! command -v "$c" >/dev/null || ln -s "$(command -v "$c")" "$work/sys/$c"
done
for c in id cmake; do ln -s "$work/bin/$c" "$work/nodeb/$c"; done
for c in "$work"/sys/*; do ln -s "$c" "$work/nodeb/"; done

# run NAME EXPECTED_RC [VAR=VALUE...] -- [ARGS...]: setup.sh with the fakes
# and these variables; its output in $work/NAME.log, its calls in NAME.calls.
run() {
  local name=$1 want=$2 rc vars=(); shift 2
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  cases=$((cases + 1))
  : >"$work/$name.calls"
  set +e
  env -u GPT2_NO_INSTALL -u CMAKE_ARGS PATH="$work/bin:$work/sys" FAKE_CALLS="$work/$name.calls" \
    BUILD_DIR="$work/$name-build" "${vars[@]}" bash tools/setup.sh "$@" >"$work/$name.log" 2>&1
  rc=$?
  set -e
  if [ "$rc" = "$want" ]; then
    echo "ok: $name: exit $rc"
  else
    echo "FAIL: $name: exit $rc, want $want"; cat "$work/$name.log"; failures=$((failures + 1))
  fi
}
has() { # FILE TEXT: FILE has TEXT
  cases=$((cases + 1))
  if grep -qF -- "$2" "$1"; then echo "  ok: $(basename "$1") has '$2'"; else
    echo "  FAIL: $(basename "$1") lacks '$2'"; cat "$1"; failures=$((failures + 1)); fi
}
lacks() { # FILE TEXT: FILE does not have TEXT
  cases=$((cases + 1))
  if grep -qF -- "$2" "$1"; then echo "  FAIL: $(basename "$1") has '$2'"; cat "$1"; failures=$((failures + 1)); else
    echo "  ok: $(basename "$1") lacks '$2'"; fi
}

echo "== root: installs what is missing; the test tools only with --tests"
run root 1 FAKE_UID=0 FAKE_MISSING="libjson-c-dev python3-torch" --
has "$work/root.calls" "apt-get uid=0 install -y -qq --no-install-recommends libjson-c-dev"
lacks "$work/root.calls" "python3-torch"
has "$work/root.calls" "cmake -S . -B $work/root-build"
has "$work/root.log" "CMake Error: Could NOT find HDF5 (fake cmake)"
run root_tests 1 FAKE_UID=0 FAKE_MISSING="libjson-c-dev python3-torch slurm-wlm" -- --tests
has "$work/root_tests.calls" "--no-install-recommends libjson-c-dev python3-torch slurm-wlm"
run nothing_missing 1 FAKE_UID=0 -- --tests
lacks "$work/nothing_missing.calls" "apt-get"
has "$work/nothing_missing.calls" "cmake -S ."

echo "== password-less sudo: installs through it"
run sudo_ok 1 PATH="$work/sudo:$work/bin:$work/sys" FAKE_SUDO=ok FAKE_MISSING=libhdf5-dev --
has "$work/sudo_ok.calls" "apt-get uid=1000 update -qq"
has "$work/sudo_ok.calls" "install -y -qq --no-install-recommends libhdf5-dev"

echo "== no root, no sudo: names the packages and the way without root, installs nothing"
run no_sudo 2 FAKE_MISSING="libhdf5-dev libjson-c-dev" --
has "$work/no_sudo.log" "setup: error: these packages are missing: libhdf5-dev libjson-c-dev"
has "$work/no_sudo.log" "not root, and sudo is not installed"
has "$work/no_sudo.log" "docs/building.md#without-root"
has "$work/no_sudo.log" "tools/setup.sh --no-install"
lacks "$work/no_sudo.calls" "apt-get"
lacks "$work/no_sudo.calls" "cmake"

echo "== sudo that asks for a password: the same, and says so"
run sudo_password 2 PATH="$work/sudo:$work/bin:$work/sys" FAKE_SUDO=password FAKE_MISSING=cmake --
has "$work/sudo_password.log" "these packages are missing: cmake"
has "$work/sudo_password.log" "sudo asks for a password (run 'sudo -v' first if you may use it)"
lacks "$work/sudo_password.calls" "apt-get"

echo "== --no-install and GPT2_NO_INSTALL=1: on to CMake, which says what it cannot find"
run no_install 1 FAKE_MISSING="libhdf5-dev" -- --no-install
has "$work/no_install.log" "setup: --no-install: not installing libhdf5-dev"
has "$work/no_install.log" "CMake Error: Could NOT find HDF5 (fake cmake)"
has "$work/no_install.log" "docs/building.md#without-root says how to point it at packages outside /usr"
lacks "$work/no_install.calls" "apt-get"
has "$work/no_install.calls" "cmake -S ."
run no_install_env 1 FAKE_UID=0 FAKE_MISSING="libhdf5-dev" GPT2_NO_INSTALL=1 --
has "$work/no_install_env.log" "setup: --no-install: not installing libhdf5-dev"
lacks "$work/no_install_env.calls" "apt-get"
run no_install_bad 2 GPT2_NO_INSTALL=yes --
has "$work/no_install_bad.log" "GPT2_NO_INSTALL=yes: use 1 (install nothing) or 0"

echo "== not Debian (no dpkg-query, no apt-get)"
run not_debian 2 PATH="$work/nodeb" --
has "$work/not_debian.log" "not a Debian/Ubuntu system (no dpkg-query/apt-get)"
has "$work/not_debian.log" "docs/building.md#without-root"
lacks "$work/not_debian.calls" "cmake"
run not_debian_no_install 1 PATH="$work/nodeb" -- --no-install
has "$work/not_debian_no_install.calls" "cmake -S ."

echo "== arguments"
run help 0 -- --help
has "$work/help.log" "usage: tools/setup.sh [--tests] [--no-install] [--help]"
run bad_arg 2 -- --test
has "$work/bad_arg.log" "setup: unknown argument '--test' (tools/setup.sh --help lists the options)"

echo "$cases cases, $failures failed"
[ "$failures" -eq 0 ]
