/*
 * What the explorer's bodies (explore_bodies.c) share with its runner
 * (explore.c).  Private to the two.
 */
#ifndef SC_EXPLORE_BODY_H
#define SC_EXPLORE_BODY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "explore.h"
#include "stackcap/testing.h"

/* Steps that a body's own waits may take before it gives up. */
#define EXP_WAIT_STEPS	200000
/* The bounded wait of a capture, in virtual time (a step, 1 us). */
#define EXP_TIMEOUT_NS	(20L * 1000 * 1000)

/* Poll cond, a scheduling point per turn; false after the bound. */
#define EXP_WAIT(cond) ({						\
	long exp_n_;							\
									\
	for (exp_n_ = 0; !(cond) && exp_n_ < EXP_WAIT_STEPS; exp_n_++)	\
		sc_maybe_yield();					\
	(bool)(cond);							\
})

/* Reset by exp_run() before each run. */
extern atomic_int exp_stop, exp_started, exp_rdone;

/* Does st hold a frame of a function whose name begins with prefix? */
bool	exp_stack_has(const struct sc_stack *st, const char *prefix);

/*
 * A process pname of m and its thread "target" running fn(NULL), which
 * adds 1 to exp_started once it runs: EXP_HELD once it did (bounded), or
 * EXP_BROKEN with why[] saying what failed, and *t NULL if the thread
 * was not made (else the caller joins it).
 */
int	exp_start1(struct sc_machine *m, const char *pname,
	    void (*fn)(void *), struct sc_proc **p, struct sc_thread **t,
	    char *why, size_t len);

/*
 * Join td once it has exited (bounded), waking wchan (unless NULL) while
 * it has not; a thread that did not exit is left to
 * sc_machine_destroy().  False then.
 */
bool	exp_join(struct sc_thread *td, const void *wchan);

/*
 * A capture k of td that returned error with st: EXP_HELD, or EXP_BROKEN
 * with why[].  0 must hold a frame of prefix's chain; `also` is another
 * result the protocol may give (EAGAIN for FreeBSD 12's), or -1.
 */
int	exp_capture_check(int k, struct sc_thread *td, int error,
	    const struct sc_stack *st, const char *prefix, int also,
	    char *why, size_t len);

int	exp_lock_held(struct sc_machine *m, bool mistaken, char *why,
	    size_t len);
int	exp_no_proc_lock(struct sc_machine *m, bool mistaken, char *why,
	    size_t len);
int	exp_stale_answer(struct sc_machine *m, bool mistaken, char *why,
	    size_t len);
int	exp_spin_held(struct sc_machine *m, bool mistaken, char *why,
	    size_t len);
int	exp_incoming(struct sc_machine *m, bool mistaken, char *why,
	    size_t len);
/* explore_snapshot.c */
int	exp_snapshot(struct sc_machine *m, bool mistaken, char *why,
	    size_t len);
/* explore_mistakes.c */
int	exp_clear_after_ipi(struct sc_machine *m, bool mistaken, char *why,
	    size_t len);
int	exp_nocpu_offcpu(struct sc_machine *m, bool mistaken, char *why,
	    size_t len);

#endif /* !SC_EXPLORE_BODY_H */
