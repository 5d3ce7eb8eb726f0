/*
 * The explorer (explore.h): two scenarios of the kernel's history with
 * their hooks removed.  Each body runs a small workload and checks the
 * invariant that the mistake breaks; deterministic mode (sim_det.c)
 * chooses the interleaving, the seed fixes it.
 *
 * - lock-held (SC_MISTAKE_HOLD_THREAD_LOCK): one CPU, two threads that
 *   spin politely and so yield to each other; the test thread captures
 *   one of them five times.  Invariant: no capture times out.  With the
 *   mistake the requester keeps the target's thread lock across the IPI;
 *   when the target reaches sc_yield() first, its CPU spins on that lock
 *   with interrupts disabled and never takes the IPI.
 * - no-proc-lock (SC_MISTAKE_NO_PROC_LOCK): a simulated requester
 *   captures a thread that exits after a while, which the test thread
 *   joins, and whose struct a new thread of another process then takes.
 *   Invariant: a capture that returns 0 is of the thread it was asked
 *   for (the struct's generation is the same before and after).  With the
 *   mistake the requester does not hold the target's proc lock.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "explore.h"
#include "stackcap/testing.h"

/* Steps that a body's own waits may take before it gives up. */
#define EXP_WAIT_STEPS	200000
/* The bounded wait of a capture, in virtual time (a step, 1 us). */
#define EXP_TIMEOUT_NS	(20L * 1000 * 1000)

/* Poll cond, a scheduling point per turn; false after the bound. */
#define EXP_WAIT(cond) ({						\
	long exp_n_;							\
									\
	for (exp_n_ = 0; !(cond) && exp_n_ < EXP_WAIT_STEPS; exp_n_++)	\
		sc_maybe_yield();					\
	(bool)(cond);							\
})

static atomic_int exp_stop, exp_started, exp_rdone;

/* ------------------------------------------------------------------------
 * lock-held
 * ------------------------------------------------------------------------ */

static SC_NOIPA void
exp_lh_spin(void *arg)
{
	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_stop))
		sc_maybe_yield();
	SC_BARRIER();
}

static int
exp_lock_held(struct sc_machine *m, bool mistaken, char *why, size_t len)
{
	struct sc_proc *p;
	struct sc_thread *t, *u;
	struct sc_stack st;
	int error, k, bad = 0;

	(void)mistaken;
	if (sc_proc_create(m, "lockheld", &p) != 0 ||
	    sc_thread_create(p, "target", exp_lh_spin, NULL, &t) != 0 ||
	    sc_thread_create(p, "other", exp_lh_spin, NULL, &u) != 0) {
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
			    "it spun for that lock in sc_yield() with "
			    "interrupts disabled", k, sc_thread_tid(t));
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
	return (bad);
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

static int
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
		return (0);
	snprintf(why, len, "a capture of td %d returned 0 with the stack of "
	    "td %d: td %d exited, its struct was reused by td %d, and the "
	    "answer named the same pointer; the requester did not hold td "
	    "%d's proc lock", np.tid0, np.tid1, np.tid0, np.tid1, np.tid0);
	return (1);
}

/* ------------------------------------------------------------------------
 * Running them
 * ------------------------------------------------------------------------ */

const struct exp_body exp_bodies[] = {
	{ .name = "lock-held", .run = exp_lock_held, .ncpu = 1,
	  .pct_steps = 100,
	  .mistakes = SC_MISTAKE_HOLD_THREAD_LOCK,
	  .summary = "the thread lock kept across the IPI; no hook" },
	{ .name = "no-proc-lock", .run = exp_no_proc_lock, .ncpu = 2,
	  .pct_steps = 2000,
	  .mistakes = SC_MISTAKE_NO_PROC_LOCK,
	  .summary = "a running thread captured without its proc lock; "
	  "no hook" },
};
const size_t exp_nbodies = sizeof(exp_bodies) / sizeof(exp_bodies[0]);

const struct exp_body *
exp_find(const char *name)
{
	size_t i;

	for (i = 0; i < exp_nbodies; i++)
		if (strcmp(exp_bodies[i].name, name) == 0)
			return (&exp_bodies[i]);
	return (NULL);
}

int
exp_run(const struct exp_body *b, uint64_t seed, int pct, bool mistaken,
    size_t trace_events, void (*show)(struct sc_machine *m, void *arg),
    void *arg, char *why, size_t len)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	int error, bad;

	sc_machine_config_init(&cfg);
	cfg.ncpu = b->ncpu;
	cfg.seed = seed;
	cfg.sim_pct_depth = pct;
	cfg.sim_pct_steps = b->pct_steps;
	cfg.capture_timeout_ns = EXP_TIMEOUT_NS;
	cfg.trace_events = trace_events;
	cfg.mistakes = mistaken ? b->mistakes : 0;
	if ((error = sc_machine_create(&cfg, &m)) != 0)
		return (error);
	atomic_store(&exp_stop, 0);
	atomic_store(&exp_started, 0);
	atomic_store(&exp_rdone, 0);
	why[0] = '\0';
	bad = b->run(m, mistaken, why, len);
	if (show != NULL)
		show(m, arg);
	sc_machine_destroy(m);
	return (bad);
}

int
exp_search(const struct exp_body *b, uint64_t first, int runs, int pct,
    bool mistaken, uint64_t *found, int *nrun)
{
	char why[512];
	uint64_t seed;
	int error;

	*found = 0;
	for (*nrun = 0, seed = first; *nrun < runs; seed++) {
		(*nrun)++;
		error = exp_run(b, seed, pct, mistaken, 0, NULL, NULL, why,
		    sizeof(why));
		if (error == 1) {
			*found = seed;
			return (0);
		}
		if (error != 0)
			return (error);
	}
	return (0);
}
