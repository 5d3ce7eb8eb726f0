/*
 * The idle threads, and waking an idle CPU.
 *
 * Kernel counterparts: sys/kern/kern_idle.c and sched_idletd(); the wake of
 * an idle CPU that sched_add() does (cpu_idle_wakeup(), or an IPI).  An
 * idle CPU sleeps on a futex, never spins: simulated CPUs may outnumber
 * the real cores.
 */
#include "sc_internal.h"
#include "sc_futex.h"
#include "sc_sanitizer.h"
#include "sc_switch.h"

/*
 * Wake one idle CPU (pc, or any when pc is NULL) to look at the run queue.
 * True if one was woken.
 */
bool
sc__cpu_idle_wakeup(struct sc_machine *m, struct sc_pcpu *pc)
{
	int i, one = 1;

	for (i = 0; i < m->m_ncpu; i++) {
		struct sc_pcpu *c = pc != NULL ? pc : &m->m_pcpu[i];

		one = 1;
		if (atomic_compare_exchange_strong(&c->pc_idling, &one, 0)) {
			atomic_fetch_add(&c->pc_idle_futex, 1);
			sc__futex_wake(&c->pc_idle_futex, 1);
			return (true);
		}
		if (pc != NULL)
			return (false);
	}
	return (false);
}

/* sched_idletd(): sleep on the CPU's futex until there is work. */
void
sc__idle_loop(void *arg)
{
	struct sc_thread *td = sc_curthread();
	struct sc_machine *m = td->td_machine;
	struct sc_pcpu *pc;
	uint32_t seq;

	(void)arg;
	for (;;) {
		pc = sc__pcpu_get();
		sc__clock_idle(pc, false);
		atomic_store(&pc->pc_idling, 1);
		seq = atomic_load(&pc->pc_idle_futex);
		if (m->m_sched->sched_runnable(pc) ||
		    m->m_sched->sched_idled(pc) || atomic_load(&m->m_dying)) {
			atomic_store(&pc->pc_idling, 0);
			sc__mi_switch_voluntary(td);
			continue;
		}
		/* The bound only limits damage from a lost wake; none is
		 * expected (sched_add bumps the word before waking).  In
		 * deterministic mode an idle CPU waits at a point. */
		sc__clock_idle(pc, true);
		sc__futex_wait(&pc->pc_idle_futex, seq, 200 * 1000 * 1000L);
		sc__san_poll_signals(pc);
		atomic_store(&pc->pc_idling, 0);
	}
}
