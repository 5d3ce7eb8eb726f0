/*
 * The reviewers' catches (cfg.mistakes, and a caller's own mistakes): the
 * answer word not cleared (kib), a spin lock held across the capture and
 * no proc lock held (mjg).  Each scenario makes the mistake happen and
 * shows what it costs; without it, the final protocol refuses or is right.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "scn_target.h"

/*
 * kib's catch: with the answer word not cleared before the IPI, the first
 * capture's answer is still there when the second one looks, and is taken
 * for it, stack and all, although the target's CPU has interrupts disabled
 * and no handler can have answered.  (Run without the mistake, the same
 * steps give ETIMEDOUT.)
 */
int
scn_stale_answer(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct sc_stack first;
	struct scn_target t;
	int error, i;

	if ((error = scn_target_start(p, &t, "stale", 1)) != 0)
		return (error);
	scn_capture(p, &t, res);
	if (res->error != 0)
		return (EIO);
	sc_stack_copy(&res->stack, &first);
	atomic_store(&t.cmd, CMD_CLI_HOLD);
	if (!SCN_WAIT(atomic_load(&t.acked) >= CMD_CLI_HOLD))
		return (ETIMEDOUT);
	scn_capture(p, &t, res);
	/* The race happened if an answer came that no handler gave. */
	res->raced = res->error == 0 && res->stack.depth == first.depth &&
	    SCN_CNT(m, trace_answered) == 1;
	for (i = 0; res->raced && i < first.depth; i++)
		if (res->stack.pcs[i] != first.pcs[i])
			res->raced = 0;
	if (res->error != 0 && res->error != ETIMEDOUT)
		res->raced = 0;
	/* Interrupts back on: the deferred IPI finds no open request. */
	atomic_store(&t.cmd, CMD_NONE);
	if (!SCN_WAIT(SCN_CNT(m, trace_stale) >= 1))
		return (ETIMEDOUT);
	return (scn_target_stop(&t));
}

/*
 * mjg's catch: the requester holds another spin lock (here the thread lock
 * of a sleeping thread: its sleep-queue chain lock) that the target needs.
 * The target wants it inside a spinlock section of its own, so its CPU
 * waits with interrupts disabled and never takes the IPI: only the
 * bounded wait ends it.  (A target that wanted it holding nothing, e.g.
 * to sleep on that channel, would take the IPI between attempts, as
 * FreeBSD's CPU does: spin-wait-intr.  Without the mistake,
 * stack_save_td() refuses with a KASSERT.)
 */
int
scn_spin_held(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_hook h = { .cmd = CMD_CLI_LOCK };
	struct scn_target z, t;
	int error;

	if ((error = scn_target_start(p, &z, "sleeper", 1)) != 0)
		return (error);
	atomic_store(&z.cmd, CMD_SLEEP);
	if (!SCN_WAIT(atomic_load(&z.acked) >= CMD_SLEEP) ||
	    !SCN_WAIT(scn_in_state(z.td, SC_TDS_INHIBITED)))
		return (ETIMEDOUT);
	if ((error = scn_target_start(p, &t, "needs-lock", 1)) != 0)
		return (error);
	t.lock_td = z.td;	/* asleep: its lock is the chain lock */
	h.t = &t;
	sc_machine_set_hook(m, scn_hook_spin_on_lock, &h);
	sc_proc_lock(p);
	sc_thread_lock(z.td);		/* the chain lock of &z */
	sc_thread_lock(t.td);
	res->error = sc_stack_save_td(&res->stack, t.td);
	sc_thread_unlock(t.td);
	sc_thread_unlock(z.td);
	sc_proc_unlock(p);
	sc_machine_set_hook(m, NULL, NULL);
	res->target_tid = sc_thread_tid(t.td);
	res->raced = atomic_load(&h.fired) && !atomic_load(&h.failed);
	if (atomic_load(&h.fired) && !SCN_WAIT(SCN_CNT(m, trace_stale) >= 1))
		return (ETIMEDOUT);
	if ((error = scn_target_stop(&t)) != 0)
		return (error);
	return (scn_target_stop(&z));
}

/*
 * mjg's other catch, both faces: the proc lock is what keeps a running
 * target from exiting or being swapped out while stack_save_td() has its
 * thread lock dropped.  These scenarios capture the way a caller that
 * forgot it does: the thread lock only.  Without SC_MISTAKE_NO_PROC_LOCK,
 * stack_save_td() refuses with a KASSERT before it drops anything.
 */
struct scn_noproc {
	struct scn_target *t;		/* the target */
	struct scn_target *n;		/* reuse: the new thread */
	struct sc_proc	*np;		/* reuse: the new thread's proc */
	int		swap;		/* swap the target out, not reuse it */
	_Atomic int	fired;
	_Atomic int	done;		/* reused, or swapped out */
	_Atomic int	failed;
};

/*
 * Right after the requester dropped the thread lock, with no proc lock
 * held: either the target exits, is joined (its struct goes back to
 * thread_zone), and a new thread of another proc takes the same struct
 * and runs; or the target goes to sleep and is swapped out.
 */
static void
hook_noproc(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_noproc *h = arg;

	if (point != SC_HOOK_SAVE_UNLOCKED || td != h->t->td ||
	    atomic_exchange(&h->fired, 1))
		return;
	if (h->swap) {
		atomic_store(&h->t->cmd, CMD_SLEEP);
		if (!SCN_WAIT(scn_in_state(td, SC_TDS_INHIBITED)) ||
		    sc_thread_swapout(td) != 0)
			atomic_store(&h->failed, 1);
		else
			atomic_store(&h->done, 1);
		return;
	}
	atomic_store(&h->t->cmd, CMD_EXIT);
	/* Until td has exited (been reaped): the join returns at once. */
	if (!SCN_WAIT(sc_thread_exited(td)) || sc_thread_join(td) != 0 ||
	    scn_target_start_fn(h->np, h->n, "reuser", 1, true, 0) != 0 ||
	    h->n->td != td)
		atomic_store(&h->failed, 1);
	else
		atomic_store(&h->done, 1);
}

/* The capture of a caller that forgot the proc lock. */
static void
capture_no_proc_lock(struct scn_target *t, struct scn_noproc *h,
    struct scn_result *res)
{
	struct sc_machine *m = t->m;

	h->t = t;
	sc_machine_set_hook(m, hook_noproc, h);
	res->target_tid = sc_thread_tid(t->td);
	sc_thread_lock(t->td);
	res->error = sc_stack_save_td(&res->stack, t->td);
	sc_thread_unlock(t->td);
	res->answer_tid = sc_thread_tid(t->td);
	sc_machine_set_hook(m, NULL, NULL);
}

/*
 * Misattribution: the answer names td, the pointer the requester asked
 * for, so stack_save_td() takes it; but td's thread exited meanwhile and
 * the struct is another thread's now (another tid, another proc): the
 * stack returned is that thread's.  Without the mistake: a KASSERT,
 * EINVAL, nothing dropped.
 */
int
scn_no_proc_lock(struct sc_proc *p, struct scn_result *res)
{
	struct scn_noproc h = { 0 };
	struct scn_target t, n;
	int error;

	memset(&n, 0, sizeof(n));
	h.n = &n;
	if ((error = sc_proc_create(sc_proc_machine(p), "newproc", &h.np)) !=
	    0)
		return (error);
	if ((error = scn_target_start(p, &t, "victim", 1)) != 0)
		return (error);
	capture_no_proc_lock(&t, &h, res);
	if (atomic_load(&h.failed))
		return (ETIMEDOUT);
	res->raced = atomic_load(&h.done) && res->error == 0 &&
	    res->answer_tid != res->target_tid &&
	    sc_thread_proc(t.td) == h.np;
	/* The struct is the new thread's: stop that one, once. */
	return (atomic_load(&h.done) ? scn_target_stop(&n) :
	    scn_target_stop(&t));
}

/*
 * The swap-out after the unlock: the target goes to sleep and is swapped
 * out while the requester waits for it to get a CPU; on the relock,
 * stack_save_td() finds it not running and would walk its pcb, on an
 * unmapped stack.  The KASSERT says what the kernel would have done.
 */
int
scn_no_proc_lock_swap(struct sc_proc *p, struct scn_result *res)
{
	struct scn_noproc h = { .swap = 1 };
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "swapped", 1)) != 0)
		return (error);
	capture_no_proc_lock(&t, &h, res);
	if (atomic_load(&h.failed))
		return (ETIMEDOUT);
	res->raced = atomic_load(&h.done) && res->error == EINVAL &&
	    res->stack.depth == 0;
	if (atomic_load(&h.done) && sc_thread_swapin(t.td) != 0)
		return (EIO);
	return (scn_target_stop(&t));
}
