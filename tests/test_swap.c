/*
 * Swapping kernel stacks out and in.
 *
 * Kernel counterpart: vm_swapout.c (swapout, faultin).
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
 * Swapping
 * ------------------------------------------------------------------------ */

/*
 * 1 CPU held: a runnable thread swapped out leaves the run queue
 * (INHIBITED, TDI_SWAPPED); the CPU goes idle and the thread still does
 * not run; swapped in, it runs.
 */
static void
test_swap_runnable(void **state)
{
	struct hold h = { 0 };
	struct seen s = { 0 };
	struct sc_thread *a, *b, *idle;
	uint64_t out0, in0;

	out0 = SC_COUNTER(tm, swapouts);
	in0 = SC_COUNTER(tm, swapins);
	a = sc_test_spawn("holder", hold_cpu, &h);
	SC_WAIT_FOR(atomic_load(&h.holding));
	b = sc_test_spawn("swappee", record_self, &s);
	assert_int_equal(sc_thread_state(b), SC_TDS_RUNQ);

	assert_int_equal(sc_thread_swapout(b), 0);
	assert_int_equal(sc_thread_state(b), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(b), SC_TDI_SWAPPED);
	assert_int_equal(SC_COUNTER(tm, swapouts) - out0, 1);
	assert_int_equal(sc_thread_swapout(b), EALREADY);
	/* The running holder can be neither swapped out nor in. */
	assert_int_equal(sc_thread_swapout(a), EBUSY);
	assert_int_equal(sc_thread_swapin(a), EINVAL);

	/* Release the CPU: it goes idle, b stays swapped and never ran. */
	atomic_store(&h.release, 1);
	assert_int_equal(sc_thread_join(a), 0);
	idle = sc_machine_idlethread(tm, 0);
	assert_non_null(idle);
	SC_WAIT_FOR(sc_thread_state(idle) == SC_TDS_RUNNING &&
	    sc_thread_oncpu(idle) == 0);
	assert_int_equal(sc_thread_state(b), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(b), SC_TDI_SWAPPED);
	assert_int_equal(atomic_load(&s.ran), 0);

	assert_int_equal(sc_thread_swapin(b), 0);
	assert_int_equal(SC_COUNTER(tm, swapins) - in0, 1);
	SC_WAIT_FOR(atomic_load(&s.ran));
	assert_int_equal(sc_thread_join(b), 0);
	assert_int_equal(atomic_load(&s.oncpu), 0);
	assert_int_equal(sc_thread_swapin(b), EINVAL);
	assert_int_equal(sc_thread_swapout(b), ESRCH);
}

/*
 * A sleeping thread swapped out; a wakeup clears TDI_SLEEPING but it stays
 * INHIBITED with TDI_SWAPPED (not on a run queue, not running); swapped
 * in, it runs.
 */
static void
test_swap_sleeping(void **state)
{
	struct sleeper s = { .wmesg = "swapslp" };
	struct sc_thread *td;
	uint64_t wk0;

	td = sc_test_spawn("sleeper", sleep_until_go, &s);
	WAIT_ASLEEP(td);
	assert_int_equal(sc_thread_swapout(td), 0);
	assert_int_equal(sc_thread_state(td), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(td),
	    SC_TDI_SLEEPING | SC_TDI_SWAPPED);

	wk0 = SC_COUNTER(tm, wakeups);
	atomic_store(&s.go, 1);
	sc_wakeup(&s);
	assert_int_equal(SC_COUNTER(tm, wakeups) - wk0, 1);
	assert_int_equal(sc_thread_state(td), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(td), SC_TDI_SWAPPED);
	assert_int_equal(sc_thread_oncpu(td), SC_NOCPU);
	assert_int_equal(atomic_load(&s.returns), 0);	/* cannot have run */

	assert_int_equal(sc_thread_swapin(td), 0);
	SC_WAIT_FOR(atomic_load(&s.done));
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(atomic_load(&s.returns), 1);
}

/* swapout of a running thread is EBUSY; swapin of one not swapped EINVAL;
 * swapout of an exited thread ESRCH. */
static void
test_swap_running_and_exited(void **state)
{
	struct spin s = { 0 };
	struct sc_thread *td;

	td = sc_test_spawn("spinner", spin_polite, &s);
	SC_WAIT_FOR(atomic_load(&s.spinning));
	/* Nothing else is runnable: sc_maybe_yield() never switches. */
	assert_int_equal(sc_thread_state(td), SC_TDS_RUNNING);
	assert_int_not_equal(sc_thread_oncpu(td), SC_NOCPU);
	assert_int_equal(sc_thread_swapout(td), EBUSY);
	assert_int_equal(sc_thread_swapin(td), EINVAL);
	assert_int_equal(sc_thread_state(td), SC_TDS_RUNNING);
	assert_int_equal(sc_thread_inhibitors(td), 0);
	atomic_store(&s.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_swapout(td), ESRCH);
	assert_int_equal(sc_thread_swapin(td), EINVAL);
}

/*
 * An idle thread is never swapped out (FreeBSD's swapout_procs() skips
 * P_SYSTEM): its CPU switches to it whenever the run queue is empty, and
 * would fault on a PROT_NONE stack.  1 CPU held, so the idle thread is
 * switched out (not RUNNING, where EBUSY would hide the bug).
 *
 * (The regression test of a fixed bug: sc_thread_swapout() accepted the
 * idle thread, and the CPU faulted as soon as it went idle.  Were it to
 * come back, this test fails at once while the holder still holds the CPU,
 * so the failure is a clean one.)
 */
static void
test_swapout_idle_thread_refused(void **state)
{
	static struct hold h;
	struct sc_thread *a, *idle;
	int error;

	memset(&h, 0, sizeof(h));
	a = sc_test_spawn("holder", hold_cpu, &h);
	SC_WAIT_FOR(atomic_load(&h.holding));
	idle = sc_machine_idlethread(tm, 0);
	assert_non_null(idle);
	assert_int_not_equal(sc_thread_state(idle), SC_TDS_RUNNING);
	error = sc_thread_swapout(idle);
	if (error == 0)
		fail_msg("sc_thread_swapout(idle thread) returned 0: the CPU "
		    "would fault when it next goes idle");
	assert_int_equal(sc_thread_inhibitors(idle), 0);
	assert_int_equal(sc_thread_swapin(idle), EINVAL);

	atomic_store(&h.release, 1);
	assert_int_equal(sc_thread_join(a), 0);
	SC_WAIT_FOR(sc_thread_state(idle) == SC_TDS_RUNNING &&
	    sc_thread_oncpu(idle) == 0);
	/* Running, it is refused too. */
	assert_int_not_equal(sc_thread_swapout(idle), 0);
	assert_int_equal(sc_thread_inhibitors(idle), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_swap_runnable,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_swap_sleeping,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_swap_running_and_exited,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_swapout_idle_thread_refused,
		    sc_test_setup_1cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
