#!/usr/bin/env bash
# The README's demo command: install what is needed (Debian 12, root or
# sudo, skipped when it is all installed), build the default preset, then
# run the demo: a simulated machine printed the way `procstat -kk -a`
# does.  Arguments go to the demo (e.g. --ncpu 4).  The install and build
# logs go to build/demo.log (STACKCAP_DEMO_LOG names another file), the
# demo's output to the screen; a step that fails prints the log's tail.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
log=${STACKCAP_DEMO_LOG:-build/demo.log}
mkdir -p "$(dirname "$log")"
: >"$log"
echo "demo.sh: installing what is missing and building; log: $log"

# Runs "$@" with its output in the log; on failure, the log's tail.
step() {
	echo "=== $*" >>"$log"
	"$@" >>"$log" 2>&1 || {
		local rc=$?
		echo "demo.sh: '$*' failed ($rc); the last lines of $log:" >&2
		tail -n 30 "$log" >&2
		exit "$rc"
	}
}

step sc_install_deps
step cmake --preset default
step cmake --build --preset default -j "$(nproc)"
exec ./build/default/tools/stackcap-demo "$@"
