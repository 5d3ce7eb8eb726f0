/*
 * The scenarios' target (see scn_target.h): its chain, the commands it
 * obeys, starting and stopping it, the capture, the hooks that command
 * it, and the one bounded wait.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "scn_target.h"

uint64_t scn_bound_ns = SCN_BOUND_NS;

void
scn_pause(void)
{
	if (sc_curthread() == NULL)
		sc_maybe_yield();
	else
		sc_cpu_spinwait();
	sched_yield();
}

bool
scn_in_state(struct sc_thread *td, enum sc_td_state s)
{
	return (sc_thread_state(td) == s && (s == SC_TDS_RUNNING) ==
	    (sc_thread_oncpu(td) != SC_NOCPU));
}

/* --- The target --- */

SC_NOIPA static void
user_spin(void *arg)
{
	struct scn_target *t = arg;

	atomic_store(&t->acked, CMD_USER);
	while (atomic_load(&t->cmd) == CMD_USER)
		;
}

SC_NOIPA static void
cli_wait(struct scn_target *t)
{
	sc_spinlock_enter();
	atomic_store(&t->acked, CMD_CLI);
	/* Interrupts stay off until the IPI has arrived and been deferred. */
	(void)SCN_WAIT(SCN_CNT(t->m, ipis_deferred) >= 1);
	sc_spinlock_exit();
	SC_BARRIER();
}

SC_NOIPA static void
cli_hold(struct scn_target *t)
{
	sc_spinlock_enter();
	atomic_store(&t->acked, CMD_CLI_HOLD);
	while (atomic_load(&t->cmd) == CMD_CLI_HOLD)
		;
	sc_spinlock_exit();
	SC_BARRIER();
}

SC_NOIPA static void
lock_hold(struct scn_target *t)
{
	sc_thread_lock(t->lock_td);
	atomic_store(&t->acked, CMD_LOCK_HOLD);
	while (atomic_load(&t->cmd) == CMD_LOCK_HOLD)
		;
	sc_thread_unlock(t->lock_td);
	SC_BARRIER();
}

/*
 * A spin lock wanted inside a spinlock section (spinlock_enter(), as
 * the kernel's code that must not be interrupted runs): the wait cannot
 * turn interrupts on, since the section's count stays above zero.
 */
SC_NOIPA static void
cli_lock(struct scn_target *t)
{
	sc_spinlock_enter();
	atomic_store(&t->acked, CMD_CLI_LOCK);
	sc_thread_lock(t->lock_td);
	sc_thread_unlock(t->lock_td);
	sc_spinlock_exit();
	SC_BARRIER();
}

SC_NOIPA static void
block_wait(struct scn_target *t, int signo)
{
	sigset_t set, old;

	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	atomic_store(&t->acked, CMD_BLOCK);
	while (atomic_load(&t->cmd) == CMD_BLOCK)
		;
	/* The lost IPI arrives now, after its requester gave up. */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	SC_BARRIER();
}

SC_NOIPA static void
spin_inner(struct scn_target *t)
{
	int c;

	atomic_store(&t->looping, 1);
	for (;;) {
		c = atomic_load(&t->cmd);
		if (c == CMD_EXIT)
			break;
		switch (c) {
		case CMD_SLEEP:
			atomic_store(&t->cmd, CMD_NONE);
			atomic_store(&t->acked, CMD_SLEEP);
			sc_sleep(t->wchan != NULL ? t->wchan : t, "scncmd");
			break;
		case CMD_YIELD:
			atomic_store(&t->cmd, CMD_NONE);
			atomic_store(&t->acked, CMD_YIELD);
			sc_yield();
			break;
		case CMD_USER:
			sc_user_call(user_spin, t);
			break;
		case CMD_CLI:
			atomic_store(&t->cmd, CMD_NONE);
			cli_wait(t);
			break;
		case CMD_BLOCK:
			block_wait(t, SIGRTMIN + 2);
			break;
		case CMD_CLI_HOLD:
			cli_hold(t);
			break;
		case CMD_LOCK_HOLD:
			lock_hold(t);
			break;
		case CMD_CLI_LOCK:
			atomic_store(&t->cmd, CMD_NONE);
			cli_lock(t);
			break;
		default:
			if (!atomic_load(&t->no_preempt))
				sc_maybe_yield();
		}
	}
	SC_BARRIER();
}

SC_NOIPA static void
spin_outer(struct scn_target *t)
{
	spin_inner(t);
	SC_BARRIER();
}

SC_NOIPA static void
target_main(void *arg)
{
	struct scn_target *t = arg;

	if (t->bind != 0)
		(void)sc_sched_bind(t->bind - 1);
	spin_outer(t);
	SC_BARRIER();
}

/* The same loop under another name (scn_target_start_fn()). */
SC_NOIPA static void
reuser_main(void *arg)
{
	spin_outer(arg);
	SC_BARRIER();
}

int
scn_target_start_fn(struct sc_proc *p, struct scn_target *t,
    const char *name, int no_preempt, bool reuser, int bind)
{
	memset(t, 0, sizeof(*t));
	t->m = sc_proc_machine(p);
	t->bind = bind;
	atomic_store(&t->no_preempt, no_preempt);
	if (sc_thread_create(p, name, reuser ? reuser_main :
	    target_main, t, &t->td) != 0)
		return (ENOMEM);
	/*
	 * RUNNING is not enough: a thread switched in runs sc__fork_exit()
	 * first, and a capture there (an IPI taken at its first point in
	 * deterministic mode) would not hold the target's chain.
	 */
	if (SCN_WAIT(scn_in_state(t->td, SC_TDS_RUNNING) &&
	    atomic_load(&t->looping)))
		return (0);
	/* t is the caller's, and dies with its frame: the target must not
	 * outlive it (its loop would read and write a stack reused). */
	(void)scn_target_stop(t);
	return (ETIMEDOUT);
}

int
scn_target_start(struct sc_proc *p, struct scn_target *t, const char *name,
    int no_preempt)
{
	return (scn_target_start_fn(p, t, name, no_preempt, false, 0));
}

int
scn_target_stop(struct scn_target *t)
{
	atomic_store(&t->cmd, CMD_EXIT);
	sc_wakeup(t->wchan != NULL ? t->wchan : t);
	return (sc_thread_join(t->td));
}

int
scn_capture(struct sc_proc *p, struct scn_target *t, struct scn_result *res)
{
	res->error = sc_stack_save_td_locked(p, t->td, &res->stack);
	res->target_tid = sc_thread_tid(t->td);
	return (0);
}

/* --- Hooks --- */

/* At `point`, once: command the target and wait until it obeyed. */
void
scn_hook_command(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_hook *h = arg;

	if (point != h->point || td != h->t->td ||
	    atomic_exchange(&h->fired, 1))
		return;
	atomic_store(&h->t->cmd, h->cmd);
	if (!SCN_WAIT(scn_in_state(td, h->wait_for)) || (h->other != NULL &&
	    !SCN_WAIT(scn_in_state(h->other, SC_TDS_RUNNING))))
		atomic_store(&h->failed, 1);
}

/*
 * Before the IPI: give the target h->cmd, which makes it need a spin lock
 * that someone else holds, and wait until its CPU spins on that lock.
 * lock-held: the requester holds its thread lock, which it needs to sleep
 * after its chain lock; spin-held: the requester holds a chain lock, which
 * it needs inside a spinlock section: interrupts stay disabled in both
 * waits.  spin-wait-intr: another thread holds the chain lock, which it
 * needs first to sleep: interrupts come on between attempts.
 */
void
scn_hook_spin_on_lock(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_hook *h = arg;
	uint64_t spins;

	if (point != SC_HOOK_SAVE_BEFORE_IPI || td != h->t->td ||
	    atomic_exchange(&h->fired, 1))
		return;
	spins = SCN_CNT(h->t->m, spin_waits);
	atomic_store(&h->t->cmd, h->cmd);
	if (!SCN_WAIT(SCN_CNT(h->t->m, spin_waits) >= spins + 1))
		atomic_store(&h->failed, 1);
}

/* Run a capture of a fresh target with hook h installed. */
int
scn_run_hooked(struct sc_proc *p, struct scn_target *t, struct scn_hook *h,
    sc_hook_fn fn, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);

	h->t = t;
	sc_machine_set_hook(m, fn, h);
	scn_capture(p, t, res);
	sc_machine_set_hook(m, NULL, NULL);
	res->raced = atomic_load(&h->fired) && !atomic_load(&h->failed);
	return (atomic_load(&h->failed) ? ETIMEDOUT : 0);
}
