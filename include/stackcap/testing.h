/*
 * stackcap/testing.h: what a test or a benchmark written against stackcap
 * needs to make stacks it can recognise, and to wait without hanging.  The
 * library's tests, tools and benchmarks use these same definitions (each
 * exists once); the library itself uses only stackcap/base.h, which this
 * header builds on.  Header only; nothing here is exported.
 *
 *	SC_NOIPA static void f3(void *arg) { spin(arg); SC_BARRIER(); }
 *	SC_CHAIN(f2, f3)
 *	SC_CHAIN(f1, f2)
 *
 * gives a thread function f1 whose captured stack reads f3's caller chain
 * f2, f1 (innermost first).  Build with -fno-omit-frame-pointer.
 *
 * Also: bounded waits (SC_WAIT_FOR(), SC_WAIT_STATE(),
 * SC_WAIT_COUNTER_ABOVE()), stack searches (sc_test_stack_find(),
 * SC_ASSERT_CHAIN()) and a panic handler that records (sc_test_panic_record).
 * A helper that fails calls SC_TEST_FAIL(); with CMocka, include
 * <stackcap/cmocka.h>, which makes it a CMocka failure.  Rules these follow,
 * and tests using them should follow too: never assert a timing (every
 * wait polls an observable condition, and its bound, SC_TEST_TIMEOUT_MS,
 * only turns a hang into a clear failure), and call CMocka only on the
 * test's own thread: a simulated thread records what it sees, the test
 * asserts.  stackcap_testing(3) is the manual page.
 */
#ifndef STACKCAP_TESTING_H
#define STACKCAP_TESTING_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stackcap.h>
#include <stackcap/base.h>	/* SC_NOIPA, SC_BARRIER(), sc_now_ns() */

#ifdef __cplusplus
extern "C" {
#endif

/*
 * SC_CHAIN(name, next): define `static void name(void *arg)` that calls
 * next(arg) and keeps its frame.  next is any `void (void *)` function.
 */
#define SC_CHAIN(name, next)						\
	SC_NOIPA static void						\
	name(void *arg)							\
	{								\
		next(arg);						\
		SC_BARRIER();						\
	}

/*
 * A deadline for a bounded wait: start it, then poll the condition and
 * sc_deadline_passed() in the same loop (napping or yielding as the caller
 * likes).  The bound turns a hang into a clear failure; never use it to
 * assert a timing.  Context: any.
 */
struct sc_deadline {
	uint64_t	dl_end;		/* sc_now_ns() at the bound */
};

static inline void
sc_deadline_start(struct sc_deadline *dl, uint64_t timeout_ns)
{
	dl->dl_end = sc_now_ns() + timeout_ns;
}

static inline bool
sc_deadline_passed(const struct sc_deadline *dl)
{
	return (sc_now_ns() >= dl->dl_end);
}

/* A snapshot of m's counters, by value.  Context: any thread. */
static inline struct sc_counters
sc_counters_get(struct sc_machine *m)
{
	struct sc_counters c;

	sc_machine_counters_sz(m, &c, sizeof(c));
	return (c);
}

/*
 * A capture the way the kernel's callers make one (kern.proc.kstack): the
 * proc lock of td's process p, then td's thread lock, sc_stack_save_td(),
 * both released.  Returns what sc_stack_save_td() returned.  Context: a
 * plain pthread, or a simulated thread that holds no spin lock.
 */
static inline int
sc_stack_save_td_locked(struct sc_proc *p, struct sc_thread *td,
    struct sc_stack *st)
{
	int error;

	sc_proc_lock(p);
	sc_thread_lock(td);
	error = sc_stack_save_td(st, td);
	sc_thread_unlock(td);
	sc_proc_unlock(p);
	return (error);
}

/*
 * SC_TEST_FAIL(file, line, fmt, ...): how a helper of this header fails the
 * test, with a printf message at the caller's file and line.  By default it
 * prints "file:line: ERROR: message" on stderr and calls abort();
 * <stackcap/cmocka.h> redefines it as a CMocka failure.  Another framework
 * may define its own before including this header.  It must not return.
 */
#ifndef SC_TEST_FAIL
#define SC_TEST_FAIL(file, line, ...)					\
	sc_test_fail_abort((file), (line), __VA_ARGS__)
#endif

static inline void __attribute__((format(printf, 3, 4), noreturn))
sc_test_fail_abort(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: ERROR: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	abort();
}

/*
 * The bound of every wait, in milliseconds.  Generous on purpose:
 * sanitizer builds and a loaded machine are slow, and a test never depends
 * on the value (it only fails later on a hang).  Define it before including
 * this header to change it; keep it well below the test runner's timeout.
 */
#ifndef SC_TEST_TIMEOUT_MS
#define SC_TEST_TIMEOUT_MS	20000L
#endif

/* Start a deadline timeout_ms from now.  Context: any thread. */
static inline void
sc_test_deadline_start(struct sc_deadline *dl, long timeout_ms)
{
	sc_deadline_start(dl, (uint64_t)timeout_ms * 1000000ULL);
}

/*
 * One poll step: a scheduling point for a deterministic machine
 * (sc_maybe_yield(): from a plain pthread that waits for the machine it
 * must be called, or the machine never runs), then a nap of 200 us (short
 * enough for fast tests, long enough to leave the cores to the simulated
 * CPUs) unless the caller is an actor of a deterministic machine
 * (sc_deterministic(), or STACKCAP_SEED asks for one), where virtual
 * time passes at the scheduling points and a nap would only slow it (a
 * nap at each step of a long wait passed the 20 s bound under TSan on a
 * loaded host: test_det's spinners).
 * Returns true when the deadline has passed.  Context: a plain pthread.
 */
static inline bool
sc_test_deadline_poll(struct sc_deadline *dl)
{
	struct timespec nap = { 0, 200 * 1000 };
	const char *seed = getenv("STACKCAP_SEED");

	sc_maybe_yield();
	if (!sc_deterministic() &&
	    (seed == NULL || *seed == '\0' || strcmp(seed, "0") == 0))
		nanosleep(&nap, NULL);
	return (sc_deadline_passed(dl));
}

/*
 * SC_WAIT_FOR(cond): poll the expression cond until it is true; after
 * SC_TEST_TIMEOUT_MS, fail the test (SC_TEST_FAIL()) with "timed out
 * waiting for <cond>" at the caller's file and line.  Context: the test's
 * own thread (a plain pthread).
 */
#define SC_WAIT_FOR(cond) do {						\
	struct sc_deadline sc_wf_dl_;					\
									\
	sc_test_deadline_start(&sc_wf_dl_, SC_TEST_TIMEOUT_MS);		\
	while (!(cond)) {						\
		if (sc_test_deadline_poll(&sc_wf_dl_) && !(cond))	\
			SC_TEST_FAIL(__FILE__, __LINE__, "timed out "	\
			    "(%ld ms) waiting for %s\n",		\
			    SC_TEST_TIMEOUT_MS, #cond);			\
	}								\
} while (0)

/*
 * sc_wait_until(pred, arg, timeout_ms, what): the same with a predicate
 * function: poll pred(arg) until it returns true; after timeout_ms, fail
 * with "timed out waiting for <what>" at the caller's line.  Context: the
 * test's own thread.
 */
#define sc_wait_until(pred, arg, timeout_ms, what) do {			\
	struct sc_deadline sc_wu_dl_;					\
									\
	sc_test_deadline_start(&sc_wu_dl_, (timeout_ms));		\
	while (!(pred)(arg)) {						\
		if (sc_test_deadline_poll(&sc_wu_dl_) && !(pred)(arg))	\
			SC_TEST_FAIL(__FILE__, __LINE__, "timed out "	\
			    "(%ld ms) waiting for %s\n",		\
			    (long)(timeout_ms), (what));		\
	}								\
} while (0)

/*
 * SC_WAIT_STATE(td, state, inh): wait until td is in `state` (SC_TDS_*)
 * with at least the inhibitor bits `inh` (SC_TDI_*; 0: any).  Context: the
 * test's own thread.
 */
#define SC_WAIT_STATE(td, state, inh)					\
	SC_WAIT_FOR(sc_thread_state(td) == (state) &&			\
	    (sc_thread_inhibitors(td) & (inh)) == (inh))

/* SC_COUNTER(m, field): one counter of m, now.  Context: any thread. */
#define SC_COUNTER(m, field)	(sc_counters_get(m).field)

/*
 * SC_WAIT_COUNTER_ABOVE(m, field, base): wait until m's counter `field`
 * exceeds base (a value read earlier, e.g. SC_COUNTER(m, spin_waits)):
 * how a test sees that a CPU waited for a lock.  Context: the test's own
 * thread.
 */
#define SC_WAIT_COUNTER_ABOVE(m, field, base)				\
	SC_WAIT_FOR(SC_COUNTER(m, field) > (uint64_t)(base))

/*
 * sc_test_run_bounded(fn, arg): run fn(arg) on a pthread of its own and
 * fail the test if it has not returned within SC_TEST_TIMEOUT_MS: a call
 * that may hang (a destroy, a capture under test) becomes a failure, and
 * the stuck pthread is left behind.  Context: the test's own thread.
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
	int sc_rb_e_;							\
									\
	if ((sc_rb_e_ = pthread_create(&sc_rb_t_, NULL,		\
	    sc_test_bounded_main, &sc_rb_)) != 0)			\
		SC_TEST_FAIL(__FILE__, __LINE__, "pthread_create: "	\
		    "%s\n", strerror(sc_rb_e_));			\
	SC_WAIT_FOR(atomic_load(&sc_rb_.done));				\
	(void)pthread_join(sc_rb_t_, NULL);				\
} while (0)

/*
 * A machine with ncpu CPUs and the default configuration (STACKCAP_SCHED
 * and STACKCAP_SEED apply), or fail with sc_machine_config_error()'s
 * reason.  Context: the test's own thread.
 */
#define sc_test_machine(ncpu)						\
	sc_test_machine_at((ncpu), __FILE__, __LINE__)

static inline struct sc_machine *
sc_test_machine_at(int ncpu, const char *file, int line)
{
	struct sc_machine_config cfg;
	struct sc_machine *m = NULL;
	int error;

	sc_machine_config_init(&cfg);
	cfg.ncpu = ncpu;
	if ((error = sc_machine_create(&cfg, &m)) != 0 || m == NULL)
		SC_TEST_FAIL(file, line, "sc_machine_create(ncpu %d): %s: "
		    "%s\n", ncpu, sc_errname(error),
		    sc_machine_config_error());
	return (m);
}

/*
 * The index of the first frame of st, from `from` on, whose symbol (by
 * sc_symbolize()) is `name`; -1 if none.  Context: not a signal handler.
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
 * Context: not a signal handler.
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
 * procstat -kk form, unless st holds those frames in that order.  Context:
 * the test's own thread.
 */
#define SC_ASSERT_CHAIN(st, ...) do {					\
	static const char *const sc_ac_names_[] = { __VA_ARGS__ };	\
	char sc_ac_buf_[1024];						\
									\
	if (!sc_test_stack_has_chain((st), sc_ac_names_,		\
	    (int)(sizeof(sc_ac_names_) / sizeof(sc_ac_names_[0])))) {	\
		sc_stack_format_kk((st), sc_ac_buf_,			\
		    sizeof(sc_ac_buf_));				\
		SC_TEST_FAIL(__FILE__, __LINE__, "stack (depth %d) "	\
		    "lacks the chain %s: %s\n", (st)->depth,		\
		    #__VA_ARGS__, sc_ac_buf_);				\
	}								\
} while (0)

/*
 * sc_test_panic_record: a panic handler (sc_set_panic_handler()) that
 * records the message and returns.  On a plain pthread the failing call
 * then returns EINVAL; on a simulated thread that thread is parked for
 * good (SC_TDS_INHIBITED, SC_TDI_SUSPENDED).  Context: any thread.  Read
 * with sc_test_panic_count() and sc_test_panic_msg() once the count has
 * moved (SC_WAIT_FOR(sc_test_panic_count() > n)); sc_test_panic_reset()
 * before each use.  The record is static: each source file that includes
 * this header has its own, so install and read it from the same file.
 */
static char sc_test_panic_buf[512] __attribute__((unused));
static _Atomic int sc_test_panic_n __attribute__((unused));

static __attribute__((unused)) void
sc_test_panic_record(const char *msg)
{
	/* The message first; the count publishes it (seq_cst). */
	snprintf(sc_test_panic_buf, sizeof(sc_test_panic_buf), "%s", msg);
	atomic_fetch_add(&sc_test_panic_n, 1);
}

/* How many panics sc_test_panic_record has recorded.  Any thread. */
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

/* Forget what was recorded.  Context: while no panic can be recorded. */
static inline void
sc_test_panic_reset(void)
{
	sc_test_panic_buf[0] = '\0';
	atomic_store(&sc_test_panic_n, 0);
}

#ifdef __cplusplus
}
#endif

#endif /* !STACKCAP_TESTING_H */
