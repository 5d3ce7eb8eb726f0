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
 * microsecond (sc__ds_clock()).
 *
 * Only one actor runs at a time, so all of a machine's actors run on one
 * host core (ds_core; STACKCAP_SIM_PIN=0 leaves them where Linux puts
 * them): a handoff is then a switch on that core, not a wake of another
 * core, which on a virtual machine costs ten times as much.  Destroy gives
 * every actor back the affinity it had.
 *
 * A plain pthread may drive several machines: it is an actor of each that
 * it calls into, and its points are those of the machine its last call
 * went into (sc__ds_enter()).
 *
 * What this does not control: a plain pthread that first calls in at a
 * moment of its own (its registration is a real-time event), and user code
 * that reads real time or blocks outside the library while it holds the
 * token.  A token that does not come back within SC_DS_STUCK_NS of real
 * time is reported on stderr, once.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sc_internal.h"
#include "sc_futex.h"

#define SC_DS_STUCK_NS	(10ull * 1000 * 1000 * 1000)
#define SC_DS_PCT_STEPS	10000	/* PCT's k when cfg.sim_pct_steps is 0 */
#define SC_DS_MAX_STEPS	(50ull * 1000 * 1000)	/* then real concurrency */
/* PCT: the change points' priorities are 0..d-2, the initial above. */
#define SC_DS_PRIO_INIT	(INT64_C(1) << 40)

/*
 * This pthread's actor: sc__ds_self is the machine it acts in now, and
 * sc_ds_idx its slot there.  A plain pthread may be an actor of several
 * machines at once, driving each in turn: sc_ds_memb lists them, each
 * with the life it joined and its slot.  While it runs it holds the run
 * token of each (it gives one up only at a point of that machine, and
 * waits there to get it back), so a machine whose calls it left stands
 * still until it calls in again, as during any code of its own between
 * two calls: each machine's run is its seed's, whatever the others do.
 * (Before, the first call into a second machine left the first for good
 * with its token, and the first stopped.)  A CPU pthread is an actor of
 * its own machine only, and lists nothing.
 */
#define SC_DS_MAXMEMB	16

struct sc_ds_memb {
	struct sc_ds	*me_ds;
	uint64_t	me_gen;		/* the life it joined */
	int		me_idx;		/* its slot there */
};

__thread struct sc_ds *sc__ds_self SC_TLS_IE;
__thread uint64_t sc__ds_gen SC_TLS_IE;
static __thread int sc_ds_idx SC_TLS_IE;
static __thread int sc_ds_inpoint SC_TLS_IE;
static __thread int sc_ds_blocking SC_TLS_IE;	/* sc__ds_block() ran */
static __thread struct sc_ds_memb sc_ds_memb[SC_DS_MAXMEMB];
static __thread int sc_ds_nmemb;
static __thread int sc_ds_pin = -1;	/* the core it pinned itself to */

/*
 * The pool of structs (type-stable, see sim_det.h): the (g) lock.  Lives
 * are numbered from 1 across the process.  sc_ds_core_n: how many
 * machines pin their actors to each host core, so that machines that run
 * at once (an explorer's parallel searches) spread over the cores.
 */
static pthread_mutex_t sc_ds_pool_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct sc_ds *sc_ds_pool;
static uint64_t sc_ds_lives;				/* (g) */
static int sc_ds_core_n[CPU_SETSIZE];			/* (g) */
static struct sc_ds *_Atomic sc_ds_all;	/* every struct (ds_allnext) */

/* A plain pthread's exit: no actor slot names its tid any more. */
static pthread_key_t sc_ds_exit_key;
static pthread_once_t sc_ds_exit_once = PTHREAD_ONCE_INIT;

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

/* Is membership e live: its machine in the life it joined, running? */
static bool
sc_ds_memb_live(const struct sc_ds_memb *e)
{
	return (atomic_load(&e->me_ds->ds_gen) == e->me_gen &&
	    atomic_load(&e->me_ds->ds_off) == 0);
}

/*
 * This pthread's live membership of ds, or NULL; the list keeps only the
 * live ones (of a machine destroyed or stopped since, nothing is left to
 * do: destroy gave the pthread its affinity back).
 */
static struct sc_ds_memb *
sc_ds_memb_find(const struct sc_ds *ds)
{
	struct sc_ds_memb *e = NULL;
	int i, n;

	for (i = n = 0; i < sc_ds_nmemb; i++) {
		if (!sc_ds_memb_live(&sc_ds_memb[i]))
			continue;
		sc_ds_memb[n] = sc_ds_memb[i];
		if (sc_ds_memb[n].me_ds == ds)
			e = &sc_ds_memb[n];
		n++;
	}
	sc_ds_nmemb = n;
	return (e);
}

/* Pin this pthread to host core c. */
static bool
sc_ds_pin_to(int c)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(c, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		return (false);
	sc_ds_pin = c;
	return (true);
}

/*
 * The affinity this pthread had before any machine pinned it: the one
 * that a live membership's slot saved, or its own now.  No ds_reg held
 * (this takes another machine's).
 */
static void
sc_ds_orig_mask(cpu_set_t *mask)
{
	struct sc_ds_actor *a;
	struct sc_ds *ds;
	bool found = false;
	int i;

	(void)sc_ds_memb_find(NULL);
	for (i = 0; i < sc_ds_nmemb && !found; i++) {
		ds = sc_ds_memb[i].me_ds;
		a = &ds->ds_actor[sc_ds_memb[i].me_idx];
		(void)pthread_mutex_lock(&ds->ds_reg);
		if (sc_ds_memb_live(&sc_ds_memb[i]) && a->a_tid != 0) {
			*mask = a->a_mask;
			found = true;
		}
		(void)pthread_mutex_unlock(&ds->ds_reg);
	}
	if (!found && sched_getaffinity(0, sizeof(*mask), mask) != 0)
		CPU_ZERO(mask);
}

/*
 * Membership e becomes this pthread's current machine, and the pthread
 * moves to that machine's core if it is pinned (under ds_reg: a destroy
 * that began gives the affinity back after, or is seen).
 */
static void
sc_ds_switch(const struct sc_ds_memb *e)
{
	struct sc_ds *ds = e->me_ds;

	sc__ds_self = ds;
	sc__ds_gen = e->me_gen;
	sc_ds_idx = e->me_idx;
	if (ds->ds_core < 0 || ds->ds_core == sc_ds_pin)
		return;
	(void)pthread_mutex_lock(&ds->ds_reg);
	if (atomic_load(&ds->ds_off) == 0 &&
	    ds->ds_actor[e->me_idx].a_tid != 0)
		(void)sc_ds_pin_to(ds->ds_core);
	(void)pthread_mutex_unlock(&ds->ds_reg);
}

/*
 * This pthread stops being an actor of sc__ds_self (it exits): if its
 * slot, in this life, still holds its pin, it takes its own affinity back
 * and clears the slot.
 */
static void
sc_ds_leave(void)
{
	struct sc_ds *ds = sc__ds_self;
	struct sc_ds_actor *a;

	if (ds == NULL)
		return;
	(void)pthread_mutex_lock(&ds->ds_reg);
	a = &ds->ds_actor[sc_ds_idx];
	if (atomic_load(&ds->ds_gen) == sc__ds_gen && a->a_tid != 0 &&
	    a->a_cpu < 0) {
		(void)sched_setaffinity(0, sizeof(a->a_mask), &a->a_mask);
		a->a_tid = 0;
		sc_ds_pin = -1;
	}
	(void)pthread_mutex_unlock(&ds->ds_reg);
	sc__ds_self = NULL;
}

static int	sc_ds_choose(struct sc_ds *ds, int me, bool waiting);

/*
 * A plain pthread exits, an actor of sc__ds_self: a last scheduling
 * point, where it leaves for good and hands the token on (it holds it: it
 * runs).  Before, a pthread that exited took the token with it and the
 * machine stopped.
 */
static void
sc_ds_exit1(void)
{
	struct sc_ds *ds = sc__ds_mine();
	struct sc_ds_actor *a, *b;
	int me = sc_ds_idx, next, i, n;

	if (ds == NULL || atomic_load(&ds->ds_off) ||
	    ds->ds_actor[me].a_cpu >= 0 || atomic_load(&ds->ds_cur) != me) {
		sc_ds_leave();
		return;
	}
	ds->ds_step++;
	SC_CNT_INC(ds->ds_m, sim_steps);
	next = sc_ds_choose(ds, me, true);
	if (next == me) {
		/* Every other actor is a blocked futex waiter, and none will
		 * run to end a bound: they poll again. */
		n = atomic_load(&ds->ds_nactor);
		for (i = 0; i < n; i++)
			ds->ds_actor[i].a_wuaddr = NULL;
		next = sc_ds_choose(ds, me, true);
	}
	a = &ds->ds_actor[me];
	a->a_state = SC_DS_GONE;
	atomic_store(&a->a_go, 0);
	sc_ds_leave();
	if (next == me)
		return;			/* no one waits: nothing can run */
	b = &ds->ds_actor[next];
	b->a_state = SC_DS_RUNNING;
	atomic_store(&ds->ds_cur, next);
	atomic_store(&b->a_go, 1);
	sc__futex_wake_raw(&b->a_go, 1);
}

/* A plain pthread exits: it leaves each machine it is an actor of. */
static void
sc_ds_exit(void *arg)
{
	int i;

	(void)arg;
	(void)sc_ds_memb_find(NULL);
	for (i = 0; i < sc_ds_nmemb; i++) {
		sc__ds_self = sc_ds_memb[i].me_ds;
		sc__ds_gen = sc_ds_memb[i].me_gen;
		sc_ds_idx = sc_ds_memb[i].me_idx;
		sc_ds_exit1();
	}
	sc_ds_nmemb = 0;
	sc__ds_self = NULL;
}

/*
 * A child of fork() has none of its parent's machines (they do not
 * survive it) and maybe a pool lock that another pthread held.
 */
static void
sc_ds_atfork_child(void)
{
	(void)pthread_mutex_init(&sc_ds_pool_mtx, NULL);
	memset(sc_ds_core_n, 0, sizeof(sc_ds_core_n));
}

static void
sc_ds_exit_init(void)
{
	(void)pthread_key_create(&sc_ds_exit_key, sc_ds_exit);
	(void)pthread_atfork(NULL, NULL, sc_ds_atfork_child);
}

/*
 * Become an actor of ds in slot i, ds the current machine (ds_reg held,
 * or ds not yet published; a free entry in sc_ds_memb): pin this pthread
 * to ds_core, saving mask, its affinity before any pin, for destroy.
 */
static void
sc_ds_adopt(struct sc_ds *ds, int i, const cpu_set_t *mask)
{
	struct sc_ds_actor *a = &ds->ds_actor[i];
	struct sc_ds_memb *e = &sc_ds_memb[sc_ds_nmemb++];

	e->me_ds = ds;
	e->me_gen = atomic_load(&ds->ds_gen);
	e->me_idx = i;
	sc__ds_self = ds;
	sc__ds_gen = e->me_gen;
	sc_ds_idx = i;
	(void)pthread_once(&sc_ds_exit_once, sc_ds_exit_init);
	(void)pthread_setspecific(sc_ds_exit_key, ds);
	if (ds->ds_core < 0 || CPU_COUNT(mask) == 0 ||
	    !sc_ds_pin_to(ds->ds_core))
		return;
	a->a_mask = *mask;
	a->a_tid = (pid_t)syscall(SYS_gettid);
}

/*
 * The host core for a new machine's actors (g held): of the cores the
 * creator may run on, the one that fewest machines use, the creator's own
 * on a tie; or -1 (STACKCAP_SIM_PIN=0, or no affinity to read).
 */
static int
sc_ds_pick_core(cpu_set_t *mask)
{
	const char *v = getenv("STACKCAP_SIM_PIN");
	int c, best = -1, here = sched_getcpu();

	if ((v != NULL && strcmp(v, "0") == 0) ||
	    sched_getaffinity(0, sizeof(*mask), mask) != 0)
		return (-1);
	for (c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, mask))
			continue;
		if (best < 0 || sc_ds_core_n[c] < sc_ds_core_n[best] ||
		    (sc_ds_core_n[c] == sc_ds_core_n[best] && c == here))
			best = c;
	}
	return (best);
}

/* A struct from the pool, zeroed from ds_m on, with a new life (g held). */
static struct sc_ds *
sc_ds_get(void)
{
	struct sc_ds *ds = sc_ds_pool;

	if (ds != NULL)
		sc_ds_pool = ds->ds_poolnext;
	else if ((ds = calloc(1, sizeof(*ds))) != NULL) {
		(void)pthread_mutex_init(&ds->ds_reg, NULL);
		sc__sleepq_chain_init(&ds->ds_slpq);
		ds->ds_allnext = atomic_load(&sc_ds_all);
		atomic_store(&sc_ds_all, ds);
	} else
		return (NULL);
	(void)pthread_mutex_lock(&ds->ds_reg);
	memset(&ds->ds_m, 0, sizeof(*ds) - offsetof(struct sc_ds, ds_m));
	atomic_store(&ds->ds_gen, ++sc_ds_lives);
	(void)pthread_mutex_unlock(&ds->ds_reg);
	return (ds);
}

int
sc__ds_init(struct sc_machine *m)
{
	struct sc_ds *ds;
	cpu_set_t mask;
	uint64_t k;
	int i;

	if (m->m_cfg.seed == 0)
		return (0);
	(void)pthread_once(&sc_ds_exit_once, sc_ds_exit_init);
	(void)sc_ds_memb_find(NULL);
	if (sc_ds_nmemb >= SC_DS_MAXMEMB) {
		fprintf(stderr, "stackcap: deterministic mode: this pthread "
		    "already drives %d deterministic machines; no more\n",
		    SC_DS_MAXMEMB);
		return (EAGAIN);
	}
	sc_ds_orig_mask(&mask);
	(void)pthread_mutex_lock(&sc_ds_pool_mtx);
	if ((ds = sc_ds_get()) == NULL) {
		(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
		return (ENOMEM);
	}
	ds->ds_core = sc_ds_pick_core(&ds->ds_mask);
	if (ds->ds_core >= 0)
		sc_ds_core_n[ds->ds_core]++;
	(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
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
	 * point it reaches; the creator holds it.  The CPU pthreads, made
	 * after this, inherit the creator's pin. */
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
	m->m_ds = ds;
	sc_ds_adopt(ds, i, &mask);	/* and stays one of the others */
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
	sc__ds_gen = atomic_load(&ds->ds_gen);
	sc_ds_idx = pc->pc_cpuid;
}

/* A plain pthread that calls in for the first time: a new slot, waiting. */
static void
sc_ds_plain_attach(struct sc_ds *ds)
{
	cpu_set_t mask;
	int i;

	sc_ds_orig_mask(&mask);		/* and drops the dead entries */
	if (sc_ds_nmemb >= SC_DS_MAXMEMB) {
		fprintf(stderr, "stackcap: deterministic mode: this pthread "
		    "drives more than %d deterministic machines; it runs "
		    "uncontrolled in this one\n", SC_DS_MAXMEMB);
		sc__ds_self = NULL;
		return;
	}
	(void)pthread_mutex_lock(&ds->ds_reg);
	i = atomic_load(&ds->ds_nactor);
	if (i >= SC_DS_MAXACTOR) {
		(void)pthread_mutex_unlock(&ds->ds_reg);
		fprintf(stderr, "stackcap: deterministic mode: more than %d "
		    "pthreads call in; this one runs uncontrolled\n",
		    SC_DS_MAXACTOR);
		sc__ds_self = NULL;
		return;
	}
	ds->ds_actor[i].a_cpu = -1;
	ds->ds_actor[i].a_state = SC_DS_WAITING;
	/* The draw is the holder's; a late slot's priority is its index. */
	ds->ds_actor[i].a_prio = SC_DS_PRIO_INIT + i;
	sc_ds_adopt(ds, i, &mask);
	atomic_store(&ds->ds_nactor, i + 1);
	(void)pthread_mutex_unlock(&ds->ds_reg);
	SC_CNT_INC(ds->ds_m, sim_late);
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
			    "library, or drive another machine for long, "
			    "while it holds it?\n", me,
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
	sc__futex_wake_raw(&b->a_go, 1);
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

/*
 * Is slot i a candidate for the token?  me: only if it does not wait.  A
 * futex waiter (sc__ds_block()) only once its wait would end.
 */
static bool
sc_ds_candidate(const struct sc_ds *ds, int i, int me, bool self)
{
	const struct sc_ds_actor *a = &ds->ds_actor[i];

	if (i == me)
		return (self);
	if (a->a_state != SC_DS_WAITING)
		return (false);
	if (a->a_wuaddr == NULL || atomic_load(a->a_wuaddr) != a->a_wval ||
	    ds->ds_step >= a->a_wuntil)
		return (true);
	return (a->a_cpu >= 0 && atomic_load(
	    &ds->ds_m->m_pcpu[a->a_cpu].pc_ipi_pending) != 0);
}

/*
 * The next point of this actor is a futex wait on uaddr (sc_futex.h).
 * Under the random chooser only: under PCT a waiter's polls hand the token
 * to a random actor (sc_ds_choose()), and without them PCT found less
 * (bench_explore: the snapshot body reached its window in 59 of 100 seeds
 * instead of 95 under ULE; no-proc-lock failed in 21 instead of 49 under
 * 4BSD), while the random chooser found as much, in less time.
 */
void
sc__ds_block(_Atomic uint32_t *uaddr, uint32_t val, long timeout_ns)
{
	struct sc_ds *ds = sc__ds_mine();
	struct sc_ds_actor *a;

	if (ds == NULL || sc_ds_inpoint || ds->ds_pct_depth != 0)
		return;
	a = &ds->ds_actor[sc_ds_idx];
	a->a_wuaddr = uaddr;
	a->a_wval = val;
	/* Past the bound it polls again, and sees it: one step, 1 us. */
	a->a_wuntil = timeout_ns > 0 ? ds->ds_step + 1 +
	    (uint64_t)timeout_ns / 1000 : UINT64_MAX;
	sc_ds_blocking = 1;
}

/* A wake of uaddr (by the holder): its waiters are candidates again. */
void
sc__ds_futex_wake(_Atomic uint32_t *uaddr)
{
	struct sc_ds *ds = sc__ds_mine();
	int i, n;

	if (ds == NULL)
		return;
	n = atomic_load(&ds->ds_nactor);
	for (i = 0; i < n; i++)
		if (ds->ds_actor[i].a_wuaddr == uaddr)
			ds->ds_actor[i].a_wuaddr = NULL;
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
	struct sc_ds *ds = sc__ds_mine();
	int me, next;

	if (ds == NULL || sc_ds_inpoint || atomic_load(&ds->ds_off))
		return;
	sc_ds_inpoint = 1;
	me = sc_ds_idx;
	/* A CPU's first point, or a plain pthread's first call. */
	sc_ds_wait_token(ds, me);
	if (!sc_ds_blocking)
		ds->ds_actor[me].a_wuaddr = NULL;
	sc_ds_blocking = 0;
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
	ds->ds_actor[me].a_wuaddr = NULL;
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

/*
 * sc__ds_enter(), for a machine in deterministic mode: a plain pthread
 * that is an actor of it makes it its current machine, without a point
 * (it holds its token: it runs); its first call makes it one.
 */
void
sc__ds_enter_slow(struct sc_machine *m)
{
	struct sc_ds *ds = m->m_ds;
	struct sc_ds_memb *e;

	if (sc__ds_mine() == ds || atomic_load(&ds->ds_off))
		return;
	if (sc__pcpu_get() != NULL)
		return;
	if ((e = sc_ds_memb_find(ds)) != NULL) {
		sc_ds_switch(e);
		return;
	}
	sc_ds_plain_attach(ds);
	sc__ds_point();
}

/* Every struct sc_ds after ds (NULL: the first), or NULL: type-stable. */
struct sc_ds *
sc__ds_next(struct sc_ds *ds)
{
	return (ds == NULL ? atomic_load(&sc_ds_all) : ds->ds_allnext);
}


/*
 * At destroy (or past SC_DS_MAX_STEPS): every actor runs free from now on,
 * with the affinity it had before the pin.  A plain pthread's tid in its
 * slot means that it is alive (it clears it at exit, under ds_reg).
 */
void
sc__ds_stop(struct sc_machine *m)
{
	struct sc_ds *ds = m->m_ds;
	struct sc_ds_actor *a;
	pid_t self = (pid_t)syscall(SYS_gettid);
	int i, n;

	if (ds == NULL || atomic_exchange(&ds->ds_off, 1) != 0)
		return;
	n = atomic_load(&ds->ds_nactor);
	for (i = 0; i < n; i++) {
		atomic_store(&ds->ds_actor[i].a_go, 1);
		sc__futex_wake_raw(&ds->ds_actor[i].a_go, 1);
	}
	if (ds->ds_core >= 0) {
		sc__host_lock(&ds->ds_reg);
		for (i = 0; i < n; i++) {
			a = &ds->ds_actor[i];
			if (a->a_cpu >= 0 && a->a_cpu < m->m_ncpu)
				(void)pthread_setaffinity_np(
				    m->m_pcpu[a->a_cpu].pc_pthread,
				    sizeof(ds->ds_mask), &ds->ds_mask);
			else if (a->a_tid != 0)
				(void)sched_setaffinity(a->a_tid,
				    sizeof(a->a_mask), &a->a_mask);
			if (a->a_tid == self)
				sc_ds_pin = -1;	/* a switch pins again */
			a->a_tid = 0;
		}
		sc__host_unlock(&ds->ds_reg);
		(void)pthread_mutex_lock(&sc_ds_pool_mtx);
		sc_ds_core_n[ds->ds_core]--;
		(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
	}
	if (sc__ds_self == ds)
		sc__ds_self = NULL;	/* and its entry is dead */
}

/* Back to the pool: never freed (sim_det.h). */
void
sc__ds_free(struct sc_machine *m)
{
	struct sc_ds *ds = m->m_ds;

	if (ds == NULL)
		return;
	sc__ds_stop(m);			/* a machine whose create failed */
	(void)pthread_mutex_lock(&sc_ds_pool_mtx);
	ds->ds_poolnext = sc_ds_pool;
	sc_ds_pool = ds;
	(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
	m->m_ds = NULL;
}
