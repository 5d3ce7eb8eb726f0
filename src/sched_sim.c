/*
 * The simulated machine: CPUs, run queues, threads and their states,
 * context switches, swapping, exit.
 *
 * Kernel counterparts: sys/kern/sched_4bsd.c (one sched_lock for the run
 * queue and every running thread, sched_add, sched_switch, sched_choose,
 * sched_bind), sys/kern/kern_synch.c (mi_switch, setrunnable),
 * sys/kern/kern_thread.c (thread_exit, thread reaping), sys/vm/vm_swapout.c
 * (swapping kernel stacks), sys/kern/kern_idle.c and sched_idletd.
 *
 * Each CPU is a pthread.  It starts on its own stack (the "boot" context),
 * switches to its idle thread and from then on runs simulated threads on
 * their kernel stacks; it switches back to the boot context only to leave
 * the machine at sc_machine_destroy().
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sc_internal.h"
#include "sc_sanitizer.h"

#define SC_PAGE_SIZE	4096
#define SC_USTACK_LEN	(64 * 1024 * SC_SAN_STACK_SCALE)
#define SC_USTACK_MIN	(8 * 1024 * SC_SAN_STACK_SCALE)	/* for one nest */
#define SC_FIRST_TID	100000
#define SC_IDLE_PID	11
#define SC_FIRST_PID	100

static void	sc_kstack_free(struct sc_machine *m, void *map);
static void	sc_ustack_free(struct sc_thread *td);

/* ------------------------------------------------------------------------
 * Futexes
 * ------------------------------------------------------------------------ */

/* Wait while *uaddr == val, at most timeout_ns (0: no bound).  Returns the
 * raw result; callers always re-check their condition. */
long
sc__futex_wait(_Atomic uint32_t *uaddr, uint32_t val, long timeout_ns)
{
	struct timespec ts, *tsp = NULL;

	if (timeout_ns > 0) {
		ts.tv_sec = timeout_ns / 1000000000L;
		ts.tv_nsec = timeout_ns % 1000000000L;
		tsp = &ts;
	}
	return (syscall(SYS_futex, uaddr, FUTEX_WAIT_PRIVATE, val, tsp, NULL,
	    0));
}

/* CLOCK_MONOTONIC in nanoseconds.  Async-signal-safe. */
uint64_t
sc__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}

/* Async-signal-safe. */
void
sc__futex_wake(_Atomic uint32_t *uaddr, int n)
{
	syscall(SYS_futex, uaddr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* ------------------------------------------------------------------------
 * Accessors
 * ------------------------------------------------------------------------ */

struct sc_thread *
sc_curthread(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	return (pc != NULL ? atomic_load_explicit(&pc->pc_curthread,
	    memory_order_relaxed) : NULL);
}

int
sc_curcpu(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	return (pc != NULL ? pc->pc_cpuid : SC_NOCPU);
}

bool
sc__curthread_kstack(struct sc_range *r)
{
	struct sc_thread *td = sc_curthread();

	if (td == NULL)
		return (false);
	*r = td->td_kstack;
	return (true);
}

enum sc_td_state
sc_thread_state(const struct sc_thread *td)
{
	return ((enum sc_td_state)atomic_load(&td->td_state));
}

int
sc_thread_inhibitors(const struct sc_thread *td)
{
	return (atomic_load(&td->td_inhibitors));
}

int
sc_thread_oncpu(const struct sc_thread *td)
{
	return (atomic_load(&td->td_oncpu));
}

int
sc_thread_lastcpu(const struct sc_thread *td)
{
	return (atomic_load(&td->td_lastcpu));
}

int
sc_thread_tid(const struct sc_thread *td)
{
	return (td->td_tid);
}

const char *
sc_thread_name(const struct sc_thread *td)
{
	return (td->td_name);
}

const char *
sc_thread_wmesg(const struct sc_thread *td)
{
	return (atomic_load(&td->td_wmesg));
}

struct sc_proc *
sc_thread_proc(const struct sc_thread *td)
{
	return (td->td_proc);
}

int
sc_thread_exited(const struct sc_thread *td)
{
	return (atomic_load(&td->td_exited) != 0);
}

int
sc_proc_pid(const struct sc_proc *p)
{
	return (p->p_pid);
}

const char *
sc_proc_comm(const struct sc_proc *p)
{
	return (p->p_comm);
}

struct sc_machine *
sc_proc_machine(const struct sc_proc *p)
{
	return (p->p_machine);
}

int
sc_machine_ncpu(const struct sc_machine *m)
{
	return (m->m_ncpu);
}

struct sc_thread *
sc_machine_idlethread(struct sc_machine *m, int cpu)
{
	if (cpu < 0 || cpu >= m->m_ncpu)
		return (NULL);
	return (m->m_pcpu[cpu].pc_idlethread);
}

void
sc_machine_counters_sz(struct sc_machine *m, struct sc_counters *c,
    size_t size)
{
	const uint64_t *src = (const uint64_t *)&m->m_cnt;
	uint64_t *dst = (uint64_t *)c;
	size_t i;

	/* Only what the caller has: an older one has fewer counters. */
	if (size > sizeof(*c))
		size = sizeof(*c);
	for (i = 0; i < size / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

void
sc_machine_counters(struct sc_machine *m, struct sc_counters *c)
{
	sc_machine_counters_sz(m, c, SC__COUNTERS_SIZE_V0);
}

void
sc_machine_set_hook(struct sc_machine *m, sc_hook_fn fn, void *arg)
{
	struct sc_hook *h = NULL, *old;

	if (fn != NULL) {
		h = calloc(1, sizeof(*h));
		SC_KASSERT(h != NULL, , "cannot allocate a hook");
		h->h_fn = fn;
		h->h_arg = arg;
	}
	old = atomic_exchange(&m->m_hook, h);
	if (old == NULL)
		return;
	sc__host_lock(&m->m_list_mtx);
	old->h_next = m->m_hooks_old;
	m->m_hooks_old = old;
	sc__host_unlock(&m->m_list_mtx);
}

void
sc__hook(struct sc_machine *m, enum sc_hook_point pt, struct sc_thread *td)
{
	struct sc_hook *h = atomic_load_explicit(&m->m_hook,
	    memory_order_acquire);

	if (h != NULL)
		h->h_fn(h->h_arg, pt, td);
}

void
sc_machine_procs(struct sc_machine *m, struct sc_proc **out, size_t max,
    size_t *n)
{
	struct sc_proc *p;
	size_t i = 0;

	sc__host_lock(&m->m_list_mtx);
	for (p = m->m_procs; p != NULL; p = p->p_next, i++)
		if (i < max)
			out[i] = p;
	sc__host_unlock(&m->m_list_mtx);
	*n = i;
}

void
sc_proc_threads(struct sc_proc *p, struct sc_thread **out, size_t max,
    size_t *n)
{
	struct sc_thread *td;
	size_t i = 0;

	sc__host_lock(&p->p_machine->m_list_mtx);
	for (td = p->p_threads; td != NULL; td = td->td_plist, i++)
		if (i < max)
			out[i] = td;
	sc__host_unlock(&p->p_machine->m_list_mtx);
	*n = i;
}

/* Change td's state (td's lock held, or td not yet visible). */
void
sc__td_set_state(struct sc_thread *td, enum sc_td_state state)
{
	int old = atomic_exchange(&td->td_state, state);

	if (old != (int)state)
		SC_TRACE(td->td_machine, SC_TRACE_STATE, sc_curcpu(), td->td_tid,
		    old, state);
}

/* ------------------------------------------------------------------------
 * Run queues (sched_4bsd.c: runq_add, sched_add, sched_choose)
 * ------------------------------------------------------------------------ */

/* Wake one idle CPU (pc, or any when pc is NULL) to look at the run queue. */
static void
sc_kick_idle(struct sc_machine *m, struct sc_pcpu *pc)
{
	int i, one = 1;

	for (i = 0; i < m->m_ncpu; i++) {
		struct sc_pcpu *c = pc != NULL ? pc : &m->m_pcpu[i];

		one = 1;
		if (atomic_compare_exchange_strong(&c->pc_idling, &one, 0)) {
			atomic_fetch_add(&c->pc_idle_futex, 1);
			sc__futex_wake(&c->pc_idle_futex, 1);
			return;
		}
		if (pc != NULL)
			return;
	}
}

/* sched_lock held. */
static void
sc_runq_add(struct sc_machine *m, struct sc_thread *td)
{
	struct sc_pcpu *pc;

	sc__td_set_state(td, SC_TDS_RUNQ);
	if (td->td_bound != SC_NOCPU) {
		pc = &m->m_pcpu[td->td_bound];
		td->td_runq_bound = true;
		TAILQ_INSERT_TAIL(&pc->pc_runq, td, td_runq);
		atomic_fetch_add(&pc->pc_runq_len, 1);
		sc_kick_idle(m, pc);
	} else {
		td->td_runq_bound = false;
		TAILQ_INSERT_TAIL(&m->m_runq, td, td_runq);
		atomic_fetch_add(&m->m_runq_len, 1);
		sc_kick_idle(m, NULL);
	}
}

/* sched_lock held. */
static void
sc_runq_remove(struct sc_machine *m, struct sc_thread *td)
{
	struct sc_pcpu *pc;

	if (td->td_runq_bound) {
		pc = &m->m_pcpu[td->td_bound];
		TAILQ_REMOVE(&pc->pc_runq, td, td_runq);
		atomic_fetch_sub(&pc->pc_runq_len, 1);
	} else {
		TAILQ_REMOVE(&m->m_runq, td, td_runq);
		atomic_fetch_sub(&m->m_runq_len, 1);
	}
}

/* sched_lock held: the next thread for pc, removed from its queue. */
static struct sc_thread *
sc_choose(struct sc_machine *m, struct sc_pcpu *pc)
{
	struct sc_thread *td;

	td = TAILQ_FIRST(&pc->pc_runq);
	if (td == NULL)
		td = TAILQ_FIRST(&m->m_runq);
	if (td != NULL)
		sc_runq_remove(m, td);
	else
		td = pc->pc_idlethread;
	sc__td_set_state(td, SC_TDS_RUNNING);
	return (td);
}

static bool
sc_runq_busy(struct sc_machine *m, struct sc_pcpu *pc)
{
	return (atomic_load_explicit(&m->m_runq_len, memory_order_relaxed) +
	    atomic_load_explicit(&pc->pc_runq_len, memory_order_relaxed) > 0);
}

/*
 * sched_add(): td's lock held (any lock), td has no inhibitors.  td goes on
 * a run queue and its td_lock becomes the sched_lock.  The caller still
 * holds the lock it held (it releases that lock, not td's).
 */
void
sc__sched_add(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;
	struct sc_spin *held = atomic_load(&td->td_lock);

	SC_KASSERT(sc__spin_owned(held), , "sched_add: thread %d not locked",
	    td->td_tid);
	if (held != &m->m_sched_lock)
		sc__spin_lock(m, &m->m_sched_lock);
	atomic_store(&td->td_lock, &m->m_sched_lock);
	sc_runq_add(m, td);
	if (held != &m->m_sched_lock)
		sc__spin_unlock(&m->m_sched_lock);
}

/* setrunnable(): td's lock held and no inhibitors left. */
void
sc__setrunnable(struct sc_thread *td)
{
	sc__td_set_state(td, SC_TDS_CAN_RUN);
	sc__sched_add(td);
}

/* ------------------------------------------------------------------------
 * Switching (kern_synch.c mi_switch, sched_4bsd.c sched_switch)
 * ------------------------------------------------------------------------ */

/* Tell the sanitizers about a switch to `to` (fakep NULL: no return). */
static void
sc_fiber_switch(void **fakep, struct sc_range to, void *to_tsan_fiber)
{
	sc__san_start_switch(fakep, to);
	sc__san_tsan_switch(to_tsan_fiber);
}

/*
 * Leave the machine: give up every spin lock, switch to the CPU's boot
 * context, never come back.  Interrupts stay off: no IPI may run on the
 * abandoned thread.  td is the thread running here.
 */
__attribute__((noreturn)) static void
sc_cpu_leave(struct sc_pcpu *pc, struct sc_thread *td)
{
	static _Atomic(struct sc_spin *) nolock;
	struct sc_range boot;

	sc__spin_release_all(pc);
	atomic_store(&pc->pc_spinlock_count, 1);
	boot.lo = (uintptr_t)pc->pc_boot_stack;
	boot.hi = boot.lo + pc->pc_boot_stack_len;
	sc_fiber_switch(NULL, boot, pc->pc_boot_tsan_fiber);
	sc__cpu_switch(&td->td_pcb, &pc->pc_boot_pcb, &nolock, NULL);
	__builtin_unreachable();
}

/* Entered from the IPI_STOP handler, which redirected the thread here. */
__attribute__((noreturn, used)) void
sc__cpu_stop(struct sc_pcpu *pc)
{
	atomic_store(&pc->pc_spinlock_count, 1);
	sc_cpu_leave(pc, atomic_load(&pc->pc_curthread));
}

/*
 * The rule of FreeBSD's mi_switch(): a thread switches holding its thread
 * lock and nothing else, interrupts disabled by that lock alone.  A switch
 * with another spin lock held, or inside sc_spinlock_enter(), would run
 * the next thread with interrupts off for good.
 */
static bool
sc_switch_ok(const struct sc_pcpu *pc)
{
	return (pc->pc_nheld == 1 && atomic_load_explicit(
	    &pc->pc_spinlock_count, memory_order_relaxed) == 1);
}

/*
 * sched_switch(): sched_lock held; choose the next thread and switch to it.
 * Never inlined: like the kernel's, a sleeping thread's stack then reads
 * "mi_switch, sleepq_wait, ..." from its saved %rbp.
 */
__attribute__((noinline)) static void
sc_sched_switch(struct sc_thread *td, struct sc_pcpu *pc, struct sc_spin *tmtx)
{
	struct sc_machine *m = td->td_machine;
	struct sc_thread *newtd;
	bool dying;

	/*
	 * As in sched_ule.c, td_oncpu becomes NOCPU before a yielding thread
	 * leaves the RUNNING state: stack_save_td() may see "RUNNING but
	 * NOCPU" and must spin.
	 */
	atomic_store(&td->td_oncpu, SC_NOCPU);
	sc__hook(m, SC_HOOK_SWITCH_NOCPU, td);
	if (TD_IS_RUNNING(td)) {
		if (td->td_idle)
			sc__td_set_state(td, SC_TDS_CAN_RUN);
		else
			sc_runq_add(m, td);
	}
	newtd = sc_choose(m, pc);
	if (newtd == td) {
		atomic_store(&td->td_oncpu, pc->pc_cpuid);
		return;
	}

	if (atomic_load(&newtd->td_lastcpu) != SC_NOCPU &&
	    atomic_load(&newtd->td_lastcpu) != pc->pc_cpuid)
		SC_CNT_INC(m, migrations);
	atomic_store(&newtd->td_lastcpu, pc->pc_cpuid);
	atomic_store(&newtd->td_oncpu, pc->pc_cpuid);
	atomic_store_explicit(&pc->pc_curthread, newtd, memory_order_relaxed);
	SC_CNT_INC(m, switches);
	SC_TRACE(m, SC_TRACE_SWITCH, pc->pc_cpuid, td->td_tid, newtd->td_tid, 0);

	dying = atomic_load(&td->td_state) == SC_TDS_INACTIVE;
	sc_fiber_switch(dying ? NULL : &td->td_asan_fake, newtd->td_kstack,
	    newtd->td_tsan_fiber);
	sc__cpu_switch(&td->td_pcb, &newtd->td_pcb, &td->td_lock, tmtx);

	/* td runs again, maybe on another CPU, holding the sched_lock. */
	sc__san_finish_switch(td->td_asan_fake);
	sc__spin_handoff(&m->m_sched_lock, td);
}

/*
 * mi_switch(): td == curthread, td's lock held.  If td is still RUNNING it
 * goes back on the run queue (a yield); otherwise its state says why it
 * stops.  Returns when td runs again, with the sched_lock held (td's lock).
 */
void
sc__mi_switch(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;
	struct sc_pcpu *pc = sc__pcpu_get();
	struct sc_spin *tmtx = atomic_load(&td->td_lock);

	SC_KASSERT(sc__spin_owned(tmtx), , "mi_switch: thread %d not locked",
	    td->td_tid);
	SC_KASSERT(sc_switch_ok(pc), , "mi_switch: thread %d switches with "
	    "%d spin locks held and interrupts disabled %d times (a "
	    "sleep inside sc_spinlock_enter() or another thread's lock?)",
	    td->td_tid, pc->pc_nheld, atomic_load(&pc->pc_spinlock_count));
	if (tmtx != &m->m_sched_lock) {
		/*
		 * thread_lock_block(): until cpu_switch() has saved td's
		 * context, td_lock is blocked_lock, so no one can act on td
		 * although we drop its real lock now.
		 */
		sc__spin_lock(m, &m->m_sched_lock);
		atomic_store(&td->td_lock, &sc__blocked_lock);
		sc__spin_unlock(tmtx);
	}
	if (atomic_load(&m->m_dying))
		sc_cpu_leave(pc, td);
	sc_sched_switch(td, pc, tmtx);
	__asm__ volatile("" ::: "memory");	/* keep this frame */
}

/*
 * After every return from a switch, once the sched_lock is dropped: reap
 * the thread that exited on this CPU (thread_stash()/thread_reap()).  It
 * exited holding its proc lock, so that no one saw it gone while holding
 * that lock; release it on its behalf now.
 */
void
sc__switch_done(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();
	struct sc_thread *td;
	void *map;

	if (pc == NULL || (td = pc->pc_deadthread) == NULL)
		return;
	pc->pc_deadthread = NULL;
	/*
	 * Nothing reads a reaped thread's stacks: it is INACTIVE, so
	 * stack_save_td() answers ESRCH without a walk.  The map is
	 * forgotten before the free: sc_kstack_free() takes a host lock, at
	 * whose end a dying machine may stop this thread, and
	 * sc_machine_free() must not unmap the stack a second time.
	 */
	map = td->td_kstack_map;
	td->td_kstack_map = NULL;
	sc_kstack_free(td->td_machine, map);
	sc_ustack_free(td);
	sc__mtx_unlock_as(&td->td_proc->p_mtx, (uintptr_t)td);
	atomic_store(&td->td_exited, 1);
	sc__futex_wake(&td->td_exited, 1 << 30);
	sc_wakeup(td);
}

/* fork_exit(): a new thread's first code, entered holding the sched_lock. */
__attribute__((noreturn)) static void sc_thread_exit(struct sc_thread *td);

void
sc__fork_exit(struct sc_thread *td)
{
	sc__san_finish_switch(NULL);
	sc__spin_handoff(&td->td_machine->m_sched_lock, td);
	sc_thread_unlock(td);
	sc__switch_done();
	td->td_fn(td->td_arg);
	sc_thread_exit(td);
}

/* thread_exit(): the proc lock keeps a thread from exiting. */
static void
sc_thread_exit(struct sc_thread *td)
{
	sc_proc_lock(td->td_proc);
	sc_thread_lock(td);
	sc__td_set_state(td, SC_TDS_INACTIVE);
	sc__pcpu_get()->pc_deadthread = td;
	SC_CNT_INC(td->td_machine, exits);
	sc__mi_switch(td);
	/* Only a machine that is being destroyed ever gets here. */
	abort();
}

/*
 * A parked thread gives back the proc locks it holds, as it gives back its
 * spin locks: otherwise no other thread of those processes could ever exit
 * or be swapped, and sc_proc_kstack() on them would never return.
 */
static void
sc_park_release_proc_locks(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;
	struct sc_proc *p, *held[16];
	int i, n = 0;

	sc__host_lock(&m->m_list_mtx);
	for (p = m->m_procs; p != NULL && n < 16; p = p->p_next)
		if (atomic_load(&p->p_mtx.mx_owner) == (uintptr_t)td)
			held[n++] = p;
	sc__host_unlock(&m->m_list_mtx);
	for (i = 0; i < n; i++)
		sc__mtx_unlock_as(&held[i]->p_mtx, (uintptr_t)td);
}

/* Park the calling thread for good (a KASSERT handler returned). */
void
sc__thread_park(struct sc_thread *td)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	sc__spin_release_all(pc);
	atomic_store(&pc->pc_spinlock_count, 0);
	sc_park_release_proc_locks(td);
	/*
	 * Joiners learn that td will never exit (sc_thread_join() returns
	 * EINVAL): the inhibitor first, then the wake, with no lock held
	 * (sc_wakeup() takes a chain lock).  td stays RUNNING until the
	 * switch, so no capturer walks a pcb that is not saved yet.
	 */
	sc_thread_lock(td);
	atomic_fetch_or(&td->td_inhibitors, SC_TDI_SUSPENDED);
	sc_thread_unlock(td);
	sc_wakeup(td);
	sc__futex_wake(&td->td_exited, 1 << 30);
	sc_thread_lock(td);
	sc__td_set_state(td, SC_TDS_INHIBITED);
	sc__mi_switch(td);
	abort();
}

void
sc_yield(void)
{
	struct sc_thread *td = sc_curthread();

	SC_KASSERT(td != NULL, , "sc_yield outside a simulated thread");
	sc_thread_lock(td);
	sc__mi_switch(td);
	sc_thread_unlock(td);
	sc__switch_done();
}

void
sc_maybe_yield(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	if (pc == NULL)
		return;
	sc__san_poll_signals(pc);
	if (!sc_runq_busy(pc->pc_machine, pc) &&
	    !atomic_load_explicit(&pc->pc_machine->m_dying,
	    memory_order_relaxed))
		return;
	SC_CNT_INC(pc->pc_machine, preemptions);
	sc_yield();
	__asm__ volatile("" ::: "memory");	/* no tail call: keep the frame */
}

int
sc_sched_bind(int cpu)
{
	struct sc_thread *td = sc_curthread();

	SC_KASSERT(td != NULL, EINVAL, "sc_sched_bind outside a simulated "
	    "thread");
	if (cpu != SC_NOCPU && (cpu < 0 || cpu >= td->td_machine->m_ncpu))
		return (EINVAL);
	sc_thread_lock(td);
	td->td_bound = cpu;
	if (cpu != SC_NOCPU && atomic_load(&td->td_oncpu) != cpu)
		sc__mi_switch(td);
	sc_thread_unlock(td);
	sc__switch_done();
	return (0);
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
		p = mmap(NULL, SC_USTACK_LEN, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		SC_KASSERT(p != MAP_FAILED, , "sc_user_call: cannot map a "
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
	}
	sc__user_enter(fn, arg, (void *)top);
}

/* ------------------------------------------------------------------------
 * Threads and processes
 * ------------------------------------------------------------------------ */

/*
 * Kernel stacks, with a cache of the stacks of reaped threads (the kernel
 * keeps one too, vm_thread_stack_create()/kstack_cache).  The thread
 * structs themselves are never reused: they stay type-stable and say
 * "exited" for as long as the machine lives.
 */
static void *
sc_kstack_alloc(struct sc_machine *m)
{
	size_t len = SC_PAGE_SIZE + m->m_kstack_len;
	void *map = NULL;

	sc__host_lock(&m->m_list_mtx);
	if (m->m_nkstack_cache > 0)
		map = m->m_kstack_cache[--m->m_nkstack_cache];
	sc__host_unlock(&m->m_list_mtx);
	if (map != NULL)
		return (map);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (map == MAP_FAILED)
		return (NULL);
	/*
	 * The guard page below the stack: an overflow faults at once.  The
	 * mprotect() splits the mapping in two, which fails at the mapping
	 * limit (vm.max_map_count): no thread without its guard.
	 */
	if (mprotect(map, SC_PAGE_SIZE, PROT_NONE) != 0) {
		(void)munmap(map, len);
		return (NULL);
	}
	return (map);
}

static void
sc_kstack_free(struct sc_machine *m, void *map)
{
	struct sc_range r;

	r.lo = (uintptr_t)map + SC_PAGE_SIZE;
	r.hi = r.lo + m->m_kstack_len;
	sc__san_unpoison(r);
	sc__host_lock(&m->m_list_mtx);
	if (m->m_nkstack_cache < (int)(sizeof(m->m_kstack_cache) /
	    sizeof(m->m_kstack_cache[0]))) {
		m->m_kstack_cache[m->m_nkstack_cache++] = map;
		map = NULL;
	}
	sc__host_unlock(&m->m_list_mtx);
	/* A whole mapping: munmap() splits nothing and cannot fail. */
	if (map != NULL)
		(void)munmap(map, SC_PAGE_SIZE + m->m_kstack_len);
}

/* Unmap td's user stack, forgetting the ASan poisoning of its frames (a
 * thread stopped in user mode never returned from them). */
static void
sc_ustack_free(struct sc_thread *td)
{
	struct sc_range r;

	if (td->td_ustack == NULL)
		return;
	r.lo = (uintptr_t)td->td_ustack;
	r.hi = r.lo + td->td_ustack_len;
	sc__san_unpoison(r);
	(void)munmap(td->td_ustack, td->td_ustack_len);
	td->td_ustack = NULL;
}

static int
sc_thread_alloc(struct sc_proc *p, const char *name, void (*fn)(void *),
    void *arg, bool idle, struct sc_thread **tdp)
{
	struct sc_machine *m = p->p_machine;
	struct sc_thread *td;
	uintptr_t *sp;
	void *map;

	td = calloc(1, sizeof(*td));
	if (td == NULL)
		return (ENOMEM);
	td->td_kstack_maplen = SC_PAGE_SIZE + m->m_kstack_len;
	map = sc_kstack_alloc(m);
	if (map == NULL) {
		free(td);
		return (ENOMEM);
	}
	td->td_kstack_map = map;
	td->td_kstack.lo = (uintptr_t)map + SC_PAGE_SIZE;
	td->td_kstack.hi = (uintptr_t)map + td->td_kstack_maplen;

	/*
	 * The first switch to td pops the six registers that cpu_switch
	 * saves (%rbp = 0, %rbx = td) and returns into fork_trampoline with
	 * %rsp 16-byte aligned, as a call expects.
	 */
	sp = (uintptr_t *)(td->td_kstack.hi - 72);
	sp[0] = 0;				/* %rbp */
	sp[1] = sp[2] = sp[3] = sp[4] = 0;	/* %r15 .. %r12 */
	sp[5] = (uintptr_t)td;			/* %rbx */
	sp[6] = (uintptr_t)sc__fork_trampoline;
	td->td_pcb.pcb_rsp = (uintptr_t)sp;
	td->td_pcb.pcb_rbp = 0;

	td->td_machine = m;
	td->td_proc = p;
	td->td_fn = fn;
	td->td_arg = arg;
	td->td_idle = idle;
	td->td_bound = SC_NOCPU;
	snprintf(td->td_name, sizeof(td->td_name), "%s", name);
	atomic_init(&td->td_lock, &m->m_sched_lock);
	atomic_init(&td->td_state, SC_TDS_INACTIVE);
	atomic_init(&td->td_oncpu, SC_NOCPU);
	atomic_init(&td->td_lastcpu, SC_NOCPU);
	td->td_tsan_fiber = sc__san_tsan_create_fiber();

	sc__host_lock(&m->m_list_mtx);
	td->td_tid = m->m_nexttid++;
	*p->p_threads_tail = td;
	p->p_threads_tail = &td->td_plist;
	p->p_nthreads++;
	sc__host_unlock(&m->m_list_mtx);
	*tdp = td;
	return (0);
}

static int
sc_thread_create1(struct sc_proc *p, const char *name, void (*fn)(void *),
    void *arg, bool iwait, struct sc_thread **tdp)
{
	struct sc_machine *m;
	struct sc_thread *td;
	int error;

	if (p == NULL || name == NULL || fn == NULL || tdp == NULL)
		return (EINVAL);
	m = p->p_machine;
	if (atomic_load(&m->m_dying))
		return (EINVAL);
	/* One host section: a stop inside would lose the new thread. */
	sc__host_enter();
	error = sc_thread_alloc(p, name, fn, arg, false, &td);
	if (error == 0) {
		sc__spin_lock(m, &m->m_sched_lock);
		if (iwait) {
			atomic_store(&td->td_inhibitors, SC_TDI_IWAIT);
			sc__td_set_state(td, SC_TDS_INHIBITED);
		} else
			sc__setrunnable(td);
		sc__spin_unlock(&m->m_sched_lock);
		*tdp = td;
	}
	sc__host_exit();
	return (error);
}

int
sc_thread_create(struct sc_proc *p, const char *name, void (*fn)(void *),
    void *arg, struct sc_thread **tdp)
{
	return (sc_thread_create1(p, name, fn, arg, false, tdp));
}

int
sc_ithread_create(struct sc_proc *p, const char *name, void (*fn)(void *),
    void *arg, struct sc_thread **tdp)
{
	return (sc_thread_create1(p, name, fn, arg, true, tdp));
}

int
sc_ithread_schedule(struct sc_thread *td)
{
	struct sc_spin *held;
	int error = 0;

	SC_KASSERT(td != NULL, EINVAL, "NULL thread");
	SC_KASSERT(!sc_thread_lock_owned(td), EINVAL,
	    "thread %d: the caller holds its thread lock", td->td_tid);
	sc_thread_lock(td);
	held = atomic_load(&td->td_lock);
	if ((atomic_load(&td->td_inhibitors) & SC_TDI_IWAIT) == 0)
		error = EINVAL;
	else if ((atomic_fetch_and(&td->td_inhibitors, ~SC_TDI_IWAIT) &
	    ~SC_TDI_IWAIT) == 0)
		sc__setrunnable(td);
	sc__spin_unlock(held);
	return (error);
}

int
sc_proc_create(struct sc_machine *m, const char *comm, struct sc_proc **pp)
{
	struct sc_proc *p;

	if (m == NULL || comm == NULL || pp == NULL)
		return (EINVAL);
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return (ENOMEM);
	p->p_machine = m;
	snprintf(p->p_comm, sizeof(p->p_comm), "%s", comm);
	sc__mtx_init(&p->p_mtx, "proc lock", &m->m_cnt.proc_lock_waits);
	p->p_threads_tail = &p->p_threads;
	sc__host_lock(&m->m_list_mtx);
	p->p_pid = m->m_nextpid++;
	*m->m_procs_tail = p;
	m->m_procs_tail = &p->p_next;
	m->m_nprocs++;
	sc__host_unlock(&m->m_list_mtx);
	*pp = p;
	return (0);
}

void
sc_proc_lock(struct sc_proc *p)
{
	sc__mtx_lock(&p->p_mtx);
}

void
sc_proc_unlock(struct sc_proc *p)
{
	sc__mtx_unlock(&p->p_mtx);
}

int
sc_proc_lock_owned(const struct sc_proc *p)
{
	return (sc__mtx_owned(&p->p_mtx));
}

/* A thread that will never exit: an idle thread, or a parked one. */
static bool
sc_thread_never_exits(const struct sc_thread *td)
{
	return (td->td_idle || (atomic_load(&td->td_inhibitors) &
	    SC_TDI_SUSPENDED) != 0);
}

int
sc_thread_join(struct sc_thread *td)
{
	SC_KASSERT(td != NULL, EINVAL, "NULL thread");
	if (td == sc_curthread())
		return (EDEADLK);
	for (;;) {
		if (atomic_load(&td->td_exited) != 0)
			return (0);
		if (sc_thread_never_exits(td))
			return (EINVAL);
		if (sc_curthread() != NULL) {
			/* A park or the reap wakes td's channel, after the
			 * change that we re-check under the chain lock. */
			sc__sleepq_lock(td);
			if (atomic_load(&td->td_exited) != 0 ||
			    sc_thread_never_exits(td)) {
				sc__sleepq_release(td);
				continue;
			}
			sc__sleepq_wait(td, "join");
		} else {
			/* The bound re-checks for a park, which does not
			 * change the futex word. */
			sc__futex_wait(&td->td_exited, 0, 100 * 1000 * 1000L);
		}
	}
}

/* ------------------------------------------------------------------------
 * Swapping (vm_swapout.c: swapout(), faultin())
 * ------------------------------------------------------------------------ */

int
sc_thread_swapout(struct sc_thread *td)
{
	struct sc_machine *m;
	int error = 0;

	SC_KASSERT(td != NULL, EINVAL, "NULL thread");
	SC_KASSERT(!sc_proc_lock_owned(td->td_proc), EINVAL,
	    "thread %d: the caller holds its proc lock", td->td_tid);
	SC_KASSERT(sc__spin_held_count() == 0, EINVAL,
	    "thread %d: the caller holds a spin lock (a thread lock?)",
	    td->td_tid);
	m = td->td_machine;
	/* The proc lock keeps threads that may be running from swapping. */
	sc_proc_lock(td->td_proc);
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
			sc_runq_remove(m, td);
		atomic_fetch_or(&td->td_inhibitors, SC_TDI_SWAPPED);
		sc__td_set_state(td, SC_TDS_INHIBITED);
		SC_CNT_INC(m, swapouts);
	}
	sc_thread_unlock(td);
	sc_proc_unlock(td->td_proc);
	return (error);
}

int
sc_thread_swapin(struct sc_thread *td)
{
	struct sc_spin *held;
	int error = 0;

	SC_KASSERT(td != NULL, EINVAL, "NULL thread");
	SC_KASSERT(!sc_thread_lock_owned(td), EINVAL,
	    "thread %d: the caller holds its thread lock", td->td_tid);
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
		if ((atomic_fetch_and(&td->td_inhibitors, ~SC_TDI_SWAPPED) &
		    ~SC_TDI_SWAPPED) == 0)
			sc__setrunnable(td);
	}
	sc__spin_unlock(held);
	return (error);
}

/* ------------------------------------------------------------------------
 * CPUs and the machine
 * ------------------------------------------------------------------------ */

/* sched_idletd(): sleep on the CPU's futex until there is work. */
static void
sc_idle_loop(void *arg)
{
	struct sc_thread *td = sc_curthread();
	struct sc_machine *m = td->td_machine;
	struct sc_pcpu *pc;
	uint32_t seq;

	(void)arg;
	for (;;) {
		pc = sc__pcpu_get();
		atomic_store(&pc->pc_idling, 1);
		seq = atomic_load(&pc->pc_idle_futex);
		if (sc_runq_busy(m, pc) || atomic_load(&m->m_dying)) {
			atomic_store(&pc->pc_idling, 0);
			sc_thread_lock(td);
			sc__mi_switch(td);
			sc_thread_unlock(td);
			sc__switch_done();
			continue;
		}
		/* The bound only limits damage from a lost wake; none is
		 * expected (sched_add bumps the word before waking). */
		sc__futex_wait(&pc->pc_idle_futex, seq, 200 * 1000 * 1000L);
		sc__san_poll_signals(pc);
		atomic_store(&pc->pc_idling, 0);
	}
}

static void *
sc_cpu_main(void *arg)
{
	static _Atomic(struct sc_spin *) nolock;
	struct sc_pcpu *pc = arg;
	struct sc_machine *m = pc->pc_machine;
	struct sc_thread *idle = pc->pc_idlethread;
	pthread_attr_t attr;
	void *addr;
	size_t size;
	int error;

	sc__pcpu_set(pc);
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			pc->pc_boot_stack = addr;
			pc->pc_boot_stack_len = size;
		}
		pthread_attr_destroy(&attr);
	}
	pc->pc_boot_tsan_fiber = sc__san_tsan_current_fiber();
	if ((error = sc__ipi_cpu_init(pc)) != 0) {
		/* No signal stack: sc_machine_create() reports the error. */
		atomic_store(&pc->pc_init_error, error);
		atomic_store(&pc->pc_stopped, 1);
		return (NULL);
	}

	/* The idle thread starts in fork_exit() holding the sched_lock. */
	atomic_store(&pc->pc_curthread, idle);
	sc__spin_lock(m, &m->m_sched_lock);
	sc__td_set_state(idle, SC_TDS_RUNNING);
	atomic_store(&idle->td_oncpu, pc->pc_cpuid);
	atomic_store(&idle->td_lastcpu, pc->pc_cpuid);
	atomic_store(&pc->pc_ktid, (pid_t)syscall(SYS_gettid));
	sc_fiber_switch(&pc->pc_boot_asan_fake, idle->td_kstack,
	    idle->td_tsan_fiber);
	sc__cpu_switch(&pc->pc_boot_pcb, &idle->td_pcb, &nolock, NULL);

	/* sc_cpu_leave() switched back: the machine is being destroyed. */
	sc__san_finish_switch(pc->pc_boot_asan_fake);
	sc__ipi_cpu_fini(pc);
	atomic_store(&pc->pc_stopped, 1);
	return (NULL);
}

static void
sc_machine_config_defaults(struct sc_machine_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ncpu = 2;
	cfg->kstack_pages = 4;
	cfg->ipi_signo = SIGRTMIN + 2;
	cfg->capture_timeout_ns = 1000L * 1000 * 1000;
	cfg->wait_strategy = SC_WAIT_SPIN_SLEEP;
	cfg->wait_spin_ns = 5 * 1000;
}

void
sc_machine_config_init_sz(struct sc_machine_config *cfg, size_t size)
{
	struct sc_machine_config def;

	/* Write only what the caller has. */
	sc_machine_config_defaults(&def);
	memcpy(cfg, &def, size < sizeof(def) ? size : sizeof(def));
}

void
sc_machine_config_init(struct sc_machine_config *cfg)
{
	sc_machine_config_init_sz(cfg, SC__CONFIG_SIZE_V0);
}

static void sc_machine_free(struct sc_machine *m);

int
sc_machine_create(const struct sc_machine_config *cfg, struct sc_machine **mp)
{
	return (sc_machine_create_sz(cfg, SC__CONFIG_SIZE_V0, mp));
}

int
sc_machine_create_sz(const struct sc_machine_config *ucfg, size_t size,
    struct sc_machine **mp)
{
	struct sc_machine_config full, *cfg = &full;
	struct sc_machine *m;
	struct sc_pcpu *pc;
	char name[32];
	int error, i, started;

	if (mp != NULL)
		*mp = NULL;
	if (ucfg == NULL || size < SC__CONFIG_SIZE_V0)
		return (EINVAL);
	/* Read only what the caller has; the fields it lacks: defaults. */
	sc_machine_config_defaults(&full);
	memcpy(&full, ucfg, size < sizeof(full) ? size : sizeof(full));
	if (mp == NULL || cfg->ncpu < 1 ||
	    cfg->ncpu > SC_MAXCPU || cfg->kstack_pages < 1 ||
	    cfg->kstack_pages > 1024 || cfg->capture_timeout_ns < 0 ||
	    cfg->wait_spin_ns < 0 || cfg->wait_strategy < SC_WAIT_SPIN_SLEEP ||
	    cfg->wait_strategy > SC_WAIT_SLEEP ||
	    (cfg->hold_lock_across_ipi && cfg->capture_timeout_ns == 0))
		return (EINVAL);
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return (ENOMEM);
	m->m_cfg = *cfg;
	m->m_ncpu = cfg->ncpu;
	m->m_pid = getpid();
	/* Sanitizers need deeper stacks (FreeBSD adds KSTACK pages too). */
	m->m_kstack_len = (size_t)cfg->kstack_pages * SC_PAGE_SIZE *
	    SC_SAN_STACK_SCALE;
	sc__spin_init(&m->m_sched_lock, "sched lock");
	TAILQ_INIT(&m->m_runq);
	(void)pthread_mutex_init(&m->m_list_mtx, NULL); /* default: no fail */
	m->m_procs_tail = &m->m_procs;
	m->m_nextpid = SC_IDLE_PID;
	m->m_nexttid = SC_FIRST_TID;
	sc__mtx_init(&m->m_capture_mtx, "stack capture", NULL);
	if (cfg->hook != NULL)
		sc_machine_set_hook(m, cfg->hook, cfg->hook_arg);
	if ((error = sc__trace_init(m, cfg->trace_events)) != 0) {
		sc_machine_free(m);
		return (error);
	}
	m->m_pcpu = aligned_alloc(64, sizeof(*m->m_pcpu) * (size_t)m->m_ncpu);
	if (m->m_pcpu == NULL) {
		sc_machine_free(m);
		return (ENOMEM);
	}
	memset(m->m_pcpu, 0, sizeof(*m->m_pcpu) * (size_t)m->m_ncpu);
	error = sc_proc_create(m, "idle", &m->m_idleproc);
	m->m_nextpid = SC_FIRST_PID;
	for (i = 0; error == 0 && i < m->m_ncpu; i++) {
		pc = &m->m_pcpu[i];
		pc->pc_machine = m;
		pc->pc_cpuid = i;
		TAILQ_INIT(&pc->pc_runq);
		snprintf(name, sizeof(name), "idle: cpu%d", i);
		error = sc_thread_alloc(m->m_idleproc, name, sc_idle_loop, NULL,
		    true, &pc->pc_idlethread);
	}
	if (error == 0)
		error = sc__ipi_init(m);
	if (error != 0) {
		sc_machine_free(m);
		return (error);
	}
	for (started = 0; started < m->m_ncpu; started++) {
		error = pthread_create(&m->m_pcpu[started].pc_pthread, NULL,
		    sc_cpu_main, &m->m_pcpu[started]);
		if (error != 0)
			break;
	}
	/* Wait until every CPU runs its idle thread (bounded: 10 s). */
	for (i = 0; i < started; i++) {
		int n;

		pc = &m->m_pcpu[i];
		for (n = 0; n < 10000 && atomic_load(&pc->pc_ktid) == 0 &&
		    atomic_load(&pc->pc_init_error) == 0; n++)
			usleep(1000);
		if (error == 0)
			error = atomic_load(&pc->pc_init_error);
	}
	if (error != 0) {
		m->m_ncpu = started;
		sc_machine_destroy(m);
		return (error);
	}
	*mp = m;
	return (0);
}

/* Send IPI_STOP to CPUs that run a thread, until all have left. */
static bool
sc_machine_stop_cpus(struct sc_machine *m)
{
	struct timespec ts = { 0, 1000 * 1000 };
	struct sc_pcpu *pc;
	bool all;
	int i, round;

	for (round = 0; round < 3000; round++) {	/* about 3 s */
		all = true;
		for (i = 0; i < m->m_ncpu; i++) {
			pc = &m->m_pcpu[i];
			if (atomic_load(&pc->pc_stopped))
				continue;
			all = false;
			atomic_fetch_add(&pc->pc_idle_futex, 1);
			sc__futex_wake(&pc->pc_idle_futex, 1);
			if (atomic_load(&pc->pc_curthread) != pc->pc_idlethread)
				sc__ipi_cpu(pc, SC_IPI_STOP, NULL);
		}
		if (all)
			return (true);
		nanosleep(&ts, NULL);
	}
	return (false);
}

static void
sc_machine_free(struct sc_machine *m)
{
	struct sc_proc *p, *pnext;
	struct sc_thread *td, *tdnext;

	for (p = m->m_procs; p != NULL; p = pnext) {
		pnext = p->p_next;
		for (td = p->p_threads; td != NULL; td = tdnext) {
			tdnext = td->td_plist;
			if (td->td_kstack_map != NULL) {
				sc__san_unpoison(td->td_kstack);
				(void)munmap(td->td_kstack_map,
				    td->td_kstack_maplen);
			}
			sc_ustack_free(td);
			sc__san_tsan_destroy_fiber(td->td_tsan_fiber);
			free(td);
		}
		free(p);
	}
	sc__trace_fini(m);
	sc_machine_set_hook(m, NULL, NULL);
	while (m->m_hooks_old != NULL) {
		struct sc_hook *h = m->m_hooks_old;

		m->m_hooks_old = h->h_next;
		free(h);
	}
	while (m->m_nkstack_cache > 0)
		(void)munmap(m->m_kstack_cache[--m->m_nkstack_cache],
		    SC_PAGE_SIZE + m->m_kstack_len);
	(void)pthread_mutex_destroy(&m->m_list_mtx);	/* unlocked: no fail */
	free(m->m_pcpu);
	free(m->m_nostop);
	free(m);
}

void
sc_machine_destroy(struct sc_machine *m)
{
	struct sc_thread *td;
	int i;

	if (m == NULL)
		return;
	SC_KASSERT(sc_curthread() == NULL ||
	    sc_curthread()->td_machine != m, , "thread %d destroys its own "
	    "machine", sc_curthread()->td_tid);
	/* The CPU pthreads exist only in the process that created m. */
	SC_KASSERT(getpid() == m->m_pid, , "machine of pid %d destroyed in "
	    "pid %d: a machine does not survive fork(); leaking it",
	    (int)m->m_pid, (int)getpid());
	atomic_store(&m->m_dying, 1);
	if (!sc_machine_stop_cpus(m)) {
		for (i = 0; i < m->m_ncpu; i++) {
			if (atomic_load(&m->m_pcpu[i].pc_stopped))
				continue;
			td = atomic_load(&m->m_pcpu[i].pc_curthread);
			fprintf(stderr, "stackcap: sc_machine_destroy: cpu%d "
			    "cannot be stopped: thread %d \"%s\" runs where "
			    "it cannot be interrupted safely (libc, the "
			    "loader, or interrupts disabled); leaking the "
			    "machine rather than hang\n", i, td->td_tid,
			    td->td_name);
		}
		return;
	}
	for (i = 0; i < m->m_ncpu; i++)
		(void)pthread_join(m->m_pcpu[i].pc_pthread, NULL); /* stopped */
	sc__sleepq_remove_machine(m);
	sc__ipi_fini(m);
	sc_machine_free(m);
}
