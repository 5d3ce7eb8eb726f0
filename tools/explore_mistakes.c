/*
 * The explorer's bodies for the mistakes that no reviewer named
 * (explore.h), in the style of explore_bodies.c: no hook, the seed
 * chooses the interleaving.  answer-target runs explore_snapshot.c's
 * body.
 *
 * - clear-after-ipi (SC_MISTAKE_CLEAR_AFTER_IPI): the target spins in
 *   one call chain for good; the test thread captures it six times.
 *   Invariant: every capture returns 0 with the target's chain.  With the
 *   mistake the requester clears the answer word after the IPI; when the
 *   target's CPU takes the IPI first (the seed must pick it at the one
 *   point between the send and the clear), its answer is wiped, and the
 *   capture waits for another until the bound: ETIMEDOUT.
 * - nocpu-offcpu (SC_MISTAKE_NOCPU_OFFCPU): the target sleeps in one
 *   chain; woken, it scrubs the stack below its frame (its sleep's old
 *   frames), yields a few times, and sleeps again; the test thread wakes
 *   it and captures it, eight times.  Invariant: a capture that returns 0
 *   holds the target's chain.  Under ULE the woken thread is RUNNING with
 *   td_oncpu == NOCPU from when a CPU chooses it until cpu_switch()
 *   returns into it, with its lock free; a requester that reads NOCPU
 *   then, and with the mistake takes its lock again and walks its pcb,
 *   may do so once it has run on and scrubbed: the pcb's frame pointer
 *   points at zeros, and the capture returns 0 with no frame, or with
 *   frames that are not its chain.  Under 4BSD the incoming thread sets
 *   td_oncpu under the sched_lock, its thread lock, and the target never
 *   leaves its CPU running: a requester reads NOCPU only for a target
 *   that goes to sleep, whose pcb is saved before the lock is free.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "explore_body.h"

/* ------------------------------------------------------------------------
 * clear-after-ipi
 * ------------------------------------------------------------------------ */

#define EXP_CA_CAPTURES	6

static SC_NOIPA void
exp_ca_spin(void *arg)
{
	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_stop))
		sc_maybe_yield();
	SC_BARRIER();
}
SC_CHAIN(exp_ca_target, exp_ca_spin)

int
exp_clear_after_ipi(struct sc_machine *m, bool mistaken, char *why,
    size_t len)
{
	struct sc_proc *p;
	struct sc_thread *t;
	struct sc_stack st;
	struct sc_counters c0, c1;
	int error, k, bad;

	(void)mistaken;
	if ((bad = exp_start1(m, "clear", exp_ca_target, &p, &t, why, len)) !=
	    EXP_HELD && t == NULL)
		return (bad);
	for (k = 0; bad == EXP_HELD && k < EXP_CA_CAPTURES; k++) {
		sc_machine_counters(m, &c0);
		error = sc_stack_save_td_locked(p, t, &st);
		sc_machine_counters(m, &c1);
		bad = exp_capture_check(k, t, error, &st, "exp_ca_", -1, why,
		    len);
		if (error == ETIMEDOUT && c1.trace_answered > c0.trace_answered)
			snprintf(why, len, "capture %d of td %d: ETIMEDOUT, "
			    "although td %d's CPU answered (trace_answered "
			    "+%ju): the answer came before the requester "
			    "cleared the answer word, after the IPI, which "
			    "wiped it; the requester waited for another until "
			    "the bound", k, sc_thread_tid(t), sc_thread_tid(t),
			    (uintmax_t)(c1.trace_answered - c0.trace_answered));
		sc_maybe_yield();
	}
	atomic_store(&exp_stop, 1);
	(void)exp_join(t, NULL);
	return (bad);
}

/* ------------------------------------------------------------------------
 * nocpu-offcpu
 * ------------------------------------------------------------------------ */

#define EXP_NC_CAPTURES	8
#define EXP_NC_SCRUB	2048	/* bytes below the frame: a sleep's frames */

static char exp_nc_chan;	/* the target's wait channel */

/* Zero the stack below the caller's frame, where its sleep's frames
 * were. */
static SC_NOIPA void
exp_nc_scrub(void)
{
	volatile char buf[EXP_NC_SCRUB];
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = 0;
	SC_BARRIER();
}

static SC_NOIPA void
exp_nc_sleeper(void *arg)
{
	int i;

	(void)arg;
	atomic_fetch_add(&exp_started, 1);
	while (!atomic_load(&exp_stop)) {
		exp_nc_scrub();
		for (i = 0; i < 3; i++)
			sc_maybe_yield();
		if (!atomic_load(&exp_stop))
			sc_sleep(&exp_nc_chan, "ncsleep");
	}
	SC_BARRIER();
}
SC_CHAIN(exp_nc_target, exp_nc_sleeper)

int
exp_nocpu_offcpu(struct sc_machine *m, bool mistaken, char *why, size_t len)
{
	struct sc_proc *p;
	struct sc_thread *t;
	struct sc_stack st;
	int error, k, bad;

	if ((bad = exp_start1(m, "nocpu", exp_nc_target, &p, &t, why, len)) !=
	    EXP_HELD && t == NULL)
		return (bad);
	for (k = 0; bad == EXP_HELD && k < EXP_NC_CAPTURES; k++) {
		sc_wakeup(&exp_nc_chan);
		error = sc_stack_save_td_locked(p, t, &st);
		bad = exp_capture_check(k, t, error, &st, "exp_nc_", -1, why,
		    len);
		if (mistaken && bad == EXP_BROKEN && error == 0)
			snprintf(why + strlen(why), len - strlen(why), ": "
			    "td %d's td_oncpu read NOCPU (a switch bringing "
			    "it in), and its pcb was walked as if it were off "
			    "its CPU once its lock was free again; by then it "
			    "ran on and had scrubbed the memory of the frames "
			    "its pcb was saved with", sc_thread_tid(t));
		sc_maybe_yield();
	}
	atomic_store(&exp_stop, 1);
	if (!exp_join(t, &exp_nc_chan) && bad == EXP_HELD) {
		snprintf(why, len, "the target did not exit");
		bad = EXP_BROKEN;
	}
	return (bad);
}
