/*
 * stackcap: the FreeBSD amd64 protocol for capturing the kernel stack of a
 * thread that may be running right now, reproduced in userspace.
 *
 * Kernel counterparts: sys/sys/stack.h (struct stack, stack_*),
 * sys/x86/x86/stack_machdep.c (stack_save, stack_save_td, stack_capture),
 * sys/sys/proc.h (struct thread states and inhibitors), sys/sys/user.h
 * (struct kinfo_kstack, KKST_STATE_*).  docs/protocol.md maps every name.
 *
 * Conventions:
 * - Functions that can fail return 0 or a positive errno value; they never
 *   set errno.
 * - Misuse (a lock not held, a swapped thread...) is a KASSERT: the panic
 *   handler (sc_set_panic_handler) is called with a message naming the
 *   function, the condition and the thread.
 * - Pointers must not be NULL unless the function says otherwise; struct
 *   pointers (machine, proc, thread) must come from this library.
 * - Every thread of every machine is a simulated CPU's pthread or a plain
 *   pthread: a machine does not survive fork() (its CPU pthreads stay in
 *   the parent).  In the child, a capture of a running thread and
 *   sc_machine_destroy() fail with a KASSERT (EINVAL; destroy leaks).
 * - "Context" on each function says who may call it: a simulated thread (code
 *   running under sc_thread_create), a plain pthread (any thread that is not
 *   a simulated thread), a signal handler.
 */
#ifndef STACKCAP_H
#define STACKCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SC_BUILDING_LIBRARY)
#define SC_EXTERN __attribute__((visibility("default")))
#else
#define SC_EXTERN
#endif

/* ------------------------------------------------------------------------
 * Stacks (sys/sys/stack.h, sys/kern/subr_stack.c)
 * ------------------------------------------------------------------------ */

#define SC_STACK_MAX	64		/* FreeBSD's STACK_MAX is 18 */

/* A captured stack: return addresses, innermost first. */
struct sc_stack {
	int		depth;
	uintptr_t	pcs[SC_STACK_MAX];
};

/* An address range [lo, hi). */
struct sc_range {
	uintptr_t	lo, hi;
};

/* Empty st.  Context: any, including a signal handler. */
SC_EXTERN void	sc_stack_zero(struct sc_stack *st);

/* Append pc.  Returns 0, or -1 when st is full (st is left unchanged).
 * Context: any, including a signal handler. */
SC_EXTERN int	sc_stack_put(struct sc_stack *st, uintptr_t pc);

/* Copy src to dst (FreeBSD's stack_copy(src, dst) order).
 * Context: any, including a signal handler. */
SC_EXTERN void	sc_stack_copy(const struct sc_stack *src, struct sc_stack *dst);

/*
 * The pure frame-pointer walker (stack_capture()).  Follows frame records
 * {saved %rbp, return address} from fp.  Rules, in order, for each record:
 * stop unless [fp, fp + 16) lies inside `stack`; stop unless fp is 8-byte
 * aligned; stop unless the return address lies in one of text[0..ntext)
 * (sorted by lo, not overlapping); stop when st is full; record the return
 * address; stop unless the next fp is strictly greater.  No read leaves
 * `stack`, whatever the memory holds; the whole of `stack` must be readable
 * memory (the walker reads anywhere in it).  st is emptied first and must
 * not be NULL; text may be NULL when ntext is 0 (then nothing is text and
 * the walk is empty).  Returns st->depth.
 * Context: any, including a signal handler.
 */
SC_EXTERN int	sc_stack_walk(struct sc_stack *st, uintptr_t fp,
		    struct sc_range stack, const struct sc_range *text,
		    size_t ntext);

/* Does the frame record [fp, fp + 16) lie inside r?  (kstack_contains())
 * Context: any. */
SC_EXTERN int	sc_frame_in_range(uintptr_t fp, struct sc_range r);

/* Is pc inside one of text[0..ntext) (sorted, not overlapping)?  Binary
 * search.  (INKERNEL())  Context: any. */
SC_EXTERN int	sc_pc_in_text(uintptr_t pc, const struct sc_range *text,
		    size_t ntext);

/*
 * "Kernel text" of this process: the executable segments of every loaded
 * object (dl_iterate_phdr), sorted and merged.  Computed on first use.
 * sc_text_ranges() returns a snapshot that stays valid until the process
 * exits (a refresh publishes a new one and never frees the old).
 * Context: any thread; not a signal handler for the first call.
 */
SC_EXTERN void	sc_text_ranges(const struct sc_range **textp, size_t *ntextp);

/* Recompute the text ranges, e.g. after dlopen(); ranges equal to the
 * current ones publish nothing (and cost no memory).  Returns 0 or ENOMEM.
 * Context: any thread but a signal handler. */
SC_EXTERN int	sc_text_refresh(void);

/*
 * Capture the calling thread's stack (stack_save()): the first entry is the
 * return address into the caller of sc_stack_save(), then its callers.
 * On a simulated thread the bounds are its kernel stack; on a plain pthread,
 * the pthread's stack.  No machine needed.  Context: any thread.
 */
SC_EXTERN void	sc_stack_save(struct sc_stack *st);

/*
 * Symbolise pc (a return address) with libunwind: the name of the function
 * that contains it (static functions too) into name, always NUL-terminated,
 * and the offset of pc from its start into *offp (when not NULL).  A name
 * longer than namelen - 1 is truncated, as snprintf() does, and still
 * returns 0 with the offset.  Returns 0, ENOENT when no symbol covers pc
 * (name "??", as much of it as fits; offset 0), or EINVAL when namelen is 0.
 * Answers are cached by pc until a shared object is loaded or unloaded
 * (a lookup reads /proc/self/maps and maps the object's file again).
 * Context: any thread but a signal handler.
 */
SC_EXTERN int	sc_symbolize(uintptr_t pc, char *name, size_t namelen,
		    uintptr_t *offp);

/* Print st the way the kernel's stack_print() does, one frame a line:
 * "#0 0x... at func+0x1c".  Context: any thread but a signal handler. */
SC_EXTERN void	sc_stack_print(FILE *fp, const struct sc_stack *st);

/*
 * Format st the way `procstat -kk` does: "func+0x1c func+0x40 ...",
 * innermost first, "??" for unknown addresses, into buf (always
 * NUL-terminated when len > 0).  Returns the length the whole text needs, as
 * snprintf does.  Context: any thread but a signal handler.
 */
SC_EXTERN size_t sc_stack_format_kk(const struct sc_stack *st, char *buf,
		    size_t len);


/* ------------------------------------------------------------------------
 * The simulated machine (sys/kern/sched_4bsd.c, kern_thread.c, kern_synch.c)
 * ------------------------------------------------------------------------ */

struct sc_machine;
struct sc_proc;
struct sc_thread;

/* Thread states (td_state, sys/sys/proc.h). */
enum sc_td_state {
	SC_TDS_INACTIVE = 0,	/* not started, or exited */
	SC_TDS_INHIBITED,	/* has inhibitors (sleeping, swapped, iwait) */
	SC_TDS_CAN_RUN,		/* runnable but not on a run queue */
	SC_TDS_RUNQ,		/* on the run queue */
	SC_TDS_RUNNING		/* on a CPU (td_oncpu may still be NOCPU
				   during a switch) */
};

/* Inhibitors (td_inhibitors, sys/sys/proc.h), a bit mask. */
#define SC_TDI_SUSPENDED	0x0001	/* parked for good: a KASSERT handler
					   returned on it (sc_thread_join()
					   answers EINVAL) */
#define SC_TDI_SLEEPING		0x0002	/* in sc_sleep() */
#define SC_TDI_SWAPPED		0x0004	/* kernel stack swapped out */
#define SC_TDI_LOCK		0x0008	/* (unused here) */
#define SC_TDI_IWAIT		0x0010	/* waits for its first run (ithread) */

#define SC_NOCPU	(-1)

/* How sc_stack_save_td() waits for the target CPU's answer. */
enum sc_wait_strategy {
	SC_WAIT_SPIN_SLEEP = 0,	/* spin for wait_spin_ns, then sleep on a
				   futex that the handler wakes (default) */
	SC_WAIT_SPIN,		/* spin only (the kernel's cpu_spinwait()) */
	SC_WAIT_SLEEP		/* sleep on the futex at once */
};

/*
 * Race-injection points (docs/design.md).  A hook is called with the
 * point, the thread concerned and the hook argument.
 * - SC_HOOK_SAVE_UNLOCKED: requester, right after it dropped td's thread
 *   lock (step 4); td is the target.  Plain context: may block (bounded).
 *   A snapshot calls it for each running thread it looks at.
 * - SC_HOOK_SAVE_BEFORE_IPI: requester, the slot of td's CPU locked (and
 *   intr_lock, with capture_serial), request published, right before
 *   ipi_cpu(); td is the target.  A snapshot calls it for each slot of a
 *   round, before it sends the round's IPIs.
 * - SC_HOOK_INTR_BEFORE_WALK: in the target CPU's IPI_TRACE handler, before
 *   the walk; td is the interrupted thread.  MUST be async-signal-safe.
 * - SC_HOOK_SWITCH_NOCPU: inside the switch of td, after td_oncpu became
 *   NOCPU and before the context switch, interrupts disabled: must not
 *   sleep or take locks; may spin (bounded) on atomics.
 * - SC_HOOK_SWITCH_INCOMING: inside the switch to td, right before the
 *   context switch: td is the incoming thread, RUNNING, td_oncpu still
 *   NOCPU (it sets its own once it runs).  Under ULE its lock is free
 *   (ULE's window); under 4BSD its lock, the sched_lock, stays held until
 *   it has set td_oncpu.  The same rules.
 * - SC_HOOK_INTR_ENTER: first thing in a CPU's IPI signal handler, before
 *   it looks at the pending IPIs (whatever they are, interrupts enabled or
 *   not); td is the interrupted thread.  MUST be async-signal-safe.
 */
enum sc_hook_point {
	SC_HOOK_SAVE_UNLOCKED = 0,
	SC_HOOK_SAVE_BEFORE_IPI,
	SC_HOOK_INTR_BEFORE_WALK,
	SC_HOOK_SWITCH_NOCPU,
	SC_HOOK_SWITCH_INCOMING,
	SC_HOOK_INTR_ENTER,
	SC_HOOK_NPOINTS
};
typedef void (*sc_hook_fn)(void *arg, enum sc_hook_point point,
    struct sc_thread *td);

/*
 * Machine configuration: fill with sc_machine_config_init().
 *
 * ipi_signo: the signal that carries IPIs to the CPU pthreads.  Use a
 * real-time signal (SIGRTMIN..SIGRTMAX) that the program does not use.
 * Refused (EINVAL): SIGKILL and SIGSTOP (cannot be caught) and the
 * synchronous fault signals SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
 * SIGSYS (a real fault would re-execute the faulting instruction for
 * ever).  Accepted but unwise: SIGINT, SIGTERM, SIGCHLD, SIGPIPE,
 * SIGALRM..., which the process or its parent sends for other reasons:
 * each of those would reach stackcap's handler (and be ignored there),
 * not the program's default action.  The handler is installed at create
 * only if the signal has none (else EBUSY); a handler the program installs
 * after create makes captures time out (counted in ipi_handler_lost) and
 * is left in place by destroy.
 */
struct sc_machine_config {
	int	ncpu;			/* simulated CPUs; default 2 (1..256) */
	int	kstack_pages;		/* default 4 (more under sanitizers) */
	int	ipi_signo;		/* default SIGRTMIN + 2; see above */
	long	capture_timeout_ns;	/* bound of one whole
					   sc_stack_save_td() call (the wait
					   for the capture mutex included),
					   sc_proc_kstack() or snapshot call
					   (proc-lock waits included);
					   default 1 s; 0 = the kernel's
					   unbounded wait */
	int	wait_strategy;		/* enum sc_wait_strategy */
	long	wait_spin_ns;		/* SC_WAIT_SPIN_SLEEP: spin at most
					   this long first (twice the recent
					   round trip, none when round trips
					   take longer); default 5 us */
	size_t	trace_events;		/* protocol trace ring size; 0 = off */
	sc_hook_fn hook;		/* race injection; NULL = none */
	void	*hook_arg;
	int	hold_lock_across_ipi;	/* teaching only: the same as
					   SC_MISTAKE_HOLD_THREAD_LOCK */
	/* --- stackcap 0.2 --- */
	unsigned mistakes;		/* 0, or SC_MISTAKE_* bits: teaching
					   and tests only (below) */
	int	arch;			/* SC_ARCH_AMD64 (default) or
					   SC_ARCH_ARM64 */
	int	sched;			/* SC_SCHED_ULE (default) or
					   SC_SCHED_4BSD; STACKCAP_SCHED */
	int	protocol;		/* SC_PROTO_IPI (default) or
					   SC_PROTO_NMI */
	/* --- stackcap 0.4 --- */
	uint64_t seed;			/* 0: real concurrency (default);
					   else deterministic simulation
					   (docs/determinism.md);
					   STACKCAP_SEED overrides it */
	int	sim_pct_depth;		/* with seed: 0 a random scheduler;
					   d in 1..64, PCT with d - 1
					   priority change points; not 0
					   needs a seed (else EINVAL) */
	unsigned sim_pct_steps;		/* PCT: the change points fall in
					   steps 1..this (0: 10000);
					   unused without PCT */
	/* --- stackcap 0.5 --- */
	int	capture_serial;		/* 1: the kernel's single intr_lock,
					   one capture of a running thread
					   at a time, and a snapshot is one
					   capture after another; 0
					   (default): a request slot per
					   CPU (docs/protocol.md); only
					   with SC_PROTO_IPI and
					   SC_ARCH_AMD64 (else EINVAL) */
	/* --- stackcap 0.6 --- */
	int	hz;			/* clock interrupts a second on each
					   CPU (FreeBSD's hz), default 1000,
					   at most SC_HZ_MAX (else EINVAL);
					   0: no clock, a thread leaves its
					   CPU only at its own calls.  Off in
					   deterministic mode (cfg.seed) */
};

/*
 * The scheduler (cfg.sched): SC_SCHED_ULE (sys/kern/sched_ule.c, the
 * default), under which a RUNNING thread may have td_oncpu == NOCPU with
 * its lock free, or SC_SCHED_4BSD (sys/kern/sched_4bsd.c); docs/history.md,
 * "Both schedulers and both protocols", says what each changes.
 * sc_machine_config_init() sets ULE, unless the environment variable
 * STACKCAP_SCHED is "4bsd" (or "ule").
 */
/*
 * The largest cfg.hz: the rate at which a host timer still delivers every
 * tick to each simulated CPU (docs/benchmarks.md, bench_clock).
 */
#define SC_HZ_MAX	10000

#define SC_SCHED_ULE	0
#define SC_SCHED_4BSD	1

/*
 * The protocol of stack_save_td() for a running thread (cfg.protocol):
 * - SC_PROTO_IPI: FreeBSD 13 and 14's (docs/protocol.md), the default.
 * - SC_PROTO_NMI: FreeBSD 12's stack_save_td_running() (docs/history.md),
 *   for teaching and tests: the thread lock held across the wait, an NMI
 *   taken even with interrupts disabled (depth 0 there and in user mode:
 *   EAGAIN).  Under SC_SCHED_ULE, a RUNNING thread with td_oncpu == NOCPU
 *   is a KASSERT (EINVAL).  Needs capture_timeout_ns > 0; EINVAL with
 *   SC_ARCH_ARM64, capture_serial, or a mistake of the IPI protocol
 *   (SC_MISTAKE_STALE_ANSWER, SC_MISTAKE_HOLD_THREAD_LOCK,
 *   SC_MISTAKE_CLEAR_AFTER_IPI, SC_MISTAKE_ANSWER_TARGET,
 *   SC_MISTAKE_NOCPU_OFFCPU).
 */
#define SC_PROTO_IPI	0
#define SC_PROTO_NMI	1

/*
 * Mistakes that the protocol avoids, which cfg.mistakes puts back, for
 * teaching and tests only (docs/history.md, "The reviewers' catches"):
 * - SC_MISTAKE_STALE_ANSWER: the answer word is cleared neither before the
 *   IPI nor after the answer is read: an earlier answer may be taken as
 *   this capture's, with its stack.
 * - SC_MISTAKE_NO_PROC_LOCK: a running target may be captured without its
 *   proc lock: the target may exit and its struct be reused meanwhile
 *   (another thread's stack is returned), or be swapped out (a KASSERT on
 *   the relock).
 * - SC_MISTAKE_SPIN_HELD: the caller may hold another spin lock; a target
 *   that needs it with interrupts disabled (holding a spin lock, or inside
 *   sc_spinlock_enter()) never takes the IPI, and the bound ends the wait
 *   with ETIMEDOUT.
 * - SC_MISTAKE_HOLD_THREAD_LOCK: keep td's thread lock across the IPI
 *   (hold_lock_across_ipi).
 * - SC_MISTAKE_CLEAR_AFTER_IPI: the answer word is cleared after the IPI
 *   is sent instead of before: a handler that answers in between has its
 *   answer wiped, and the requester waits for one that never comes, until
 *   the bound (ETIMEDOUT; the kernel's unbounded wait would hang).
 * - SC_MISTAKE_ANSWER_TARGET: the handler answers with the thread the
 *   request asked for instead of curthread, the thread it interrupted and
 *   walked: when the target switched off its CPU between the requester's
 *   td_oncpu read and the IPI, another thread's stack (or the idle
 *   thread's) is returned as the target's, with 0.
 * - SC_MISTAKE_NOCPU_OFFCPU: a RUNNING target whose td_oncpu reads NOCPU
 *   (in a switch: ULE's window, chosen but cpu_switch() not yet returned
 *   into it) is taken for off-CPU: its thread lock is taken again and its
 *   pcb walked, with no second look, instead of waiting for td_oncpu and
 *   looking again.  By then it may run on, over the stack memory that its
 *   pcb's frames were in: stale or torn frames, returned with 0.
 * SPIN_HELD and HOLD_THREAD_LOCK refuse capture_timeout_ns = 0 (EINVAL),
 * and so does CLEAR_AFTER_IPI (only the bound ends its wait).
 */
#define SC_MISTAKE_STALE_ANSWER		0x0001u
#define SC_MISTAKE_NO_PROC_LOCK		0x0002u
#define SC_MISTAKE_SPIN_HELD		0x0004u
#define SC_MISTAKE_HOLD_THREAD_LOCK	0x0008u
#define SC_MISTAKE_CLEAR_AFTER_IPI	0x0010u
#define SC_MISTAKE_ANSWER_TARGET	0x0020u
#define SC_MISTAKE_NOCPU_OFFCPU		0x0040u

/*
 * The architecture whose stack_save_td() the machine follows.  On arm64,
 * riscv and powerpc the kernel cannot capture a running thread:
 * stack_save_td() returns EOPNOTSUPP for it, curthread included, so
 * procstat -kk shows <running>.
 * So SC_ARCH_ARM64 takes no setting of that capture: SC_PROTO_NMI, a
 * mistake (hold_lock_across_ipi too) or capture_serial is EINVAL.
 */
#define SC_ARCH_AMD64	0
#define SC_ARCH_ARM64	1

/* Counters of one machine (monotonic).  Fields may be added at the end. */
struct sc_counters {
	uint64_t	switches;	/* context switches */
	uint64_t	sleeps;		/* sc_sleep() calls that slept */
	uint64_t	wakeups; /* threads made runnable by sc_wakeup() */
	uint64_t	swapouts, swapins;
	uint64_t	spin_waits;	/* spin-lock acquisitions that waited */
	uint64_t	blocked_waits; /* thread_lock() that met blocked_lock */
	uint64_t	proc_lock_waits; /* proc-lock acquisitions that
					   waited */
	uint64_t	preemptions;	/* sc_maybe_yield() that switched */
	uint64_t	migrations; /* a thread ran on another CPU than last */
	uint64_t	exits;
	uint64_t	ipis_sent;	/* every vector */
	uint64_t	ipis_received;	/* handler ran with interrupts on */
	uint64_t	ipis_deferred;	/* arrived with interrupts disabled */
	uint64_t	trace_answered;	/* IPI_TRACE handlers that walked */
	uint64_t	trace_stale; /* IPI_TRACE that found no open request */
	uint64_t	captures;	/* sc_stack_save_td() calls returning */
	uint64_t	captures_running; /* ... answered by an IPI */
	uint64_t	retry_nocpu;	/* spins on td_oncpu == NOCPU */
	uint64_t	retry_idle;	/* answer named the idle thread */
	uint64_t	retry_other;	/* answer named another thread */
	uint64_t	retry_offcpu;	/* td not running any more on relock */
	uint64_t	ebusy;		/* EBUSY: running, no kernel frame
					   chain from the interrupted %rbp */
	uint64_t	timeouts;	/* ETIMEDOUT; proc locks a listing
					   did not get in time */
	uint64_t	ebusy_user;	/* ... EBUSY, %rsp outside the kernel
					   stack (sc_user_call: user mode) */
	uint64_t	ebusy_nochain;	/* ... EBUSY, %rsp on the kernel stack
					   but %rbp leads to no frame record
					   (code without frame pointers:
					   glibc's snprintf, malloc...) */
	uint64_t	ipi_blocked;	/* ... ETIMEDOUT: the target CPU's
					   pthread blocked the IPI signal */
	uint64_t	ipi_handler_lost; /* ... ETIMEDOUT: the IPI signal's
					   handler was replaced */
	/* --- stackcap 0.3 --- */
	uint64_t	steals;		/* ULE: threads an idle CPU, or one
					   about to idle (tdq_trysteal()),
					   took from a busy one's run queue */
	uint64_t	nmis_sent;	/* SC_PROTO_NMI: NMIs sent */
	uint64_t	nmis_answered;	/* ... handlers that answered */
	uint64_t	nmi_eagain;	/* ... EAGAIN: depth 0 (user mode,
					   interrupts disabled, no chain) */
	/* --- stackcap 0.4 --- */
	uint64_t	thread_allocs;	/* thread structs allocated anew
					   (idle threads included) */
	uint64_t	thread_reuses;	/* thread structs taken again from
					   the thread zone (reaped, joined) */
	uint64_t	sim_steps;	/* deterministic mode: scheduling
					   points passed (virtual time, one
					   microsecond each) */
	uint64_t	sim_late;	/* ... plain pthreads that joined
					   after create: a real-time event,
					   which the seed does not fix */
	/* --- stackcap 0.5 --- */
	uint64_t	capture_lock_waits; /* requests that waited for their
					   CPU's slot (or, capture_serial,
					   for intr_lock) */
	uint64_t	snapshots;	/* sc_machine_snapshot() calls */
	uint64_t	snapshot_rounds; /* ... rounds of IPIs they sent */
	uint64_t	snapshot_retries; /* ... threads a round's answer did
					   not name, tried again in the
					   next round */
	/* --- stackcap 0.6 --- */
	uint64_t	clock_intrs;	/* clock interrupts handled
					   (hardclock) */
	uint64_t	preempted;	/* involuntary switches: time slice
					   spent, or a better thread */
	uint64_t	sim_ticks;	/* deterministic mode: virtual clock
					   ticks taken (every 1000 steps,
					   docs/determinism.md) */
	uint64_t	sim_takebacks;	/* ... run tokens taken back from a
					   CPU that ran without a point */
};

/*
 * Structs that grow.  The caller allocates struct sc_machine_config,
 * struct sc_counters and struct sc_kstack, and the library may add fields
 * at their end.  Each call that takes one is an inline wrapper that passes
 * the size the caller was compiled with to an exported *_sz function, and
 * the library reads and writes only that many bytes (an older caller's
 * fields beyond get their defaults).  The exported names without _sz keep
 * the layouts of stackcap 0.1, for programs built against its header.
 * Call the wrappers; the _sz functions are their implementation.
 */

/* Defaults.  Context: any. */
SC_EXTERN void	sc_machine_config_init_sz(struct sc_machine_config *cfg,
		    size_t size);

/*
 * Create a machine: cfg->ncpu CPU pthreads, each with its idle thread.
 * Returns 0, EINVAL (bad config, a refused ipi_signo, or a size smaller than
 * stackcap 0.1's struct), EBUSY (a handler that is not stackcap's is
 * installed for cfg->ipi_signo; machines may share one signal), ENOMEM (also
 * when a CPU's alternate signal stack cannot be set up), or EAGAIN
 * (pthread_create()'s, or a deterministic machine created by a pthread that
 * already drives 16).  *mp is NULL on error.  The first deterministic
 * machine of a process also starts one pthread that stays, "sc-ds-watchdog"
 * (every signal blocked; it looks at each deterministic machine's run token
 * every 500 us, and sleeps while there is none: docs/determinism.md); its
 * pthread_create() error is returned too.  A bad config is a field out of
 * its range, or settings that contradict each other (one would silently do
 * nothing): SC_PROTO_NMI with SC_ARCH_ARM64, with capture_serial, or with a
 * mistake of the IPI protocol (all but SC_MISTAKE_NO_PROC_LOCK and
 * SC_MISTAKE_SPIN_HELD); SC_ARCH_ARM64 with a mistake or with
 * capture_serial; sim_pct_depth without a seed (cfg.seed or STACKCAP_SEED).
 * sc_machine_config_error() says which.
 * Context: a plain pthread.
 */
SC_EXTERN int	sc_machine_create_sz(const struct sc_machine_config *cfg,
		    size_t size, struct sc_machine **mp);

/*
 * Why the calling pthread's last sc_machine_create() failed, in one
 * sentence that names the fields ("sim_pct_depth without a seed: ..."):
 * for every EINVAL, and for EBUSY; "" after a success or another error.
 * Never NULL; a static string.  Context: the pthread that called
 * sc_machine_create().
 */
SC_EXTERN const char *sc_machine_config_error(void);

/*
 * Stop every CPU and free everything, whatever state the threads are in.
 * Threads that spin without calling the library are stopped from their
 * CPU's signal handler (IPI_STOP), never where they hold a lock of the
 * host: not inside libc, the loader or a sanitizer runtime, and not inside
 * a library call that holds a pthread mutex or glibc's loader lock (such
 * a thread stops itself when it leaves the call).  A CPU that cannot be
 * stopped within about 3 s (a thread that spins with interrupts disabled,
 * or in libc) is reported on stderr and the machine's memory is leaked
 * rather than hang; the process stays usable.  No other call on m may
 * overlap.  Context: a plain pthread, or a simulated thread of another
 * machine (a thread of m itself: KASSERT), with no spin lock held
 * (KASSERT: a CPU that waits for it could not be stopped).
 */
SC_EXTERN void	sc_machine_destroy(struct sc_machine *m);

/* Read the counters (the first `size` bytes of them).
 * Context: any but a signal handler. */
SC_EXTERN void	sc_machine_counters_sz(struct sc_machine *m,
		    struct sc_counters *c, size_t size);

/* Replace the race-injection hook (NULL: none).  Allocates (the old hook
 * is kept until destroy: a caller may still be running it).
 * Context: any thread but a signal handler. */
SC_EXTERN void	sc_machine_set_hook(struct sc_machine *m, sc_hook_fn fn,
		    void *arg);

/* The machine's number of CPUs.  Context: any. */
SC_EXTERN int	sc_machine_ncpu(const struct sc_machine *m);

/* The machine of a proc or thread.  Context: any. */
SC_EXTERN struct sc_machine *sc_proc_machine(const struct sc_proc *p);

/*
 * The processes of m, in creation order: fills out[0..max) and sets *n to
 * the total number (which may exceed max).  Context: any thread.
 */
SC_EXTERN void	sc_machine_procs(struct sc_machine *m, struct sc_proc **out,
		    size_t max, size_t *n);

/* Create a process.  comm is copied (truncated to 19 chars).  Returns 0,
 * EINVAL or ENOMEM.  Context: any thread. */
SC_EXTERN int	sc_proc_create(struct sc_machine *m, const char *comm,
		    struct sc_proc **pp);
SC_EXTERN int	sc_proc_pid(const struct sc_proc *p);
SC_EXTERN const char *sc_proc_comm(const struct sc_proc *p);

/*
 * The threads of p, in creation order, exited ones included until they are
 * joined (see "The lifetime of a struct sc_thread" below): as
 * sc_machine_procs().  Context: any thread.
 */
SC_EXTERN void	sc_proc_threads(struct sc_proc *p, struct sc_thread **out,
		    size_t max, size_t *n);

/*
 * The proc lock: a simulated sleep mutex (a simulated thread may hold it
 * across a switch and resume on another CPU).  Holding it keeps p's threads
 * from exiting and from being swapped out.  Not recursive.
 * Context: any thread; never with a spin lock held.
 */
SC_EXTERN void	sc_proc_lock(struct sc_proc *p);
SC_EXTERN void	sc_proc_unlock(struct sc_proc *p);
SC_EXTERN int	sc_proc_lock_owned(const struct sc_proc *p);

/*
 * The lifetime of a struct sc_thread (the kernel's thread_zone in
 * sys/kern/kern_thread.c: type-stable memory, reused for new threads).  A
 * thread pointer from sc_thread_create() or sc_ithread_create() names that
 * thread until sc_thread_join() on it returns 0.  Then the struct goes back
 * to its machine's thread zone, and a later create, of any proc of the
 * machine, may take it again: the same pointer then names a new thread,
 * with its own tid, proc, name, stack and generation (sc_thread_gen()).
 * So join a thread once (concurrent joins of it all return 0), and do not
 * use the pointer after its join returned.  A thread that is never joined
 * keeps its struct, "exited", until sc_machine_destroy().  The memory is
 * never freed before that (type-stable): a stale pointer reads a thread,
 * maybe another one, never freed memory.  This is what makes the proc lock
 * necessary to capture a running thread (SC_MISTAKE_NO_PROC_LOCK).
 */

/*
 * Create a thread of p that runs fn(arg) on a kernel stack of its own; it is
 * runnable at once.  When fn returns, the thread exits.  name is copied
 * (truncated to 31 chars).  Returns 0, EINVAL, ENOMEM (also when the
 * stack's guard page cannot be made: each kernel stack costs two mappings
 * of vm.max_map_count).  KASSERT (EINVAL): a spin lock held (a thread
 * lock: the new thread's run queue lock may be it).  Context: any thread.
 */
SC_EXTERN int	sc_thread_create(struct sc_proc *p, const char *name,
		    void (*fn)(void *), void *arg, struct sc_thread **tdp);

/*
 * Create an interrupt thread: it waits for its first run (TDI_IWAIT) until
 * sc_ithread_schedule().  Context: any thread.
 */
SC_EXTERN int	sc_ithread_create(struct sc_proc *p, const char *name,
		    void (*fn)(void *), void *arg, struct sc_thread **tdp);
/* Clear TDI_IWAIT: the thread becomes runnable (unless swapped).
 * Returns 0, or EINVAL if it is not waiting.  Context: any thread. */
SC_EXTERN int	sc_ithread_schedule(struct sc_thread *td);

/*
 * The thread lock (thread_lock()): loads td_lock, locks that spin lock and
 * re-checks that td_lock did not change.  On a simulated thread it disables
 * interrupts on its CPU until the unlock.  Holding it keeps a thread that is
 * not running from starting to run; it does not stop a running thread.
 * Context: any thread.
 */
SC_EXTERN void	sc_thread_lock(struct sc_thread *td);
SC_EXTERN void	sc_thread_unlock(struct sc_thread *td);
SC_EXTERN int	sc_thread_lock_owned(struct sc_thread *td);

/* Accessors: a snapshot, unless the thread lock is held.  td must not be
 * NULL.  Context: any. */
SC_EXTERN enum sc_td_state sc_thread_state(const struct sc_thread *td);
SC_EXTERN int	sc_thread_inhibitors(const struct sc_thread *td);
SC_EXTERN int	sc_thread_oncpu(const struct sc_thread *td);   /* or NOCPU */
SC_EXTERN int	sc_thread_lastcpu(const struct sc_thread *td); /* or NOCPU */
SC_EXTERN int	sc_thread_tid(const struct sc_thread *td);
SC_EXTERN const char *sc_thread_name(const struct sc_thread *td);
SC_EXTERN const char *sc_thread_wmesg(const struct sc_thread *td); /* or NULL */
SC_EXTERN struct sc_proc *sc_thread_proc(const struct sc_thread *td);
SC_EXTERN int	sc_thread_exited(const struct sc_thread *td);
/* The generation of td's struct: 1 for its first thread, one more at each
 * reuse.  Context: any. */
SC_EXTERN unsigned int sc_thread_gen(const struct sc_thread *td);
/* The idle thread of a CPU.  Context: any. */
SC_EXTERN struct sc_thread *sc_machine_idlethread(struct sc_machine *m,
		    int cpu);

/*
 * Priorities (td_priority): 0 is the best, 255 the worst, in FreeBSD's
 * ranges and with its values (sys/sys/priority.h).  A run queue holds 4
 * priorities (RQ_PPQ): threads whose priorities differ by less than 4 are
 * served first come, first served.  At creation a thread has
 * SC_PRI_MIN_TIMESHARE (PUSER), the same for all; an interrupt thread
 * SC_PI_DULL (the priority kern_intr.c gives an INTR_TYPE_MISC
 * interrupt); an idle thread SC_PRI_MAX_IDLE.
 */
#define SC_PRI_MIN		0
#define SC_PRI_MAX		255
#define SC_PRI_MIN_ITHD		0	/* interrupt threads */
#define SC_PRI_MAX_ITHD		63
#define SC_PI_DULL		(SC_PRI_MIN_ITHD + 32)
#define SC_PRI_MIN_KERN		64	/* top-half kernel threads */
#define SC_PRI_MAX_KERN		127
#define SC_PRI_MIN_REALTIME	128
#define SC_PRI_MAX_REALTIME	159
#define SC_PRI_MIN_TIMESHARE	160
#define SC_PRI_MAX_TIMESHARE	223
#define SC_PRI_MIN_IDLE		224
#define SC_PRI_MAX_IDLE		255

/*
 * Set td's priority (sched_prio()): a queued td moves to the tail of its
 * new priority's queue; a running td keeps its CPU until its next switch,
 * even when a queued thread is now better (no preemption).  Returns 0;
 * EINVAL if pri is outside SC_PRI_MIN..SC_PRI_MAX or td is an idle
 * thread.  Takes td's thread lock.  KASSERT (EINVAL): td NULL, or its
 * thread lock held by the caller.  Context: any thread, td itself too.
 */
SC_EXTERN int	sc_thread_set_priority(struct sc_thread *td, int pri);
/* td's priority: a snapshot, unless the thread lock is held.  KASSERT
 * (-1): td NULL.  Context: any. */
SC_EXTERN int	sc_thread_priority(struct sc_thread *td);

/* Wait until td has exited.  Returns 0; EDEADLK if td is the caller, or
 * if the caller holds td's proc lock (td's exit takes it, so the wait
 * would never end: an error to test, as pthread_join()'s EDEADLK, not a
 * KASSERT; refused even when td has exited already, so that the answer
 * never depends on timing); EINVAL if td never exits: an idle thread, or
 * a thread parked by a KASSERT (also when it is parked while we wait).
 * KASSERT (EINVAL): a spin lock held (a thread lock: td's exit, or the
 * switch that lets td run, may need it).  Once it returned 0, td may be
 * reused for a new thread (the lifetime of a struct sc_thread, above):
 * the last of the joins under way gives it back to the thread zone.
 * Takes td's proc lock to unlink it.  Context: any thread (a simulated
 * thread sleeps). */
SC_EXTERN int	sc_thread_join(struct sc_thread *td);

/*
 * Swap td's kernel stack out (mprotect PROT_NONE, TDI_SWAPPED) or in.
 * swapout: 0, EBUSY if td is running, EALREADY if swapped, ESRCH if exited,
 * EINVAL for an idle thread (never swapped), ENOMEM if mprotect() fails
 * (td stays as it was).
 * swapin: 0, EINVAL if not swapped, ENOMEM if mprotect() fails, e.g. at
 * the mapping limit vm.max_map_count, where a swapped-in stack needs one
 * mapping more (td stays swapped).  A runnable thread that is swapped out
 * leaves the run queue until it is swapped in.
 * KASSERTs (EINVAL): swapout with td's proc lock or any spin lock held;
 * swapin with td's thread lock or any other spin lock held (a run
 * queue's lock, which a runnable td goes back to, may be it).
 * Context: any thread.
 */
SC_EXTERN int	sc_thread_swapout(struct sc_thread *td);
SC_EXTERN int	sc_thread_swapin(struct sc_thread *td);

/* --- Inside a simulated thread only ---
 *
 * IPIs are signals to the CPU's pthread: a system call that a simulated
 * thread makes may be interrupted by one.  read() and the like restart
 * (SA_RESTART), but nanosleep(), poll(), select(), epoll_wait() and
 * futex waits fail with EINTR: retry them.  A signal mask belongs to the
 * CPU's pthread, not to the simulated thread: a thread that blocks the IPI
 * signal blocks it for every thread that later runs on that CPU (their
 * captures time out). */

/* Give up the CPU; the thread stays runnable (sched_relinquish()). */
SC_EXTERN void	sc_yield(void);
/* Yield if a runnable thread waits for a CPU (maybe_yield()); call it in
 * loops that spin.  Cheap when nothing waits.  In deterministic mode
 * (cfg.seed) it is a scheduling point, from a plain pthread too (of the
 * deterministic machine it last called into): a loop that waits for the
 * machine must call it, or the machine never runs. */
SC_EXTERN void	sc_maybe_yield(void);
/* One turn of a spin loop that waits for another thread (the kernel's
 * cpu_spinwait()): never switches, so it is legal with interrupts disabled
 * or a spin lock held, where sc_maybe_yield() is not.  In deterministic
 * mode a scheduling point where the caller waits: without one, a loop
 * that spins on a simulated thread keeps the run token until it is taken
 * back (after 5 ms of its CPU time, each time it gets the token).
 * Context: a simulated thread or a plain pthread. */
SC_EXTERN void	sc_cpu_spinwait(void);
/* Is the caller an actor of a deterministic machine (cfg.seed): one of
 * its simulated threads, or a plain pthread whose last call went into it?
 * 1 or 0.  Then time passes at scheduling points alone, and a loop that
 * waits for the machine gains nothing by sleeping between its
 * sc_maybe_yield() calls (sc_test_deadline_poll() does not).
 * Context: any thread. */
SC_EXTERN int	sc_deterministic(void);
/* Move the calling thread to cpu and keep it there (sched_bind()); cpu ==
 * SC_NOCPU unbinds.  Returns 0 or EINVAL. */
SC_EXTERN int	sc_sched_bind(int cpu);
/* Sleep on wchan (sleepq_add + sleepq_wait).  May return spuriously: loop
 * on the condition.  wmesg must stay valid while the thread sleeps.  Not
 * with a spin lock held nor inside sc_spinlock_enter(): KASSERT, as in
 * FreeBSD's mi_switch() (the thread is parked). */
SC_EXTERN void	sc_sleep(const void *wchan, const char *wmesg);
/* Run fn(arg) in "user mode": on a separate user stack, outside the
 * kernel stack, so that an interrupt there finds no kernel frame.  fn may
 * call sc_user_call() again (it nests below on the same user stack, 64 KiB
 * in all) and anything else a simulated thread may call: a thread that
 * sleeps from user mode has its saved %rbp on the user stack, so a
 * capture of it returns 0 with an empty stack. */
SC_EXTERN void	sc_user_call(void (*fn)(void *), void *arg);
/* Disable interrupts on this CPU (spinlock_enter()); nestable.  An IPI that
 * arrives meanwhile is handled at the matching sc_spinlock_exit().  Must
 * not call anything that may switch in between. */
SC_EXTERN void	sc_spinlock_enter(void);
SC_EXTERN void	sc_spinlock_exit(void);
/* critical_enter()/critical_exit(): inside, the thread is not preempted
 * (interrupts stay on; a preemption that a clock interrupt owes it waits
 * for the matching exit, td_owepreempt).  Nestable.  A simulated thread
 * only: KASSERT elsewhere, and for an exit without an enter. */
SC_EXTERN void	sc_critical_enter(void);
SC_EXTERN void	sc_critical_exit(void);
/* This CPU's number (PCPU_GET(cpuid)). */
SC_EXTERN int	sc_curcpu(void);

/* --- From anywhere (a simulated thread or a plain pthread) --- */

/* The simulated thread running the caller, or NULL on a plain pthread. */
SC_EXTERN struct sc_thread *sc_curthread(void);
/* Wake every thread asleep on wchan, in every machine; from a deterministic
 * machine's thread, or a plain pthread whose last call went into one, in
 * that machine and the real ones only (docs/determinism.md).  A swapped
 * sleeper stays swapped (and off the run queue) until swapped in.  KASSERT
 * (nothing done): a spin lock held (a thread lock: a sleep-queue chain
 * lock or a run queue's lock, which the wakeup may need). */
SC_EXTERN void	sc_wakeup(const void *wchan);

/*
 * KASSERT failures call fn(msg) (NULL restores the default, which prints
 * the message to stderr and aborts).  If fn returns on a simulated thread,
 * that thread is parked for good (it never runs again; sc_thread_join()
 * on it returns EINVAL); if it returns on a plain pthread, the failing
 * public call returns EINVAL (a void one just returns) having done
 * nothing, with every lock as the caller held it: each call checks its
 * preconditions before it acts.  A parked thread gives back the spin locks
 * and the proc locks it held.  fn must not long-jump across stacks; on a
 * plain pthread it may use CMocka's expect_assert_failure().
 * Context: any thread.
 */
SC_EXTERN void	sc_set_panic_handler(void (*fn)(const char *msg));

/* ------------------------------------------------------------------------
 * The protocol trace (an extension: docs/design.md, "Beyond the kernel")
 * ------------------------------------------------------------------------ */

/*
 * Trace events.  `cpu` is the CPU the event happened on (SC_NOCPU for a
 * plain pthread), `tid` the thread concerned; the arguments per event:
 */
enum sc_trace_event {
	SC_TRACE_CAPTURE_BEGIN = 0, /* requester; tid target; a0 requester
				   tid */
	SC_TRACE_PCB_WALK,	/* requester; tid target; a0 depth */
	SC_TRACE_LOCK_DROPPED,	/* requester dropped tid's thread lock */
	SC_TRACE_LOCK_TAKEN,	/* requester took tid's thread lock again */
	SC_TRACE_NOCPU,		/* requester; tid RUNNING but NOCPU: spin;
				   a0 0: a streak of spins begins; else
				   it ended after a0 spins, a1 the CPU */
	SC_TRACE_IPI_SENT,	/* sender; tid target; a0 cpu; a1 IPI id */
	SC_TRACE_IPI_DEFERRED,	/* cpu had interrupts off; tid interrupted */
	SC_TRACE_IPI_RECEIVED,	/* cpu; tid interrupted; a0 rbp; a1 IPI id */
	SC_TRACE_WALK_DONE,	/* handler; tid walked; a0 depth */
	SC_TRACE_ANSWER_PUBLISHED, /* handler; tid published */
	SC_TRACE_STALE_IPI,	/* handler found no open request for its cpu */
	SC_TRACE_ANSWER_SEEN,	/* requester; tid target; a0 answer's tid */
	SC_TRACE_RETRY,		/* requester; tid target; a0 answer's tid;
				   a1 cause: 1 idle, 2 other thread */
	SC_TRACE_TIMEOUT,	/* requester; tid target; a0 bound (ns) */
	SC_TRACE_CAPTURE_DONE,	/* requester; tid target; a0 error; a1 depth */
	SC_TRACE_SWITCH,	/* cpu; tid old thread; a0 new thread's tid */
	SC_TRACE_STATE,		/* tid; a0 old state; a1 new state */
	SC_TRACE_THREAD_REUSE,	/* creator; tid the new thread; a0 the tid
				   of the struct's previous thread; a1 the
				   struct's generation (sc_thread_gen()) */
	SC_TRACE_SWAP,		/* tid; a0 1 swapped out, 0 swapped in */
	SC_TRACE_SNAPSHOT_BEGIN, /* requester; a0 threads to look at */
	SC_TRACE_SNAPSHOT_ROUND, /* requester; a0 round (1, 2...); a1 the
				   CPUs interrupted in it */
	SC_TRACE_SNAPSHOT_DONE,	/* requester; a0 threads listed; a1 rounds */
	SC_TRACE_PREEMPT,	/* cpu; tid preempted by a clock interrupt's
				   slice end (a0 1) or at a later safe point
				   (a0 0) */
	SC_TRACE_NEVENTS
};

struct sc_trace_record {
	uint64_t	seq;		/* order of the events, from 0 */
	uint64_t	ts_ns;		/* CLOCK_MONOTONIC; in deterministic
					   mode virtual time (one step, one
					   microsecond) */
	int		cpu;		/* or SC_NOCPU */
	int		tid;		/* or 0 */
	int		event;		/* enum sc_trace_event */
	int		host_tid;	/* a plain pthread's event: its Linux
					   tid (gettid()), which names its
					   track in the JSON; else 0 (in the
					   padding of 0.5: the size is the
					   same) */
	uint64_t	arg0, arg1;
};

/*
 * The symbolic name of an error stackcap returns: "0", "EAGAIN",
 * "EALREADY", "EBUSY", "ECHILD", "EDEADLK", "EINTR", "EINVAL", "EIO",
 * "ENOENT", "ENOMEM", "EOPNOTSUPP" (ENOTSUP too: the same value on Linux),
 * "EPERM", "ESRCH", "ETIMEDOUT"; "E?" for any other value.  This covers
 * the errors the library passes on from the system (pthread_create()'s
 * EAGAIN and EPERM, say).  Context: any.
 */
SC_EXTERN const char *sc_errname(int error);

/* The name of an event ("IPI_SENT"...), or "?".  Context: any. */
SC_EXTERN const char *sc_trace_event_name(int event);

/*
 * The events still in m's ring (the last cfg.trace_events ones), oldest
 * first: fills out[0..max) and returns how many it filled.  0 when the
 * trace is off.  Context: any thread but a signal handler.
 */
SC_EXTERN size_t sc_trace_snapshot(struct sc_machine *m,
		    struct sc_trace_record *out, size_t max);

/* Forget the events recorded so far.  Context: any thread. */
SC_EXTERN void	sc_trace_clear(struct sc_machine *m);

/*
 * Print the trace as a narrated timeline, one line per event, in the
 * kernel's words ("cpu1: IPI_TRACE received, interrupted td 100012 at rbp
 * 0x...").  Returns 0, ENOENT when the trace is off, or EIO.
 * Context: any thread but a signal handler.
 */
SC_EXTERN int	sc_trace_print(struct sc_machine *m, FILE *fp);

/*
 * Write the trace as Chrome trace-event JSON, for Perfetto,
 * chrome://tracing, Chrome DevTools and speedscope: one track per CPU
 * (the threads that ran there) and one per plain pthread (by its Linux
 * tid), every event an instant, and slices and
 * flows for the captures and handlers whose events the ring still holds
 * (docs/design.md, "The protocol trace", has the format).  Returns 0,
 * ENOENT when the trace is off, ENOMEM, or EIO.
 * Context: any thread but a signal handler.
 */
SC_EXTERN int	sc_trace_write_json(struct sc_machine *m, FILE *fp);

/*
 * Draw the trace as an SVG picture, a sequence diagram: a lane per CPU
 * with the slices of the threads that ran there (named), a lane per
 * requester on a plain pthread (the trace does not name one: captures one
 * after the other share a lane, overlapping ones get one each), one row
 * per event in the ring's order with its time and a label in the kernel's
 * words (its tooltip the narrated line), and an arrow from each IPI_SENT
 * to the IPI_RECEIVED of its IPI (dashed to the bottom of its CPU's lane
 * when the ring has none).  title heads the picture (NULL: a default).
 * Self-contained (no script, no external font).  Returns 0, ENOENT when
 * the trace is off, ENOMEM, or EIO.
 * Context: any thread but a signal handler.
 */
SC_EXTERN int	sc_trace_write_svg(struct sc_machine *m, FILE *fp,
		    const char *title);

/* ------------------------------------------------------------------------
 * Capturing a thread's stack (sys/x86/x86/stack_machdep.c)
 * ------------------------------------------------------------------------ */

/*
 * stack_save_td(): capture td's kernel stack.  Called with td's thread lock
 * held, and with its proc lock held too when td may be running; returns
 * with td's thread lock held again.  Holds no spin lock but the thread
 * lock.  Returns:
 *   0          st holds the stack (it may be empty: a thread that never
 *              ran, or one that slept from user mode);
 *   EBUSY      td was running and the interrupted %rbp led to no kernel
 *              frame record (the kernel's rule: depth 0).  That is user
 *              mode (sc_user_call: %rsp outside the kernel stack, counted
 *              in ebusy_user) or code without frame pointers, such as
 *              glibc's snprintf() or malloc() (%rsp on the kernel stack,
 *              ebusy_nochain); such code may also, rarely, give one stale
 *              frame and 0.  WALK_DONE's a1 in the trace tells the two;
 *   ETIMEDOUT  the whole call took capture_timeout_ns (the wait for the
 *              capture mutex included) without an answer; when the target
 *              CPU's pthread blocks the IPI signal (a simulated thread
 *              blocked it) or the program replaced its handler, a line on
 *              stderr says so once and ipi_blocked/ipi_handler_lost count;
 *              any other timeout prints once per machine what was seen of
 *              that pthread (Linux state, signal pending, in the handler,
 *              interrupts disabled), never "blocks" unless it does;
 *   ESRCH      td has exited;
 *   EOPNOTSUPP td is running and cfg.arch is SC_ARCH_ARM64 (curthread
 *              too), as the kernel's stack_save_td() on arm64.
 * KASSERTs (EINVAL): thread lock not held, td swapped (also when found so
 * after the thread lock was dropped, which only SC_MISTAKE_NO_PROC_LOCK
 * allows), proc lock not held while td is running (unless
 * SC_MISTAKE_NO_PROC_LOCK), another spin lock held, a capture from a hook
 * inside a capture of the same machine, a running td of a machine made
 * before fork().  Context: any thread but a signal handler.
 */
SC_EXTERN int	sc_stack_save_td(struct sc_stack *st, struct sc_thread *td);

/* kern.proc.kstack (sys/sys/user.h) */
enum {
	SC_KKST_STATE_STACKOK = 0,	/* stack is valid */
	SC_KKST_STATE_SWAPPED,		/* stack swapped out */
	SC_KKST_STATE_RUNNING		/* capture failed: running */
};
struct sc_kstack {
	int		tid;
	int		state;
	char		tdname[32];
	struct sc_stack	stack;
	int		pid;		/* stackcap 0.5: the thread's
					   process (kinfo_kstack has none:
					   procstat asked for it) */
	int		kk_spare[15];	/* zero; room to grow, as
					   kinfo_kstack's kkst_ispare */
};

/*
 * sysctl_kern_proc_kstack(): for every live thread of p, its tid, name,
 * state and stack, with the kernel's locking: the tids are snapshotted
 * under the proc lock; then each thread is found again by tid with the
 * proc lock held and captured under its thread lock, and its entry is
 * filled with no lock held.  So a thread that exits meanwhile is skipped,
 * one created after the snapshot is not listed, and the proc lock is not
 * held from one entry to the next.  Fills out[0..max) and sets *n to the
 * number of threads listed (which may exceed max).  out[] elements are
 * elsize bytes apart (the wrapper sc_proc_kstack() passes
 * sizeof(struct sc_kstack)); out may be NULL when max is 0 (*n alone).
 * capture_timeout_ns bounds the whole call, its proc-lock waits included
 * (the kernel's waits have no bound): a running thread not captured by
 * then is SC_KKST_STATE_RUNNING with depth 0; if p's proc lock, held by
 * another thread, is not had by then, the call stops there and returns
 * ETIMEDOUT, with out[] and *n holding the threads listed so far (maybe
 * none).  Returns 0, ETIMEDOUT (above); EINVAL for a bad argument, with no
 * KASSERT (p or n NULL, out NULL with max > 0, elsize smaller than
 * stackcap 0.1's struct); EINVAL (KASSERT) when the caller holds p's proc
 * lock or a spin lock.  *n is set only on 0 and ETIMEDOUT.
 * Context: any thread.
 */
SC_EXTERN int	sc_proc_kstack_sz(struct sc_proc *p,
		    struct sc_kstack *out, size_t elsize, size_t max,
		    size_t *n);

/*
 * procstat -kk -a in one round: one entry per live thread of every process
 * of m (the idle threads' included), ordered by pid, then tid, with the
 * states and the locking of sc_proc_kstack().  Every CPU that runs a
 * listed thread is interrupted in the same round, so the call costs about
 * one signal round trip, not one per running thread; a thread that
 * switched off meanwhile is looked at again in the next round.  The proc
 * locks of the threads still to capture stay held from round to round
 * (taken in pid order).  docs/protocol.md, "The snapshot", has the steps.
 *
 * What it guarantees: each stack was true at some instant within the call,
 * and is the stack of the thread its entry names (the kernel's identity
 * rule, per slot); the stacks are not of one global instant.  A thread
 * created during the call is not listed; one that exits before it is
 * looked at is skipped.  capture_timeout_ns bounds the whole call, its
 * proc-lock waits included: a thread not captured by then is
 * SC_KKST_STATE_RUNNING with depth 0, as is one running with no kernel
 * frame chain (EBUSY for sc_stack_save_td()).  A process whose proc lock
 * another thread holds past the bound is left out (its threads cannot be
 * found without that lock): every other process is listed, and the call
 * returns ETIMEDOUT, so that an incomplete list is never taken for a whole
 * one (the pid field tells which processes are there).
 * With cfg.capture_serial, a mistake, SC_PROTO_NMI or SC_ARCH_ARM64, the
 * snapshot is the kernel's: sc_proc_kstack() of each process in turn.
 *
 * out, elsize, max and *n are as for sc_proc_kstack() (only the first
 * max threads are captured).  Returns 0; ETIMEDOUT (a process left out:
 * out[] and *n hold the others); EINVAL as sc_proc_kstack() (m for p),
 * and (KASSERT) when the caller holds any proc lock of m or is inside a
 * capture of m; or ENOMEM.  Context: a plain pthread or a simulated
 * thread (of m, or of another machine), not a signal handler.
 */
SC_EXTERN int	sc_machine_snapshot_sz(struct sc_machine *m,
		    struct sc_kstack *out, size_t elsize, size_t max,
		    size_t *n);

/* ------------------------------------------------------------------------
 * Versions, and the wrappers of the structs that grow
 * ------------------------------------------------------------------------ */

#define STACKCAP_VERSION_MAJOR	0
#define STACKCAP_VERSION_MINOR	5
#define STACKCAP_VERSION_PATCH	0
/* (MAJOR << 16) | (MINOR << 8) | PATCH, for #if comparisons. */
#define STACKCAP_VERSION_HEX	((STACKCAP_VERSION_MAJOR << 16) |	\
	(STACKCAP_VERSION_MINOR << 8) | STACKCAP_VERSION_PATCH)

/* The version of the library the program runs with (STACKCAP_VERSION_HEX
 * of its header), and as "0.5.0".  Context: any. */
SC_EXTERN unsigned int sc_version(void);
SC_EXTERN const char *sc_version_string(void);

#if defined(SC_BUILDING_LIBRARY)
/* The entry points of stackcap 0.1, with its struct sizes, and
 * sc_machine_snapshot() with 0.5's (the release that added it). */
SC_EXTERN void	sc_machine_config_init(struct sc_machine_config *cfg);
SC_EXTERN int	sc_machine_create(const struct sc_machine_config *cfg,
		    struct sc_machine **mp);
SC_EXTERN void	sc_machine_counters(struct sc_machine *m,
		    struct sc_counters *c);
SC_EXTERN int	sc_proc_kstack(struct sc_proc *p, struct sc_kstack *out,
		    size_t max, size_t *n);
SC_EXTERN int	sc_machine_snapshot(struct sc_machine *m,
		    struct sc_kstack *out, size_t max, size_t *n);
#else
static inline void
sc_machine_config_init(struct sc_machine_config *cfg)
{
	sc_machine_config_init_sz(cfg, sizeof(*cfg));
}

static inline int
sc_machine_create(const struct sc_machine_config *cfg, struct sc_machine **mp)
{
	return (sc_machine_create_sz(cfg, sizeof(*cfg), mp));
}

static inline void
sc_machine_counters(struct sc_machine *m, struct sc_counters *c)
{
	sc_machine_counters_sz(m, c, sizeof(*c));
}

static inline int
sc_proc_kstack(struct sc_proc *p, struct sc_kstack *out, size_t max,
    size_t *n)
{
	return (sc_proc_kstack_sz(p, out, sizeof(*out), max, n));
}

static inline int
sc_machine_snapshot(struct sc_machine *m, struct sc_kstack *out, size_t max,
    size_t *n)
{
	return (sc_machine_snapshot_sz(m, out, sizeof(*out), max, n));
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* !STACKCAP_H */
