/*
 * A test author's own test, unchanged, under <stackcap/check.h>: the
 * whole of tests/test_swap.c (its CMocka group, its fixture made with
 * sc_machine_config_init(), seed 0) is a body of sc_check(), run under
 * random search, PCT and DFS.  Inside a run a machine of seed 0 takes the
 * run's seed, PCT depth and scheduler (src/machine.c), so each test's
 * machine is the run's deterministic one; the body's verdict is the
 * group's count of failed tests.
 *
 * A plain main(), no CMocka group around the checks: CMocka keeps one
 * jump buffer, and a group run inside a test of another group would not
 * give it back.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "stackcap.h"
#include "stackcap/check.h"

int	test_swap_main(void);

static int
swap_suite_body(const struct sc_machine_config *cfg, void *arg)
{
	(void)cfg;	/* the suite makes its own machines, of seed 0 */
	(void)arg;
	return (test_swap_main());
}

static int
run_under(int strategy, const char *name, uint64_t runs, int bound)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	int rc, bad = 0;

	sc_check_config_init(&cc);
	cc.strategy = strategy;
	cc.runs = runs;
	cc.preemption_bound = bound;
	rc = sc_check(&cc, swap_suite_body, NULL, &res);
	if (rc != 0) {
		fprintf(stderr, "%s: sc_check: %d: %s\n", name, rc, res.why);
		bad = 1;
	} else if (res.failed) {
		fprintf(stderr, "%s: the suite failed: %s\nschedule: %s\n",
		    name, res.why, res.schedule);
		bad = 1;
	} else if (runs != 0 && res.runs != runs) {
		fprintf(stderr, "%s: %" PRIu64 " runs, not %" PRIu64 "\n",
		    name, res.runs, runs);
		bad = 1;
	} else if (runs == 0 && !res.complete) {
		fprintf(stderr, "%s: the bound not covered in %" PRIu64
		    " runs\n", name, res.runs);
		bad = 1;
	} else
		printf("test_check_suite: %s: test_swap held in %" PRIu64
		    " runs%s (the longest made %" PRIu64 " choices)\n", name,
		    res.runs, res.complete ? ", the bound covered" : "",
		    res.max_decisions_seen);
	sc_check_result_free(&res);
	return (bad);
}

int
main(void)
{
	int bad = 0;

	bad += run_under(SC_CHECK_RANDOM, "random", 20, 0);
	bad += run_under(SC_CHECK_PCT, "PCT 3", 20, 0);
	/* runs 0: every schedule within one deviation. */
	bad += run_under(SC_CHECK_DFS, "DFS bound 1", 0, 1);
	return (bad == 0 ? 0 : 1);
}
