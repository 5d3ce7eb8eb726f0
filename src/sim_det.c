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
 * Only one actor runs at a time, so all of a machine's actors run on one
 * host core (ds_core; STACKCAP_SIM_PIN=0 leaves them where Linux puts
 * them): a handoff is then a switch on that core, not a wake of another
 * core, which on a virtual machine costs ten times as much.  Destroy gives
 * every actor back the affinity it had.
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

/* This pthread's actor: its machine's state and its slot there. */
__thread struct sc_ds *sc__ds_self SC_TLS_IE;
__thread uint64_t sc__ds_gen SC_TLS_IE;
static __thread int sc_ds_idx SC_TLS_IE;
static __thread int sc_ds_inpoint SC_TLS_IE;
static __thread int sc_ds_blocking SC_TLS_IE;	/* sc__ds_block() ran */

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

/*
 * This pthread stops being an actor of sc__ds_self (it exits, or becomes
 * an actor of another machine): if its slot, in this life, still holds its
 * pin, it takes its own affinity back and clears the slot.
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
	}
	(void)pthread_mutex_unlock(&ds->ds_reg);
	sc__ds_self = NULL;
}

static int	sc_ds_choose(struct sc_ds *ds, int me, bool waiting);

/*
 * A plain pthread exits: a last scheduling point, where it leaves for good
 * and hands the token on (it holds it: it runs).  Before, a pthread that
 * exited took the token with it and the machine stopped.
 */
static void
sc_ds_exit(void *arg)
{
	struct sc_ds *ds = sc__ds_mine();
	struct sc_ds_actor *a, *b;
	int me = sc_ds_idx, next, i, n;

	(void)arg;
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
 * Become an actor of ds in slot i: pin this pthread to ds_core (ds_reg
 * held, or ds not yet published), saving its affinity for destroy.
 */
static void
sc_ds_adopt(struct sc_ds *ds, int i)
{
	struct sc_ds_actor *a = &ds->ds_actor[i];
	cpu_set_t one;

	sc__ds_self = ds;
	sc__ds_gen = atomic_load(&ds->ds_gen);
	sc_ds_idx = i;
	(void)pthread_once(&sc_ds_exit_once, sc_ds_exit_init);
	(void)pthread_setspecific(sc_ds_exit_key, ds);
	if (ds->ds_core < 0 ||
	    sched_getaffinity(0, sizeof(a->a_mask), &a->a_mask) != 0)
		return;
	CPU_ZERO(&one);
	CPU_SET(ds->ds_core, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		return;
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
	else if ((ds = calloc(1, sizeof(*ds))) != NULL)
		(void)pthread_mutex_init(&ds->ds_reg, NULL);
	else
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
	uint64_t k;
	int i;

	if (m->m_cfg.seed == 0)
		return (0);
	(void)pthread_once(&sc_ds_exit_once, sc_ds_exit_init);
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
	if (sc__ds_mine() != NULL)
		sc_ds_leave();		/* an actor of another machine */
	sc_ds_adopt(ds, i);
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
	int i;

	if (sc__ds_mine() != NULL)
		sc_ds_leave();		/* an actor of another machine */
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
	sc_ds_adopt(ds, i);
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

/* sc__ds_enter(), for a machine in deterministic mode. */
void
sc__ds_enter_slow(struct sc_machine *m)
{
	if (sc__ds_mine() == m->m_ds || atomic_load(&m->m_ds->ds_off))
		return;
	if (sc__pcpu_get() != NULL)
		return;
	sc_ds_plain_attach(m->m_ds);
	sc__ds_point();
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
			a->a_tid = 0;
		}
		sc__host_unlock(&ds->ds_reg);
		(void)pthread_mutex_lock(&sc_ds_pool_mtx);
		sc_ds_core_n[ds->ds_core]--;
		(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
	}
	if (sc__ds_self == ds)
		sc__ds_self = NULL;
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
