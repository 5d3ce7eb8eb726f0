/*
 * Misuse through the public API, with a panic handler that returns: each
 * failed check makes the public call return EINVAL with every lock as the
 * caller held it (never "does the work and drops the caller's lock"), and
 * no wait is unbounded after it.  A simulated thread that fails a check is
 * parked for good, and sc_thread_join() on it says so.  And configurations
 * that contradict themselves: EINVAL, with the reason.
 *
 * Kernel counterparts: the KASSERTs and mtx_assert()s at the top of
 * FreeBSD's functions (sys/kern/kern_synch.c mi_switch(),
 * sys/kern/kern_mutex.c, sys/vm/vm_swapout.c), and stack_save_td()'s
 * (sys/x86/x86/stack_machdep.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "sc_test.h"
#include "sc_internal.h"	/* sc__td_uninhibit(), sc__runq_*() */

/* Sleeps until go; the target of the lock checks below. */
struct sleeper {
	atomic_int	go;
	atomic_int	asleep;
};

static void
sleeper(void *arg)
{
	struct sleeper *s = arg;

	while (!atomic_load(&s->go)) {
		atomic_store(&s->asleep, 1);
		sc_sleep(s, "sleeper");
	}
}

static struct sc_thread *
spawn_sleeper(struct sleeper *s)
{
	struct sc_thread *td;

	memset(s, 0, sizeof(*s));
	td = sc_test_spawn("sleeper", sleeper, s);
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SLEEPING);
	return (td);
}

static void
finish_sleeper(struct sleeper *s, struct sc_thread *td)
{
	atomic_store(&s->go, 1);
	sc_wakeup(s);
	assert_int_equal(sc_thread_join(td), 0);
}

/* sc_thread_swapout() with the proc lock held: EINVAL, lock still held. */
static void
test_swapout_proc_locked(void **state)
{
	struct sleeper s;
	struct sc_thread *td = spawn_sleeper(&s);

	sc_set_panic_handler(sc_test_panic_record);
	sc_proc_lock(tp);
	assert_int_equal(sc_thread_swapout(td), EINVAL);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "proc lock"));
	assert_true(sc_proc_lock_owned(tp));
	assert_false(sc_thread_inhibitors(td) & SC_TDI_SWAPPED);
	sc_proc_unlock(tp);
	assert_int_equal(sc_test_panic_count(), 1);	/* unlock was fine */
	finish_sleeper(&s, td);
}

/* sc_thread_swapout() and swapin() with the thread lock held. */
static void
test_swap_thread_locked(void **state)
{
	struct sleeper s;
	struct sc_thread *td = spawn_sleeper(&s);

	sc_set_panic_handler(sc_test_panic_record);
	sc_thread_lock(td);
	assert_int_equal(sc_thread_swapout(td), EINVAL);
	assert_true(sc_thread_lock_owned(td));
	assert_false(sc_proc_lock_owned(tp));
	assert_false(sc_thread_inhibitors(td) & SC_TDI_SWAPPED);
	sc_thread_unlock(td);
	assert_int_equal(sc_test_panic_count(), 1);

	assert_int_equal(sc_thread_swapout(td), 0);
	sc_thread_lock(td);
	assert_int_equal(sc_thread_swapin(td), EINVAL);
	assert_true(sc_thread_lock_owned(td));
	assert_true(sc_thread_inhibitors(td) & SC_TDI_SWAPPED);
	sc_thread_unlock(td);
	assert_int_equal(sc_test_panic_count(), 2);
	assert_int_equal(sc_thread_swapin(td), 0);
	finish_sleeper(&s, td);
}

/* sc_proc_kstack() with one of the proc's thread locks held. */
static void
test_kstack_thread_locked(void **state)
{
	struct sleeper s;
	struct sc_thread *td = spawn_sleeper(&s);
	struct sc_kstack kk[4];
	size_t n = 99;

	sc_set_panic_handler(sc_test_panic_record);
	sc_thread_lock(td);
	assert_int_equal(sc_proc_kstack(tp, kk, 4, &n), EINVAL);
	assert_int_equal(n, 99);
	assert_true(sc_thread_lock_owned(td));
	assert_false(sc_proc_lock_owned(tp));
	sc_thread_unlock(td);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_int_equal(sc_proc_kstack(tp, kk, 4, &n), 0);
	assert_int_equal(n, 1);
	finish_sleeper(&s, td);
}

static void
nop_thread(void *arg)
{
	(void)arg;
}

/*
 * sc_wakeup() with the thread lock of a sleeper on the same chain held
 * (which is that chain's lock): the KASSERT "recursed" returned, and the
 * broadcast went on without the lock, woke the sleeper and released the
 * caller's lock ("not owned").  Now the call checks first, for any spin
 * lock, and does nothing: the sleeper still sleeps, the caller still
 * holds its lock.
 */
static void
test_wakeup_spin_held(void **state)
{
	struct sleeper s;
	struct sc_thread *td = spawn_sleeper(&s), *iw;

	sc_set_panic_handler(sc_test_panic_record);
	sc_thread_lock(td);
	sc_wakeup(&s);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "spin lock held"));
	assert_true(sc_thread_lock_owned(td));
	assert_int_equal(sc_thread_state(td), SC_TDS_INHIBITED);
	assert_true(sc_thread_inhibitors(td) & SC_TDI_SLEEPING);
	sc_thread_unlock(td);
	assert_int_equal(sc_test_panic_count(), 1);
	/* A run queue's lock (an ithread's thread lock), which the woken
	 * sleeper's sched_add() would take (under 4BSD always: sched_lock):
	 * the same, nothing done. */
	iw = sc_test_spawn_ithread("iwait", nop_thread, NULL);
	sc_thread_lock(iw);
	sc_wakeup(&s);
	assert_true(sc_thread_lock_owned(iw));
	sc_thread_unlock(iw);
	assert_int_equal(sc_test_panic_count(), 2);
	assert_true(sc_thread_inhibitors(td) & SC_TDI_SLEEPING);
	finish_sleeper(&s, td);
	assert_int_equal(sc_ithread_schedule(iw), 0);
	assert_int_equal(sc_thread_join(iw), 0);
}

/*
 * sc_machine_destroy() with a spin lock held (a sleeper's thread lock,
 * here a sleep-queue chain lock): the destroy went on, met the chain lock
 * in sc__sleepq_remove_machine() (KASSERT "recursed"), and released it on
 * the caller's behalf; a CPU that needed the lock could not be stopped.
 * Now the destroy checks first and does nothing: the machine still works.
 */
static void
test_destroy_spin_held(void **state)
{
	struct sleeper s;
	struct sc_thread *td = spawn_sleeper(&s);
	struct sc_kstack kk[2];
	size_t n;

	sc_set_panic_handler(sc_test_panic_record);
	sc_thread_lock(td);
	sc_machine_destroy(tm);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "spin lock"));
	assert_true(sc_thread_lock_owned(td));
	sc_thread_unlock(td);
	assert_int_equal(sc_proc_kstack(tp, kk, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(sc_test_panic_count(), 1);
	finish_sleeper(&s, td);
}

/*
 * sc_thread_create() with a run queue's lock held (the thread lock of a
 * thread that waits for its first run): sched_add() met the lock
 * (KASSERT "recursed"), went on, created the thread and released the
 * lock on the caller's behalf.  Now the create checks first and does
 * nothing.
 */
static void
test_create_spin_held(void **state)
{
	struct sc_thread *iw = sc_test_spawn_ithread("iwait", nop_thread,
	    NULL), *td = NULL;
	size_t n0, n;

	sc_proc_threads(tp, NULL, 0, &n0);
	sc_set_panic_handler(sc_test_panic_record);
	sc_thread_lock(iw);
	assert_int_equal(sc_thread_create(tp, "t", nop_thread, NULL, &td),
	    EINVAL);
	assert_int_equal(sc_ithread_create(tp, "t", nop_thread, NULL, &td),
	    EINVAL);
	assert_true(sc_thread_lock_owned(iw));
	sc_thread_unlock(iw);
	assert_int_equal(sc_test_panic_count(), 2);
	assert_non_null(strstr(sc_test_panic_msg(), "spin lock"));
	assert_null(td);
	sc_proc_threads(tp, NULL, 0, &n);
	assert_int_equal(n, n0);
	assert_int_equal(sc_ithread_schedule(iw), 0);
	assert_int_equal(sc_thread_join(iw), 0);
}

/*
 * sc_thread_swapin() of a runnable thread with a run queue's lock held
 * (here an ithread's thread lock): sched_add() met it (KASSERT
 * "recursed"), went on and released it on the caller's behalf.  Now the
 * swapin checks first and does nothing: the thread stays swapped.
 */
static void
test_swapin_spin_held(void **state)
{
	struct sleeper s;
	struct sc_thread *td = spawn_sleeper(&s);
	struct sc_thread *iw = sc_test_spawn_ithread("iwait", nop_thread,
	    NULL);

	assert_int_equal(sc_thread_swapout(td), 0);
	atomic_store(&s.go, 1);
	sc_wakeup(&s);			/* runnable, but swapped */
	sc_set_panic_handler(sc_test_panic_record);
	sc_thread_lock(iw);
	assert_int_equal(sc_thread_swapin(td), EINVAL);
	assert_true(sc_thread_lock_owned(iw));
	sc_thread_unlock(iw);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "spin lock"));
	assert_int_equal(sc_thread_inhibitors(td), SC_TDI_SWAPPED);
	assert_int_equal(sc_thread_swapin(td), 0);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_ithread_schedule(iw), 0);
	assert_int_equal(sc_thread_join(iw), 0);
}

/* ------------------------------------------------------------------------
 * A capture from a hook inside a capture
 * ------------------------------------------------------------------------ */

static struct sc_thread *inner_td;
static atomic_int inner_error = -1;

static void
nested_hook(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct sc_stack st;

	(void)arg;
	(void)td;
	if (point != SC_HOOK_SAVE_BEFORE_IPI || atomic_load(&inner_error) != -1)
		return;
	sc_thread_lock(inner_td);
	atomic_store(&inner_error, sc_stack_save_td(&st, inner_td));
	sc_thread_unlock(inner_td);
}

struct outer {
	struct sc_thread *td;
	struct sc_stack	st;
	int		error;
};

static void
outer_capture(void *arg)
{
	struct outer *o = arg;

	sc_proc_lock(tp);
	sc_thread_lock(o->td);
	o->error = sc_stack_save_td(&o->st, o->td);
	sc_thread_unlock(o->td);
	sc_proc_unlock(tp);
}

/* A spinner bound to its own CPU: it stays RUNNING until released (an
 * unbound pair could take turns on one CPU of a loaded host, and a
 * capture would then find one on the run queue). */
struct spin {
	struct hold	h;
	int		cpu;
};

SC_NOIPA static void
spin_here(void *arg)
{
	struct spin *sp = arg;
	struct hold *h = &sp->h;

	(void)sc_sched_bind(sp->cpu);
	atomic_store(&h->holding, 1);
	while (!atomic_load(&h->release))
		sc_maybe_yield();
	SC_BARRIER();
}

/* The interrupted function itself is not recorded (as in the kernel):
 * its caller is what a capture shows. */
SC_CHAIN(spin_outer, spin_here)

/*
 * The inner capture (KASSERT "recursed") took over the outer's request
 * and released its capture mutex; the outer then spun for ever, whatever
 * capture_timeout_ns said.  Now the inner call fails at once and the outer
 * capture is untouched.
 */
static void
test_nested_capture_from_hook(void **state)
{
	struct spin s1 = { .cpu = 0 }, s2 = { .cpu = 1 };
	struct outer o;

	/* Both targets run, on a CPU each; the hook runs with tp's proc
	 * lock held by the outer capture, so the inner one passes that
	 * check and reaches the one on the capture mutex. */
	atomic_store(&inner_error, -1);
	o.td = sc_test_spawn("spinner", spin_outer, &s1);
	inner_td = sc_test_spawn("inner", spin_outer, &s2);
	SC_WAIT_FOR(atomic_load(&s1.h.holding) && atomic_load(&s2.h.holding));
	sc_set_panic_handler(sc_test_panic_record);
	sc_machine_set_hook(tm, nested_hook, NULL);
	sc_test_run_bounded(outer_capture, &o);
	sc_machine_set_hook(tm, NULL, NULL);

	assert_int_equal(atomic_load(&inner_error), EINVAL);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "recursed"));
	assert_int_equal(o.error, 0);
	SC_ASSERT_CHAIN(&o.st, "spin_outer");
	atomic_store(&s1.h.release, 1);
	atomic_store(&s2.h.release, 1);
	assert_int_equal(sc_thread_join(o.td), 0);
	assert_int_equal(sc_thread_join(inner_td), 0);
}

/* ------------------------------------------------------------------------
 * Checks inside simulated threads
 * ------------------------------------------------------------------------ */

static atomic_int after;

static void
sleep_interrupts_off(void *arg)
{
	(void)arg;
	sc_spinlock_enter();
	sc_sleep(&after, "nointr");
	atomic_store(&after, 1);	/* never: parked */
}

/*
 * A switch with interrupts disabled (sc_spinlock_enter(); sc_sleep()) was
 * not caught: the next thread ran with interrupts off.  Now mi_switch()
 * asserts it, as FreeBSD's does, and the thread is parked.
 */
static void
test_sleep_interrupts_disabled(void **state)
{
	struct sc_thread *td;

	sc_set_panic_handler(sc_test_panic_record);
	atomic_store(&after, 0);
	td = sc_test_spawn("nointr", sleep_interrupts_off, NULL);
	SC_WAIT_FOR(sc_test_panic_count() == 1);
	assert_non_null(strstr(sc_test_panic_msg(), "mi_switch"));
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SUSPENDED);
	assert_int_equal(atomic_load(&after), 0);
	/* A parked thread never exits: join says so instead of hanging. */
	assert_int_equal(sc_thread_join(td), EINVAL);
	/* The CPU has interrupts on again: a capture of a spinner works. */
	{
		struct spin s = { .cpu = 0 };
		struct sc_thread *sp = sc_test_spawn("spin", spin_here, &s);
		struct sc_stack st;

		SC_WAIT_FOR(atomic_load(&s.h.holding));
		sc_proc_lock(tp);
		sc_thread_lock(sp);
		assert_int_equal(sc_stack_save_td(&st, sp), 0);
		sc_thread_unlock(sp);
		sc_proc_unlock(tp);
		atomic_store(&s.h.release, 1);
		assert_int_equal(sc_thread_join(sp), 0);
	}
}

static void
mutex_spin_held(void *arg)
{
	struct sc_thread *self = sc_curthread();

	(void)arg;
	sc_thread_lock(self);
	sc_proc_lock(tp);		/* uncontended: the fast path */
	atomic_store(&after, 1);	/* never: parked */
}

/* A sleep mutex taken with a spin lock held: caught on the fast path. */
static void
test_mutex_with_spin_fast_path(void **state)
{
	struct sc_thread *td;

	sc_set_panic_handler(sc_test_panic_record);
	atomic_store(&after, 0);
	td = sc_test_spawn("spinmtx", mutex_spin_held, NULL);
	SC_WAIT_FOR(sc_test_panic_count() == 1);
	assert_non_null(strstr(sc_test_panic_msg(), "spin lock held"));
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SUSPENDED);
	assert_int_equal(atomic_load(&after), 0);
	assert_false(sc_proc_lock_owned(tp));
	/* The proc lock is free: nobody took it behind the check. */
	sc_proc_lock(tp);
	sc_proc_unlock(tp);
}

/* sc_thread_join() on an idle thread blocked for ever: EINVAL. */
static void
test_join_idle(void **state)
{
	assert_int_equal(sc_thread_join(sc_machine_idlethread(tm, 0)), EINVAL);
}

/* ------------------------------------------------------------------------
 * Nested user mode
 * ------------------------------------------------------------------------ */

struct nest {
	int		levels;
	atomic_int	deepest;
	atomic_int	intact;		/* every level's canary survived */
};

static void user_level(void *arg);

SC_NOIPA static void
user_level_n(struct nest *n, int level)
{
	volatile uint64_t canary[16];
	int i;

	for (i = 0; i < 16; i++)
		canary[i] = 0x5ca1ab1e00000000ULL | (uint64_t)(level * 16 + i);
	if (level == n->levels)
		atomic_store(&n->deepest, level);
	else {
		struct { struct nest *n; int level; } next = { n, level + 1 };

		sc_user_call(user_level, &next);
		SC_BARRIER();
	}
	for (i = 0; i < 16; i++)
		if (canary[i] != (0x5ca1ab1e00000000ULL |
		    (uint64_t)(level * 16 + i)))
			atomic_store(&n->intact, 0);
}

static void
user_level(void *arg)
{
	struct { struct nest *n; int level; } *a = arg;

	user_level_n(a->n, a->level);
}

static void
nested_user(void *arg)
{
	struct { struct nest *n; int level; } first = { arg, 1 };

	sc_user_call(user_level, &first);
	SC_BARRIER();
}

/*
 * sc_user_call() from user mode started again at the top of the user
 * stack and overwrote the outer frames (SIGSEGV).  Now it nests below.
 */
static void
test_nested_user_call(void **state)
{
	struct sc_thread *td;
	struct nest n;

	memset(&n, 0, sizeof(n));
	n.levels = 4;
	atomic_store(&n.intact, 1);
	td = sc_test_spawn("nested", nested_user, &n);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(atomic_load(&n.deepest), 4);
	assert_int_equal(atomic_load(&n.intact), 1);
}

static void
nop(void *arg)
{
	(void)arg;
}

/*
 * The lock key is checked, not only written: an internal function whose
 * precondition is "td's lock held" (SC_THREAD_LOCK_ASSERT) called without
 * it fails its assertion and does nothing.
 */
static void
test_lock_assertion_fires(void **state)
{
	struct sc_thread *td = sc_test_spawn_ithread("iwait", nop, NULL);

	sc_set_panic_handler(sc_test_panic_record);
	sc__td_uninhibit(td, SC_TDI_IWAIT);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "not locked"));
	assert_int_equal(sc_thread_inhibitors(td), SC_TDI_IWAIT);
	assert_int_equal(sc_thread_state(td), SC_TDS_INHIBITED);
	assert_int_equal(sc_ithread_schedule(td), 0);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_test_panic_count(), 1);
}

/*
 * The run-queue helpers that both schedulers share (sched_sim.c) assert
 * the queue's lock: called without it, each fails its assertion and
 * leaves the queue as it was.
 */
static void
test_runq_assertion_fires(void **state)
{
	struct sc_runq *rq = calloc(1, sizeof(*rq));
	struct sc_thread *td = calloc(1, sizeof(*td));
	struct sc_spin lock;
	_Atomic int len = 0;

	assert_non_null(rq);
	assert_non_null(td);
	sc__runq_init(rq);
	atomic_store(&td->td_priority, SC_PRI_MIN_TIMESHARE);
	sc__spin_init(&lock, "test runq");
	sc_set_panic_handler(sc_test_panic_record);
	sc__runq_add(rq, &len, &lock, td);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "not owned"));
	assert_int_equal(rq->rq_status, 0);
	assert_int_equal(len, 0);

	/* td queued by hand, as runq_add() would have queued it. */
	td->td_rqindex = SC_PRI_MIN_TIMESHARE / SC_RQ_PPQ;
	TAILQ_INSERT_TAIL(&rq->rq_queues[td->td_rqindex], td, td_runq);
	rq->rq_status = (uint64_t)1 << td->td_rqindex;
	len = 1;
	sc__runq_remove(rq, &len, &lock, td);
	assert_int_equal(sc_test_panic_count(), 2);
	assert_ptr_equal(TAILQ_FIRST(&rq->rq_queues[td->td_rqindex]), td);
	assert_int_equal(rq->rq_status, (uint64_t)1 << td->td_rqindex);
	assert_int_equal(len, 1);
	assert_null(sc__runq_choose(rq, &lock));
	assert_int_equal(sc_test_panic_count(), 3);
	assert_ptr_equal(TAILQ_FIRST(&rq->rq_queues[td->td_rqindex]), td);
	assert_int_equal(len, 1);
	free(td);
	free(rq);
}

/* ------------------------------------------------------------------------
 * Configurations that contradict themselves
 * ------------------------------------------------------------------------ */

/* Settings that each make sense alone; 0 is the default of each. */
struct mixed_config {
	int		protocol;
	int		arch;
	unsigned	mistakes;
	int		capture_serial;
	int		hold_lock_across_ipi;
	int		sim_pct_depth;
	const char	*why;		/* in sc_machine_config_error() */
};

#define NMI		.protocol = SC_PROTO_NMI
#define ARM64		.arch = SC_ARCH_ARM64

static const struct mixed_config pct_no_seed = {
	.sim_pct_depth = 3, .why = "sim_pct_depth without a seed"
};

/* Create a machine of mc's config: its error, and its reason. */
static int
config_try(const struct mixed_config *mc, const char **why)
{
	struct sc_machine_config cfg;
	struct sc_machine *m = NULL;
	int error;

	sc_machine_config_init(&cfg);
	cfg.protocol = mc->protocol;
	cfg.arch = mc->arch;
	cfg.mistakes = mc->mistakes;
	cfg.capture_serial = mc->capture_serial;
	cfg.hold_lock_across_ipi = mc->hold_lock_across_ipi;
	cfg.sim_pct_depth = mc->sim_pct_depth;
	error = sc_machine_create(&cfg, &m);
	*why = sc_machine_config_error();
	if (m != NULL)
		sc_machine_destroy(m);
	return (error);
}

/*
 * Each of these was accepted, and one of its settings silently did
 * nothing: the NMI protocol has no intr_lock, no answer word to leave
 * stale, and holds the thread lock by design; arm64 captures no running
 * thread; PCT is a deterministic scheduler.  Now each is EINVAL, and
 * sc_machine_config_error() names the settings.  The mistakes that mean
 * the same under NMI (they drop entry checks) stay accepted.
 */
static void
test_contradictory_configs(void **state)
{
	static const struct mixed_config bad[] = {
		{ NMI, ARM64, .why = "SC_ARCH_ARM64 with SC_PROTO_NMI" },
		{ NMI, .capture_serial = 1,
		    .why = "SC_PROTO_NMI with capture_serial" },
		{ NMI, .mistakes = SC_MISTAKE_STALE_ANSWER,
		    .why = "SC_PROTO_NMI with SC_MISTAKE_STALE_ANSWER" },
		{ NMI, .mistakes = SC_MISTAKE_HOLD_THREAD_LOCK,
		    .why = "SC_MISTAKE_HOLD_THREAD_LOCK" },
		{ NMI, .hold_lock_across_ipi = 1,
		    .why = "hold_lock_across_ipi" },
		{ NMI, .mistakes = SC_MISTAKE_CLEAR_AFTER_IPI,
		    .why = "SC_MISTAKE_CLEAR_AFTER_IPI" },
		{ NMI, .mistakes = SC_MISTAKE_ANSWER_TARGET,
		    .why = "SC_MISTAKE_ANSWER_TARGET" },
		{ NMI, .mistakes = SC_MISTAKE_NOCPU_OFFCPU,
		    .why = "SC_MISTAKE_NOCPU_OFFCPU" },
		{ ARM64, .mistakes = SC_MISTAKE_STALE_ANSWER,
		    .why = "SC_ARCH_ARM64 with SC_PROTO_NMI, a mistake" },
		{ ARM64, .mistakes = SC_MISTAKE_NO_PROC_LOCK,
		    .why = "SC_ARCH_ARM64" },
		{ ARM64, .mistakes = SC_MISTAKE_SPIN_HELD,
		    .why = "SC_ARCH_ARM64" },
		{ ARM64, .hold_lock_across_ipi = 1, .why = "SC_ARCH_ARM64" },
		{ ARM64, .capture_serial = 1, .why = "capture_serial" },
		{ .sim_pct_depth = 3, .why = "sim_pct_depth without a seed" },
	};
	/* Defined: they drop the entry checks, as under SC_PROTO_IPI. */
	static const struct mixed_config nmi_no_proc_lock_spin_held = {
		NMI, .mistakes = SC_MISTAKE_NO_PROC_LOCK | SC_MISTAKE_SPIN_HELD
	};
	char *env = getenv("STACKCAP_SEED");
	const char *why;
	size_t i;
	int error, wrong = 0;

	(void)state;
	/* The seed may come from the environment: not here, at first. */
	env = env != NULL ? strdup(env) : NULL;
	unsetenv("STACKCAP_SEED");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		error = config_try(&bad[i], &why);
		if (error != EINVAL || strstr(why, bad[i].why) == NULL) {
			print_error("contradictory config %zu: %s, \"%s\"\n",
			    i, sc_errname(error), why);
			wrong++;
		}
	}
	/* A seed from STACKCAP_SEED is a seed; "0" and "-1" are none. */
	setenv("STACKCAP_SEED", "5", 1);
	wrong += config_try(&pct_no_seed, &why) != 0;
	wrong += *why != '\0';
	setenv("STACKCAP_SEED", "0", 1);
	wrong += config_try(&pct_no_seed, &why) != EINVAL;
	setenv("STACKCAP_SEED", "-1", 1);
	wrong += config_try(&pct_no_seed, &why) != EINVAL;
	unsetenv("STACKCAP_SEED");
	if (env != NULL) {
		setenv("STACKCAP_SEED", env, 1);
		free(env);
	}
	assert_int_equal(wrong, 0);
	assert_int_equal(config_try(&nmi_no_proc_lock_spin_held, &why), 0);
	assert_string_equal(why, "");
}
#undef NMI
#undef ARM64

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, sc_test_setup_2cpu, \
		    sc_test_teardown)
	const struct CMUnitTest tests[] = {
		T(test_swapout_proc_locked),
		T(test_swap_thread_locked),
		T(test_kstack_thread_locked),
		T(test_wakeup_spin_held),
		T(test_destroy_spin_held),
		T(test_create_spin_held),
		T(test_swapin_spin_held),
		T(test_nested_capture_from_hook),
		T(test_sleep_interrupts_disabled),
		T(test_mutex_with_spin_fast_path),
		T(test_join_idle),
		T(test_nested_user_call),
		T(test_lock_assertion_fires),
		T(test_runq_assertion_fires),
		T(test_contradictory_configs),
	};
#undef T

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
