/*
 * The explorer's body for sc_machine_snapshot() and the per-CPU request
 * slots (explore.h): the final protocol, every interleaving the seed
 * picks; answer-target runs it with SC_MISTAKE_ANSWER_TARGET.
 *
 * - snapshot: two threads, each in a call chain of its own and a process
 *   of its own, yield and sleep by turns; a simulated requester captures
 *   the first again and again (its own slot requests); the test thread
 *   wakes both and takes a snapshot of the machine, six times.
 *   Invariant: no KASSERT, no timeout, each capture that returns 0 and
 *   each snapshot entry with frames holds its own thread's chain and not
 *   the other's.  The run is EXP_REACHED when a snapshot's answer named
 *   another thread (a thread switched off between its look and its IPI)
 *   and its thread was captured in a later round, with the invariant
 *   held: the path that only an interleaving reaches.
 * - answer-target (SC_MISTAKE_ANSWER_TARGET): the same body.  A mistake
 *   makes the snapshot the kernel's way, one capture after another; a
 *   thread that switches off between its td_oncpu read and the IPI (a
 *   sleeps, yields to b or to the requester, or its CPU goes idle) is
 *   answered for by the handler with the interrupted thread's stack.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "explore_body.h"

#define EXP_SN_SNAPSHOTS	6
#define EXP_SN_MAX		12

static char exp_sn_chan[2];		/* each thread's wait channel */
static atomic_int exp_sn_wrong;		/* the requester's bad captures */

static void
exp_sn_loop(int k)
{
	int i;

	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_stop)) {
		for (i = 0; i < 3; i++)
			sc_maybe_yield();
		sc_yield();
		if (!atomic_load(&exp_stop))
			sc_sleep(&exp_sn_chan[k], "snsleep");
	}
}

static SC_NOIPA void
exp_sna_spin(void *arg)
{
	(void)arg;
	exp_sn_loop(0);
	SC_BARRIER();
}
SC_CHAIN(exp_sna_main, exp_sna_spin)

static SC_NOIPA void
exp_snb_spin(void *arg)
{
	(void)arg;
	exp_sn_loop(1);
	SC_BARRIER();
}
SC_CHAIN(exp_snb_main, exp_snb_spin)

/* Own chain, not the other's (k: 0 for a, 1 for b). */
static bool
exp_sn_ok(const struct sc_stack *st, int k)
{
	return (exp_stack_has(st, k == 0 ? "exp_sna_" : "exp_snb_") &&
	    !exp_stack_has(st, k == 0 ? "exp_snb_" : "exp_sna_"));
}

/*
 * The simulated requester: captures a, with its proc lock, until told.
 * Only while a is in its chain: from when both threads started to when
 * the test thread says stop (a leaves its chain only after that).
 */
static void
exp_sn_requester(void *arg)
{
	struct sc_thread *a = arg;
	struct sc_proc *p = sc_thread_proc(a);
	struct sc_stack st;
	int error;

	while (atomic_load(&exp_started) < 2 && !atomic_load(&exp_stop))
		sc_maybe_yield();
	while (!atomic_load(&exp_stop)) {
		error = sc_stack_save_td_locked(p, a, &st);
		if (atomic_load(&exp_stop))
			break;		/* a may be on its way out */
		if (error == ETIMEDOUT || (error == 0 && st.depth > 0 &&
		    !exp_sn_ok(&st, 0)))
			atomic_fetch_add(&exp_sn_wrong, 1);
		sc_maybe_yield();
	}
}

/* Check one snapshot; 0, or EXP_BROKEN with why[]. */
static int
exp_sn_check(const struct sc_kstack *kk, size_t n, struct sc_thread *td[2],
    int s, char *why, size_t len)
{
	size_t i;
	int k;

	for (i = 0; i < n && i < EXP_SN_MAX; i++) {
		for (k = 0; k < 2; k++)
			if (kk[i].tid == sc_thread_tid(td[k]))
				break;
		if (k == 2 || kk[i].state != SC_KKST_STATE_STACKOK ||
		    kk[i].stack.depth == 0 || exp_sn_ok(&kk[i].stack, k))
			continue;
		snprintf(why, len, "snapshot %d: td %d's entry (%d frames) "
		    "lacks its own chain %s, or has the other's", s,
		    kk[i].tid, kk[i].stack.depth, k == 0 ? "exp_sna_" :
		    "exp_snb_");
		return (EXP_BROKEN);
	}
	return (EXP_HELD);
}

int
exp_snapshot(struct sc_machine *m, bool mistaken, char *why, size_t len)
{
	static struct sc_kstack kk[EXP_SN_MAX];
	struct sc_thread *td[2], *r;
	struct sc_proc *pa, *pb, *pr;
	struct sc_counters c;
	size_t n;
	int s, k, error, bad = EXP_HELD;

	atomic_store(&exp_sn_wrong, 0);
	if (sc_proc_create(m, "sna", &pa) != 0 ||
	    sc_proc_create(m, "snb", &pb) != 0 ||
	    sc_proc_create(m, "snr", &pr) != 0 ||
	    sc_thread_create(pa, "a", exp_sna_main, NULL, &td[0]) != 0 ||
	    sc_thread_create(pb, "b", exp_snb_main, NULL, &td[1]) != 0 ||
	    sc_thread_create(pr, "requester", exp_sn_requester, td[0],
	    &r) != 0) {
		snprintf(why, len, "cannot create the threads");
		return (EXP_BROKEN);
	}
	if (!EXP_WAIT(atomic_load(&exp_started) == 2)) {
		snprintf(why, len, "the threads never started");
		bad = EXP_BROKEN;
	}
	for (s = 0; bad == EXP_HELD && s < EXP_SN_SNAPSHOTS; s++) {
		for (k = 0; k < 2; k++)
			sc_wakeup(&exp_sn_chan[k]);
		if ((error = sc_machine_snapshot(m, kk, EXP_SN_MAX, &n)) != 0) {
			snprintf(why, len, "snapshot %d: %s", s,
			    sc_errname(error));
			bad = EXP_BROKEN;
			break;
		}
		bad = exp_sn_check(kk, n, td, s, why, len);
		sc_maybe_yield();
	}
	atomic_store(&exp_stop, 1);
	if (!exp_join(r, NULL) || !exp_join(td[0], &exp_sn_chan[0]) ||
	    !exp_join(td[1], &exp_sn_chan[1])) {
		if (bad == EXP_HELD)
			snprintf(why, len, "a thread did not exit");
		bad = EXP_BROKEN;
	}
	sc_machine_counters(m, &c);
	if (bad == EXP_HELD && (c.timeouts != 0 ||
	    atomic_load(&exp_sn_wrong) != 0)) {
		snprintf(why, len, "%ju timeouts, %d captures by the "
		    "requester without their target's chain",
		    (uintmax_t)c.timeouts, atomic_load(&exp_sn_wrong));
		bad = EXP_BROKEN;
	}
	/* The one mistake this body runs with (answer-target). */
	if (mistaken && bad == EXP_BROKEN)
		snprintf(why + strlen(why), len - strlen(why), " (the handler "
		    "answered with the thread asked for, not the one it "
		    "interrupted: that thread switched off its CPU between "
		    "the td_oncpu read and the IPI, and another thread's "
		    "stack was taken as its own)");
	if (bad == EXP_HELD && c.snapshot_retries > 0) {
		snprintf(why, len, "%ju snapshot answers named another thread "
		    "(it switched off between its look and its IPI); each such "
		    "thread joined a later round (%ju rounds in %d snapshots) "
		    "and every entry held its own chain", (uintmax_t)
		    c.snapshot_retries, (uintmax_t)c.snapshot_rounds,
		    EXP_SN_SNAPSHOTS);
		bad = EXP_REACHED;
	}
	return (bad);
}
