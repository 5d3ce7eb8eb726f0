/*
 * The part of a context switch that every scheduler shares: the
 * accounting, curthread, the sanitizers' stack switch and cpu_switch().
 *
 * Kernel counterpart: the end of sched_switch() in sys/kern/sched_4bsd.c
 * and sys/kern/sched_ule.c (td_lastcpu, the switch statistics, then
 * cpu_switch()).  Always inlined into each scheduler's sched_switch(): the
 * pcb of a thread that is switched out then holds sched_switch()'s frame,
 * so that its stack reads "mi_switch, sleepq_wait, ..." as the kernel's.
 */
#ifndef SC_SWITCH_H
#define SC_SWITCH_H

#include "sc_internal.h"
#include "sc_sanitizer.h"

/*
 * Switch pc from td to newtd (td != newtd, both chosen, newtd RUNNING):
 * mtx becomes td's lock once its context is saved; the new thread is
 * loaded once its own lock is not blocked_lock.  Returns when td runs
 * again, on whichever CPU.
 */
__attribute__((always_inline)) static inline void
sc__sched_cpu_switch(struct sc_pcpu *pc, struct sc_thread *td,
    struct sc_thread *newtd, struct sc_spin *mtx)
{
	struct sc_machine *m = pc->pc_machine;
	int last = atomic_load(&newtd->td_lastcpu);
	bool dying;

	sc__ds_sw1wait(&newtd->td_lock, &sc__blocked_lock);
	if (last != SC_NOCPU && last != pc->pc_cpuid)
		SC_CNT_INC(m, migrations);
	atomic_store(&newtd->td_lastcpu, pc->pc_cpuid);
	/* Any switch pays a preemption td owed (sched_switch()). */
	atomic_store_explicit(&td->td_owepreempt, 0, memory_order_relaxed);
	atomic_store_explicit(&pc->pc_curthread, newtd, memory_order_relaxed);
	SC_CNT_INC(m, switches);
	SC_TRACE(m, SC_TRACE_SWITCH, pc->pc_cpuid, td->td_tid, newtd->td_tid,
	    0);
	dying = atomic_load(&td->td_state) == SC_TDS_INACTIVE;
	sc__san_fiber_switch(dying ? NULL : &td->td_asan_fake, newtd->td_kstack,
	    newtd->td_tsan_fiber);
	sc__cpu_switch(&td->td_pcb, &newtd->td_pcb, &td->td_lock, mtx,
	    &newtd->td_lock);
	sc__san_finish_switch(td->td_asan_fake);
}

/*
 * A voluntary switch of curthread td (sched_relinquish(), the idle loop's
 * mi_switch()): switch under td's thread lock; once td runs again, drop
 * the lock and reap the thread that exited on this CPU.  Inlined so that
 * td's stack reads its caller, then mi_switch.
 */
__attribute__((always_inline)) static inline void
sc__mi_switch_voluntary(struct sc_thread *td)
{
	sc_thread_lock(td);
	sc__mi_switch(td);
	sc_thread_unlock(td);
	sc__switch_done();
}

#endif /* !SC_SWITCH_H */
