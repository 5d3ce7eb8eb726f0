/*
 * The 4BSD scheduler: one run queue and one sched_lock for the whole
 * machine (every thread on a run queue or running has td_lock ==
 * &sched_lock), plus a run queue per CPU for bound threads.
 *
 * Kernel counterpart: sys/kern/sched_4bsd.c (sched_add, sched_rem,
 * sched_choose, sched_switch, sched_throw, sched_fork_exit).  It is one
 * implementation of struct sc_sched (sc_internal.h); the rest of the
 * machine calls it through m->m_sched.  The run queue itself and
 * sched_bind() are sched_sim.c's, shared with ULE.  Priorities order
 * both queues; a priority is what sched_prio() set (4BSD's estcpu and
 * its decay are left out).
 */
#include "sc_internal.h"
#include "sc_switch.h"

/*
 * sched_add()'s queueing, the sched_lock held: td on its run queue, and an
 * idle CPU woken for it (forward_wakeup(), kick_other_cpu()'s first
 * case).  True if an idle CPU was woken.
 */
static bool
sc_runq_add(struct sc_machine *m, struct sc_thread *td)
{
	struct sc_pcpu *pc;

	sc__td_set_state(td, SC_TDS_RUNQ);
	if (td->td_bound != SC_NOCPU) {
		pc = &m->m_pcpu[td->td_bound];
		td->td_runq_bound = true;
		sc__runq_add(&pc->pc_runq, &pc->pc_runq_len, &m->m_sched_lock,
		    td);
		return (sc__cpu_idle_wakeup(m, pc));
	}
	td->td_runq_bound = false;
	sc__runq_add(&m->m_runq, &m->m_runq_len, &m->m_sched_lock, td);
	return (sc__cpu_idle_wakeup(m, NULL));
}

/*
 * The preemption that sched_add() asks for in FreeBSD 14's
 * sys/kern/sched_4bsd.c, the sched_lock held, td just queued with
 * priority pri; pc runs the caller (NULL: a plain pthread, which is no
 * CPU).  Both rules are the kernel's without FULL_PREEMPTION: only an
 * interrupt thread (pri <= PRI_MAX_ITHD) preempts a thread, and anything
 * better preempts the idle thread (which sc__sched_preempt_cpu() leaves
 * to its idle loop, woken already).
 * - td bound to another CPU (kick_other_cpu()): IPI_PREEMPT if td is
 *   better than what that CPU runs (the IPI of a kernel with options
 *   IPI_PREEMPTION; without it the kernel asks for an AST, which stackcap
 *   has no other form for).
 * - Else, unless an idle CPU was woken for td (forward_wakeup()),
 *   maybe_preempt() on our own CPU: the caller owes the preemption and
 *   takes it at its next safe point (the release of the lock it holds:
 *   spinlock_exit()'s critical_exit()); not if it is about to block
 *   (TD_IS_INHIBITED()).  A plain pthread has no CPU of its own: a
 *   thread on the global queue that it makes runnable waits for a switch.
 * The running thread is read without its lock, as the kernel reads
 * pc_curthread.
 */
static void
sc_4bsd_preempt(struct sc_machine *m, struct sc_thread *td, bool woken)
{
	struct sc_pcpu *self = sc__pcpu_get(), *pc;
	struct sc_thread *ctd;
	int pri, cpri;

	if (td->td_bound != SC_NOCPU && &m->m_pcpu[td->td_bound] != self)
		pc = &m->m_pcpu[td->td_bound];
	else if (self != NULL && !woken)
		pc = self;
	else
		return;
	ctd = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	if (ctd == NULL)
		return;		/* pc has not started: its idle loop looks */
	pri = atomic_load_explicit(&td->td_priority, memory_order_relaxed);
	cpri = atomic_load_explicit(&ctd->td_priority, memory_order_relaxed);
	if (pri >= cpri || (pri > SC_PRI_MAX_ITHD && cpri < SC_PRI_MIN_IDLE))
		return;
	if (pc == self && atomic_load_explicit(&ctd->td_inhibitors,
	    memory_order_relaxed) != 0)
		return;
	sc__sched_preempt_cpu(pc);
}

static void
sc_runq_remove(struct sc_machine *m, struct sc_thread *td)
{
	struct sc_pcpu *pc;

	if (td->td_runq_bound) {
		pc = &m->m_pcpu[td->td_bound];
		sc__runq_remove(&pc->pc_runq, &pc->pc_runq_len,
		    &m->m_sched_lock, td);
	} else
		sc__runq_remove(&m->m_runq, &m->m_runq_len, &m->m_sched_lock,
		    td);
}

/*
 * sched_choose(), the sched_lock held: the next thread for pc, removed
 * from its queue.  As sys/kern/sched_4bsd.c's: the best thread of pc's
 * own queue (threads bound to pc) runs only when its priority is
 * strictly better than the global queue's best; at equal priorities the
 * global queue's goes first.
 */
static struct sc_thread *
sc_choose(struct sc_machine *m, struct sc_pcpu *pc)
{
	struct sc_thread *td, *tdcpu;

	td = sc__runq_choose(&m->m_runq, &m->m_sched_lock);
	tdcpu = sc__runq_choose(&pc->pc_runq, &m->m_sched_lock);
	if (td == NULL || (tdcpu != NULL &&
	    atomic_load_explicit(&tdcpu->td_priority, memory_order_relaxed) <
	    atomic_load_explicit(&td->td_priority, memory_order_relaxed))) {
		td = tdcpu;
		if (td != NULL)
			sc__runq_remove(&pc->pc_runq, &pc->pc_runq_len,
			    &m->m_sched_lock, td);
	} else
		sc__runq_remove(&m->m_runq, &m->m_runq_len, &m->m_sched_lock,
		    td);
	if (td == NULL)
		td = pc->pc_idlethread;
	sc__td_set_state(td, SC_TDS_RUNNING);
	return (td);
}

/* sched_runnable(): does a thread wait for pc? */
static bool
sc_4bsd_runnable(struct sc_pcpu *pc)
{
	struct sc_machine *m = pc->pc_machine;

	return (atomic_load_explicit(&m->m_runq_len, memory_order_relaxed) +
	    atomic_load_explicit(&pc->pc_runq_len, memory_order_relaxed) > 0);
}

/*
 * sched_add(): td's lock held (any lock), td has no inhibitors.  td goes on
 * a run queue and its td_lock becomes the sched_lock.  The caller still
 * holds the lock it held (it releases that lock, not td's).
 */
static void
sc_4bsd_add(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;
	struct sc_spin *held = atomic_load(&td->td_lock);

	SC_KASSERT(sc__spin_owned(held), , "sched_add: thread %d not locked",
	    td->td_tid);
	if (held != &m->m_sched_lock)
		sc__spin_lock(m, &m->m_sched_lock);
	atomic_store(&td->td_lock, &m->m_sched_lock);
	sc_4bsd_preempt(m, td, sc_runq_add(m, td));
	if (held != &m->m_sched_lock)
		sc__spin_unlock(&m->m_sched_lock);
}

/*
 * sched_switch(): td == curthread, td's lock held (any lock).  Take the
 * sched_lock, choose the next thread and switch to it; return when td
 * runs again, with the sched_lock held (td's lock).  Never inlined: like
 * the kernel's, a sleeping thread's stack then reads "mi_switch,
 * sleepq_wait, ..." from its saved %rbp.
 */
__attribute__((noinline)) static void
sc_4bsd_switch(struct sc_thread *td, struct sc_pcpu *pc)
{
	struct sc_machine *m = td->td_machine;
	struct sc_spin *tmtx = atomic_load(&td->td_lock);
	struct sc_thread *newtd;

	/* mi_switch() asserted that td holds tmtx. */
	if (tmtx != &m->m_sched_lock) {
		/*
		 * thread_lock_block(): until cpu_switch() has saved td's
		 * context, td_lock is blocked_lock, so no one can act on td
		 * although we drop its real lock now.
		 */
		sc__spin_lock(m, &m->m_sched_lock);
		atomic_store(&td->td_lock, &sc__blocked_lock);
		sc__spin_unlock(tmtx);
	}
	/*
	 * As in sched_4bsd.c, td_oncpu becomes NOCPU before a yielding
	 * thread goes back on the run queue, under the sched_lock (ULE sets
	 * it last, just before cpu_switch()): stack_save_td() may see
	 * "RUNNING but NOCPU" and must spin.
	 */
	atomic_store(&td->td_oncpu, SC_NOCPU);
	sc__hook(m, SC_HOOK_SWITCH_NOCPU, td);
	if (TD_IS_RUNNING(td)) {
		if (td->td_idle)
			sc__td_set_state(td, SC_TDS_CAN_RUN);
		else
			sc_runq_add(m, td);
	}
	newtd = sc_choose(m, pc);
	if (newtd != td) {
		/*
		 * newtd is RUNNING with td_oncpu == NOCPU until it sets its
		 * own, as in sched_4bsd.c; the sched_lock (its thread
		 * lock) stays held throughout, so no one who takes it sees
		 * that: a requester that read NOCPU without the lock
		 * re-takes it, and waits for the store.
		 */
		sc__hook(m, SC_HOOK_SWITCH_INCOMING, newtd);
		sc__sched_cpu_switch(pc, td, newtd, tmtx);
		/* td runs again, maybe on another CPU, holding the lock. */
		sc__spin_handoff(&m->m_sched_lock, td);
		pc = sc__pcpu_get();
	}
	/* Under the sched_lock, td says where it runs itself. */
	atomic_store(&td->td_oncpu, pc->pc_cpuid);
}

/* sched_rem(): td on a run queue, its lock (the sched_lock) held. */
static void
sc_4bsd_rem(struct sc_thread *td)
{
	SC_SPIN_ASSERT_OWNED(&td->td_machine->m_sched_lock, );
	sc_runq_remove(td->td_machine, td);
}

/* sched_newthread(): a new thread's lock is the sched_lock. */
static void
sc_4bsd_newthread(struct sc_thread *td)
{
	atomic_init(&td->td_lock, &td->td_machine->m_sched_lock);
}

/* sched_throw(): a CPU starts its first thread holding the sched_lock. */
static void
sc_4bsd_throw(struct sc_pcpu *pc)
{
	sc__spin_lock(pc->pc_machine, &pc->pc_machine->m_sched_lock);
}

/*
 * sched_fork_exit(): a new thread now owns the sched_lock it was handed,
 * and under it sets its own td_oncpu.
 */
static void
sc_4bsd_fork_exit(struct sc_thread *td)
{
	sc__spin_handoff(&td->td_machine->m_sched_lock, td);
	atomic_store(&td->td_oncpu, sc__pcpu_get()->pc_cpuid);
}

/* sched_idletd(): one run queue serves every CPU; nothing to steal. */
static bool
sc_4bsd_idled(struct sc_pcpu *pc)
{
	(void)pc;
	return (false);
}

/*
 * sched_clock(): td's slice (sched_slice, hz / 10 ticks: "default is
 * 100ms") is spent and a thread waits for pc: td must switch
 * (TDF_NEEDRESCHED | TDF_SLICEEND).  Older 4BSDs had a roundrobin()
 * callout every sched_quantum ticks for whichever thread ran instead.
 * The preemption of a better thread made runnable is sched_add()'s
 * (sc_4bsd_preempt()).
 */
static bool
sc_4bsd_clock(struct sc_pcpu *pc, struct sc_thread *td, int cnt)
{
	return (sc__sched_slice_end(pc, td, cnt) && sc_4bsd_runnable(pc));
}

const struct sc_sched sc__sched_4bsd = {
	.sched_name = "4BSD",
	.sched_newthread = sc_4bsd_newthread,
	.sched_add = sc_4bsd_add,
	.sched_rem = sc_4bsd_rem,
	.sched_runnable = sc_4bsd_runnable,
	.sched_switch = sc_4bsd_switch,
	.sched_bind = sc__sched_bind,
	.sched_throw = sc_4bsd_throw,
	.sched_fork_exit = sc_4bsd_fork_exit,
	.sched_idled = sc_4bsd_idled,
	.sched_clock = sc_4bsd_clock,
};
