/*
 * The explorer (tools/explore.c): each scenario of the history, its hook
 * removed, is found by the search in deterministic mode with its mistake
 * on, under a random scheduler and under PCT; the found seed replays to
 * the same failure, with the same narrated trace; with the mistake off no
 * seed breaks the invariant.  A body whose mistake shows under one
 * scheduler only (nmi-ule) holds under the other with the mistake on.  A
 * body with no mistake (ule-incoming-nocpu, snapshot) is found when a run
 * reaches its window, where the invariant must hold too; under 4BSD
 * ule-incoming-nocpu's never does.
 *
 * NSEARCH searches per body and chooser, from disjoint ranges of seeds,
 * give the median and worst number of runs to the first failure
 * (printed; docs/determinism.md has the figures).  Every search is a
 * function of its seed range: the figures are the same at every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_test.h"
#include "explore.h"

/*
 * ASan and UBSan make every run several times slower (test_explore_ule
 * took 134 s alone and passed its 300 s bound only narrowly with a second
 * test beside it at load 25): under them, 5 searches still check every
 * assertion; the figures docs/determinism.md gives are the default
 * build's 20.
 */
#if defined(SC_SANITIZER_ADDRESS) || defined(SC_SANITIZER_THREAD)
#define NSEARCH		5
#else
#define NSEARCH		20
#endif
#define MAXRUNS		1000
#define NCLEAN		100

static int
int_cmp(const void *a, const void *b)
{
	return (*(const int *)a - *(const int *)b);
}

static void
trace_show(struct sc_machine *m, void *arg)
{
	sc_trace_print(m, arg);
}

/*
 * The narrated trace of one run, its addresses (0x...: stacks, frame
 * pointers, which another process places elsewhere) blanked.  Caller
 * frees it.
 */
static char *
trace_text(const struct exp_body *b, uint64_t seed, int pct, bool mistaken,
    int *outcome)
{
	char why[1024], *buf = NULL, *r, *w;
	size_t len = 0;
	FILE *fp;

	fp = open_memstream(&buf, &len);
	assert_non_null(fp);
	assert_int_equal(exp_run(b, seed, pct, mistaken, 1 << 16, trace_show,
	    fp, outcome, why, sizeof(why)), 0);
	assert_int_equal(fclose(fp), 0);
	for (r = w = buf; *r != '\0'; r++) {
		*w++ = *r;
		if (r[0] == '0' && r[1] == 'x') {
			*w++ = 'x';
			for (r += 2; r[1] != '\0' && strchr("0123456789abcdef",
			    r[1]) != NULL; r++)
				;
		}
	}
	*w = '\0';
	return (buf);
}

static void
explore_one(const char *name, int pct)
{
	const struct exp_body *b = exp_find(name);
	const char *how = pct > 0 ? "PCT depth 3" : "random";
	char why[1024], why2[1024], cmd[256], *t1, *t2;
	struct exp_found f;
	int runs[NSEARCH], i, o1, o2, outcome;
	bool here;

	assert_non_null(b);
	here = (b->scheds & EXP_SCHED(exp_sched())) != 0;
	for (i = 0; here && i < NSEARCH; i++) {
		assert_int_equal(exp_search(b, 1 + (uint64_t)i * MAXRUNS,
		    MAXRUNS, pct, true, EXP_MASK(b->goal) |
		    EXP_MASK(EXP_BROKEN), false, &f), 0);
		if (f.seed == 0)
			fail_msg("%s (%s): no seed of %d from %d found it",
			    name, how, MAXRUNS, 1 + i * MAXRUNS);
		exp_replay_cmd(b, f.seed, pct, true, cmd, sizeof(cmd));
		assert_int_equal(exp_run(b, f.seed, pct, true, 0, NULL, NULL,
		    &outcome, why, sizeof(why)), 0);
		if (f.outcome != b->goal)
			fail_msg("%s (%s): seed %ju broke the invariant: %s\n"
			    "replay: %s", name, how, (uintmax_t)f.seed, why,
			    cmd);
		runs[i] = f.nrun;
		/* The same seed, the same run. */
		assert_int_equal(exp_run(b, f.seed, pct, true, 0, NULL, NULL,
		    &o2, why2, sizeof(why2)), 0);
		if (outcome != f.outcome || o2 != outcome ||
		    strcmp(why, why2) != 0)
			fail_msg("%s: seed %ju did not replay: %s", name,
			    (uintmax_t)f.seed, cmd);
	}
	if (here) {
		/* The replay (stackcap-demo --scenario NAME --seed S) tells
		 * the same story, event for event. */
		t1 = trace_text(b, f.seed, pct, true, &o1);
		t2 = trace_text(b, f.seed, pct, true, &o2);
		assert_int_equal(o1, f.outcome);
		assert_int_equal(o2, f.outcome);
		if (strcmp(t1, t2) != 0)
			fail_msg("%s: two traced runs of seed %ju differ", name,
			    (uintmax_t)f.seed);
		free(t1);
		free(t2);
		qsort(runs, NSEARCH, sizeof(runs[0]), int_cmp);
		print_message("%s, %s, %s: runs to the first %s over %d "
		    "searches: median %d, worst %d\n", name, how,
		    exp_sched() == SC_SCHED_4BSD ? "4BSD" : "ULE",
		    b->goal == EXP_REACHED ? "reach" : "failure", NSEARCH,
		    runs[NSEARCH / 2], runs[NSEARCH - 1]);
	} else {
		/* Not this scheduler's: the mistake on, nothing to find. */
		assert_int_equal(exp_search(b, 1, NCLEAN, pct, true,
		    EXP_MASK(b->goal) | EXP_MASK(EXP_BROKEN), false, &f), 0);
		if (f.seed != 0) {
			exp_replay_cmd(b, f.seed, pct, true, cmd, sizeof(cmd));
			(void)exp_run(b, f.seed, pct, true, 0, NULL, NULL,
			    &outcome, why, sizeof(why));
			fail_msg("%s (%s) found something at seed %ju under "
			    "the wrong scheduler: %s\nreplay: %s", name, how,
			    (uintmax_t)f.seed, why, cmd);
		}
		print_message("%s, %s, %s: not this scheduler's; %d seeds "
		    "with the mistake on held\n", name, how,
		    exp_sched() == SC_SCHED_4BSD ? "4BSD" : "ULE", NCLEAN);
	}
	/* The final protocol: nothing to find (a window may be reached). */
	assert_int_equal(exp_search(b, 1, NCLEAN, pct, false,
	    EXP_MASK(EXP_BROKEN), false, &f), 0);
	if (f.seed != 0) {
		exp_replay_cmd(b, f.seed, pct, false, cmd, sizeof(cmd));
		(void)exp_run(b, f.seed, pct, false, 0, NULL, NULL, &outcome,
		    why, sizeof(why));
		fail_msg("%s without its mistake broke at seed %ju: %s\n"
		    "replay: %s", name, (uintmax_t)f.seed, why, cmd);
	}
	if (b->goal == EXP_REACHED)
		print_message("%s, %s: %d of %d seeds reached the window\n",
		    name, how, f.nreached, NCLEAN);
}

#define EXPLORE_TEST(fn, name)						\
	static void							\
	fn##_random(void **state)					\
	{								\
		(void)state;						\
		explore_one(name, 0);					\
	}								\
	static void							\
	fn##_pct(void **state)						\
	{								\
		(void)state;						\
		explore_one(name, 3);					\
	}

EXPLORE_TEST(test_lock_held, "lock-held")
EXPLORE_TEST(test_no_proc_lock, "no-proc-lock")
EXPLORE_TEST(test_stale_answer, "stale-answer")
EXPLORE_TEST(test_spin_held, "spin-held")
EXPLORE_TEST(test_nmi_ule, "nmi-ule")
EXPLORE_TEST(test_ule_incoming_nocpu, "ule-incoming-nocpu")
EXPLORE_TEST(test_snapshot, "snapshot")
EXPLORE_TEST(test_clear_after_ipi, "clear-after-ipi")
EXPLORE_TEST(test_answer_target, "answer-target")
EXPLORE_TEST(test_nocpu_offcpu, "nocpu-offcpu")

#define EXPLORE_ENTRY(fn)						\
	cmocka_unit_test(fn##_random), cmocka_unit_test(fn##_pct)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		EXPLORE_ENTRY(test_lock_held),
		EXPLORE_ENTRY(test_no_proc_lock),
		EXPLORE_ENTRY(test_stale_answer),
		EXPLORE_ENTRY(test_spin_held),
		EXPLORE_ENTRY(test_snapshot),
		EXPLORE_ENTRY(test_nmi_ule),
		EXPLORE_ENTRY(test_ule_incoming_nocpu),
		EXPLORE_ENTRY(test_clear_after_ipi),
		EXPLORE_ENTRY(test_answer_target),
		EXPLORE_ENTRY(test_nocpu_offcpu),
	};

	exp_own_seed("test_explore");	/* the search chooses the seeds */
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
