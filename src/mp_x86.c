/*
 * Inter-processor interrupts: FreeBSD's part.  Several vectors ride one
 * interrupt: the sender sets bits in the target CPU's pending word
 * (ipi_cpu()), the handler takes them all (ipi_bitmap_handler()); the
 * NMI has a handler of its own (ipi_nmi_handler()).
 *
 * Kernel counterpart: sys/x86/x86/mp_x86.c (ipi_cpu(), the IPI bitmap,
 * ipi_bitmap_handler(), ipi_nmi_handler()).  How an IPI travels, as a
 * signal to the CPU's pthread, is ipi_sim.c's; these functions run inside
 * its handler and are async-signal-safe: no lock, no allocation.
 */
#include "sc_internal.h"
#include "sc_futex.h"

/*
 * ipi_bitmap_handler(): every vector pending on pc, from the transport
 * (ipi_sim.c) with interrupts enabled on pc.  uc: the signal's context,
 * or NULL.  Async-signal-safe.
 */
void
sc__ipi_bitmap_handler(struct sc_pcpu *pc, struct sc_intr_frame *frame,
    ucontext_t *uc)
{
	struct sc_machine *m = pc->pc_machine;
	struct sc_intr_frame *prev;
	struct sc_thread *td;
	uint32_t bits;

	bits = atomic_exchange(&pc->pc_ipi_pending, 0);
	if (bits == 0)
		return;
	if ((bits & ~(uint32_t)SC_IPI_CLOCK) != 0)
		SC_CNT_INC(m, ipis_received);	/* a tick is no IPI */
	td = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	frame->if_kstack = frame->if_rsp >= td->td_kstack.lo &&
	    frame->if_rsp < td->td_kstack.hi;
	/* An NMI whose bit an earlier signal's handler found first. */
	if ((bits & SC_IPI_NMI) != 0)
		sc__stack_nmi_handler(pc, td, frame, false);
	if ((bits & SC_IPI_TRACE) != 0)
		SC_TRACE(m, SC_TRACE_IPI_RECEIVED, pc->pc_cpuid, td->td_tid,
		    frame->if_rbp, atomic_load(&pc->pc_ipi_id));
	prev = td->td_intr_frame;
	td->td_intr_frame = frame;
	if ((bits & SC_IPI_TRACE) != 0)
		sc__stack_capture_intr(pc, td, frame);
	if ((bits & SC_IPI_CLOCK) != 0)
		sc__hardclock(pc, td);
	td->td_intr_frame = prev;

	if ((bits & SC_IPI_STOP) != 0)
		sc__ipi_stop_redirect(pc, td, frame, uc);
	/* The interrupt's end: a preemption owed (kern_clock.c). */
	else if (atomic_load_explicit(&td->td_owepreempt,
	    memory_order_relaxed))
		sc__clock_intr_end(pc, td, frame, uc);
}

/*
 * ipi_nmi_handler(): the NMI of SC_PROTO_NMI, whether interrupts are
 * disabled on pc or not.  Async-signal-safe.
 */
void
sc__ipi_nmi_handler(struct sc_pcpu *pc, struct sc_intr_frame *frame)
{
	struct sc_thread *td;

	td = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	SC_CNT_INC(pc->pc_machine, ipis_received);
	frame->if_kstack = frame->if_rsp >= td->td_kstack.lo &&
	    frame->if_rsp < td->td_kstack.hi;
	sc__stack_nmi_handler(pc, td, frame, atomic_load_explicit(
	    &pc->pc_spinlock_count, memory_order_relaxed) != 0);
}

/* ipi_cpu(): async-signal-safe.  tid: the thread it is about, for the
 * trace (the tid the requester asked for), or 0. */
void
sc__ipi_cpu(struct sc_pcpu *pc, uint32_t vectors, int tid)
{
	struct sc_machine *m = pc->pc_machine;
	uint64_t id;

	id = atomic_fetch_add(&m->m_ipi_seq, 1) + 1;
	atomic_store(&pc->pc_ipi_id, id);
	atomic_fetch_or(&pc->pc_ipi_pending, vectors);
	SC_CNT_INC(m, ipis_sent);
	if ((vectors & SC_IPI_TRACE) != 0)
		SC_TRACE(m, SC_TRACE_IPI_SENT, sc_curcpu(), tid,
		    pc->pc_cpuid, id);
	/* An idle CPU is woken by its futex, never only by the signal. */
	if (atomic_load(&pc->pc_idling)) {
		atomic_fetch_add(&pc->pc_idle_futex, 1);
		sc__futex_wake(&pc->pc_idle_futex, 1);
	}
	sc__ipi_send(pc, vectors);
}
