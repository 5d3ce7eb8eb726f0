#!/usr/bin/env bash
# stackcap-demo --explore BODY --jobs N finds what one process finds
# (ctest: stackcap_demo_jobs*): the same seed, the same shrunk schedule;
# and the --shard K/N lines of the parts, run one by one as a batch
# system would, give that seed as their smallest, and their runs add up
# to what --jobs says; a malformed --shard or --jobs is a clear error.
#
# usage: tools/check_jobs.sh DEMO BODY N [DEMO OPTIONS...]
set -euo pipefail
demo=$1
body=$2
n=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "check_jobs: $*" >&2
	exit 1
}

export STACKCAP_SCHED=ule
unset STACKCAP_SEED
"$demo" --explore "$body" "$@" >"$tmp/one" || true
"$demo" --explore "$body" "$@" --jobs "$n" >"$tmp/jobs" || true
one=$(sed -n 's/^seed \([0-9]*\) .*/\1/p' "$tmp/one")
jobs=$(sed -n 's/^seed \([0-9]*\) .*/\1/p' "$tmp/jobs")
[ -n "$one" ] || fail "one process found no seed"
[ "$one" = "$jobs" ] || fail "one process found seed $one, --jobs $n: '$jobs'"
grep -q "^($n processes" "$tmp/jobs" ||
    fail "--jobs $n did not say it ran $n processes"
diff <(grep '^replay: .*--schedule' "$tmp/one") \
    <(grep '^replay: .*--schedule' "$tmp/jobs") ||
    fail "the shrunk schedules differ"
min=0
total=0
for ((k = 0; k < n; k++)); do
	line=$("$demo" --explore "$body" "$@" --shard "$k/$n")
	[[ $line =~ ^shard\ $k/$n:\ seed\ ([0-9]+)\ runs\ ([0-9]+)$ ]] ||
	    fail "--shard $k/$n printed '$line'"
	s=${BASH_REMATCH[1]}
	total=$((total + BASH_REMATCH[2]))
	if [ "$s" != 0 ] && { [ "$min" = 0 ] || [ "$s" -lt "$min" ]; }; then
		min=$s
	fi
done
[ "$min" = "$one" ] || fail "the parts' smallest seed is $min, not $one"
grep -q "($total runs in all, $n processes)" "$tmp/jobs" ||
    fail "the parts ran $total runs; --jobs said: $(grep '^seed' "$tmp/jobs")"
# Bad input: a clear error, exit status 2, no search.
for bad in "--shard $n/$n" "--shard 1" "--shard -1/$n" "--jobs 0" \
    "--jobs 65" "--jobs 2 --seed 1" "--jobs 2 --shard 0/2"; do
	# shellcheck disable=SC2086
	if "$demo" --explore "$body" $bad >"$tmp/bad" 2>&1; then
		fail "'$bad' was taken"
	else
		[ $? = 2 ] || fail "'$bad': not exit status 2"
	fi
	grep -q "usage\|expected" "$tmp/bad" || fail "'$bad': no error said"
done
echo "check_jobs: $body, $n parts: seed $one, $total runs in all"
