/*
 * Deterministic simulation: who the actors are (sim_det.c has the whole
 * picture).  A CPU pthread is an actor of its machine from its start; a
 * plain pthread becomes one at its first call in (sc__ds_enter()), stays
 * one until it exits or the machine stops, and in between is pinned to
 * the machine's host core.
 *
 * This pthread's actor: sc__ds_self is the machine it acts in now, and
 * sc__ds_idx its slot there.  A plain pthread may be an actor of several
 * machines at once, driving each in turn: sc_ds_memb lists them, each
 * with the life it joined and its slot.  While it runs it holds the run
 * token of each (it gives one up only at a point of that machine, and
 * waits there to get it back), so a machine whose calls it left stands
 * still until it calls in again, as during any code of its own between
 * two calls: each machine's run is its seed's, whatever the others do.
 * (Before, the first call into a second machine left the first for good
 * with its token, and the first stopped.)  A CPU pthread is an actor of
 * its own machine only, and lists nothing.
 *
 * No kernel counterpart.
 */
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sc_internal.h"
#include "sim_det_var.h"

struct sc_ds_memb {
	struct sc_ds	*me_ds;
	uint64_t	me_gen;		/* the life it joined */
	int		me_idx;		/* its slot there */
};

__thread struct sc_ds *sc__ds_self SC_TLS_IE;
__thread uint64_t sc__ds_gen SC_TLS_IE;
__thread int sc__ds_idx SC_TLS_IE;
static __thread struct sc_ds_memb sc_ds_memb[SC_DS_MAXMEMB];
static __thread int sc_ds_nmemb;
static __thread int sc_ds_pin = -1;	/* the core it pinned itself to */

/* A plain pthread's exit: no actor slot names its tid any more. */
static pthread_key_t sc_ds_exit_key;
static pthread_once_t sc_ds_exit_once = PTHREAD_ONCE_INIT;

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
 * May this pthread become an actor of one more machine?  If so, mask is
 * the affinity it had before any machine pinned it: the one that a live
 * membership's slot saved, or its own now.  No ds_reg held (this takes
 * another machine's).
 */
bool
sc__ds_orig_mask(cpu_set_t *mask)
{
	struct sc_ds_actor *a;
	struct sc_ds *ds;
	bool found = false;
	int i;

	(void)sc_ds_memb_find(NULL);
	if (sc_ds_nmemb >= SC_DS_MAXMEMB)
		return (false);
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
	return (true);
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
	sc__ds_idx = e->me_idx;
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
void
sc__ds_leave(void)
{
	struct sc_ds *ds = sc__ds_self;
	struct sc_ds_actor *a;

	if (ds == NULL)
		return;
	(void)pthread_mutex_lock(&ds->ds_reg);
	a = &ds->ds_actor[sc__ds_idx];
	if (atomic_load(&ds->ds_gen) == sc__ds_gen && a->a_tid != 0 &&
	    a->a_cpu < 0) {
		(void)sched_setaffinity(0, sizeof(a->a_mask), &a->a_mask);
		a->a_tid = 0;
		sc_ds_pin = -1;
	}
	(void)pthread_mutex_unlock(&ds->ds_reg);
	sc__ds_self = NULL;
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
		sc__ds_idx = sc_ds_memb[i].me_idx;
		sc__ds_point_exit();
	}
	sc_ds_nmemb = 0;
	sc__ds_self = NULL;
}

static void
sc_ds_exit_init(void)
{
	(void)pthread_key_create(&sc_ds_exit_key, sc_ds_exit);
}

/*
 * Become an actor of ds in slot i, ds the current machine (ds_reg held,
 * or ds not yet published; sc__ds_orig_mask() said there is room): pin
 * this pthread to ds_core, saving mask, its affinity before any pin, for
 * destroy.
 */
void
sc__ds_adopt(struct sc_ds *ds, int i, const cpu_set_t *mask)
{
	struct sc_ds_actor *a = &ds->ds_actor[i];
	struct sc_ds_memb *e = &sc_ds_memb[sc_ds_nmemb++];

	e->me_ds = ds;
	e->me_gen = atomic_load(&ds->ds_gen);
	e->me_idx = i;
	sc__ds_self = ds;
	sc__ds_gen = e->me_gen;
	sc__ds_idx = i;
	(void)pthread_once(&sc_ds_exit_once, sc_ds_exit_init);
	(void)pthread_setspecific(sc_ds_exit_key, ds);
	if (ds->ds_core < 0 || CPU_COUNT(mask) == 0 ||
	    !sc_ds_pin_to(ds->ds_core))
		return;
	a->a_mask = *mask;
	a->a_tid = (pid_t)syscall(SYS_gettid);
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
	sc__ds_idx = pc->pc_cpuid;
}

/* A plain pthread that calls in for the first time: a new slot, waiting. */
static void
sc_ds_plain_attach(struct sc_ds *ds)
{
	cpu_set_t mask;
	int i;

	if (!sc__ds_orig_mask(&mask)) {
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
	sc__ds_prio_late(ds, i);
	sc__ds_adopt(ds, i, &mask);
	atomic_store(&ds->ds_nactor, i + 1);
	(void)pthread_mutex_unlock(&ds->ds_reg);
	SC_CNT_INC(ds->ds_m, sim_late);
}

/*
 * sc__ds_enter(), for a machine in deterministic mode: a plain pthread
 * that is an actor of it makes it its current machine, without a point
 * (it holds its token: it runs); its first call makes it one.  A CPU
 * pthread, of m or of another machine, stays what it is: an actor of its
 * own machine only (another machine's CPU runs uncontrolled in m).
 *
 * The contract asserted: an actor of m that calls in while m runs holds
 * m's token.  Every actor gives the token up only at a point and waits
 * there to get it back, so code outside a point runs only in the holder;
 * a caller that does not hold it runs beside the holder, and the seed no
 * longer fixes the run (say, a pthread that called in from a signal
 * handler of its own while it waited at a point).  ds_cur is read before
 * ds_off: destroy (or the steps' bound) sets ds_off and lets every actor
 * run free, without moving ds_cur.
 */
void
sc__ds_enter_slow(struct sc_machine *m)
{
	struct sc_ds *ds = m->m_ds;
	struct sc_ds_memb *e;

	if (sc__ds_mine() == ds) {
		SC_KASSERT(atomic_load(&ds->ds_cur) == sc__ds_idx ||
		    atomic_load(&ds->ds_off) != 0, , "deterministic mode: "
		    "actor %d calls into its machine while actor %d holds "
		    "the run token", sc__ds_idx, atomic_load(&ds->ds_cur));
		return;
	}
	if (atomic_load(&ds->ds_off))
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

/*
 * At stop (ds_off set, ds_core >= 0): every actor gets back the affinity
 * it had before the pin.  A plain pthread's tid in its slot means that it
 * is alive (it clears it at exit, under ds_reg).
 */
void
sc__ds_unpin(struct sc_machine *m)
{
	struct sc_ds *ds = m->m_ds;
	struct sc_ds_actor *a;
	pid_t self = (pid_t)syscall(SYS_gettid);
	int i, n = atomic_load(&ds->ds_nactor);

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
}
