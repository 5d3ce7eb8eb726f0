/*
 * The clock: a thread preempted in the middle of its chain by a clock
 * interrupt, and captured through its pcb while it waits for its CPU.
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
	if (sc_thread_create(p, "hog", hog_main, &h, &hog) != 0)
		return (ENOMEM);
	if (!SCN_WAIT(atomic_load(&h.running)))
		return (ETIMEDOUT);
	state = sc_thread_state(t.td);
	scn_capture(p, &t, res);
	res->raced = SCN_CNT(m, preempted) >= 1 && state == SC_TDS_RUNQ;
	atomic_store(&h.release, 1);
	if ((error = sc_thread_join(hog)) != 0)
		return (error);
	return (scn_target_stop(&t));
}
