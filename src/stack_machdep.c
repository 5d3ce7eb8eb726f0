/*
 * stack_save_td(): capture the kernel stack of a thread that may be running.
 *
 * Kernel counterpart: sys/x86/x86/stack_machdep.c after "Reimplement stack
 * capture of running threads" (stack_save_td(), stack_capture_intr(), the
 * IPI_TRACE handshake through stack_intr_td), and sysctl_kern_proc_kstack()
 * in sys/kern/kern_proc.c.  docs/protocol.md ("The steps") is the protocol
 * step by step.
 *
 * Beyond the kernel (docs/design.md, "Beyond the kernel"): the requester's
 * wait is bounded and may sleep on a futex; a request carries a tag that
 * the handler claims by compare-and-swap, so a handler that runs after its
 * requester gave up does nothing; the handler walks into a library buffer
 * that the requester copies out.  A wait that timed out is explained in
 * stack_diagnose.c; the race hooks are in stack_hooks.c; FreeBSD 12's
 * protocol (SC_PROTO_NMI) is in stack_machdep_nmi.c.
 */
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include "sc_internal.h"
#include "sc_futex.h"
#include "sc_sanitizer.h"

/*
 * Request tags: seq << 2 | state, where state is OPEN (the requester
 * waits) or CLAIMED (a handler walks); seq counts the slot's requests.
 * 0 means no request.
 */
#define SC_REQ_OPEN	0x1
#define SC_REQ_CLAIMED	0x2
#define SC_REQ_STATE	0x3

/*
 * stack_capture_intr(), in the IPI_TRACE handler of pc: td is the thread
 * the IPI interrupted (curthread).  Claim the open request of this CPU's
 * slot, walk td's kernel stack from the interrupted %rbp into the slot's
 * buffer, then publish td (release) and wake the requester.  A handler
 * touches its own CPU's slot only: handlers on different CPUs never meet.
 */
void
sc__stack_capture_intr(struct sc_pcpu *pc, struct sc_thread *td,
    const struct sc_intr_frame *frame)
{
	struct sc_machine *m = pc->pc_machine;
	struct sc_stack_intr *si = &pc->pc_intr;
	const struct sc_range *text;
	struct sc_thread *answer;
	uint64_t tag;
	size_t ntext;

	tag = atomic_load_explicit(&si->si_req, memory_order_acquire);
	if ((tag & SC_REQ_STATE) != SC_REQ_OPEN ||
	    !atomic_compare_exchange_strong(&si->si_req, &tag,
	    (tag & ~(uint64_t)SC_REQ_STATE) | SC_REQ_CLAIMED)) {
		/* A late IPI: its requester has given up. */
		SC_CNT_INC(m, trace_stale);
		SC_TRACE(m, SC_TRACE_STALE_IPI, pc->pc_cpuid, td->td_tid, 0, 0);
		return;
	}
	sc__hook(m, SC_HOOK_INTR_BEFORE_WALK, td);
	/* The text ranges were computed by the requester: no allocation. */
	sc_text_ranges(&text, &ntext);
	sc_stack_walk(&si->si_buf, frame->if_rbp, td->td_kstack, text, ntext);
	si->si_kstack = frame->if_kstack;
	SC_CNT_INC(m, trace_answered);
	SC_TRACE(m, SC_TRACE_WALK_DONE, pc->pc_cpuid, td->td_tid,
	    si->si_buf.depth, frame->if_kstack);
	/*
	 * The answer is td, curthread, whose stack was just walked: the
	 * requester's identity check compares it with the thread it asked
	 * for, and that check is all that tells it whether its td_oncpu read
	 * was still true when the IPI landed.  SC_MISTAKE_ANSWER_TARGET
	 * answers with the thread the request named instead (si_want,
	 * published with the tag): a target that switched off this CPU
	 * before the IPI gets td's stack, the idle thread's say, as its own.
	 */
	answer = td;
	if ((m->m_cfg.mistakes & SC_MISTAKE_ANSWER_TARGET) != 0 &&
	    atomic_load_explicit(&si->si_want, memory_order_relaxed) != NULL)
		answer = atomic_load_explicit(&si->si_want,
		    memory_order_relaxed);
	SC_TRACE(m, SC_TRACE_ANSWER_PUBLISHED, pc->pc_cpuid, answer->td_tid,
	    0, 0);
	atomic_store_explicit(&si->si_td, answer, memory_order_release);
	atomic_fetch_add(&si->si_futex, 1);
	if (atomic_load(&si->si_waiting))
		sc__futex_wake(&si->si_futex, 1);
}

/*
 * SC_WAIT_SPIN_SLEEP spins only while an answer may come: up to twice the
 * recent round trip, at most wait_spin_ns, and not at all when round trips
 * take longer than that (a virtual machine, or requester and target on one
 * core), where spinning only delays the target.  si_rtt is a moving
 * average (weight 1/8) of the slot's recent round trips, 0 before the
 * first.  Slot mutex held.
 */
static uint64_t
sc_stack_intr_spin_ns(const struct sc_machine *m,
    const struct sc_stack_intr *si)
{
	uint64_t max = (uint64_t)m->m_cfg.wait_spin_ns;

	if (si->si_rtt == 0)
		return (max);
	if (si->si_rtt > max)
		return (0);
	return (2 * si->si_rtt < max ? 2 * si->si_rtt : max);
}

static void
sc_stack_intr_rtt(struct sc_stack_intr *si, uint64_t rtt)
{
	si->si_rtt = si->si_rtt == 0 ? rtt : (7 * si->si_rtt + rtt) / 8;
}

/*
 * Lock mx for a request, at most until deadline (UINT64_MAX: none):
 * 0 or ETIMEDOUT.  A lock found held counts in capture_lock_waits (read
 * racily: a counter, not a decision).
 */
static int
sc_stack_intr_lock(struct sc_machine *m, struct sc_mtx *mx,
    uint64_t deadline)
{
	if (atomic_load_explicit(&mx->mx_owner, memory_order_relaxed) != 0)
		SC_CNT_INC(m, capture_lock_waits);
	if (deadline != UINT64_MAX)
		return (sc__mtx_lock_until(mx, deadline));
	sc__mtx_lock(mx);
	return (0);
}

int
sc__stack_intr_open(struct sc_pcpu *pc, struct sc_thread *td,
    uint64_t deadline, uint64_t *tagp)
{
	struct sc_machine *m = pc->pc_machine;
	struct sc_stack_intr *si = &pc->pc_intr;
	uint64_t tag;

	if (sc_stack_intr_lock(m, &si->si_mtx, deadline) != 0)
		return (ETIMEDOUT);
	tag = (++si->si_seq << 2) | SC_REQ_OPEN;
	/*
	 * kib's catch: an answer left from before would be taken as this
	 * request's (SC_MISTAKE_STALE_ANSWER leaves it).  Cleared here,
	 * before the IPI exists, no handler's answer can be lost to it;
	 * SC_MISTAKE_CLEAR_AFTER_IPI clears it once the IPI is sent instead
	 * (sc_stack_save_td_running()).
	 */
	if ((m->m_cfg.mistakes & (SC_MISTAKE_STALE_ANSWER |
	    SC_MISTAKE_CLEAR_AFTER_IPI)) == 0)
		atomic_store(&si->si_td, NULL);
	si->si_opened = atomic_load(&si->si_futex);
	/* The final protocol's request names no thread: the handler answers
	 * with the one it interrupted. */
	atomic_store_explicit(&si->si_want, (m->m_cfg.mistakes &
	    SC_MISTAKE_ANSWER_TARGET) != 0 ? td : NULL, memory_order_relaxed);
	atomic_store_explicit(&si->si_req, tag, memory_order_release);
	*tagp = tag;
	return (0);
}

struct sc_thread *
sc__stack_intr_wait(struct sc_pcpu *pc, uint64_t tag, uint64_t deadline)
{
	const struct sc_machine_config *cfg = &pc->pc_machine->m_cfg;
	struct sc_stack_intr *si = &pc->pc_intr;
	struct sc_thread *answer;
	uint64_t start, now, spin_until, claimed;
	uint32_t seq;

	SC_MTX_ASSERT_OWNED(&si->si_mtx, NULL);
	start = sc__ds_clock();
	spin_until = cfg->wait_strategy == SC_WAIT_SPIN ? UINT64_MAX :
	    cfg->wait_strategy == SC_WAIT_SLEEP ? start :
	    start + sc_stack_intr_spin_ns(pc->pc_machine, si);
	for (;;) {
		seq = atomic_load(&si->si_futex);
		answer = atomic_load_explicit(&si->si_td, memory_order_acquire);
		if (answer != NULL) {
			sc_stack_intr_rtt(si, sc__ds_clock() - start);
			return (answer);
		}
		now = sc__ds_clock();
		if (now >= deadline)
			break;
		if (sc__wait_turn(now < spin_until, UINT64_MAX) !=
		    SC_TURN_BLOCK)
			continue;
		atomic_store(&si->si_waiting, 1);
		if (atomic_load_explicit(&si->si_td,
		    memory_order_acquire) == NULL)
			sc__futex_wait(&si->si_futex, seq,
			    (long)(deadline == UINT64_MAX ? 0 :
			    deadline - now));
		atomic_store(&si->si_waiting, 0);
	}
	/*
	 * Give up, unless a handler already claimed the request: then its
	 * walk is under way into the slot's buffer and ends soon (a handler
	 * never blocks); wait for it, so that no walk outlives its request.
	 */
	claimed = (tag & ~(uint64_t)SC_REQ_STATE) | SC_REQ_CLAIMED;
	if (atomic_compare_exchange_strong(&si->si_req, &tag, 0))
		return (NULL);
	/*
	 * The walk is bounded (SC_STACK_MAX frames, no lock): this loop
	 * ends with it.  It also ends if the request is no longer the one
	 * that was claimed, which only a broken invariant could do: never
	 * spin on a word that nobody will write.  Under
	 * SC_MISTAKE_CLEAR_AFTER_IPI the answer may have been written and
	 * wiped: then the handler's futex bump, its last store, is all that
	 * is left of it, and the wait ends with no answer.
	 */
	while ((answer = atomic_load_explicit(&si->si_td,
	    memory_order_acquire)) == NULL &&
	    atomic_load(&si->si_req) == claimed &&
	    ((cfg->mistakes & SC_MISTAKE_CLEAR_AFTER_IPI) == 0 ||
	    atomic_load(&si->si_futex) == si->si_opened)) {
		sc__cpu_spinwait();
	}
	return (answer);
}

bool
sc__stack_intr_close(struct sc_pcpu *pc, struct sc_thread *answer,
    struct sc_thread *td, struct sc_stack *st)
{
	struct sc_stack_intr *si = &pc->pc_intr;
	bool kstack = si->si_kstack;

	SC_MTX_ASSERT_OWNED(&si->si_mtx, false);
	if (answer == td)
		sc_stack_copy(&si->si_buf, st);
	/*
	 * SC_MISTAKE_CLEAR_AFTER_IPI's wait reads si_futex against
	 * si_opened: the handler that answered bumps it right after its
	 * answer, and the next request must not count that bump as its own.
	 * A handler never blocks: the bump comes at once.
	 */
	if ((pc->pc_machine->m_cfg.mistakes & SC_MISTAKE_CLEAR_AFTER_IPI) !=
	    0 && answer != NULL) {
		while (atomic_load(&si->si_futex) == si->si_opened)
			sc__cpu_spinwait();
	}
	atomic_store(&si->si_req, 0);
	if ((pc->pc_machine->m_cfg.mistakes & SC_MISTAKE_STALE_ANSWER) == 0)
		atomic_store(&si->si_td, NULL);
	sc__mtx_unlock(&si->si_mtx);
	return (kstack);
}

/*
 * Does the caller hold a capture lock of m (a slot's, or intr_lock)?  Only
 * a hook inside a capture can; capturing again from there would wait for
 * itself, or take over its own request.
 */
bool
sc__stack_intr_held(struct sc_machine *m)
{
	int i;

	if (sc__mtx_owned(&m->m_intr_lock))
		return (true);
	for (i = 0; i < m->m_ncpu; i++)
		if (sc__mtx_owned(&m->m_pcpu[i].pc_intr.si_mtx))
			return (true);
	return (false);
}

/*
 * Step 4 drops td's thread lock before the IPI: the target may need that
 * lock to run on (to switch, say) while its CPU has interrupts disabled,
 * and then could never take the IPI.  SC_MISTAKE_HOLD_THREAD_LOCK
 * (hold_lock_across_ipi) keeps it, to show that deadlock (the bounded wait
 * ends it).  quiet: a spin on NOCPU after the first of a streak, which
 * the trace does not record step by step (under a slow switch, ASan's
 * say, a streak runs to thousands and would push the capture out of the
 * ring); the streak's end records how long it was.
 */
static void
sc_stack_save_unlock(struct sc_machine *m, struct sc_thread *td, int tid,
    bool quiet)
{
	if ((m->m_cfg.mistakes & SC_MISTAKE_HOLD_THREAD_LOCK) != 0)
		return;
	if (!quiet)
		SC_TRACE(m, SC_TRACE_LOCK_DROPPED, sc_curcpu(), tid, 0, 0);
	sc_thread_unlock(td);
}

static void
sc_stack_save_relock(struct sc_machine *m, struct sc_thread *td, int tid,
    bool quiet)
{
	if ((m->m_cfg.mistakes & SC_MISTAKE_HOLD_THREAD_LOCK) != 0)
		return;
	sc_thread_lock(td);
	if (!quiet)
		SC_TRACE(m, SC_TRACE_LOCK_TAKEN, sc_curcpu(), tid, 0, 0);
}

/*
 * The bound of the call, started the first time the target is seen
 * running (0: not yet), so that a capture that walks a pcb reads no clock;
 * a listing call passes its own (sc__stack_save_td_until()).  Returns
 * false once it has expired.
 */
static bool
sc_stack_save_in_time(const struct sc_machine *m, uint64_t *deadline)
{
	if (*deadline == UINT64_MAX)
		return (true);
	if (*deadline == 0) {
		*deadline = sc__capture_deadline(m);
		return (true);
	}
	return (sc__ds_clock() < *deadline);
}

/*
 * td is RUNNING with td_oncpu NOCPU: its CPU is switching it on or off.
 * The kernel's stack_save_td() takes the thread lock again after one
 * cpu_spinwait(); so did this loop, and then it held td's lock nearly all
 * the time.  Under ULE that lock is the run-queue lock of td's new CPU,
 * which td itself must take before it sets td_oncpu (sched_fork_exit()):
 * when Linux ran that CPU's pthread only now and then (a loaded host), it
 * found the lock held at each turn and the capture spun to its bound (1 s
 * with eight busy loops on two cores, bench/load.sh).  So wait here, with
 * the lock dropped, until td_oncpu or td's state changes: spin briefly,
 * then yield the core, within the call's bound.  With the lock kept
 * (SC_MISTAKE_HOLD_THREAD_LOCK) only the bound ends the wait.
 */
static void
sc_stack_save_nocpu_wait(const struct sc_machine *m, struct sc_thread *td,
    uint64_t *deadline)
{
	int n;

	for (n = 1; atomic_load(&td->td_oncpu) == SC_NOCPU &&
	    TD_IS_RUNNING(td); n++) {
		if (n % 64 == 0 && !sc_stack_save_in_time(m, deadline))
			return;
		if (sc__wait_turn(n < 64, UINT64_MAX) == SC_TURN_BLOCK)
			sched_yield();
	}
}

/*
 * The pcb walk of step 3, td's thread lock held: td cannot start running
 * while we hold it.  tid: the tid asked for, for the trace.
 */
void
sc__stack_walk_pcb(struct sc_stack *st, struct sc_thread *td, int tid)
{
	const struct sc_range *text;
	size_t ntext;

	SC_THREAD_LOCK_ASSERT(td, );
	sc_text_ranges(&text, &ntext);
	sc_stack_walk(st, td->td_pcb.pcb_rbp, td->td_kstack, text, ntext);
	SC_TRACE(td->td_machine, SC_TRACE_PCB_WALK, sc_curcpu(), tid,
	    st->depth, 0);
}

/* The answer was td's own: 0, or EBUSY with no kernel frame chain. */
int
sc__stack_save_answered(struct sc_machine *m, const struct sc_stack *st,
    bool kstack)
{
	SC_CNT_INC(m, captures_running);
	if (st->depth > 0)
		return (0);
	SC_CNT_INC(m, ebusy);
	if (kstack)
		SC_CNT_INC(m, ebusy_nochain);
	else
		SC_CNT_INC(m, ebusy_user);
	return (EBUSY);
}

/* Another thread answered (td switched off, or its CPU went idle): the
 * caller looks again.  Shared with sc_machine_snapshot(). */
void
sc__stack_save_retried(struct sc_machine *m, int tid,
    const struct sc_thread *answer)
{
	if (answer->td_idle)
		SC_CNT_INC(m, retry_idle);
	else
		SC_CNT_INC(m, retry_other);
	SC_TRACE(m, SC_TRACE_RETRY, sc_curcpu(), tid, answer->td_tid,
	    answer->td_idle ? 1 : 2);
}

/* A capture of tid ends with error (a timeout empties st).  Shared with
 * sc_machine_snapshot(). */
void
sc__stack_save_done(struct sc_machine *m, int tid, struct sc_stack *st,
    int error)
{
	if (error == ETIMEDOUT) {
		SC_CNT_INC(m, timeouts);
		SC_TRACE(m, SC_TRACE_TIMEOUT, sc_curcpu(), tid,
		    m->m_cfg.capture_timeout_ns, 0);
		sc_stack_zero(st);
	}
	SC_CNT_INC(m, captures);
	SC_TRACE(m, SC_TRACE_CAPTURE_DONE, sc_curcpu(), tid, error,
	    st->depth);
}

/* What one sc_stack_save_td() call carries from try to try (its own). */
struct sc_save {
	struct sc_machine *sv_m;
	struct sc_stack	*sv_st;
	struct sc_thread *sv_td;
	uint64_t	sv_deadline;	/* sc_stack_save_in_time() */
	uint64_t	sv_nocpu;	/* the current streak of NOCPU spins */
	int		sv_tid;		/* the tid asked for (td's struct
					   may be reused meanwhile under
					   SC_MISTAKE_NO_PROC_LOCK) */
};

#define SC_SAVE_AGAIN	(-1)	/* look at td again */
#define SC_SAVE_REFUSED	(-2)	/* a KASSERT failed: EINVAL, not counted */

/*
 * The running path (FreeBSD 12's stack_save_td_running(), the body of 13's
 * loop): one IPI_TRACE to td's CPU.  td RUNNING, not curthread, its thread
 * lock held, and held again on return.  0 or EBUSY (td's own answer),
 * ETIMEDOUT, SC_SAVE_AGAIN (td was switching, or another thread answered)
 * or SC_SAVE_REFUSED.
 */
static int
sc_stack_save_td_running(struct sc_save *sv)
{
	struct sc_machine *m = sv->sv_m;
	struct sc_thread *answer, *td = sv->sv_td;
	struct sc_pcpu *pc;
	uint64_t tag;
	int cpuid, tid = sv->sv_tid;
	bool kstack, serial;

	/*
	 * Checked before anything is dropped.  A hook inside a capture
	 * (SC_HOOK_SAVE_BEFORE_IPI) that captures again would take over the
	 * request of the capture it is in; the CPU pthreads exist only in
	 * the process that made m.
	 */
	SC_KASSERT(!sc__stack_intr_held(m), SC_SAVE_REFUSED,
	    "thread %d \"%s\": capture recursed (from a hook inside a "
	    "capture of the same machine)", td->td_tid, td->td_name);
	SC_KASSERT(getpid() == m->m_pid, SC_SAVE_REFUSED, "thread %d: machine "
	    "of pid %d used in pid %d: a machine does not survive "
	    "fork()", td->td_tid, (int)m->m_pid, (int)getpid());
	if (!sc_stack_save_in_time(m, &sv->sv_deadline))
		return (ETIMEDOUT);
	sc_stack_save_unlock(m, td, tid, sv->sv_nocpu > 0);
	sc__hook(m, SC_HOOK_SAVE_UNLOCKED, td);
	cpuid = atomic_load(&td->td_oncpu);
	if (cpuid == SC_NOCPU &&
	    (m->m_cfg.mistakes & SC_MISTAKE_NOCPU_OFFCPU) != 0) {
		/*
		 * NOCPU does not mean off-CPU: td is in a switch, and under
		 * ULE one that may be bringing it in (chosen, RUNNING,
		 * cpu_switch() not returned into it yet).  The final code
		 * waits for td_oncpu to change and looks again under the
		 * lock, where a td that still runs gets an IPI.
		 * SC_MISTAKE_NOCPU_OFFCPU takes the lock again and walks
		 * td's pcb at once, as for a thread off its CPU, with no
		 * second look: by then td may run on, over the stack memory
		 * that its pcb's frames were saved in.
		 */
		SC_TRACE(m, SC_TRACE_NOCPU, sc_curcpu(), tid, 0, 0);
		sc_stack_save_relock(m, td, tid, false);
		sc__stack_walk_pcb(sv->sv_st, td, tid);
		return (0);
	}
	if (cpuid == SC_NOCPU) {
		/* Switching: on or off a CPU, shortly. */
		SC_CNT_INC(m, retry_nocpu);
		if (sv->sv_nocpu++ == 0)
			SC_TRACE(m, SC_TRACE_NOCPU, sc_curcpu(), tid, 0, 0);
		sc_stack_save_nocpu_wait(m, td, &sv->sv_deadline);
		sc_stack_save_relock(m, td, tid, sv->sv_nocpu > 1);
		return (SC_SAVE_AGAIN);
	}
	if (sv->sv_nocpu > 1)
		SC_TRACE(m, SC_TRACE_NOCPU, sc_curcpu(), tid, sv->sv_nocpu,
		    cpuid);
	sv->sv_nocpu = 0;
	pc = &m->m_pcpu[cpuid];
	/* The bound covers the wait for the capture locks too. */
	serial = m->m_cfg.capture_serial != 0;
	if (serial && sc_stack_intr_lock(m, &m->m_intr_lock,
	    sv->sv_deadline) != 0) {
		sc_stack_save_relock(m, td, tid, false);
		return (ETIMEDOUT);
	}
	if (sc__stack_intr_open(pc, td, sv->sv_deadline, &tag) != 0) {
		if (serial)
			sc__mtx_unlock(&m->m_intr_lock);
		sc_stack_save_relock(m, td, tid, false);
		return (ETIMEDOUT);
	}
	sc__hook(m, SC_HOOK_SAVE_BEFORE_IPI, td);
	sc__ipi_cpu(pc, SC_IPI_TRACE, tid);
	if ((m->m_cfg.mistakes & SC_MISTAKE_CLEAR_AFTER_IPI) != 0) {
		/*
		 * The answer word is cleared in sc__stack_intr_open(), before
		 * the IPI exists, because from the send on the handler may
		 * answer at any moment: on hardware its CPU runs beside this
		 * one.  Cleared here, an answer that came first is wiped, and
		 * the wait below waits for one that never comes.  In
		 * deterministic mode the point is where the target's CPU may
		 * take the IPI before this store.
		 */
		sc__ds_point();
		atomic_store(&pc->pc_intr.si_td, NULL);
	}
	answer = sc__stack_intr_wait(pc, tag, sv->sv_deadline);
	kstack = sc__stack_intr_close(pc, answer, td, sv->sv_st);
	if (serial)
		sc__mtx_unlock(&m->m_intr_lock);
	if (answer == td)
		SC_TRACE(m, SC_TRACE_ANSWER_SEEN, sc_curcpu(), tid,
		    answer->td_tid, answer->td_gen);
	if (answer == NULL)
		sc__stack_intr_diagnose(m, pc);
	sc_stack_save_relock(m, td, tid, false);

	if (answer == NULL)
		return (ETIMEDOUT);
	if (answer == td)
		return (sc__stack_save_answered(m, sv->sv_st, kstack));
	sc__stack_save_retried(m, tid, answer);
	if (!TD_IS_RUNNING(td))
		SC_CNT_INC(m, retry_offcpu);
	return (SC_SAVE_AGAIN);
}

/*
 * One look at td (not curthread, its thread lock held): gone, off a CPU
 * (walk its pcb: it cannot start running while we hold its lock), or
 * running.  SC_PROTO_NMI takes over past the checks both protocols share.
 */
static int
sc_stack_save_td_look(struct sc_save *sv)
{
	struct sc_stack *st = sv->sv_st;
	struct sc_thread *td = sv->sv_td;

	if (atomic_load(&td->td_state) == SC_TDS_INACTIVE) {
		sc_stack_zero(st);
		return (ESRCH);
	}
	/*
	 * mjg: "can the thread become swapped after the lock is dropped
	 * below?"  Not while we hold its proc lock; without it
	 * (SC_MISTAKE_NO_PROC_LOCK) it can, and the kernel's stack_save_td()
	 * would walk the unmapped stack from pcb_rbp: a fatal page fault.  A
	 * KASSERT whose return (if the handler returns) ends the capture the
	 * usual way; the thread lock is held again, as at the entry.
	 */
	if (__builtin_expect(TD_IS_SWAPPED(td), 0)) {
		sc__panic(__func__, "!TD_IS_SWAPPED(td)",
		    "thread %d \"%s\" was swapped out while its thread lock "
		    "was dropped (no proc lock held): the kernel would walk "
		    "its unmapped kernel stack from pcb_rbp and take a fatal "
		    "page fault", td->td_tid, td->td_name);
		sc_stack_zero(st);
		return (EINVAL);
	}
	/* FreeBSD 12's protocol, for the history (docs/history.md). */
	if (sv->sv_m->m_cfg.protocol == SC_PROTO_NMI)
		return (sc__stack_save_td_nmi(st, td, sv->sv_deadline));
	if (!TD_IS_RUNNING(td)) {
		sc__stack_walk_pcb(st, td, sv->sv_tid);
		return (0);
	}
	return (sc_stack_save_td_running(sv));
}

/*
 * sc_stack_save_td() within deadline (sc__stack_save_td_until()).  The
 * names of it and of its helpers, in the KASSERT messages, all begin with
 * the public function's.
 */
static int
sc_stack_save_td_until(struct sc_stack *st, struct sc_thread *td,
    uint64_t deadline)
{
	const struct sc_range *text;
	struct sc_machine *m;
	struct sc_thread *self;
	struct sc_save sv;
	size_t ntext;
	int error, tid;

	SC_KASSERT(st != NULL && td != NULL, EINVAL, "NULL argument");
	SC_KASSERT(sc_thread_lock_owned(td), EINVAL,
	    "thread %d \"%s\" is not locked", td->td_tid, td->td_name);
	sc__ds_enter(td->td_machine);
	SC_KASSERT(!TD_IS_SWAPPED(td), EINVAL,
	    "thread %d \"%s\" is swapped", td->td_tid, td->td_name);
	/* markj: "we hold the process lock, which prevents both swapping
	 * and exiting"; SC_MISTAKE_NO_PROC_LOCK drops the check to show
	 * what mjg feared. */
	SC_KASSERT(!TD_IS_RUNNING(td) || td == sc_curthread() ||
	    sc_proc_lock_owned(td->td_proc) ||
	    (td->td_machine->m_cfg.mistakes & SC_MISTAKE_NO_PROC_LOCK) != 0,
	    EINVAL, "thread %d \"%s\" is running and its proc lock is not "
	    "held", td->td_tid, td->td_name);
	/* stackcap's check, not the kernel's; SC_MISTAKE_SPIN_HELD drops it
	 * to show the deadlock it prevents. */
	SC_KASSERT(sc__spin_held_count() == 1 ||
	    (td->td_machine->m_cfg.mistakes & SC_MISTAKE_SPIN_HELD) != 0,
	    EINVAL, "thread %d \"%s\": a spin lock other than its thread lock "
	    "is held", td->td_tid, td->td_name);
	m = td->td_machine;
	tid = td->td_tid;
	self = sc_curthread();
	SC_TRACE(m, SC_TRACE_CAPTURE_BEGIN, sc_curcpu(), tid,
	    self != NULL ? self->td_tid : 0, 0);
	/* The text ranges, computed here on first use, before any IPI: the
	 * handler never allocates. */
	sc_text_ranges(&text, &ntext);

	if (m->m_cfg.arch == SC_ARCH_ARM64 && TD_IS_RUNNING(td)) {
		/* arm64's stack_save_td(): no capture of a running thread,
		 * curthread included. */
		sc_stack_zero(st);
		error = EOPNOTSUPP;
	} else if (td == self) {
		sc_stack_save(st);
		error = 0;
	} else {
		sv = (struct sc_save){ .sv_m = m, .sv_st = st, .sv_td = td,
		    .sv_deadline = deadline, .sv_tid = tid };
		while ((error = sc_stack_save_td_look(&sv)) == SC_SAVE_AGAIN)
			continue;
		if (error == SC_SAVE_REFUSED)
			return (EINVAL);
	}
	sc__stack_save_done(m, tid, st, error);
	return (error);
}

int
sc_stack_save_td(struct sc_stack *st, struct sc_thread *td)
{
	return (sc_stack_save_td_until(st, td, 0));
}

int
sc__stack_save_td_until(struct sc_stack *st, struct sc_thread *td,
    uint64_t deadline)
{
	return (sc_stack_save_td_until(st, td, deadline));
}
