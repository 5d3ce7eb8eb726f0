/*
 * The explorer's bodies (explore.h): scenarios of the kernel's history
 * with their hooks removed.  Each body runs a small workload and checks
 * the invariant that its mistake breaks; deterministic mode (sim_det.c)
 * chooses the interleaving, the seed fixes it.  None of them installs a
 * hook.  docs/determinism.md has the table.
 *
 * - lock-held (SC_MISTAKE_HOLD_THREAD_LOCK): one CPU, a target that
 *   sleeps again and again and a thread that wakes it; the test thread
 *   captures the target five times.  Invariant: no capture times out.
 *   With the mistake the requester keeps the target's thread lock across
 *   the IPI; when the target reaches sc_sleep() first, it takes its chain
 *   lock and then spins on its thread lock with interrupts disabled, and
 *   never takes the IPI.  (A target that only yielded would wait for its
 *   thread lock holding nothing, take the IPI between attempts, and be
 *   captured there, as on FreeBSD.)
 * - no-proc-lock (SC_MISTAKE_NO_PROC_LOCK): a simulated requester
 *   captures a thread that exits after a while, which the test thread
 *   joins, and whose struct a new thread of another process then takes.
 *   Invariant: a capture that returns 0 is of the thread it was asked
 *   for (the struct's generation is the same before and after).  With the
 *   mistake the requester does not hold the target's proc lock.
 * - stale-answer (SC_MISTAKE_STALE_ANSWER): the target spins in one call
 *   chain (old), then in another (new), for good; the test thread
 *   captures it eight times.  Invariant: a capture that returns 0 holds
 *   the target's frames, and none of the old chain once the requester has
 *   seen the target move to the new one.  With the mistake the answer
 *   word still names the target from the capture before, which is taken
 *   at once, with that capture's stack.
 * - spin-held (SC_MISTAKE_SPIN_HELD): a sleeper sleeps on a channel that
 *   the target wakes, again and again; the test thread locks the sleeper
 *   (its lock is that channel's sleep-queue chain lock), then captures the
 *   target.  With the mistake it keeps the sleeper's lock across the
 *   capture (the library's KASSERT is off); the target, in sc_wakeup()
 *   inside a spinlock section of its own (sc_spinlock_enter()), spins on
 *   that chain lock with interrupts disabled and never takes the IPI (a
 *   wakeup outside such a section would take it between attempts).
 *   Without it the caller drops it first, as the KASSERT demands.
 *   Invariant: no capture times out, and one that returns 0 holds the
 *   target's chain.
 * - nmi-ule (cfg.protocol = SC_PROTO_NMI) and ule-incoming-nocpu (no
 *   mistake): the same body.  The target sleeps and is woken by the test
 *   thread, which then captures it, eight times.  Under ULE a thread that
 *   a CPU has chosen is RUNNING with td_oncpu == NOCPU and its lock free
 *   until cpu_switch() returns into it; a capture that locks it then
 *   finds that window.  FreeBSD 12's protocol reads td_oncpu under the
 *   lock and would call ipi_cpu(NOCPU): a KASSERT.  The final protocol
 *   spins on NOCPU and sends the IPI once the thread has set td_oncpu.
 *   Invariant: no KASSERT, no timeout, a capture that returns 0 holds the
 *   target's chain (EAGAIN is FreeBSD 12's answer for interrupts
 *   disabled).  The run is EXP_REACHED when a capture found the window
 *   and the invariant held: what ule-incoming-nocpu's search looks for.
 *   Under 4BSD the incoming thread sets td_oncpu while it still holds
 *   the sched_lock, its thread lock: no window, and FreeBSD 12's protocol
 *   is right.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "explore_body.h"

atomic_int exp_stop, exp_started, exp_rdone;

bool
exp_stack_has(const struct sc_stack *st, const char *prefix)
{
	char name[128];
	uintptr_t off;
	size_t len = strlen(prefix);
	int i;

	for (i = 0; i < st->depth; i++)
		if (sc_symbolize(st->pcs[i], name, sizeof(name), &off) == 0 &&
		    strncmp(name, prefix, len) == 0)
			return (true);
	return (false);
}

int
exp_start1(struct sc_machine *m, const char *pname, void (*fn)(void *),
    struct sc_proc **p, struct sc_thread **t, char *why, size_t len)
{
	*t = NULL;
	if (sc_proc_create(m, pname, p) != 0 ||
	    sc_thread_create(*p, "target", fn, NULL, t) != 0) {
		*t = NULL;
		snprintf(why, len, "cannot create the threads");
		return (EXP_BROKEN);
	}
	if (!EXP_WAIT(atomic_load(&exp_started) == 1)) {
		snprintf(why, len, "the target never started");
		return (EXP_BROKEN);
	}
	return (EXP_HELD);
}

bool
exp_join(struct sc_thread *td, const void *wchan)
{
	long n;

	for (n = 0; !sc_thread_exited(td) && n < EXP_WAIT_STEPS; n++) {
		/* A sleeper may have gone to sleep after the last wakeup. */
		if (wchan != NULL)
			sc_wakeup(wchan);
		sc_maybe_yield();
	}
	if (!sc_thread_exited(td))
		return (false);
	return (sc_thread_join(td) == 0);
}

/* ------------------------------------------------------------------------
 * lock-held
 * ------------------------------------------------------------------------ */

static char exp_lh_chan;		/* the target's wait channel */
static atomic_int exp_lh_done;		/* the target has left its loop */

static SC_NOIPA void
exp_lh_sleep(void *arg)
{
	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_stop))
		sc_sleep(&exp_lh_chan, "lhsleep");
	atomic_store(&exp_lh_done, 1);
	SC_BARRIER();
}

/* Wakes the target until it has left its loop: no wakeup is lost. */
static SC_NOIPA void
exp_lh_wake(void *arg)
{
	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_lh_done)) {
		sc_wakeup(&exp_lh_chan);
		sc_maybe_yield();
	}
	SC_BARRIER();
}

int
exp_lock_held(struct sc_machine *m, bool mistaken, char *why, size_t len)
{
	struct sc_proc *p;
	struct sc_thread *t, *u;
	struct sc_stack st;
	int error, k, bad = 0;

	(void)mistaken;
	atomic_store(&exp_lh_done, 0);
	if (sc_proc_create(m, "lockheld", &p) != 0 ||
	    sc_thread_create(p, "target", exp_lh_sleep, NULL, &t) != 0 ||
	    sc_thread_create(p, "other", exp_lh_wake, NULL, &u) != 0) {
		snprintf(why, len, "cannot create the threads");
		return (1);
	}
	if (!EXP_WAIT(atomic_load(&exp_started) == 2)) {
		snprintf(why, len, "the threads never started");
		bad = 1;
	}
	for (k = 0; !bad && k < 5; k++) {
		sc_proc_lock(p);
		sc_thread_lock(t);
		error = sc_stack_save_td(&st, t);
		sc_thread_unlock(t);
		sc_proc_unlock(p);
		if (error == ETIMEDOUT) {
			snprintf(why, len, "capture %d of td %d: ETIMEDOUT: "
			    "its thread lock was held across the IPI while "
			    "it spun for that lock in sc_sleep(), its chain "
			    "lock held: interrupts disabled", k,
			    sc_thread_tid(t));
			bad = 1;
		} else if (error != 0) {
			snprintf(why, len, "capture %d of td %d: %s", k,
			    sc_thread_tid(t), sc_errname(error));
			bad = 1;
		}
	}
	atomic_store(&exp_stop, 1);
	(void)sc_thread_join(t);
	(void)sc_thread_join(u);
	return (bad ? EXP_BROKEN : EXP_HELD);
}

/* ------------------------------------------------------------------------
 * no-proc-lock
 * ------------------------------------------------------------------------ */

struct exp_np {
	struct sc_thread *target;	/* the pointer the requester holds */
	struct sc_proc	*target_proc;
	unsigned	target_gen;
	bool		mistaken;
	atomic_int	bad;
	int		tid0, tid1;	/* asked for, answered */
};

static SC_NOIPA void
exp_np_target(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 20; i++)
		sc_maybe_yield();
	SC_BARRIER();
}

static SC_NOIPA void
exp_np_other(void *arg)
{
	(void)arg;
	while (!atomic_load(&exp_stop))
		sc_maybe_yield();
	SC_BARRIER();
}

/* The requester, a simulated thread: capture the target until it goes. */
static SC_NOIPA void
exp_np_requester(void *arg)
{
	struct exp_np *np = arg;
	struct sc_thread *td = np->target;
	struct sc_stack st;
	unsigned g0, g1;
	int error, tid0, k;

	for (k = 0; k < 200 && !atomic_load(&np->bad); k++) {
		/* The final protocol holds the proc lock of the thread it
		 * found: then td cannot exit, nor be reused. */
		if (!np->mistaken)
			sc_proc_lock(np->target_proc);
		sc_thread_lock(td);
		g0 = sc_thread_gen(td);
		tid0 = sc_thread_tid(td);
		if (g0 != np->target_gen) {
			sc_thread_unlock(td);
			if (!np->mistaken)
				sc_proc_unlock(np->target_proc);
			break;		/* gone: the requester stops */
		}
		error = sc_stack_save_td(&st, td);
		g1 = sc_thread_gen(td);
		if (error == 0 && g1 != g0) {
			np->tid0 = tid0;
			np->tid1 = sc_thread_tid(td);
			atomic_store(&np->bad, 1);
		}
		sc_thread_unlock(td);
		if (!np->mistaken)
			sc_proc_unlock(np->target_proc);
		sc_maybe_yield();
	}
	atomic_store(&exp_rdone, 1);
}

int
exp_no_proc_lock(struct sc_machine *m, bool mistaken, char *why, size_t len)
{
	static struct exp_np np;
	struct sc_proc *pa, *pb, *pc;
	struct sc_thread *r, *u = NULL;

	memset(&np, 0, sizeof(np));
	np.mistaken = mistaken;
	if (sc_proc_create(m, "target", &pa) != 0 ||
	    sc_proc_create(m, "requester", &pb) != 0 ||
	    sc_proc_create(m, "reuser", &pc) != 0 ||
	    sc_thread_create(pa, "target", exp_np_target, NULL,
	    &np.target) != 0) {
		snprintf(why, len, "cannot create the threads");
		return (1);
	}
	np.target_proc = pa;
	np.target_gen = sc_thread_gen(np.target);
	if (sc_thread_create(pb, "requester", exp_np_requester, &np,
	    &r) != 0) {
		snprintf(why, len, "cannot create the requester");
		return (1);
	}
	/* The target exits; once joined, its struct goes to the zone, and
	 * the next thread created takes it. */
	(void)sc_thread_join(np.target);
	if (sc_thread_create(pc, "reuser", exp_np_other, NULL, &u) != 0)
		u = NULL;
	(void)EXP_WAIT(atomic_load(&exp_rdone) != 0);
	atomic_store(&exp_stop, 1);
	(void)sc_thread_join(r);
	if (u != NULL)
		(void)sc_thread_join(u);
	if (!atomic_load(&np.bad))
		return (EXP_HELD);
	snprintf(why, len, "a capture of td %d returned 0 with the stack of "
	    "td %d: td %d exited, its struct was reused by td %d, and the "
	    "answer named the same pointer; the requester did not hold td "
	    "%d's proc lock", np.tid0, np.tid1, np.tid0, np.tid1, np.tid0);
	return (EXP_BROKEN);
}

/* ------------------------------------------------------------------------
 * Checking a capture
 * ------------------------------------------------------------------------ */

int
exp_capture_check(int k, struct sc_thread *td, int error,
    const struct sc_stack *st, const char *prefix, int also, char *why,
    size_t len)
{
	if (error == 0 && exp_stack_has(st, prefix))
		return (EXP_HELD);
	if (error != 0 && error == also)
		return (EXP_HELD);
	if (error == 0)
		snprintf(why, len, "capture %d of td %d returned 0 with %d "
		    "frames, none of them its own chain (%s*)", k,
		    sc_thread_tid(td), st->depth, prefix);
	else
		snprintf(why, len, "capture %d of td %d: %s", k,
		    sc_thread_tid(td), sc_errname(error));
	return (EXP_BROKEN);
}

/* ------------------------------------------------------------------------
 * stale-answer
 * ------------------------------------------------------------------------ */

#define EXP_SA_OLD	24	/* the target's turns in the old chain */
#define EXP_SA_CAPTURES	8

static atomic_int exp_sa_phase;	/* 0: old chain, 1: new chain (for good) */

static SC_NOIPA void
exp_sa_old(void *arg)
{
	int i;

	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	for (i = 0; i < EXP_SA_OLD; i++)
		sc_maybe_yield();
	SC_BARRIER();
}

static SC_NOIPA void
exp_sa_new(void *arg)
{
	(void)arg;
	while (!atomic_load(&exp_stop))
		sc_maybe_yield();
	SC_BARRIER();
}

/* The old chain, then (its frames gone from the stack) the new one. */
static SC_NOIPA void
exp_sa_target(void *arg)
{
	exp_sa_old(arg);
	SC_BARRIER();
	atomic_store(&exp_sa_phase, 1);
	exp_sa_new(arg);
	SC_BARRIER();
}

int
exp_stale_answer(struct sc_machine *m, bool mistaken, char *why, size_t len)
{
	struct sc_proc *p;
	struct sc_thread *t;
	struct sc_stack st;
	int error, k, i, phase, bad;

	atomic_store(&exp_sa_phase, 0);
	if ((bad = exp_start1(m, "stale", exp_sa_target, &p, &t, why, len)) !=
	    EXP_HELD && t == NULL)
		return (bad);
	for (k = 0; bad == EXP_HELD && k < EXP_SA_CAPTURES; k++) {
		/* Seen before the capture: the target is in the new chain
		 * from here on, and a capture made now cannot find the old
		 * one. */
		phase = atomic_load(&exp_sa_phase);
		error = sc_stack_save_td_locked(p, t, &st);
		bad = exp_capture_check(k, t, error, &st, "exp_sa_", -1, why,
		    len);
		if (bad == EXP_HELD && error == 0 && phase == 1 &&
		    exp_stack_has(&st, "exp_sa_old")) {
			snprintf(why, len, "capture %d of td %d returned 0 "
			    "with exp_sa_old() on its stack, which td %d had "
			    "left before the capture began: an earlier "
			    "capture's answer (the answer word still named td "
			    "%d) was taken for this one, with its stack", k,
			    sc_thread_tid(t), sc_thread_tid(t),
			    sc_thread_tid(t));
			bad = EXP_BROKEN;
		}
		if (mistaken && bad == EXP_BROKEN && error == ETIMEDOUT)
			snprintf(why, len, "capture %d of td %d: ETIMEDOUT: "
			    "another thread's answer, left in the answer word, "
			    "was taken again at every retry", k,
			    sc_thread_tid(t));
		for (i = 0; i < 3; i++)
			sc_maybe_yield();
	}
	atomic_store(&exp_stop, 1);
	(void)exp_join(t, NULL);
	return (bad);
}

/* ------------------------------------------------------------------------
 * spin-held
 * ------------------------------------------------------------------------ */

#define EXP_SH_CAPTURES	8
#define EXP_SH_YIELDS	4	/* the target's turns between wakeups */

static char exp_sh_chan;	/* the sleeper's wait channel */

static SC_NOIPA void
exp_sh_sleeper(void *arg)
{
	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_stop))
		sc_sleep(&exp_sh_chan, "shsleep");
	SC_BARRIER();
}

/*
 * The target: wakes the sleeper, which needs the channel's chain lock,
 * inside a spinlock section, where the wait for it cannot let interrupts
 * in.
 */
static SC_NOIPA void
exp_sh_waker(void *arg)
{
	int i;

	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_stop)) {
		for (i = 0; i < EXP_SH_YIELDS; i++)
			sc_maybe_yield();
		sc_spinlock_enter();
		sc_wakeup(&exp_sh_chan);
		sc_spinlock_exit();
	}
	SC_BARRIER();
}
SC_CHAIN(exp_sh_target, exp_sh_waker)

static bool
exp_sh_asleep(struct sc_thread *z)
{
	return (sc_thread_state(z) == SC_TDS_INHIBITED &&
	    (sc_thread_inhibitors(z) & SC_TDI_SLEEPING) != 0);
}

int
exp_spin_held(struct sc_machine *m, bool mistaken, char *why, size_t len)
{
	struct sc_proc *p;
	struct sc_thread *z, *t;
	struct sc_stack st;
	struct sc_counters c;
	uint64_t retries;
	int error, k, bad = EXP_HELD;
	bool held;

	if (sc_proc_create(m, "spinheld", &p) != 0 ||
	    sc_thread_create(p, "sleeper", exp_sh_sleeper, NULL, &z) != 0 ||
	    sc_thread_create(p, "target", exp_sh_target, NULL, &t) != 0) {
		snprintf(why, len, "cannot create the threads");
		return (EXP_BROKEN);
	}
	if (!EXP_WAIT(atomic_load(&exp_started) == 2)) {
		snprintf(why, len, "the threads never started");
		bad = EXP_BROKEN;
	}
	for (k = 0; bad == EXP_HELD && k < EXP_SH_CAPTURES; k++) {
		sc_proc_lock(p);
		/*
		 * Asleep, the sleeper's lock is its channel's chain lock.
		 * Awake, it may be the target's own (4BSD's sched_lock, or
		 * ULE's run queue of the same CPU): never kept then, since
		 * taking the target's would recurse.  The final protocol's
		 * caller keeps none (stack_save_td() asserts it).
		 */
		sc_thread_lock(z);
		held = mistaken && exp_sh_asleep(z);
		if (!held)
			sc_thread_unlock(z);
		sc_machine_counters(m, &c);
		retries = c.retry_nocpu + c.retry_idle + c.retry_other;
		sc_thread_lock(t);
		error = sc_stack_save_td(&st, t);
		sc_thread_unlock(t);
		if (held)
			sc_thread_unlock(z);
		sc_proc_unlock(p);
		bad = exp_capture_check(k, t, error, &st, "exp_sh_", -1, why,
		    len);
		sc_machine_counters(m, &c);
		if (held && error == ETIMEDOUT && c.retry_nocpu +
		    c.retry_idle + c.retry_other == retries)
			snprintf(why, len, "capture %d of td %d: ETIMEDOUT "
			    "with no retry: td %d never took the IPI.  The "
			    "caller held td %d's thread lock (the sleep-queue "
			    "chain lock of its channel) across the capture; "
			    "td %d, waking that channel in a spinlock "
			    "section, spun on it with interrupts disabled",
			    k, sc_thread_tid(t),
			    sc_thread_tid(t), sc_thread_tid(z),
			    sc_thread_tid(t));
		sc_maybe_yield();
	}
	atomic_store(&exp_stop, 1);
	if (!exp_join(t, NULL) && bad == EXP_HELD) {
		snprintf(why, len, "the target did not exit");
		bad = EXP_BROKEN;
	}
	(void)exp_join(z, &exp_sh_chan);
	return (bad);
}

/* ------------------------------------------------------------------------
 * nmi-ule, ule-incoming-nocpu
 * ------------------------------------------------------------------------ */

#define EXP_IN_CAPTURES	8

static char exp_in_chan;	/* the target's wait channel */

static SC_NOIPA void
exp_in_sleeper(void *arg)
{
	int i;

	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_stop)) {
		for (i = 0; i < 3; i++)
			sc_maybe_yield();
		if (!atomic_load(&exp_stop))
			sc_sleep(&exp_in_chan, "insleep");
	}
	SC_BARRIER();
}
SC_CHAIN(exp_in_target, exp_in_sleeper)

int
exp_incoming(struct sc_machine *m, bool mistaken, char *why, size_t len)
{
	struct sc_proc *p;
	struct sc_thread *t;
	struct sc_stack st;
	struct sc_counters c;
	uint64_t nocpu0;
	int error, k, also, window = -1, bad;
	char reached[256];

	/* FreeBSD 12's protocol answers EAGAIN for interrupts disabled. */
	also = mistaken ? EAGAIN : -1;
	if ((bad = exp_start1(m, "incoming", exp_in_target, &p, &t, why,
	    len)) != EXP_HELD && t == NULL)
		return (bad);
	reached[0] = '\0';
	for (k = 0; bad == EXP_HELD && k < EXP_IN_CAPTURES; k++) {
		sc_wakeup(&exp_in_chan);
		sc_machine_counters(m, &c);
		nocpu0 = c.retry_nocpu;
		sc_proc_lock(p);
		sc_thread_lock(t);
		/* Under its lock: chosen, cpu_switch() not returned yet. */
		if (sc_thread_state(t) == SC_TDS_RUNNING &&
		    sc_thread_oncpu(t) == SC_NOCPU && window < 0)
			window = k;
		error = sc_stack_save_td(&st, t);
		sc_thread_unlock(t);
		sc_proc_unlock(p);
		bad = exp_capture_check(k, t, error, &st, "exp_in_", also, why,
		    len);
		sc_machine_counters(m, &c);
		if (window == k && bad == EXP_BROKEN)
			snprintf(why + strlen(why), len - strlen(why), "; "
			    "under its thread lock td %d was RUNNING with "
			    "td_oncpu == NOCPU (ULE: chosen, cpu_switch() not "
			    "returned into it yet)", sc_thread_tid(t));
		else if (window == k)
			snprintf(reached, sizeof(reached), "capture %d found "
			    "td %d RUNNING with td_oncpu == NOCPU under its "
			    "thread lock (ULE's window: chosen, its lock "
			    "free, cpu_switch() not returned into it); it "
			    "spun on NOCPU %ju times and returned %s with its "
			    "own chain, %d frames", k, sc_thread_tid(t),
			    (uintmax_t)(c.retry_nocpu - nocpu0),
			    sc_errname(error), st.depth);
		sc_maybe_yield();
	}
	atomic_store(&exp_stop, 1);
	if (!exp_join(t, &exp_in_chan) && bad == EXP_HELD) {
		snprintf(why, len, "the target did not exit");
		bad = EXP_BROKEN;
	}
	if (bad == EXP_HELD && window >= 0) {
		snprintf(why, len, "%s", reached);
		bad = EXP_REACHED;
	}
	return (bad);
}
