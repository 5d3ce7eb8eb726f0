/*
 * Interrupt disabling and user mode.
 *
 * Kernel counterparts: spinlock_enter()/spinlock_exit() in
 * sys/amd64/amd64/machdep.c; the return to user mode (a separate stack).
 *
 * "Interrupts disabled" is a per-CPU soft mask: the IPI handler checks
 * pc_spinlock_count and, when it is not zero, leaves the vector pending and
 * sets pc_intr_deferred; spinlock_exit() handles it when the count drops to
 * zero.  This costs two plain memory operations instead of two
 * pthread_sigmask() system calls per lock (docs/design.md has the
 * measurement).  The signal is delivered to the CPU's own pthread, so the
 * count needs no ordering stronger than a signal fence.
 */
#include <sys/mman.h>

#include "sc_internal.h"
#include "sc_sanitizer.h"

#define SC_USTACK_LEN	(64 * 1024 * SC_SAN_STACK_SCALE)
#define SC_USTACK_MIN	(8 * 1024 * SC_SAN_STACK_SCALE)	/* for one nest */

void
sc_spinlock_enter(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	if (pc == NULL)
		return;
	atomic_store_explicit(&pc->pc_spinlock_count,
	    atomic_load_explicit(&pc->pc_spinlock_count,
	    memory_order_relaxed) + 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

void
sc_spinlock_exit(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();
	struct sc_thread *td;
	int n;

	if (pc == NULL)
		return;
	n = atomic_load_explicit(&pc->pc_spinlock_count, memory_order_relaxed);
	SC_KASSERT(n > 0, , "spinlock_exit without spinlock_enter on cpu%d",
	    pc->pc_cpuid);
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&pc->pc_spinlock_count, n - 1,
	    memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	/*
	 * An IPI that arrived while interrupts were off runs now, as the
	 * kernel's does when intr_restore() re-enables interrupts.
	 */
	if (n == 1 && atomic_load_explicit(&pc->pc_intr_deferred,
	    memory_order_relaxed))
		sc__ipi_deferred(pc, (uintptr_t)__builtin_frame_address(0),
		    (uintptr_t)&&here);
here:
	/*
	 * The last release, as the kernel's spinlock_exit() ends in
	 * critical_exit(): a preemption that an interrupt owed the thread
	 * while interrupts were off is taken now.
	 */
	if (n == 1 && (td = atomic_load_explicit(&pc->pc_curthread,
	    memory_order_relaxed)) != NULL && atomic_load_explicit(
	    &td->td_owepreempt, memory_order_relaxed))
		sc__sched_preempt_owed(td);
}

void
sc_user_call(void (*fn)(void *), void *arg)
{
	struct sc_thread *td = sc_curthread();
	uintptr_t sp, lo, top;
	void *p;

	SC_KASSERT(td != NULL, , "sc_user_call outside a simulated thread");
	SC_KASSERT(fn != NULL, , "sc_user_call: NULL function");
	if (td->td_ustack == NULL) {
		p = sc__map_get(SC_USTACK_LEN, false);
		SC_KASSERT(p != NULL, , "sc_user_call: cannot map a "
		    "user stack for thread %d", td->td_tid);
		td->td_ustack = p;
		td->td_ustack_len = SC_USTACK_LEN;
	}
	lo = (uintptr_t)td->td_ustack;
	top = lo + td->td_ustack_len;
	/*
	 * Called from user mode already (fn called sc_user_call() again):
	 * nest below the caller's frames, past the red zone, instead of
	 * starting over at the top of the stack they live on.
	 */
	__asm__ volatile("movq %%rsp, %0" : "=r"(sp));
	if (sp > lo && sp <= top) {
		top = (sp - 128) & ~(uintptr_t)15;
		SC_KASSERT(top >= lo + SC_USTACK_MIN, , "sc_user_call: thread "
		    "%d: user stack exhausted (%zu bytes left)", td->td_tid,
		    (size_t)(top - lo));
		sc__user_enter(fn, arg, (void *)top);
		return;
	}
	/*
	 * From the kernel stack: what lies below this frame's call of
	 * sc__user_enter() is free while fn runs, where a clock interrupt
	 * from user mode runs its preemption (kern_clock.c), as a trap
	 * from user mode starts at the top of the thread's kernel stack.
	 */
	td->td_uksp = (sp - 256) & ~(uintptr_t)15;
	sc__user_enter(fn, arg, (void *)top);
	td->td_uksp = 0;
	/* ast(): a preemption owed while in user mode, on the way out. */
	if (atomic_load_explicit(&td->td_owepreempt, memory_order_relaxed))
		sc__sched_preempt_owed(td);
}
