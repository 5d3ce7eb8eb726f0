/*
 * Protocol scenarios (see scenarios.h).  A target thread spins in a known
 * chain, target_main -> spin_outer -> spin_inner, and obeys commands from
 * its loop; a hook gives it the command at the exact protocol step where
 * the scenario wants the race, and waits (bounded) until it obeyed.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "scenarios.h"

#define SCN_BOUND_NS	(10ULL * 1000 * 1000 * 1000)	/* any wait: 10 s */
#define SCN_MS(ms)	((ms) * 1000L * 1000)	/* a capture's bound */

/* Commands a target obeys from its spin loop. */
enum scn_cmd {
	CMD_NONE = 0,
	CMD_SLEEP,	/* sleep on its wait channel */
	CMD_YIELD,	/* sc_yield() once */
	CMD_USER,	/* spin in user mode until CMD_NONE */
	CMD_CLI,	/* disable interrupts until an IPI was deferred */
	CMD_BLOCK,	/* block the IPI signal until CMD_NONE */
	CMD_CLI_HOLD,	/* disable interrupts until CMD_NONE */
	CMD_EXIT
};

struct scn_target {
	struct sc_machine *m;
	struct sc_thread *td;
	_Atomic int	cmd;
	_Atomic int	acked;		/* the last command taken */
	_Atomic int	no_preempt;	/* never yield of its own accord */
	const void	*wchan;		/* CMD_SLEEP's channel (NULL: the
					   target itself) */
	int		bind;		/* 1 + the CPU it binds itself to,
					   0: none */
};

/*
 * One turn of a bounded wait.  On a plain pthread it is also a scheduling
 * point (sc_maybe_yield()), so that in deterministic mode (STACKCAP_SEED)
 * the machine runs while the scenario waits; a hook that waits on a CPU
 * (inside a switch, interrupts disabled) must not switch, and only yields
 * the host core.
 */
static void
scn_pause(void)
{
	if (sc_curthread() == NULL)
		sc_maybe_yield();
	sched_yield();
}

/* Bounded waits: false when the bound expired. */
static bool
scn_wait_ge(_Atomic int *v, int want)
{
	struct sc_deadline dl;

	sc_deadline_start(&dl, SCN_BOUND_NS);
	while (atomic_load(v) < want) {
		if (sc_deadline_passed(&dl))
			return (false);
		scn_pause();
	}
	return (true);
}

#define SCN_CNT(m, f)	(sc_counters_get(m).f)
#define SCN_WAIT_CNT(m, f, v)	({					\
	struct sc_deadline dl_;						\
	bool ok_ = true;						\
									\
	sc_deadline_start(&dl_, SCN_BOUND_NS);				\
	while (SCN_CNT((m), f) < (uint64_t)(v)) {			\
		if (sc_deadline_passed(&dl_)) {				\
			ok_ = false;					\
			break;						\
		}							\
		scn_pause();						\
	}								\
	ok_;								\
})

/* Until td is in state s and, for RUNNING, on a CPU, otherwise off all. */
static bool
scn_wait_state(struct sc_thread *td, enum sc_td_state s)
{
	struct sc_deadline dl;

	sc_deadline_start(&dl, SCN_BOUND_NS);
	while (sc_thread_state(td) != s || (s == SC_TDS_RUNNING) !=
	    (sc_thread_oncpu(td) != SC_NOCPU)) {
		if (sc_deadline_passed(&dl))
			return (false);
		scn_pause();
	}
	return (true);
}

/* Until td runs on cpu. */
static bool
scn_wait_oncpu(struct sc_thread *td, int cpu)
{
	struct sc_deadline dl;

	sc_deadline_start(&dl, SCN_BOUND_NS);
	while (sc_thread_state(td) != SC_TDS_RUNNING ||
	    sc_thread_oncpu(td) != cpu) {
		if (sc_deadline_passed(&dl))
			return (false);
		scn_pause();
	}
	return (true);
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
	(void)SCN_WAIT_CNT(t->m, ipis_deferred, 1);
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

/* The same loop under another name: a thread that reuses the struct of an
 * exited target (no-proc-lock) has a stack that tells it apart. */
SC_NOIPA static void
reuser_main(void *arg)
{
	spin_outer(arg);
	SC_BARRIER();
}

/* A thread that spins without giving up its CPU until told. */
static void
hog_main(void *arg)
{
	_Atomic int *stop = arg;

	while (!atomic_load(stop))
		;
}

/* bind: 1 + the CPU the target binds itself to, 0: none. */
static int
target_start_fn(struct sc_proc *p, struct scn_target *t, const char *name,
    int no_preempt, void (*fn)(void *), int bind)
{
	memset(t, 0, sizeof(*t));
	t->m = sc_proc_machine(p);
	t->bind = bind;
	atomic_store(&t->no_preempt, no_preempt);
	if (sc_thread_create(p, name, fn, t, &t->td) != 0)
		return (ENOMEM);
	return (scn_wait_state(t->td, SC_TDS_RUNNING) ? 0 : ETIMEDOUT);
}

static int
target_start(struct sc_proc *p, struct scn_target *t, const char *name,
    int no_preempt)
{
	return (target_start_fn(p, t, name, no_preempt, target_main, 0));
}

static int
target_stop(struct scn_target *t)
{
	atomic_store(&t->cmd, CMD_EXIT);
	sc_wakeup(t->wchan != NULL ? t->wchan : t);
	return (sc_thread_join(t->td));
}

/* A capture as the kernel's callers make it: proc lock, thread lock. */
static int
capture(struct sc_proc *p, struct scn_target *t, struct scn_result *res)
{
	res->error = sc_stack_save_td_locked(p, t->td, &res->stack);
	res->target_tid = sc_thread_tid(t->td);
	return (0);
}

/* --- Hooks --- */

struct scn_hook {
	struct scn_target *t;
	enum sc_hook_point point;
	int		cmd;		/* the command to give at the point */
	enum sc_td_state wait_for;	/* the target state to wait for */
	struct sc_thread *other;	/* must be running after it */
	_Atomic int	fired;
	_Atomic int	in_window;
	_Atomic int	failed;
};

/* At `point`, once: command the target and wait until it obeyed. */
static void
hook_command(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_hook *h = arg;

	if (point != h->point || td != h->t->td ||
	    atomic_exchange(&h->fired, 1))
		return;
	atomic_store(&h->t->cmd, h->cmd);
	if (!scn_wait_state(td, h->wait_for) || (h->other != NULL &&
	    !scn_wait_state(h->other, SC_TDS_RUNNING)))
		atomic_store(&h->failed, 1);
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
		if (!scn_wait_ge(&h->in_window, 1))
			atomic_store(&h->failed, 1);
	} else if (point == SC_HOOK_SWITCH_NOCPU &&
	    atomic_load(&h->fired) && !atomic_exchange(&h->in_window, 1)) {
		if (!SCN_WAIT_CNT(h->t->m, retry_nocpu, 1))
			atomic_store(&h->failed, 1);
	}
}

/*
 * Before the IPI: give the target h->cmd, which makes it need a spin lock
 * that the requester holds (lock-held: its own thread lock, to yield;
 * spin-held: a chain lock, to sleep), and wait until its CPU spins on that
 * lock with interrupts disabled.
 */
static void
hook_spin_on_lock(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_hook *h = arg;
	uint64_t spins;

	if (point != SC_HOOK_SAVE_BEFORE_IPI || td != h->t->td ||
	    atomic_exchange(&h->fired, 1))
		return;
	spins = SCN_CNT(h->t->m, spin_waits);
	atomic_store(&h->t->cmd, h->cmd);
	if (!SCN_WAIT_CNT(h->t->m, spin_waits, spins + 1))
		atomic_store(&h->failed, 1);
}

/* Run a capture of a fresh target with hook h installed. */
static int
run_hooked(struct sc_proc *p, struct scn_target *t, struct scn_hook *h,
    sc_hook_fn fn, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);

	h->t = t;
	sc_machine_set_hook(m, fn, h);
	capture(p, t, res);
	sc_machine_set_hook(m, NULL, NULL);
	res->raced = atomic_load(&h->fired) && !atomic_load(&h->failed);
	return (atomic_load(&h->failed) ? ETIMEDOUT : 0);
}

/* --- The scenarios --- */

static int
scn_running(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "runner", 0)) != 0)
		return (error);
	capture(p, &t, res);
	res->raced = 1;
	return (target_stop(&t));
}

static int
scn_user_mode(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "user", 0)) != 0)
		return (error);
	atomic_store(&t.cmd, CMD_USER);
	if (!scn_wait_ge(&t.acked, CMD_USER))
		return (ETIMEDOUT);
	capture(p, &t, res);
	res->raced = 1;
	atomic_store(&t.cmd, CMD_NONE);
	return (target_stop(&t));
}

static int
scn_switch_off(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .point = SC_HOOK_SAVE_UNLOCKED,
	    .cmd = CMD_SLEEP, .wait_for = SC_TDS_INHIBITED };
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "sleeper", 0)) != 0)
		return (error);
	error = run_hooked(p, &t, &h, hook_command, res);
	return (error != 0 ? error : target_stop(&t));
}

static int
scn_idle_cpu(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .point = SC_HOOK_SAVE_BEFORE_IPI,
	    .cmd = CMD_SLEEP, .wait_for = SC_TDS_INHIBITED };
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "idler", 0)) != 0)
		return (error);
	error = run_hooked(p, &t, &h, hook_command, res);
	return (error != 0 ? error : target_stop(&t));
}

/* One CPU: the target and a hog that waits on the run queue. */
static int
start_with_hog(struct sc_proc *p, struct scn_target *t, const char *name,
    _Atomic int *stop, struct sc_thread **hogp)
{
	int error;

	if ((error = target_start(p, t, name, 1)) != 0)
		return (error);
	if (sc_thread_create(p, "hog", hog_main, stop, hogp) != 0)
		return (ENOMEM);
	return (scn_wait_state(*hogp, SC_TDS_RUNQ) ? 0 : ETIMEDOUT);
}

static int
stop_with_hog(struct scn_target *t, _Atomic int *stop, struct sc_thread *hog)
{
	atomic_store(stop, 1);
	sc_thread_join(hog);
	return (target_stop(t));
}

static int
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
	error = run_hooked(p, &t, &h, hook_command, res);
	return (error != 0 ? error : stop_with_hog(&t, &stop, hog));
}

static int
scn_nocpu_window(struct sc_proc *p, struct scn_result *res)
{
	struct scn_hook h = { .point = SC_HOOK_SAVE_UNLOCKED };
	struct sc_thread *hog;
	_Atomic int stop = 0;
	struct scn_target t;
	int error;

	if ((error = start_with_hog(p, &t, "switcher", &stop, &hog)) != 0)
		return (error);
	error = run_hooked(p, &t, &h, hook_nocpu, res);
	if (error == 0 && !atomic_load(&h.in_window))
		error = ETIMEDOUT;
	return (error != 0 ? error : stop_with_hog(&t, &stop, hog));
}

static int
scn_interrupts_disabled(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "cli", 0)) != 0)
		return (error);
	atomic_store(&t.cmd, CMD_CLI);
	if (!scn_wait_ge(&t.acked, CMD_CLI))
		return (ETIMEDOUT);
	capture(p, &t, res);
	res->raced = 1;
	return (target_stop(&t));
}

static int
scn_lost_ipi(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "deaf", 0)) != 0)
		return (error);
	atomic_store(&t.cmd, CMD_BLOCK);
	if (!scn_wait_ge(&t.acked, CMD_BLOCK))
		return (ETIMEDOUT);
	capture(p, &t, res);
	res->raced = 1;
	/* Unblock: the late IPI finds no open request. */
	atomic_store(&t.cmd, CMD_NONE);
	if (!SCN_WAIT_CNT(m, trace_stale, 1))
		return (ETIMEDOUT);
	return (target_stop(&t));
}

static int
scn_lock_held(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_hook h = { .cmd = CMD_YIELD };
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "victim", 0)) != 0)
		return (error);
	error = run_hooked(p, &t, &h, hook_spin_on_lock, res);
	/* The lock is free again: the target switches, the IPI is late. */
	if (error == 0 && !SCN_WAIT_CNT(m, trace_stale, 1))
		error = ETIMEDOUT;
	return (error != 0 ? error : target_stop(&t));
}

/* --- The reviewers' catches (cfg.mistakes) and arm64 (cfg.arch) --- */

/*
 * kib's catch: with the answer word not cleared before the IPI, the first
 * capture's answer is still there when the second one looks, and is taken
 * for it, stack and all, although the target's CPU has interrupts disabled
 * and no handler can have answered.  (Run without the mistake, the same
 * steps give ETIMEDOUT.)
 */
static int
scn_stale_answer(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct sc_stack first;
	struct scn_target t;
	int error, i;

	if ((error = target_start(p, &t, "stale", 1)) != 0)
		return (error);
	capture(p, &t, res);
	if (res->error != 0)
		return (EIO);
	sc_stack_copy(&res->stack, &first);
	atomic_store(&t.cmd, CMD_CLI_HOLD);
	if (!scn_wait_ge(&t.acked, CMD_CLI_HOLD))
		return (ETIMEDOUT);
	capture(p, &t, res);
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
	if (!SCN_WAIT_CNT(m, trace_stale, 1))
		return (ETIMEDOUT);
	return (target_stop(&t));
}

/*
 * mjg's catch: the requester holds another spin lock (here the thread lock
 * of a sleeping thread: its sleep-queue chain lock) that the target needs
 * in order to sleep.  The target's CPU spins on it with interrupts
 * disabled and never takes the IPI: only the bounded wait ends it.
 * (Without the mistake, stack_save_td() refuses with a KASSERT.)
 */
static int
scn_spin_held(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_hook h = { .cmd = CMD_SLEEP };
	struct scn_target z, t;
	int error;

	if ((error = target_start(p, &z, "sleeper", 1)) != 0)
		return (error);
	atomic_store(&z.cmd, CMD_SLEEP);
	if (!scn_wait_ge(&z.acked, CMD_SLEEP) ||
	    !scn_wait_state(z.td, SC_TDS_INHIBITED))
		return (ETIMEDOUT);
	if ((error = target_start(p, &t, "needs-lock", 1)) != 0)
		return (error);
	t.wchan = &z;	/* sleeping, T needs z's chain lock */
	h.t = &t;
	sc_machine_set_hook(m, hook_spin_on_lock, &h);
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
	if (atomic_load(&h.fired) && !SCN_WAIT_CNT(m, trace_stale, 1))
		return (ETIMEDOUT);
	if ((error = target_stop(&t)) != 0)
		return (error);
	return (target_stop(&z));
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

/* Until td has exited (been reaped): a join then returns at once. */
static bool
scn_wait_exited(struct sc_thread *td)
{
	struct sc_deadline dl;

	sc_deadline_start(&dl, SCN_BOUND_NS);
	while (!sc_thread_exited(td)) {
		if (sc_deadline_passed(&dl))
			return (false);
		scn_pause();
	}
	return (true);
}

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
		if (!scn_wait_state(td, SC_TDS_INHIBITED) ||
		    sc_thread_swapout(td) != 0)
			atomic_store(&h->failed, 1);
		else
			atomic_store(&h->done, 1);
		return;
	}
	atomic_store(&h->t->cmd, CMD_EXIT);
	if (!scn_wait_exited(td) || sc_thread_join(td) != 0 ||
	    target_start_fn(h->np, h->n, "reuser", 1, reuser_main, 0) != 0 ||
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
static int
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
	if ((error = target_start(p, &t, "victim", 1)) != 0)
		return (error);
	capture_no_proc_lock(&t, &h, res);
	if (atomic_load(&h.failed))
		return (ETIMEDOUT);
	res->raced = atomic_load(&h.done) && res->error == 0 &&
	    res->answer_tid != res->target_tid &&
	    sc_thread_proc(t.td) == h.np;
	/* The struct is the new thread's: stop that one, once. */
	return (atomic_load(&h.done) ? target_stop(&n) : target_stop(&t));
}

/*
 * The swap-out after the unlock: the target goes to sleep and is swapped
 * out while the requester waits for it to get a CPU; on the relock,
 * stack_save_td() finds it not running and would walk its pcb, on an
 * unmapped stack.  The KASSERT says what the kernel would have done.
 */
static int
scn_no_proc_lock_swap(struct sc_proc *p, struct scn_result *res)
{
	struct scn_noproc h = { .swap = 1 };
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "swapped", 1)) != 0)
		return (error);
	capture_no_proc_lock(&t, &h, res);
	if (atomic_load(&h.failed))
		return (ETIMEDOUT);
	res->raced = atomic_load(&h.done) && res->error == EINVAL &&
	    res->stack.depth == 0;
	if (atomic_load(&h.done) && sc_thread_swapin(t.td) != 0)
		return (EIO);
	return (target_stop(&t));
}

/* --- The schedulers and protocols of the history --- */

/*
 * ULE's window, from the requester's side: hold the switch that brings
 * the target in at the point where it is RUNNING, its td_oncpu still
 * NOCPU and its lock free, until the requester has seen it there (a NOCPU
 * spin, or a capture that returned).
 */
struct scn_incoming {
	struct scn_target *t;
	_Atomic int	fired;		/* the target is in the window */
	_Atomic int	done;		/* the capture returned */
	_Atomic int	failed;
};

static void
hook_incoming(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_incoming *h = arg;
	struct sc_deadline dl;

	if (point != SC_HOOK_SWITCH_INCOMING || td != h->t->td ||
	    atomic_exchange(&h->fired, 1))
		return;
	/* Interrupts are disabled here: spin, bounded. */
	sc_deadline_start(&dl, SCN_BOUND_NS);
	while (SCN_CNT(h->t->m, retry_nocpu) == 0 && !atomic_load(&h->done))
		if (sc_deadline_passed(&dl)) {
			atomic_store(&h->failed, 1);
			break;
		}
}

/*
 * The target sleeps; the requester wakes it, an idle CPU chooses it, and
 * the hook holds that switch in ULE's window while the requester locks
 * the target and captures it.
 */
static int
scn_incoming(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_incoming h = { 0 };
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "incoming", 1)) != 0)
		return (error);
	atomic_store(&t.cmd, CMD_SLEEP);
	if (!scn_wait_ge(&t.acked, CMD_SLEEP) ||
	    !scn_wait_state(t.td, SC_TDS_INHIBITED))
		return (ETIMEDOUT);
	h.t = &t;
	sc_machine_set_hook(m, hook_incoming, &h);
	sc_wakeup(&t);
	if (!scn_wait_ge(&h.fired, 1))
		return (ETIMEDOUT);
	capture(p, &t, res);
	atomic_store(&h.done, 1);
	sc_machine_set_hook(m, NULL, NULL);
	res->raced = !atomic_load(&h.failed);
	return (target_stop(&t));
}

/*
 * FreeBSD 12's protocol under 4BSD: a running thread is captured (the
 * sched_lock keeps it on its CPU); one with interrupts disabled takes the
 * NMI at once and answers depth 0: EAGAIN (error2), no deferral.
 */
static int
scn_nmi_4bsd(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_result second;
	struct scn_target t;
	int error;

	if ((error = target_start(p, &t, "nmi", 1)) != 0)
		return (error);
	capture(p, &t, res);
	atomic_store(&t.cmd, CMD_CLI_HOLD);
	if (!scn_wait_ge(&t.acked, CMD_CLI_HOLD))
		return (ETIMEDOUT);
	capture(p, &t, &second);
	res->error2 = second.error;
	atomic_store(&t.cmd, CMD_NONE);
	res->raced = res->error == 0 && second.error == EAGAIN &&
	    SCN_CNT(m, ipis_deferred) == 0;
	return (target_stop(&t));
}

static struct sc_proc *scn_arm64_proc;
static _Atomic int scn_arm64_self_error = -1;
static _Atomic int scn_arm64_self_state = -1;

/* A running thread captures itself, and lists its process. */
static void
arm64_self(void *arg)
{
	struct sc_thread *self = sc_curthread();
	struct sc_kstack kk[4];
	struct sc_stack st;
	size_t n, i;

	(void)arg;
	sc_thread_lock(self);
	atomic_store(&scn_arm64_self_error, sc_stack_save_td(&st, self));
	sc_thread_unlock(self);
	if (sc_proc_kstack(scn_arm64_proc, kk, 4, &n) == 0)
		for (i = 0; i < n && i < 4; i++)
			if (kk[i].tid == sc_thread_tid(self))
				atomic_store(&scn_arm64_self_state,
				    kk[i].state);
}

/*
 * bdragon's and jhibbits' catch: on arm64 (and riscv, powerpc) the kernel
 * cannot capture a running thread: EOPNOTSUPP, curthread included, so
 * procstat shows <running> for every running thread.
 */
static int
scn_arm64_running(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t;
	struct sc_thread *self;
	int error;

	if ((error = target_start(p, &t, "runner", 0)) != 0)
		return (error);
	capture(p, &t, res);
	atomic_store(&scn_arm64_self_error, -1);
	atomic_store(&scn_arm64_self_state, -1);
	scn_arm64_proc = p;
	if (sc_thread_create(p, "self", arm64_self, NULL, &self) != 0)
		return (ENOMEM);
	if (sc_thread_join(self) != 0)
		return (EIO);
	res->raced = res->error == EOPNOTSUPP &&
	    atomic_load(&scn_arm64_self_error) == EOPNOTSUPP &&
	    atomic_load(&scn_arm64_self_state) == SC_KKST_STATE_RUNNING;
	return (target_stop(&t));
}

/* --- Per-CPU slots and the snapshot --- */

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
	if ((error = target_start_fn(p, &t[0], "spinner0", 1, target_main,
	    1)) != 0 || (error = target_start_fn(*p2, &t[1], "spinner1", 1,
	    target_main, 2)) != 0)
		return (error);
	/* Bound: each is on its CPU for good once it got there. */
	return (scn_wait_oncpu(t[0].td, 0) && scn_wait_oncpu(t[1].td, 1) ?
	    0 : ETIMEDOUT);
}

static int
stop_pair(struct scn_target t[2])
{
	int error = target_stop(&t[0]);

	return (error != 0 ? error : target_stop(&t[1]));
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

static bool
scn_wait_settled(struct sc_machine *m)
{
	struct sc_deadline dl;

	sc_deadline_start(&dl, SCN_BOUND_NS);
	while (!scn_settled(m)) {
		if (sc_deadline_passed(&dl))
			return (false);
		scn_pause();
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

static int
scn_snapshot(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t[2], s;
	struct sc_proc *p2;
	int error;

	if ((error = start_pair(p, t, &p2)) != 0 ||
	    (error = target_start(p, &s, "sleeper", 0)) != 0)
		return (error);
	atomic_store(&s.cmd, CMD_SLEEP);
	if (!scn_wait_state(s.td, SC_TDS_INHIBITED))
		return (ETIMEDOUT);
	res->sleeper_tid = sc_thread_tid(s.td);
	/* The sleeper's CPU has switched to its idle thread: one round. */
	res->raced = scn_wait_settled(sc_proc_machine(p));
	if ((error = snapshot(p, t, res)) != 0)
		return (error);
	if ((error = target_stop(&s)) != 0)
		return (error);
	return (stop_pair(t));
}

/*
 * Right before the round's IPIs, spinner0 sleeps and cpu0 runs its idle
 * thread, which answers.  The idle thread, not running when first looked
 * at, runs by the time it is walked: both go to the next round, which
 * walks spinner0's pcb and interrupts cpu0 again for its idle thread.
 */
static int
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
	sc_machine_set_hook(m, hook_command, &h);
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
};

static void *
req2_main(void *arg)
{
	struct scn_req2 *r = arg;

	if (!scn_wait_ge(&r->go, 1))
		return (NULL);
	capture(r->p, r->t, &r->res);
	atomic_store(&r->done, 1);
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
	struct sc_deadline dl;

	if (point != SC_HOOK_SAVE_BEFORE_IPI || td == r->t->td ||
	    atomic_exchange(&r->go, 1))
		return;
	sc_deadline_start(&dl, SCN_BOUND_NS);
	while (!atomic_load(&r->done) &&
	    SCN_CNT(r->t->m, capture_lock_waits) == 0 &&
	    !sc_deadline_passed(&dl))
		scn_pause();
	/* Still before the first request's IPI. */
	atomic_store(&r->overlapped, atomic_load(&r->done));
}

static int
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
	capture(p, &t[0], res);
	res->overlapped = atomic_load(&r.overlapped);
	sc_machine_set_hook(m, NULL, NULL);
	atomic_store(&r.go, 1);
	(void)pthread_join(th, NULL);
	res->raced = atomic_load(&r.done);
	res->error2 = r.res.error;
	return (stop_pair(t));
}

const struct scn_scenario scn_scenarios[] = {
	{ .name = "running", .run = scn_running,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "capture a thread that spins on a CPU: one IPI, one "
	    "answer" },
	{ .name = "user-mode", .run = scn_user_mode,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target runs in user mode: no kernel frame, EBUSY" },
	{ .name = "switch-off", .run = scn_switch_off,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target sleeps right after the requester drops "
	    "its lock: NOCPU, retry, pcb walk" },
	{ .name = "idle-cpu", .run = scn_idle_cpu,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target sleeps just before the IPI: the idle thread "
	    "answers, retry, pcb walk" },
	{ .name = "other-thread", .run = scn_other_thread,
	    .ncpu = 1, .timeout_ns = SCN_MS(1000),
	    .summary = "one CPU: the target yields just before the IPI, "
	    "another thread answers, retry" },
	{ .name = "nocpu-window", .run = scn_nocpu_window,
	    .ncpu = 1, .timeout_ns = SCN_MS(1000),
	    .summary = "the requester reads td_oncpu in the middle of the "
	    "target's switch: spin, no IPI" },
	{ .name = "interrupts-disabled", .run = scn_interrupts_disabled,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target's CPU has interrupts disabled: "
	    "the IPI waits for spinlock_exit()" },
	{ .name = "lost-ipi", .run = scn_lost_ipi,
	    .ncpu = 2, .timeout_ns = SCN_MS(50),
	    .summary = "the IPI is lost (signal blocked): the bounded wait "
	    "gives ETIMEDOUT, the late handler does nothing" },
	{ .name = "lock-held", .run = scn_lock_held,
	    .ncpu = 2, .timeout_ns = SCN_MS(100),
	    .summary = "what goes wrong if the thread lock were held across "
	    "the IPI: deadlock, stopped by the bounded wait",
	    .hold_lock = 1 },
	{ .name = "stale-answer", .run = scn_stale_answer,
	    .ncpu = 2, .timeout_ns = SCN_MS(100),
	    .summary = "kib's catch: the answer word not cleared before "
	    "the IPI: an old answer is taken for a new capture",
	    .mistakes = SC_MISTAKE_STALE_ANSWER },
	{ .name = "spin-held", .run = scn_spin_held,
	    .ncpu = 2, .timeout_ns = SCN_MS(100),
	    .summary = "mjg's catch: the caller holds a spin lock that the "
	    "target needs: deadlock, stopped by the bounded wait",
	    .mistakes = SC_MISTAKE_SPIN_HELD },
	{ .name = "no-proc-lock", .run = scn_no_proc_lock,
	    .ncpu = 2, .timeout_ns = SCN_MS(2000),
	    .summary = "mjg's catch: no proc lock: the target exits, its "
	    "struct is reused, the answer's pointer is another thread",
	    .mistakes = SC_MISTAKE_NO_PROC_LOCK },
	{ .name = "no-proc-lock-swap", .run = scn_no_proc_lock_swap,
	    .ncpu = 2, .timeout_ns = SCN_MS(2000),
	    .summary = "mjg's catch: no proc lock: the target is swapped out "
	    "after the unlock; the relock finds it swapped: KASSERT",
	    .mistakes = SC_MISTAKE_NO_PROC_LOCK, .flags = SCN_PANICS },
	{ .name = "arm64-running", .run = scn_arm64_running,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "arm64 (riscv, powerpc): no capture of a running "
	    "thread, curthread too: EOPNOTSUPP, <running>",
	    .arch = SC_ARCH_ARM64 },
	{ .name = "ule-incoming-nocpu", .run = scn_incoming,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "ULE: the target is RUNNING, td_oncpu still "
	    "NOCPU, its lock free: spin until it sets it, then IPI",
	    .sched = SCN_SCHED_ULE },
	{ .name = "nmi-4bsd", .run = scn_nmi_4bsd,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "FreeBSD 12's NMI protocol under 4BSD: right; with "
	    "interrupts disabled the NMI answers depth 0, EAGAIN",
	    .sched = SCN_SCHED_4BSD, .protocol = SC_PROTO_NMI },
	{ .name = "snapshot", .run = scn_snapshot,
	    .ncpu = 3, .timeout_ns = SCN_MS(1000),
	    .summary = "sc_machine_snapshot(): every running thread's CPU "
	    "interrupted in one round, the others walked" },
	{ .name = "snapshot-retry", .run = scn_snapshot_retry,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "a snapshot's target sleeps before the round's IPIs: "
	    "the idle thread answers, the next round walks its pcb" },
	{ .name = "capture-serial", .run = scn_two_requesters,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000), .capture_serial = 1,
	    .summary = "the kernel's intr_lock: a capture on cpu1 waits "
	    "for one on cpu0 to end" },
	{ .name = "capture-parallel", .run = scn_two_requesters,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "a request slot per CPU: a capture on cpu1 ends "
	    "while one on cpu0 waits for its IPI" },
	{ .name = "nmi-ule", .run = scn_incoming,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "FreeBSD 12's NMI protocol under 13's ULE: RUNNING "
	    "with td_oncpu NOCPU under the lock, ipi_cpu(NOCPU): KASSERT",
	    .sched = SCN_SCHED_ULE, .protocol = SC_PROTO_NMI,
	    .flags = SCN_PANICS },
};
const size_t scn_nscenarios = sizeof(scn_scenarios) / sizeof(scn_scenarios[0]);

const struct scn_scenario *
scn_find(const char *name)
{
	size_t i;

	for (i = 0; i < scn_nscenarios; i++)
		if (strcmp(scn_scenarios[i].name, name) == 0)
			return (&scn_scenarios[i]);
	return (NULL);
}

/* SCN_PANICS: the KASSERT's message, kept for the result. */
static char scn_panic_msg[512];

static void
scn_panic_record(const char *msg)
{
	snprintf(scn_panic_msg, sizeof(scn_panic_msg), "%s", msg);
}

int
scn_run(const struct scn_scenario *s, size_t trace_events,
    void (*show)(struct sc_machine *m, void *arg), void *arg,
    struct scn_result *res)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	int error;

	memset(res, 0, sizeof(*res));
	sc_machine_config_init(&cfg);
	cfg.ncpu = s->ncpu;
	cfg.capture_timeout_ns = s->timeout_ns;
	cfg.trace_events = trace_events;
	cfg.hold_lock_across_ipi = s->hold_lock;
	cfg.mistakes = s->mistakes;
	cfg.arch = s->arch;
	if (s->sched != SCN_SCHED_DEFAULT)
		cfg.sched = s->sched == SCN_SCHED_ULE ? SC_SCHED_ULE :
		    SC_SCHED_4BSD;
	cfg.protocol = s->protocol;
	cfg.capture_serial = s->capture_serial;
	if ((error = sc_machine_create(&cfg, &m)) != 0)
		return (error);
	scn_panic_msg[0] = '\0';
	if ((s->flags & SCN_PANICS) != 0)
		sc_set_panic_handler(scn_panic_record);
	if ((error = sc_proc_create(m, "scenario", &p)) == 0)
		error = s->run(p, res);
	if ((s->flags & SCN_PANICS) != 0) {
		sc_set_panic_handler(NULL);
		snprintf(res->panic, sizeof(res->panic), "%s", scn_panic_msg);
	}
	sc_machine_counters(m, &res->cnt);
	if (error != 0)
		fprintf(stderr, "scenario %s: a bounded wait expired (%s)\n",
		    s->name, strerror(error));
	if (show != NULL)
		show(m, arg);
	sc_machine_destroy(m);
	return (error);
}
