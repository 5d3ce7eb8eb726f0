/*
 * The ULE scheduler, FreeBSD 13 and 14's default: a run queue per CPU
 * (struct tdq), each with its own spin lock (pc_tdq_lock), which is the
 * td_lock of every thread on that queue and of the thread that runs on
 * that CPU.  What it changes for stack_save_td() (the commit message of
 * the protocol's rewrite: after r355784 td_oncpu is no longer synchronized
 * by the thread lock):
 * - every switch blocks the outgoing thread's lock (thread_lock_block())
 *   and drops the run-queue lock before cpu_switch();
 * - the outgoing thread's td_oncpu becomes NOCPU last, just before
 *   cpu_switch(), with no lock held;
 * - the incoming thread sets its own td_oncpu only when cpu_switch()
 *   returns into it (or in sched_fork_exit()): from the moment it is
 *   chosen (RUNNING) until then, it is RUNNING with td_oncpu == NOCPU and
 *   its lock is free.  Whoever locks it meanwhile sees exactly that.
 *
 * Kernel counterpart: sys/kern/sched_ule.c (tdq_lock, sched_add,
 * sched_pickcpu, sched_setcpu, tdq_add, sched_rem, sched_switch,
 * sched_switch_migrate, sched_fork_exit, sched_throw, tdq_idled,
 * tdq_trysteal and tdq_move for the stealing, tdq_lock_pair); the run
 * queue by priority and sched_bind() are sched_sim.c's, shared with 4BSD.
 * A CPU has one run queue (the kernel's three, realtime, timeshare and
 * idle, are one queue by priority here); slices, interactivity scoring,
 * the rotating timeshare queue and the periodic balancer are left out.
 */
#include "sc_internal.h"
#include "sc_switch.h"

static struct sc_spin *
sc_tdq_lockptr(struct sc_pcpu *pc)
{
	return (&pc->pc_tdq_lock);
}

/* The CPU whose run-queue lock sp is, or NULL (a sleep-queue chain lock). */
static struct sc_pcpu *
sc_tdq_of(struct sc_machine *m, const struct sc_spin *sp)
{
	uintptr_t base = (uintptr_t)m->m_pcpu, p = (uintptr_t)sp;
	size_t i;

	if (p < base || p >= base + sizeof(*m->m_pcpu) * (size_t)m->m_ncpu)
		return (NULL);
	i = (p - base) / sizeof(*m->m_pcpu);
	return (sp == &m->m_pcpu[i].pc_tdq_lock ? &m->m_pcpu[i] : NULL);
}

/* A CPU's load: queued threads, plus one if it runs a thread. */
static int
sc_tdq_load(struct sc_pcpu *pc)
{
	return (atomic_load_explicit(&pc->pc_runq_len, memory_order_relaxed) +
	    (atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed) !=
	    pc->pc_idlethread));
}

/*
 * sched_pickcpu(), reduced: a bound thread's CPU; else the least loaded
 * CPU, its last CPU first (ties keep it where its cache is).  A hint: the
 * loads change meanwhile, and idle stealing corrects a poor choice.
 */
static struct sc_pcpu *
sc_ule_pickcpu(struct sc_machine *m, struct sc_thread *td)
{
	struct sc_pcpu *best;
	int i, last;

	if (td->td_bound != SC_NOCPU)
		return (&m->m_pcpu[td->td_bound]);
	last = atomic_load(&td->td_lastcpu);
	best = &m->m_pcpu[last != SC_NOCPU ? last : 0];
	for (i = 0; i < m->m_ncpu; i++)
		if (sc_tdq_load(&m->m_pcpu[i]) < sc_tdq_load(best))
			best = &m->m_pcpu[i];
	return (best);
}

/* tdq_runq_add(): pc's queue lock held. */
static void
sc_tdq_add(struct sc_pcpu *pc, struct sc_thread *td)
{
	struct sc_machine *m = pc->pc_machine;

	sc__td_set_state(td, SC_TDS_RUNQ);
	sc__runq_add(&pc->pc_runq, &pc->pc_runq_len, sc_tdq_lockptr(pc), td);
	/*
	 * tdq_notify(): wake pc if it idles; if it is busy, wake another
	 * idle CPU, which steals the thread (tdq_idled()).
	 */
	if (atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed) ==
	    pc->pc_idlethread)
		sc__cpu_idle_wakeup(m, pc);
	else if (td->td_bound == SC_NOCPU)
		sc__cpu_idle_wakeup(m, NULL);
}

/*
 * sched_shouldpreempt() of FreeBSD 13's sys/kern/sched_ule.c: may a thread
 * of priority pri made runnable take the CPU from one at cpri?  Only if
 * strictly better; always from the idle thread; else only at or above
 * preempt_thresh, whose default in a kernel with options PREEMPTION
 * (GENERIC's) is PRI_MIN_KERN: interrupt threads and the best kernel
 * priority.  A remote CPU is preempted also by an interactive timeshare
 * thread (PRI_MAX_INTERACT: the timeshare range less its 40 nice values,
 * halved) when it runs a batch one.
 */
#define	SC_ULE_PREEMPT_THRESH	SC_PRI_MIN_KERN
#define	SC_ULE_PRI_MAX_INTERACT	(SC_PRI_MIN_TIMESHARE +			\
	    (SC_PRI_MAX_TIMESHARE - SC_PRI_MIN_TIMESHARE + 1 - 40) / 2 - 1)

static bool
sc_ule_shouldpreempt(int pri, int cpri, bool remote)
{
	if (pri >= cpri)
		return (false);
	if (cpri >= SC_PRI_MIN_IDLE || pri <= SC_ULE_PREEMPT_THRESH)
		return (true);
	return (remote && pri <= SC_ULE_PRI_MAX_INTERACT &&
	    cpri > SC_ULE_PRI_MAX_INTERACT);
}

/*
 * The end of sched_add(), pc's queue lock held: td, just queued on pc,
 * preempts pc's running thread if sched_shouldpreempt() says so.  On the
 * caller's own CPU (sched_setpreempt()) the running thread is the caller,
 * which owes the preemption and takes it at its next safe point (the
 * release of the lock it holds for sched_add(): spinlock_exit()'s
 * critical_exit()); unless it is about to block anyway
 * (TD_IS_INHIBITED()).  On another CPU, or from a plain pthread, which is
 * no CPU (tdq_notify()): IPI_PREEMPT.  An idle pc was woken already
 * (sc_tdq_add()); sc__sched_preempt_cpu() leaves an idle thread alone.
 * The running thread is read without its lock, as the kernel reads
 * pc_curthread: a thread that switched out meanwhile lost its CPU anyway.
 */
static void
sc_ule_notify(struct sc_pcpu *pc, struct sc_thread *td)
{
	struct sc_thread *ctd;
	bool remote = pc != sc__pcpu_get();

	ctd = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	if (ctd == NULL)
		return;		/* pc has not started: its idle loop looks */
	if (!sc_ule_shouldpreempt(atomic_load_explicit(&td->td_priority,
	    memory_order_relaxed), atomic_load_explicit(&ctd->td_priority,
	    memory_order_relaxed), remote))
		return;
	if (!remote && atomic_load_explicit(&ctd->td_inhibitors,
	    memory_order_relaxed) != 0)
		return;
	sc__sched_preempt_cpu(pc);
}

/* tdq_runq_rem(): pc's queue lock held. */
static void
sc_tdq_rem(struct sc_pcpu *pc, struct sc_thread *td)
{
	sc__runq_remove(&pc->pc_runq, &pc->pc_runq_len, sc_tdq_lockptr(pc), td);
}

/*
 * sched_add(): td's lock held, no inhibitors.  The caller keeps the lock
 * it holds (FreeBSD's SRQ_HOLD) and releases it, not td's new one.  td
 * goes on the queue of the CPU that sched_pickcpu() chooses:
 * - If td's lock is that queue's already, td goes on it.
 * - If td's lock is a sleep-queue chain lock, which comes before every
 *   run-queue lock in the lock order: lock the chosen queue and make it
 *   td's lock (thread_lock_set()).
 * - If td's lock is another CPU's queue (a new thread, an interrupt
 *   thread, a thread swapped back in or given a new priority), td
 *   migrates as sched_setcpu() moves it: td_lock becomes blocked_lock
 *   (thread_lock_block()), the old queue's lock is dropped before the
 *   new one is taken, so that two queue locks are never held at once
 *   out of tdq_lock_pair()'s order, and td_lock becomes the new queue's
 *   (thread_lock_unblock()).  Whoever locks td meanwhile waits on
 *   blocked_lock.  Then the old queue's lock is taken again, for the
 *   caller; the spinlock section keeps interrupts disabled in between,
 *   when no lock does.
 */
static void
sc_ule_add(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;
	struct sc_spin *held = atomic_load(&td->td_lock);
	struct sc_pcpu *pc, *src;

	SC_KASSERT(sc__spin_owned(held), , "sched_add: thread %d not locked",
	    td->td_tid);
	pc = sc_ule_pickcpu(m, td);
	src = sc_tdq_of(m, held);
	if (src == pc) {
		sc_tdq_add(pc, td);
		sc_ule_notify(pc, td);
		return;
	}
	if (src == NULL) {
		sc__spin_lock(m, sc_tdq_lockptr(pc));
		atomic_store(&td->td_lock, sc_tdq_lockptr(pc));
		sc_tdq_add(pc, td);
		sc_ule_notify(pc, td);
		sc__spin_unlock(sc_tdq_lockptr(pc));
		return;
	}
	sc_spinlock_enter();
	atomic_store(&td->td_lock, &sc__blocked_lock);
	sc__spin_unlock(held);
	sc__spin_lock(m, sc_tdq_lockptr(pc));
	atomic_store_explicit(&td->td_lock, sc_tdq_lockptr(pc),
	    memory_order_release);
	sc_tdq_add(pc, td);
	sc_ule_notify(pc, td);
	sc__spin_unlock(sc_tdq_lockptr(pc));
	sc__spin_lock(m, held);
	sc_spinlock_exit();
}

/* sched_rem(): td on a run queue, that queue's lock (td's) held. */
static void
sc_ule_rem(struct sc_thread *td)
{
	struct sc_pcpu *pc;

	SC_THREAD_LOCK_ASSERT(td, );
	pc = sc_tdq_of(td->td_machine, atomic_load(&td->td_lock));
	SC_KASSERT(pc != NULL, , "sched_rem: thread %d is on no run queue",
	    td->td_tid);
	sc_tdq_rem(pc, td);
}

/* sched_runnable(): a thread waits on pc's own queue. */
static bool
sc_ule_runnable(struct sc_pcpu *pc)
{
	return (atomic_load_explicit(&pc->pc_runq_len,
	    memory_order_relaxed) > 0);
}

/* tdq_lock_pair(): two queue locks, always in address order. */
static void
sc_tdq_lock_pair(struct sc_pcpu *a, struct sc_pcpu *b)
{
	struct sc_machine *m = a->pc_machine;

	if (a < b) {
		sc__spin_lock(m, sc_tdq_lockptr(a));
		sc__spin_lock(m, sc_tdq_lockptr(b));
	} else {
		sc__spin_lock(m, sc_tdq_lockptr(b));
		sc__spin_lock(m, sc_tdq_lockptr(a));
	}
}

/*
 * sched_highest(), reduced to one level of CPUs: the most loaded CPU
 * other than pc (and those skip marks) with a thread to give: one
 * queued while it runs another (an idle CPU takes its queue itself); the
 * first in CPU order after pc among equals.  A hint, read unlocked:
 * the caller checks again under the queue locks.
 */
static struct sc_pcpu *
sc_tdq_highest(struct sc_pcpu *pc, const bool *skip)
{
	struct sc_machine *m = pc->pc_machine;
	struct sc_pcpu *c, *best = NULL;
	int i;

	for (i = 1; i < m->m_ncpu; i++) {
		c = &m->m_pcpu[(pc->pc_cpuid + i) % m->m_ncpu];
		if ((skip != NULL && skip[c->pc_cpuid]) ||
		    atomic_load_explicit(&c->pc_runq_len,
		    memory_order_relaxed) == 0 ||
		    atomic_load_explicit(&c->pc_curthread,
		    memory_order_relaxed) == c->pc_idlethread)
			continue;
		if (best == NULL || sc_tdq_load(c) > sc_tdq_load(best))
			best = c;
	}
	return (best);
}

/*
 * tdq_move(): both queue locks held.  The best thread of from's queue
 * that may migrate (not bound) moves to to's queue, and its lock from
 * from's queue lock to to's; returns it, or NULL.  (The kernel's
 * runq_steal_from() leaves the first timeshare thread to its CPU when
 * it can; with one queue by priority, the best unbound thread goes.)
 */
static struct sc_thread *
sc_tdq_move(struct sc_pcpu *from, struct sc_pcpu *to)
{
	struct sc_thread *td = NULL;
	uint64_t bits;
	int idx;

	SC_SPIN_ASSERT_OWNED(sc_tdq_lockptr(from), NULL);
	SC_SPIN_ASSERT_OWNED(sc_tdq_lockptr(to), NULL);
	for (bits = from->pc_runq.rq_status; bits != 0 && td == NULL;
	    bits &= bits - 1) {
		idx = __builtin_ctzll(bits);
		TAILQ_FOREACH(td, &from->pc_runq.rq_queues[idx], td_runq)
			if (td->td_bound == SC_NOCPU)
				break;
	}
	if (td == NULL)
		return (NULL);
	/*
	 * thread_lock_block_wait(): a thread that just yielded is queued
	 * before its context is saved, its lock blocked_lock; its CPU
	 * stores the queue's lock when the save is done, which would
	 * overwrite ours.  That CPU needs neither queue lock for it.
	 */
	while (atomic_load_explicit(&td->td_lock, memory_order_acquire) ==
	    &sc__blocked_lock)
		sc__cpu_spinwait();
	sc_tdq_rem(from, td);
	atomic_store(&td->td_lock, sc_tdq_lockptr(to));
	sc__runq_add(&to->pc_runq, &to->pc_runq_len, sc_tdq_lockptr(to), td);
	SC_CNT_INC(to->pc_machine, steals);
	return (td);
}

/*
 * tdq_idled(): pc's idle thread, no lock held.  Steal a thread from the
 * most loaded CPU (tdq_move()), under both queue locks (tdq_lock_pair());
 * a CPU that had nothing to give is not tried again.  True if pc now has
 * work (stolen, or added meanwhile).
 */
static bool
sc_ule_idled(struct sc_pcpu *pc)
{
	bool skip[SC_MAXCPU] = { false };
	struct sc_pcpu *victim;
	struct sc_thread *td = NULL;

	while (td == NULL && (victim = sc_tdq_highest(pc, skip)) != NULL) {
		sc_tdq_lock_pair(pc, victim);
		/* A thread was added for us while we looked: run it. */
		if (pc->pc_runq.rq_status == 0)
			td = sc_tdq_move(victim, pc);
		skip[victim->pc_cpuid] = true;
		sc__spin_unlock(sc_tdq_lockptr(victim));
		sc__spin_unlock(sc_tdq_lockptr(pc));
		if (atomic_load_explicit(&pc->pc_runq_len,
		    memory_order_relaxed) > 0)
			return (true);
	}
	return (td != NULL);
}

/*
 * tdq_trysteal(): sched_switch() of a thread that leaves pc's run queue
 * empty (it sleeps or exits), pc's queue lock held, interrupts disabled
 * (a spinlock section).  One try at the most loaded CPU before pc
 * chooses its idle thread: drop our lock, take both in address order,
 * move one thread.  Returns with pc's lock held again.  The idle thread
 * makes the more complete search (tdq_idled()).
 */
static void
sc_tdq_trysteal(struct sc_pcpu *pc)
{
	struct sc_machine *m = pc->pc_machine;
	struct sc_pcpu *victim;

	SC_SPIN_ASSERT_OWNED(sc_tdq_lockptr(pc), );
	sc__spin_unlock(sc_tdq_lockptr(pc));
	victim = sc_tdq_highest(pc, NULL);
	if (victim == NULL) {
		sc__spin_lock(m, sc_tdq_lockptr(pc));
		return;
	}
	sc_tdq_lock_pair(pc, victim);
	/* A thread added to our queue meanwhile runs instead. */
	if (pc->pc_runq.rq_status == 0)
		(void)sc_tdq_move(victim, pc);
	sc__spin_unlock(sc_tdq_lockptr(victim));
}

/* tdq_choose() and choosethread(): pc's queue lock held; the best
 * thread of pc's queue, or pc's idle thread. */
static struct sc_thread *
sc_ule_choose(struct sc_pcpu *pc)
{
	struct sc_thread *td;

	td = sc__runq_choose(&pc->pc_runq, sc_tdq_lockptr(pc));
	if (td != NULL)
		sc_tdq_rem(pc, td);
	else
		td = pc->pc_idlethread;
	sc__td_set_state(td, SC_TDS_RUNNING);
	return (td);
}

/*
 * sched_switch_migrate(): td (blocked) goes on dst's queue.  The dance of
 * the kernel: drop our queue's lock before taking dst's, so that two
 * queue locks are never held at once (interrupts stay disabled: the
 * caller entered a spinlock section).  Returns dst's lock, which
 * cpu_switch() makes td's lock.
 */
static struct sc_spin *
sc_ule_switch_migrate(struct sc_pcpu *pc, struct sc_pcpu *dst,
    struct sc_thread *td)
{
	struct sc_machine *m = pc->pc_machine;

	sc__spin_unlock(sc_tdq_lockptr(pc));
	sc__spin_lock(m, sc_tdq_lockptr(dst));
	sc_tdq_add(dst, td);
	sc__spin_unlock(sc_tdq_lockptr(dst));
	sc__spin_lock(m, sc_tdq_lockptr(pc));
	return (sc_tdq_lockptr(dst));
}

/*
 * sched_switch(): td == curthread on pc, td's lock held.  Returns when td
 * runs again, holding its lock: FreeBSD 13's mi_switch() returns with it
 * released, stackcap's scheduler interface keeps 12's contract, so td
 * takes it again once it has set its td_oncpu (docs/protocol.md lists
 * the difference).  Never inlined, for the stacks' sake (sched_4bsd.c).
 */
__attribute__((noinline)) static void
sc_ule_switch(struct sc_thread *td, struct sc_pcpu *pc)
{
	struct sc_machine *m = td->td_machine;
	struct sc_spin *mtx, *tdq = sc_tdq_lockptr(pc);
	struct sc_pcpu *dst;
	struct sc_thread *newtd;

	/*
	 * thread_lock_block(), in every switch: td_lock is blocked_lock
	 * until cpu_switch() has saved td's context, so that we may drop
	 * every lock before it.  The spinlock section keeps interrupts
	 * disabled through the switch, when no lock does any more.
	 */
	mtx = atomic_load(&td->td_lock);
	atomic_store(&td->td_lock, &sc__blocked_lock);
	sc_spinlock_enter();
	if (td->td_idle) {
		SC_KASSERT(mtx == tdq, , "sched_switch: idle thread %d not "
		    "locked by its run queue", td->td_tid);
		sc__td_set_state(td, SC_TDS_CAN_RUN);
	} else if (TD_IS_RUNNING(td)) {
		/* A yield, a preemption, or a bind to another CPU. */
		SC_KASSERT(mtx == tdq, , "sched_switch: running thread %d not "
		    "locked by its CPU's run queue", td->td_tid);
		dst = td->td_bound != SC_NOCPU ?
		    &m->m_pcpu[td->td_bound] : pc;
		if (dst == pc)
			sc_tdq_add(pc, td);
		else
			mtx = sc_ule_switch_migrate(pc, dst, td);
	} else {
		/* Going to sleep: its lock is a chain lock; swap for ours. */
		if (mtx != tdq) {
			sc__spin_unlock(mtx);
			sc__spin_lock(m, tdq);
		}
		if (pc->pc_runq.rq_status == 0)
			sc_tdq_trysteal(pc);
	}
	newtd = sc_ule_choose(pc);
	sc__spin_unlock(tdq);

	if (newtd != td) {
		/*
		 * Last, with no lock held: td_oncpu = NOCPU.  newtd is
		 * RUNNING and its td_oncpu is still NOCPU; its lock (our
		 * queue's) is free: ULE's window.
		 */
		atomic_store(&td->td_oncpu, SC_NOCPU);
		sc__hook(m, SC_HOOK_SWITCH_NOCPU, td);
		sc__hook(m, SC_HOOK_SWITCH_INCOMING, newtd);
		sc__sched_cpu_switch(pc, td, newtd, mtx);
		/* td runs again, maybe elsewhere: it says where itself. */
		pc = sc__pcpu_get();
		atomic_store(&td->td_oncpu, pc->pc_cpuid);
	} else {
		/* thread_unblock_switch(). */
		atomic_store(&td->td_lock, mtx);
	}
	sc_thread_lock(td);
	sc_spinlock_exit();
}

/*
 * sched_clock(): td's slice is spent (TDF_SLICEEND) and a thread waits on
 * pc's queue: td must switch.  FreeBSD's sched_clock() runs from
 * statclock() and scales the slice with the load (td_slice()); here
 * every slice is sched_slice, hz / 10 ticks.  The preemption of a
 * better thread made runnable is sched_add()'s (sc_ule_notify()).
 */
static bool
sc_ule_clock(struct sc_pcpu *pc, struct sc_thread *td, int cnt)
{
	return (sc__sched_slice_end(pc, td, cnt) && sc_ule_runnable(pc));
}

/* sched_fork_thread(): a new thread's lock is the queue of the CPU it
 * will most likely run on (not visible yet: no lock needed to set it). */
static void
sc_ule_newthread(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;

	atomic_init(&td->td_lock, td->td_idle ? sc_tdq_lockptr(&m->m_pcpu[0]) :
	    sc_tdq_lockptr(sc_ule_pickcpu(m, td)));
}

/*
 * sched_throw(): a CPU pthread starts its idle thread.  The idle thread's
 * lock is its own CPU's queue (set here, where the machine is not visible
 * to anyone yet); interrupts stay disabled until sched_fork_exit().
 */
static void
sc_ule_throw(struct sc_pcpu *pc)
{
	atomic_store(&pc->pc_idlethread->td_lock, sc_tdq_lockptr(pc));
	sc_spinlock_enter();
}

/* sched_fork_exit(): lock our queue, then td sets its own td_oncpu. */
static void
sc_ule_fork_exit(struct sc_thread *td)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	sc__spin_lock(td->td_machine, sc_tdq_lockptr(pc));
	sc_spinlock_exit();
	SC_KASSERT(atomic_load(&td->td_lock) == sc_tdq_lockptr(pc), ,
	    "sched_fork_exit: thread %d not locked by cpu%d's run queue",
	    td->td_tid, pc->pc_cpuid);
	atomic_store(&td->td_oncpu, pc->pc_cpuid);
}

const struct sc_sched sc__sched_ule = {
	.sched_name = "ULE",
	.sched_newthread = sc_ule_newthread,
	.sched_add = sc_ule_add,
	.sched_rem = sc_ule_rem,
	.sched_runnable = sc_ule_runnable,
	.sched_switch = sc_ule_switch,
	.sched_bind = sc__sched_bind,
	.sched_throw = sc_ule_throw,
	.sched_fork_exit = sc_ule_fork_exit,
	.sched_idled = sc_ule_idled,
	.sched_clock = sc_ule_clock,
};
