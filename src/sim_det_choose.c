/*
 * Deterministic simulation: the seeded choice of the next holder of the
 * run token (sim_det.c has the whole picture).  Two choosers: uniform
 * among the candidates, or PCT (cfg.sim_pct_depth).  Only the holder
 * draws, so the draws of a seed come in the same order at each run.
 * Under a check (stackcap/check.h) each choice is a decision of the
 * check's guide (check_var.h), which may take the seeded draw, or a
 * schedule's, or a fuzzer's byte, and records it.
 *
 * No kernel counterpart.
 */
#include <stdlib.h>

#include "sc_internal.h"
#include "sim_det_var.h"
#include "check_var.h"

/*
 * Under a check, the default holder keeps the token for this many points
 * in a row at most; then the default is the next candidate.  A default
 * that never switched would starve the other CPUs of a CPU that computes
 * between points (they run beside it in real mode); one that always
 * switched would make every stretch of one actor's code cost a deviation
 * for each of its points.
 */
#define SC_DS_CHK_QUANTUM	8

#define SC_DS_PCT_STEPS	10000	/* PCT's k when cfg.sim_pct_steps is 0 */
/* PCT: the change points' priorities are 0..d-2, the initial above. */
#define SC_DS_PRIO_INIT	(INT64_C(1) << 40)

/* splitmix64: small, and every seed, 0 aside, gives its own stream. */
static uint64_t
sc_ds_rand(struct sc_ds *ds)
{
	uint64_t z = (ds->ds_rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31));
}

static int
sc_ds_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y ? -1 : x > y);
}

/* A new machine's generator and, under PCT, its change points, sorted. */
void
sc__ds_choose_init(struct sc_ds *ds, const struct sc_machine_config *cfg)
{
	uint64_t k;
	int i;

	ds->ds_rng = cfg->seed;
	if (cfg->sim_pct_depth <= 0)
		return;
	ds->ds_pct_depth = cfg->sim_pct_depth;
	k = cfg->sim_pct_steps != 0 ? cfg->sim_pct_steps : SC_DS_PCT_STEPS;
	for (i = 0; i < ds->ds_pct_depth - 1; i++)
		ds->ds_pct_cp[i] = 1 + sc_ds_rand(ds) % k;
	qsort(ds->ds_pct_cp, (size_t)(ds->ds_pct_depth - 1),
	    sizeof(ds->ds_pct_cp[0]), sc_ds_cmp);
}

/* A PCT priority for a new slot: above every change point's, distinct. */
void
sc__ds_prio_init(struct sc_ds *ds, int i)
{
	ds->ds_actor[i].a_prio = SC_DS_PRIO_INIT +
	    (int64_t)(sc_ds_rand(ds) % 1000000) * SC_DS_MAXACTOR + i;
}

/* A late slot's priority: its index (the draw is the holder's, not its). */
void
sc__ds_prio_late(struct sc_ds *ds, int i)
{
	ds->ds_actor[i].a_prio = SC_DS_PRIO_INIT + i;
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
sc_ds_choose_seeded(struct sc_ds *ds, int me, bool waiting)
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

/*
 * Under a check: the candidates as a decision's alternatives, in a fixed
 * order.  The others from me + 1 on, round the slots; me, if it may go on
 * (it does not wait), first while its run of points is shorter than the
 * quantum, else last.  The first is the default.  A decision only where
 * there are two or more.
 */
static int
sc_ds_choose_chk(struct sc_ds *ds, int me, bool waiting)
{
	int order[SC_DS_MAXACTOR], n, k, i, j, drawn, next;
	uint32_t alt;

	n = atomic_load(&ds->ds_nactor);
	k = 0;
	if (!waiting && ds->ds_chk_run < SC_DS_CHK_QUANTUM)
		order[k++] = me;
	for (j = 1; j < n; j++) {
		i = (me + j) % n;
		if (sc_ds_candidate(ds, i, me, false))
			order[k++] = i;
	}
	if (!waiting && ds->ds_chk_run >= SC_DS_CHK_QUANTUM)
		order[k++] = me;
	/* Drawn first as without a check, even with one candidate: a
	 * seed's draws, and so its run, are the same with a check or
	 * without (stackcap-demo --scenario NAME --seed S replays what
	 * the explorer's check found). */
	next = me;
	if (ds->ds_chk->c_mode == SC_CHK_DRAW)
		next = sc_ds_choose_seeded(ds, me, waiting);
	if (k == 0)
		return (me);
	if (k == 1)
		next = order[0];
	else {
		for (drawn = 0; drawn < k - 1 && order[drawn] != next; drawn++)
			continue;
		alt = sc__chk_decide(ds->ds_chk, SC_CHK_TOKEN, (uint32_t)k,
		    (uint32_t)drawn);
		next = order[alt];
	}
	ds->ds_chk_run = next == me ? ds->ds_chk_run + 1 : 0;
	return (next);
}

int
sc__ds_choose(struct sc_ds *ds, int me, bool waiting)
{
	if (ds->ds_chk != NULL)
		return (sc_ds_choose_chk(ds, me, waiting));
	return (sc_ds_choose_seeded(ds, me, waiting));
}

/*
 * Does a CPU take its pending IPIs at this point, or at a later one?
 * Under a check, a decision: now is the default.
 */
bool
sc__ds_draw_ipi(struct sc_ds *ds)
{
	uint32_t drawn;

	if (ds->ds_chk == NULL)
		return ((sc_ds_rand(ds) & 1) != 0);
	drawn = 0;
	if (ds->ds_chk->c_mode == SC_CHK_DRAW)
		drawn = (sc_ds_rand(ds) & 1) != 0 ? 0 : 1;
	return (sc__chk_decide(ds->ds_chk, SC_CHK_IPI, 2, drawn) == 0);
}
