/*
 * Helpers shared by the CMocka tests (not part of the library).
 *
 * Include this instead of <cmocka.h> (it includes sc_cmocka.h).
 * Everything here runs on the test's own thread (a plain pthread) unless
 * its comment says otherwise: CMocka's assertions long-jump back to the
 * test runner, which must never happen from a simulated thread's stack.
 * Simulated threads record what they see in globals; the test asserts.
 *
 * Rules the helpers follow, and that tests using them should follow too:
 * - never assert a timing: every wait is a bounded poll for an observable
 *   condition (a state, a counter, a flag), and the bound only turns a hang
 *   into a clear failure;
 * - the bound is SC_TEST_TIMEOUT_MS (define it before including this file
 *   to change it); keep it well below the ctest TIMEOUT of the test.
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

#include "sc_cmocka.h"

#include "stackcap.h"
#include "stackcap/testing.h"
#include "sc_internal.h"	/* sc__env_seed(): tests link the archive */

#define SC_TEST_UNUSED	__attribute__((unused))

/*
 * The bound of every wait, in milliseconds.  Generous on purpose: sanitizer
 * builds and a loaded 2-core machine are slow, and a test never depends on
 * the value (it only fails later on a hang).
 */
#ifndef SC_TEST_TIMEOUT_MS
#define SC_TEST_TIMEOUT_MS	20000L
#endif

/*
 * Call chains with known frames: SC_NOIPA, SC_BARRIER() and SC_CHAIN() are
 * stackcap/testing.h's (installed, for anyone who writes tests against the
 * library).  docs/design.md, "Quality bars".
 */

/* ------------------------------------------------------------------------
 * Bounded waits
 * ------------------------------------------------------------------------ */

/* The clock and the deadline are stackcap/testing.h's (struct sc_deadline). */

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

/* Start a deadline timeout_ms from now. */
static inline void
sc_test_deadline_start(struct sc_deadline *dl, long timeout_ms)
{
	sc_deadline_start(dl, (uint64_t)timeout_ms * 1000000ULL);
}

/*
 * One poll step: sleep a little (200 us: short enough for fast tests, long
 * enough to leave the real cores to the simulated CPUs), then return true
 * when the deadline has passed.
 */
static inline bool
sc_test_deadline_poll(struct sc_deadline *dl)
{
	struct timespec nap = { 0, 200 * 1000 };

	/* Deterministic mode: let the machine run (a scheduling point); a
	 * nap there would only slow virtual time, which passes at the
	 * points: a bound of 200 ms is 200,000 of them. */
	sc_maybe_yield();
	if (!sc_test_env_det())
		nanosleep(&nap, NULL);
	return (sc_deadline_passed(dl));
}

/*
 * SC_WAIT_FOR(cond): poll the expression cond until it is true; after
 * SC_TEST_TIMEOUT_MS, fail the test with "timed out waiting for <cond>"
 * and the caller's file and line.  Test thread only.
 */
#define SC_WAIT_FOR(cond) do {						\
	struct sc_deadline sc_wf_dl_;				\
									\
	sc_test_deadline_start(&sc_wf_dl_, SC_TEST_TIMEOUT_MS);	\
	while (!(cond)) {						\
		if (sc_test_deadline_poll(&sc_wf_dl_) && !(cond)) {	\
			print_error("ERROR: timed out (%ld ms) waiting "\
			    "for %s\n", SC_TEST_TIMEOUT_MS, #cond);	\
			_fail(__FILE__, __LINE__);			\
		}							\
	}								\
} while (0)

/*
 * sc_wait_until(pred, arg, timeout_ms, what): the same with a predicate
 * function: poll pred(arg) until it returns true; after timeout_ms, fail
 * the test with "timed out waiting for <what>" at the caller's line.
 * Test thread only.
 */
#define sc_wait_until(pred, arg, timeout_ms, what)			\
	sc_test_wait_until_at((pred), (arg), (timeout_ms), (what),	\
	    __FILE__, __LINE__)

static inline void
sc_test_wait_until_at(bool (*pred)(void *), void *arg, long timeout_ms,
    const char *what, const char *file, int line)
{
	struct sc_deadline dl;

	sc_test_deadline_start(&dl, timeout_ms);
	while (!pred(arg)) {
		if (sc_test_deadline_poll(&dl) && !pred(arg)) {
			print_error("ERROR: timed out (%ld ms) waiting for "
			    "%s\n", timeout_ms, what);
			_fail(file, line);
		}
	}
}

/*
 * SC_WAIT_STATE(td, state, inh): wait until td is in `state` with at least
 * the inhibitor bits `inh` (0: any).  Test thread only.
 */
#define SC_WAIT_STATE(td, state, inh)					\
	SC_WAIT_FOR(sc_thread_state(td) == (state) &&			\
	    (sc_thread_inhibitors(td) & (inh)) == (inh))

/*
 * sc_test_run_bounded(fn, arg): run fn(arg) on a pthread of its own and
 * fail the test if it has not returned within SC_TEST_TIMEOUT_MS: a call
 * that may hang (a destroy, a capture under test) becomes a failure, and
 * the stuck pthread is left behind.  Test thread only.
 */
struct sc_test_bounded {
	void		(*fn)(void *);
	void		*arg;
	atomic_int	done;
};

static inline void *
sc_test_bounded_main(void *arg)
{
	struct sc_test_bounded *b = arg;

	b->fn(b->arg);
	atomic_store(&b->done, 1);
	return (NULL);
}

#define sc_test_run_bounded(fn, arg) do {				\
	struct sc_test_bounded sc_rb_ = { (fn), (arg), 0 };		\
	pthread_t sc_rb_t_;						\
									\
	assert_int_equal(pthread_create(&sc_rb_t_, NULL,		\
	    sc_test_bounded_main, &sc_rb_), 0);				\
	SC_WAIT_FOR(atomic_load(&sc_rb_.done));			\
	assert_int_equal(pthread_join(sc_rb_t_, NULL), 0);		\
} while (0)

/* ------------------------------------------------------------------------
 * Counters
 * ------------------------------------------------------------------------ */

/* SC_COUNTER(m, field): one counter of m, now.  Any thread. */
#define SC_COUNTER(m, field)	(sc_counters_get(m).field)

/*
 * SC_WAIT_COUNTER_ABOVE(m, field, base): wait until m's counter `field`
 * exceeds base (a value read earlier, e.g. SC_COUNTER(m, spin_waits)).
 * This is how a test observes that a CPU waited for a lock.  Test thread.
 */
#define SC_WAIT_COUNTER_ABOVE(m, field, base)				\
	SC_WAIT_FOR(SC_COUNTER(m, field) > (uint64_t)(base))

/* ------------------------------------------------------------------------
 * Machines
 * ------------------------------------------------------------------------ */

/* A machine with ncpu CPUs and the default configuration, or fail. */
static inline struct sc_machine *
sc_test_machine(int ncpu)
{
	struct sc_machine_config cfg;
	struct sc_machine *m = NULL;

	sc_machine_config_init(&cfg);
	cfg.ncpu = ncpu;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_non_null(m);
	return (m);
}

/* ------------------------------------------------------------------------
 * Panic handlers (sc_set_panic_handler)
 * ------------------------------------------------------------------------ */

/*
 * sc_test_panic_record: a handler that records the message and returns.
 * On a plain pthread the failing call then returns EINVAL; on a simulated
 * thread that thread is parked for good (INHIBITED, SC_TDI_SUSPENDED).
 * Any thread.  Read with sc_test_panic_count() / sc_test_panic_msg() once
 * the count has moved (SC_WAIT_FOR(sc_test_panic_count() > n)).  Call
 * sc_test_panic_reset() before each use.
 */
static char sc_test_panic_buf[512] SC_TEST_UNUSED;
static _Atomic int sc_test_panic_n SC_TEST_UNUSED;

static SC_TEST_UNUSED void
sc_test_panic_record(const char *msg)
{
	/* The message first; the count publishes it (seq_cst). */
	snprintf(sc_test_panic_buf, sizeof(sc_test_panic_buf), "%s", msg);
	atomic_fetch_add(&sc_test_panic_n, 1);
}

static inline int
sc_test_panic_count(void)
{
	return (atomic_load(&sc_test_panic_n));
}

/* The last recorded message (valid once sc_test_panic_count() moved). */
static inline const char *
sc_test_panic_msg(void)
{
	return (sc_test_panic_buf);
}

static inline void
sc_test_panic_reset(void)
{
	sc_test_panic_buf[0] = '\0';
	atomic_store(&sc_test_panic_n, 0);
}

/*
 * sc_test_panic_cmocka: a handler for the test's own thread that turns the
 * KASSERT into a CMocka assertion: inside expect_assert_failure(call) it
 * long-jumps back to the test (the expected failure); anywhere else it
 * fails the test with the message.  Never install it while a simulated
 * thread may fail an assertion (it would long-jump across stacks).
 */
static SC_TEST_UNUSED void
sc_test_panic_cmocka(const char *msg)
{
	mock_assert(0, msg, __FILE__, __LINE__);
}

/* ------------------------------------------------------------------------
 * Symbolised stacks
 * ------------------------------------------------------------------------ */

/*
 * The index of the first frame of st, from `from` on, whose symbol (by
 * sc_symbolize) is `name`; -1 if none.  Not a signal handler.
 */
static inline int
sc_test_stack_find(const struct sc_stack *st, int from, const char *name)
{
	char sym[128];
	uintptr_t off;
	int i;

	for (i = from < 0 ? 0 : from; i < st->depth; i++) {
		if (sc_symbolize(st->pcs[i], sym, sizeof(sym), &off) == 0 &&
		    strcmp(sym, name) == 0)
			return (i);
	}
	return (-1);
}

/*
 * Does st contain the frames names[0..n) in that order (innermost first),
 * each strictly after the previous one?  Other frames may come between.
 */
static inline bool
sc_test_stack_has_chain(const struct sc_stack *st, const char *const *names,
    int n)
{
	int i, at = 0;

	for (i = 0; i < n; i++) {
		at = sc_test_stack_find(st, at, names[i]);
		if (at < 0)
			return (false);
		at++;
	}
	return (true);
}

/*
 * SC_ASSERT_CHAIN(st, "f3", "f2", "f1"): fail, printing the stack in
 * procstat -kk form, unless st holds those frames in that order.
 */
#define SC_ASSERT_CHAIN(st, ...) do {					\
	static const char *const sc_ac_names_[] = { __VA_ARGS__ };	\
	char sc_ac_buf_[1024];						\
									\
	if (!sc_test_stack_has_chain((st), sc_ac_names_,		\
	    (int)(sizeof(sc_ac_names_) / sizeof(sc_ac_names_[0])))) {	\
		sc_stack_format_kk((st), sc_ac_buf_,			\
		    sizeof(sc_ac_buf_));				\
		print_error("ERROR: stack (depth %d) lacks the chain "	\
		    "%s: %s\n", (st)->depth, #__VA_ARGS__, sc_ac_buf_);	\
		_fail(__FILE__, __LINE__);				\
	}								\
} while (0)

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
