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
 * token.  A token that does not move within SC_DS_STUCK_NS of real time
 * is reported on stderr, once, by the watchdog: one pthread of the
 * process, started with its first deterministic machine, that looks at
 * every machine's holder (sc__ds_watch()), so that the actors that wait
 * for the token sleep with no timer.
 *
 * The files: this one, a machine's life (create, stop, the pool of
 * structs); sim_det_actor.c, who the actors are (membership,
 * registration, the pin); sim_det_token.c, the run token and the points
 * (handoff, the futex waits, IPIs taken at a point); sim_det_choose.c,
 * the seeded choice (random, PCT); sim_det_clock.c, virtual time.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_internal.h"
#include "check_var.h"
#include "sc_futex.h"
#include "sim_det_var.h"

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
static pthread_once_t sc_ds_fork_once = PTHREAD_ONCE_INIT;
/* The watchdog: machines armed (a futex word it sleeps on while 0), and
 * whether it runs in this process. */
static _Atomic uint32_t sc_ds_narmed;			/* (g) written */
static bool sc_ds_wd_started;				/* (g) */

/*
 * A child of fork() has none of its parent's machines (they do not
 * survive it) and maybe a pool lock that another pthread held.  Its one
 * pthread runs free of every deterministic machine: their other actors
 * are not in the child, and a point that handed them the token would wait
 * for ever (a call into such a machine then meets the KASSERT that names
 * fork(), as in real mode).
 */
static void
sc_ds_atfork_child(void)
{
	struct sc_ds *ds;

	for (ds = atomic_load(&sc_ds_all); ds != NULL; ds = ds->ds_allnext) {
		atomic_store(&ds->ds_off, 1);
		ds->ds_armed = false;
	}
	(void)pthread_mutex_init(&sc_ds_pool_mtx, NULL);
	memset(sc_ds_core_n, 0, sizeof(sc_ds_core_n));
	/* The parent's watchdog is not in the child: the child's first
	 * machine starts its own. */
	atomic_store(&sc_ds_narmed, 0);
	sc_ds_wd_started = false;
}

static void
sc_ds_fork_init(void)
{
	(void)pthread_atfork(NULL, NULL, sc_ds_atfork_child);
}

/*
 * The watchdog's loop: while a machine is armed, a look at each every
 * SC_DS_WATCH_NS, (g) held, so that no machine's stop (which disarms it
 * under (g)) and no reuse of a struct runs meanwhile; asleep with no
 * timer while none is.  It never calls into a machine: it is no actor.
 */
static void *
sc_ds_watchdog(void *arg)
{
	struct timespec ts = { 0, SC_DS_WATCH_NS };
	struct sc_ds *ds;

	(void)arg;
	for (;;) {
		if (atomic_load(&sc_ds_narmed) == 0) {
			(void)sc__futex_wait_raw(&sc_ds_narmed, 0, 0);
			continue;
		}
		(void)nanosleep(&ts, NULL);
		(void)pthread_mutex_lock(&sc_ds_pool_mtx);
		for (ds = atomic_load(&sc_ds_all); ds != NULL;
		    ds = ds->ds_allnext)
			if (ds->ds_armed)
				sc__ds_watch(ds);
		(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
	}
	return (NULL);
}

/*
 * Start the watchdog if it does not run (g held): detached, every signal
 * blocked (no IPI or clock signal of a machine lands on it), with mask,
 * the creator's affinity from before any machine pinned it (not the pin,
 * which would keep it on one machine's core, with its actors).
 */
static int
sc_ds_watchdog_start(const cpu_set_t *mask)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int error;

	if (sc_ds_wd_started)
		return (0);
	if ((error = pthread_attr_init(&attr)) != 0)
		return (error);
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	(void)pthread_attr_setstacksize(&attr, 64 * 1024);
	(void)pthread_attr_setaffinity_np(&attr, sizeof(*mask), mask);
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	error = pthread_create(&t, &attr, sc_ds_watchdog, NULL);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_attr_destroy(&attr);
	if (error != 0)
		return (error);
	(void)pthread_setname_np(t, "sc-ds-watchdog");
	sc_ds_wd_started = true;
	return (0);
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
	int error, i;

	if (m->m_cfg.seed == 0)
		return (0);
	(void)pthread_once(&sc_ds_fork_once, sc_ds_fork_init);
	if (!sc__ds_orig_mask(&mask)) {
		fprintf(stderr, "stackcap: deterministic mode: this pthread "
		    "already drives %d deterministic machines; no more\n",
		    SC_DS_MAXMEMB);
		return (EAGAIN);
	}
	(void)pthread_mutex_lock(&sc_ds_pool_mtx);
	if ((error = sc_ds_watchdog_start(&mask)) != 0) {
		(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
		fprintf(stderr, "stackcap: deterministic mode: the watchdog "
		    "pthread could not be made (%s)\n", strerror(error));
		return (error);
	}
	if ((ds = sc_ds_get()) == NULL) {
		(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
		return (ENOMEM);
	}
	ds->ds_core = sc_ds_pick_core(&ds->ds_mask);
	if (ds->ds_core >= 0)
		sc_ds_core_n[ds->ds_core]++;
	(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
	ds->ds_m = m;
	/* A machine made inside a run of sc_check() is that run's. */
	if ((ds->ds_chk = atomic_load(&sc__chk_cur)) != NULL)
		atomic_fetch_add(&ds->ds_chk->c_machines, 1);
	sc__ds_choose_init(ds, &m->m_cfg);
	/* The CPUs wait for the token from the start, each at the first
	 * point it reaches; the creator holds it.  The CPU pthreads, made
	 * after this, inherit the creator's pin. */
	for (i = 0; i < m->m_ncpu; i++) {
		ds->ds_actor[i].a_state = SC_DS_WAITING;
		ds->ds_actor[i].a_cpu = i;
		sc__ds_prio_init(ds, i);
	}
	ds->ds_actor[i].a_state = SC_DS_RUNNING;
	ds->ds_actor[i].a_cpu = -1;
	sc__ds_prio_init(ds, i);
	atomic_store(&ds->ds_actor[i].a_go, 1);
	ds->ds_cur = i;
	atomic_store(&ds->ds_nactor, i + 1);
	sc__ds_clock_init(ds);
	m->m_ds = ds;
	sc__ds_adopt(ds, i, &mask);	/* and stays one of the others */
	(void)pthread_mutex_lock(&sc_ds_pool_mtx);
	ds->ds_armed = true;
	atomic_fetch_add(&sc_ds_narmed, 1);
	sc__futex_wake_raw(&sc_ds_narmed, 1);
	(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
	return (0);
}

/* Every struct sc_ds after ds (NULL: the first), or NULL: type-stable. */
struct sc_ds *
sc__ds_next(struct sc_ds *ds)
{
	return (ds == NULL ? atomic_load(&sc_ds_all) : ds->ds_allnext);
}

/*
 * At destroy (or past the steps' bound, sim_det_clock.c): every actor
 * runs free from now on, with the affinity it had before the pin.
 */
void
sc__ds_stop(struct sc_machine *m)
{
	struct sc_ds *ds = m->m_ds;
	int i, n;

	if (ds == NULL || atomic_exchange(&ds->ds_off, 1) != 0)
		return;
	n = atomic_load(&ds->ds_nactor);
	for (i = 0; i < n; i++) {
		atomic_store(&ds->ds_actor[i].a_go, 1);
		sc__futex_wake_raw(&ds->ds_actor[i].a_go, 1);
	}
	if (ds->ds_core >= 0)
		sc__ds_unpin(m);
	/* Past this, the watchdog no longer looks at m, which may go. */
	(void)pthread_mutex_lock(&sc_ds_pool_mtx);
	if (ds->ds_armed) {
		ds->ds_armed = false;
		atomic_fetch_sub(&sc_ds_narmed, 1);
	}
	if (ds->ds_core >= 0)
		sc_ds_core_n[ds->ds_core]--;
	(void)pthread_mutex_unlock(&sc_ds_pool_mtx);
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
