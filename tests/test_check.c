/*
 * <stackcap/check.h>: sc_check() under each strategy finds a mistake of
 * the history (an explorer body, tools/explore_bodies.c) and gives a
 * schedule that fails again at each replay, shrunk to fewer deviations;
 * the final protocol holds; DFS covers a small body's bound; a schedule
 * replays in another sc_check() through STACKCAP_SCHEDULE and through a
 * fuzzer's bytes; a search split in shards and merged is the whole
 * search; and every bad input is a clear error: an unknown
 * strategy, a malformed schedule (where), a schedule of another body
 * (divergence), a body that makes no machine, a nested check.
 *
 * A user's body (capture_body) is written as a test author would: public
 * calls only, its verdict returned, never a CMocka assertion inside it
 * (an assertion long-jumps out of sc_check()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_test.h"
#include "sc_test_bodies.h"
#include "explore.h"
#include "stackcap/check.h"

/* ------------------------------------------------------------------------
 * A user's body: a spinner captured from a plain pthread
 * ------------------------------------------------------------------------ */

struct cap {
	struct spin	s;		/* the spinner's (sc_test_bodies.h) */
	int		captures;	/* in the body: how many */
	int		nobody;		/* make no machine */
	int		nested;		/* call sc_check() inside: its rc */
	int		nested_rc;
	long		yields;		/* then yield this many times, a
					   second spinner beside (about 3
					   decisions a yield) */
};

/*
 * Held: every capture of the spinner returned 0 with its own frame
 * (spin_polite), or EBUSY.  cfg as given, but 2 CPUs and a bound of 20 ms
 * of virtual time a capture.
 */
static int
capture_body(const struct sc_machine_config *ccfg, void *arg)
{
	struct cap *c = arg;
	struct sc_machine_config cfg = *ccfg;
	struct sc_check_config cc;
	struct sc_check_result res;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *t, *t2 = NULL;
	struct sc_stack st;
	struct spin s2;
	int k, error, bad = 0;
	long i;

	if (c->nested) {
		sc_check_config_init(&cc);
		c->nested_rc = sc_check(&cc, capture_body, c, &res);
		sc_check_result_free(&res);
	}
	if (c->nobody)
		return (0);
	cfg.ncpu = 2;
	cfg.capture_timeout_ns = 20L * 1000 * 1000;
	if (sc_machine_create(&cfg, &m) != 0)
		return (-1);
	memset(&c->s, 0, sizeof(c->s));
	if (sc_proc_create(m, "user", &p) != 0 ||
	    sc_thread_create(p, "spinner", spin_polite, &c->s, &t) != 0) {
		sc_machine_destroy(m);
		return (-1);
	}
	while (!atomic_load(&c->s.spinning))
		sc_maybe_yield();
	for (k = 0; k < c->captures && !bad; k++) {
		error = sc_stack_save_td_locked(p, t, &st);
		if (error == 0 && sc_test_stack_find(&st, 0, "spin_polite") < 0)
			bad = 1;
		else if (error != 0 && error != EBUSY)
			bad = 1;
	}
	/* A second spinner: three actors, so that each point is a choice
	 * between the two others. */
	memset(&s2, 0, sizeof(s2));
	if (c->yields > 0 &&
	    sc_thread_create(p, "spinner2", spin_polite, &s2, &t2) != 0)
		bad = 1;
	for (i = 0; i < c->yields && !bad; i++)
		sc_maybe_yield();
	if (t2 != NULL) {
		atomic_store(&s2.release, 1);
		(void)sc_thread_join(t2);
	}
	atomic_store(&c->s.release, 1);
	(void)sc_thread_join(t);
	sc_machine_destroy(m);
	return (bad);
}

/* ------------------------------------------------------------------------
 * The explorer's bodies
 * ------------------------------------------------------------------------ */

static void
exp_arg(struct exp_check *e, const char *name, bool mistaken)
{
	memset(e, 0, sizeof(*e));
	e->b = exp_find(name);
	assert_non_null(e->b);
	e->mistaken = mistaken;
	e->stop = EXP_MASK(EXP_BROKEN);
}

static void
cc_for(struct sc_check_config *cc, const struct exp_check *e, int strategy)
{
	sc_check_config_init(cc);
	cc->strategy = strategy;
	cc->pct_steps = e->b->pct_steps;
	cc->runs = 1000;
	cc->shrink_runs = 300;
}

/*
 * The search finds b's mistake; its schedule (shrunk, and the original)
 * fails at each replay, and the shrunk one has no more deviations.
 */
static void
found_and_replays(const char *name, int strategy)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct exp_check e;

	exp_arg(&e, name, true);
	if ((e.b->scheds & EXP_SCHED(exp_sched())) == 0)
		skip();
	cc_for(&cc, &e, strategy);
	assert_int_equal(sc_check(&cc, exp_check_body, &e, &res), 0);
	if (!res.failed)
		fail_msg("%s: strategy %d: nothing found in %ju runs: %s",
		    name, strategy, (uintmax_t)res.runs, res.why);
	assert_non_null(res.schedule);
	assert_non_null(res.schedule_orig);
	assert_true(res.preemptions <= res.preemptions_orig);
	assert_true(res.preemptions >= 1);	/* the default holds */
	if (sc_check_replay(res.schedule, exp_check_body, &e) !=
	    SC_CHECK_FAILED)
		fail_msg("%s: the shrunk schedule did not fail again: %s\n%s",
		    name, sc_check_why(), res.schedule);
	assert_int_equal(sc_check_replay(res.schedule, exp_check_body, &e),
	    SC_CHECK_FAILED);
	assert_int_equal(sc_check_replay(res.schedule_orig, exp_check_body,
	    &e), SC_CHECK_FAILED);
	print_message("%s, strategy %d: found at run %ju; %d deviations, "
	    "shrunk to %d in %ju runs: %s\n", name, strategy,
	    (uintmax_t)res.runs, res.preemptions_orig, res.preemptions,
	    (uintmax_t)res.shrink_runs, res.schedule);
	sc_check_result_free(&res);
}

static void
test_random_finds(void **state)
{
	(void)state;
	found_and_replays("no-proc-lock", SC_CHECK_RANDOM);
	found_and_replays("spin-held", SC_CHECK_RANDOM);
}

static void
test_pct_finds(void **state)
{
	(void)state;
	found_and_replays("no-proc-lock", SC_CHECK_PCT);
	found_and_replays("lock-held", SC_CHECK_PCT);
}

static void
test_dfs_finds(void **state)
{
	(void)state;
	found_and_replays("no-proc-lock", SC_CHECK_DFS);
}

/*
 * A random failure of many deviations shrinks to the few a mistake
 * needs: nocpu-offcpu (ULE) needs 2 (DFS covers bound 1 and finds none),
 * a random run of it deviates about 60 times, and delta debugging
 * stops at 21; the shrinker's DFS pass finds the 2 once the budget
 * leaves it about 1,600 runs (the default 1000 does not).
 */
/*
 * A random failure of body name shrinks to at most most deviations within
 * budget runs of the shrinker (0: sc_check_config_init()'s), and still
 * fails.
 */
static void
shrink_to(const char *name, uint64_t budget, int most)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct exp_check e;

	exp_arg(&e, name, true);
	if ((e.b->scheds & EXP_SCHED(exp_sched())) == 0)
		skip();
	if (budget == 0) {	/* the library's default, not cc_for()'s */
		sc_check_config_init(&cc);
		budget = cc.shrink_runs;
	}
	cc_for(&cc, &e, SC_CHECK_RANDOM);
	cc.shrink_runs = budget;
	assert_int_equal(sc_check(&cc, exp_check_body, &e, &res), 0);
	assert_true(res.failed);
	print_message("%s: %d deviations shrunk to %d in %ju runs\n", name,
	    res.preemptions_orig, res.preemptions, (uintmax_t)res.shrink_runs);
	assert_true(res.preemptions_orig > most);
	if (res.preemptions > most)
		fail_msg("%s: the shrinker left %d deviations (at most %d "
		    "wanted): STACKCAP_SCHEDULE='%s'", name, res.preemptions,
		    most, res.schedule);
	assert_int_equal(sc_check_replay(res.schedule, exp_check_body, &e),
	    SC_CHECK_FAILED);
	sc_check_result_free(&res);
}

/* nocpu-offcpu needs 2 deviations, which the DFS pass finds once the
 * budget reaches bound 2's schedule (docs/check.md): the default budget
 * does, since it is 4000 (1000 kept 21 deviations). */
static void
test_shrink_to_fewest(void **state)
{
	(void)state;
	shrink_to("nocpu-offcpu", 0, 2);
}

/*
 * stale-answer with the default budget: at most 3 deviations (the goal of
 * the shrinker).  Its body used to give the target 40 turns in its old
 * chain, and no schedule of 3 deviations or fewer failed (ULE, bound 3
 * covered: 91,113 schedules); the shrinker kept 19.
 */
static void
test_shrink_stale_answer(void **state)
{
	(void)state;
	shrink_to("stale-answer", 0, 3);
}

/* The final protocol: no strategy finds anything. */
static void
test_final_protocol_holds(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct exp_check e;
	int s;

	(void)state;
	exp_arg(&e, "no-proc-lock", false);
	for (s = SC_CHECK_RANDOM; s <= SC_CHECK_DFS; s++) {
		cc_for(&cc, &e, s);
		cc.runs = 150;
		assert_int_equal(sc_check(&cc, exp_check_body, &e, &res), 0);
		if (res.failed)
			fail_msg("the final protocol failed (strategy %d): %s\n"
			    "STACKCAP_SCHEDULE='%s'", s, res.why, res.schedule);
		assert_int_equal(res.runs, 150);
		sc_check_result_free(&res);
	}
}

/*
 * DFS covers a bound: a user's body with one capture, bound 1; every
 * schedule ran (complete), and more than one did.
 */
static void
test_dfs_complete(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct cap c = { .captures = 1 };

	(void)state;
	sc_check_config_init(&cc);
	cc.strategy = SC_CHECK_DFS;
	cc.preemption_bound = 1;
	cc.runs = 0;
	assert_int_equal(sc_check(&cc, capture_body, &c, &res), 0);
	if (res.failed)
		fail_msg("%s\nSTACKCAP_SCHEDULE='%s'", res.why, res.schedule);
	assert_true(res.complete);
	assert_true(res.runs > 1);
	print_message("capture body, DFS bound 1: %ju schedules, complete; "
	    "%ju decisions a run\n", (uintmax_t)res.runs,
	    (uintmax_t)res.max_decisions_seen);
	sc_check_result_free(&res);
	/* Bound 0: the default schedule alone. */
	cc.preemption_bound = 0;
	assert_int_equal(sc_check(&cc, capture_body, &c, &res), 0);
	assert_true(res.complete);
	assert_int_equal(res.runs, 1);
	sc_check_result_free(&res);
}

/*
 * A user's body under each strategy: 2 captures of a spinner hold in
 * every run (the final protocol), 100 random and PCT runs, and DFS
 * covers 1 deviation.
 */
static void
test_user_body_all_strategies(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct cap c = { .captures = 2 };
	int s;

	(void)state;
	for (s = SC_CHECK_RANDOM; s <= SC_CHECK_DFS; s++) {
		sc_check_config_init(&cc);
		cc.strategy = s;
		cc.runs = s == SC_CHECK_DFS ? 0 : 100;
		cc.preemption_bound = 1;
		assert_int_equal(sc_check(&cc, capture_body, &c, &res), 0);
		if (res.failed)
			fail_msg("strategy %d: %s\nSTACKCAP_SCHEDULE='%s'", s,
			    res.why, res.schedule);
		if (s == SC_CHECK_DFS)
			assert_true(res.complete);
		else
			assert_int_equal(res.runs, 100);
		sc_check_result_free(&res);
	}
}

/*
 * A campaign in 3 shards (cc.shard) merged (sc_check_result_merge())
 * equals the search in one: DFS over the user's body at bound 1 (every
 * shard complete, the same count of schedules, none run twice: each
 * shard ran its part only), DFS and random on a mistake (the same first
 * failure: its schedule before shrinking, and its seed).
 */
static void
sharded_equals_whole(struct sc_check_config *cc, sc_check_body *body,
    void *arg)
{
	struct sc_check_result whole, merged, part;
	uint32_t k;

	cc->shrink = 0;
	cc->shard = 0;
	cc->shards = 1;
	assert_int_equal(sc_check(cc, body, arg, &whole), 0);
	cc->shards = 3;
	for (k = 0; k < cc->shards; k++) {
		cc->shard = k;
		assert_int_equal(sc_check(cc, body, arg, k == 0 ? &merged :
		    &part), 0);
		if (k == 0)
			continue;
		assert_true(part.runs > 0);
		sc_check_result_merge(&merged, &part);
	}
	assert_int_equal(merged.failed, whole.failed);
	assert_int_equal(merged.complete, whole.complete);
	if (!whole.failed)
		assert_int_equal(merged.runs, whole.runs);
	else {
		assert_string_equal(merged.schedule_orig, whole.schedule_orig);
		assert_int_equal(merged.seed, whole.seed);
		assert_int_equal(merged.preemptions_orig,
		    whole.preemptions_orig);
	}
	print_message("strategy %d, %s: whole %ju runs, 3 shards %ju\n",
	    cc->strategy, whole.failed ? "failed" : "held",
	    (uintmax_t)whole.runs, (uintmax_t)merged.runs);
	sc_check_result_free(&whole);
	sc_check_result_free(&merged);
}

static void
test_shards_merge(void **state)
{
	struct sc_check_config cc;
	struct cap c = { .captures = 1 };
	struct exp_check e;

	(void)state;
	sc_check_config_init(&cc);
	cc.strategy = SC_CHECK_DFS;
	cc.preemption_bound = 1;
	cc.runs = 0;
	sharded_equals_whole(&cc, capture_body, &c);
	exp_arg(&e, "no-proc-lock", true);
	cc_for(&cc, &e, SC_CHECK_DFS);
	cc.preemption_bound = 2;
	sharded_equals_whole(&cc, exp_check_body, &e);
	cc_for(&cc, &e, SC_CHECK_RANDOM);
	sharded_equals_whole(&cc, exp_check_body, &e);
}

/* A found schedule, replayed three ways: the call, the variable inside
 * another sc_check(), a fuzzer's bytes. */
static void
test_schedule_replays_everywhere(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res, res2;
	struct exp_check e;
	uint8_t bytes[4096];
	const char *p;
	unsigned long gap, alt;
	size_t idx, n;

	(void)state;
	exp_arg(&e, "no-proc-lock", true);
	cc_for(&cc, &e, SC_CHECK_RANDOM);
	assert_int_equal(sc_check(&cc, exp_check_body, &e, &res), 0);
	assert_true(res.failed);
	/* STACKCAP_SCHEDULE replaces the search by its one run. */
	assert_int_equal(setenv("STACKCAP_SCHEDULE", res.schedule, 1), 0);
	assert_int_equal(sc_check(&cc, exp_check_body, &e, &res2), 0);
	assert_true(res2.failed);
	assert_int_equal(res2.runs, 1);
	assert_string_equal(res2.schedule, res.schedule);
	sc_check_result_free(&res2);
	/* ... and a malformed one is an error, not a search. */
	assert_int_equal(setenv("STACKCAP_SCHEDULE", "sc1:ule:w:x", 1), 0);
	assert_int_equal(sc_check(&cc, exp_check_body, &e, &res2), EINVAL);
	assert_non_null(strstr(res2.why, "STACKCAP_SCHEDULE"));
	assert_non_null(strstr(res2.why, "character 11"));
	sc_check_result_free(&res2);
	assert_int_equal(unsetenv("STACKCAP_SCHEDULE"), 0);
	/* The same choices as bytes: alternative k is byte k (the shrunk
	 * schedule is of a run whose futex waiters wait, as a fuzzer's). */
	assert_non_null(strstr(res.schedule, ":w:"));
	memset(bytes, 0, sizeof(bytes));
	p = strrchr(res.schedule, ':') + 1;
	for (idx = (size_t)-1, n = 0; *p == '+'; n++) {
		assert_int_equal(sscanf(p, "+%lu.%lu", &gap, &alt), 2);
		idx += gap;
		assert_true(idx < sizeof(bytes));
		bytes[idx] = (uint8_t)alt;
		p = strchr(p + 1, '+') != NULL ? strchr(p + 1, '+') : "";
	}
	assert_int_equal(sc_check_fuzz(bytes, sizeof(bytes), exp_check_body,
	    &e), SC_CHECK_FAILED);
	/* All defaults: the default schedule holds. */
	memset(bytes, 0, sizeof(bytes));
	assert_int_equal(sc_check_fuzz(bytes, sizeof(bytes), exp_check_body,
	    &e), 0);
	assert_int_equal(sc_check_fuzz(NULL, 0, exp_check_body, &e), 0);
	sc_check_result_free(&res);
}

/* A KASSERT in a run is a failure, and says so. */
static void
test_kassert_fails_run(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct exp_check e;

	(void)state;
	exp_arg(&e, "nmi-ule", true);
	if (exp_sched() != SC_SCHED_ULE)
		skip();
	cc_for(&cc, &e, SC_CHECK_RANDOM);
	assert_int_equal(sc_check(&cc, exp_check_body, &e, &res), 0);
	assert_true(res.failed);
	assert_non_null(strstr(res.why, "KASSERT"));
	assert_int_equal(sc_check_replay(res.schedule, exp_check_body, &e),
	    SC_CHECK_FAILED);
	assert_non_null(strstr(sc_check_why(), "KASSERT"));
	sc_check_result_free(&res);
}

/* ------------------------------------------------------------------------
 * Bad input
 * ------------------------------------------------------------------------ */

static void
expect_config_error(struct sc_check_config *cc, const char *what)
{
	struct sc_check_result res;
	struct cap c = { .captures = 1 };

	assert_int_equal(sc_check(cc, capture_body, &c, &res), EINVAL);
	if (strstr(res.why, what) == NULL)
		fail_msg("expected \"%s\" in \"%s\"", what, res.why);
	assert_null(res.schedule);
	sc_check_config_init(cc);
}

static void
test_bad_config(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct cap c = { .captures = 1 };

	(void)state;
	assert_int_equal(sc_check(NULL, capture_body, &c, NULL), EINVAL);
	sc_check_config_init(&cc);
	assert_int_equal(sc_check(&cc, NULL, &c, &res), EINVAL);
	assert_non_null(strstr(res.why, "body"));
	cc.strategy = 7;
	expect_config_error(&cc, "unknown strategy");
	cc.runs = 0;
	expect_config_error(&cc, "runs is 0");
	cc.strategy = SC_CHECK_PCT;
	cc.pct_depth = 0;
	expect_config_error(&cc, "pct_depth");
	cc.first_seed = 0;
	expect_config_error(&cc, "first_seed");
	cc.sched = 5;
	expect_config_error(&cc, "sched");
	cc.preemption_bound = -1;
	expect_config_error(&cc, "preemption_bound");
	cc.shards = 0;
	expect_config_error(&cc, "shard");
	cc.shards = 2;
	cc.shard = 2;
	expect_config_error(&cc, "shard");
}

static void
test_no_machine(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct cap c = { .nobody = 1 };

	(void)state;
	sc_check_config_init(&cc);
	assert_int_equal(sc_check(&cc, capture_body, &c, &res), EINVAL);
	assert_non_null(strstr(res.why, "no deterministic machine"));
	assert_false(res.failed);
	assert_int_equal(sc_check_replay("sc1:ule:w:0:cbf29ce484222325:",
	    capture_body, &c), EINVAL);
	assert_non_null(strstr(sc_check_why(), "no deterministic machine"));
}

static void
test_nested(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct cap c = { .captures = 1, .nested = 1 };

	(void)state;
	sc_check_config_init(&cc);
	cc.runs = 1;
	assert_int_equal(sc_check(&cc, capture_body, &c, &res), 0);
	assert_int_equal(c.nested_rc, EBUSY);
	sc_check_result_free(&res);
}

/* Each malformed schedule: EINVAL, and where. */
static void
test_malformed_schedule(void **state)
{
	static const struct {
		const char *s, *where;
	} bad[] = {
		{ "", "character 1" },
		{ "sc2:ule:w:1:0000000000000000:", "character 1" },
		{ "sc1:fifo:w:1:0000000000000000:", "character 5" },
		{ "sc1:ule:q:1:0000000000000000:", "character 9" },
		{ "sc1:ule:w:x:0000000000000000:", "character 11" },
		{ "sc1:ule:w:5:00000:", "character 13" },
		{ "sc1:ule:w:5:0000000000000000:7.1", "character 30" },
		{ "sc1:ule:w:5:0000000000000000:+0.1", "character 31" },
		{ "sc1:ule:w:5:0000000000000000:+1.0", "character 33" },
		{ "sc1:ule:w:5:0000000000000000:+9.1", "before the count" },
		{ "sc1:ule:w:5:0000000000000000:+1.1x", "character 33" },
		{ "sc1:ule:w:5:0000000000000000:+1.70000", "1..65535" },
	};
	struct cap c = { .captures = 1 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(sc_check_replay(bad[i].s, capture_body, &c),
		    EINVAL);
		if (strstr(sc_check_why(), bad[i].where) == NULL)
			fail_msg("\"%s\": expected \"%s\" in \"%s\"", bad[i].s,
			    bad[i].where, sc_check_why());
	}
	assert_int_equal(sc_check_replay(NULL, capture_body, &c), EINVAL);
	assert_int_equal(sc_check_fuzz(NULL, 3, capture_body, &c), EINVAL);
}

/*
 * A run longer than the decisions a search keeps (1 << 20 by default):
 * no error for a fuzzer's run, which only lists the choices its bytes
 * made (it was E2BIG, and the fuzzer took each long run for a crash);
 * E2BIG for a schedule that lists a choice past the bound.
 */
static void
test_long_run(void **state)
{
	struct cap c = { .captures = 1, .yields = 400 * 1000 };

	(void)state;
	if (sc_check_fuzz(NULL, 0, capture_body, &c) != 0)
		fail_msg("sc_check_fuzz: %s", sc_check_why());
	/* E2BIG, not SC_CHECK_DIVERGED: the run reached the listed choice,
	 * so it is as long as the premise says. */
	if (sc_check_replay("sc1:ule:w:2000000:0000000000000000:+1048577.1",
	    capture_body, &c) != E2BIG)
		fail_msg("replay: %s", sc_check_why());
	assert_non_null(strstr(sc_check_why(), "decisions"));
}

/* A schedule of one body replayed on another: diverged, and said. */
static void
test_divergence(void **state)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	struct exp_check e, other;
	struct cap c = { .captures = 3 };

	(void)state;
	exp_arg(&e, "no-proc-lock", true);
	cc_for(&cc, &e, SC_CHECK_RANDOM);
	assert_int_equal(sc_check(&cc, exp_check_body, &e, &res), 0);
	assert_true(res.failed);
	assert_int_equal(sc_check_replay(res.schedule_orig, capture_body, &c),
	    SC_CHECK_DIVERGED);
	assert_non_null(strstr(sc_check_why(), "diverged"));
	exp_arg(&other, "stale-answer", true);
	assert_int_equal(sc_check_replay(res.schedule, exp_check_body, &other),
	    SC_CHECK_DIVERGED);
	/* The same body under the other scheduler: diverged too. */
	sc_check_result_free(&res);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_malformed_schedule),
		cmocka_unit_test(test_no_machine),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_random_finds),
		cmocka_unit_test(test_pct_finds),
		cmocka_unit_test(test_dfs_finds),
		cmocka_unit_test(test_shrink_to_fewest),
		cmocka_unit_test(test_shrink_stale_answer),
		cmocka_unit_test(test_final_protocol_holds),
		cmocka_unit_test(test_dfs_complete),
		cmocka_unit_test(test_shards_merge),
		cmocka_unit_test(test_user_body_all_strategies),
		cmocka_unit_test(test_schedule_replays_everywhere),
		cmocka_unit_test(test_kassert_fails_run),
		cmocka_unit_test(test_divergence),
		cmocka_unit_test(test_long_run),
	};

	exp_own_seed("test_check");
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
