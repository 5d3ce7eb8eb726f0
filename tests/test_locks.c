/*
 * The thread lock and the proc lock: what holding each one guarantees.
 *
 * Kernel counterparts: kern_mutex.c (thread_lock), the proc lock of
 * sys/sys/proc.h.
 *
 * Rules: simulated threads never call CMocka (its assertions long-jump);
 * they record what they see in atomics that the test thread asserts.  No
 * test sleeps and hopes: each waits (bounded) for an observable condition,
 * a state, a flag or a counter, and no test asserts a timing.  States that
 * must hold "for a while" (a thread that must not run) are made
 * deterministic instead: the thread cannot run at all (it is off every run
 * queue, or the only CPU is held by a thread that never yields).
 */
#include <errno.h>
#include <stdlib.h>

#include "sc_test.h"
#include "sc_test_bodies.h"

/* ------------------------------------------------------------------------
 * The thread lock keeps a thread that is not running from starting
 * ------------------------------------------------------------------------ */

/* Waits (politely) for `go`, then performs one action that needs a lock. */
struct actor {
	atomic_int	ready, go, acted;
	void		(*action)(void *);
	void		*action_arg;
};

static void
act_on_go(void *arg)
{
	struct actor *a = arg;

	atomic_store(&a->ready, 1);
	while (!atomic_load(&a->go))
		sc_maybe_yield();
	a->action(a->action_arg);
	atomic_store(&a->acted, 1);
}

static void
action_wakeup(void *wchan)
{
	sc_wakeup(wchan);
}

static void
action_ischedule(void *td)
{
	(void)sc_ithread_schedule(td);
}

/*
 * A sleeper's td_lock is its sleep-queue chain lock.  The test holds it;
 * a simulated waker calls sc_wakeup() and spins on that lock (spin_waits:
 * nothing else takes a spin lock meanwhile); the sleeper is still asleep;
 * on unlock the wakeup goes through and the sleeper runs.
 */
static void
test_thread_lock_keeps_sleeper_asleep(void **state)
{
	struct sleeper s = { .wmesg = "locked" };
	struct actor w = { .action = action_wakeup, .action_arg = &s };
	struct sc_thread *sleeper, *waker;
	uint64_t sw0;

	sleeper = sc_test_spawn("sleeper", sleep_until_go, &s);
	WAIT_ASLEEP(sleeper);
	waker = sc_test_spawn("waker", act_on_go, &w);
	SC_WAIT_FOR(atomic_load(&w.ready));

	atomic_store(&s.go, 1);
	sc_thread_lock(sleeper);
	assert_true(sc_thread_lock_owned(sleeper));
	sw0 = SC_COUNTER(tm, spin_waits);
	atomic_store(&w.go, 1);
	SC_WAIT_COUNTER_ABOVE(tm, spin_waits, sw0);
	/* The waker waits for the lock we hold: the sleeper sleeps on. */
	assert_int_equal(atomic_load(&w.acted), 0);
	assert_int_equal(sc_thread_state(sleeper), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(sleeper), SC_TDI_SLEEPING);
	assert_int_equal(atomic_load(&s.returns), 0);
	sc_thread_unlock(sleeper);

	SC_WAIT_FOR(atomic_load(&s.done));
	assert_int_equal(sc_thread_join(sleeper), 0);
	assert_int_equal(sc_thread_join(waker), 0);
	assert_int_equal(atomic_load(&w.acted), 1);
}

/*
 * 1 CPU: a RUNQ thread's td_lock is the sched_lock.  The test holds it;
 * the running thread yields and its switch spins on that lock; the RUNQ
 * thread has not started; on unlock the switch goes through and it runs.
 */
struct hold_yield {
	struct hold	h;
	atomic_int	yielded;
};

static void
hold_then_yield(void *arg)
{
	struct hold_yield *hy = arg;

	hold_cpu(&hy->h);
	sc_yield();
	atomic_store(&hy->yielded, 1);
}

static void
test_thread_lock_keeps_runq_thread_off_cpu(void **state)
{
	struct hold_yield hy = { 0 };
	struct seen s = { 0 };
	struct sc_thread *a, *b;
	uint64_t sw0;

	a = sc_test_spawn("holder", hold_then_yield, &hy);
	SC_WAIT_FOR(atomic_load(&hy.h.holding));
	b = sc_test_spawn("waiting", record_self, &s);
	assert_int_equal(sc_thread_state(b), SC_TDS_RUNQ);

	sc_thread_lock(b);
	sw0 = SC_COUNTER(tm, spin_waits);
	atomic_store(&hy.h.release, 1);
	SC_WAIT_COUNTER_ABOVE(tm, spin_waits, sw0);
	assert_int_equal(sc_thread_state(b), SC_TDS_RUNQ);
	assert_int_equal(sc_thread_oncpu(b), SC_NOCPU);
	assert_int_equal(atomic_load(&s.ran), 0);
	assert_int_equal(atomic_load(&hy.yielded), 0);
	sc_thread_unlock(b);

	SC_WAIT_FOR(atomic_load(&s.ran));
	assert_int_equal(sc_thread_join(b), 0);
	assert_int_equal(sc_thread_join(a), 0);
	assert_int_equal(atomic_load(&hy.yielded), 1);
}

/*
 * An ithread's td_lock is the sched_lock: held by the test, a simulated
 * thread's sc_ithread_schedule() spins on it and the ithread stays in
 * IWAIT; on unlock it is scheduled and runs.
 */
static void
test_thread_lock_keeps_ithread_waiting(void **state)
{
	struct seen s = { 0 };
	struct actor w = { .action = action_ischedule };
	struct sc_thread *it, *sched;
	uint64_t sw0;

	it = sc_test_spawn_ithread("ithread", record_self, &s);
	w.action_arg = it;
	sched = sc_test_spawn("scheduler", act_on_go, &w);
	SC_WAIT_FOR(atomic_load(&w.ready));

	sc_thread_lock(it);
	sw0 = SC_COUNTER(tm, spin_waits);
	atomic_store(&w.go, 1);
	SC_WAIT_COUNTER_ABOVE(tm, spin_waits, sw0);
	assert_int_equal(atomic_load(&w.acted), 0);
	assert_int_equal(sc_thread_state(it), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(it), SC_TDI_IWAIT);
	assert_int_equal(atomic_load(&s.ran), 0);
	sc_thread_unlock(it);

	SC_WAIT_FOR(atomic_load(&s.ran));
	assert_int_equal(sc_thread_join(it), 0);
	assert_int_equal(sc_thread_join(sched), 0);
}

/* ------------------------------------------------------------------------
 * A CPU that waits for its only spin lock takes interrupts meanwhile
 * (_mtx_lock_spin_cookie(), thread_lock_flags_()); one that waits inside
 * another spinlock section does not
 * ------------------------------------------------------------------------ */

/* Holds td's thread lock, spinning on its CPU, until `release`. */
struct holder {
	struct sc_thread *td;
	atomic_int	held, release;
};

static void
hold_thread_lock(void *arg)
{
	struct holder *h = arg;

	sc_thread_lock(h->td);
	atomic_store(&h->held, 1);
	while (!atomic_load(&h->release))
		;
	sc_thread_unlock(h->td);
}

/* Spins on its CPU until `go`, then wants td's thread lock: alone, or
 * inside a spinlock section of its own (nested). */
struct wanter {
	struct sc_thread *td;
	bool		nested;
	atomic_int	go, done;
};

static SC_NOIPA void
want_thread_lock(struct wanter *w)
{
	if (w->nested)
		sc_spinlock_enter();
	sc_thread_lock(w->td);
	sc_thread_unlock(w->td);
	if (w->nested)
		sc_spinlock_exit();
	SC_BARRIER();
}

static SC_NOIPA void
wanter_main(void *arg)
{
	struct wanter *w = arg;

	while (!atomic_load(&w->go))
		;
	want_thread_lock(w);
	atomic_store(&w->done, 1);
}

/*
 * 2 CPUs: a sleeper; a holder that keeps the sleeper's lock (its chain
 * lock) on one CPU; a wanter that waits for it on the other.  Capture the
 * wanter while it waits, then let it have the lock and stop the three.
 */
static int
capture_spin_waiter(bool nested, struct sc_stack *st)
{
	struct sleeper s = { .wmesg = "held" };
	struct holder h = { 0 };
	struct wanter w = { .nested = nested };
	struct sc_thread *sleeper, *holder, *wanter;
	uint64_t sw0;
	int error;

	sleeper = sc_test_spawn("sleeper", sleep_until_go, &s);
	WAIT_ASLEEP(sleeper);
	h.td = w.td = sleeper;
	holder = sc_test_spawn("holder", hold_thread_lock, &h);
	SC_WAIT_FOR(atomic_load(&h.held));
	wanter = sc_test_spawn("wanter", wanter_main, &w);
	SC_WAIT_FOR(sc_thread_oncpu(wanter) != SC_NOCPU);
	sw0 = SC_COUNTER(tm, spin_waits);
	atomic_store(&w.go, 1);
	SC_WAIT_COUNTER_ABOVE(tm, spin_waits, sw0);
	error = sc_stack_save_td_locked(tp, wanter, st);
	atomic_store(&h.release, 1);
	SC_WAIT_FOR(atomic_load(&w.done));
	atomic_store(&s.go, 1);
	sc_wakeup(&s);
	assert_int_equal(sc_thread_join(wanter), 0);
	assert_int_equal(sc_thread_join(holder), 0);
	assert_int_equal(sc_thread_join(sleeper), 0);
	return (error);
}

/*
 * Regression: the wait kept interrupts disabled throughout, so the IPI
 * waited for the lock and the capture timed out.  Now the wanter's CPU
 * takes it between attempts and answers with a stack through the wait.
 * TSan runs the handler late, at an interceptor, with frames that are not
 * the wait's (tests/sc_test_scn.h): there only the answer is asserted.
 */
static void
test_spin_wait_takes_ipi(void **state)
{
	struct sc_stack st;

	assert_int_equal(capture_spin_waiter(false, &st), 0);
#if !defined(SC_SANITIZER_THREAD)
	SC_ASSERT_CHAIN(&st, "sc_thread_lock", "want_thread_lock",
	    "wanter_main");
#endif
	assert_int_equal(SC_COUNTER(tm, timeouts), 0);
	assert_int_equal(SC_COUNTER(tm, trace_answered), 1);
}

/*
 * Inside its own spinlock section the wanter's CPU keeps interrupts off
 * while it waits: the IPI is deferred, the capture times out, and the
 * handler runs late, at the section's end, to find no open request.
 */
static void
test_spin_wait_nested_keeps_ipi_pending(void **state)
{
	struct sc_stack st;

	assert_int_equal(capture_spin_waiter(true, &st), ETIMEDOUT);
	assert_int_equal(st.depth, 0);
	assert_int_equal(SC_COUNTER(tm, timeouts), 1);
	assert_int_equal(SC_COUNTER(tm, trace_answered), 0);
	SC_WAIT_COUNTER_ABOVE(tm, trace_stale, 0);
}

/* ------------------------------------------------------------------------
 * The proc lock keeps a thread from exiting
 * ------------------------------------------------------------------------ */

static void
test_proc_lock_keeps_thread_from_exiting(void **state)
{
	struct spin s = { 0 };
	struct sc_thread *td;
	uint64_t pw0, exits0;

	td = sc_test_spawn("exiter", spin_polite, &s);
	SC_WAIT_FOR(atomic_load(&s.spinning));

	sc_proc_lock(tp);
	assert_true(sc_proc_lock_owned(tp));
	pw0 = SC_COUNTER(tm, proc_lock_waits);
	exits0 = SC_COUNTER(tm, exits);
	atomic_store(&s.release, 1);
	/* Its function returned; thread_exit() waits for the proc lock. */
	SC_WAIT_COUNTER_ABOVE(tm, proc_lock_waits, pw0);
	assert_int_equal(atomic_load(&s.returning), 1);
	assert_false(sc_thread_exited(td));
	assert_int_not_equal(sc_thread_state(td), SC_TDS_INACTIVE);
	assert_int_equal(SC_COUNTER(tm, exits), exits0);
	sc_proc_unlock(tp);

	assert_int_equal(sc_thread_join(td), 0);
	assert_true(sc_thread_exited(td));
	assert_int_equal(sc_thread_state(td), SC_TDS_INACTIVE);
	assert_int_equal(SC_COUNTER(tm, exits) - exits0, 1);
	assert_false(sc_proc_lock_owned(tp));
}

/* ------------------------------------------------------------------------
 * A proc-lock taker is not starved by snapshots taken back to back
 * ------------------------------------------------------------------------ */

#define SNAP_MAX	2000	/* the loop's length: starvation, if any */
#define SNAP_BOUND	100	/* snapshots a taker may wait through */

struct taker {
	atomic_int	go;		/* the loop runs: take the lock */
	atomic_uint	snaps;		/* snapshots done by the loop */
	atomic_int	done;		/* the taker got and dropped the lock */
	atomic_uint	waited;		/* snapshots done while it waited */
};

static void
take_proc_lock(struct taker *t)
{
	unsigned s0;

	while (!atomic_load(&t->go))
		sc_maybe_yield();
	s0 = atomic_load(&t->snaps);
	sc_proc_lock(tp);
	atomic_store(&t->waited, atomic_load(&t->snaps) - s0);
	sc_proc_unlock(tp);
	atomic_store(&t->done, 1);
}

static void *
taker_pthread(void *arg)
{
	take_proc_lock(arg);
	return (NULL);
}

static void
taker_thread(void *arg)
{
	take_proc_lock(arg);
}

/*
 * Regression: a snapshot holds every proc lock, and one that unlocked and
 * locked again at once took the lock back before the woken waiter ran
 * (a loaded host widens that gap), for as long as snapshots ran.  Now a
 * waiter that lost once reserves the lock for itself: the taker gets it
 * within a few snapshots (SNAP_BOUND is generous; starvation waits through
 * all SNAP_MAX).
 */
static void
proc_lock_not_starved(bool simulated)
{
	struct sc_kstack kk[8];
	struct taker t = { 0 };
	struct spin s = { 0 };
	struct sc_thread *spinner, *td = NULL;
	pthread_t pt;
	size_t n;
	unsigned i;

	spinner = sc_test_spawn("spinner", spin_polite, &s);
	SC_WAIT_FOR(atomic_load(&s.spinning));
	if (simulated)
		td = sc_test_spawn("taker", taker_thread, &t);
	else
		assert_int_equal(pthread_create(&pt, NULL, taker_pthread, &t),
		    0);
	for (i = 0; i < SNAP_MAX && !atomic_load(&t.done); i++) {
		assert_int_equal(sc_machine_snapshot(tm, kk, 8, &n), 0);
		atomic_fetch_add(&t.snaps, 1);
		atomic_store(&t.go, 1);
	}
	SC_WAIT_FOR(atomic_load(&t.done));
	if (simulated)
		assert_int_equal(sc_thread_join(td), 0);
	else
		assert_int_equal(pthread_join(pt, NULL), 0);
	print_message("proc-lock taker (%s) waited through %u snapshots\n",
	    simulated ? "simulated thread" : "pthread", atomic_load(&t.waited));
	assert_true(atomic_load(&t.waited) <= SNAP_BOUND);
	atomic_store(&s.release, 1);
	assert_int_equal(sc_thread_join(spinner), 0);
}

static void
test_proc_lock_pthread_not_starved(void **state)
{
	(void)state;
	proc_lock_not_starved(false);
}

static void
test_proc_lock_thread_not_starved(void **state)
{
	(void)state;
	proc_lock_not_starved(true);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_thread_lock_keeps_sleeper_asleep,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_thread_lock_keeps_runq_thread_off_cpu,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_thread_lock_keeps_ithread_waiting,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_spin_wait_takes_ipi,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_spin_wait_nested_keeps_ipi_pending,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_proc_lock_keeps_thread_from_exiting,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_proc_lock_pthread_not_starved,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_proc_lock_thread_not_starved,
		    sc_test_setup_2cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
