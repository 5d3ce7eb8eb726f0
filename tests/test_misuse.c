/*
 * Misuse through the public API, with a panic handler that returns: each
 * failed check makes the public call return EINVAL with every lock as the
 * caller held it (never "does the work and drops the caller's lock"), and
 * no wait is unbounded after it.  A simulated thread that fails a check is
 * parked for good, and sc_thread_join() on it says so.
 *
 * Kernel counterparts: the KASSERTs and mtx_assert()s at the top of
 * FreeBSD's functions (sys/kern/kern_synch.c mi_switch(),
 * sys/kern/kern_mutex.c, sys/vm/vm_swapout.c), and stack_save_td()'s
 * (sys/x86/x86/stack_machdep.c).
 */
#include <errno.h>
#include <pthread.h>

#include "sc_test.h"
#include "sc_internal.h"	/* sc__td_uninhibit(), for the lock assertion */

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

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, sc_test_setup_2cpu, \
		    sc_test_teardown)
	const struct CMUnitTest tests[] = {
		T(test_swapout_proc_locked),
		T(test_swap_thread_locked),
		T(test_kstack_thread_locked),
		T(test_nested_capture_from_hook),
		T(test_sleep_interrupts_disabled),
		T(test_mutex_with_spin_fast_path),
		T(test_join_idle),
		T(test_nested_user_call),
		T(test_lock_assertion_fires),
	};
#undef T

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
