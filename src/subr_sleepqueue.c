/*
 * Sleep queues: sleep on a wait channel, wake up every sleeper of one.
 *
 * Kernel counterpart: sys/kern/subr_sleepqueue.c (sleepq_lock,
 * sleepq_add, sleepq_wait, sleepq_broadcast); sleep() and wakeup() on top
 * of them are in kern_synch.c.  The chains are global, hashed by wait
 * channel, so a plain pthread can wake any machine's sleepers.  A
 * sleeping thread's td_lock is its chain lock, as in the kernel: holding
 * it keeps the thread asleep.
 *
 * The threads of a deterministic machine (cfg.seed) sleep on a chain of
 * their machine's own (struct sc_ds's ds_slpq), whatever the wait
 * channel, and their wakeups look there: a hash of an address changes
 * from run to run (the heap, ASLR), and whether two channels share a
 * chain lock decides whether a spin lock waits, a scheduling point, so
 * the seed would not fix the run.  The chain is the machine's, not shared
 * by every deterministic machine: a machine's actor may wait at one of
 * its points while it holds its chain lock, for its machine's run token,
 * which a plain pthread that drives two machines keeps while it works in
 * the other one; a shared chain then stopped both, and the other's
 * wakeups changed this one's run.  A wakeup from a deterministic machine
 * (a thread of it, or a plain pthread whose last call was into it) looks
 * at its own chain and at the real machines' chains while one exists; a
 * wakeup from a real machine or a plain pthread that is no actor looks
 * at its hashed chain and at every deterministic machine's.
 */
#include "sc_internal.h"

/* FreeBSD's SC_TABLESIZE and SC_HASH(); SC_ is our prefix already. */
#define SC_SLEEPQ_TABLESIZE	64
#define SC_SLEEPQ_HASH(wc)						\
	((((uintptr_t)(wc) >> 4) ^ ((uintptr_t)(wc) >> 10)) %		\
	SC_SLEEPQ_TABLESIZE)

static struct sc_sleepq_chain sc_sleepq_chains[SC_SLEEPQ_TABLESIZE];
/* Machines alive, deterministic and not: a wakeup looks at their chains. */
static _Atomic int sc_sleepq_ndet, sc_sleepq_nreal;

__attribute__((constructor)) static void
sc_sleepq_init(void)
{
	int i;

	for (i = 0; i < SC_SLEEPQ_TABLESIZE; i++)
		sc__sleepq_chain_init(&sc_sleepq_chains[i]);
}

void
sc__sleepq_machine(const struct sc_machine *m, int delta)
{
	atomic_fetch_add(m->m_cfg.seed != 0 ? &sc_sleepq_ndet :
	    &sc_sleepq_nreal, delta);
}

void
sc__sleepq_chain_init(struct sc_sleepq_chain *sc)
{
	sc__spin_init(&sc->sc_lock, "sleepq chain");
	TAILQ_INIT(&sc->sc_threads);
}

/* The chain that the caller's sleepers of wchan are on. */
static struct sc_sleepq_chain *
sc_sleepq_chain(const void *wchan)
{
	struct sc_sleepq_chain *sc = sc__ds_sleepq(sc_curthread());

	return (sc != NULL ? sc : &sc_sleepq_chains[SC_SLEEPQ_HASH(wchan)]);
}

struct sc_spin *
sc__sleepq_lock(const void *wchan)
{
	struct sc_sleepq_chain *sc = sc_sleepq_chain(wchan);
	struct sc_thread *td = sc_curthread();

	sc__spin_lock(td != NULL ? td->td_machine : NULL, &sc->sc_lock);
	return (&sc->sc_lock);
}

void
sc__sleepq_release(const void *wchan)
{
	sc__spin_unlock(&sc_sleepq_chain(wchan)->sc_lock);
}

/*
 * sleepq_add() + sleepq_wait(): called with the chain lock of wchan held;
 * returns with nothing held once woken (or spuriously).
 */
void
sc__sleepq_wait(const void *wchan, const char *wmesg)
{
	struct sc_sleepq_chain *sc = sc_sleepq_chain(wchan);
	struct sc_thread *td = sc_curthread();
	struct sc_spin *old;

	SC_KASSERT(td != NULL, , "sleep outside a simulated thread");
	SC_KASSERT(sc__spin_owned(&sc->sc_lock), ,
	    "sleepq chain of %p not locked", wchan);
	td->td_wchan = wchan;
	atomic_store(&td->td_wmesg, wmesg);
	TAILQ_INSERT_TAIL(&sc->sc_threads, td, td_slpq);

	/*
	 * thread_lock_set(): td is running, so its lock is the sched_lock;
	 * from here on its lock is the chain lock, which we hold, so no one
	 * can wake it before mi_switch() has saved its context.
	 */
	sc_thread_lock(td);
	old = atomic_load(&td->td_lock);
	atomic_store(&td->td_lock, &sc->sc_lock);
	sc__spin_unlock(old);
	atomic_fetch_or(&td->td_inhibitors, SC_TDI_SLEEPING);
	sc__td_set_state(td, SC_TDS_INHIBITED);
	SC_CNT_INC(td->td_machine, sleeps);
	sc__mi_switch(td);
	sc_thread_unlock(td);
	sc__switch_done();
}

/* Make every sleeper of wchan on chain sc runnable. */
static void
sc_sleepq_broadcast_chain(struct sc_sleepq_chain *sc, const void *wchan)
{
	struct sc_thread *td, *next, *self = sc_curthread();

	sc__spin_lock(self != NULL ? self->td_machine : NULL, &sc->sc_lock);
	TAILQ_FOREACH_SAFE(td, &sc->sc_threads, td_slpq, next) {
		if (td->td_wchan != wchan)
			continue;
		/*
		 * td may still be switching out (td_lock is blocked_lock
		 * until cpu_switch has saved its context); after that its
		 * lock is this chain lock, which we hold.
		 */
		while (atomic_load_explicit(&td->td_lock,
		    memory_order_acquire) == &sc__blocked_lock)
			sc__cpu_spinwait();
		TAILQ_REMOVE(&sc->sc_threads, td, td_slpq);
		td->td_wchan = NULL;
		atomic_store(&td->td_wmesg, NULL);
		SC_CNT_INC(td->td_machine, wakeups);
		sc__td_uninhibit(td, SC_TDI_SLEEPING);
		/* A swapped sleeper stays INHIBITED, locked by this chain. */
	}
	sc__spin_unlock(&sc->sc_lock);
}

/*
 * sleepq_broadcast(): make every sleeper of wchan runnable: on the
 * caller's chain, then on the other kind's chains while a machine of that
 * kind exists (the real machines' chain of wchan, or every deterministic
 * machine's, sc__ds_next(): type-stable, so none goes away under us).
 */
void
sc__sleepq_broadcast(const void *wchan)
{
	struct sc_sleepq_chain *mine = sc_sleepq_chain(wchan),
	    *real = &sc_sleepq_chains[SC_SLEEPQ_HASH(wchan)];
	struct sc_ds *ds;

	/*
	 * Before anything is taken: the broadcast takes wchan's chain locks,
	 * then (sched_add()) a run queue's lock, either of which the
	 * caller's may be; the recursion that sc__spin_lock() catches would
	 * leave the broadcast going on without the lock, and release the
	 * caller's at its end.  (The kernel's order is the same: a sleep
	 * queue chain lock before a thread lock.)
	 */
	SC_KASSERT(sc__spin_held_count() == 0, , "wakeup(%p) with a spin "
	    "lock held (a thread lock, or a sleep-queue chain lock held?)",
	    wchan);
	if (mine != real) {		/* a deterministic machine's */
		sc_sleepq_broadcast_chain(mine, wchan);
		if (atomic_load(&sc_sleepq_nreal) > 0)
			sc_sleepq_broadcast_chain(real, wchan);
		return;
	}
	sc_sleepq_broadcast_chain(real, wchan);
	if (atomic_load(&sc_sleepq_ndet) > 0)
		for (ds = sc__ds_next(NULL); ds != NULL; ds = sc__ds_next(ds))
			sc_sleepq_broadcast_chain(&ds->ds_slpq, wchan);
}

/* Forget m's sleepers on chain sc. */
static void
sc_sleepq_remove_chain(struct sc_sleepq_chain *sc, struct sc_machine *m)
{
	struct sc_thread *td, *next;

	sc__spin_lock(NULL, &sc->sc_lock);
	TAILQ_FOREACH_SAFE(td, &sc->sc_threads, td_slpq, next) {
		if (td->td_machine == m)
			TAILQ_REMOVE(&sc->sc_threads, td, td_slpq);
	}
	sc__spin_unlock(&sc->sc_lock);
}

/* Machine destroy: forget m's sleepers, so no later wakeup touches them. */
void
sc__sleepq_remove_machine(struct sc_machine *m)
{
	int i;

	for (i = 0; i < SC_SLEEPQ_TABLESIZE; i++)
		sc_sleepq_remove_chain(&sc_sleepq_chains[i], m);
	if (m->m_ds != NULL)
		sc_sleepq_remove_chain(&m->m_ds->ds_slpq, m);
}
