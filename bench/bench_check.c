/*
 * bench_check: sc_check()'s strategies on the mistakes of the history, in
 * the shape of SCTBench's table (Thomson, Donaldson and Betts, "Concurrency
 * testing using controlled schedulers: an empirical study", TOPC 2016):
 * for each explorer body with a mistake (tools/explore.c) under this
 * scheduler, the runs to the first failure, median and worst of NSEARCH
 * searches from disjoint seed ranges, for random and PCT of depth 2 and 3;
 * DFS within 1, 2 and 3 deviations (one search: DFS has no seed;
 * "none/N": every schedule within the bound ran, N of them, and none
 * failed); and the
 * deviations of the failing schedule before and after the shrinker.  Then
 * DFS over the 3-thread capture body of bench_det with the final protocol:
 * the schedules within 1 and 2 deviations, whether the bound was covered,
 * and the time.
 *
 * usage: bench_check [NSEARCH [MAXRUNS [DFS_SECONDS [BODY [SHRINK_RUNS]]]]]
 *   defaults 20 searches, 1000 runs a search, 60 s for the DFS coverage;
 *   BODY: that body's rows only, and no coverage; "coverage": the
 *   coverage only; SHRINK_RUNS: the shrinker's budget (default 1000).
 * STACKCAP_SCHED chooses the scheduler.  Every figure is a function of the
 * seeds: the same at each run, on any host; only the times vary.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "explore.h"
#include "stackcap/check.h"

#define NCAPTURES	4

static int nsearch = 20;
static uint64_t maxruns = 1000;
static uint64_t shrink_runs = 1000;	/* cc.shrink_runs */

/* One cell: runs to the first failure of each search (0: none found). */
struct cell {
	uint64_t	runs[64];
	int		found;
	int		dev, dev_orig;	/* the first search's schedule */
	uint64_t	covered;	/* DFS: no failure, the bound covered
					   in this many runs; else 0 */
	uint64_t	shrink_runs;
	double		secs;
};

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y ? -1 : x > y);
}

static void
cell_run(struct cell *c, const struct exp_body *b, int strategy, int depth,
    int bound)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct exp_check e = { .b = b, .mistaken = true,
	    .stop = EXP_MASK(EXP_BROKEN) };
	uint64_t t0 = sc_now_ns();
	int i, n, error;

	memset(c, 0, sizeof(*c));
	c->dev = c->dev_orig = -1;
	n = strategy == SC_CHECK_DFS ? 1 : nsearch;
	for (i = 0; i < n; i++) {
		sc_check_config_init(&cc);
		cc.strategy = strategy;
		cc.pct_depth = depth;
		cc.pct_steps = b->pct_steps;
		cc.preemption_bound = bound;
		cc.first_seed = 1 + (uint64_t)i * maxruns;
		cc.runs = strategy == SC_CHECK_DFS ? 5 * maxruns : maxruns;
		cc.shrink = i == 0;
		cc.shrink_runs = shrink_runs;
		if ((error = sc_check(&cc, exp_check_body, &e, &res)) != 0)
			die(res.why, error);
		if (res.failed) {
			c->runs[i] = res.runs;
			c->found++;
			if (i == 0) {
				c->dev = res.preemptions;
				c->dev_orig = res.preemptions_orig;
				c->shrink_runs = res.shrink_runs;
			}
		} else {
			c->runs[i] = UINT64_MAX;	/* not found */
			if (res.complete)
				c->covered = res.runs;
		}
		sc_check_result_free(&res);
	}
	qsort(c->runs, (size_t)n, sizeof(c->runs[0]), u64_cmp);
	c->secs = (double)(sc_now_ns() - t0) / 1e9;
}

static void
cell_print(const char *how, const struct cell *c, bool dfs)
{
	char med[32], worst[32];
	int n = dfs ? 1 : nsearch;

	if (c->covered != 0)
		snprintf(med, sizeof(med), "none/%ju", (uintmax_t)c->covered);
	else if (c->runs[n / 2] == UINT64_MAX)
		snprintf(med, sizeof(med), ">%ju", (uintmax_t)(dfs ? 5 *
		    maxruns : maxruns));
	else
		snprintf(med, sizeof(med), "%ju", (uintmax_t)c->runs[n / 2]);
	if (c->runs[n - 1] == UINT64_MAX)
		snprintf(worst, sizeof(worst), "-");
	else
		snprintf(worst, sizeof(worst), "%ju",
		    (uintmax_t)c->runs[n - 1]);
	printf("  %-10s %5d/%-3d %8s %8s", how, c->found, n, med,
	    dfs ? "" : worst);
	if (c->dev >= 0)
		printf("   %5d -> %-3d (%ju runs)", c->dev_orig, c->dev,
		    (uintmax_t)c->shrink_runs);
	else
		printf("   %16s", "-");
	printf("  %6.1f s\n", c->secs);
}

/* ------------------------------------------------------------------------
 * The 3-thread capture body (bench_det's), the final protocol
 * ------------------------------------------------------------------------ */

/* Held: every capture returned 0 with the spinner's frame. */
static int
bc_body(const struct sc_machine_config *ccfg, void *arg)
{
	struct sc_machine_config cfg = *ccfg;
	struct sc_machine *m;
	int bad;

	(void)arg;
	cfg.capture_timeout_ns = 20L * 1000 * 1000;
	if (sc_machine_create(&cfg, &m) != 0)
		return (-1);
	bad = bench_capture_body(m, NCAPTURES);
	sc_machine_destroy(m);
	return (bad);
}

static void
dfs_cover(int bound, double seconds)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	uint64_t t0 = sc_now_ns();
	int error;

	sc_check_config_init(&cc);
	cc.strategy = SC_CHECK_DFS;
	cc.preemption_bound = bound;
	cc.runs = 0;
	cc.time_limit_ns = (uint64_t)(seconds * 1e9);
	if ((error = sc_check(&cc, bc_body, NULL, &res)) != 0)
		die(res.why, error);
	printf("  bound %d: %s after %ju schedules (%ju decisions in the last "
	    "run), %.1f s; %s\n", bound, res.complete ? "covered" :
	    "NOT covered", (uintmax_t)res.runs,
	    (uintmax_t)res.max_decisions_seen,
	    (double)(sc_now_ns() - t0) / 1e9, res.failed ? res.why :
	    "no failure");
	if (res.failed)
		printf("  STACKCAP_SCHEDULE='%s'\n", res.schedule);
	sc_check_result_free(&res);
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *how;
		int strategy, depth, bound;
	} rows[] = {
		{ "random", SC_CHECK_RANDOM, 0, 0 },
		{ "PCT-2", SC_CHECK_PCT, 2, 0 },
		{ "PCT-3", SC_CHECK_PCT, 3, 0 },
		{ "DFS-1", SC_CHECK_DFS, 0, 1 },
		{ "DFS-2", SC_CHECK_DFS, 0, 2 },
		{ "DFS-3", SC_CHECK_DFS, 0, 3 },
	};
	struct cell c;
	double seconds = 60;
	size_t i, r;

	if (argc > 1)
		nsearch = atoi(argv[1]);
	if (argc > 2)
		maxruns = strtoull(argv[2], NULL, 10);
	if (argc > 3)
		seconds = atof(argv[3]);
	if (argc > 5)
		shrink_runs = strtoull(argv[5], NULL, 10);
	if (argc > 4 && exp_find(argv[4]) == NULL &&
	    strcmp(argv[4], "coverage") != 0) {
		fprintf(stderr, "bench_check: no body \"%s\"\n", argv[4]);
		return (2);
	}
	if (nsearch < 1 || nsearch > 64 || maxruns < 1) {
		fprintf(stderr, "usage: bench_check [NSEARCH (1..64) [MAXRUNS "
		    "[DFS_SECONDS]]]\n");
		return (2);
	}
	exp_own_seed("bench_check");
	printf("bench_check: %s; %d searches of at most %ju runs (DFS: one, "
	    "at most %ju runs)\n", exp_sched() == SC_SCHED_4BSD ? "4BSD" :
	    "ULE", nsearch, (uintmax_t)maxruns, (uintmax_t)(5 * maxruns));
	printf("  %-10s %9s %8s %8s   %16s  %8s\n", "strategy", "found",
	    "median", "worst", "deviations", "time");
	for (i = 0; i < exp_nbodies; i++) {
		const struct exp_body *b = &exp_bodies[i];

		if (!exp_has_mistake(b) ||
		    (b->scheds & EXP_SCHED(exp_sched())) == 0 ||
		    (argc > 4 && strcmp(b->name, argv[4]) != 0))
			continue;
		printf("%s (%s):\n", b->name, b->mistake.what);
		for (r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
			cell_run(&c, b, rows[r].strategy, rows[r].depth,
			    rows[r].bound);
			cell_print(rows[r].how, &c,
			    rows[r].strategy == SC_CHECK_DFS);
		}
	}
	if (argc > 4 && strcmp(argv[4], "coverage") != 0)
		return (0);
	printf("DFS over the 3-thread capture body (2 spinners, %d captures), "
	    "the final protocol, at most %.0f s a bound:\n", 2 * NCAPTURES,
	    seconds);
	dfs_cover(1, seconds);
	dfs_cover(2, seconds);
	return (0);
}
