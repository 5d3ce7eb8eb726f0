/*
 * What every scheduler shares: the run queue (a FIFO of threads and its
 * length), the state changes every scheduler makes, sched_bind(), and the
 * choice of the machine's scheduler.  sched_ule.c and sched_4bsd.c keep
 * only their policy: which queue, which lock, when to switch.
 *
 * Kernel counterpart: sys/kern/kern_switch.c (runq_add(), runq_remove(),
 * runq_choose()), with the TD_SET_*() state changes of sys/sys/proc.h.
 * FreeBSD's run queue is an array of priority queues with a status
 * bitmap; here every thread has one priority, so a queue is one TAILQ,
 * which is all the capture protocol can observe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"

/*
 * The run-queue helpers: q (with its length *lenp, which
 * sched_runnable() and the idle loop read without the lock) is protected
 * by the spin lock lock, which the caller holds: 4BSD's sched_lock, or
 * ULE's run-queue lock of the queue's CPU.
 */

/* runq_add(): td at the tail of q. */
void
sc__runq_add(struct sc_threadq *q, _Atomic int *lenp,
    const struct sc_spin *lock, struct sc_thread *td)
{
	SC_SPIN_ASSERT_OWNED(lock, );
	TAILQ_INSERT_TAIL(q, td, td_runq);
	atomic_fetch_add(lenp, 1);
}

/* runq_remove(): td, which is on q. */
void
sc__runq_remove(struct sc_threadq *q, _Atomic int *lenp,
    const struct sc_spin *lock, struct sc_thread *td)
{
	SC_SPIN_ASSERT_OWNED(lock, );
	TAILQ_REMOVE(q, td, td_runq);
	atomic_fetch_sub(lenp, 1);
}

/*
 * runq_choose() and the runq_remove() that sched_choose() makes after it:
 * the first thread of q, removed from it, or NULL.
 */
struct sc_thread *
sc__runq_choose(struct sc_threadq *q, _Atomic int *lenp,
    const struct sc_spin *lock)
{
	struct sc_thread *td;

	SC_SPIN_ASSERT_OWNED(lock, NULL);
	td = TAILQ_FIRST(q);
	if (td != NULL) {
		TAILQ_REMOVE(q, td, td_runq);
		atomic_fetch_sub(lenp, 1);
	}
	return (td);
}

/* TD_SET_*(): change td's state (td's lock held, or td not yet visible). */
void
sc__td_set_state(struct sc_thread *td, enum sc_td_state state)
{
	int old = atomic_exchange(&td->td_state, state);

	if (old != (int)state)
		SC_TRACE(td->td_machine, SC_TRACE_STATE, sc_curcpu(),
		    td->td_tid, old, state);
}

/*
 * sched_bind(), the same in both schedulers: td == curthread, locked;
 * switch if td is not on cpu (sched_switch() moves a bound thread).
 */
void
sc__sched_bind(struct sc_thread *td, int cpu)
{
	SC_THREAD_LOCK_ASSERT(td, );
	td->td_bound = cpu;
	if (cpu != SC_NOCPU && atomic_load(&td->td_oncpu) != cpu)
		sc__mi_switch(td);
}

/*
 * The slice accounting of sched_clock(), the same in both schedulers
 * (ULE's ts_slice, 4BSD's ts_slice): cnt more ticks of td's slice spent;
 * true when that spends it (a new slice starts).  From pc's clock
 * interrupt while td runs there (td_slice is (k*)).
 */
bool
sc__sched_slice_end(struct sc_pcpu *pc, struct sc_thread *td, int cnt)
{
	td->td_slice += cnt;
	if (td->td_slice < sc__clock_slice(pc->pc_machine))
		return (false);
	td->td_slice = 0;
	return (true);
}

/* The scheduler that cfg's sched names (sc_machine_create() checked it). */
const struct sc_sched *
sc__sched_select(int sched)
{
	return (sched == SC_SCHED_4BSD ? &sc__sched_4bsd : &sc__sched_ule);
}

/*
 * STACKCAP_SCHED chooses the default scheduler, so that a test suite runs
 * under either without a rebuild (ctest runs ours under both).  Anything
 * but "4bsd" means ULE; a value that is neither says so once.
 */
int
sc__sched_default(void)
{
	static _Atomic int warned;
	const char *v = getenv("STACKCAP_SCHED");

	if (v == NULL || *v == '\0' || strcmp(v, "ule") == 0)
		return (SC_SCHED_ULE);
	if (strcmp(v, "4bsd") == 0)
		return (SC_SCHED_4BSD);
	if (atomic_exchange(&warned, 1) == 0)
		fprintf(stderr, "stackcap: STACKCAP_SCHED=%s: neither \"ule\" "
		    "nor \"4bsd\"; using ULE\n", v);
	return (SC_SCHED_ULE);
}
