/*
 * Waits for another thread (internal; Linux only): the futexes, the one
 * copy (the idle loop, the sleep mutexes, the requester's answer wait and
 * thread join all wait on them), and the one turn of a spin-then-block
 * wait, sc__wait_turn().
 * The clock is sc_now_ns() (stackcap/base.h).  In deterministic mode a
 * wait is a scheduling point instead (sim_det.c): whoever would wake the
 * waiter runs only when the waiter gives up the run token.
 */
#ifndef SC_FUTEX_H
#define SC_FUTEX_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sc_internal.h"

/* Wait while *uaddr == val, at most timeout_ns (0: no bound).  Returns the
 * raw result; callers always re-check their condition. */
static inline long
sc__futex_wait_raw(_Atomic uint32_t *uaddr, uint32_t val, long timeout_ns)
{
	struct timespec ts, *tsp = NULL;

	if (timeout_ns > 0) {
		ts.tv_sec = timeout_ns / 1000000000L;
		ts.tv_nsec = timeout_ns % 1000000000L;
		tsp = &ts;
	}
	return (syscall(SYS_futex, uaddr, FUTEX_WAIT_PRIVATE, val, tsp, NULL,
	    0));
}

/*
 * A blocking wait of the simulation: sc__futex_wait_raw(), or in
 * deterministic mode one scheduling point where the caller waits, which
 * returns as a spurious wakeup does.  Under the random chooser the caller
 * is blocked there as a futex waiter is: no candidate for the token while
 * *uaddr == val, until a wake of uaddr or the bound (in steps); a CPU also
 * when an IPI is pending.  Its polls that could see no change cost no
 * handoff.
 */
static inline long
sc__futex_wait(_Atomic uint32_t *uaddr, uint32_t val, long timeout_ns)
{
	if (sc__ds_futex_wait(uaddr, val, timeout_ns))
		return (0);
	return (sc__futex_wait_raw(uaddr, val, timeout_ns));
}

/* Async-signal-safe.  The run token's own words use this one. */
static inline void
sc__futex_wake_raw(_Atomic uint32_t *uaddr, int n)
{
	syscall(SYS_futex, uaddr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Async-signal-safe.  In deterministic mode, by the token's holder. */
static inline void
sc__futex_wake(_Atomic uint32_t *uaddr, int n)
{
	sc__ds_futex_wake(uaddr);
	sc__futex_wake_raw(uaddr, n);
}

/*
 * One turn of a wait for another thread, the library's one (the caller
 * tests its condition, then takes a turn), and the one caller of the
 * seam's backoff (sc__ds_backoff()).  SC_TURN_AGAIN: look again (after a
 * pause while spin holds, or in deterministic mode a point where the
 * waiter waits); SC_TURN_BLOCK: block the caller's host way (a futex, a
 * sleep, sched_yield()), then look again; SC_TURN_TIMEDOUT: deadline
 * (sc__ds_clock(); UINT64_MAX: none) has passed.  The clock is read only
 * after a turn that was not a pause.  FreeBSD's spin loops take their
 * turns in lock_delay() (kern/subr_lock.c), which only spins: a simulated
 * CPU's pthread may be descheduled by the host, so past its spin a wait
 * here blocks.
 */
#define SC_TURN_AGAIN	0
#define SC_TURN_BLOCK	1
#define SC_TURN_TIMEDOUT 2

static inline int
sc__wait_turn(bool spin, uint64_t deadline)
{
	int turn = sc__ds_backoff(spin);

	if (turn == SC_DS_PAUSED)
		return (SC_TURN_AGAIN);
	if (deadline != UINT64_MAX && sc__ds_clock() >= deadline)
		return (SC_TURN_TIMEDOUT);
	return (turn == SC_DS_HOST ? SC_TURN_BLOCK : SC_TURN_AGAIN);
}

#endif /* !SC_FUTEX_H */
