#!/usr/bin/env bash
# Checks the installed package the way its documents tell a user to use it.
# It runs, exactly as they are written, the commands of docs/api.md marked
# "<!-- check_package: NAME -->" (the sh block below the mark) and the
# commands of the opening comments of examples/consumer/CMakeLists.txt and
# examples/consumer/Makefile (their lines "#   command"), with a temporary
# prefix for <prefix> and a new directory for <build>, and without
# PKG_CONFIG_PATH or LD_LIBRARY_PATH in the environment.  So:
# - docs/api.md's install command installs the default build into the
#   prefix, and what was installed is checked (files, exported symbols, no
#   build-only flags in the CMake package);
# - docs/api.md's pkg-config recipe builds a copy of examples/consumer's
#   main.c as app.c and runs it;
# - the example is built and run with CMake (find_package,
#   CMAKE_PREFIX_PATH) and with its Makefile (pkg-config), and once more
#   against stackcap::stackcap_static;
# - examples/cmocka, a user's CMocka test, is built against the installed
#   <stackcap/cmocka.h> and run by ctest, and so is examples/watchdog, a
#   CMocka test under the hang watchdog of <stackcap/host.h>;
# - the installed stackcap-demo runs from bin/, and the replay command
#   its explorer prints runs as printed, with only bin/ and the system's
#   directories in PATH; `man -l` renders every installed page without a
#   warning, and `man -M` finds each one by name;
# and each program must load libstackcap.so from the prefix (the static one
# must not load it).
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

# The sh block right below the line "<!-- check_package: $2 -->" of the
# markdown file $1.
md_block() {
	awk -v mark="<!-- check_package: $2 -->" '
	$0 == mark { armed = 1; next }
	armed && !inblock && /^```sh$/ { inblock = 1; next }
	armed && !inblock { exit }
	inblock && /^```$/ { exit }
	inblock { print }
	' "$1"
}

# The lines "#   command" of the opening comment of the file $1.
header_cmds() {
	awk '!/^#/ { exit } /^#   / { print substr($0, 5) }' "$1"
}

# Runs the commands $3, found in $1, in the directory $2: <prefix> and
# <build> replaced, neither PKG_CONFIG_PATH nor LD_LIBRARY_PATH set.
run_doc() {
	local what=$1 dir=$2 cmds=$3 log
	[ -n "$cmds" ] || fail "$what: no commands found"
	cmds=${cmds//<prefix>/$prefix}
	cmds=${cmds//<build>/$tmp/build}
	if [ "$build" != build/default ]; then
		cmds=${cmds//build\/default/$build}
	fi
	log=$tmp/log.$RANDOM
	echo "=== $what, in ${dir/#"$tmp"/<tmp>}:"
	sed 's/^/    $ /' <<<"$3"
	(cd "$dir" && env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH \
	    bash -euo pipefail -c "$cmds") >"$log" 2>&1 ||
		{ cat "$log"; fail "$what: the commands above failed"; }
	grep -h '^ok: ' "$log" | sed 's/^/    /' || true
}

# The program $1 loads libstackcap.so from the prefix.
# (ldd output goes through a variable: grep -q under pipefail can SIGPIPE ldd)
loads_prefix_lib() {
	local deps
	deps=$(ldd "$1")
	grep -q "libstackcap\.so[^ ]* => $prefix/" <<<"$deps" ||
		fail "$1 does not load libstackcap.so from $prefix"
}

run_doc "docs/api.md (install)" "$src" "$(md_block docs/api.md install)"

# Where GNUInstallDirs put things (lib, lib64 or lib/<multiarch>).
pc=$(find "$prefix" -path '*/pkgconfig/stackcap.pc' -print -quit)
[ -n "$pc" ] || fail "stackcap.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
cmakedir=$libdir/cmake/stackcap
mandir=$prefix/share/man
for f in "$prefix/include/stackcap.h" "$prefix/include/stackcap/testing.h" \
    "$prefix/include/stackcap/base.h" "$prefix/include/stackcap/check.h" \
    "$prefix/include/stackcap/cmocka.h" "$prefix/include/stackcap/host.h" \
    "$prefix/bin/stackcap-demo" "$mandir/man1/stackcap-demo.1" \
    "$mandir/man3/stackcap.3" "$mandir/man3/stackcap_check.3" \
    "$mandir/man3/stackcap_host.3" "$mandir/man3/stackcap_testing.3" \
    "$libdir/libstackcap.a" "$libdir/libstackcap.so" \
    "$cmakedir/stackcapConfig.cmake" "$cmakedir/stackcapConfigVersion.cmake" \
    "$cmakedir/stackcapTargets.cmake" "$prefix/share/doc/stackcap/LICENSE"; do
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

# docs/api.md's recipe builds "app.c in the current directory".
mkdir "$tmp/app"
cp examples/consumer/main.c "$tmp/app/app.c"
run_doc "docs/api.md (pkg-config)" "$tmp/app" \
    "$(md_block docs/api.md pkg-config)"
loads_prefix_lib "$tmp/app/app"

run_doc examples/consumer/CMakeLists.txt "$src" \
    "$(header_cmds examples/consumer/CMakeLists.txt)"
loads_prefix_lib "$tmp/build/stackcap-consumer"

# The Makefile's commands run in a copy of the directory: they write the
# program next to main.c.
cp -r examples/consumer "$tmp/consumer"
rm -f "$tmp/consumer/stackcap-consumer"
run_doc examples/consumer/Makefile "$tmp/consumer" \
    "$(header_cmds examples/consumer/Makefile)"
loads_prefix_lib "$tmp/consumer/stackcap-consumer"

# A CFLAGS on make's command line replaces the Makefile's own; stackcap's
# flags (the include path, the frame pointers) must survive it.
rm -f "$tmp/consumer/stackcap-consumer"
make -C "$tmp/consumer" CFLAGS=-O0 PKG_CONFIG_PATH="$libdir/pkgconfig" \
	>"$tmp/make-cflags.log" 2>&1 ||
	{ cat "$tmp/make-cflags.log"; fail "make CFLAGS=-O0 (examples/consumer)"; }
grep -q -- -fno-omit-frame-pointer "$tmp/make-cflags.log" ||
	fail "make CFLAGS=-O0 dropped stackcap's flags"
loads_prefix_lib "$tmp/consumer/stackcap-consumer"

echo "=== examples/consumer with CMake, static (stackcap::stackcap_static)"
cmake -S examples/consumer -B "$tmp/static" -DCMAKE_PREFIX_PATH="$prefix" \
	-DSTACKCAP_CONSUMER_STATIC=ON >"$tmp/static.log" 2>&1 &&
	cmake --build "$tmp/static" --target stackcap-consumer-static \
	>>"$tmp/static.log" 2>&1 ||
	{ cat "$tmp/static.log"; fail "build (CMake, static)"; }
deps=$(ldd "$tmp/static/stackcap-consumer-static")
if grep -q libstackcap.so <<<"$deps"; then
	fail "the static consumer loads libstackcap.so"
fi
"$tmp/static/stackcap-consumer-static" >"$tmp/static-run.log" 2>&1 ||
	{ cat "$tmp/static-run.log"; fail "run (CMake, static)"; }
grep -h '^ok: ' "$tmp/static-run.log" | sed 's/^/    /' || true

rm -rf "$tmp/build"	# <build> is a new directory for each example
run_doc examples/cmocka/CMakeLists.txt "$src" \
    "$(header_cmds examples/cmocka/CMakeLists.txt)"
loads_prefix_lib "$tmp/build/test_app"

rm -rf "$tmp/build"
run_doc examples/watchdog/CMakeLists.txt "$src" \
    "$(header_cmds examples/watchdog/CMakeLists.txt)"
loads_prefix_lib "$tmp/build/test_hang"

echo "=== the installed stackcap-demo and its replay command"
# Only the prefix's bin/ and the system's: the demo is found by its name,
# as a user who pastes the printed command finds it.
syspath=$prefix/bin:/usr/local/bin:/usr/bin:/bin
(cd "$tmp" && env -u STACKCAP_SEED -u STACKCAP_SCHED PATH="$syspath" \
    stackcap-demo -k) >"$tmp/demo.log" 2>&1 ||
	{ cat "$tmp/demo.log"; fail "stackcap-demo -k (installed)"; }
grep -qE 'syncer +- +sc__mi_switch sc__sleepq_wait sc_sleep' \
    "$tmp/demo.log" || { cat "$tmp/demo.log"; fail "stackcap-demo -k: no syncer"; }
(cd "$tmp" && env -u STACKCAP_SEED -u STACKCAP_SCHED PATH="$syspath" \
    stackcap-demo --explore spin-held --pct 3) >"$tmp/explore.log" 2>&1 ||
	true	# its status is the search's; the replay is what is checked
replay=$(sed -n 's/^replay: //p' "$tmp/explore.log" | head -n 1)
case $replay in
"STACKCAP_SCHED="*" stackcap-demo --scenario spin-held --seed "*) ;;
*) cat "$tmp/explore.log"; fail "no replay command naming stackcap-demo" ;;
esac
echo "    $ $replay"
(cd "$tmp" && env -u STACKCAP_SEED PATH="$syspath" bash -c "$replay") \
    >"$tmp/replay.log" 2>&1 ||
	{ cat "$tmp/replay.log"; fail "the printed replay failed: $replay"; }
grep -q '^Scenario spin-held, seed ' "$tmp/replay.log" &&
	grep -q '^The invariant broke:' "$tmp/replay.log" ||
	{ cat "$tmp/replay.log"; fail "the printed replay is not the run found"; }

echo "=== the installed manual pages (man -l, man -M)"
for page in "$mandir"/man1/*.1 "$mandir"/man3/*.3; do
	# man's formatter warnings go to stderr (MAN_KEEP_STDERR).
	err=$(MAN_KEEP_STDERR=1 MANWIDTH=80 man -l "$page" 2>&1 >/dev/null) ||
		fail "man -l ${page#"$prefix"/} failed: $err"
	[ -z "$err" ] || fail "man -l ${page#"$prefix"/}: $err"
	name=$(basename "$page")
	man -M "$mandir" -w "${name##*.}" "${name%.*}" >/dev/null ||
		fail "man -M <prefix>/share/man ${name%.*}: not found"
	echo "    ${page#"$prefix"/}: $(MANWIDTH=80 man -l "$page" 2>/dev/null |
	    wc -l) lines"
done

echo "=== package check passed"
