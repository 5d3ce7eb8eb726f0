/*
 * Swapping kernel stacks out and in.
 *
 * Kernel counterpart: sys/vm/vm_swapout.c (swapout(), faultin() and
 * vm_thread_swapout()/vm_thread_swapin(), as in FreeBSD 13/14, before
 * kernel-stack swapping was removed).  A swapped stack is PROT_NONE, so a
 * walk of it would fault: stack_save_td() refuses swapped threads.
 */
#include <errno.h>
#include <sys/mman.h>

#include "sc_internal.h"
#include "sc_sanitizer.h"

int
sc_thread_swapout(struct sc_thread *td)
{
	struct sc_machine *m;
	struct sc_proc *p;
	int error = 0;

	SC_KASSERT(td != NULL, EINVAL, "NULL thread");
	p = atomic_load(&td->td_proc);
	SC_KASSERT(!sc_proc_lock_owned(p), EINVAL,
	    "thread %d: the caller holds its proc lock", td->td_tid);
	SC_KASSERT(sc__spin_held_count() == 0, EINVAL,
	    "thread %d: the caller holds a spin lock (a thread lock?)",
	    td->td_tid);
	m = td->td_machine;
	/* The proc lock keeps threads that may be running from swapping. */
	sc_proc_lock(p);
	sc_thread_lock(td);
	/*
	 * An idle thread is never swapped (swapout_procs() skips P_SYSTEM):
	 * its CPU switches to it whenever the run queue is empty, and would
	 * fault on a PROT_NONE stack.
	 */
	if (td->td_idle)
		error = EINVAL;
	else if (atomic_load(&td->td_state) == SC_TDS_INACTIVE)
		error = ESRCH;
	else if (TD_IS_RUNNING(td))
		error = EBUSY;
	else if (TD_IS_SWAPPED(td))
		error = EALREADY;
	if (error == 0) {
		/*
		 * From now on, reading this stack faults.  Nothing reads it
		 * meanwhile: td cannot run while we hold its lock.  The
		 * mprotect() may split a mapping and so fail at the mapping
		 * limit: then td stays as it was.
		 */
		sc__san_unpoison(td->td_kstack);
		if (mprotect((void *)td->td_kstack.lo,
		    td->td_kstack.hi - td->td_kstack.lo, PROT_NONE) != 0)
			error = ENOMEM;
	}
	if (error == 0) {
		/* A runnable thread leaves the run queue until swapped in. */
		if (atomic_load(&td->td_state) == SC_TDS_RUNQ)
			m->m_sched->sched_rem(td);
		atomic_fetch_or(&td->td_inhibitors, SC_TDI_SWAPPED);
		sc__td_set_state(td, SC_TDS_INHIBITED);
		SC_CNT_INC(m, swapouts);
		SC_TRACE(m, SC_TRACE_SWAP, sc_curcpu(), td->td_tid, 1, 0);
	}
	sc_thread_unlock(td);
	sc_proc_unlock(p);
	return (error);
}

int
sc_thread_swapin(struct sc_thread *td)
{
	struct sc_spin *held;
	int error = 0;

	SC_THREAD_UNLOCKED_ARG(td, EINVAL);
	/* Before anything is done: a swapped-in runnable thread goes to a
	 * run queue (sched_add()), whose lock the caller's may be. */
	SC_KASSERT(sc__spin_held_count() == 0, EINVAL,
	    "thread %d: the caller holds a spin lock (a thread lock?)",
	    td->td_tid);
	sc_thread_lock(td);
	held = atomic_load(&td->td_lock);
	if (!TD_IS_SWAPPED(td))
		error = EINVAL;
	else if (mprotect((void *)td->td_kstack.lo,
	    td->td_kstack.hi - td->td_kstack.lo, PROT_READ | PROT_WRITE) != 0) {
		/*
		 * At the mapping limit (vm.max_map_count) the split fails:
		 * td stays swapped, and nothing will switch to a stack that
		 * would fault.
		 */
		error = ENOMEM;
	} else {
		SC_CNT_INC(td->td_machine, swapins);
		SC_TRACE(td->td_machine, SC_TRACE_SWAP, sc_curcpu(),
		    td->td_tid, 0, 0);
		sc__td_uninhibit(td, SC_TDI_SWAPPED);
	}
	sc__spin_unlock(held);
	return (error);
}
