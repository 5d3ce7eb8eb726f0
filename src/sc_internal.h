/*
 * Internal declarations shared by the library's sources (not installed).
 * Names with the sc__ prefix are internal and not exported.
 *
 * Lock key, after sys/sys/proc.h's: the one key of the library (sim_det.h
 * uses it too).  Every field of every shared struct carries a letter;
 * docs/locking.md lists the locks themselves, their order and their
 * FreeBSD counterparts.
 *   (c)  constant once the struct is visible to another thread
 *   (e)  constant until its thread is reaped; the reaper (the CPU that
 *        switched away from the exited thread) changes it once, when
 *        nothing reads it any more (the thread is INACTIVE)
 *   (a)  atomic, no lock; the comment says who writes it
 *   (t)  the thread lock (*td_lock)
 *   (s)  the run-queue lock: 4BSD's sched_lock (m_sched_lock) for every
 *        queue; ULE's lock of the CPU's queue (pc_tdq_lock)
 *   (q)  the sleep-queue chain lock of the wait channel
 *   (p)  the proc lock (p_mtx)
 *   (l)  m_list_mtx, the machine's list lock (a pthread mutex, never held
 *        across a switch: a host-locked section)
 *   (x)  the mutex of a CPU's capture slot (pc_intr.si_mtx): one request
 *        for that CPU at a time.  FreeBSD has one intr_lock for all CPUs;
 *        cfg.capture_serial takes that one too (m_intr_lock), around it
 *   (y)  the request's claim: the IPI handler that claimed the open request
 *        by compare-and-swap writes it until it publishes the answer; then
 *        the requester, which holds (x) (or SC_PROTO_NMI's nmi_lock),
 *        reads it
 *   (n)  no lock: written by the one CPU that runs or switches the thread,
 *        with interrupts disabled.  ULE's switch writes it with no lock
 *        held, as sched_switch() in sys/kern/sched_ule.c does (whose
 *        proc.h still says (t)): a RUNNING thread whose lock is free may
 *        show NOCPU.
 *        4BSD writes it under (s), its thread lock.  Read by an atomic
 *        load, unlocked: a hint that the reader checks again
 *   (k)  curthread only (the simulated thread itself)
 *   (k*) curthread, and the IPI handler that interrupts it on its CPU
 *   (o)  CPU-local: code running on the CPU's own pthread (whichever
 *        simulated thread it runs) and that CPU's IPI handler, never
 *        another pthread; signal fences, not barriers, order it
 *   (g)  process-wide, under the lock that the comment names
 *   (z)  the thread zone (kern_thread.c): written when the struct is
 *        allocated or reused, while it is on no list and no valid pointer
 *        to it is left (its last thread was reaped and joined); constant
 *        from then until its thread is joined.  Only a stale pointer reads
 *        it across a reuse (a capture without the proc lock,
 *        SC_MISTAKE_NO_PROC_LOCK): such a field is atomic when a reader
 *        may meet it so; "(z/a)"
 *   (d)  deterministic mode (sim_det.h): written only by the holder of the
 *        run token, or before the slot is published
 *   (r)  deterministic mode: ds_reg, the registration of a plain pthread
 * Two letters, as (t/a): written under the first, read under the second;
 * "/a" means read without a lock by an atomic load, as a snapshot or a
 * hint that the reader checks again under the lock when it matters.
 */
#ifndef SC_INTERNAL_H
#define SC_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <time.h>

/* glibc's sys/queue.h lacks the _SAFE iterators of FreeBSD's queue(3). */
#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)			\
	for ((var) = TAILQ_FIRST((head));				\
	    (var) && ((tvar) = TAILQ_NEXT((var), field), 1);		\
	    (var) = (tvar))
#endif

#include "stackcap.h"
#include "stackcap/base.h"

/*
 * Per-pthread data used from the signal handler must use the initial-exec
 * TLS model: the general-dynamic model may allocate on first access from a
 * shared library, which is not async-signal-safe.
 */
#define SC_TLS_IE	__attribute__((tls_model("initial-exec")))

/* SC_NOIPA, SC_BARRIER() and sc_now_ns() come from stackcap/base.h. */

#define SC_MAXCPU	256
#define SC_PAGE_SIZE	4096

/*
 * The sizes of the structs that callers allocate, as stackcap 0.1 had
 * them: the entry points without _sz read and write only that much.
 */
#define SC__CONFIG_SIZE_V0	(offsetof(struct sc_machine_config,	\
	hold_lock_across_ipi) + sizeof(int))
#define SC__COUNTERS_SIZE_V0	offsetof(struct sc_counters, ebusy_user)
#define SC__KSTACK_SIZE_V0	offsetof(struct sc_kstack, pid)

/* IPI vectors, one bit each in pc_ipi_pending (x86 mp_x86.c). */
#define SC_IPI_TRACE	0x01	/* capture the interrupted thread's stack */
#define SC_IPI_STOP	0x02	/* machine destroy: leave the machine */
#define SC_IPI_NMI	0x04	/* SC_PROTO_NMI's IPI_TRACE: an NMI, taken
				   even with interrupts disabled */
#define SC_IPI_CLOCK	0x08	/* the CPU's clock interrupt (kern_clock.c):
				   not an IPI, but it rides the same
				   signal and the same deferral */
#define SC_IPI_PREEMPT	0x10	/* IPI_PREEMPT: the running thread owes a
				   preemption (sc__sched_preempt_cpu()) */

/* A spin lock (struct mtx with MTX_SPIN).  Any context may release it: the
 * sched_lock is handed from one thread to the next across a switch. */
struct sc_spin {
	_Atomic uintptr_t sp_owner;	/* (a) owner token, 0 = free */
	_Atomic uint32_t sp_sleepers;	/* (a) waiters asleep on sp_futex */
	_Atomic uint32_t sp_futex;	/* (a) bumped by an unlock that
					   found sleepers */
	const char	*sp_name;	/* (c) */
};

/* A simulated sleep mutex (struct mtx with MTX_DEF): the proc lock, the
 * capture slots' mutexes and intr_lock.  Owned by a sc_thread or by a
 * plain pthread. */
struct sc_mtx {
	_Atomic uintptr_t mx_owner;	/* (a) owner token, 0 = free */
	_Atomic int	mx_waiters;	/* (a) someone sleeps on it */
	_Atomic uint32_t mx_futex; /* (a) bumped at each contended unlock */
	_Atomic uintptr_t mx_want;	/* (a) owner token of the waiter the
					   lock is reserved for, 0 = none */
	_Atomic uint32_t mx_want_age;	/* (a) how often that waiter lost */
	const char	*mx_name;	/* (c) */
	uint64_t	*mx_waitcnt;	/* (c) counter of contended locks, or
					   NULL */
};

/* Process control block: what cpu_switch saves (amd64 struct pcb). */
struct sc_pcb {
	uintptr_t	pcb_rsp;	/* (t) callee-saved registers are on the
					   stack */
	uintptr_t	pcb_rbp;	/* (t) 0 for a thread that never ran */
};

/* The interrupted context that the IPI handler sees (struct trapframe):
 * a local of the handler, on the CPU's signal stack. */
struct sc_intr_frame {
	uintptr_t	if_rip, if_rsp, if_rbp;	/* (o) */
	bool		if_kstack;	/* (o) %rsp was on the thread's kernel
					   stack */
};

struct sc_machine;
struct sc_pcpu;
struct sc_ds;
struct sc_trace;

/* A race-injection hook: immutable once published, so that a caller never
 * pairs one hook's function with another's argument. */
struct sc_hook {
	sc_hook_fn	h_fn;		/* (c) */
	void		*h_arg;		/* (c) */
	struct sc_hook	*h_next;	/* (l) in m_hooks_old */
};

struct sc_thread {
	_Atomic(struct sc_spin *) td_lock; /* (t) points at the lock that
					   protects the (t) fields */
	struct sc_machine *td_machine;	/* (c) */
	_Atomic(struct sc_proc *) td_proc; /* (z/a) */
	TAILQ_ENTRY(sc_thread) td_runq;	/* (s) run queue */
	TAILQ_ENTRY(sc_thread) td_slpq;	/* (q) sleep queue */
	TAILQ_ENTRY(sc_thread) td_plist; /* (l) in the proc's p_threads;
					   unlinked with (p) held too, so
					   that a holder of (p) keeps its
					   place in a walk; then in
					   m_thread_free */
	_Atomic int	td_tid;		/* (z/a) */
	_Atomic uint32_t td_gen;	/* (z/a) 1 at the first allocation,
					   + 1 at each reuse */
	int		td_joiners;	/* (l) sc_thread_join() calls under
					   way */
	bool		td_released;	/* (l) joined: on m_thread_free, or
					   taken from it again */
	char		td_name[32];	/* (z) read under the proc lock, or
					   through a pointer still valid */
	_Atomic int	td_state;	/* (t/a) enum sc_td_state */
	_Atomic int	td_inhibitors;	/* (t/a) SC_TDI_* */
	_Atomic int	td_oncpu;	/* (n) read unlocked by
					   stack_save_td */
	_Atomic int	td_lastcpu;	/* (n) set by the CPU that switches
					   td in; a hint for sched_pickcpu */
	int		td_bound;	/* (t) sched_bind() CPU, or NOCPU */
	_Atomic int	td_priority;	/* (t/a) SC_PRI_MIN..SC_PRI_MAX, 0 the
					   best; set at allocation before
					   td is visible, then under (t):
					   an ithread's, sched_prio() */
	int		td_rqindex;	/* (s) its run queue's index while on
					   one: td_priority / SC_RQ_PPQ when
					   queued */
	bool		td_idle;	/* (z) a CPU's idle thread */
	bool		td_runq_bound;	/* (s) on a per-CPU run queue */
	const void	*td_wchan;	/* (q) */
	_Atomic(const char *) td_wmesg;	/* (q/a) */
	struct sc_pcb	td_pcb;		/* (t) valid while not running */
	struct sc_intr_frame *td_intr_frame; /* (k*) while the handler runs */
	void		(*td_fn)(void *); /* (z) */
	void		*td_arg;	/* (z) */
	char		*td_kstack_map;	/* (e) mapping, guard page first; NULL
					   once the thread is reaped */
	size_t		td_kstack_maplen; /* (z) */
	struct sc_range	td_kstack;	/* (z) the usable kernel stack */
	char		*td_ustack;	/* (k) user stack, mapped on first use;
					   (e) unmapped at reap */
	size_t		td_ustack_len;	/* (k) */
	_Atomic uint32_t td_exited;	/* (a) 1 once reaped; futex word */
	void		*td_asan_fake;	/* (k) ASan fake-stack handle */
	_Atomic int	td_hostlocks;	/* (k*) host-locked sections entered:
					   IPI_STOP never stops td in one */
	void		*td_tsan_fiber;	/* (z) TSan fiber (a new one at each
					   reuse) */
	_Atomic int	td_critnest;	/* (k*) sc_critical_enter() depth */
	_Atomic int	td_owepreempt;	/* (k*) a preemption waits for a safe
					   point (kern_clock.c) */
	int		td_slice;	/* (k*) clock ticks of its slice spent
					   while running; the handler of
					   its CPU counts them */
	uintptr_t	td_uksp;	/* (k) kernel %rsp while in user mode
					   (sc_user_call()), else 0 */
};

#define TD_IS_RUNNING(td) (atomic_load(&(td)->td_state) == SC_TDS_RUNNING)
#define TD_IS_SWAPPED(td) \
	((atomic_load(&(td)->td_inhibitors) & SC_TDI_SWAPPED) != 0)

TAILQ_HEAD(sc_threadq, sc_thread);

/*
 * A run queue (sys/sys/runq.h's struct runq): 64 queues of 4 priorities
 * each, and a status word with a bit set for each queue that is not
 * empty, so that the best thread is the head of the queue of the lowest
 * set bit.  Its lock is the (s) lock of the queue's owner.
 */
#define SC_RQ_PPQ	4			/* priorities per queue */
#define SC_RQ_NQS	((SC_PRI_MAX + 1) / SC_RQ_PPQ)	/* 64 queues */
_Static_assert(SC_RQ_NQS == 64, "one status word covers every queue");
struct sc_runq {
	uint64_t	rq_status;	/* (s) bit i: rq_queues[i] not empty */
	struct sc_threadq rq_queues[SC_RQ_NQS]; /* (s) FIFO each */
};

/* A sleep-queue chain (subr_sleepqueue.c); (q) is its lock. */
struct sc_sleepq_chain {
	struct sc_spin	sc_lock;	/* the chain lock */
	struct sc_threadq sc_threads;	/* (q) sleepers, every wchan */
} __attribute__((aligned(64)));

struct sc_proc {
	struct sc_machine *p_machine;	/* (c) */
	struct sc_proc	*p_next;	/* (l) machine's list */
	int		p_pid;		/* (c) */
	char		p_comm[20];	/* (c) */
	struct sc_mtx	p_mtx;		/* the (p) lock */
	struct sc_threadq p_threads;	/* (l) in creation order, exited ones
					   until they are joined; a thread
					   leaves it with (p) held too */
	int		p_nthreads;	/* (l) in p_threads */
};

/*
 * A capture request slot (stack_machdep.c): FreeBSD's stack_intr_td and
 * stack_intr_stack, plus the claim tag and the futex the requester sleeps
 * on.  The kernel has one, under its single intr_lock; stackcap has one per
 * CPU (pc_intr), so that captures of threads on different CPUs proceed at
 * once and a snapshot interrupts every CPU in one round.  A CPU's IPI_TRACE
 * handler answers only its own slot.  cfg.capture_serial keeps the
 * kernel's intr_lock (m_intr_lock) over every request too.
 */
struct sc_stack_intr {
	struct sc_mtx	si_mtx;		/* the (x) lock: one request on this
					   CPU at a time */
	uint64_t	si_seq;		/* (x) request sequence */
	uint64_t	si_rtt;		/* (x) recent round trip (ns) */
	_Atomic uint64_t si_req;	/* (a) open request tag, or 0 */
	_Atomic(struct sc_thread *) si_td; /* (a) the answer: the thread the
					   handler interrupted */
	struct sc_stack	si_buf;		/* (y) the handler's walk */
	bool		si_kstack;	/* (y) the interrupted %rsp was on the
					   kernel stack */
	_Atomic uint32_t si_futex;	/* (a) bumped at each answer */
	_Atomic int	si_waiting;	/* (a) the requester sleeps */
	uint32_t	si_opened;	/* (x) si_futex when the request
					   opened (read under
					   SC_MISTAKE_CLEAR_AFTER_IPI) */
	_Atomic(struct sc_thread *) si_want; /* (x/a) the thread asked for,
					   published with the tag under
					   SC_MISTAKE_ANSWER_TARGET, else
					   NULL */
};

struct sc_pcpu {
	struct sc_machine *pc_machine;	/* (c) */
	int		pc_cpuid;	/* (c) */
	pthread_t	pc_pthread;	/* (c) */
	_Atomic pid_t	pc_ktid;	/* (a) Linux tid of the CPU pthread */
	_Atomic(struct sc_thread *) pc_curthread; /* (o/a) changed with
					   interrupts off; others read it */
	struct sc_thread *pc_idlethread; /* (c) */
	_Atomic int	pc_spinlock_count; /* (o) interrupts off while > 0 */
	_Atomic int	pc_intr_deferred; /* (o) SC_DEFER_*: an interrupt
					   waits for spinlock_exit */
#define SC_DEFER_IPI	0x1		/* pc_intr_deferred: IPIs wait */
#define SC_DEFER_CLOCK	0x2		/* ... a tick waits */
#define SC_DEFER_CARRIED 0x4		/* ... IPIs that a tick's signal
					   deferred and counted */
	_Atomic uint32_t pc_ipi_pending; /* (a) SC_IPI_* bitmap */
	_Atomic uint32_t pc_handler_gen; /* (o/a) the IPI signal handler's
					   entries and exits: odd inside */
	_Atomic uint64_t pc_ipi_id;	/* (a) id of the last IPI sent here */
	_Atomic uint32_t pc_idle_futex;	/* (a) bumped to wake the idle loop */
	_Atomic int	pc_idling;	/* (a) the idle thread may sleep */
	struct sc_runq	pc_runq;	/* (s) 4BSD: threads bound to this
					   CPU; ULE: this CPU's run queue */
	_Atomic int	pc_runq_len;	/* (s/a) */
	struct sc_spin	pc_tdq_lock;	/* ULE's tdq lock, the (s) lock of
					   pc_runq */
	struct sc_thread *pc_deadthread; /* (o) exited, reap after switch */
	struct sc_spin	*pc_held[8];	/* (o) spin locks held, in order */
	int		pc_nheld;	/* (o) */
	struct sc_pcb	pc_boot_pcb;	/* (o) the pthread's own context */
	void		*pc_boot_asan_fake; /* (o) */
	const void	*pc_boot_stack;	/* (o) for ASan fiber annotations */
	size_t		pc_boot_stack_len; /* (o) */
	void		*pc_boot_tsan_fiber; /* (o) */
	void		*pc_sigstack;	/* (o) alternate signal stack: the
					   CPU's pthread maps it at start,
					   unmaps it when it leaves */
	size_t		pc_sigstack_len; /* (o) */
	_Atomic int	pc_stopped;	/* (a) the pthread left the machine */
	_Atomic int	pc_init_error;	/* (a) the pthread could not start */
	_Atomic uintptr_t pc_tsan_poll_rbp; /* (o) TSan: frame of the poll */
	struct sc_stack_intr pc_intr;	/* this CPU's capture request slot */
	timer_t		pc_timer;	/* (o) the clock's POSIX timer */
	bool		pc_timer_ok;	/* (o) pc_timer was created */
	bool		pc_timer_armed;	/* (o) it runs (not while idle) */
	_Atomic uint64_t pc_ticks;	/* (o/a) clock ticks counted */
	int		pc_ticks_missed; /* (o) periods that expired while the
					   timer's signal was pending */
} __attribute__((aligned(64)));

/*
 * SC_PROTO_NMI's state (FreeBSD 12's stack_machdep.c: nmi_lock,
 * nmi_pending, nmi_stack), plus a claim: the requester's wait is bounded,
 * so a handler must not walk for a request that was given up.
 */
struct sc_stack_nmi {
	struct sc_spin	sn_lock;	/* nmi_lock: one NMI request at a
					   time; the requester writes
					   sn_pending under it */
	_Atomic uintptr_t sn_pending;	/* (a) nmi_pending: the thread the
					   NMI is for, SC_NMI_CLAIMED while
					   its handler walks, 0 once done */
	struct sc_stack	sn_buf;		/* (y) the handler's walk */
};
#define SC_NMI_CLAIMED	((uintptr_t)1)

struct sc_machine {
	struct sc_machine_config m_cfg;	/* (c) */
	int		m_ncpu;		/* (c) */
	size_t		m_kstack_len;	/* (c) usable kernel stack bytes */
	void		*m_kstack_cache[64]; /* (l) stacks of reaped threads */
	int		m_nkstack_cache; /* (l) */
	struct sc_threadq m_thread_free; /* (l) the thread zone: structs of
					   reaped and joined threads, the
					   last released first */
	int		m_nthread_free;	/* (l) */
	struct sc_pcpu	*m_pcpu;	/* (c) [m_ncpu] */
	const struct sc_sched *m_sched;	/* (c) the scheduler */
	struct sc_spin	m_sched_lock;	/* the (s) lock, 4BSD's sched_lock */
	struct sc_runq	m_runq;		/* (s) 4BSD: threads not bound */
	_Atomic int	m_runq_len;	/* (s/a) */
	pthread_mutex_t	m_list_mtx;	/* the (l) lock */
	struct sc_proc	*m_procs;	/* (l) */
	struct sc_proc	**m_procs_tail;	/* (l) */
	int		m_nprocs;	/* (l) */
	int		m_nextpid;	/* (l) */
	int		m_nexttid;	/* (l) */
	struct sc_proc	*m_idleproc;	/* (c) */
	struct sc_mtx	m_intr_lock;	/* FreeBSD's intr_lock: one capture
					   of a running thread at a time,
					   with cfg.capture_serial only */
	struct sc_stack_nmi m_nmi;	/* SC_PROTO_NMI's state */
	_Atomic(struct sc_hook *) m_hook; /* (a) the current hook, or NULL */
	struct sc_hook	*m_hooks_old;	/* (l) replaced hooks, freed at
					   destroy: a caller may still use
					   one */
	struct sc_counters m_cnt;	/* (a) relaxed atomic increments */
	_Atomic int	m_dying;	/* (a) sc_machine_destroy() began */
	_Atomic int	m_warned;	/* (a) diagnoses printed, a bit each */
	pid_t		m_pid;		/* (c) getpid() at creation, for
					   tgkill() */
	struct sc_trace	*m_trace;	/* (c) protocol trace, or NULL */
	_Atomic uint64_t m_ipi_seq;	/* (a) IPI ids, for the trace */
	struct sc_range	*m_nostop;	/* (c) text where IPI_STOP must not
					   stop a thread (libc, loader...) */
	size_t		m_nnostop;	/* (c) */
	struct sc_ds	*m_ds;		/* (c) deterministic mode, or NULL */
	_Atomic uint32_t m_cpu_seq;	/* (a) futex: bumped when a CPU
					   pthread boots, fails or stops */
};

#include "sim_det.h"
#include "sc_pcpu.h"


#define SC_CNT_INC(m, f) \
	__atomic_fetch_add(&(m)->m_cnt.f, 1, __ATOMIC_RELAXED)

/*
 * The library's code: its objects are linked into one (ld -r) whose text
 * is one section, stackcap_text (src/stackcap_text.ld).  Is pc in it?
 * The clock never preempts there (kern_clock.c), and deterministic mode
 * never takes the run token back there (sim_det_token.c).
 * Async-signal-safe.
 */
extern const char sc__text_start[] __attribute__((visibility("hidden")));
extern const char sc__text_end[] __attribute__((visibility("hidden")));

static inline bool
sc__in_library_text(uintptr_t pc)
{
	return (pc >= (uintptr_t)sc__text_start &&
	    pc < (uintptr_t)sc__text_end);
}

/* trace_json.c */
double	sc__json_quantum(uint64_t span_ns);
void	sc__json_ts_dur(FILE *fp, double q, uint64_t t0, uint64_t t1);
void	sc__json_string(FILE *fp, const char *s);

/* kern_shutdown.c */
void	sc__panic(const char *func, const char *cond, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * KASSERT: on failure, the panic handler gets "panic: <function>: <message>
 * (<condition>)"; if the handler returns (on a plain pthread; a simulated
 * thread is parked), the function returns `ret`.
 */
#define SC_KASSERT(cond, ret, ...) do {					\
	if (__builtin_expect(!(cond), 0)) {				\
		sc__panic(__func__, #cond, __VA_ARGS__);		\
		return ret;						\
	}								\
} while (0)

/* The preconditions of a public call that takes td's thread lock itself. */
#define SC_THREAD_UNLOCKED_ARG(td, ret) do {				\
	SC_KASSERT((td) != NULL, ret, "NULL thread");			\
	SC_KASSERT(!sc_thread_lock_owned(td), ret,			\
	    "thread %d: the caller holds its thread lock", (td)->td_tid); \
} while (0)

/* frame_bounds.c: sort r[0..n) by lo and merge overlaps; returns the new n. */
size_t	sc__ranges_sort_merge(struct sc_range *r, size_t n);
/* The executable segments of the loaded objects whose file name (without
 * its directory; "" for the main program) want() accepts, or of all when
 * want is NULL: a sorted, merged, malloc'ed array.  0 or ENOMEM. */
int	sc__exec_ranges(bool (*want)(const char *base), struct sc_range **rp,
	    size_t *np);

/* cpu_switch.S */
void	sc__cpu_switch(struct sc_pcb *oldpcb, const struct sc_pcb *newpcb,
	    _Atomic(struct sc_spin *) *oldlockp, struct sc_spin *mtx,
	    _Atomic(struct sc_spin *) *newlockp);
void	sc__fork_trampoline(void);
void	sc__user_enter(void (*fn)(void *), void *arg, void *stacktop);
void	sc__timerint(void);

/* subr_pcpu.c */
struct sc_pcpu *sc__pcpu_handler(void);	/* signal handler */
void	sc__pcpu_set(struct sc_pcpu *pc);
bool	sc__curthread_kstack(struct sc_range *r);

/* stack_walk_x86.c: the calling pthread's stack ({0, 0} if unknown). */
struct sc_range sc__pthread_stack(void);

/* kern_mutex.c: spin locks (thread_lock() is public) */
void	sc__spin_init(struct sc_spin *sp, const char *name);
void	sc__spin_lock(struct sc_machine *m, struct sc_spin *sp);
int	sc__spin_lock_until(struct sc_machine *m, struct sc_spin *sp,
	    uint64_t deadline);
void	sc__spin_unlock(struct sc_spin *sp);
void	sc__spin_handoff(struct sc_spin *sp, struct sc_thread *td);
int	sc__spin_held_count(void);
void	sc__spin_release_all(struct sc_pcpu *pc);
extern struct sc_spin sc__blocked_lock;

/* kern_mutex.c: sleep mutexes */
void	sc__mtx_init(struct sc_mtx *mx, const char *name, uint64_t *waitcnt);
void	sc__mtx_lock(struct sc_mtx *mx);
int	sc__mtx_lock_until(struct sc_mtx *mx, uint64_t deadline_ns);
void	sc__mtx_unlock(struct sc_mtx *mx);
void	sc__mtx_unlock_as(struct sc_mtx *mx, uintptr_t owner);
bool	sc__mtx_owned(const struct sc_mtx *mx);

/*
 * kern_mutex.c: host-locked sections.  A simulated thread that holds a lock
 * of the host (a pthread mutex, glibc's loader lock inside
 * dl_iterate_phdr()) must not be stopped by IPI_STOP: the lock would stay
 * taken for the rest of the process.  Such sections are bracketed by
 * sc__host_enter()/sc__host_exit(); the last exit of a thread whose machine
 * is dying stops the thread there.  sc__host_lock()/sc__host_unlock() are
 * pthread_mutex_lock()/unlock() inside such a section.
 */
void	sc__host_enter(void);
void	sc__host_exit(void);
void	sc__host_lock(pthread_mutex_t *mtx);
void	sc__host_unlock(pthread_mutex_t *mtx);

/* Does the caller own sp (kern_mutex.c)? */
static inline bool
sc__spin_owned(const struct sc_spin *sp)
{
	return (atomic_load_explicit(&sp->sp_owner, memory_order_relaxed) ==
	    sc__owner_self());
}

/*
 * Lock assertions (mtx_assert(..., MA_OWNED), THREAD_LOCK_ASSERT()): a
 * precondition that a comment would only state.  Active in every build,
 * as KASSERTs are; on failure the function returns `ret`, as SC_KASSERT
 * (empty in a void function).
 */
#define SC_SPIN_ASSERT_OWNED(sp, ret)					\
	SC_KASSERT(sc__spin_owned(sp), ret,				\
	    "spin lock \"%s\" not owned", (sp)->sp_name)
#define SC_THREAD_LOCK_ASSERT(td, ret)					\
	SC_KASSERT(sc_thread_lock_owned(td), ret,			\
	    "thread %d not locked", (td)->td_tid)
#define SC_MTX_ASSERT_OWNED(mx, ret)					\
	SC_KASSERT(sc__mtx_owned(mx), ret, "mutex \"%s\" not owned",	\
	    (mx)->mx_name)

/* subr_sleepqueue.c */
void	sc__sleepq_chain_init(struct sc_sleepq_chain *sc);
struct sc_spin *sc__sleepq_lock(const void *wchan);
void	sc__sleepq_release(const void *wchan);
void	sc__sleepq_wait(const void *wchan, const char *wmesg);
void	sc__sleepq_broadcast(const void *wchan);
void	sc__sleepq_remove_machine(struct sc_machine *m);
/* A machine made (delta 1) or freed (-1): which chains a wakeup visits. */
void	sc__sleepq_machine(const struct sc_machine *m, int delta);

/*
 * The scheduler interface (sched_4bsd.c; FreeBSD's sched_*() of
 * sys/sys/sched.h).  A second scheduler is a second table, not an edit of
 * the first.  Each entry says what it is called with.
 */
struct sc_sched {
	const char	*sched_name;
	/* A new thread's td_lock, before it is visible. */
	void		(*sched_newthread)(struct sc_thread *td);
	/* td's lock held (any lock), no inhibitors: put td on a run queue. */
	void		(*sched_add)(struct sc_thread *td);
	/* td on a run queue, its lock held: take it off (swapout). */
	void		(*sched_rem)(struct sc_thread *td);
	/* Does a thread wait for a CPU of pc's?  Any context; a hint. */
	bool		(*sched_runnable)(struct sc_pcpu *pc);
	/* td == curthread, its lock held: choose the next thread, switch;
	 * return when td runs again, holding its lock. */
	void		(*sched_switch)(struct sc_thread *td,
			    struct sc_pcpu *pc);
	/* td == curthread, its lock held: bind to cpu (NOCPU: unbind). */
	void		(*sched_bind)(struct sc_thread *td, int cpu);
	/* A CPU pthread, before its first switch to its idle thread: take
	 * the lock that a thread starting in fork_exit() holds. */
	void		(*sched_throw)(struct sc_pcpu *pc);
	/* td's first code: return holding td's lock. */
	void		(*sched_fork_exit)(struct sc_thread *td);
	/* pc's idle thread, no lock held: take work from a busy CPU if
	 * there is any (ULE's tdq_idled()); true if pc now has work. */
	bool		(*sched_idled)(struct sc_pcpu *pc);
	/* sched_clock(): cnt clock ticks on pc while td (not idle) runs
	 * there, from its interrupt handler (async-signal-safe, no lock):
	 * count them against td's slice; true if td must switch. */
	bool		(*sched_clock)(struct sc_pcpu *pc, struct sc_thread *td,
			    int cnt);
};
extern const struct sc_sched sc__sched_4bsd;
extern const struct sc_sched sc__sched_ule;

/* sched_sim.c: the run queue (its lock held), state, bind, the choice. */
void	sc__runq_init(struct sc_runq *rq);
void	sc__runq_add(struct sc_runq *rq, _Atomic int *lenp,
	    const struct sc_spin *lock, struct sc_thread *td);
void	sc__runq_remove(struct sc_runq *rq, _Atomic int *lenp,
	    const struct sc_spin *lock, struct sc_thread *td);
struct sc_thread *sc__runq_choose(struct sc_runq *rq,
	    const struct sc_spin *lock);
void	sc__td_set_state(struct sc_thread *td, enum sc_td_state state);
void	sc__sched_bind(struct sc_thread *td, int cpu);
bool	sc__sched_slice_end(struct sc_pcpu *pc, struct sc_thread *td,
	    int cnt);
int	sc__sched_default(void);
const struct sc_sched *sc__sched_select(int sched);

/* kern_clock.c */
int	sc__clock_cpu_init(struct sc_pcpu *pc);
void	sc__clock_cpu_fini(struct sc_pcpu *pc);
void	sc__clock_idle(struct sc_pcpu *pc, bool idle);
int	sc__clock_slice(const struct sc_machine *m);
void	sc__hardclock(struct sc_pcpu *pc, struct sc_thread *td);
void	sc__clock_intr(struct sc_pcpu *pc, struct sc_intr_frame *frame,
	    ucontext_t *uc);
void	sc__clock_intr_end(struct sc_pcpu *pc, struct sc_thread *td,
	    const struct sc_intr_frame *frame, ucontext_t *uc);
void	sc__sched_preempt_owed(struct sc_thread *td);
void	sc__sched_preempt(void);
void	sc__sched_preempt_cpu(struct sc_pcpu *pc);

/* kern_synch.c */
void	sc__mi_switch(struct sc_thread *td);
void	sc__setrunnable(struct sc_thread *td);
void	sc__td_uninhibit(struct sc_thread *td, int inhibitor);

/* kern_thread.c */
int	sc__thread_alloc(struct sc_proc *p, const char *name,
	    void (*fn)(void *), void *arg, bool idle, struct sc_thread **tdp);
__attribute__((noreturn)) void sc__fork_exit(struct sc_thread *td);
void	sc__switch_done(void);
void	sc__ustack_free(struct sc_thread *td);

/*
 * vm_mapcache.c: a mapping of len bytes (a multiple of the page size)
 * for a stack, its first page PROT_NONE when guard, from the process's
 * cache of the stacks of machines gone, else new: NULL when the host has
 * none to give.  sc__map_put() gives one back (NULL: nothing), its ASan
 * poisoning forgotten.  Context: a plain pthread or a simulated thread
 * (the cache's lock is a host lock).
 */
void	*sc__map_get(size_t len, bool guard);
void	sc__map_put(void *p, size_t len, bool guard);
__attribute__((noreturn)) void sc__thread_park(struct sc_thread *td);

/* kern_idle.c */
void	sc__idle_loop(void *arg);
bool	sc__cpu_idle_wakeup(struct sc_machine *m, struct sc_pcpu *pc);

/* machine.c */
__attribute__((noreturn)) void sc__cpu_leave(struct sc_pcpu *pc,
	    struct sc_thread *td);
__attribute__((noreturn)) void sc__cpu_stop(struct sc_pcpu *pc);
bool	sc__env_seed(uint64_t *seedp);

/* stack_hooks.c: the race-injection hooks */
void	sc__hook(struct sc_machine *m, enum sc_hook_point pt,
	    struct sc_thread *td);

/* trace.c; nevents at most SC_TRACE_MAX_EVENTS (sc_machine_create()
 * refuses more) */
#define SC_TRACE_MAX_EVENTS	((size_t)1 << 24)
int	sc__trace_init(struct sc_machine *m, size_t nevents);
void	sc__trace_fini(struct sc_machine *m);
void	sc__trace_rec(struct sc_trace *tr, int event, int cpu, int tid,
	    uint64_t a0, uint64_t a1);
struct sc_trace_record *sc__trace_take(struct sc_machine *m, size_t *np);
uint64_t sc__trace_base(const struct sc_trace_record *recs, size_t n);
bool	sc__trace_capture_step(int event);
bool	sc__trace_snapshot_step(int event);
int	sc__trace_requester(int *hosts, int *n, int max, int host_tid);
void	sc__trace_narrate(const struct sc_trace_record *r, char *buf,
	    size_t len);
/* Record an event if the trace is on: one predictable branch when off. */
#define SC_TRACE(m, ev, cpu, tid, a0, a1) do {				\
	if (__builtin_expect((m)->m_trace != NULL, 0))			\
		sc__trace_rec((m)->m_trace, (ev), (cpu), (tid),		\
		    (uint64_t)(a0), (uint64_t)(a1));			\
} while (0)

/* mp_x86.c */
void	sc__ipi_cpu(struct sc_pcpu *pc, uint32_t vectors, int tid);
void	sc__ipi_bitmap_handler(struct sc_pcpu *pc, struct sc_intr_frame *frame,
	    ucontext_t *uc);
void	sc__ipi_nmi_handler(struct sc_pcpu *pc, struct sc_intr_frame *frame);

/* ipi_sim.c */
bool	sc__ipi_signo_ok(int signo);
int	sc__ipi_init(struct sc_machine *m);
void	sc__ipi_fini(struct sc_machine *m);
int	sc__ipi_cpu_init(struct sc_pcpu *pc);
void	sc__ipi_cpu_fini(struct sc_pcpu *pc);
void	sc__ipi_send(struct sc_pcpu *pc, uint32_t vectors);
void	sc__ipi_stop_redirect(struct sc_pcpu *pc, struct sc_thread *td,
	    const struct sc_intr_frame *frame, ucontext_t *uc);
void	sc__ipi_deferred(struct sc_pcpu *pc, uintptr_t rbp, uintptr_t rip);
bool	sc__ipi_handler_ours(int signo);

/* stack_machdep.c: the IPI_TRACE handler side (stack_capture_intr()). */
void	sc__stack_capture_intr(struct sc_pcpu *pc, struct sc_thread *td,
	    const struct sc_intr_frame *frame);
/*
 * stack_machdep.c: one request on pc's slot, for sc_stack_save_td() and
 * the snapshot.  open locks the slot (at most until deadline, UINT64_MAX:
 * none; 0 or ETIMEDOUT) and posts a request for td; the caller then sends
 * pc its IPI_TRACE.  wait returns the thread that answered, or NULL when
 * the bound expired first.  close copies the walk into st if answer is td,
 * clears the slot, unlocks it, and returns whether the interrupted %rsp
 * was on the kernel stack.  held: the caller holds a slot's lock or
 * intr_lock (a hook inside a capture).
 */
int	sc__stack_intr_open(struct sc_pcpu *pc, struct sc_thread *td,
	    uint64_t deadline, uint64_t *tagp);
struct sc_thread *sc__stack_intr_wait(struct sc_pcpu *pc, uint64_t tag,
	    uint64_t deadline);
/* stack_diagnose.c: after a wait that timed out, say why (stderr). */
void	sc__stack_intr_diagnose(struct sc_machine *m, struct sc_pcpu *pc);
bool	sc__stack_intr_close(struct sc_pcpu *pc, struct sc_thread *answer,
	    struct sc_thread *td, struct sc_stack *st);
bool	sc__stack_intr_held(struct sc_machine *m);
/* Step 3, td's thread lock held: walk td from its pcb, traced for tid. */
void	sc__stack_walk_pcb(struct sc_stack *st, struct sc_thread *td,
	    int tid);
/* An answer named its target: count it; 0, or EBUSY (depth 0). */
int	sc__stack_save_answered(struct sc_machine *m, const struct sc_stack *st,
	    bool kstack);
/* Another thread answered (count, trace); a capture ends with error. */
void	sc__stack_save_retried(struct sc_machine *m, int tid,
	    const struct sc_thread *answer);
void	sc__stack_save_done(struct sc_machine *m, int tid, struct sc_stack *st,
	    int error);
/* sc_stack_save_td() within deadline (sc__ds_clock(); UINT64_MAX: none;
 * 0: capture_timeout_ns from the first sight of td running). */
int	sc__stack_save_td_until(struct sc_stack *st, struct sc_thread *td,
	    uint64_t deadline);

/* kern_proc.c, proc lock held: live tids of p in (after, bound], at most
 * max, in tid order; tdfind(). */
size_t	sc__proc_tids(struct sc_proc *p, int after, int bound, int *tids,
	    size_t max);
struct sc_thread *sc__proc_tdfind(struct sc_proc *p, int tid);
/* kern_proc.c: the listing calls' bound (sc__ds_clock(); UINT64_MAX:
 * none), the proc lock within it (0 or ETIMEDOUT), and
 * sc_proc_kstack_sz() within it. */
uint64_t sc__capture_deadline(const struct sc_machine *m);
int	sc__proc_lock_until(struct sc_proc *p, uint64_t deadline);
int	sc__proc_kstack_until(struct sc_proc *p, struct sc_kstack *out,
	    size_t elsize, size_t max, size_t *n, uint64_t deadline);
struct sc_kstack *sc__kstack_elem(struct sc_kstack *out, size_t elsize,
	    size_t i, const struct sc_proc *p, int tid, const char *name);

/* stack_walk_x86.c: the walker with FreeBSD 12's bounds (SC_PROTO_NMI). */
int	sc__stack_walk_fbsd12(struct sc_stack *st, uintptr_t fp,
	    struct sc_range stack, const struct sc_range *text, size_t ntext,
	    bool *overrun);

/* stack_machdep_nmi.c: FreeBSD 12's protocol (SC_PROTO_NMI). */
int	sc__stack_save_td_nmi(struct sc_stack *st, struct sc_thread *td,
	    uint64_t deadline);
void	sc__stack_nmi_handler(struct sc_pcpu *pc, struct sc_thread *td,
	    const struct sc_intr_frame *frame, bool intr_disabled);

#endif /* !SC_INTERNAL_H */
