/*
 * The paths of sc_stack_save_td(), one scenario each: a running target,
 * one in user mode, the switch away after the unlock, the idle CPU's and
 * another thread's answer, the NOCPU window, interrupts disabled, the lost
 * IPI, and the thread lock held across the IPI (what goes wrong).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "scn_target.h"

int
scn_running(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "runner", 0)) != 0)
		return (error);
	scn_capture(p, &t, res);
	res->raced = 1;
	return (scn_target_stop(&t));
}

int
scn_user_mode(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "user", 0)) != 0)
		return (error);
	atomic_store(&t.cmd, CMD_USER);
	if (!SCN_WAIT(atomic_load(&t.acked) >= CMD_USER))
		return (ETIMEDOUT);
	scn_capture(p, &t, res);
	res->raced = 1;
	atomic_store(&t.cmd, CMD_NONE);
	return (scn_target_stop(&t));
}

int
scn_switch_off(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .point = SC_HOOK_SAVE_UNLOCKED,
	    .cmd = CMD_SLEEP, .wait_for = SC_TDS_INHIBITED };
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "sleeper", 0)) != 0)
		return (error);
	error = scn_run_hooked(p, &t, &h, scn_hook_command, res);
	return (error != 0 ? error : scn_target_stop(&t));
}

int
scn_idle_cpu(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .point = SC_HOOK_SAVE_BEFORE_IPI,
	    .cmd = CMD_SLEEP, .wait_for = SC_TDS_INHIBITED };
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "idler", 0)) != 0)
		return (error);
	error = scn_run_hooked(p, &t, &h, scn_hook_command, res);
	return (error != 0 ? error : scn_target_stop(&t));
}

/* A thread that spins without giving up its CPU until told. */
static void
hog_main(void *arg)
{
	_Atomic int *stop = arg;

	while (!atomic_load(stop))
		;
}

/* One CPU: the target and a hog that waits on the run queue. */
static int
start_with_hog(struct sc_proc *p, struct scn_target *t, const char *name,
    _Atomic int *stop, struct sc_thread **hogp)
{
	int error;

	if ((error = scn_target_start(p, t, name, 1)) != 0)
		return (error);
	if (sc_thread_create(p, "hog", hog_main, stop, hogp) != 0)
		return (ENOMEM);
	return (SCN_WAIT(scn_in_state(*hogp, SC_TDS_RUNQ)) ? 0 : ETIMEDOUT);
}

static int
stop_with_hog(struct scn_target *t, _Atomic int *stop, struct sc_thread *hog)
{
	atomic_store(stop, 1);
	sc_thread_join(hog);
	return (scn_target_stop(t));
}

int
scn_other_thread(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .point = SC_HOOK_SAVE_BEFORE_IPI,
	    .cmd = CMD_YIELD, .wait_for = SC_TDS_RUNQ };
	struct sc_thread *hog;
	_Atomic int stop = 0;
	struct scn_target t;
	int error;

	if ((error = start_with_hog(p, &t, "yielder", &stop, &hog)) != 0)
		return (error);
	h.other = hog;
	error = scn_run_hooked(p, &t, &h, scn_hook_command, res);
	return (error != 0 ? error : stop_with_hog(&t, &stop, hog));
}

/*
 * The requester reads td_oncpu while the target is inside its switch,
 * RUNNING but NOCPU: hold the switch there (interrupts are off, so only
 * spin, bounded) until the requester has counted the NOCPU spin.
 */
static void
hook_nocpu(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_hook *h = arg;

	if (td != h->t->td)
		return;
	if (point == SC_HOOK_SAVE_UNLOCKED && !atomic_exchange(&h->fired, 1)) {
		atomic_store(&h->t->cmd, CMD_YIELD);
		if (!SCN_WAIT(atomic_load(&h->in_window) >= 1))
			atomic_store(&h->failed, 1);
	} else if (point == SC_HOOK_SWITCH_NOCPU &&
	    atomic_load(&h->fired) && !atomic_exchange(&h->in_window, 1)) {
		if (!SCN_WAIT(SCN_CNT(h->t->m, retry_nocpu) >= 1))
			atomic_store(&h->failed, 1);
	}
}

int
scn_nocpu_window(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .point = SC_HOOK_SAVE_UNLOCKED };
	struct sc_thread *hog;
	_Atomic int stop = 0;
	struct scn_target t;
	int error;

	if ((error = start_with_hog(p, &t, "switcher", &stop, &hog)) != 0)
		return (error);
	error = scn_run_hooked(p, &t, &h, hook_nocpu, res);
	if (error == 0 && !atomic_load(&h.in_window))
		error = ETIMEDOUT;
	return (error != 0 ? error : stop_with_hog(&t, &stop, hog));
}

int
scn_interrupts_disabled(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "cli", 0)) != 0)
		return (error);
	atomic_store(&t.cmd, CMD_CLI);
	if (!SCN_WAIT(atomic_load(&t.acked) >= CMD_CLI))
		return (ETIMEDOUT);
	scn_capture(p, &t, res);
	res->raced = 1;
	return (scn_target_stop(&t));
}

int
scn_lost_ipi(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "deaf", 0)) != 0)
		return (error);
	atomic_store(&t.cmd, CMD_BLOCK);
	if (!SCN_WAIT(atomic_load(&t.acked) >= CMD_BLOCK))
		return (ETIMEDOUT);
	scn_capture(p, &t, res);
	res->raced = 1;
	/* Unblock: the late IPI finds no open request. */
	atomic_store(&t.cmd, CMD_NONE);
	if (!SCN_WAIT(SCN_CNT(m, trace_stale) >= 1))
		return (ETIMEDOUT);
	return (scn_target_stop(&t));
}

/*
 * The thread lock held across the IPI, where FreeBSD deadlocks too: the
 * target goes to sleep, takes its channel's chain lock, then needs its
 * thread lock, which the requester holds.  Holding the chain lock, its
 * CPU waits with interrupts disabled (a wait for the only spin lock would
 * let the IPI in: spin-wait-intr).
 */
int
scn_lock_held(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_hook h = { .cmd = CMD_SLEEP };
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "victim", 0)) != 0)
		return (error);
	error = scn_run_hooked(p, &t, &h, scn_hook_spin_on_lock, res);
	/* The lock is free again: the target sleeps, the IPI is late. */
	if (error == 0 && !SCN_WAIT(SCN_CNT(m, trace_stale) >= 1))
		error = ETIMEDOUT;
	return (error != 0 ? error : scn_target_stop(&t));
}

/*
 * FreeBSD's spin wait lets interrupts in between attempts when the CPU
 * holds no other spin lock.  The target goes to sleep on a channel whose
 * chain lock another thread (the holder) keeps; it waits for it holding
 * nothing, its CPU takes the IPI during the wait, and the stack it answers
 * with runs through the wait.  Then the holder lets go, the target
 * sleeps, and the three stop in an order that leaves a CPU to each.
 */
int
scn_spin_wait_intr(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .cmd = CMD_SLEEP };
	struct scn_target z, o, t;
	int error;

	if ((error = scn_target_start(p, &z, "sleeper", 1)) != 0)
		return (error);
	atomic_store(&z.cmd, CMD_SLEEP);
	if (!SCN_WAIT(atomic_load(&z.acked) >= CMD_SLEEP) ||
	    !SCN_WAIT(scn_in_state(z.td, SC_TDS_INHIBITED)))
		return (ETIMEDOUT);
	if ((error = scn_target_start(p, &o, "holder", 1)) != 0)
		return (error);
	o.lock_td = z.td;	/* asleep: its lock is the chain lock of &z */
	atomic_store(&o.cmd, CMD_LOCK_HOLD);
	if (!SCN_WAIT(atomic_load(&o.acked) == CMD_LOCK_HOLD))
		return (ETIMEDOUT);
	if ((error = scn_target_start(p, &t, "waiter", 1)) != 0)
		return (error);
	t.wchan = &z;
	error = scn_run_hooked(p, &t, &h, scn_hook_spin_on_lock, res);
	atomic_store(&o.cmd, CMD_NONE);
	if (!SCN_WAIT(scn_in_state(t.td, SC_TDS_INHIBITED)))
		return (ETIMEDOUT);
	if (error != 0 || (error = scn_target_stop(&o)) != 0 ||
	    (error = scn_target_stop(&t)) != 0)
		return (error);
	return (scn_target_stop(&z));
}
