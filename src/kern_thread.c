/*
 * Threads: creation, the kernel stacks, exit and reaping, join, parking,
 * and the thread accessors.
 *
 * Kernel counterparts: sys/kern/kern_thread.c (thread_alloc() from
 * thread_zone, thread_ctor(), thread_free(), thread_link()/thread_unlink(),
 * thread_exit(), thread_stash()/thread_reap(), thread_suspend_one()),
 * sys/kern/kern_fork.c (fork_exit()), sys/vm/vm_glue.c (kernel stacks and
 * their cache, vm_thread_new()), sys/kern/kern_intr.c (ithread_create(),
 * ithread_schedule()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sc_internal.h"
#include "sc_futex.h"
#include "sc_sanitizer.h"

static void	sc_kstack_free(struct sc_machine *m, void *map);

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
	return (atomic_load(&td->td_tid));
}

unsigned int
sc_thread_gen(const struct sc_thread *td)
{
	return (atomic_load(&td->td_gen));
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
	return (atomic_load(&td->td_proc));
}

int
sc_thread_exited(const struct sc_thread *td)
{
	return (atomic_load(&td->td_exited) != 0);
}

/* ------------------------------------------------------------------------
 * Kernel stacks, creation
 * ------------------------------------------------------------------------ */

/*
 * Kernel stacks, with a cache of the stacks of reaped threads (the kernel
 * keeps one too, vm_thread_stack_create()/kstack_cache), and behind it
 * the process's (vm_mapcache.c), which outlives the machine.  The thread
 * structs have a cache of their own, the thread zone (below).
 */
static void *
sc_kstack_alloc(struct sc_machine *m)
{
	void *map = NULL;

	sc__host_lock(&m->m_list_mtx);
	if (m->m_nkstack_cache > 0)
		map = m->m_kstack_cache[--m->m_nkstack_cache];
	sc__host_unlock(&m->m_list_mtx);
	if (map != NULL)
		return (map);
	return (sc__map_get(SC_PAGE_SIZE + m->m_kstack_len, true));
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
	sc__map_put(map, SC_PAGE_SIZE + m->m_kstack_len, true);
}

/* Give td's user stack back (sc__map_put() forgets the ASan poisoning of
 * its frames: a thread stopped in user mode never returned from them). */
void
sc__ustack_free(struct sc_thread *td)
{
	if (td->td_ustack == NULL)
		return;
	sc__map_put(td->td_ustack, td->td_ustack_len, false);
	td->td_ustack = NULL;
}

/*
 * The thread zone (thread_zone, a UMA zone with UMA_ZONE_NOFREE in
 * sys/kern/kern_thread.c): the structs of threads that were reaped and
 * joined wait on m_thread_free, the last released first, for the next
 * thread of any proc.  Their memory is never freed before the machine is
 * destroyed: type-stable, so that a stale pointer reads a thread struct,
 * perhaps of another thread, never freed memory.  NULL when it is empty.
 */
static struct sc_thread *
sc_thread_zone_take(struct sc_machine *m, uint32_t *prevtid)
{
	struct sc_thread *td;

	sc__host_lock(&m->m_list_mtx);
	if ((td = TAILQ_FIRST(&m->m_thread_free)) != NULL) {
		TAILQ_REMOVE(&m->m_thread_free, td, td_plist);
		m->m_nthread_free--;
		td->td_released = false;
	}
	sc__host_unlock(&m->m_list_mtx);
	if (td != NULL)
		*prevtid = (uint32_t)atomic_load(&td->td_tid);
	return (td);
}

/*
 * thread_free() after the last join: unlink td from its proc
 * (thread_unlink(), under the proc lock, which a walk of p_threads may hold
 * instead of the list lock) and give it to the thread zone.  The caller
 * has counted itself out of td_joiners, and does not hold the proc lock
 * (sc_thread_join() refuses that).
 */
static void
sc_thread_zone_put(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;
	struct sc_proc *p = atomic_load(&td->td_proc);

	sc_proc_lock(p);
	sc__host_lock(&m->m_list_mtx);
	if (td->td_joiners == 0 && !td->td_released) {
		td->td_released = true;
		TAILQ_REMOVE(&p->p_threads, td, td_plist);
		p->p_nthreads--;
		TAILQ_INSERT_HEAD(&m->m_thread_free, td, td_plist);
		m->m_nthread_free++;
	}
	sc__host_unlock(&m->m_list_mtx);
	sc_proc_unlock(p);
}

/*
 * thread_alloc(): a struct from the thread zone, or new memory, then what
 * thread_ctor() and vm_thread_new() do for the new thread: a tid, a kernel
 * stack, the first frame.  A reused struct is INACTIVE and on no list:
 * only a stale pointer reads it meanwhile, so the fields that such a
 * reader may meet are stored atomically, and td_lock always points at a
 * lock (sched_newthread() replaces one lock by another).
 */
int
sc__thread_alloc(struct sc_proc *p, const char *name, void (*fn)(void *),
    void *arg, bool idle, struct sc_thread **tdp)
{
	struct sc_machine *m = p->p_machine;
	struct sc_thread *td;
	uint32_t prevtid = 0;
	uintptr_t *sp;
	void *map;
	bool reused;

	map = sc_kstack_alloc(m);
	if (map == NULL)
		return (ENOMEM);
	td = sc_thread_zone_take(m, &prevtid);
	reused = td != NULL;
	if (!reused && (td = calloc(1, sizeof(*td))) == NULL) {
		sc_kstack_free(m, map);
		return (ENOMEM);
	}
	if (reused) {
		/* A new TSan fiber: the old one's shadow stack still holds
		 * the exit path of the previous thread. */
		sc__san_tsan_destroy_fiber(td->td_tsan_fiber);
		atomic_fetch_add(&td->td_gen, 1);
	} else
		atomic_init(&td->td_gen, 1);
	td->td_kstack_maplen = SC_PAGE_SIZE + m->m_kstack_len;
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
	atomic_store(&td->td_proc, p);
	td->td_fn = fn;
	td->td_arg = arg;
	td->td_idle = idle;
	td->td_bound = SC_NOCPU;
	/* One timesharing priority for every thread, so that threads run
	 * in the order they became runnable; idle threads the worst, as
	 * kern_idle.c's idle_setup() gives them. */
	atomic_store(&td->td_priority, idle ? SC_PRI_MAX_IDLE :
	    SC_PRI_MIN_TIMESHARE);
	td->td_runq_bound = false;
	td->td_wchan = NULL;
	atomic_store(&td->td_wmesg, NULL);
	td->td_intr_frame = NULL;
	td->td_ustack = NULL;
	td->td_ustack_len = 0;
	td->td_asan_fake = NULL;
	atomic_store(&td->td_hostlocks, 0);
	atomic_store(&td->td_critnest, 0);
	atomic_store(&td->td_owepreempt, 0);
	td->td_slice = 0;
	td->td_uksp = 0;
	snprintf(td->td_name, sizeof(td->td_name), "%s", name);
	m->m_sched->sched_newthread(td);
	atomic_store(&td->td_state, SC_TDS_INACTIVE);
	atomic_store(&td->td_inhibitors, 0);
	atomic_store(&td->td_oncpu, SC_NOCPU);
	atomic_store(&td->td_lastcpu, SC_NOCPU);
	atomic_store(&td->td_exited, 0);
	td->td_joiners = 0;
	td->td_tsan_fiber = sc__san_tsan_create_fiber();

	sc__host_lock(&m->m_list_mtx);
	atomic_store(&td->td_tid, m->m_nexttid++);
	TAILQ_INSERT_TAIL(&p->p_threads, td, td_plist);
	p->p_nthreads++;
	sc__host_unlock(&m->m_list_mtx);
	if (reused) {
		SC_CNT_INC(m, thread_reuses);
		SC_TRACE(m, SC_TRACE_THREAD_REUSE, sc_curcpu(),
		    atomic_load(&td->td_tid), prevtid,
		    atomic_load(&td->td_gen));
	} else
		SC_CNT_INC(m, thread_allocs);
	*tdp = td;
	return (0);
}

static int
sc_thread_create1(struct sc_proc *p, const char *name, void (*fn)(void *),
    void *arg, bool iwait, struct sc_thread **tdp)
{
	struct sc_machine *m;
	struct sc_thread *td;
	struct sc_spin *held;
	int error;

	if (p == NULL || name == NULL || fn == NULL || tdp == NULL)
		return (EINVAL);
	/* Before anything is done: sched_add() takes a run queue's lock,
	 * which the caller's may be (the kernel's thread_alloc() may sleep,
	 * so no spin lock may be held there either). */
	SC_KASSERT(sc__spin_held_count() == 0, EINVAL, "proc %d: thread "
	    "create with a spin lock held (a thread lock?)", p->p_pid);
	m = p->p_machine;
	if (atomic_load(&m->m_dying))
		return (EINVAL);
	sc__ds_enter(m);
	/* One host section: a stop inside would lose the new thread. */
	sc__host_enter();
	error = sc__thread_alloc(p, name, fn, arg, false, &td);
	if (error == 0) {
		sc_thread_lock(td);
		held = atomic_load(&td->td_lock);
		if (iwait) {
			/* ithread_create()'s thread, at the priority that
			 * kern_intr.c gives an INTR_TYPE_MISC interrupt. */
			atomic_store(&td->td_priority, SC_PI_DULL);
			atomic_store(&td->td_inhibitors, SC_TDI_IWAIT);
			sc__td_set_state(td, SC_TDS_INHIBITED);
		} else
			sc__setrunnable(td);
		sc__spin_unlock(held);
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

	SC_THREAD_UNLOCKED_ARG(td, EINVAL);
	sc_thread_lock(td);
	held = atomic_load(&td->td_lock);
	if ((atomic_load(&td->td_inhibitors) & SC_TDI_IWAIT) == 0)
		error = EINVAL;
	else
		sc__td_uninhibit(td, SC_TDI_IWAIT);
	sc__spin_unlock(held);
	return (error);
}

/* ------------------------------------------------------------------------
 * First run, exit, reaping, join, parking
 * ------------------------------------------------------------------------ */

__attribute__((noreturn)) static void sc_thread_exit(struct sc_thread *td);

/* fork_exit(): a new thread's first code, entered holding the lock its
 * scheduler hands it (sched_fork_exit()). */
void
sc__fork_exit(struct sc_thread *td)
{
	sc__san_finish_switch(NULL);
	td->td_machine->m_sched->sched_fork_exit(td);
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
	sc__ustack_free(td);
	sc__mtx_unlock_as(&td->td_proc->p_mtx, (uintptr_t)td);
	atomic_store(&td->td_exited, 1);
	sc__futex_wake(&td->td_exited, 1 << 30);
	sc_wakeup(td);
}

static int	sc_thread_join_wait(struct sc_thread *td);

/* A thread that will never exit: an idle thread, or a parked one. */
static bool
sc_thread_never_exits(const struct sc_thread *td)
{
	return (td->td_idle || (atomic_load(&td->td_inhibitors) &
	    SC_TDI_SUSPENDED) != 0);
}

/*
 * Wait for td's exit; the last join under way to see it gives td's struct
 * back to the thread zone.  Joins of one thread are counted, so that no
 * struct is reused while a joiner still waits on it.
 */
int
sc_thread_join(struct sc_thread *td)
{
	struct sc_machine *m;
	int error;
	bool last;

	SC_KASSERT(td != NULL, EINVAL, "NULL thread");
	/* A wait with a spin lock held, which td's exit, or the switch
	 * that lets td run, may need: misuse, as in mi_switch(). */
	SC_KASSERT(sc__spin_held_count() == 0, EINVAL, "thread %d: join "
	    "with a spin lock held (a thread lock?)", td->td_tid);
	if (td == sc_curthread())
		return (EDEADLK);
	/*
	 * td's exit takes its proc lock: a join with it held would wait for
	 * ever.  EDEADLK, as pthread_join() reports a deadlock it sees, and
	 * as a self-join here, rather than a KASSERT: holding the proc lock
	 * is not a misuse of the lock, the join is; the caller can test the
	 * error without a panic handler, and a simulated thread is not
	 * parked for it.  Refused even when td has exited already, so that
	 * the answer depends on the caller's locks, never on timing.
	 */
	if (sc_proc_lock_owned(atomic_load(&td->td_proc)))
		return (EDEADLK);
	m = td->td_machine;
	sc__ds_enter(m);
	sc__host_lock(&m->m_list_mtx);
	td->td_joiners++;
	sc__host_unlock(&m->m_list_mtx);
	error = sc_thread_join_wait(td);
	sc__host_lock(&m->m_list_mtx);
	last = --td->td_joiners == 0;
	sc__host_unlock(&m->m_list_mtx);
	if (error == 0 && last)
		sc_thread_zone_put(td);
	return (error);
}

static int
sc_thread_join_wait(struct sc_thread *td)
{
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
	atomic_store(&td->td_critnest, 0);
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
