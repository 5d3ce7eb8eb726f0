/*
 * Deterministic simulation (internal; src/sim_det.c, docs/determinism.md).
 * Included by sc_internal.h after struct sc_machine.
 */
#ifndef SC_SIM_DET_H
#define SC_SIM_DET_H

/*
 * Deterministic simulation (sim_det.c).  Locks: (d) written only by the
 * holder of the run token, or before the slot is published (ds_reg);
 * (a) atomics.
 */
#define SC_DS_MAXACTOR	(SC_MAXCPU + 16)
#define SC_DS_PCT_MAXDEPTH 64
#define SC_DS_WAITING	1
#define SC_DS_RUNNING	2

struct sc_ds_actor {
	_Atomic uint32_t a_go;		/* (a) futex: 1 while it holds the
					   token */
	int		a_state;	/* (d) SC_DS_* */
	int64_t		a_prio;		/* (d) PCT: higher runs first */
	int		a_cpu;		/* (d) its CPU, or -1: a plain
					   pthread */
};

struct sc_ds {
	struct sc_machine *ds_m;	/* (c) */
	uint64_t	ds_rng;		/* (d) the generator's state */
	uint64_t	ds_step;	/* (d) points passed: virtual time */
	_Atomic int	ds_cur;		/* (a) the holder's slot */
	_Atomic int	ds_nactor;	/* (a) slots in use */
	_Atomic int	ds_off;		/* (a) destroy began: all run free */
	_Atomic int	ds_stuck;	/* (a) the stuck-token report, once */
	int		ds_pct_depth;	/* (c) PCT's d, or 0: random */
	int		ds_pct_next;	/* (d) the next change point */
	uint64_t	ds_pct_cp[SC_DS_PCT_MAXDEPTH]; /* (c) change points, by
					   step, sorted */
	pthread_mutex_t	ds_reg;		/* registration of a plain pthread */
	struct sc_ds_actor ds_actor[SC_DS_MAXACTOR]; /* (d) */
};

int	sc__ds_init(struct sc_machine *m);
void	sc__ds_cpu_attach(struct sc_pcpu *pc);
void	sc__ds_enter_slow(struct sc_machine *m);
void	sc__ds_point_slow(bool waiting);
void	sc__ds_stop(struct sc_machine *m);
void	sc__ds_free(struct sc_machine *m);
void	sc__ipi_poll(struct sc_pcpu *pc, uintptr_t rbp, uintptr_t rip);

/*
 * This pthread's deterministic machine, or NULL (sim_det.c).  The inline
 * tests below are all that real concurrency pays: one TLS load at each
 * spin-lock acquire and release, and no call.
 */
extern __thread struct sc_ds *sc__ds_self SC_TLS_IE;

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

	return (ds != NULL && atomic_load_explicit(&ds->ds_off,
	    memory_order_relaxed) == 0);
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

/* The first call of a plain pthread into a deterministic machine. */
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

/* Deterministic mode on (and not yet switched off by destroy). */
static inline bool
sc__ds_on(const struct sc_machine *m)
{
	return (m->m_ds != NULL && atomic_load_explicit(&m->m_ds->ds_off,
	    memory_order_relaxed) == 0);
}

#endif /* !SC_SIM_DET_H */
