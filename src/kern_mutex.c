/*
 * Spin locks, the thread lock, and simulated sleep mutexes.
 *
 * Kernel counterpart: sys/kern/kern_mutex.c: mtx_lock_spin(),
 * thread_lock() and blocked_lock; MTX_DEF mutexes (the proc lock, the
 * capture mutex), with the turnstile replaced by a sleep queue on the
 * mutex's address.  A simulated thread may hold a sleep mutex across a
 * switch and resume on another CPU pthread, so these can never be pthread
 * mutexes: a pthread mutex must be unlocked by the pthread that locked it.
 * A simulated waiter sleeps (its CPU runs other threads); a plain pthread
 * waits on a futex.  Last, the host-locked sections (sc_internal.h).
 */
#include <errno.h>

#include "sc_internal.h"
#include "sc_futex.h"

/* Turns of a spin-lock wait that spin before it sleeps (sc_spin_sleep()). */
#define SC_SPIN_PAUSES	256

/* Spin locks held by a plain pthread (it has no CPU to count them). */
static __thread int sc_plain_held SC_TLS_IE;

/* blocked_lock: td_lock points here while td's context is being saved. */
struct sc_spin sc__blocked_lock = { .sp_name = "blocked lock" };

/* ------------------------------------------------------------------------
 * Spin locks (MTX_SPIN) and thread_lock()
 * ------------------------------------------------------------------------ */

void
sc__spin_init(struct sc_spin *sp, const char *name)
{
	atomic_init(&sp->sp_owner, 0);
	atomic_init(&sp->sp_sleepers, 0);
	atomic_init(&sp->sp_futex, 0);
	sp->sp_name = name;
}

/*
 * A spin lock held longer than a short spin: its holder's CPU pthread was
 * most likely descheduled by Linux (more simulated CPUs than cores, or a
 * loaded host).  Sleep until an unlock, rather than sched_yield(): on a
 * loaded host a yield gives the core away for a whole round of Linux's
 * other runnable tasks (about 10 ms a yield with three busy loops on the
 * core), every yield, while the lock may have been free long since.  The
 * sleeper count is raised before the owner is read, and an unlock clears
 * the owner before it reads the count (both sequentially consistent):
 * either we see the lock free, or the unlock sees us and bumps the word
 * we wait on.  The bound only limits the damage of a bug.  The sleep is a
 * host-locked section: interrupts may be on here (sc_spin_wait()), and an
 * IPI_STOP that abandoned the thread between the two counts would leave
 * every later unlock of sp waking a sleeper that is gone.
 */
static void
sc_spin_sleep(struct sc_spin *sp)
{
	uint32_t seq = atomic_load(&sp->sp_futex);

	sc__host_enter();
	atomic_fetch_add(&sp->sp_sleepers, 1);
	if (atomic_load(&sp->sp_owner) != 0)
		(void)sc__futex_wait_raw(&sp->sp_futex, seq,
		    10 * 1000 * 1000L);
	atomic_fetch_sub(&sp->sp_sleepers, 1);
	sc__host_exit();
}

/* One attempt at sp: true if taken; else *v is its owner (or 0 again). */
static bool
sc_spin_try(struct sc_spin *sp, uintptr_t self, uintptr_t *v)
{
	*v = 0;
	return (atomic_compare_exchange_weak_explicit(&sp->sp_owner, v, self,
	    memory_order_acquire, memory_order_relaxed));
}

/* Give sp back (mtx_release_lock()): the owner word and its sleepers. */
static void
sc_spin_release(struct sc_spin *sp)
{
	atomic_store(&sp->sp_owner, 0);
	if (atomic_load(&sp->sp_sleepers) != 0) {
		atomic_fetch_add(&sp->sp_futex, 1);
		sc__futex_wake_raw(&sp->sp_futex, 1);
	}
}

/*
 * Called inside the spin-lock section with sp seen taken: wait until it
 * looks free, as _mtx_lock_spin_cookie() and thread_lock_flags_() do
 * (sys/kern/kern_mutex.c): leave the section for the wait ("give
 * interrupts a chance while we spin") and enter it again before the next
 * attempt.  sc_spinlock_exit() turns interrupts on only when its count
 * drops to zero, i.e. when this is the only spin lock the CPU wants
 * (spinlock_exit() in sys/amd64/amd64/machdep.c): then an IPI deferred
 * before the wait runs at that exit, and one that arrives during it is
 * taken at once, on top of this frame.  A CPU that holds another spin
 * lock waits with interrupts still off.  lockp: thread_lock()'s td_lock,
 * whose change ends the wait too (NULL: none).  *n counts the turns
 * (sc__wait_turn()).  0, or ETIMEDOUT at deadline (sc__ds_clock();
 * UINT64_MAX: never), outside the section.  Never inlined: an interrupt
 * taken here shows the wait as a frame of its own, and its caller
 * (sc__spin_lock_until() or sc_thread_lock()) below it.
 */
static SC_NOIPA int
sc_spin_wait(struct sc_spin *sp, _Atomic(struct sc_spin *) *lockp,
    uint64_t deadline, int *n)
{
	int turn;

	sc_spinlock_exit();
	do {
		if (sp == &sc__blocked_lock) {
			/* No unlock ends it (cpu_switch() moves td_lock). */
			sc__cpu_spinwait();
		} else {
			/*
			 * The holder's CPU pthread may be descheduled by
			 * Linux (more simulated CPUs than real cores): spin
			 * briefly, then sleep.
			 */
			turn = sc__wait_turn((*n)++ < SC_SPIN_PAUSES,
			    deadline);
			if (turn == SC_TURN_TIMEDOUT)
				return (ETIMEDOUT);
			if (turn == SC_TURN_BLOCK)
				sc_spin_sleep(sp);
		}
		if (lockp != NULL && atomic_load_explicit(lockp,
		    memory_order_acquire) != sp)
			break;
	} while (sp == &sc__blocked_lock || atomic_load_explicit(
	    &sp->sp_owner, memory_order_relaxed) != 0);
	sc_spinlock_enter();
	return (0);
}

/* sp is ours: note it on this CPU (which the wait may have changed). */
static void
sc_spin_held(struct sc_spin *sp)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	if (pc != NULL) {
		SC_KASSERT(pc->pc_nheld < (int)(sizeof(pc->pc_held) /
		    sizeof(pc->pc_held[0])), , "too many spin locks held");
		pc->pc_held[pc->pc_nheld++] = sp;
	} else
		sc_plain_held++;
}

void
sc__spin_lock(struct sc_machine *m, struct sc_spin *sp)
{
	(void)sc__spin_lock_until(m, sp, UINT64_MAX);
}

/*
 * Lock sp, or give up at deadline (sc__ds_clock(); UINT64_MAX: never):
 * 0 or ETIMEDOUT, with interrupts as they were.  The clock is read only
 * once the wait has turned to sleeping.
 */
int
sc__spin_lock_until(struct sc_machine *m, struct sc_spin *sp,
    uint64_t deadline)
{
	uintptr_t self, v;
	int n;

	self = sc__owner_self();
	SC_KASSERT(atomic_load_explicit(&sp->sp_owner, memory_order_relaxed) !=
	    self, EINVAL, "spin lock \"%s\" recursed", sp->sp_name);
	sc__ds_point();
	sc_spinlock_enter();
	v = atomic_load_explicit(&sp->sp_owner, memory_order_relaxed);
	for (n = 0;;) {
		if (v == 0) {
			if (sc_spin_try(sp, self, &v))
				break;
			continue;
		}
		if (n == 0 && m != NULL)
			SC_CNT_INC(m, spin_waits);
		if (sc_spin_wait(sp, NULL, deadline, &n) != 0)
			return (ETIMEDOUT);
		v = atomic_load_explicit(&sp->sp_owner, memory_order_relaxed);
	}
	sc_spin_held(sp);
	return (0);
}

static void
sc_spin_forget(struct sc_pcpu *pc, struct sc_spin *sp)
{
	int i;

	for (i = pc->pc_nheld - 1; i >= 0; i--) {
		if (pc->pc_held[i] != sp)
			continue;
		for (; i < pc->pc_nheld - 1; i++)
			pc->pc_held[i] = pc->pc_held[i + 1];
		pc->pc_nheld--;
		return;
	}
}

void
sc__spin_unlock(struct sc_spin *sp)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	SC_KASSERT(atomic_load_explicit(&sp->sp_owner, memory_order_relaxed) ==
	    sc__owner_self(), , "spin lock \"%s\" not owned", sp->sp_name);
	if (pc != NULL)
		sc_spin_forget(pc, sp);
	else
		sc_plain_held--;
	sc_spin_release(sp);
	sc_spinlock_exit();
	sc__ds_point();
}

/*
 * After a context switch the new thread owns the sched_lock that the old
 * one took (sched_switch() does the same with sched_lock.mtx_lock).
 */
void
sc__spin_handoff(struct sc_spin *sp, struct sc_thread *td)
{
	atomic_store_explicit(&sp->sp_owner, (uintptr_t)td,
	    memory_order_relaxed);
}

int
sc__spin_held_count(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	return (pc != NULL ? pc->pc_nheld : sc_plain_held);
}

/* A parked (panicked) thread gives back every spin lock it holds. */
void
sc__spin_release_all(struct sc_pcpu *pc)
{
	while (pc->pc_nheld > 0)
		sc__spin_unlock(pc->pc_held[pc->pc_nheld - 1]);
}

/*
 * thread_lock(), as thread_lock_flags_() (sys/kern/kern_mutex.c): the
 * pointer may change until we hold what it points to.  One spin-lock
 * section throughout, left only while waiting (sc_spin_wait()); a lock
 * taken that is no longer td's is given back without leaving it.
 * blocked_lock is never free: td's context is being saved, and the wait
 * ends when cpu_switch() points td_lock elsewhere.
 */
void
sc_thread_lock(struct sc_thread *td)
{
	struct sc_machine *m = td->td_machine;
	struct sc_spin *sp;
	uintptr_t self, v;
	bool counted;
	int n;

	self = sc__owner_self();
	sc__ds_enter(m);
	sc__ds_point();
	sc_spinlock_enter();
	counted = false;
	for (n = 0;;) {
		sp = atomic_load_explicit(&td->td_lock, memory_order_acquire);
		v = sp == &sc__blocked_lock ? 1 : atomic_load_explicit(
		    &sp->sp_owner, memory_order_relaxed);
		if (v == self) {
			/* Out of the section first: the panic returns. */
			sc_spinlock_exit();
			SC_KASSERT(v != self, , "spin lock \"%s\" recursed",
			    sp->sp_name);
		}
		if (v == 0) {
			if (!sc_spin_try(sp, self, &v))
				continue;
			if (sp == atomic_load_explicit(&td->td_lock,
			    memory_order_relaxed))
				break;
			sc_spin_release(sp);
			continue;
		}
		if (sp == &sc__blocked_lock)
			SC_CNT_INC(m, blocked_waits);
		else if (!counted) {
			SC_CNT_INC(m, spin_waits);
			counted = true;
		}
		(void)sc_spin_wait(sp, &td->td_lock, UINT64_MAX, &n);
	}
	sc_spin_held(sp);
}

void
sc_thread_unlock(struct sc_thread *td)
{
	sc__ds_enter(td->td_machine);
	sc__spin_unlock(atomic_load_explicit(&td->td_lock,
	    memory_order_relaxed));
}

int
sc_thread_lock_owned(struct sc_thread *td)
{
	return (sc__spin_owned(atomic_load_explicit(&td->td_lock,
	    memory_order_relaxed)));
}

/* ------------------------------------------------------------------------
 * Sleep mutexes (MTX_DEF)
 * ------------------------------------------------------------------------ */

void
sc__mtx_init(struct sc_mtx *mx, const char *name, uint64_t *waitcnt)
{
	atomic_init(&mx->mx_owner, 0);
	atomic_init(&mx->mx_waiters, 0);
	atomic_init(&mx->mx_futex, 0);
	atomic_init(&mx->mx_want, 0);
	atomic_init(&mx->mx_want_age, 0);
	mx->mx_name = name;
	mx->mx_waitcnt = waitcnt;
}

/*
 * Take mx if it is free and not reserved for another waiter.  An unlock
 * wakes the waiters, but the lock is free at once: a locker that runs
 * (a loop of snapshots, each taking every proc lock) takes it back before
 * a woken waiter's CPU runs it, again and again.  So a waiter that was
 * woken and still lost reserves the lock (mx_want, one waiter at a time):
 * only it may take it next, and it takes it at the next unlock, which
 * finds it waiting.  One reservation is not a queue: waiters that loop
 * (simulated threads that take the lock again and again) can pass it
 * among themselves while a slower one (a plain pthread, woken only when
 * its futex word moves) finds it taken at each of its tries; in a
 * deterministic run the default schedule repeated that for 50 million
 * steps (fuzz/corpus/machine/join-starved-by-simcap).  So a waiter that
 * has lost more often than the reserver, by two, takes the reservation
 * over (sc_mtx_reserve()): the losses of every waiter grow while it
 * waits, so the one that waited longest gets the lock.  Only the owner
 * CAS decides who holds mx; a reservation decides only who may try.
 */
static bool
sc_mtx_try(struct sc_mtx *mx, uintptr_t self)
{
	uintptr_t zero = 0, want;

	want = atomic_load(&mx->mx_want);
	if (want != 0 && want != self)
		return (false);
	if (!atomic_compare_exchange_strong(&mx->mx_owner, &zero, self))
		return (false);
	if (want == self)
		atomic_store(&mx->mx_want, 0);
	return (true);
}

/*
 * A woken waiter lost mx for the losses-th time: reserve it, unless
 * another waiter has that lost as often or nearly (see sc_mtx_try()).
 */
static void
sc_mtx_reserve(struct sc_mtx *mx, uintptr_t self, uint32_t losses)
{
	uintptr_t want = 0;

	if (atomic_compare_exchange_strong(&mx->mx_want, &want, self) ||
	    want == self) {
		atomic_store(&mx->mx_want_age, losses);
		return;
	}
	if (losses <= atomic_load(&mx->mx_want_age) + 1)
		return;
	/* A race with another taker only changes who waits next. */
	if (atomic_compare_exchange_strong(&mx->mx_want, &want, self))
		atomic_store(&mx->mx_want_age, losses);
}

void
sc__mtx_lock(struct sc_mtx *mx)
{
	uintptr_t self = sc__owner_self();
	uint32_t seq, losses = 0;

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
		sc_mtx_reserve(mx, sc__owner_self(), ++losses);
	}
}

/* A simulated waiter's longest futex wait before it offers its CPU. */
#define SC_MTX_SLICE_NS	(1000L * 1000)

/*
 * Lock mx, or give up at deadline_ns (the library's clock, sc__ds_clock()):
 * 0 or ETIMEDOUT.  The sleep queue has no timeout, so every caller waits
 * on the mutex's futex, which the unlock wakes.  A simulated thread that
 * holds no spin lock waits in slices of SC_MTX_SLICE_NS and offers its CPU
 * between them (sc_maybe_yield()): the holder may need that CPU to run
 * and release mx (on a one-CPU machine it must), and may hold mx for
 * long (a proc lock).  One that holds spin locks cannot switch (the
 * teaching mode hold_lock_across_ipi, on a capture mutex, which is held
 * for one round trip): its CPU pthread blocks, at most until deadline_ns.
 */
int
sc__mtx_lock_until(struct sc_mtx *mx, uint64_t deadline_ns)
{
	uintptr_t self = sc__owner_self();
	uint64_t now, wait;
	uint32_t seq;
	bool yield;

	SC_KASSERT(atomic_load(&mx->mx_owner) != self, EINVAL,
	    "mutex \"%s\" recursed", mx->mx_name);
	if (sc_mtx_try(mx, self))
		return (0);
	if (mx->mx_waitcnt != NULL)
		__atomic_fetch_add(mx->mx_waitcnt, 1, __ATOMIC_RELAXED);
	yield = sc_curthread() != NULL && sc__spin_held_count() == 0;
	for (;;) {
		seq = atomic_load(&mx->mx_futex);
		atomic_store(&mx->mx_waiters, 1);
		if (sc_mtx_try(mx, self))
			return (0);
		now = sc__ds_clock();
		if (now >= deadline_ns)
			return (ETIMEDOUT);
		wait = deadline_ns - now;
		if (yield && wait > (uint64_t)SC_MTX_SLICE_NS)
			wait = SC_MTX_SLICE_NS;
		sc__futex_wait(&mx->mx_futex, seq, (long)wait);
		if (yield)
			sc_maybe_yield();
		if (sc_mtx_try(mx, self))
			return (0);
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

/* ------------------------------------------------------------------------
 * Host-locked sections
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
