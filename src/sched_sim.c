/*
 * What every scheduler shares: the run queue by priority, the state
 * changes every scheduler makes, sched_prio(), sched_bind(), and the
 * choice of the machine's scheduler.  sched_ule.c and sched_4bsd.c keep
 * only their policy: which queue, which lock, when to switch.
 *
 * Kernel counterpart: sys/kern/kern_switch.c (runq_add(), runq_remove(),
 * runq_choose(), with the status bitmap of sys/sys/runq.h), the
 * sched_prio() of sys/kern/sched_4bsd.c and sys/kern/sched_ule.c, and the
 * TD_SET_*() state changes of sys/sys/proc.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"

/*
 * The run-queue helpers: rq (with its length *lenp, which
 * sched_runnable() and the idle loop read without the lock) is protected
 * by the spin lock lock, which the caller holds: 4BSD's sched_lock, or
 * ULE's run-queue lock of the queue's CPU.
 */

/* runq_init(): every queue empty, no bit set (rq not yet visible). */
void
sc__runq_init(struct sc_runq *rq)
{
	int i;

	rq->rq_status = 0;
	for (i = 0; i < SC_RQ_NQS; i++)
		TAILQ_INIT(&rq->rq_queues[i]);
}

/*
 * runq_add(): td at the tail of the queue of its priority, whose bit is
 * set; threads of one queue run first come, first served.
 */
void
sc__runq_add(struct sc_runq *rq, _Atomic int *lenp,
    const struct sc_spin *lock, struct sc_thread *td)
{
	int idx;

	SC_SPIN_ASSERT_OWNED(lock, );
	idx = atomic_load_explicit(&td->td_priority, memory_order_relaxed) /
	    SC_RQ_PPQ;
	td->td_rqindex = idx;
	rq->rq_status |= (uint64_t)1 << idx;
	TAILQ_INSERT_TAIL(&rq->rq_queues[idx], td, td_runq);
	atomic_fetch_add(lenp, 1);
}

/*
 * runq_remove(): td, which is on rq, off its queue; the queue's bit is
 * cleared when that emptied it.
 */
void
sc__runq_remove(struct sc_runq *rq, _Atomic int *lenp,
    const struct sc_spin *lock, struct sc_thread *td)
{
	int idx = td->td_rqindex;

	SC_SPIN_ASSERT_OWNED(lock, );
	TAILQ_REMOVE(&rq->rq_queues[idx], td, td_runq);
	if (TAILQ_EMPTY(&rq->rq_queues[idx]))
		rq->rq_status &= ~((uint64_t)1 << idx);
	atomic_fetch_sub(lenp, 1);
}

/*
 * runq_choose(): the best thread of rq, still on it (the caller removes
 * the one it runs), or NULL: the head of the queue of the lowest set bit.
 */
struct sc_thread *
sc__runq_choose(struct sc_runq *rq, const struct sc_spin *lock)
{
	SC_SPIN_ASSERT_OWNED(lock, NULL);
	if (rq->rq_status == 0)
		return (NULL);
	return (TAILQ_FIRST(&rq->rq_queues[__builtin_ctzll(rq->rq_status)]));
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
 * sched_prio(), the same in both schedulers: td's priority becomes pri.
 * A queued thread whose queue changes leaves it and is added again, at
 * the tail of its new queue (sched_rem(), then sched_add(), which may
 * choose another CPU's queue under ULE), as sys/kern/sched_4bsd.c's
 * sched_priority() does; ULE's sched_thread_priority() moves it only when
 * the priority improves, stackcap in both directions, so that a queue
 * always holds the priorities of its index.  The sched_add() of a moved
 * thread preempts the CPU it goes to if it is now better than what runs
 * there (sc_ule_notify(), sc_4bsd_preempt()).  A running thread keeps
 * its CPU, even when a queued thread is now better than its new
 * priority: the better thread runs at the running one's next switch or
 * tick.  A thread neither queued nor running takes its new priority into
 * its next sched_add(), which may preempt then.
 */
int
sc_thread_set_priority(struct sc_thread *td, int pri)
{
	const struct sc_sched *sched;
	struct sc_spin *held;

	SC_THREAD_UNLOCKED_ARG(td, EINVAL);
	if (pri < SC_PRI_MIN || pri > SC_PRI_MAX || td->td_idle)
		return (EINVAL);
	sched = td->td_machine->m_sched;
	sc_thread_lock(td);
	held = atomic_load(&td->td_lock);
	if (atomic_load(&td->td_state) == SC_TDS_RUNQ &&
	    td->td_rqindex != pri / SC_RQ_PPQ) {
		sched->sched_rem(td);
		sc__td_set_state(td, SC_TDS_CAN_RUN);
		atomic_store(&td->td_priority, pri);
		sched->sched_add(td);
	} else
		atomic_store(&td->td_priority, pri);
	/* sched_add() may have changed td's lock: release the one held. */
	sc__spin_unlock(held);
	return (0);
}

int
sc_thread_priority(struct sc_thread *td)
{
	SC_KASSERT(td != NULL, -1, "NULL thread");
	return (atomic_load(&td->td_priority));
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
