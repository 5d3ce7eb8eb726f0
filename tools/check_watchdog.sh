#!/usr/bin/env bash
# The hang watchdog under ctest (ctest: watchdog_ctest, label host): what
# docs/host.md tells a test author, checked against the ctest that runs it.
#
# usage: tools/check_watchdog.sh TEST_HANG
#
# TEST_HANG is examples/watchdog/test_hang.c built; `--hang` deadlocks it.
# - with STACKCAP_WATCHDOG under the test's TIMEOUT, the watchdog fires
#   first: ctest reports the abort, and its log holds every thread, the
#   two deadlocked workers in pthread_mutex_lock() below transfer();
# - with the bound over TIMEOUT, ctest kills the test at TIMEOUT, with a
#   signal that leaves no dump (SIGKILL): ctest reports "Timeout" and the
#   log has no thread in it.  This is why STACKCAP_WATCHDOG goes under
#   TIMEOUT.
set -euo pipefail
bin=$(realpath "${1:?usage: tools/check_watchdog.sh TEST_HANG}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "check_watchdog: $*" >&2
	fails=$((fails + 1))
}

# run_case NAME TIMEOUT WATCHDOG: a one-test ctest project, its log.
run_case() {
	mkdir -p "$tmp/$1"
	cat >"$tmp/$1/CTestTestfile.cmake" <<EOT
add_test($1 "$bin" --hang)
set_tests_properties($1 PROPERTIES TIMEOUT $2 ENVIRONMENT STACKCAP_WATCHDOG=$3)
EOT
	if (cd "$tmp/$1" && ctest --output-on-failure) >"$tmp/$1.log" 2>&1; then
		fail "$1: the deadlocked test passed"
	fi
}

run_case under 30 1
grep -q 'Subprocess aborted' "$tmp/under.log" ||
	fail "under: ctest did not report the watchdog's abort"
grep -q 'stackcap: watchdog: over 1.000 s; every thread:' "$tmp/under.log" ||
	fail "under: no dump in ctest's log"
for w in worker_ab worker_ba; do
	grep -qE "pthread_mutex_lock\+0x[0-9a-f]+\*? transfer\+0x[0-9a-f]+\*? $w\+" \
	    "$tmp/under.log" || fail "under: $w not in pthread_mutex_lock"
done

run_case over 2 60
grep -q 'Timeout' "$tmp/over.log" || fail "over: ctest did not time out"
! grep -q 'stackcap: watchdog' "$tmp/over.log" ||
	fail "over: a dump after ctest's TIMEOUT (which signal does it send?)"

if [ "$fails" -ne 0 ]; then
	for f in "$tmp"/*.log; do echo "--- $f"; cat "$f"; done >&2
	exit 1
fi
echo "check_watchdog: the watchdog under TIMEOUT dumps both deadlocked" \
    "workers; over it, ctest's kill leaves no dump"
