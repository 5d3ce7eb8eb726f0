#!/bin/sh
# Run a command under an artificial CPU load that we control: N busy loops,
# pinned round-robin to the online CPUs (loop i on CPU i mod ncpu), started
# before the command and killed when it ends (by their process ids).
#
#   bench/load.sh N COMMAND [ARGS...]
#
# N = 0 runs the command alone, so that one script gives both series.  The
# loops run at the default nice level, as the jobs of a busy host do.  The
# command's exit status is the script's.  Examples (docs/benchmarks.md):
#
#   bench/load.sh 8 ./build/default/bench/bench_ipi 5000
#   STACKCAP_SCHED=4bsd bench/load.sh 8 ./build/default/tests/test_stress
set -u

usage() {
	echo "usage: $0 N COMMAND [ARGS...]  (N busy loops, N >= 0)" >&2
	exit 2
}

[ $# -ge 2 ] || usage
n=$1
shift
case $n in
''|*[!0-9]*) usage ;;
esac
ncpu=$(getconf _NPROCESSORS_ONLN)
pids=""

stop_loops() {
	# Only the loops this script started, each by its id.
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	for p in $pids; do
		wait "$p" 2>/dev/null
	done
	pids=""
}
trap 'stop_loops; exit 130' INT TERM

i=0
while [ "$i" -lt "$n" ]; do
	taskset -c $((i % ncpu)) sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
echo "load.sh: $n busy loops on $ncpu CPUs; load average" \
    "$(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
"$@"
status=$?
echo "load.sh: load average $(cut -d' ' -f1-3 /proc/loadavg) at end" >&2
stop_loops
exit $status
