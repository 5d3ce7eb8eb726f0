/*
 * Context switches, yielding, sleep and wakeup.
 *
 * Kernel counterpart: sys/kern/kern_synch.c (mi_switch(), setrunnable(),
 * sleep/wakeup, maybe_yield(), kern_yield()).  The scheduler's part of a
 * switch (choosing, run queues, locks) is sched_switch() of the machine's
 * scheduler (struct sc_sched); the sleep queues are subr_sleepqueue.c.
 */
#include <errno.h>

#include "sc_internal.h"
#include "sc_sanitizer.h"
#include "sc_switch.h"

/*
 * TD_CLR_*() then setrunnable(): clear one inhibitor of td (locked); the
 * last one to go makes td runnable.
 */
void
sc__td_uninhibit(struct sc_thread *td, int inhibitor)
{
	SC_THREAD_LOCK_ASSERT(td, );
	if ((atomic_fetch_and(&td->td_inhibitors, ~inhibitor) & ~inhibitor) ==
	    0)
		sc__setrunnable(td);
}

/* setrunnable(): td's lock held and no inhibitors left. */
void
sc__setrunnable(struct sc_thread *td)
{
	SC_THREAD_LOCK_ASSERT(td, );
	SC_KASSERT(atomic_load(&td->td_inhibitors) == 0, , "setrunnable: "
	    "thread %d has inhibitors %#x", td->td_tid,
	    atomic_load(&td->td_inhibitors));
	sc__td_set_state(td, SC_TDS_CAN_RUN);
	td->td_machine->m_sched->sched_add(td);
}

/*
 * The rule of FreeBSD's mi_switch(): a thread switches holding its thread
 * lock and nothing else, interrupts disabled by that lock alone.  A switch
 * with another spin lock held, or inside sc_spinlock_enter(), would run
 * the next thread with interrupts off for good.
 */
static bool
sc_switch_ok(const struct sc_pcpu *pc)
{
	return (pc->pc_nheld == 1 && atomic_load_explicit(
	    &pc->pc_spinlock_count, memory_order_relaxed) == 1);
}

/*
 * mi_switch(): td == curthread, td's lock held.  If td is still RUNNING it
 * goes back on a run queue (a yield); otherwise its state says why it
 * stops.  Returns when td runs again, with td's lock held (the lock the
 * scheduler gives a running thread).
 */
void
sc__mi_switch(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;
	struct sc_pcpu *pc = sc__pcpu_get();

	/* THREAD_LOCK_ASSERT(td): td is curthread, so it is the owner. */
	SC_KASSERT(atomic_load_explicit(&atomic_load(&td->td_lock)->sp_owner,
	    memory_order_relaxed) == (uintptr_t)td, , "mi_switch: thread %d "
	    "not locked", td->td_tid);
	SC_KASSERT(sc_switch_ok(pc), , "mi_switch: thread %d switches with "
	    "%d spin locks held and interrupts disabled %d times (a "
	    "sleep inside sc_spinlock_enter() or another thread's lock?)",
	    td->td_tid, pc->pc_nheld, atomic_load(&pc->pc_spinlock_count));
	/* FreeBSD's mi_switch(): "switch in a critical section". */
	SC_KASSERT(atomic_load_explicit(&td->td_critnest,
	    memory_order_relaxed) == 0, , "mi_switch: thread %d switches in "
	    "a critical section (sc_critical_enter() %d deep)", td->td_tid,
	    atomic_load(&td->td_critnest));
	if (atomic_load(&m->m_dying))
		sc__cpu_leave(pc, td);
	m->m_sched->sched_switch(td, pc);
	__asm__ volatile("" ::: "memory");	/* keep this frame */
}

void
sc_yield(void)
{
	struct sc_thread *td = sc_curthread();

	SC_KASSERT(td != NULL, , "sc_yield outside a simulated thread");
	sc__mi_switch_voluntary(td);
}

void
sc_maybe_yield(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	sc__ds_wait();
	if (pc == NULL)
		return;
	sc__san_poll_signals(pc);
	if (!pc->pc_machine->m_sched->sched_runnable(pc) &&
	    !atomic_load_explicit(&pc->pc_machine->m_dying,
	    memory_order_relaxed))
		return;
	SC_CNT_INC(pc->pc_machine, preemptions);
	sc_yield();
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
}

int
sc_deterministic(void)
{
	return (sc__ds_active() ? 1 : 0);
}

/*
 * cpu_spinwait(), public.  On a simulated thread, inside a critical
 * section: a tick taken at the point (deterministic mode) or by a signal
 * in the pause that leaves a preemption owed has it taken at the
 * section's end, as at any safe point (the spinner makes no other call
 * that would take it); with interrupts disabled it stays owed.
 */
void
sc_cpu_spinwait(void)
{
	if (sc_curthread() == NULL) {
		sc__cpu_spinwait();
		return;
	}
	sc_critical_enter();
	sc__cpu_spinwait();
	sc_critical_exit();
}

int
sc_sched_bind(int cpu)
{
	struct sc_thread *td = sc_curthread();

	SC_KASSERT(td != NULL, EINVAL, "sc_sched_bind outside a simulated "
	    "thread");
	if (cpu != SC_NOCPU && (cpu < 0 || cpu >= td->td_machine->m_ncpu))
		return (EINVAL);
	sc_thread_lock(td);
	td->td_machine->m_sched->sched_bind(td, cpu);
	sc_thread_unlock(td);
	sc__switch_done();
	return (0);
}

void
sc_sleep(const void *wchan, const char *wmesg)
{
	SC_KASSERT(sc_curthread() != NULL, ,
	    "sc_sleep(\"%s\") outside a simulated thread", wmesg);
	sc__sleepq_lock(wchan);
	sc__sleepq_wait(wchan, wmesg);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
}

/* wakeup(): every sleeper of wchan, in every machine. */
void
sc_wakeup(const void *wchan)
{
	sc__sleepq_broadcast(wchan);
}
