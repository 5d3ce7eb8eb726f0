/*
 * Systematic testing (stackcap/check.h, docs/check.md): the searches
 * (random, PCT, DFS within a bound), the replay of a schedule, the
 * fuzzer's run, and each run's decisions (sc__chk_decide(), called by the
 * deterministic mode's chooser, sim_det_choose.c).
 *
 * A run is the body called on this pthread with a config whose seed is
 * set; each deterministic machine the body makes takes this run's guide
 * (sim_det.c), so every choice with two or more alternatives goes
 * through sc__chk_decide().  Only the token's holder decides, so the
 * guide needs no lock: the token's handoff orders its writes.
 *
 * No kernel counterpart: the kernel has no scheduler that tests choose.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"
#include "check_var.h"

#define SC_CHK_FNV_OFFSET	0xcbf29ce484222325ull
#define SC_CHK_FNV_PRIME	0x100000001b3ull
/* The decisions of a replay's or a fuzzer's run: the config's default. */
#define SC_CHK_CAP		((size_t)1 << 20)

_Atomic(struct sc_chk *) sc__chk_cur;
static atomic_int sc_chk_busy;		/* an sc_check*() runs */
static __thread char sc_chk_why[1024];

/* The decision buffers, kept from one sc_check*() to the next (a fuzzer
 * calls sc_check_fuzz() millions of times); sc_chk_busy's owner's. */
static struct sc_chk_dec *sc_chk_out;
static uint32_t *sc_chk_trail;
static size_t sc_chk_cap;

void
sc_check_config_init(struct sc_check_config *cc)
{
	memset(cc, 0, sizeof(*cc));
	cc->strategy = SC_CHECK_RANDOM;
	cc->runs = 1000;
	cc->pct_depth = 3;
	cc->preemption_bound = 2;
	cc->first_seed = 1;
	cc->shrink = 1;
	/* 4000: enough for the DFS pass to reach a failure of 2 deviations
	 * in nocpu-offcpu's tree (1,492 schedules); a run of the explorer's
	 * bodies costs 0.1-0.3 ms since sc_symbolize() caches. */
	cc->shrink_runs = 4000;
	cc->sched = -1;
	cc->max_decisions = SC_CHK_CAP;
	cc->shard = 0;
	cc->shards = 1;
}

const char *
sc_check_why(void)
{
	return (sc_chk_why);
}

void
sc_check_result_free(struct sc_check_result *res)
{
	free(res->schedule);
	free(res->schedule_orig);
	res->schedule = res->schedule_orig = NULL;
}

uint32_t
sc__chk_decide(struct sc_chk *c, int kind, uint32_t n, uint32_t drawn)
{
	uint64_t idx = c->c_ndec++;
	uint32_t alt = 0;

	SC_KASSERT(n >= 2 && n < 65536, 0, "a decision of %u alternatives", n);
	c->c_fp = (c->c_fp ^ ((uint64_t)kind << 32 | n)) * SC_CHK_FNV_PRIME;
	switch (c->c_mode) {
	case SC_CHK_DRAW:
		alt = drawn;
		break;
	case SC_CHK_LIST:
		while (c->c_inpos < c->c_nin && c->c_in[c->c_inpos].d_idx < idx)
			c->c_inpos++;
		if (c->c_inpos == c->c_nin || c->c_in[c->c_inpos].d_idx != idx)
			break;
		alt = c->c_in[c->c_inpos++].d_alt;
		if (alt < n)
			break;
		if (c->c_strict && !c->c_diverged) {
			c->c_diverged = true;
			c->c_div_idx = idx;
			c->c_div_alt = alt;
			c->c_div_n = n;
		}
		alt = 0;
		break;
	case SC_CHK_BYTES:
		if (idx < c->c_nbytes)
			alt = c->c_bytes[idx] % n;
		break;
	}
	if (idx >= c->c_cap) {
		if (!c->c_long_ok || alt != 0)
			c->c_overflow = true;
		return (alt);
	}
	c->c_trail[idx] = n << 16 | alt;
	if (alt != 0) {
		c->c_out[c->c_nout].d_idx = idx;
		c->c_out[c->c_nout].d_alt = alt;
		c->c_nout++;
	}
	return (alt);
}

bool
sc__chk_panic(const char *msg)
{
	struct sc_chk *c = atomic_load(&sc__chk_cur);

	if (c == NULL)
		return (false);
	if (atomic_fetch_add(&c->c_panics, 1) == 0)
		snprintf(c->c_panic, sizeof(c->c_panic), "%s", msg);
	return (true);
}

/*
 * Take the process's one check and the buffers for cap decisions, for
 * runs of body(arg).
 */
static int
sc_chk_begin(struct sc_chk_ctx *x, size_t cap, int sched,
    sc_check_body *body, void *arg)
{
	int busy = 0;

	memset(x, 0, sizeof(*x));
	if (!atomic_compare_exchange_strong(&sc_chk_busy, &busy, 1)) {
		snprintf(sc_chk_why, sizeof(sc_chk_why), "another sc_check*() "
		    "runs in this process (one at a time; not from a body)");
		return (EBUSY);
	}
	if (cap != sc_chk_cap) {
		free(sc_chk_out);
		free(sc_chk_trail);
		sc_chk_out = malloc(cap * sizeof(*sc_chk_out));
		sc_chk_trail = malloc(cap * sizeof(*sc_chk_trail));
		sc_chk_cap = cap;
		if (sc_chk_out == NULL || sc_chk_trail == NULL) {
			free(sc_chk_out);
			free(sc_chk_trail);
			sc_chk_out = NULL;
			sc_chk_trail = NULL;
			sc_chk_cap = 0;
			atomic_store(&sc_chk_busy, 0);
			snprintf(sc_chk_why, sizeof(sc_chk_why), "no memory "
			    "for %zu decisions", cap);
			return (ENOMEM);
		}
	}
	x->x_body = body;
	x->x_arg = arg;
	x->x_c.c_out = sc_chk_out;
	x->x_c.c_trail = sc_chk_trail;
	x->x_c.c_cap = cap;
	/* The whole struct: inside the library the old name fills only
	 * stackcap 0.1's part (machine.c). */
	sc_machine_config_init_sz(&x->x_cfg, sizeof(x->x_cfg));
	if (sched >= 0)
		x->x_cfg.sched = sched;
	return (0);
}

static void
sc_chk_end(struct sc_chk_ctx *x)
{
	free(x->x_fail);
	x->x_fail = NULL;
	atomic_store(&sc_chk_busy, 0);
}

/*
 * One run: the body under cfg with seed and PCT's depth, the guide c set
 * up by the caller (mode, input).  *failed: it failed, x_kind and x_why
 * say how.  Returns 0, or EINVAL or E2BIG with x_why saying why.
 */
static int
sc_chk_run(struct sc_chk_ctx *x, uint64_t seed, int pct, bool *failed)
{
	struct sc_chk *c = &x->x_c;
	struct sc_machine_config cfg = x->x_cfg;
	int rc;

	c->c_inpos = 0;
	c->c_ndec = 0;
	c->c_fp = SC_CHK_FNV_OFFSET;
	c->c_nout = 0;
	c->c_overflow = false;
	c->c_diverged = false;
	atomic_store(&c->c_machines, 0);
	atomic_store(&c->c_panics, 0);
	atomic_store(&c->c_livelock, 0);
	c->c_panic[0] = '\0';
	x->x_kind = 0;
	x->x_why[0] = '\0';
	cfg.seed = seed;
	cfg.sim_pct_depth = pct;
	c->c_cfg = &cfg;
	atomic_store(&sc__chk_cur, c);
	rc = x->x_body(&cfg, x->x_arg);
	atomic_store(&sc__chk_cur, NULL);
	*failed = false;
	if (atomic_load(&c->c_machines) == 0) {
		snprintf(x->x_why, sizeof(x->x_why), "the body made no "
		    "deterministic machine: it must make its machines from the "
		    "cfg it is given, with cfg.seed kept, or with seed 0 (they "
		    "take the run's)");
		return (EINVAL);
	}
	if (c->c_overflow) {
		snprintf(x->x_why, sizeof(x->x_why), "a run made more than "
		    "%zu decisions (cc.max_decisions)", c->c_cap);
		return (E2BIG);
	}
	if (atomic_load(&c->c_panics) != 0) {
		x->x_kind = SC_CHK_FAIL_PANIC;
		snprintf(x->x_why, sizeof(x->x_why), "KASSERT: %s%s",
		    c->c_panic, rc != 0 ? " (and the body failed)" : "");
	} else if (atomic_load(&c->c_livelock) != 0) {
		x->x_kind = SC_CHK_FAIL_LIVELOCK;
		snprintf(x->x_why, sizeof(x->x_why), "the run never ended: "
		    "a machine reached the deterministic mode's step bound");
	} else if (rc != 0) {
		x->x_kind = SC_CHK_FAIL_BODY;
		snprintf(x->x_why, sizeof(x->x_why), "the body returned %d",
		    rc);
	}
	*failed = x->x_kind != 0;
	return (0);
}

int
sc__chk_run_list(struct sc_chk_ctx *x, const struct sc_chk_dec *d, size_t n,
    bool strict, bool *failed)
{
	x->x_c.c_mode = SC_CHK_LIST;
	x->x_c.c_polled = x->x_fail_polled;
	x->x_c.c_in = d;
	x->x_c.c_nin = n;
	x->x_c.c_strict = strict;
	/* Any seed: no draw is taken (PCT's priorities are drawn, unused). */
	return (sc_chk_run(x, 1, 0, failed));
}

int
sc__chk_keep(struct sc_chk_ctx *x)
{
	struct sc_chk_dec *d;
	size_t n = x->x_c.c_nout;

	d = malloc((n != 0 ? n : 1) * sizeof(*d));
	if (d == NULL)
		return (ENOMEM);
	memcpy(d, x->x_c.c_out, n * sizeof(*d));
	free(x->x_fail);
	x->x_fail = d;
	x->x_nfail = n;
	x->x_fail_ndec = x->x_c.c_ndec;
	x->x_fail_fp = x->x_c.c_fp;
	x->x_fail_polled = x->x_c.c_polled;
	x->x_fail_kind = x->x_kind;
	memcpy(x->x_fail_why, x->x_why, sizeof(x->x_fail_why));
	return (0);
}

/*
 * DFS: the list of the next schedule after the run x_c just made, in
 * depth-first order: the deepest decision that may take its next
 * alternative within the bound (an alternative k costs k deviations),
 * the decisions before it as they were, the default after.  False when
 * there is none deeper than decision `root`: the subtree of root's
 * deviation (every schedule whose first deviation it is) is covered.
 */
static bool
sc_chk_dfs_next(const struct sc_chk *c, int bound, uint64_t root,
    struct sc_chk_dec *list, size_t *nlist)
{
	uint64_t i, cost, best;
	size_t k;
	uint32_t alt, n;
	bool found = false;

	/* Before root every decision is the default. */
	cost = c->c_trail[root] & 0xffff;
	best = 0;
	/* The deepest: the last that qualifies, scanning forwards. */
	for (i = root + 1; i < c->c_ndec; i++) {
		alt = c->c_trail[i] & 0xffff;
		n = c->c_trail[i] >> 16;
		if (alt + 1 < n && cost + alt + 1 <= (uint64_t)bound) {
			best = i;
			found = true;
		}
		cost += alt;
	}
	if (!found)
		return (false);
	for (k = 0; k < c->c_nout && c->c_out[k].d_idx < best; k++)
		list[k] = c->c_out[k];
	list[k].d_idx = best;
	list[k].d_alt = (c->c_trail[best] & 0xffff) + 1;
	*nlist = k + 1;
	return (true);
}

/*
 * The first deviation after *r (d_idx, d_alt) in DFS order, from the
 * default run's alternatives n0[]: the same decision's next alternative
 * within the bound, else the deepest earlier decision's first.  *r
 * starts as { ndec0, 0 }.  False when there is none.
 */
static bool
sc_chk_dfs_root(const uint16_t *n0, int bound, struct sc_chk_dec *r)
{
	if (r->d_alt != 0 && r->d_alt + 1 < n0[r->d_idx] &&
	    r->d_alt + 1 <= (uint32_t)bound) {
		r->d_alt++;
		return (true);
	}
	while (r->d_idx > 0 && bound >= 1) {
		r->d_idx--;
		r->d_alt = 1;
		if (n0[r->d_idx] >= 2)
			return (true);
	}
	return (false);
}

/* One run of the DFS under list; EINVAL if it did not repeat its prefix. */
static int
sc_chk_dfs_run(struct sc_chk_ctx *x, const struct sc_chk_dec *list,
    size_t nlist, bool *failed)
{
	int error;

	error = sc__chk_run_list(x, list, nlist, true, failed);
	if (error == 0 && x->x_c.c_diverged) {
		snprintf(x->x_why, sizeof(x->x_why), "DFS: a run did not "
		    "repeat its prefix (decision %" PRIu64 "): the body is not "
		    "deterministic", x->x_c.c_div_idx);
		error = EINVAL;
	}
	return (error);
}

/*
 * The DFS tree is the default run and, below it, one subtree for each
 * deviation that a schedule may take first: the default run's decision
 * i taking alternative a (a <= bound), in DFS order (the deepest i first,
 * a ascending).  They are disjoint and cover the bound, so shard s of N
 * takes the default run if s is 0, and the subtrees whose rank (1, 2, ...
 * in that order) is s modulo N: every shard knows the ranks from the
 * default run alone, which each runs (shard 0's schedule, counted there
 * only), and runs no schedule of another.
 */
int
sc__chk_dfs(struct sc_chk_ctx *x, int bound, uint32_t shard, uint32_t shards,
    uint64_t maxruns, uint64_t deadline, uint64_t *runs, bool *failed,
    bool *complete)
{
	struct sc_chk_dec *list, root;
	uint16_t *n0;
	uint64_t rank, i;
	size_t nlist;
	int error;

	SC_KASSERT(shards >= 1 && shard < shards, 0, "shard %u of %u", shard,
	    shards);
	*failed = *complete = false;
	list = malloc(x->x_c.c_cap * sizeof(*list));
	n0 = malloc(x->x_c.c_cap * sizeof(*n0));
	if (list == NULL || n0 == NULL) {
		free(list);
		free(n0);
		snprintf(x->x_why, sizeof(x->x_why), "no memory");
		return (ENOMEM);
	}
	error = 0;
	if ((maxruns != 0 && *runs >= maxruns) ||
	    (deadline != 0 && sc_now_ns() > deadline))
		goto out;
	if ((error = sc_chk_dfs_run(x, NULL, 0, failed)) != 0)
		goto out;
	if (shard == 0)
		(*runs)++;
	if (*failed && shard != 0) {
		/* The default run is shard 0's to report. */
		*failed = false;
		*complete = true;
		goto out;
	}
	if (*failed)
		goto out;
	for (i = 0; i < x->x_c.c_ndec; i++)
		n0[i] = (uint16_t)(x->x_c.c_trail[i] >> 16);
	root.d_idx = x->x_c.c_ndec;
	root.d_alt = 0;
	for (rank = 1; sc_chk_dfs_root(n0, bound, &root); rank++) {
		if (rank % shards != shard)
			continue;
		list[0] = root;
		nlist = 1;
		do {
			if ((maxruns != 0 && *runs >= maxruns) ||
			    (deadline != 0 && sc_now_ns() > deadline))
				goto out;
			error = sc_chk_dfs_run(x, list, nlist, failed);
			(*runs)++;
			if (error != 0 || *failed)
				goto out;
		} while (sc_chk_dfs_next(&x->x_c, bound, root.d_idx, list,
		    &nlist));
	}
	*complete = true;
out:
	free(list);
	free(n0);
	return (error);
}

/* res from the failing run x keeps, shrunk if cc says so. */
static int
sc_chk_report(struct sc_chk_ctx *x, const struct sc_check_config *cc,
    struct sc_check_result *res)
{
	res->failed = 1;
	res->schedule_orig = sc__chk_format(x->x_cfg.sched, x->x_fail_polled,
	    x->x_fail_ndec, x->x_fail_fp, x->x_fail, x->x_nfail);
	res->preemptions_orig = sc__chk_cost(x->x_fail, x->x_nfail);
	if (cc->shrink)
		res->shrink_runs = sc__chk_shrink(x, cc->shrink_runs);
	res->schedule = sc__chk_format(x->x_cfg.sched, x->x_fail_polled,
	    x->x_fail_ndec, x->x_fail_fp, x->x_fail, x->x_nfail);
	res->preemptions = sc__chk_cost(x->x_fail, x->x_nfail);
	res->decisions = x->x_fail_ndec;
	snprintf(res->why, sizeof(res->why), "%s", x->x_fail_why);
	if (res->schedule == NULL || res->schedule_orig == NULL) {
		snprintf(res->why, sizeof(res->why), "no memory for the "
		    "schedule");
		return (ENOMEM);
	}
	return (0);
}

/* The config's mistakes, in words for res->why; NULL if none. */
static const char *
sc_chk_config_error(const struct sc_check_config *cc)
{
	if (cc->strategy != SC_CHECK_RANDOM && cc->strategy != SC_CHECK_PCT &&
	    cc->strategy != SC_CHECK_DFS)
		return ("unknown strategy (SC_CHECK_RANDOM, SC_CHECK_PCT or "
		    "SC_CHECK_DFS)");
	if (cc->strategy != SC_CHECK_DFS && cc->runs == 0)
		return ("runs is 0 (only DFS runs until its bound is covered)");
	if (cc->strategy == SC_CHECK_PCT && (cc->pct_depth < 1 ||
	    cc->pct_depth > SC_DS_PCT_MAXDEPTH))
		return ("pct_depth out of 1..64");
	if (cc->preemption_bound < 0 || cc->preemption_bound > 1000)
		return ("preemption_bound out of 0..1000");
	if (cc->first_seed == 0)
		return ("first_seed is 0 (seed 0 is real concurrency)");
	if (cc->sched != -1 && cc->sched != SC_SCHED_ULE &&
	    cc->sched != SC_SCHED_4BSD)
		return ("sched is neither -1, SC_SCHED_ULE nor SC_SCHED_4BSD");
	if (cc->shards == 0 || cc->shard >= cc->shards)
		return ("shard out of 0..shards - 1, or shards 0 "
		    "(sc_check_config_init() sets shard 0 of 1)");
	if (cc->max_decisions == 0 || cc->max_decisions > ((size_t)1 << 28))
		return ("max_decisions out of 1..2^28");
	return (NULL);
}

/* STACKCAP_SCHEDULE's one run, in place of sc_check()'s search. */
static int
sc_chk_env_replay(struct sc_chk_ctx *x, const char *s,
    struct sc_check_result *res);

int
sc_check(const struct sc_check_config *cc, sc_check_body *body, void *arg,
    struct sc_check_result *res)
{
	struct sc_chk_ctx x;
	const char *why, *env;
	uint64_t deadline, i;
	bool failed = false, complete = false;
	int error, bound;

	if (res == NULL)
		return (EINVAL);
	memset(res, 0, sizeof(*res));
	if (cc == NULL || body == NULL) {
		snprintf(res->why, sizeof(res->why), "sc_check: a NULL %s",
		    cc == NULL ? "config" : "body");
		return (EINVAL);
	}
	if ((why = sc_chk_config_error(cc)) != NULL) {
		snprintf(res->why, sizeof(res->why), "sc_check: %s", why);
		return (EINVAL);
	}
	if ((error = sc_chk_begin(&x, cc->max_decisions, cc->sched, body,
	    arg)) != 0) {
		snprintf(res->why, sizeof(res->why), "%s", sc_chk_why);
		return (error);
	}
	x.x_cfg.sim_pct_steps = cc->pct_steps;
	deadline = cc->time_limit_ns != 0 ? sc_now_ns() + cc->time_limit_ns :
	    0;
	env = getenv("STACKCAP_SCHEDULE");
	if (env != NULL && *env != '\0') {
		error = sc_chk_env_replay(&x, env, res);
		sc_chk_end(&x);
		return (error);
	}
	if (cc->strategy == SC_CHECK_DFS) {
		/* Iterative deepening (CHESS's iterative context bounding):
		 * every schedule of 0 deviations, then of at most 1, ...: a
		 * failure found has the fewest deviations there are.  Each
		 * pass runs the cheaper schedules again (it needs their
		 * decisions to branch from them): a few runs more, counted. */
		for (bound = 0; bound <= cc->preemption_bound; bound++) {
			error = sc__chk_dfs(&x, bound, cc->shard, cc->shards,
			    cc->runs, deadline, &res->runs, &failed, &complete);
			if (error != 0 || failed || !complete)
				break;
		}
		res->complete = complete;
		res->max_decisions_seen = x.x_c.c_ndec;
		if (error == 0 && failed && (error = sc__chk_keep(&x)) == 0)
			error = sc_chk_report(&x, cc, res);
	} else {
		/* Shard s of N: the runs i of the campaign's cc->runs with
		 * i modulo N = s, seed first_seed + i. */
		for (error = 0, i = cc->shard; i < cc->runs; i += cc->shards) {
			if (deadline != 0 && sc_now_ns() > deadline)
				break;
			res->seed = cc->first_seed + i;
			x.x_c.c_mode = SC_CHK_DRAW;
			x.x_c.c_polled = cc->strategy == SC_CHECK_PCT;
			error = sc_chk_run(&x, res->seed, cc->strategy ==
			    SC_CHECK_PCT ? cc->pct_depth : 0, &failed);
			res->runs++;
			if (error != 0)
				break;
			if (x.x_c.c_ndec > res->max_decisions_seen)
				res->max_decisions_seen = x.x_c.c_ndec;
			if (failed) {
				if ((error = sc__chk_keep(&x)) == 0)
					error = sc_chk_report(&x, cc, res);
				break;
			}
		}
	}
	if (error != 0 && !res->failed)
		snprintf(res->why, sizeof(res->why), "%s", x.x_why);
	if (!res->failed && cc->strategy != SC_CHECK_DFS)
		res->seed = 0;
	sc_chk_end(&x);
	snprintf(sc_chk_why, sizeof(sc_chk_why), "%s", res->why);
	return (error);
}

/*
 * Does failure a come before failure b in the search that was sharded?
 * Random and PCT: the smaller seed.  DFS (seed 0): the fewer deviations
 * (iterative deepening), then the subtree first in DFS order, that of the
 * deeper first deviation, then of its lower alternative.
 */
static bool
sc_chk_before(const struct sc_check_result *a,
    const struct sc_check_result *b)
{
	struct sc_chk_dec *da, *db;
	uint64_t ndec, fp;
	size_t na, nb;
	int sched;
	bool polled, before;
	char why[64];

	if (a->seed != 0 && b->seed != 0)
		return (a->seed < b->seed);
	if (a->preemptions_orig != b->preemptions_orig)
		return (a->preemptions_orig < b->preemptions_orig);
	if (a->schedule_orig == NULL || b->schedule_orig == NULL ||
	    sc__chk_parse(a->schedule_orig, &sched, &polled, &ndec, &fp, &da,
	    &na, why, sizeof(why)) != 0)
		return (false);
	if (sc__chk_parse(b->schedule_orig, &sched, &polled, &ndec, &fp, &db,
	    &nb, why, sizeof(why)) != 0) {
		free(da);
		return (true);
	}
	if (na == 0 || nb == 0)
		before = na == 0 && nb != 0;
	else if (da[0].d_idx != db[0].d_idx)
		before = da[0].d_idx > db[0].d_idx;
	else
		before = da[0].d_alt < db[0].d_alt;
	free(da);
	free(db);
	return (before);
}

void
sc_check_result_merge(struct sc_check_result *into,
    struct sc_check_result *shard)
{
	struct sc_check_result t;

	if (shard->failed && (!into->failed || sc_chk_before(shard, into))) {
		t = *into;
		into->failed = shard->failed;
		into->seed = shard->seed;
		into->schedule = shard->schedule;
		into->schedule_orig = shard->schedule_orig;
		into->preemptions = shard->preemptions;
		into->preemptions_orig = shard->preemptions_orig;
		into->decisions = shard->decisions;
		memcpy(into->why, shard->why, sizeof(into->why));
		shard->schedule = t.schedule;
		shard->schedule_orig = t.schedule_orig;
	}
	into->runs += shard->runs;
	into->shrink_runs += shard->shrink_runs;
	into->complete = into->complete && shard->complete;
	if (shard->max_decisions_seen > into->max_decisions_seen)
		into->max_decisions_seen = shard->max_decisions_seen;
	sc_check_result_free(shard);
}

/*
 * The replay of s by x (begun): SC_CHECK_* or 0, x_why saying why; an
 * errno value for a malformed s, its why in why[].
 */
static int
sc_chk_replay1(struct sc_chk_ctx *x, const char *s, char *why, size_t len)
{
	struct sc_chk_dec *d;
	uint64_t ndec, fp;
	size_t n;
	int sched, error;
	bool failed, polled;

	if ((error = sc__chk_parse(s, &sched, &polled, &ndec, &fp, &d, &n,
	    why, len)) != 0)
		return (error);
	x->x_cfg.sched = sched;
	x->x_fail_polled = polled;
	error = sc__chk_run_list(x, d, n, true, &failed);
	free(d);
	if (error != 0) {
		snprintf(why, len, "%s", x->x_why);
		return (error);
	}
	if (x->x_c.c_diverged)
		snprintf(why, len, "the run diverged from the schedule at "
		    "decision %" PRIu64 ": it had %u alternatives, the "
		    "schedule takes the %u-th; the schedule was recorded for "
		    "another body, build or config", x->x_c.c_div_idx,
		    x->x_c.c_div_n, x->x_c.c_div_alt);
	else if (x->x_c.c_ndec != ndec || x->x_c.c_fp != fp)
		snprintf(why, len, "the run diverged from the schedule: it "
		    "made %" PRIu64 " decisions (shape %016" PRIx64 "), the "
		    "schedule records %" PRIu64 " (%016" PRIx64 "); it was "
		    "recorded for another body, build or config",
		    x->x_c.c_ndec, x->x_c.c_fp, ndec, fp);
	else if (failed) {
		snprintf(why, len, "%s", x->x_why);
		return (SC_CHECK_FAILED);
	} else {
		snprintf(why, len, "the run held");
		return (0);
	}
	return (SC_CHECK_DIVERGED);
}

static int
sc_chk_env_replay(struct sc_chk_ctx *x, const char *s,
    struct sc_check_result *res)
{
	char why[sizeof(res->why) - 32];
	int rc;

	rc = sc_chk_replay1(x, s, why, sizeof(why));
	res->runs = 1;
	snprintf(res->why, sizeof(res->why), "STACKCAP_SCHEDULE: %s", why);
	snprintf(sc_chk_why, sizeof(sc_chk_why), "%s", res->why);
	if (rc > 0)
		return (rc);
	if (rc == SC_CHECK_DIVERGED)
		return (EINVAL);
	if (rc == SC_CHECK_FAILED) {
		res->failed = 1;
		res->schedule = strdup(s);
		res->decisions = x->x_c.c_ndec;
		res->preemptions = sc__chk_cost(x->x_c.c_out, x->x_c.c_nout);
		if (res->schedule == NULL)
			return (ENOMEM);
	}
	return (0);
}

int
sc_check_replay(const char *schedule, sc_check_body *body, void *arg)
{
	struct sc_chk_ctx x;
	int rc;

	if (schedule == NULL || body == NULL) {
		snprintf(sc_chk_why, sizeof(sc_chk_why), "sc_check_replay: a "
		    "NULL %s", schedule == NULL ? "schedule" : "body");
		return (EINVAL);
	}
	if ((rc = sc_chk_begin(&x, SC_CHK_CAP, -1, body, arg)) != 0)
		return (rc);
	x.x_c.c_long_ok = true;
	rc = sc_chk_replay1(&x, schedule, sc_chk_why, sizeof(sc_chk_why));
	sc_chk_end(&x);
	return (rc);
}

int
sc_check_fuzz(const uint8_t *data, size_t size, sc_check_body *body,
    void *arg)
{
	struct sc_chk_ctx x;
	char *s;
	bool failed;
	int rc;

	if ((data == NULL && size != 0) || body == NULL) {
		snprintf(sc_chk_why, sizeof(sc_chk_why), "sc_check_fuzz: a "
		    "NULL %s", body == NULL ? "body" : "data");
		return (EINVAL);
	}
	if ((rc = sc_chk_begin(&x, SC_CHK_CAP, -1, body, arg)) != 0)
		return (rc);
	x.x_c.c_mode = SC_CHK_BYTES;
	x.x_c.c_long_ok = true;
	x.x_c.c_bytes = data;
	x.x_c.c_nbytes = size;
	rc = sc_chk_run(&x, 1, 0, &failed);
	snprintf(sc_chk_why, sizeof(sc_chk_why), "%s", x.x_why);
	if (rc == 0 && failed) {
		s = sc__chk_format(x.x_cfg.sched, false, x.x_c.c_ndec,
		    x.x_c.c_fp, x.x_c.c_out, x.x_c.c_nout);
		fprintf(stderr, "stackcap: sc_check_fuzz: the run failed: "
		    "%s\nstackcap: replay it: STACKCAP_SCHEDULE='%s'\n",
		    x.x_why, s != NULL ? s : "(no memory)");
		free(s);
		rc = SC_CHECK_FAILED;
	}
	sc_chk_end(&x);
	return (rc);
}
