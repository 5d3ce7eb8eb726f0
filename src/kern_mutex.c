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
#include "sc_internal.h"

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

	if (sc_mtx_try(mx, self))
		return;
	SC_KASSERT(atomic_load(&mx->mx_owner) != self, ,
	    "mutex \"%s\" recursed", mx->mx_name);
	SC_KASSERT(sc__spin_held_count() == 0, ,
	    "sleeping on mutex \"%s\" with a spin lock held", mx->mx_name);
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
