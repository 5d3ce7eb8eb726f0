/*
 * Deterministic simulation (internal; src/sim_det.c, docs/determinism.md).
 * Included by sc_internal.h after struct sc_machine.
 */
#ifndef SC_SIM_DET_H
#define SC_SIM_DET_H

#include <sched.h>

/*
 * Deterministic simulation (sim_det.c).  The letters are sc_internal.h's
 * lock key: (d) the run token, (r) ds_reg, (g) here the pool's lock
 * (sc_ds_pool_mtx in sim_det.c), which the watchdog holds while it looks
 * at the machines.
 */
#define SC_DS_MAXACTOR	(SC_MAXCPU + 16)
#define SC_DS_PCT_MAXDEPTH 64
#define SC_DS_WAITING	1
#define SC_DS_RUNNING	2
#define SC_DS_GONE	3		/* a plain pthread that exited */

struct sc_chk;

struct sc_ds_actor {
	_Atomic uint32_t a_go;		/* (a) futex: 1 while it holds the
					   token */
	int		a_state;	/* (d) SC_DS_* */
	int64_t		a_prio;		/* (d) PCT: higher runs first */
	int		a_cpu;		/* (d) its CPU, or -1: a plain
					   pthread */
	_Atomic uint32_t *a_wuaddr;	/* (d) blocked on this futex word
					   while it holds a_wval, until a
					   wake or step a_wuntil; or NULL */
	uint32_t	a_wval;		/* (d) */
	uint64_t	a_wuntil;	/* (d) */
	uint64_t	a_tick_next;	/* (d) a CPU: the step of its next
					   virtual tick (sim_det_clock.c) */
	pid_t		a_tid;		/* (r) a plain pthread pinned to
					   ds_core, alive; or 0 */
	cpu_set_t	a_mask;		/* (r) its affinity before the pin */
};

/*
 * Type-stable: a struct is never freed, only reused by a later machine
 * under a new ds_gen, so that a pthread that still names one (an actor of
 * a machine that another pthread destroyed) reads valid memory and sees
 * that it is no actor any more.
 */
struct sc_ds {
	pthread_mutex_t	ds_reg;		/* the (r) lock: registration of a
					   plain pthread; never destroyed */
	_Atomic uint64_t ds_gen;	/* (r/a) this life's number, never 0 */
	struct sc_ds	*ds_poolnext;	/* (g) sc_ds_pool_mtx: the pool's
					   free list */
	struct sc_ds	*ds_allnext;	/* (c) every struct, set once */
	struct sc_sleepq_chain ds_slpq;	/* the machine's sleepers' chain
					   (subr_sleepqueue.c): emptied at
					   destroy, never zeroed */
	/* Zeroed at each reuse from here on. */
	struct sc_machine *ds_m;	/* (c) */
	struct sc_chk	*ds_chk;	/* (c) the check's guide of this run
					   (check_var.h), or NULL */
	int		ds_chk_run;	/* (d) under a check: the holder's
					   points in a row */
	uint64_t	ds_rng;		/* (d) the generator's state */
	uint64_t	ds_step;	/* (d) virtual time, in steps */
	_Atomic uint64_t ds_seen;	/* (a) ds_step, for the watcher */
	uint64_t	ds_tick_steps;	/* (c) steps a virtual tick, or 0: no
					   clock */
	_Atomic uint64_t ds_kick;	/* (a) the take-back asked of the
					   holder: the step it was stuck at
					   plus 1, or 0 */
	bool		ds_armed;	/* (g) the watchdog looks at it: from
					   the end of sc__ds_init() to the
					   machine's stop */
	uint64_t	ds_wd_step;	/* (g) the watchdog's last look */
	int		ds_wd_cur;	/* (g) */
	uint64_t	ds_wd_cpu;	/* (g) the holder's CPU time then */
	uint64_t	ds_wd_since;	/* (g) real time of the last move of
					   the token (step or holder) */
	_Atomic int	ds_cur;		/* (a) the holder's slot */
	_Atomic int	ds_nactor;	/* (a) slots in use */
	_Atomic int	ds_off;		/* (a) destroy began: all run free */
	bool		ds_stuck;	/* (g) the stuck-token report, once */
	int		ds_pct_depth;	/* (c) PCT's d, or 0: random */
	int		ds_pct_next;	/* (d) the next change point */
	uint64_t	ds_pct_cp[SC_DS_PCT_MAXDEPTH]; /* (c) change points, by
					   step, sorted */
	int		ds_core;	/* (c) the host core of every actor,
					   or -1: not pinned */
	cpu_set_t	ds_mask;	/* (c) the creator's affinity before
					   the pin: the CPUs' to restore */
	struct sc_ds_actor ds_actor[SC_DS_MAXACTOR]; /* (d) */
};

int	sc__ds_init(struct sc_machine *m);
void	sc__ds_cpu_attach(struct sc_pcpu *pc);
void	sc__ds_enter_slow(struct sc_machine *m);
void	sc__ds_point_slow(bool waiting);
void	sc__ds_block(_Atomic uint32_t *uaddr, uint32_t val, long timeout_ns);
void	sc__ds_futex_wake_slow(_Atomic uint32_t *uaddr);
void	sc__ds_stop(struct sc_machine *m);
void	sc__ds_free(struct sc_machine *m);
struct sc_ds *sc__ds_next(struct sc_ds *ds);
void	sc__ipi_poll(struct sc_pcpu *pc, const struct sc_intr_frame *at);
void	sc__ds_takeback(struct sc_pcpu *pc, const struct sc_intr_frame *frame,
	    ucontext_t *uc);
bool	sc__ds_tick_due(struct sc_pcpu *pc);

/*
 * This pthread's deterministic machine, or NULL (sim_det.c), and the life
 * of it that this pthread is an actor of (sc__ds_mine()).  A plain
 * pthread may be an actor of several machines; this one is the one its
 * last call went into (sc__ds_enter()), whose points its points are.  The
 * inline tests below are all that real concurrency pays: one TLS load at
 * each spin-lock acquire and release, and no call.
 */
extern __thread struct sc_ds *sc__ds_self SC_TLS_IE;
extern __thread uint64_t sc__ds_gen SC_TLS_IE;

/*
 * sc__ds_self, if this pthread is still an actor of it: the machine may
 * have been destroyed by another pthread, and its struct reused since.
 */
static inline struct sc_ds *
sc__ds_mine(void)
{
	struct sc_ds *ds = sc__ds_self;

	if (ds == NULL || atomic_load_explicit(&ds->ds_gen,
	    memory_order_relaxed) != sc__ds_gen)
		return (NULL);
	return (ds);
}

/* A scheduling point. */
static inline void
sc__ds_point(void)
{
	if (__builtin_expect(sc__ds_self != NULL, 0))
		sc__ds_point_slow(false);
}

/* A scheduling point where the caller waits for another actor. */
static inline void
sc__ds_wait(void)
{
	if (__builtin_expect(sc__ds_self != NULL, 0))
		sc__ds_point_slow(true);
}

/* This pthread is an actor of a deterministic machine that runs. */
static inline bool
sc__ds_active(void)
{
	struct sc_ds *ds = sc__ds_self;

	if (__builtin_expect(ds == NULL, 1))
		return (false);
	return ((ds = sc__ds_mine()) != NULL && atomic_load_explicit(
	    &ds->ds_off, memory_order_relaxed) == 0);
}

/*
 * The clock of the library's bounds and of the trace: virtual (a step, a
 * microsecond) for an actor of a deterministic machine, else
 * CLOCK_MONOTONIC.  Async-signal-safe.
 */
static inline uint64_t
sc__ds_clock(void)
{
	return (sc__ds_active() ? sc__ds_self->ds_step * 1000 : sc_now_ns());
}

/*
 * A call of a plain pthread into m: if m is deterministic, m becomes its
 * current machine (its first call makes it an actor of m).
 */
static inline void
sc__ds_enter(struct sc_machine *m)
{
	if (__builtin_expect(m->m_ds != NULL, 0))
		sc__ds_enter_slow(m);
}

/*
 * cpu_spinwait(): one turn of a spin-wait loop.  In deterministic mode it
 * is a scheduling point, so that whoever the loop waits for can run.
 */
static inline void
sc__cpu_spinwait(void)
{
	if (__builtin_expect(sc__ds_active(), 0))
		sc__ds_wait();
	else
		__builtin_ia32_pause();
}

/*
 * One turn of a wait for another thread, the seam of every wait that the
 * host would otherwise end; called only by sc__wait_turn()
 * (sc_futex.h), the library's one wait turn.  An actor of a
 * deterministic machine waits at a point (whoever it waits for runs when
 * drawn: SC_DS_DRAWN); anyone else pauses while spin holds
 * (SC_DS_PAUSED), and past that is told to wait its host way, a sleep, a
 * futex or sched_yield() (SC_DS_HOST).
 */
#define SC_DS_PAUSED	0
#define SC_DS_DRAWN	1
#define SC_DS_HOST	2

static inline int
sc__ds_backoff(bool spin)
{
	if (__builtin_expect(sc__ds_active(), 0)) {
		sc__ds_wait();
		return (SC_DS_DRAWN);
	}
	if (spin) {
		__builtin_ia32_pause();
		return (SC_DS_PAUSED);
	}
	return (SC_DS_HOST);
}

/*
 * The sleep-queue chain of the caller's deterministic machine, or NULL;
 * called only by subr_sleepqueue.c's sc_sleepq_chain().  A thread of a
 * deterministic machine, or a plain pthread that is an actor of one,
 * sleeps on that machine's own chain, so that no other machine's
 * sleepers touch its run.
 */
static inline struct sc_sleepq_chain *
sc__ds_sleepq(struct sc_thread *td)
{
	struct sc_ds *ds;

	if (td != NULL)
		ds = td->td_machine->m_ds;
	else
		ds = sc__ds_active() ? sc__ds_self : NULL;
	return (__builtin_expect(ds != NULL, 0) ? &ds->ds_slpq : NULL);
}

/*
 * A futex wait on uaddr while it holds val, at most timeout_ns (0: no
 * bound), in deterministic mode: one scheduling point where the caller
 * waits, blocked there as a futex waiter is (sc__ds_block()).  True if
 * so (the caller re-checks its condition, as after a spurious wakeup);
 * false with the mode off: the caller waits on the futex.  Called only by
 * sc__futex_wait() (sc_futex.h).
 */
static inline bool
sc__ds_futex_wait(_Atomic uint32_t *uaddr, uint32_t val, long timeout_ns)
{
	if (__builtin_expect(!sc__ds_active(), 1))
		return (false);
	sc__ds_block(uaddr, val, timeout_ns);
	sc__ds_wait();
	return (true);
}

/*
 * A wake of uaddr, in deterministic mode by the token's holder: its
 * waiters are candidates for the token again.  Async-signal-safe.  Called
 * only by sc__futex_wake() (sc_futex.h), which then wakes the futex.
 */
static inline void
sc__ds_futex_wake(_Atomic uint32_t *uaddr)
{
	if (__builtin_expect(sc__ds_self != NULL, 0) && sc__ds_active())
		sc__ds_futex_wake_slow(uaddr);
}

/*
 * cpu_switch()'s sw1wait, before it, in deterministic mode: wait at
 * points while the new thread's lock *lockp is blocked (its old CPU
 * still saves its context), so that that CPU gets the token;
 * cpu_switch()'s own spin then finds the lock already set.  Called only
 * by sc_switch.h; nothing with the mode off (cpu_switch() spins).
 */
static inline void
sc__ds_sw1wait(_Atomic(struct sc_spin *) *lockp, const struct sc_spin *blocked)
{
	while (sc__ds_active() && atomic_load_explicit(lockp,
	    memory_order_acquire) == blocked)
		sc__ds_wait();
}

/*
 * Is an IPI of vectors to a CPU of m taken at a point instead of sent?
 * Called only by sc__ipi_send() (ipi_sim.c).  In deterministic mode (on,
 * and not yet switched off by destroy) an IPI is no signal: the target
 * CPU takes it at one of its own points that the seed picks
 * (sim_det_token.c, over sc__ipi_poll()), so the sender sends nothing.
 * IPI_STOP, destroy's, is always a signal.
 */
static inline bool
sc__ds_ipi_at_point(const struct sc_machine *m, uint32_t vectors)
{
	return ((vectors & SC_IPI_STOP) == 0 && m->m_ds != NULL &&
	    atomic_load_explicit(&m->m_ds->ds_off, memory_order_relaxed) == 0);
}

/*
 * Called only by the IPI signal's handler (ipi_sim.c): while the mode is
 * on no IPI is a signal, so the signal on one of m's CPU pthreads is the
 * take-back (sc__ds_takeback()).  Async-signal-safe.
 */
static inline bool
sc__ds_signal_is_takeback(const struct sc_machine *m)
{
	return (sc__ds_ipi_at_point(m, 0));
}

#endif /* !SC_SIM_DET_H */
