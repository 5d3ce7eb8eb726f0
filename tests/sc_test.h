/*
 * What the project's own CMocka tests share beyond the installed
 * <stackcap/cmocka.h> and <stackcap/testing.h> (the bounded waits, the
 * stack searches, the panic handlers: include/stackcap/, for anyone who
 * writes tests against the library): the fixture of one machine and one
 * process per test, the CPU holder, the seed loop.  Include this instead
 * of <cmocka.h>.  Everything here runs on the test's own thread (a plain
 * pthread) unless its comment says otherwise; the rules of testing.h
 * (no timing asserted, CMocka on the test's thread only) hold here too.
 */
#ifndef SC_TEST_H
#define SC_TEST_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stackcap.h"
#include "stackcap/cmocka.h"
#include "sc_internal.h"	/* sc__env_seed(): tests link the archive */

#define SC_TEST_UNUSED	__attribute__((unused))

/*
 * Call chains with known frames: SC_NOIPA, SC_BARRIER() and SC_CHAIN() are
 * stackcap/testing.h's (installed, for anyone who writes tests against the
 * library).  docs/design.md, "Quality bars".
 */

/*
 * STACKCAP_SEED makes every machine of this process deterministic (a seed
 * other than 0, read as the library reads it): a test of what only real
 * concurrency has (an IPI signal that a CPU blocks) skips.  Any thread.
 */
static inline bool
sc_test_env_det(void)
{
	uint64_t seed;

	return (sc__env_seed(&seed) && seed != 0);
}

/* ------------------------------------------------------------------------
 * Thread bodies
 * ------------------------------------------------------------------------ */

/*
 * Holds its CPU: spins on an atomic without calling the library, so it
 * never yields, inside a critical section, so that neither the clock's
 * round robin nor a better thread made runnable (an ithread scheduled)
 * preempts it: the preemption waits for critical_exit() (td_owepreempt),
 * as it would for a kernel thread.  Interrupts stay on, so IPIs reach it.
 * On a 1-CPU machine nothing else runs until it is released.
 */
struct hold {
	atomic_int	holding;	/* set once running */
	atomic_int	release;	/* set by the test */
};

static SC_TEST_UNUSED void
hold_cpu(void *arg)
{
	struct hold *h = arg;

	sc_critical_enter();
	atomic_store(&h->holding, 1);
	while (!atomic_load(&h->release))
		__builtin_ia32_pause();
	sc_critical_exit();
}

/* ------------------------------------------------------------------------
 * Fixture
 * ------------------------------------------------------------------------ */

/*
 * The fixture of the tests that use one machine and one process per test:
 * sc_test_setup_Ncpu() makes them, sc_test_teardown() destroys them even
 * when the test failed, so a machine never outlives its test.
 */
static struct sc_machine *tm SC_TEST_UNUSED;	/* the test's machine */
static struct sc_proc *tp SC_TEST_UNUSED;	/* a process of tm */

static inline int
sc_test_setup(int ncpu)
{
	struct sc_machine_config cfg;

	sc_machine_config_init(&cfg);
	cfg.ncpu = ncpu;
	if (sc_machine_create(&cfg, &tm) != 0)
		return (-1);
	if (sc_proc_create(tm, "test", &tp) != 0)
		return (-1);
	sc_test_panic_reset();
	return (0);
}

static SC_TEST_UNUSED int
sc_test_setup_1cpu(void **state)
{
	return (sc_test_setup(1));
}

static SC_TEST_UNUSED int
sc_test_setup_2cpu(void **state)
{
	return (sc_test_setup(2));
}

static SC_TEST_UNUSED int
sc_test_setup_8cpu(void **state)
{
	return (sc_test_setup(8));
}

static SC_TEST_UNUSED int
sc_test_teardown(void **state)
{
	sc_machine_destroy(tm);
	tm = NULL;
	tp = NULL;
	sc_set_panic_handler(NULL);
	return (0);
}

/* A thread (an ithread) of tp running fn(arg), or fail. */
static inline struct sc_thread *
sc_test_spawn(const char *name, void (*fn)(void *), void *arg)
{
	struct sc_thread *td = NULL;

	assert_int_equal(sc_thread_create(tp, name, fn, arg, &td), 0);
	assert_non_null(td);
	return (td);
}

static inline struct sc_thread *
sc_test_spawn_ithread(const char *name, void (*fn)(void *), void *arg)
{
	struct sc_thread *td = NULL;

	assert_int_equal(sc_ithread_create(tp, name, fn, arg, &td), 0);
	assert_non_null(td);
	return (td);
}

/*
 * sc_test_seeds(body, arg, n): run body(seed, arg) in deterministic mode
 * for the seeds 1..n, or only for STACKCAP_SEED when it holds a seed (the
 * replay; read as the library reads it, src/machine.c); body returns 0,
 * or nonzero for a failure, which fails the test at the first failing
 * seed with the command that replays it.  body uses the seed as cfg.seed
 * (STACKCAP_SEED would override it anyway).  Returns how many seeds ran.
 * Test thread only.
 */
static inline int
sc_test_seeds(int (*body)(uint64_t seed, void *arg), void *arg, int n)
{
	uint64_t seed, last;
	int ran = 0;

	seed = 1;
	last = (uint64_t)n;
	if (sc__env_seed(&seed))
		last = seed;
	/* The test before the increment: the last seed may be 2^64 - 1,
	 * past which seed++ wraps to 0. */
	for (;; seed++) {
		ran++;
		if (body(seed, arg) != 0) {
			print_error("ERROR: seed %ju failed; replay it with\n"
			    "  STACKCAP_SEED=%ju %s\n", (uintmax_t)seed,
			    (uintmax_t)seed, program_invocation_name);
			_fail(__FILE__, __LINE__);
		}
		if (seed >= last)
			break;
	}
	return (ran);
}

#endif /* !SC_TEST_H */
