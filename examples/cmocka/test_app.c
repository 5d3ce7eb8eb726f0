/*
 * A CMocka test of a user's, written against the installed stackcap and
 * its test helpers (<stackcap/cmocka.h>, which includes
 * <stackcap/testing.h>): what a test of one's own code on a simulated
 * machine looks like.  Three tests:
 * - a thread asleep at the end of a chain of calls: wait (bounded) until
 *   it sleeps, capture it, find the chain;
 * - a thread that runs on the other CPU: the capture interrupts it there;
 * - misuse: a capture without the thread lock is a KASSERT, which the
 *   panic handler turns into CMocka's expected assertion failure.
 *
 * Simulated threads never call CMocka (its assertions long-jump back to
 * the runner): they set atomics, the test's own thread waits and asserts.
 * Build with -fno-omit-frame-pointer: the capture walks frame pointers.
 * CMakeLists.txt here builds it against an installed stackcap and runs it
 * with ctest (tools/check_package.sh does).
 */
#include <stdatomic.h>

#include <stackcap.h>
#include <stackcap/cmocka.h>

static struct sc_machine *m;
static struct sc_proc *p;

static int
setup(void **state)
{
	(void)state;
	m = sc_test_machine(2);
	return (sc_proc_create(m, "app", &p));
}

static int
teardown(void **state)
{
	(void)state;
	sc_machine_destroy(m);
	sc_set_panic_handler(NULL);
	return (0);
}

/* ---- a sleeping thread ---- */

static atomic_int wake;		/* also the wait channel */

SC_NOIPA static void
app_wait(void *arg)
{
	(void)arg;
	while (!atomic_load(&wake))
		sc_sleep(&wake, "appwait");	/* may return spuriously */
	SC_BARRIER();
}
SC_CHAIN(app_worker, app_wait)
SC_CHAIN(app_main, app_worker)

/* A thread asleep in app_wait(), off its CPU. */
static struct sc_thread *
start_sleeper(void)
{
	struct sc_thread *td;

	atomic_store(&wake, 0);
	assert_int_equal(sc_thread_create(p, "sleeper", app_main, NULL, &td),
	    0);
	/* Bounded: a thread that never sleeps fails here, it never hangs. */
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SLEEPING);
	SC_WAIT_FOR(sc_thread_oncpu(td) == SC_NOCPU);
	return (td);
}

static void
stop_sleeper(struct sc_thread *td)
{
	atomic_store(&wake, 1);
	sc_wakeup(&wake);
	assert_int_equal(sc_thread_join(td), 0);
}

static void
test_sleeping_thread_stack(void **state)
{
	struct sc_thread *td;
	struct sc_stack st;

	(void)state;
	td = start_sleeper();
	assert_int_equal(sc_stack_save_td_locked(p, td, &st), 0);
	/* Innermost first; the frames of sc_sleep() may come between. */
	SC_ASSERT_CHAIN(&st, "app_wait", "app_worker", "app_main");
	assert_string_equal(sc_thread_wmesg(td), "appwait");
	stop_sleeper(td);
}

/* ---- a running thread ---- */

static atomic_int spinning, stop;

SC_NOIPA static void
app_spin(void *arg)
{
	(void)arg;
	atomic_store(&spinning, 1);
	while (!atomic_load(&stop))
		sc_maybe_yield();	/* stays RUNNING, lets others run */
	SC_BARRIER();
}
SC_CHAIN(app_compute, app_spin)

static void
test_running_thread_stack(void **state)
{
	struct sc_thread *td;
	struct sc_stack st;
	uint64_t ipis;
	int error;

	(void)state;
	atomic_store(&spinning, 0);
	atomic_store(&stop, 0);
	ipis = SC_COUNTER(m, ipis_sent);
	assert_int_equal(sc_thread_create(p, "spinner", app_compute, NULL,
	    &td), 0);
	SC_WAIT_FOR(atomic_load(&spinning));
	error = sc_stack_save_td_locked(p, td, &st);
	/* Interrupted in its own loop, or in sc_maybe_yield(): the chain is
	 * there either way; the interrupted function itself is not. */
	assert_int_equal(error, 0);
	SC_ASSERT_CHAIN(&st, "app_compute");
	assert_true(SC_COUNTER(m, ipis_sent) > ipis);
	atomic_store(&stop, 1);
	assert_int_equal(sc_thread_join(td), 0);
}

/* ---- misuse ---- */

static void
test_capture_needs_thread_lock(void **state)
{
	struct sc_thread *td;
	struct sc_stack st;

	(void)state;
	td = start_sleeper();
	/* The test's own thread, and no simulated thread can fail a
	 * KASSERT meanwhile: the CMocka handler may be installed. */
	sc_set_panic_handler(sc_test_panic_cmocka);
	expect_assert_failure(sc_stack_save_td(&st, td));
	sc_set_panic_handler(NULL);
	stop_sleeper(td);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sleeping_thread_stack,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_running_thread_stack,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_capture_needs_thread_lock, setup, teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
