/*
 * Deterministic simulation (cfg.seed != 0): one run token, a seeded choice.
 *
 * No kernel counterpart: this is the extension of issue 11, after
 * FoundationDB's simulator, shuttle and loom.  The actors are the CPU
 * pthreads (one each, whatever simulated thread runs on it) and the plain
 * pthreads that call in.  Exactly one actor holds the run token.  At each
 * scheduling point (sc__ds_point(): spin-lock acquire, spin and release,
 * each wait of the capture protocol, the idle loop, sc_maybe_yield(), each
 * hook) the holder draws the next holder from the seeded generator among
 * the actors that wait at a point, and gives it the token.  Code between
 * two points runs without interruption.  An IPI is not a signal: the
 * target CPU takes it at one of its own points that the generator chooses,
 * and walks from that point's frame.  Time is virtual: one step, one
 * microsecond (sc__ds_now()).
 *
 * What this does not control: a plain pthread that first calls in at a
 * moment of its own (its registration is a real-time event), and user code
 * that reads real time or blocks outside the library while it holds the
 * token.  A token that does not come back within SC_DS_STUCK_NS of real
 * time is reported on stderr, once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sc_internal.h"
#include "sc_futex.h"

#define SC_DS_STUCK_NS	(10ull * 1000 * 1000 * 1000)
#define SC_DS_PCT_STEPS	10000	/* PCT's k when cfg.sim_pct_steps is 0 */
#define SC_DS_MAX_STEPS	(50ull * 1000 * 1000)	/* then real concurrency */
/* PCT: the change points' priorities are 0..d-2, the initial above. */
#define SC_DS_PRIO_INIT	(INT64_C(1) << 40)

/* This pthread's actor: its machine's state and its slot there. */
__thread struct sc_ds *sc__ds_self SC_TLS_IE;
static __thread int sc_ds_idx SC_TLS_IE;
static __thread int sc_ds_inpoint SC_TLS_IE;

/* splitmix64: small, and every seed, 0 aside, gives its own stream. */
static uint64_t
sc_ds_rand(struct sc_ds *ds)
{
	uint64_t z = (ds->ds_rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31));
}

/* A PCT priority for a new slot: above every change point's, distinct. */
static void
sc_ds_prio_init(struct sc_ds *ds, int i)
{
	ds->ds_actor[i].a_prio = SC_DS_PRIO_INIT +
	    (int64_t)(sc_ds_rand(ds) % 1000000) * SC_DS_MAXACTOR + i;
}

static int
sc_ds_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y ? -1 : x > y);
}

int
sc__ds_init(struct sc_machine *m)
{
	struct sc_ds *ds;
	uint64_t k;
	int i;

	if (m->m_cfg.seed == 0)
		return (0);
	if ((ds = calloc(1, sizeof(*ds))) == NULL)
		return (ENOMEM);
	ds->ds_rng = m->m_cfg.seed;
	ds->ds_m = m;
	if (m->m_cfg.sim_pct_depth > 0) {
		ds->ds_pct_depth = m->m_cfg.sim_pct_depth;
		k = m->m_cfg.sim_pct_steps != 0 ? m->m_cfg.sim_pct_steps :
		    SC_DS_PCT_STEPS;
		for (i = 0; i < ds->ds_pct_depth - 1; i++)
			ds->ds_pct_cp[i] = 1 + sc_ds_rand(ds) % k;
		qsort(ds->ds_pct_cp, (size_t)(ds->ds_pct_depth - 1),
		    sizeof(ds->ds_pct_cp[0]), sc_ds_cmp);
	}
	/* The CPUs wait for the token from the start, each at the first
	 * point it reaches; the creator holds it. */
	for (i = 0; i < m->m_ncpu; i++) {
		ds->ds_actor[i].a_state = SC_DS_WAITING;
		ds->ds_actor[i].a_cpu = i;
		sc_ds_prio_init(ds, i);
	}
	ds->ds_actor[i].a_state = SC_DS_RUNNING;
	ds->ds_actor[i].a_cpu = -1;
	sc_ds_prio_init(ds, i);
	atomic_store(&ds->ds_actor[i].a_go, 1);
	ds->ds_cur = i;
	atomic_store(&ds->ds_nactor, i + 1);
	(void)pthread_mutex_init(&ds->ds_reg, NULL);
	m->m_ds = ds;
	sc__ds_self = ds;
	sc_ds_idx = i;
	return (0);
}

/* A CPU pthread takes its slot (before its first point). */
void
sc__ds_cpu_attach(struct sc_pcpu *pc)
{
	struct sc_ds *ds = pc->pc_machine->m_ds;

	if (ds == NULL)
		return;
	sc__ds_self = ds;
	sc_ds_idx = pc->pc_cpuid;
}

/* A plain pthread that calls in for the first time: a new slot, waiting. */
static void
sc_ds_plain_attach(struct sc_ds *ds)
{
	int i;

	(void)pthread_mutex_lock(&ds->ds_reg);
	i = atomic_load(&ds->ds_nactor);
	if (i >= SC_DS_MAXACTOR) {
		(void)pthread_mutex_unlock(&ds->ds_reg);
		fprintf(stderr, "stackcap: deterministic mode: more than %d "
		    "pthreads call in; this one runs uncontrolled\n",
		    SC_DS_MAXACTOR);
		return;
	}
	ds->ds_actor[i].a_cpu = -1;
	ds->ds_actor[i].a_state = SC_DS_WAITING;
	/* The draw is the holder's; a late slot's priority is its index. */
	ds->ds_actor[i].a_prio = SC_DS_PRIO_INIT + i;
	atomic_store(&ds->ds_nactor, i + 1);
	(void)pthread_mutex_unlock(&ds->ds_reg);
	SC_CNT_INC(ds->ds_m, sim_late);
	sc__ds_self = ds;
	sc_ds_idx = i;
}

/* Wait until this actor holds the token (or the mode is off). */
static void
sc_ds_wait_token(struct sc_ds *ds, int me)
{
	struct sc_ds_actor *a = &ds->ds_actor[me];
	uint64_t start = 0, now;

	while (atomic_load(&a->a_go) == 0 && atomic_load(&ds->ds_off) == 0) {
		sc__futex_wait_raw(&a->a_go, 0, 100 * 1000 * 1000L);
		now = sc_now_ns();
		if (start == 0)
			start = now;
		else if (now - start > SC_DS_STUCK_NS &&
		    atomic_exchange(&ds->ds_stuck, 1) == 0)
			fprintf(stderr, "stackcap: deterministic mode: actor "
			    "%d has waited 10 s for the run token, held by "
			    "actor %d: does a pthread block outside the "
			    "library while it holds it?\n", me,
			    atomic_load(&ds->ds_cur));
	}
}

/* Give the token from me to next, then wait for it to come back. */
static void
sc_ds_handoff(struct sc_ds *ds, int me, int next)
{
	struct sc_ds_actor *a = &ds->ds_actor[me], *b = &ds->ds_actor[next];

	a->a_state = SC_DS_WAITING;
	atomic_store(&a->a_go, 0);
	b->a_state = SC_DS_RUNNING;
	atomic_store(&ds->ds_cur, next);
	atomic_store(&b->a_go, 1);
	sc__futex_wake(&b->a_go, 1);
	sc_ds_wait_token(ds, me);
}

/* The IPIs pending on this CPU, taken at this point if the draw says so. */
static void
sc_ds_poll_ipi(struct sc_ds *ds, int me, uintptr_t rbp, uintptr_t rip)
{
	struct sc_pcpu *pc;
	int cpu = ds->ds_actor[me].a_cpu;

	if (cpu < 0)
		return;
	pc = &ds->ds_m->m_pcpu[cpu];
	if (atomic_load(&pc->pc_ipi_pending) == 0 ||
	    atomic_load(&pc->pc_curthread) == NULL)
		return;
	if ((sc_ds_rand(ds) & 1) == 0)
		return;			/* later: at another point */
	sc__ipi_poll(pc, rbp, rip);
}

/* Is slot i a candidate for the token?  me: only if it does not wait. */
static bool
sc_ds_candidate(const struct sc_ds *ds, int i, int me, bool self)
{
	if (i == me)
		return (self);
	return (ds->ds_actor[i].a_state == SC_DS_WAITING);
}

/*
 * The next holder.  Random: uniform among the candidates.  PCT
 * (Burckhardt et al., ASPLOS 2010): the candidate of highest priority;
 * at each of the depth - 1 change points the holder drops below every
 * initial priority.  An actor that waits for another (a spin, a blocked
 * wait) is no candidate while another is.  PCT assumes that a waiter
 * blocks; ours poll, and strict priorities among pollers would starve the
 * one they wait for (say, one that a change point demoted).  So a waiter
 * hands the token to one of the others drawn at random, under PCT too,
 * and keeps its priority.
 */
static int
sc_ds_choose(struct sc_ds *ds, int me, bool waiting)
{
	int n, i, best, ncand;
	bool self;

	n = atomic_load(&ds->ds_nactor);
	for (ncand = 0, i = 0; i < n; i++)
		if (i != me && sc_ds_candidate(ds, i, me, false))
			ncand++;
	if (ncand == 0)
		return (me);
	self = !waiting;
	if (self)
		ncand++;
	if (ds->ds_pct_depth == 0 || waiting) {
		best = (int)(sc_ds_rand(ds) % (uint64_t)ncand);
		for (i = 0; i < n; i++)
			if (sc_ds_candidate(ds, i, me, self) && best-- == 0)
				return (i);
		return (me);
	}
	if (ds->ds_pct_next < ds->ds_pct_depth - 1 &&
	    ds->ds_step >= ds->ds_pct_cp[ds->ds_pct_next]) {
		ds->ds_actor[me].a_prio = ds->ds_pct_next;
		ds->ds_pct_next++;
	}
	for (best = -1, i = 0; i < n; i++)
		if (sc_ds_candidate(ds, i, me, self) && (best < 0 ||
		    ds->ds_actor[i].a_prio > ds->ds_actor[best].a_prio))
			best = i;
	return (best < 0 ? me : best);
}

static void
sc_ds_point1(uintptr_t rbp, uintptr_t rip, bool waiting)
{
	struct sc_ds *ds = sc__ds_self;
	int me, next;

	if (ds == NULL || sc_ds_inpoint || atomic_load(&ds->ds_off))
		return;
	sc_ds_inpoint = 1;
	me = sc_ds_idx;
	/* A CPU's first point, or a plain pthread's first call. */
	sc_ds_wait_token(ds, me);
	ds->ds_step++;
	SC_CNT_INC(ds->ds_m, sim_steps);
	if (__builtin_expect(ds->ds_step >= SC_DS_MAX_STEPS, 0)) {
		/* A livelock of the workload: no bound of ours is that long.
		 * Let the machine run free rather than spin for ever. */
		fprintf(stderr, "stackcap: deterministic mode: %ju steps "
		    "without an end (a livelock?); the machine runs with real "
		    "concurrency from here on\n", (uintmax_t)ds->ds_step);
		sc__ds_stop(ds->ds_m);
		sc_ds_inpoint = 0;
		return;
	}
	next = sc_ds_choose(ds, me, waiting);
	if (next != me)
		sc_ds_handoff(ds, me, next);
	sc_ds_poll_ipi(ds, me, rbp, rip);
	sc_ds_inpoint = 0;
}

/*
 * A scheduling point (sc__ds_point(), sc__ds_wait()): an IPI taken here
 * walks from this function's frame, so it is never inlined.
 */
__attribute__((noinline)) void
sc__ds_point_slow(bool waiting)
{
	sc_ds_point1((uintptr_t)__builtin_frame_address(0),
	    (uintptr_t)__builtin_return_address(0), waiting);
}

/* sc__ds_enter(), for a machine in deterministic mode. */
void
sc__ds_enter_slow(struct sc_machine *m)
{
	if (sc__ds_self == m->m_ds || atomic_load(&m->m_ds->ds_off))
		return;
	if (sc__pcpu_get() != NULL)
		return;
	sc_ds_plain_attach(m->m_ds);
	sc__ds_point();
}


/* At destroy (or past SC_DS_MAX_STEPS): every actor runs free from now on. */
void
sc__ds_stop(struct sc_machine *m)
{
	struct sc_ds *ds = m->m_ds;
	int i, n;

	if (ds == NULL)
		return;
	atomic_store(&ds->ds_off, 1);
	n = atomic_load(&ds->ds_nactor);
	for (i = 0; i < n; i++) {
		atomic_store(&ds->ds_actor[i].a_go, 1);
		sc__futex_wake(&ds->ds_actor[i].a_go, 1);
	}
	if (sc__ds_self == ds)
		sc__ds_self = NULL;
}

void
sc__ds_free(struct sc_machine *m)
{
	if (m->m_ds == NULL)
		return;
	(void)pthread_mutex_destroy(&m->m_ds->ds_reg);
	free(m->m_ds);
	m->m_ds = NULL;
}
