/*
 * bench_explore: the explorer's bodies (tools/explore.c), under the
 * scheduler that STACKCAP_SCHED gives (ULE by default), with a random
 * scheduler and with PCT (depth 3).  For each body and chooser:
 * - runs to the goal (the first failure, or for a body with no mistake
 *   the first run that reaches its window): median and worst over NSEARCH
 *   searches of at most 1,000 seeds, from disjoint ranges (as
 *   tests/test_explore.c does); "n/a" under a scheduler where the body
 *   has nothing to find;
 * - how many of seeds 1..100 meet the goal, the mistake on;
 * - wall time per run, the mistake on and off (seeds 1..100), against a
 *   deterministic machine made and destroyed with no work, in the same
 *   run.
 *
 * usage: bench_explore [NSEARCH]   (default 20)
 * Every figure but the times is a function of the seeds: the same at
 * every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore.h"
#include "stackcap/testing.h"

#define MAXRUNS		1000
#define NSEEDS		100

static int
int_cmp(const void *a, const void *b)
{
	return (*(const int *)a - *(const int *)b);
}

static void
die(const char *what, int error)
{
	fprintf(stderr, "bench_explore: %s: %s\n", what, sc_errname(error));
	exit(1);
}

/* ms per run of b over seeds 1..NSEEDS; *hits: runs whose outcome is
 * b's goal. */
static double
per_run_ms(const struct exp_body *b, int pct, bool mistaken, int *hits)
{
	char why[1024];
	uint64_t t0, seed;
	int error, outcome;

	*hits = 0;
	t0 = sc_now_ns();
	for (seed = 1; seed <= NSEEDS; seed++) {
		error = exp_run(b, seed, pct, mistaken, 0, NULL, NULL,
		    &outcome, why, sizeof(why));
		if (error != 0)
			die(b->name, error);
		if (outcome == b->goal)
			(*hits)++;
	}
	return ((double)(sc_now_ns() - t0) / 1e6 / NSEEDS);
}

/* A deterministic machine of ncpu CPUs made and destroyed: ms. */
static double
bare_ms(int ncpu)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	uint64_t t0;
	int i, error;

	t0 = sc_now_ns();
	for (i = 1; i <= NSEEDS; i++) {
		sc_machine_config_init(&cfg);
		cfg.ncpu = ncpu;
		cfg.seed = (uint64_t)i;
		if ((error = sc_machine_create(&cfg, &m)) != 0)
			die("sc_machine_create", error);
		sc_machine_destroy(m);
	}
	return ((double)(sc_now_ns() - t0) / 1e6 / NSEEDS);
}

int
main(int argc, char **argv)
{
	const struct exp_body *b;
	struct exp_found f;
	int nsearch = argc > 1 ? atoi(argv[1]) : 20;
	int *runs, i, pct, hits, hits_off, error;
	double on, off, bare[2];
	size_t k;

	if (nsearch < 1) {
		fprintf(stderr, "usage: bench_explore [NSEARCH]\n");
		return (2);
	}
	exp_own_seed("bench_explore");
	if ((runs = calloc((size_t)nsearch, sizeof(*runs))) == NULL)
		return (1);
	bare[0] = bare_ms(1);
	bare[1] = bare_ms(2);
	printf("scheduler %s; %d searches of at most %d seeds a body and "
	    "chooser; a bare deterministic machine: %.2f ms (1 CPU), %.2f "
	    "ms (2 CPUs)\n", exp_sched() == SC_SCHED_4BSD ? "4BSD" : "ULE",
	    nsearch, MAXRUNS, bare[0], bare[1]);
	printf("%-20s %-6s %12s %9s %11s %11s %8s\n", "body", "chooser",
	    "runs med/max", "goal/100", "ms/run on", "ms/run off",
	    "off/bare");
	for (k = 0; k < exp_nbodies; k++) {
		b = &exp_bodies[k];
		for (pct = 0; pct <= 3; pct += 3) {
			/* Not this scheduler's: nothing to search for
			 * (tests/test_explore.c checks that). */
			for (i = 0; (b->scheds & EXP_SCHED(exp_sched())) == 0 &&
			    i < nsearch; i++)
				runs[i] = -1;
			for (i = 0; (b->scheds & EXP_SCHED(exp_sched())) != 0 &&
			    i < nsearch; i++) {
				error = exp_search(b, 1 + (uint64_t)i * MAXRUNS,
				    MAXRUNS, pct, true, EXP_MASK(b->goal) |
				    EXP_MASK(EXP_BROKEN), false, &f);
				if (error != 0)
					die(b->name, error);
				runs[i] = f.seed == 0 || f.outcome != b->goal ?
				    -1 : f.nrun;
			}
			qsort(runs, (size_t)nsearch, sizeof(*runs), int_cmp);
			on = per_run_ms(b, pct, true, &hits);
			off = per_run_ms(b, pct, false, &hits_off);
			if (runs[0] < 0)
				printf("%-20s %-6s %12s", b->name, pct > 0 ?
				    "PCT 3" : "random", "n/a");
			else
				printf("%-20s %-6s %6d / %3d", b->name,
				    pct > 0 ? "PCT 3" : "random",
				    runs[nsearch / 2], runs[nsearch - 1]);
			printf(" %9d %11.2f %11.2f %7.1fx\n", hits, on, off,
			    off / bare[b->ncpu > 1 ? 1 : 0]);
		}
	}
	free(runs);
	return (0);
}
