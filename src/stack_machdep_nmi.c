/*
 * FreeBSD 12's capture of a running thread (cfg.protocol = SC_PROTO_NMI):
 * stack_save_td_running() and stack_nmi_handler().
 *
 * Kernel counterpart: sys/x86/x86/stack_machdep.c as FreeBSD 12 had it,
 * before "Reimplement stack capture of running threads" (docs/history.md).
 * The requester holds the target's thread lock across the whole wait,
 * takes the nmi_lock spin lock, reads td_oncpu, publishes
 * nmi_pending = td and sends an NMI; the target CPU's handler walks only
 * if its curthread is nmi_pending (an NMI meant for someone else is not
 * consumed), answers depth 0 for user mode or interrupts disabled, then
 * clears nmi_pending; depth 0 is EAGAIN.  Under 4BSD that is right: the
 * thread lock is the sched_lock, so a RUNNING thread stays on td_oncpu.
 * Under FreeBSD 13's ULE a RUNNING thread may have td_oncpu == NOCPU while
 * its lock is free (sched_ule.c): FreeBSD 12's code would call
 * ipi_cpu(NOCPU), whose outcome depends on the word before cpu_apic_ids[]
 * (the KASSERT below says how).  FreeBSD 12's own ULE had no such window.
 *
 * Two more differences from FreeBSD 12 (docs/protocol.md lists them):
 * td_oncpu is read before nmi_lock is taken, so that the KASSERT fires
 * with only the thread lock held; and a declined NMI just returns, where
 * 12's trap() goes on to its other handling of the NMI.
 *
 * Beyond FreeBSD 12, only because the wait is bounded: the handler claims
 * the request (nmi_pending: td -> CLAIMED) before it walks, and walks into
 * a buffer of the machine's, so that a request given up is never written.
 */
#include <errno.h>

#include "sc_internal.h"

/*
 * stack_nmi_handler(), on pc's pthread in the IPI signal's handler, with
 * or without interrupts disabled (an NMI is not masked by them).  td is
 * pc's curthread.  Async-signal-safe.
 */
void
sc__stack_nmi_handler(struct sc_pcpu *pc, struct sc_thread *td,
    const struct sc_intr_frame *frame, bool intr_disabled)
{
	struct sc_machine *m = pc->pc_machine;
	struct sc_stack_nmi *sn = &m->m_nmi;
	const struct sc_range *text;
	uintptr_t want = (uintptr_t)td;
	size_t ntext;
	bool overrun = false;

	/* "Don't consume an NMI that wasn't meant for us." */
	if (atomic_load_explicit(&sn->sn_pending, memory_order_acquire) !=
	    want || !atomic_compare_exchange_strong(&sn->sn_pending, &want,
	    SC_NMI_CLAIMED)) {
		SC_CNT_INC(m, trace_stale);
		SC_TRACE(m, SC_TRACE_STALE_IPI, pc->pc_cpuid, td->td_tid, 0, 0);
		return;
	}
	if (frame->if_kstack && !intr_disabled) {
		sc_text_ranges(&text, &ntext);
		sc__stack_walk_fbsd12(&sn->sn_buf, frame->if_rbp, td->td_kstack,
		    text, ntext, &overrun);
	} else {
		/* "We were running in usermode or had interrupts
		 * disabled." */
		sn->sn_buf.depth = 0;
	}
	SC_CNT_INC(m, nmis_answered);
	/* a1: bit 0 the kernel stack, bit 1 a walk that 12 would have
	 * taken past the stack's end. */
	SC_TRACE(m, SC_TRACE_WALK_DONE, pc->pc_cpuid, td->td_tid,
	    sn->sn_buf.depth, (frame->if_kstack ? 1 : 0) | (overrun ? 2 : 0));
	atomic_store_explicit(&sn->sn_pending, 0, memory_order_release);
}

/*
 * stack_save_td_running(): td RUNNING, not curthread, its thread lock
 * held (and held throughout: that is 12's protocol).  Every wait, for
 * nmi_lock too, ends at deadline (0: capture_timeout_ns from now).
 * Returns 0, EAGAIN (depth 0), ETIMEDOUT (our bound, where 12 spins for
 * ever), or EINVAL from the KASSERT of ULE's window.
 */
static int
sc_stack_save_td_running(struct sc_stack *st, struct sc_thread *td,
    uint64_t deadline)
{
	struct sc_machine *m = td->td_machine;
	struct sc_stack_nmi *sn = &m->m_nmi;
	uintptr_t want;
	int cpuid, error;

	cpuid = atomic_load(&td->td_oncpu);
	SC_KASSERT(cpuid != SC_NOCPU, EINVAL, "thread %d \"%s\" is RUNNING "
	    "with td_oncpu == NOCPU, its thread lock held (ULE: chosen, "
	    "cpu_switch() not returned into it yet).  FreeBSD 12 would "
	    "ipi_cpu(NOCPU, IPI_TRACE), which reads cpu_apic_ids[-1], the word "
	    "before the array: if it is -1, the KASSERT \"IPI to non-existent "
	    "CPU\" with INVARIANTS, else an NMI to the sender's own CPU; "
	    "otherwise an NMI to whatever APIC ID it holds.  Unless that NMI "
	    "finds td running, nmi_pending is never cleared: a spin for ever "
	    "with nmi_lock held and interrupts disabled",
	    td->td_tid, td->td_name);
	/* The library's clock: virtual time in deterministic mode, so that
	 * the bound expires at the same step in every run of a seed. */
	if (deadline == 0)
		deadline = sc__capture_deadline(m);
	/* Another requester holds nmi_lock at most until its own bound. */
	if (sc__spin_lock_until(m, &sn->sn_lock, deadline) != 0)
		return (ETIMEDOUT);
	atomic_store_explicit(&sn->sn_pending, (uintptr_t)td,
	    memory_order_release);
	SC_CNT_INC(m, nmis_sent);
	sc__hook(m, SC_HOOK_SAVE_BEFORE_IPI, td);
	sc__ipi_cpu(&m->m_pcpu[cpuid], SC_IPI_NMI, td->td_tid);
	error = 0;
	for (;;) {
		if (atomic_load_explicit(&sn->sn_pending,
		    memory_order_acquire) == 0)
			break;
		if (sc__ds_clock() >= deadline) {
			/* Give up unless a handler claimed: then it ends
			 * soon (a bounded walk, no lock). */
			want = (uintptr_t)td;
			if (atomic_compare_exchange_strong(&sn->sn_pending,
			    &want, 0)) {
				error = ETIMEDOUT;
				break;
			}
		}
		sc__cpu_spinwait();
	}
	if (error == 0)
		sc_stack_copy(&sn->sn_buf, st);
	sc__spin_unlock(&sn->sn_lock);
	if (error != 0)
		return (error);
	SC_CNT_INC(m, captures_running);
	if (st->depth == 0) {
		SC_CNT_INC(m, nmi_eagain);
		return (EAGAIN);
	}
	return (0);
}

/*
 * FreeBSD 12's stack_save_td() past the checks that both protocols share
 * (sc_stack_save_td_look(), stack_machdep.c): td is not curthread and not
 * gone, its thread lock held.  Running: stack_save_td_running(); else a
 * walk from its pcb, with 12's walker.
 */
int
sc__stack_save_td_nmi(struct sc_stack *st, struct sc_thread *td,
    uint64_t deadline)
{
	const struct sc_range *text;
	size_t ntext;
	bool overrun;

	if (TD_IS_RUNNING(td))
		return (sc_stack_save_td_running(st, td, deadline));
	sc_text_ranges(&text, &ntext);
	sc__stack_walk_fbsd12(st, td->td_pcb.pcb_rbp, td->td_kstack, text,
	    ntext, &overrun);
	return (0);
}
