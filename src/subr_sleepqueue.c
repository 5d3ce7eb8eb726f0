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
 * The threads of a deterministic machine (cfg.seed) sleep on one chain of
 * their own, SC_SC_DET, whatever the wait channel, and their wakeups look
 * there: a hash of an address changes from run to run (the heap, ASLR),
 * and whether two channels share a chain lock decides whether a spin lock
 * waits, a scheduling point, so the seed would not fix the run.  A wakeup
 * still reaches every machine: it also looks at the chains of the other
 * kind while a machine of that kind exists.
 */
#include "sc_internal.h"

#define SC_SC_TABLESIZE	64
#define SC_SC_DET	SC_SC_TABLESIZE	/* deterministic machines' chain */
#define SC_SC_HASH(wc)	((((uintptr_t)(wc) >> 4) ^ ((uintptr_t)(wc) >> 10)) \
	% SC_SC_TABLESIZE)

struct sc_sleepq_chain {
	struct sc_spin	sc_lock;	/* the chain lock */
	struct sc_threadq sc_threads;	/* (q) sleepers, every wchan */
} __attribute__((aligned(64)));

static struct sc_sleepq_chain sc_sleepq_chains[SC_SC_TABLESIZE + 1];
/* Machines alive, deterministic and not: a wakeup looks at their chains. */
static _Atomic int sc_sleepq_ndet, sc_sleepq_nreal;

__attribute__((constructor)) static void
sc_sleepq_init(void)
{
	int i;

	for (i = 0; i <= SC_SC_TABLESIZE; i++) {
		sc__spin_init(&sc_sleepq_chains[i].sc_lock, "sleepq chain");
		TAILQ_INIT(&sc_sleepq_chains[i].sc_threads);
	}
}

void
sc__sleepq_machine(const struct sc_machine *m, int delta)
{
	atomic_fetch_add(m->m_cfg.seed != 0 ? &sc_sleepq_ndet :
	    &sc_sleepq_nreal, delta);
}

/* Is the caller a thread of a deterministic machine, or an actor of one? */
static bool
sc_sleepq_det(void)
{
	struct sc_thread *td = sc_curthread();

	if (td != NULL)
		return (td->td_machine->m_ds != NULL);
	return (sc__ds_mine() != NULL);
}

/* The chain of wchan for a deterministic machine's threads, or not. */
static struct sc_sleepq_chain *
sc_sleepq_chain_of(const void *wchan, bool det)
{
	return (&sc_sleepq_chains[det ? SC_SC_DET : SC_SC_HASH(wchan)]);
}

/* The chain that the caller's sleepers of wchan are on. */
static struct sc_sleepq_chain *
sc_sleepq_chain(const void *wchan)
{
	return (sc_sleepq_chain_of(wchan, __builtin_expect(sc_sleepq_det(),
	    0)));
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
 * sleepq_broadcast(): make every sleeper of wchan runnable, in every
 * machine: the caller's kind of chain first, then the other kind's while
 * a machine of that kind exists.
 */
void
sc__sleepq_broadcast(const void *wchan)
{
	bool det = sc_sleepq_det();

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
	sc_sleepq_broadcast_chain(sc_sleepq_chain_of(wchan, det), wchan);
	if (atomic_load(det ? &sc_sleepq_nreal : &sc_sleepq_ndet) > 0)
		sc_sleepq_broadcast_chain(sc_sleepq_chain_of(wchan, !det),
		    wchan);
}

/* Machine destroy: forget m's sleepers, so no later wakeup touches them. */
void
sc__sleepq_remove_machine(struct sc_machine *m)
{
	struct sc_thread *td, *next;
	int i;

	for (i = 0; i <= SC_SC_TABLESIZE; i++) {
		sc__spin_lock(NULL, &sc_sleepq_chains[i].sc_lock);
		TAILQ_FOREACH_SAFE(td, &sc_sleepq_chains[i].sc_threads,
		    td_slpq, next) {
			if (td->td_machine == m)
				TAILQ_REMOVE(&sc_sleepq_chains[i].sc_threads,
				    td, td_slpq);
		}
		sc__spin_unlock(&sc_sleepq_chains[i].sc_lock);
	}
}
