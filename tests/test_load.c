/*
 * What went wrong on a loaded host (bench/load.sh, docs/benchmarks.md),
 * staged here so that it shows without a load.
 *
 * - A requester that finds its target RUNNING with td_oncpu NOCPU waits
 *   with the target's lock dropped: under ULE the target needs that lock
 *   (its new CPU's run-queue lock) to set td_oncpu, and a requester that
 *   took it again after every cpu_spinwait() held it nearly all the time,
 *   so that a CPU pthread that Linux ran only now and then found it held
 *   at every turn and the capture ran to its bound.
 *
 * Kernel counterpart: stack_save_td() in sys/x86/x86/stack_machdep.c
 * (which does re-take the lock after one cpu_spinwait()) and
 * sched_fork_exit() in sys/kern/sched_ule.c.
 */
#include <errno.h>

#include "sc_test.h"

/* ------------------------------------------------------------------------
 * The NOCPU wait does not hold the target's lock
 * ------------------------------------------------------------------------ */

struct incoming {
	struct sc_thread *_Atomic td;	/* the target */
	atomic_int	fired;		/* its switch is held in the window */
	uint64_t	nocpu0;		/* retry_nocpu before the capture */
};

/*
 * Holds the switch that brings the target in, in ULE's window (RUNNING,
 * td_oncpu NOCPU, its lock free), until the requester has met NOCPU, then
 * a while longer: a requester that loops through its lock again and again
 * counts a NOCPU retry at every turn meanwhile.  Interrupts are disabled
 * here: spin on atomics only, bounded.
 */
static void
hold_incoming(void *arg, enum sc_hook_point pt, struct sc_thread *td)
{
	struct incoming *in = arg;
	struct sc_deadline dl;

	if (pt != SC_HOOK_SWITCH_INCOMING || td != atomic_load(&in->td) ||
	    atomic_exchange(&in->fired, 1) != 0)
		return;
	sc_deadline_start(&dl, (uint64_t)SC_TEST_TIMEOUT_MS * 1000 * 1000);
	while (SC_COUNTER(tm, retry_nocpu) == in->nocpu0 &&
	    !sc_deadline_passed(&dl))
		__builtin_ia32_pause();
	sc_deadline_start(&dl, 50 * 1000 * 1000);
	while (SC_COUNTER(tm, retry_nocpu) < in->nocpu0 + 8 &&
	    !sc_deadline_passed(&dl))
		__builtin_ia32_pause();
}

static atomic_int wake_chan;

static void
sleep_then_spin(void *arg)
{
	sc_sleep(&wake_chan, "wait");
	hold_cpu(arg);
}

static void
test_nocpu_wait_drops_lock(void **state)
{
	struct incoming in = { .td = NULL };
	struct hold h = { 0 };
	struct sc_machine_config cfg;
	struct sc_thread *td;
	struct sc_stack st;
	int error;

	(void)state;
	sc_machine_config_init(&cfg);
	if (cfg.sched != SC_SCHED_ULE)
		skip();		/* 4BSD sets td_oncpu under the sched_lock */
	td = sc_test_spawn("target", sleep_then_spin, &h);
	SC_WAIT_FOR(sc_thread_state(td) == SC_TDS_INHIBITED);
	atomic_store(&in.td, td);
	in.nocpu0 = SC_COUNTER(tm, retry_nocpu);
	sc_machine_set_hook(tm, hold_incoming, &in);
	sc_wakeup(&wake_chan);
	SC_WAIT_FOR(atomic_load(&in.fired));
	error = sc_stack_save_td_locked(tp, td, &st);
	sc_machine_set_hook(tm, NULL, NULL);
	assert_true(error == 0 || error == EBUSY);
	/* One NOCPU turn: the requester waited with the lock dropped. */
	assert_int_equal(SC_COUNTER(tm, retry_nocpu) - in.nocpu0, 1);
	atomic_store(&h.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nocpu_wait_drops_lock,
		    sc_test_setup_2cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
