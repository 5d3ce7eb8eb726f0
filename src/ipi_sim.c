/*
 * The IPI transport: an IPI is a signal to the target CPU's pthread.  The
 * handler's install and removal, each CPU's alternate signal stack and
 * signal mask, the handler and its trapframe, the raw send, deferral while
 * interrupts are off, and (deterministic mode) polling at scheduling
 * points.  What the IPIs mean is mp_x86.c's.
 *
 * Kernel counterpart: none as a file; this is the hardware's part, the
 * local APIC and the interrupt entry (sys/amd64/amd64/exception.S, the
 * IST stack of NMIs), with sys/amd64/amd64/machdep.c's spinlock_enter()/
 * spinlock_exit() for the interrupt flag.
 *
 * The handler runs on the CPU's alternate signal stack, never on a thread's
 * kernel stack: with interrupts "disabled" by a soft mask, a signal that
 * arrives in the middle of a switch would otherwise push its frame onto a
 * stack that another CPU may already run, or that is being swapped out
 * (x86-64 kernels take NMIs on an IST stack for the same reason).  The
 * handler takes no lock, allocates nothing, and saves errno.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "frame_bounds.h"
#include "sc_internal.h"
#include "sc_sanitizer.h"

#define SC_SIGSTACK_LEN	(64 * 1024 * SC_SAN_STACK_SCALE)

/* Machines per signal number: the handler is installed once per signal. */
static pthread_mutex_t sc_ipi_mtx = PTHREAD_MUTEX_INITIALIZER;
static int sc_ipi_users[_NSIG];
static struct sigaction sc_ipi_oldsa[_NSIG];

#if defined(SC_SANITIZER_THREAD)
/* A frame record at fp on td's stack whose return address is text. */
static bool
sc_tsan_frame_ok(const struct sc_thread *td, uintptr_t fp,
    const struct sc_range *text, size_t ntext)
{
	uintptr_t up;

	if (!sc__kstack_contains(fp, td->td_kstack) ||
	    !sc_pc_in_text(((const uintptr_t *)fp)[1], text, ntext))
		return (false);
	up = ((const uintptr_t *)fp)[0];
	return (up == 0 || (up > fp && sc__kstack_contains(up, td->td_kstack)));
}

/*
 * TSan, outside a poll point: the interrupted code's frame, from the
 * arrival's %rsp and %rbp.  Where the signal arrived in the program's own
 * code, %rbp is its frame.  Where it arrived inside TSan's runtime (an
 * atomic_load() of a spinning loop calls into it), %rbp holds anything:
 * the runtime is built without frame pointers, and its frames hold no
 * chain from the handler's frame either.  The program's frame pointer is
 * then a callee-saved register that the runtime pushed just above %rsp:
 * the first word of the next 1 KiB that is a frame record on the thread's
 * stack, above its own slot, returning into text.  A heuristic, TSan's
 * only: it may pick a stale record, never read off the stack.  Else the
 * handler's own frame, a stack of one frame inside TSan, which is what
 * every such capture gave before (test_running_no_calls).
 */
static uintptr_t
sc_tsan_arrival_fp(struct sc_pcpu *pc, const ucontext_t *uc, uintptr_t here)
{
	struct sc_thread *td = atomic_load_explicit(&pc->pc_curthread,
	    memory_order_relaxed);
	uintptr_t rsp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t rbp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	const struct sc_range *text;
	uintptr_t slot, w;
	size_t ntext;

	if (td == NULL || !sc__kstack_contains(rsp, td->td_kstack))
		return (here);
	sc_text_ranges(&text, &ntext);	/* ready: sc__ipi_init() made it */
	if (rbp >= rsp && sc_tsan_frame_ok(td, rbp, text, ntext))
		return (rbp);
	for (slot = rsp & ~(uintptr_t)7; slot < rsp + 1024 &&
	    sc__kstack_contains(slot, td->td_kstack); slot += 8) {
		w = *(const uintptr_t *)slot;
		if (w > slot && sc_tsan_frame_ok(td, w, text, ntext))
			return (w);
	}
	return (here);
}
#endif

/* The interrupted context, as the handler's trapframe. */
static void
sc_ipi_frame(struct sc_pcpu *pc, const ucontext_t *uc,
    struct sc_intr_frame *frame)
{
#if defined(SC_SANITIZER_THREAD)
	/*
	 * TSan runs the handler late, inside the interceptor or the atomic
	 * operation where it noticed the signal, with the context of the
	 * arrival: that %rbp may belong to code that has returned since, and
	 * inside TSan's runtime (built without frame pointers) it holds
	 * anything.  Walk from the poll point that let the handler run
	 * (sc_sanitizer.h); elsewhere (a signal taken at an atomic_load() of
	 * a spinning loop) from the interrupted code's frame, found from the
	 * arrival's registers (sc_tsan_arrival_fp()).
	 */
	frame->if_rbp = atomic_load(&pc->pc_tsan_poll_rbp);
	if (frame->if_rbp == 0)
		frame->if_rbp = sc_tsan_arrival_fp(pc, uc,
		    (uintptr_t)__builtin_frame_address(0));
	frame->if_rsp = frame->if_rbp;
#else
	(void)pc;
	frame->if_rsp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	frame->if_rbp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#endif
	frame->if_rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

/*
 * TSan keeps one pending signal per number, so an IPI and a tick that wait
 * together arrive as one signal, whose siginfo may be the tick's: there a
 * tick's signal carries the IPIs that it finds pending, hook and count
 * included.  Elsewhere each signal is queued and comes: a tick's signal
 * takes the clock's vector alone (the local APIC timer has a vector of
 * its own), and the IPIs' own signals take theirs.
 */
#if defined(SC_SANITIZER_THREAD)
#define SC_TICK_CARRIES_IPIS	true
#else
#define SC_TICK_CARRIES_IPIS	false
#endif

/*
 * An interrupt on pc, from the signal handler or (deterministic mode) a
 * scheduling point: the NMI first, then the rest unless interrupts are
 * disabled.  uc: the signal's context, or NULL.  tick: the signal is the
 * CPU's clock's (SI_TIMER); ipi: it takes the IPIs (any signal but a tick
 * that carries none).
 */
static void
sc_ipi_take(struct sc_pcpu *pc, struct sc_intr_frame *frame, ucontext_t *uc,
    bool tick, bool ipi)
{
	int old;

	/*
	 * SC_PROTO_NMI: an NMI is taken whatever the interrupt flag says;
	 * its handler answers depth 0 when interrupts were disabled.  Not by
	 * a tick that carries no IPI: its signal would leave the NMI's own
	 * to come late, into the next request.
	 */
	if (ipi && (atomic_load_explicit(&pc->pc_ipi_pending,
	    memory_order_relaxed) &
	    SC_IPI_NMI) != 0 && (atomic_fetch_and(&pc->pc_ipi_pending,
	    ~(uint32_t)SC_IPI_NMI) & SC_IPI_NMI) != 0) {
		sc__ipi_nmi_handler(pc, frame);
		if (atomic_load(&pc->pc_ipi_pending) == 0)
			return;		/* nothing else came with it */
	}
	if (atomic_load_explicit(&pc->pc_spinlock_count,
	    memory_order_relaxed) != 0) {
		/*
		 * Interrupts disabled: spinlock_exit() will run it.  Only
		 * IPIs count, once each: a signal that brings no IPI (a
		 * tick, or one whose IPIs an earlier signal took) defers
		 * none; IPIs that a tick's signal carried are counted
		 * there, and their own signal, if it still comes, is not.
		 */
		if (!ipi || (atomic_load_explicit(&pc->pc_ipi_pending,
		    memory_order_relaxed) & ~(uint32_t)SC_IPI_CLOCK) == 0) {
			atomic_fetch_or_explicit(&pc->pc_intr_deferred,
			    SC_DEFER_CLOCK, memory_order_relaxed);
			return;
		}
		old = atomic_fetch_or_explicit(&pc->pc_intr_deferred,
		    tick ? SC_DEFER_IPI | SC_DEFER_CARRIED : SC_DEFER_IPI,
		    memory_order_relaxed);
		if (tick && (old & SC_DEFER_IPI) != 0)
			return;
		if (!tick && (old & SC_DEFER_CARRIED) != 0) {
			atomic_fetch_and_explicit(&pc->pc_intr_deferred,
			    ~SC_DEFER_CARRIED, memory_order_relaxed);
			return;
		}
		SC_CNT_INC(pc->pc_machine, ipis_deferred);
		SC_TRACE(pc->pc_machine, SC_TRACE_IPI_DEFERRED, pc->pc_cpuid,
		    atomic_load_explicit(&pc->pc_curthread,
		    memory_order_relaxed)->td_tid, 0, 0);
		return;
	}
	if (ipi)
		sc__ipi_bitmap_handler(pc, frame, uc);
	else
		sc__clock_intr(pc, frame, uc);
}

static void
sc_ipi_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	struct sc_pcpu *pc = sc__pcpu_handler();
	struct sc_intr_frame frame;
	ucontext_t *uc = ucv;
	bool tick, ipi;

	(void)sig;
	if (pc != NULL && sc__ds_signal_is_takeback(pc->pc_machine)) {
		/* Deterministic mode: no IPI is a signal (sim_det.c). */
		sc_ipi_frame(pc, uc, &frame);
		sc__ds_takeback(pc, &frame, uc);
	} else if (pc != NULL) {	/* else not a CPU pthread: ignore */
		/* The CPU's clock (kern_clock.c): a timer's signal. */
		tick = si != NULL && si->si_code == SI_TIMER;
		if (tick) {
			/* The periods that expired while the signal was
			 * pending, and a tick whose vector still waits
			 * (deferred): the next hardclock() counts them. */
			pc->pc_ticks_missed += si->si_overrun;
			if ((atomic_fetch_or_explicit(&pc->pc_ipi_pending,
			    SC_IPI_CLOCK, memory_order_relaxed) &
			    SC_IPI_CLOCK) != 0)
				pc->pc_ticks_missed++;
		}
		ipi = !tick || (SC_TICK_CARRIES_IPIS && (atomic_load_explicit(
		    &pc->pc_ipi_pending, memory_order_relaxed) &
		    ~(uint32_t)SC_IPI_CLOCK) != 0);
		/* Odd while inside: a timed-out requester reads the
		 * pthread's mask, which holds the signal here. */
		atomic_fetch_add(&pc->pc_handler_gen, 1);
		if (ipi)
			sc__hook(pc->pc_machine, SC_HOOK_INTR_ENTER,
			    atomic_load_explicit(&pc->pc_curthread,
			    memory_order_relaxed));
		sc_ipi_frame(pc, uc, &frame);
		sc_ipi_take(pc, &frame, uc, tick, ipi);
		atomic_fetch_add(&pc->pc_handler_gen, 1);
	}
	errno = saved_errno;
}

/*
 * Deterministic mode: the IPIs pending on pc, taken at a scheduling point
 * of its CPU pthread, as the signal handler takes them; the "interrupted"
 * frame is the point's, at (or, at a take-back, the interrupted code's).
 * An IPI already deferred is deferred once: the points that follow, until
 * spinlock_exit() runs it, are not new arrivals (a signal arrives once).
 */
void
sc__ipi_poll(struct sc_pcpu *pc, const struct sc_intr_frame *at)
{
	struct sc_intr_frame frame;

	if (atomic_load_explicit(&pc->pc_intr_deferred,
	    memory_order_relaxed) != 0 && (atomic_load_explicit(
	    &pc->pc_ipi_pending, memory_order_relaxed) & SC_IPI_NMI) == 0)
		return;
	frame.if_rip = at->if_rip;
	frame.if_rbp = at->if_rbp;
	frame.if_rsp = at->if_rsp;
	sc_ipi_take(pc, &frame, NULL, false, true);
}

/*
 * From spinlock_exit() when interrupts come back on with an IPI pending:
 * the "interrupted" frame is spinlock_exit()'s own (rbp, rip).  Interrupts
 * stay off while it runs, so a new signal defers rather than nests.
 */
void
sc__ipi_deferred(struct sc_pcpu *pc, uintptr_t rbp, uintptr_t rip)
{
	struct sc_intr_frame frame;

	while (atomic_exchange_explicit(&pc->pc_intr_deferred, 0,
	    memory_order_relaxed)) {
		atomic_store_explicit(&pc->pc_spinlock_count, 1,
		    memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		frame.if_rip = rip;
		frame.if_rbp = rbp;
		frame.if_rsp = rbp;
		sc__ipi_bitmap_handler(pc, &frame, NULL);
		atomic_signal_fence(memory_order_seq_cst);
		atomic_store_explicit(&pc->pc_spinlock_count, 0,
		    memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
	}
}

/*
 * The raw send of ipi_cpu(), async-signal-safe: tgkill() to the CPU
 * pthread's Linux tid, one system call, where glibc's pthread_kill()
 * makes four (it blocks every signal around getpid() and tgkill(),
 * against a thread that exits meanwhile).  A CPU pthread exits only in
 * sc_machine_destroy(), which no other call overlaps, except for
 * IPI_STOP: that one keeps pthread_kill().  No error to act on: a failed
 * send is a lost IPI, which the requester's bound and the destroyer's
 * resend both cover.
 */
void
sc__ipi_send(struct sc_pcpu *pc, uint32_t vectors)
{
	struct sc_machine *m = pc->pc_machine;
	pid_t ktid;

	ktid = atomic_load_explicit(&pc->pc_ktid, memory_order_relaxed);
	if (sc__ds_ipi_at_point(m, vectors))
		return;
	if (ktid != 0 && (vectors & SC_IPI_STOP) == 0)
		(void)syscall(SYS_tgkill, m->m_pid, ktid, m->m_cfg.ipi_signo);
	else
		(void)pthread_kill(pc->pc_pthread, m->m_cfg.ipi_signo);
}

/*
 * IPI_STOP at machine destroy (from ipi_bitmap_handler()), for a thread
 * that never calls into the scheduler: resume it in sc__cpu_stop(), which
 * leaves the machine.  Only where the thread holds no lock of the host:
 * not in a host-locked section of the library (td_hostlocks, e.g. a
 * pthread mutex or glibc's loader lock is held; the thread stops itself
 * when it leaves the section), and not in libc, the loader or a sanitizer
 * runtime, which may hold locks of their own (the destroyer sends again).
 * sc__cpu_stop() runs on the top of this CPU's alternate signal stack,
 * which is free once this handler has returned: the interrupted stack may
 * have no room left below %rsp, and the abandoned frames must not be
 * written over.  Under TSan the handler runs late, with a context that is
 * no longer the thread's: never redirect there.  uc: the signal's
 * context, or NULL (no signal: nothing to redirect).
 */
void
sc__ipi_stop_redirect(struct sc_pcpu *pc, struct sc_thread *td,
    const struct sc_intr_frame *frame, ucontext_t *uc)
{
#if !defined(SC_SANITIZER_THREAD)
	struct sc_machine *m = pc->pc_machine;
	uintptr_t sp;

	if (uc != NULL && atomic_load(&m->m_dying) &&
	    atomic_load_explicit(&td->td_hostlocks, memory_order_relaxed) ==
	    0 && !sc_pc_in_text(frame->if_rip, m->m_nostop, m->m_nnostop)) {
		sp = (((uintptr_t)pc->pc_sigstack + pc->pc_sigstack_len - 64) &
		    ~(uintptr_t)15) - 8;
		uc->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
		uc->uc_mcontext.gregs[REG_RBP] = 0;
		uc->uc_mcontext.gregs[REG_RDI] = (greg_t)(uintptr_t)pc;
		uc->uc_mcontext.gregs[REG_RIP] =
		    (greg_t)(uintptr_t)sc__cpu_stop;
	}
#else
	(void)pc;
	(void)td;
	(void)frame;
	(void)uc;
#endif
}

/* Objects in which IPI_STOP must not stop a thread. */
static const char *const sc_nostop_names[] = {
	"libc.so", "ld-linux", "libpthread", "libdl", "librt", "libm.so",
	"libasan", "libtsan", "libubsan", "liblsan", "libgcc_s", "libunwind",
	"libstdc++", "libcmocka", "linux-vdso",
};

/* Is base one of those objects?  The main program ("") never is. */
static bool
sc_nostop_object(const char *base)
{
	size_t i;

	for (i = 0; i < sizeof(sc_nostop_names) / sizeof(sc_nostop_names[0]);
	    i++)
		if (strncmp(base, sc_nostop_names[i],
		    strlen(sc_nostop_names[i])) == 0)
			return (true);
	return (false);
}

/*
 * Signals that can never carry IPIs: SIGKILL and SIGSTOP cannot be caught,
 * and the synchronous fault signals are raised by the faulting instruction
 * itself: a handler that returns from a real SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGTRAP or SIGSYS re-executes it and faults again for ever.
 */
bool
sc__ipi_signo_ok(int signo)
{
	if (signo <= 0 || signo >= _NSIG)
		return (false);
	switch (signo) {
	case SIGKILL:
	case SIGSTOP:
	case SIGSEGV:
	case SIGBUS:
	case SIGFPE:
	case SIGILL:
	case SIGTRAP:
	case SIGSYS:
		return (false);
	default:
		return (true);
	}
}

bool
sc__ipi_handler_ours(int signo)
{
	struct sigaction cur;

	return (sigaction(signo, NULL, &cur) == 0 &&
	    (cur.sa_flags & SA_SIGINFO) != 0 &&
	    cur.sa_sigaction == sc_ipi_handler);
}

int
sc__ipi_init(struct sc_machine *m)
{
	struct sigaction sa, old;
#if defined(SC_SANITIZER_THREAD)
	const struct sc_range *text;
	size_t ntext;
#endif
	int error, signo = m->m_cfg.ipi_signo;

	error = sc__exec_ranges(sc_nostop_object, &m->m_nostop, &m->m_nnostop);
	if (error != 0)
		return (error);
#if defined(SC_SANITIZER_THREAD)
	/* The text ranges, computed here before any signal: TSan's late
	 * handler reads them for every signal (sc_tsan_arrival_fp()). */
	sc_text_ranges(&text, &ntext);
#endif

	pthread_mutex_lock(&sc_ipi_mtx);
	if (sc_ipi_users[signo] == 0) {
		if (sigaction(signo, NULL, &old) != 0) {
			pthread_mutex_unlock(&sc_ipi_mtx);
			return (EINVAL);
		}
		/* Refuse to replace a handler that someone else installed. */
		if ((old.sa_flags & SA_SIGINFO) != 0 ||
		    (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
			pthread_mutex_unlock(&sc_ipi_mtx);
			return (EBUSY);
		}
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = sc_ipi_handler;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		sigfillset(&sa.sa_mask);
		if (sigaction(signo, &sa, &sc_ipi_oldsa[signo]) != 0) {
			pthread_mutex_unlock(&sc_ipi_mtx);
			return (EINVAL);
		}
	}
	sc_ipi_users[signo]++;
	pthread_mutex_unlock(&sc_ipi_mtx);
	return (0);
}

void
sc__ipi_fini(struct sc_machine *m)
{
	int signo = m->m_cfg.ipi_signo;

	/*
	 * The last machine gives the signal back as it found it, unless the
	 * program has installed a handler of its own since: that one stays.
	 */
	pthread_mutex_lock(&sc_ipi_mtx);
	if (--sc_ipi_users[signo] == 0 && sc__ipi_handler_ours(signo))
		(void)sigaction(signo, &sc_ipi_oldsa[signo], NULL); /* valid */
	pthread_mutex_unlock(&sc_ipi_mtx);
}

/*
 * On the CPU's pthread: its alternate signal stack, signal mask and clock.
 * Returns 0, ENOMEM, or the error of sigaltstack() or timer_create().
 */
int
sc__ipi_cpu_init(struct sc_pcpu *pc)
{
	stack_t ss;
	sigset_t set;
	void *p;
	int error;

	if ((p = sc__map_get(SC_SIGSTACK_LEN, false)) == NULL)
		return (ENOMEM);
	memset(&ss, 0, sizeof(ss));
	ss.ss_sp = p;
	ss.ss_size = SC_SIGSTACK_LEN;
	if (sigaltstack(&ss, NULL) != 0) {
		error = errno;
		sc__map_put(p, SC_SIGSTACK_LEN, false);
		return (error);
	}
	pc->pc_sigstack = p;
	pc->pc_sigstack_len = SC_SIGSTACK_LEN;
	if ((error = sc__clock_cpu_init(pc)) != 0) {
		sc__ipi_cpu_fini(pc);
		return (error);
	}
	sigemptyset(&set);
	sigaddset(&set, pc->pc_machine->m_cfg.ipi_signo);
	/* Cannot fail: the set is valid and SIG_UNBLOCK a known "how". */
	(void)pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	return (0);
}

void
sc__ipi_cpu_fini(struct sc_pcpu *pc)
{
	stack_t ss;
	sigset_t set;

	if (pc->pc_sigstack == NULL)
		return;
	/* No IPI nor tick may run once the pthread has left the machine. */
	sc__clock_cpu_fini(pc);
	sigemptyset(&set);
	sigaddset(&set, pc->pc_machine->m_cfg.ipi_signo);
	(void)pthread_sigmask(SIG_BLOCK, &set, NULL);
	memset(&ss, 0, sizeof(ss));
	ss.ss_flags = SS_DISABLE;
	(void)sigaltstack(&ss, NULL);	/* not on it: cannot fail */
	/*
	 * sc__cpu_stop() ran on this stack and never returned: sc__map_put()
	 * forgets its frames' ASan poisoning, or the next machine's stack at
	 * this address would inherit it.
	 */
	sc__map_put(pc->pc_sigstack, pc->pc_sigstack_len, false);
	pc->pc_sigstack = NULL;
}
