#!/usr/bin/env bash
# The explorer owns the seed, and its replay command reproduces its run
# whatever the shell has set (ctest: stackcap_demo_replay_env).
#
# usage: tools/check_replay.sh DEMO [BODY [DEMO OPTIONS...]]
#
# For STACKCAP_SEED unset, 5 and 0: `DEMO --explore BODY` finds the same
# seed as with the variable unset (before, every run was the variable's
# seed's, or a real run for 0, still announced as deterministic), and says
# that it ignores the variable.  Its printed replay command, run as
# printed in a shell that has STACKCAP_SEED set (7, or 0 for 0) and the
# other scheduler, gives the same run: the same outcome and the same narrated trace,
# event for event (addresses, 0x..., blanked: another process places its
# stacks elsewhere).  The shrunk schedule it prints replays to the same
# failure, twice alike.
set -euo pipefail
demo=$1
body=${2:-stale-answer}
shift $(($# > 1 ? 2 : 1))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "check_replay: $*" >&2
	exit 1
}

# From "Narrated trace:" on, up to the shrunk schedule, addresses
# blanked.
run_part() {
	sed -n '/^Narrated trace:/,$p' "$1" | sed '/^shrunk: /,$d' |
	    sed 's/0x[0-9a-f]*/0x/g'
}

ref=
for seedvar in unset 5 0; do
	out=$tmp/explore.$seedvar
	if [ "$seedvar" = unset ]; then
		env -u STACKCAP_SEED STACKCAP_SCHED=ule "$demo" --explore \
		    "$body" "$@" >"$out" 2>"$out.err" || true
	else
		env STACKCAP_SEED=$seedvar STACKCAP_SCHED=ule "$demo" \
		    --explore "$body" "$@" >"$out" 2>"$out.err" || true
		grep -q "STACKCAP_SEED=$seedvar ignored" "$out.err" ||
		    fail "STACKCAP_SEED=$seedvar: not said to be ignored"
	fi
	found=$(grep -E '^seed [0-9]+ ' "$out" || true)
	[ -n "$found" ] || fail "STACKCAP_SEED=$seedvar: no seed found"
	if [ -z "$ref" ]; then
		ref=$found
	elif [ "$found" != "$ref" ]; then
		fail "STACKCAP_SEED=$seedvar: \"$found\", not \"$ref\""
	fi
	cmd=$(sed -n 's/^replay: //p' "$out" | head -n 1)
	case $cmd in
	STACKCAP_SCHED=ule\ stackcap-demo\ *) ;;
	*) fail "replay command: \"$cmd\"" ;;
	esac
	# As a user would paste it, in a shell with its own variables.
	(
		cd "$(dirname "$demo")"
		export STACKCAP_SEED=$([ "$seedvar" = 0 ] && echo 0 || echo 7)
		export STACKCAP_SCHED=4bsd
		eval "${cmd/stackcap-demo/./$(basename "$demo")}"
	) >"$out.replay" 2>&1 || true
	run_part "$out" >"$out.a"
	run_part "$out.replay" >"$out.b"
	[ -s "$out.a" ] || fail "STACKCAP_SEED=$seedvar: no narrated trace"
	diff -u "$out.a" "$out.b" >"$out.diff" || {
		head -n 20 "$out.diff" >&2
		fail "STACKCAP_SEED=$seedvar: \"$cmd\" gave another run"
	}
	n=$(grep -c '^ ' "$out.a" || true)
	echo "STACKCAP_SEED=$seedvar: $found; the replay gave the same" \
	    "$n lines of trace"
done

# The shrunk schedule's replay (docs/check.md), printed after the seed's
# when the search failed: it fails too, the same way at each run, in a
# shell with other variables.
sched=$(sed -n "s/^replay: \(.*--schedule .*\)/\1/p" "$tmp/explore.unset")
if [ -n "$sched" ]; then
	for i in 1 2; do
		(
			cd "$(dirname "$demo")"
			export STACKCAP_SEED=7 STACKCAP_SCHED=4bsd
			eval "${sched/stackcap-demo/./$(basename "$demo")}"
		) >"$tmp/sched.$i" 2>&1 || true
		grep -q '^The invariant broke' "$tmp/sched.$i" ||
		    fail "\"$sched\" did not break the invariant"
		run_part "$tmp/sched.$i" >"$tmp/sched.$i.t"
	done
	cmp -s "$tmp/sched.1.t" "$tmp/sched.2.t" ||
	    fail "\"$sched\": two runs differ"
	echo "the shrunk schedule failed again, the same run twice:" \
	    "$(grep -c '^ ' "$tmp/sched.1.t") lines of trace"
fi
echo "check_replay: ok"
