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
 */
#ifndef STACKCAP_TESTING_H
#define STACKCAP_TESTING_H

#include <stdbool.h>
#include <stdint.h>

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

#ifdef __cplusplus
}
#endif

#endif /* !STACKCAP_TESTING_H */
