/*
 * The clock: a thread preempted in the middle of its chain by a clock
 * interrupt, and captured through its pcb while it waits for its CPU
 * (preempted), or preempted inside a capture's window, between the
 * requester's unlock and the IPI (preempt-in-window).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "scn_target.h"

/* The thread that takes the target's CPU, and keeps it (a critical
 * section) until the capture is done. */
struct scn_hog {
	atomic_int	running;
	atomic_int	release;
};

SC_NOIPA static void
hog_main(void *arg)
{
	struct scn_hog *h = arg;

	sc_critical_enter();
	atomic_store(&h->running, 1);
	while (!atomic_load_explicit(&h->release, memory_order_relaxed))
		__builtin_ia32_pause();
	sc_critical_exit();
	SC_BARRIER();
}

/*
 * Stop the target, then join the hog (released), keeping in *error the
 * first error.  The target first: a hog that never ran waits for its
 * CPU, which the target, spinning without a call, keeps until it exits.
 */
static void
scn_stop_both(struct scn_target *t, struct sc_thread *hog, int *error)
{
	int e;

	if ((e = scn_target_stop(t)) != 0 && *error == 0)
		*error = e;
	if (hog != NULL && (e = sc_thread_join(hog)) != 0 && *error == 0)
		*error = e;
}

/*
 * One CPU.  The target spins in target_main -> spin_outer -> spin_inner
 * without any call into the library; a second thread waits for the CPU.
 * The clock ends the target's slice (hz / 10 ticks) and preempts it at
 * the interrupt's end: the capture, through its pcb, reads mi_switch ...
 * sc__sched_preempt, sc__timerint (the interrupt's frame), spin_inner,
 * spin_outer, target_main.  raced: the target was preempted (not a
 * voluntary switch) and captured off its CPU.
 */
int
scn_preempted(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_hog h = { 0 };
	struct scn_target t;
	struct sc_thread *hog;
	int error, state;

	if ((error = scn_target_start(p, &t, "spinner", 1)) != 0)
		return (error);
	if (sc_thread_create(p, "hog", hog_main, &h, &hog) != 0) {
		(void)scn_target_stop(&t);
		return (ENOMEM);
	}
	/* h and t die with this frame: on every path, the hog and the
	 * target are gone before it returns. */
	if (SCN_WAIT(atomic_load(&h.running))) {
		state = sc_thread_state(t.td);
		scn_capture(p, &t, res);
		res->raced = SCN_CNT(m, preempted) >= 1 &&
		    state == SC_TDS_RUNQ;
	} else
		error = ETIMEDOUT;
	atomic_store(&h.release, 1);
	scn_stop_both(&t, hog, &error);
	return (error);
}

/*
 * preempt-in-window: the requester has seen the target RUNNING, dropped
 * its thread lock and read its td_oncpu (SC_HOOK_SAVE_BEFORE_IPI: the
 * request of that CPU open); before the IPI, the clock ends the target's
 * slice.  (Preempted before td_oncpu is read, the target would be NOCPU:
 * the nocpu-window scenario's path, no IPI.)  A hog made runnable in
 * the window takes the CPU and keeps it (a critical section).
 */
struct scn_window {
	struct scn_hook	h;
	struct sc_proc	*p;
	struct scn_hog	hog;
	struct sc_thread *hogtd;
};

static void
hook_preempt(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_window *w = arg;

	if (point != SC_HOOK_SAVE_BEFORE_IPI || td != w->h.t->td ||
	    atomic_exchange(&w->h.fired, 1))
		return;
	/*
	 * The hog exists only from here on: before the window there was
	 * nothing to preempt the target for, so the requester saw it
	 * RUNNING.  Equal priorities: the hog waits for the target's slice
	 * to end (round robin), not for sched_add()'s preemption.
	 */
	if (sc_thread_create(w->p, "hog", hog_main, &w->hog, &w->hogtd) != 0 ||
	    !SCN_WAIT(atomic_load(&w->hog.running)) ||
	    !scn_in_state(td, SC_TDS_RUNQ))
		atomic_store(&w->h.failed, 1);
}

/*
 * One CPU.  The IPI_TRACE that follows finds the hog on the target's CPU:
 * the handler answers with curthread, the hog, not the target; the
 * requester sees another thread's answer (retry_other), takes the thread
 * lock again, finds the target off its CPU (RUNQ) and walks its pcb:
 * mi_switch ... sc__sched_preempt, sc__timerint, spin_inner, spin_outer,
 * target_main, as in "preempted".  FreeBSD's stack_save_td() (13 and
 * later, sys/x86/x86/stack_machdep.c) drops the thread lock across the
 * IPI for the same reason and retries the same way.  raced: the hook ran
 * in the window, the target was preempted there and the answer was
 * another thread's.
 */
int
scn_preempt_in_window(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_window w = { .p = p };
	struct scn_target t;
	uint64_t preempted, retried;
	int error;

	if ((error = scn_target_start(p, &t, "spinner", 1)) != 0)
		return (error);
	preempted = SCN_CNT(m, preempted);
	retried = SCN_CNT(m, retry_other);
	error = scn_run_hooked(p, &t, &w.h, hook_preempt, res);
	res->raced = res->raced && SCN_CNT(m, preempted) > preempted &&
	    SCN_CNT(m, retry_other) > retried;
	/* As in scn_preempted(): t, and w.hog, die with this frame. */
	atomic_store(&w.hog.release, 1);
	scn_stop_both(&t, w.hogtd, &error);
	return (error);
}
