/*
 * The per-CPU request slots and sc_machine_snapshot(): two spinners, each
 * bound to a CPU of its own; a snapshot of them and a sleeper, one whose
 * round must retry, and two requesters at once (serial or parallel).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "scn_target.h"

/* Until td runs on cpu. */
static bool
scn_oncpu(struct sc_thread *td, int cpu)
{
	return (sc_thread_state(td) == SC_TDS_RUNNING &&
	    sc_thread_oncpu(td) == cpu);
}

/*
 * Two spinners, each in a process of its own and bound to a CPU of its
 * own (cpu0, cpu1), so that neither ever waits for the other's CPU.
 */
static int
start_pair(struct sc_proc *p, struct scn_target t[2], struct sc_proc **p2)
{
	int error;

	if (sc_proc_create(sc_proc_machine(p), "scenario2", p2) != 0)
		return (ENOMEM);
	/* Not polite: under 4BSD a polite spinner yields to every thread
	 * on the global queue and, bound, takes its CPU again at once, two
	 * trace events a turn until an idle CPU takes that thread. */
	if ((error = scn_target_start_fn(p, &t[0], "spinner0", 1, false,
	    1)) != 0 || (error = scn_target_start_fn(*p2, &t[1], "spinner1",
	    1, false, 2)) != 0)
		return (error);
	/* Bound: each is on its CPU for good once it got there. */
	return (SCN_WAIT(scn_oncpu(t[0].td, 0)) &&
	    SCN_WAIT(scn_oncpu(t[1].td, 1)) ? 0 : ETIMEDOUT);
}

static int
stop_pair(struct scn_target t[2])
{
	int error = scn_target_stop(&t[0]);

	return (error != 0 ? error : scn_target_stop(&t[1]));
}

/* Is every RUNNING thread of m on a CPU (no switch under way)? */
static bool
scn_settled(struct sc_machine *m)
{
	struct sc_thread *tds[32];
	struct sc_proc *procs[8];
	size_t i, j, np, nt;

	sc_machine_procs(m, procs, 8, &np);
	for (i = 0; i < np && i < 8; i++) {
		sc_proc_threads(procs[i], tds, 32, &nt);
		for (j = 0; j < nt && j < 32; j++)
			if (sc_thread_state(tds[j]) == SC_TDS_RUNNING &&
			    sc_thread_oncpu(tds[j]) == SC_NOCPU)
				return (false);
	}
	return (true);
}

/* The snapshot of the whole machine into res. */
static int
snapshot(struct sc_proc *p, struct scn_target t[2], struct scn_result *res)
{
	int error;

	error = sc_machine_snapshot(sc_proc_machine(p), res->snap,
	    SCN_SNAP_MAX, &res->nsnap);
	res->error = error;
	res->snap_tids[0] = sc_thread_tid(t[0].td);
	res->snap_tids[1] = sc_thread_tid(t[1].td);
	return (error);
}

int
scn_snapshot(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t[2], s;
	struct sc_proc *p2;
	int error;

	if ((error = start_pair(p, t, &p2)) != 0 ||
	    (error = scn_target_start(p, &s, "sleeper", 0)) != 0)
		return (error);
	atomic_store(&s.cmd, CMD_SLEEP);
	if (!SCN_WAIT(scn_in_state(s.td, SC_TDS_INHIBITED)))
		return (ETIMEDOUT);
	res->sleeper_tid = sc_thread_tid(s.td);
	/* The sleeper's CPU has switched to its idle thread: one round. */
	res->raced = SCN_WAIT(scn_settled(sc_proc_machine(p)));
	if ((error = snapshot(p, t, res)) != 0)
		return (error);
	if ((error = scn_target_stop(&s)) != 0)
		return (error);
	return (stop_pair(t));
}

/*
 * Right before the round's IPIs, spinner0 sleeps and cpu0 runs its idle
 * thread, which answers.  The idle thread, not running when first looked
 * at, runs by the time it is walked: both go to the next round, which
 * walks spinner0's pcb and interrupts cpu0 again for its idle thread.
 */
int
scn_snapshot_retry(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .point = SC_HOOK_SAVE_BEFORE_IPI,
	    .cmd = CMD_SLEEP, .wait_for = SC_TDS_INHIBITED };
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_target t[2];
	struct sc_proc *p2, *idle;
	size_t n;
	int error;

	if ((error = start_pair(p, t, &p2)) != 0)
		return (error);
	/* The hook returns once cpu0 runs its idle thread. */
	sc_machine_procs(m, &idle, 1, &n);
	sc_proc_threads(idle, &h.other, 1, &n);
	h.t = &t[0];
	sc_machine_set_hook(m, scn_hook_command, &h);
	error = snapshot(p, t, res);
	sc_machine_set_hook(m, NULL, NULL);
	res->raced = atomic_load(&h.fired) && !atomic_load(&h.failed);
	if (error != 0)
		return (error);
	if (atomic_load(&h.failed))
		return (ETIMEDOUT);
	return (stop_pair(t));
}

/* The second requester: a plain pthread that captures t[1] when told. */
struct scn_req2 {
	struct sc_proc	*p;
	struct scn_target *t;
	struct scn_result res;
	_Atomic int	go, done;
	_Atomic int	overlapped;	/* done when the hook returned */
	_Atomic int	leaving;	/* makes no more calls */
};

static void *
req2_main(void *arg)
{
	struct scn_req2 *r = arg;

	if (SCN_WAIT(atomic_load(&r->go) >= 1)) {
		scn_capture(r->p, r->t, &r->res);
		atomic_store(&r->done, 1);
	}
	atomic_store(&r->leaving, 1);
	return (NULL);
}

/*
 * With the first request open (before its IPI), start the second
 * requester and wait until its capture is done, or until it waits for a
 * capture lock.
 */
static void
hook_second(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_req2 *r = arg;

	if (point != SC_HOOK_SAVE_BEFORE_IPI || td == r->t->td ||
	    atomic_exchange(&r->go, 1))
		return;
	(void)SCN_WAIT(atomic_load(&r->done) ||
	    SCN_CNT(r->t->m, capture_lock_waits) != 0);
	/* Still before the first request's IPI. */
	atomic_store(&r->overlapped, atomic_load(&r->done));
}

int
scn_two_requesters(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_target t[2];
	struct scn_req2 r;
	struct sc_proc *p2;
	pthread_t th;
	int error;

	if ((error = start_pair(p, t, &p2)) != 0)
		return (error);
	memset(&r, 0, sizeof(r));
	r.p = p2;
	r.t = &t[1];
	if (pthread_create(&th, NULL, req2_main, &r) != 0)
		return (EAGAIN);
	sc_machine_set_hook(m, hook_second, &r);
	scn_capture(p, &t[0], res);
	res->overlapped = atomic_load(&r.overlapped);
	sc_machine_set_hook(m, NULL, NULL);
	atomic_store(&r.go, 1);
	/* Deterministic mode: a join would block holding the run token that
	 * the requester's exit needs; wait at points until it leaves. */
	(void)SCN_WAIT(atomic_load(&r.leaving));
	(void)pthread_join(th, NULL);
	res->raced = atomic_load(&r.done);
	res->error2 = r.res.error;
	return (stop_pair(t));
}
