/*
 * Simulated sleep mutexes: the proc lock and the capture mutex.
 *
 * Kernel counterpart: sys/kern/kern_mutex.c (MTX_DEF mutexes, with the
 * turnstile replaced by a sleep queue on the mutex's address).  A simulated
 * thread may hold one across a switch and resume on another CPU pthread, so
 * these can never be pthread mutexes: a pthread mutex must be unlocked by
 * the pthread that locked it.  A simulated waiter sleeps (its CPU runs
 * other threads); a plain pthread waits on a futex.
 */
#include <errno.h>

#include "sc_internal.h"

/* ------------------------------------------------------------------------
 * Host-locked sections (sc_internal.h)
 * ------------------------------------------------------------------------ */

void
sc__host_enter(void)
{
	struct sc_thread *td = sc_curthread();

	if (td == NULL)
		return;
	/* Only this thread and its CPU's handler read the count. */
	atomic_store_explicit(&td->td_hostlocks, atomic_load_explicit(
	    &td->td_hostlocks, memory_order_relaxed) + 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

void
sc__host_exit(void)
{
	struct sc_thread *td = sc_curthread();
	struct sc_pcpu *pc;
	int n;

	if (td == NULL)
		return;
	atomic_signal_fence(memory_order_seq_cst);
	n = atomic_load_explicit(&td->td_hostlocks, memory_order_relaxed) - 1;
	atomic_store_explicit(&td->td_hostlocks, n, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	/*
	 * An IPI_STOP may have found td inside the section and left it
	 * alone: stop here, where td holds no host lock, with interrupts
	 * on (the same condition under which the IPI would have stopped it).
	 */
	pc = sc__pcpu_get();
	if (n == 0 && atomic_load(&td->td_machine->m_dying) &&
	    atomic_load_explicit(&pc->pc_spinlock_count,
	    memory_order_relaxed) == 0)
		sc__cpu_stop(pc);
}

void
sc__host_lock(pthread_mutex_t *mtx)
{
	sc__host_enter();
	/* Default mutexes: lock and unlock cannot fail when used right. */
	(void)pthread_mutex_lock(mtx);
}

void
sc__host_unlock(pthread_mutex_t *mtx)
{
	(void)pthread_mutex_unlock(mtx);
	sc__host_exit();
}

/* ------------------------------------------------------------------------
 * Simulated sleep mutexes
 * ------------------------------------------------------------------------ */

void
sc__mtx_init(struct sc_mtx *mx, const char *name, uint64_t *waitcnt)
{
	atomic_init(&mx->mx_owner, 0);
	atomic_init(&mx->mx_waiters, 0);
	atomic_init(&mx->mx_futex, 0);
	mx->mx_name = name;
	mx->mx_waitcnt = waitcnt;
}

static bool
sc_mtx_try(struct sc_mtx *mx, uintptr_t self)
{
	uintptr_t zero = 0;

	return (atomic_compare_exchange_strong(&mx->mx_owner, &zero, self));
}

void
sc__mtx_lock(struct sc_mtx *mx)
{
	uintptr_t self = sc__owner_self();
	uint32_t seq;

	/* Checked before the fast path too: whether it sleeps is luck. */
	SC_KASSERT(sc__spin_held_count() == 0, ,
	    "mutex \"%s\" taken with a spin lock held (it may sleep)",
	    mx->mx_name);
	if (sc_mtx_try(mx, self))
		return;
	SC_KASSERT(atomic_load(&mx->mx_owner) != self, ,
	    "mutex \"%s\" recursed", mx->mx_name);
	if (mx->mx_waitcnt != NULL)
		__atomic_fetch_add(mx->mx_waitcnt, 1, __ATOMIC_RELAXED);
	for (;;) {
		if (sc_curthread() != NULL) {
			/*
			 * The chain lock is held from the waiters flag to the
			 * sleep, so an unlock that sees the flag finds us on
			 * the sleep queue.
			 */
			sc__sleepq_lock(mx);
			atomic_store(&mx->mx_waiters, 1);
			if (sc_mtx_try(mx, sc__owner_self())) {
				sc__sleepq_release(mx);
				return;
			}
			sc__sleepq_wait(mx, mx->mx_name);
		} else {
			seq = atomic_load(&mx->mx_futex);
			atomic_store(&mx->mx_waiters, 1);
			if (sc_mtx_try(mx, self))
				return;
			sc__futex_wait(&mx->mx_futex, seq, 0);
		}
		if (sc_mtx_try(mx, sc__owner_self()))
			return;
	}
}

/*
 * Lock mx, or give up at deadline_ns (CLOCK_MONOTONIC): 0 or ETIMEDOUT.
 * Every caller waits on the mutex's futex, a simulated thread too (its CPU
 * pthread blocks, as the requester's answer wait does): the sleep queue
 * has no timeout.  The capture mutex is held for one round trip at a
 * time, so the wait is short, and the bound makes it finite.  A caller
 * may hold spin locks (the teaching mode hold_lock_across_ipi does).
 */
int
sc__mtx_lock_until(struct sc_mtx *mx, uint64_t deadline_ns)
{
	uintptr_t self = sc__owner_self();
	uint64_t now;
	uint32_t seq;

	SC_KASSERT(atomic_load(&mx->mx_owner) != self, EINVAL,
	    "mutex \"%s\" recursed", mx->mx_name);
	for (;;) {
		if (sc_mtx_try(mx, self))
			return (0);
		seq = atomic_load(&mx->mx_futex);
		atomic_store(&mx->mx_waiters, 1);
		if (sc_mtx_try(mx, self))
			return (0);
		now = sc__now_ns();
		if (now >= deadline_ns)
			return (ETIMEDOUT);
		sc__futex_wait(&mx->mx_futex, seq, (long)(deadline_ns - now));
	}
}

/* Release mx on behalf of owner (a thread that exited holding it). */
void
sc__mtx_unlock_as(struct sc_mtx *mx, uintptr_t owner)
{
	SC_KASSERT(atomic_load(&mx->mx_owner) == owner, ,
	    "mutex \"%s\" not owned", mx->mx_name);
	atomic_store(&mx->mx_owner, 0);
	if (atomic_exchange(&mx->mx_waiters, 0) == 0)
		return;
	atomic_fetch_add(&mx->mx_futex, 1);
	sc__futex_wake(&mx->mx_futex, 1 << 30);
	sc_wakeup(mx);
}

void
sc__mtx_unlock(struct sc_mtx *mx)
{
	sc__mtx_unlock_as(mx, sc__owner_self());
}

bool
sc__mtx_owned(const struct sc_mtx *mx)
{
	return (atomic_load(&mx->mx_owner) == sc__owner_self());
}
