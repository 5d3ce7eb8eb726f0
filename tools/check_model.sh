#!/usr/bin/env bash
# Model-check model/stack_save_td.pml with spin (ctest label `model`):
# - the final protocol: no assertion violated (no misattribution, and the
#   pcb is walked only when no CPU runs the target) and no invalid end
#   state (no deadlock), over the whole state space; and termination
#   (<> done) under weak fairness;
# - the same safety for the final protocol and for FreeBSD 12's NMI
#   protocol under 4BSD's order (-DSCHED_4BSD);
# - each mistake (a -D switch of the model), and the NMI protocol under
#   ULE's order: a counterexample must be found, the shortest one
#   (breadth-first), whose length is printed.
# Every run is exhaustive (no bitstate, no hash compaction): a proof.  The
# runs are independent, so they go in parallel, each in a directory of its
# own.  pan is compiled with -O0 (compiling takes longer than the search
# of these few thousand states) and runs with a hash table of 2^16 slots
# (-w16; pan's default table takes longer to allocate than the search),
# which only sets how often states share a slot, never what is explored;
# a search that the depth bound (-m) would cut short is a failure.
# Usage: check_model.sh [workdir].  Needs spin and a C compiler.
set -euo pipefail
model="$(cd "$(dirname "$0")/.." && pwd)/model/stack_save_td.pml"
# A directory of its own for each run, so that two runs (two ctest at
# once on one build tree) never share pan's files.
mkdir -p "${1:-${TMPDIR:-/tmp}}"
work=$(mktemp -d "${1:-${TMPDIR:-/tmp}}/model.XXXXXX")
trap 'rm -rf "$work"' EXIT
m=$(basename "$model")

# run NAME SPIN_FLAGS CC_FLAGS PAN_FLAGS: build pan in $work/NAME and run
# it; its output goes to $work/NAME/out.
run() {
	mkdir "$work/$1"
	cp "$model" "$work/$1/"
	(cd "$work/$1" && spin $2 -a "$m" >/dev/null &&
	    cc -O0 $3 -o pan pan.c && { ./pan $4 >out 2>&1 || true; })
}

# states NAME: the number of states stored.
states() {
	awk '/states, stored/ { print $1; exit }' "$work/$1/out"
}

# complete NAME: exhaustive, no error, and no search cut short by the
# depth bound.
complete() {
	grep -q "errors: 0" "$work/$1/out" &&
	    ! grep -q "max search depth too small" "$work/$1/out"
}

mistakes="STALE_ANSWER NO_PROC_LOCK SPIN_HELD HOLD_THREAD_LOCK NOCPU_OFF_CPU
    PROTO_NMI"
run final "" "-DNOCLAIM" "-m10000 -w16" &
run liveness "" "" "-a -f -m10000 -w16" &
run 4bsd "-DSCHED_4BSD" "-DNOCLAIM" "-m10000 -w16" &
run nmi4bsd "-DPROTO_NMI -DSCHED_4BSD" "-DNOCLAIM" "-m10000 -w16" &
for mistake in $mistakes; do
	run "$mistake" "-D$mistake" "-DNOCLAIM -DBFS" "-m10000 -w16" &
done
# Wait for each job by its pid: a failed build fails the check.
status=0
for job in $(jobs -p); do
	wait "$job" || status=1
done

# verify NAME WHAT: safety (or liveness), the whole space.
verify() {
	if complete "$1"; then
		echo "$2 ($(states "$1") states)"
	else
		echo "FAIL: $2:"; cat "$work/$1/out" 2>/dev/null; status=1
	fi
}
verify final "final protocol, safety: no misattribution, no deadlock"
verify liveness "final protocol, liveness: <> done under weak fairness"
verify 4bsd "final protocol, 4BSD's order: no misattribution, no deadlock"
verify nmi4bsd "FreeBSD 12's NMI protocol, 4BSD's order: no misattribution, no deadlock"
for mistake in $mistakes; do
	out="$work/$mistake/out"
	if grep -q "errors: [1-9]" "$out" 2>/dev/null; then
		what=$(grep -oE "assertion violated|invalid end state" "$out" | head -1)
		depth=$(grep -oE "\(at depth [0-9]+\)" "$out" | head -1 | tr -dc 0-9)
		echo "$mistake: counterexample, $what, $depth steps"
	else
		echo "FAIL: $mistake: no counterexample found"; status=1
	fi
done
exit $status
