/*
 * Futexes (internal; Linux only), the one copy: the idle loop, the sleep
 * mutexes, the requester's answer wait and thread join all wait on them.
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

#endif /* !SC_FUTEX_H */
