/*
 * A CMocka test of a user's that arms the hang watchdog of
 * <stackcap/host.h> around each test: when a test overruns its bound, the
 * watchdog prints every thread of the process to stderr, with its stack,
 * and aborts, so the failure says where each thread was instead of only
 * "Timeout".  Nothing here runs on a simulated machine: these are the
 * process's own pthreads.
 *
 * Two tests: two workers that take two locks in the same order (passes),
 * and, with --hang on the command line, the same workers taking them in
 * opposite orders (a deadlock: the dump shows each worker in
 * pthread_mutex_lock() below the function that took its first lock).
 *
 * The bound: sc_host_watchdog_arm()'s argument, or STACKCAP_WATCHDOG
 * (seconds) when it is set.  Under ctest, set STACKCAP_WATCHDOG a few
 * seconds under the test's TIMEOUT (CMakeLists.txt here does): ctest
 * kills a test at its TIMEOUT with SIGKILL, which leaves no dump.
 * Build with -fno-omit-frame-pointer; glibc's own frames are walked with
 * libunwind.
 */
#include <pthread.h>
#include <string.h>

#include <stackcap/host.h>
#include <stackcap/cmocka.h>

#define BOUND_NS	30000000000L	/* unless STACKCAP_WATCHDOG says */

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold;
static int transfers;

/* Takes first, then (once the other worker holds its first) second. */
SC_NOIPA static void
transfer(pthread_mutex_t *first, pthread_mutex_t *second, bool meet)
{
	pthread_mutex_lock(first);
	if (meet)
		pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(second);
	transfers++;
	pthread_mutex_unlock(second);
	pthread_mutex_unlock(first);
}

SC_NOIPA static void *
worker_ab(void *arg)
{
	transfer(&lock_a, &lock_b, arg != NULL);
	SC_BARRIER();
	return (NULL);
}

SC_NOIPA static void *
worker_ba(void *arg)
{
	transfer(&lock_b, &lock_a, arg != NULL);
	SC_BARRIER();
	return (NULL);
}

static void
run_workers(void *(*w1)(void *), void *(*w2)(void *), bool meet)
{
	pthread_t t1, t2;

	transfers = 0;
	pthread_barrier_init(&both_hold, NULL, 2);
	assert_int_equal(pthread_create(&t1, NULL, w1, meet ? &t1 : NULL), 0);
	assert_int_equal(pthread_create(&t2, NULL, w2, meet ? &t2 : NULL), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	pthread_barrier_destroy(&both_hold);
}

/* Each test runs under the watchdog; a test that returns disarms it. */
static int
arm(void **state)
{
	(void)state;
	return (sc_host_watchdog_arm(BOUND_NS) == 0 ? 0 : -1);
}

static int
disarm(void **state)
{
	(void)state;
	sc_host_watchdog_disarm();
	return (0);
}

static void
test_same_order(void **state)
{
	(void)state;
	run_workers(worker_ab, worker_ab, false);
	assert_int_equal(transfers, 2);
}

/* The bug: opposite orders, and both workers hold their first lock. */
static void
test_opposite_order(void **state)
{
	(void)state;
	run_workers(worker_ab, worker_ba, true);
	assert_int_equal(transfers, 2);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_order, arm, disarm),
		cmocka_unit_test_setup_teardown(test_opposite_order, arm,
		    disarm),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);

	if (argc < 2 || strcmp(argv[1], "--hang") != 0)
		n--;		/* the deadlock only when asked */
	return (_cmocka_run_group_tests("watchdog", tests, n, NULL, NULL));
}
