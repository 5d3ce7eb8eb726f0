#!/usr/bin/env bash
# Checks the installed package: installs the default build into a temporary
# prefix, checks what was installed (files, exported symbols, no build-only
# flags in the CMake package), then builds examples/consumer against it
# with CMake (find_package, CMAKE_PREFIX_PATH; stackcap::stackcap and
# stackcap::stackcap_static) and with pkg-config (the Makefile,
# PKG_CONFIG_PATH), and runs the programs.
#
# Needs a configured and built default preset:
#   cmake --preset default && cmake --build --preset default
#   bash tools/check_package.sh [build dir, default build/default]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${1:-build/default}

fail() {
	echo "check_package: FAIL: $*" >&2
	exit 1
}

[ -f "$build/CMakeCache.txt" ] ||
	fail "$build is not configured (cmake --preset default && cmake --build --preset default)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stackcap-pkg.XXXXXX")
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

echo "=== install $build into $prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
	{ cat "$tmp/install.log"; fail "cmake --install"; }

# Where GNUInstallDirs put things (lib, lib64 or lib/<multiarch>).
pc=$(find "$prefix" -path '*/pkgconfig/stackcap.pc' -print -quit)
[ -n "$pc" ] || fail "stackcap.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
cmakedir=$libdir/cmake/stackcap
for f in "$prefix/include/stackcap.h" "$libdir/libstackcap.a" \
    "$libdir/libstackcap.so" "$cmakedir/stackcapConfig.cmake" \
    "$cmakedir/stackcapConfigVersion.cmake" \
    "$cmakedir/stackcapTargets.cmake"; do
	[ -e "$f" ] || fail "not installed: ${f#"$prefix"/}"
done
# The shared library is versioned: libstackcap.so -> .so.MAJOR -> .so.X.Y.Z
soname=$(readelf -d "$libdir/libstackcap.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -n "$soname" ] && [ -e "$libdir/$soname" ] ||
	fail "libstackcap.so has no SONAME, or $soname is not installed"
echo "    installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"

# Build-only settings must not leak into the CMake package.
if grep -nE 'stackcap_flags|stackcap_obj|-fsanitize|'"$src" \
    "$cmakedir"/stackcapTargets*.cmake; then
	fail "build-tree settings leaked into stackcapTargets"
fi

# The shared library exports the sc_* API and nothing else.
bad=$(nm -D --defined-only "$libdir/libstackcap.so" |
	awk '$2 ~ /^[TDBRV]$/ && ($3 !~ /^sc_/ || $3 ~ /^sc__/) { print $3 }')
[ -z "$bad" ] || fail "exported symbols outside the sc_* API: $bad"

echo "=== examples/consumer with CMake (find_package, CMAKE_PREFIX_PATH)"
cmake -S examples/consumer -B "$tmp/cmake-build" \
	-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DSTACKCAP_CONSUMER_STATIC=ON \
	>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "configure"; }
cmake --build "$tmp/cmake-build" >"$tmp/cmake-build.log" 2>&1 ||
	{ cat "$tmp/cmake-build.log"; fail "build (CMake)"; }
# It must use the installed shared library, not a copy of the archive.
# (ldd output goes through a variable: grep -q under pipefail can SIGPIPE ldd)
deps=$(ldd "$tmp/cmake-build/stackcap-consumer")
grep -q "libstackcap\.so[^ ]* => $prefix/" <<<"$deps" ||
	fail "the CMake consumer does not load libstackcap.so from $prefix"
"$tmp/cmake-build/stackcap-consumer" || fail "run (CMake)"
echo "=== examples/consumer with CMake, static (stackcap::stackcap_static)"
deps=$(ldd "$tmp/cmake-build/stackcap-consumer-static")
if grep -q libstackcap.so <<<"$deps"; then
	fail "the static consumer loads libstackcap.so"
fi
"$tmp/cmake-build/stackcap-consumer-static" || fail "run (CMake, static)"

echo "=== examples/consumer with pkg-config (PKG_CONFIG_PATH)"
mkdir -p "$tmp/make-build"
PKG_CONFIG_PATH="$libdir/pkgconfig" make -s -C examples/consumer \
	O="$tmp/make-build" >"$tmp/make.log" 2>&1 ||
	{ cat "$tmp/make.log"; fail "build (pkg-config)"; }
deps=$(ldd "$tmp/make-build/stackcap-consumer")
grep -q "libstackcap\.so[^ ]* => $prefix/" <<<"$deps" ||
	fail "the pkg-config consumer does not load libstackcap.so from $prefix"
"$tmp/make-build/stackcap-consumer" || fail "run (pkg-config)"

echo "=== package check passed"
