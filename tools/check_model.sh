#!/usr/bin/env bash
# Model-check model/stack_save_td.pml with spin (ctest label `model`):
# - the final protocol: no assertion violated (no misattribution) and no
#   invalid end state (no deadlock), over the whole state space; and
#   termination (<> done) under weak fairness;
# - the same safety for the final protocol and for FreeBSD 12's NMI
#   protocol under 4BSD's order (-DSCHED_4BSD);
# - each mistake (a -D switch of the model), and the NMI protocol under
#   ULE's order: a counterexample must be found, the shortest one
#   (breadth-first), whose length is printed.
# Usage: check_model.sh [workdir].  Needs spin and a C compiler.
set -euo pipefail
model="$(cd "$(dirname "$0")/.." && pwd)/model/stack_save_td.pml"
# A directory of its own for each run, so that two runs (two ctest at
# once on one build tree) never share pan's files.
mkdir -p "${1:-${TMPDIR:-/tmp}}"
work=$(mktemp -d "${1:-${TMPDIR:-/tmp}}/model.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$model" .
m=$(basename "$model")

# pan for `spin -D...`; $2: extra C flags.
build() {
	rm -f pan pan.* ./*.trail
	spin $1 -a "$m" >/dev/null
	cc -O2 $2 -o pan pan.c
}

status=0
build "" "-DNOCLAIM"
out=$(./pan -m1000000)
states=$(echo "$out" | awk '/states, stored/ { print $1; exit }')
if echo "$out" | grep -q "errors: 0"; then
	echo "final protocol, safety: no misattribution, no deadlock" \
	    "($states states)"
else
	echo "FAIL: final protocol, safety:"; echo "$out"; status=1
fi
build "" ""
out=$(./pan -a -f -m1000000)
if echo "$out" | grep -q "errors: 0"; then
	echo "final protocol, liveness: <> done under weak fairness" \
	    "($(echo "$out" | awk '/states, stored/ { print $1; exit }') states)"
else
	echo "FAIL: final protocol, liveness:"; echo "$out"; status=1
fi
# $1: spin's -D switches, $2: what they are.  Safety, the whole space.
verify() {
	build "$1" "-DNOCLAIM"
	out=$(./pan -m1000000)
	if echo "$out" | grep -q "errors: 0"; then
		echo "$2: no misattribution, no deadlock ($(echo "$out" |
		    awk '/states, stored/ { print $1; exit }') states)"
	else
		echo "FAIL: $2:"; echo "$out"; status=1
	fi
}
verify "-DSCHED_4BSD" "final protocol, 4BSD's order"
verify "-DPROTO_NMI -DSCHED_4BSD" "FreeBSD 12's NMI protocol, 4BSD's order"
for mistake in STALE_ANSWER NO_PROC_LOCK SPIN_HELD HOLD_THREAD_LOCK \
    PROTO_NMI; do
	build "-D$mistake" "-DNOCLAIM -DBFS"
	out=$(./pan -m1000000 || true)
	if echo "$out" | grep -q "errors: [1-9]"; then
		what=$(echo "$out" | grep -oE "assertion violated|invalid end state" | head -1)
		depth=$(echo "$out" | grep -oE "\(at depth [0-9]+\)" | head -1 | tr -dc 0-9)
		echo "$mistake: counterexample, $what, $depth steps"
	else
		echo "FAIL: $mistake: no counterexample found"; status=1
	fi
done
exit $status
