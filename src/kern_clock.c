/*
 * The clock: a periodic interrupt on every CPU, cfg.hz a second
 * (hardclock()), the scheduler's slice accounting that it drives
 * (sched_clock()), the preemption at the interrupt's end, and the
 * critical sections that defer it (td_owepreempt).
 *
 * Kernel counterparts: sys/kern/kern_clock.c (hardclock()); the local
 * APIC timer's interrupt, sys/x86/x86/local_apic.c (lapic_handle_timer(),
 * which runs the tick between critical_enter() and critical_exit(), whose
 * end preempts); sys/kern/kern_switch.c (critical_enter(),
 * critical_exit(), critical_exit_preempt(), td_owepreempt);
 * sys/kern/subr_trap.c (ast(): a thread interrupted in user mode switches
 * on its way back).
 *
 * How a tick arrives: each CPU pthread has a POSIX timer aimed at itself
 * (SIGEV_THREAD_ID) with the IPI signal, so a tick is taken like an IPI,
 * on the CPU's alternate signal stack, and deferred while interrupts are
 * disabled (ipi_sim.c); the handler tells it from an IPI by its si_code
 * (SI_TIMER) and sets SC_IPI_CLOCK.  An idle CPU disarms its timer before
 * it sleeps: no tick wakes a CPU that has nothing to run.  docs/
 * benchmarks.md measures this choice against one timer thread.
 *
 * How a tick preempts: when the scheduler says the running thread must
 * switch, the end of the handler rewrites the signal's context so that,
 * on return, the thread "calls" sc__timerint (cpu_switch.S) on its own
 * kernel stack, as if the interrupt had pushed a frame there: its frame
 * record links to the interrupted %rip and %rbp, so the pcb walk of the
 * preempted thread reads "mi_switch ... sc__sched_preempt, sc__timerint,
 * <the interrupted function>, <its callers>".  sc__timerint saves what the
 * interrupted code may hold in the caller-saved registers, the flags and
 * the FPU/SSE/AVX state, calls sc__sched_preempt() (the involuntary
 * mi_switch()), restores them and returns to the interrupted instruction
 * with the interrupted %rsp.  Only where that is safe
 * (sc_clock_can_redirect()); elsewhere the preemption is owed
 * (td_owepreempt) and taken at the next safe point: sc_critical_exit(),
 * the last sc_spinlock_exit() (a thread lock's release, as
 * spinlock_exit() ends in critical_exit()), or the return from
 * sc_user_call(); any switch of the thread meanwhile (sc_maybe_yield(),
 * a sleep) pays it, as sched_switch() clears td_owepreempt.
 *
 * The library's own code is never preempted from the handler: it is the
 * machine and the parts of the kernel that FreeBSD runs with interrupts
 * disabled or in a critical section, and it reads the current CPU in two
 * loads (the pthread's, then its curthread) where the kernel reads
 * %gs:curthread in one.  Its text is one section, stackcap_text
 * (stackcap_text.ld).
 *
 * Deterministic mode has no real clock (cfg.hz is ignored there):
 * sc__hardclock() is the entry point that a virtual tick calls, outside a
 * signal handler too.
 */
#include <cpuid.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "sc_internal.h"
#include "sc_sanitizer.h"

/*
 * The FPU state that sc__timerint saves: XSAVE's components x87, SSE,
 * AVX and AVX-512 that XCR0 enables (sc__fpu_mask, 0 without XSAVE:
 * FXSAVE's 512 bytes), in sc__fpu_len bytes.  Read by cpu_switch.S.
 */
uint64_t sc__fpu_mask __attribute__((visibility("hidden")));
uint64_t sc__fpu_len __attribute__((visibility("hidden"))) = 512;
static pthread_once_t sc_fpu_once = PTHREAD_ONCE_INIT;

/* Room that a preemption needs below the interrupted %rsp. */
#define SC_PREEMPT_ROOM	(4096 * SC_SAN_STACK_SCALE)

static void
sc_fpu_init(void)
{
	unsigned int a, b, c, d, i;
	uint32_t lo, hi;
	uint64_t xcr0, len = 512;

	if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & bit_OSXSAVE) == 0)
		return;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	/* x87, SSE, AVX, the AVX-512 opmask and registers; not AMX. */
	xcr0 = (((uint64_t)hi << 32) | lo) & 0xe7;
	for (i = 2; i < 8; i++) {
		if ((xcr0 & (1u << i)) == 0)
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		if (b + a > len)
			len = b + a;
	}
	sc__fpu_len = (len + 63) & ~(uint64_t)63;
	sc__fpu_mask = xcr0;
}

/* The slice of either scheduler: hz / 10 ticks (100 ms), at least 1. */
int
sc__clock_slice(const struct sc_machine *m)
{
	return (m->m_cfg.hz >= 10 ? m->m_cfg.hz / 10 : 1);
}

/* ------------------------------------------------------------------------
 * The timer
 * ------------------------------------------------------------------------ */

/*
 * On the CPU's pthread, at its start: create its timer (disarmed).  0, or
 * the error of timer_create().  No timer without a clock or in
 * deterministic mode.
 */
int
sc__clock_cpu_init(struct sc_pcpu *pc)
{
	struct sc_machine *m = pc->pc_machine;
	struct sigevent sev;

	/*
	 * Every machine redirects to sc__timerint: deterministic mode's
	 * virtual tick, and sched_add()'s IPI_PREEMPT without a clock too.
	 */
	(void)pthread_once(&sc_fpu_once, sc_fpu_init);
	if (m->m_cfg.hz == 0 || m->m_ds != NULL)
		return (0);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = m->m_cfg.ipi_signo;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &pc->pc_timer) != 0)
		return (errno);
	pc->pc_timer_ok = true;
	return (0);
}

/* On the CPU's pthread, as it leaves the machine. */
void
sc__clock_cpu_fini(struct sc_pcpu *pc)
{
	if (!pc->pc_timer_ok)
		return;
	(void)timer_delete(pc->pc_timer);	/* ours: cannot fail */
	pc->pc_timer_ok = false;
	pc->pc_timer_armed = false;
}

/*
 * On pc's own pthread, from its idle thread: it is about to sleep (idle),
 * or looks for work (its first pass arms the timer: no tick comes before
 * the CPU runs a thread).  A sleeping CPU takes no tick (the kernel's
 * idle tickless mode, cpu_idle() with the event timer stopped); the
 * period starts over when it wakes.
 */
void
sc__clock_idle(struct sc_pcpu *pc, bool idle)
{
	struct itimerspec its;
	long ns;

	if (!pc->pc_timer_ok || pc->pc_timer_armed == !idle)
		return;
	memset(&its, 0, sizeof(its));
	if (!idle) {
		ns = 1000L * 1000 * 1000 / pc->pc_machine->m_cfg.hz;
		its.it_value.tv_sec = ns / (1000L * 1000 * 1000);
		its.it_value.tv_nsec = ns % (1000L * 1000 * 1000);
		its.it_interval = its.it_value;
	}
	/* A valid timer of ours and a valid period: cannot fail. */
	(void)timer_settime(pc->pc_timer, 0, &its, NULL);
	pc->pc_timer_armed = !idle;
}

/* ------------------------------------------------------------------------
 * hardclock() and the interrupt's end
 * ------------------------------------------------------------------------ */

/*
 * hardclock(): one clock interrupt on pc, which runs td.  From the IPI
 * handler with interrupts enabled on pc (async-signal-safe: no lock), or
 * from a virtual tick of deterministic mode at a scheduling point.
 * Counts the interrupt, and the ticks it stands for: one, plus the
 * periods that expired while its signal waited (a loaded host runs the
 * CPU's pthread late; FreeBSD's hardclock(cnt) counts its missed ticks
 * the same way).  Then asks the scheduler whether td's slice is spent
 * with others waiting (sched_clock()); if so td owes a preemption, which
 * the interrupt's end takes (sc__clock_intr_end()) or a later safe
 * point.
 */
void
sc__hardclock(struct sc_pcpu *pc, struct sc_thread *td)
{
	struct sc_machine *m = pc->pc_machine;
	int cnt = 1 + pc->pc_ticks_missed;

	pc->pc_ticks_missed = 0;
	SC_CNT_INC(m, clock_intrs);
	atomic_store_explicit(&pc->pc_ticks, atomic_load_explicit(
	    &pc->pc_ticks, memory_order_relaxed) + (uint64_t)cnt,
	    memory_order_relaxed);
	if (td->td_idle || atomic_load_explicit(&m->m_dying,
	    memory_order_relaxed))
		return;
	if (m->m_sched->sched_clock(pc, td, cnt))
		atomic_store_explicit(&td->td_owepreempt, 1,
		    memory_order_relaxed);
}

/*
 * lapic_handle_timer(): the clock's own signal on pc, interrupts enabled
 * there: the tick, then the interrupt's end.  uc: the signal's context.
 * Async-signal-safe.
 */
void
sc__clock_intr(struct sc_pcpu *pc, struct sc_intr_frame *frame,
    ucontext_t *uc)
{
	struct sc_thread *td;

	if ((atomic_fetch_and(&pc->pc_ipi_pending, ~(uint32_t)SC_IPI_CLOCK) &
	    SC_IPI_CLOCK) == 0)
		return;		/* an IPI's handler took the tick */
	td = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	frame->if_kstack = frame->if_rsp >= td->td_kstack.lo &&
	    frame->if_rsp < td->td_kstack.hi;
	sc__hardclock(pc, td);
	if (atomic_load_explicit(&td->td_owepreempt, memory_order_relaxed))
		sc__clock_intr_end(pc, td, frame, uc);
}

#if !defined(SC_SANITIZER_THREAD)
/*
 * May td, interrupted at frame on pc, switch out right at the interrupt's
 * end?  Where the kernel would (no critical section, interrupts were
 * on: the caller runs only then) and where the simulation can: not
 * inside the library, libc, the loader or a sanitizer runtime, which may
 * hold host locks or a per-CPU pointer (the IPI_STOP rule, m_nostop); not
 * in a host-locked section; not while the machine dies (IPI_STOP's turn).
 */
static bool
sc_clock_can_redirect(struct sc_pcpu *pc, struct sc_thread *td,
    const struct sc_intr_frame *frame)
{
	struct sc_machine *m = pc->pc_machine;

	return (!td->td_idle &&
	    atomic_load_explicit(&td->td_critnest, memory_order_relaxed) ==
	    0 && atomic_load_explicit(&td->td_hostlocks,
	    memory_order_relaxed) == 0 && !atomic_load_explicit(&m->m_dying,
	    memory_order_relaxed) && !sc__in_library_text(frame->if_rip) &&
	    !sc_pc_in_text(frame->if_rip, m->m_nostop, m->m_nnostop));
}
#endif

/*
 * The end of the clock interrupt on pc, which interrupted td at frame,
 * when td owes a preemption: make the signal's return "call"
 * sc__timerint, if it may (sc_clock_can_redirect()) and there is room;
 * else td_owepreempt stays set for the next safe point.  uc: the
 * signal's context, or NULL (no signal: a safe point takes it).
 *
 * Where sc__timerint runs: interrupted on its kernel stack, right below
 * the interrupted %rsp and its 128-byte red zone; in user mode (on its
 * user stack, sc_user_call()), on the kernel stack below sc_user_call()'s
 * frame (td_uksp), as a trap from user mode starts on the kernel stack.
 * Either way it returns with "ret $128" from a slot just below the
 * interrupted red zone, holding the interrupted %rip, which lands on the
 * interrupted %rsp exactly.  At its entry:
 *   [rsp]     the interrupted %rip (the return address of its frame)
 *   [rsp + 8] the address of that slot
 * Under TSan the handler runs late, at an interceptor, with a context
 * that is no longer the thread's (ipi_sim.c): never redirect there.
 * Async-signal-safe.
 */
SC_SAN_NO_ASAN void
sc__clock_intr_end(struct sc_pcpu *pc, struct sc_thread *td,
    const struct sc_intr_frame *frame, ucontext_t *uc)
{
#if !defined(SC_SANITIZER_THREAD)
	uintptr_t rsp, slot, entry;

	if (uc == NULL || !sc_clock_can_redirect(pc, td, frame))
		return;
	rsp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	slot = rsp - 128 - 8;
	if (frame->if_kstack) {
		entry = (slot - 16) & ~(uintptr_t)15;
		if (entry < td->td_kstack.lo + SC_PREEMPT_ROOM +
		    sc__fpu_len)
			return;
	} else if (td->td_ustack != NULL && td->td_uksp != 0 &&
	    rsp > (uintptr_t)td->td_ustack + 256 &&
	    rsp <= (uintptr_t)td->td_ustack + td->td_ustack_len) {
		entry = td->td_uksp - 16;
	} else
		return;
	/* The thread's own stacks, below everything live on them. */
	*(uintptr_t *)slot = frame->if_rip;
	((uintptr_t *)entry)[0] = frame->if_rip;
	((uintptr_t *)entry)[1] = slot;
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)entry;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)sc__timerint;
#else
	(void)pc;
	(void)td;
	(void)frame;
	(void)uc;
#endif
}

/* ------------------------------------------------------------------------
 * The involuntary switch
 * ------------------------------------------------------------------------ */

/*
 * The preemption itself (critical_exit_preempt(), ast()'s mi_switch()):
 * td == curthread, which owes one, no spin lock held, interrupts on.  td
 * goes back on its run queue and another thread runs; returns when td
 * runs again, on whichever CPU.  Never inlined: the preempted thread's
 * stack names it.
 */
__attribute__((noinline)) static void
sc_sched_preempt(struct sc_thread *td, bool tick)
{
	struct sc_machine *m = td->td_machine;
	int critnest;

	/*
	 * In a critical section while it takes its lock, as
	 * critical_exit_preempt() in sys/kern/kern_switch.c raises
	 * td_critnest around its thread_lock(): the lock's wait lets
	 * interrupts in (kern_mutex.c), and each of its spinlock_exit()s
	 * would take the owed preemption again, recursing until the stack
	 * overflows (test_stress, 4BSD: half its runs).
	 */
	critnest = atomic_load_explicit(&td->td_critnest,
	    memory_order_relaxed);
	atomic_store_explicit(&td->td_critnest, critnest + 1,
	    memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	sc_thread_lock(td);
	atomic_store_explicit(&td->td_critnest, critnest,
	    memory_order_relaxed);
	atomic_store_explicit(&td->td_owepreempt, 0, memory_order_relaxed);
	if (TD_IS_RUNNING(td) && !atomic_load(&m->m_dying)) {
		SC_CNT_INC(m, preempted);
		SC_TRACE(m, SC_TRACE_PREEMPT, sc_curcpu(), td->td_tid, tick,
		    0);
		sc__mi_switch(td);
	}
	sc_thread_unlock(td);
	sc__switch_done();
}

/*
 * From sc__timerint, which the clock interrupt's end made td call: the
 * preemption that the tick owed.
 */
void
sc__sched_preempt(void)
{
	struct sc_thread *td = sc_curthread();

	sc_sched_preempt(td, true);
	__asm__ volatile("" ::: "memory");	/* keep this frame */
}

/*
 * A safe point of td (curthread, no spin lock held, interrupts on) that
 * found td_owepreempt set: take it unless td may not switch here.
 */
void
sc__sched_preempt_owed(struct sc_thread *td)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	if (atomic_load_explicit(&td->td_critnest, memory_order_relaxed) !=
	    0 || atomic_load_explicit(&td->td_hostlocks,
	    memory_order_relaxed) != 0 || atomic_load_explicit(
	    &pc->pc_spinlock_count, memory_order_relaxed) != 0 || td->td_idle)
		return;
	sc_sched_preempt(td, false);
	__asm__ volatile("" ::: "memory");	/* keep this frame */
}

/*
 * A better thread was made runnable for pc: have pc's running thread
 * switch at its next interrupt's end, or its next safe point.  Called by
 * sched_add() where ULE's sends IPI_PREEMPT to a remote CPU
 * (tdq_notify()) or sets td_owepreempt on its own (sched_setpreempt()),
 * and 4BSD's does the same (kick_other_cpu(), maybe_preempt()): pc
 * is the caller's own CPU (no IPI: the caller takes it when it re-enables
 * interrupts) or another's.  Any context; async-signal-safe.
 */
void
sc__sched_preempt_cpu(struct sc_pcpu *pc)
{
	struct sc_thread *td;

	td = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	if (td == pc->pc_idlethread)
		return;		/* the idle loop looks at its queue itself */
	atomic_store_explicit(&td->td_owepreempt, 1, memory_order_relaxed);
	if (pc != sc__pcpu_handler())
		sc__ipi_cpu(pc, SC_IPI_PREEMPT, td->td_tid);
}

/* ------------------------------------------------------------------------
 * Critical sections
 * ------------------------------------------------------------------------ */

void
sc_critical_enter(void)
{
	struct sc_thread *td = sc_curthread();

	SC_KASSERT(td != NULL, , "sc_critical_enter outside a simulated "
	    "thread");
	atomic_store_explicit(&td->td_critnest, atomic_load_explicit(
	    &td->td_critnest, memory_order_relaxed) + 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

void
sc_critical_exit(void)
{
	struct sc_thread *td = sc_curthread();
	int n;

	SC_KASSERT(td != NULL, , "sc_critical_exit outside a simulated "
	    "thread");
	n = atomic_load_explicit(&td->td_critnest, memory_order_relaxed);
	SC_KASSERT(n > 0, , "sc_critical_exit without sc_critical_enter "
	    "(thread %d)", td->td_tid);
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&td->td_critnest, n - 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	/* critical_exit_preempt(). */
	if (n == 1 && atomic_load_explicit(&td->td_owepreempt,
	    memory_order_relaxed))
		sc__sched_preempt_owed(td);
}
