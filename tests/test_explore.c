/*
 * The explorer (tools/explore.c): each scenario of the history, its hook
 * removed, is found by the search in deterministic mode with its mistake
 * on, under a random scheduler and under PCT; the found seed replays to
 * the same failure; with the mistake off no seed breaks the invariant.
 *
 * 20 searches per body and chooser, from 20 disjoint ranges of seeds,
 * give the median and worst number of runs to the first failure
 * (printed; docs/determinism.md has the figures).
 */
#include <stdlib.h>

#include "sc_test.h"
#include "explore.h"

#define NSEARCH		20
#define MAXRUNS		1000
#define NCLEAN		100

static int
int_cmp(const void *a, const void *b)
{
	return (*(const int *)a - *(const int *)b);
}

static void
explore_one(const char *name, int pct)
{
	const struct exp_body *b = exp_find(name);
	char why[512];
	uint64_t found;
	int runs[NSEARCH], nrun, i;

	assert_non_null(b);
	for (i = 0; i < NSEARCH; i++) {
		assert_int_equal(exp_search(b, 1 + (uint64_t)i * MAXRUNS,
		    MAXRUNS, pct, true, &found, &nrun), 0);
		if (found == 0)
			fail_msg("%s (pct %d): no seed of %d from %d broke "
			    "the invariant", name, pct, MAXRUNS,
			    1 + i * MAXRUNS);
		runs[i] = nrun;
		/* The same seed, the same failure. */
		if (exp_run(b, found, pct, true, 0, NULL, NULL, why,
		    sizeof(why)) != 1)
			fail_msg("%s: seed %ju did not replay its failure",
			    name, (uintmax_t)found);
	}
	qsort(runs, NSEARCH, sizeof(runs[0]), int_cmp);
	print_message("%s, %s: runs to the first failure over %d searches: "
	    "median %d, worst %d\n", name, pct > 0 ? "PCT depth 3" : "random",
	    NSEARCH, runs[NSEARCH / 2], runs[NSEARCH - 1]);
	/* The final protocol: nothing to find. */
	assert_int_equal(exp_search(b, 1, NCLEAN, pct, false, &found, &nrun),
	    0);
	if (found != 0) {
		(void)exp_run(b, found, pct, false, 0, NULL, NULL, why,
		    sizeof(why));
		fail_msg("%s without its mistake broke at seed %ju: %s", name,
		    (uintmax_t)found, why);
	}
}

static void
test_lock_held_random(void **state)
{
	(void)state;
	explore_one("lock-held", 0);
}

static void
test_lock_held_pct(void **state)
{
	(void)state;
	explore_one("lock-held", 3);
}

static void
test_no_proc_lock_random(void **state)
{
	(void)state;
	explore_one("no-proc-lock", 0);
}

static void
test_no_proc_lock_pct(void **state)
{
	(void)state;
	explore_one("no-proc-lock", 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lock_held_random),
		cmocka_unit_test(test_lock_held_pct),
		cmocka_unit_test(test_no_proc_lock_random),
		cmocka_unit_test(test_no_proc_lock_pct),
	};

	/* The search chooses the seeds. */
	unsetenv("STACKCAP_SEED");
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
