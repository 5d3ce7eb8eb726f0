/*
 * stackcap/check.h: systematic testing of code that runs on a simulated
 * machine (docs/check.md).  sc_check() runs a body again and again, each
 * run a deterministic machine (cfg.seed) whose every scheduling choice
 * the search makes: at random, by PCT, or every schedule within a bound
 * (DFS).  A failing run is given back as a schedule, a string that
 * sc_check_replay() or STACKCAP_SCHEDULE runs again, event for event,
 * after the shrinker made it as short as it could.
 *
 *	static int
 *	body(const struct sc_machine_config *cfg, void *arg)
 *	{
 *		struct sc_machine_config c = *cfg;
 *		struct sc_machine *m;
 *
 *		c.ncpu = 2;
 *		if (sc_machine_create(&c, &m) != 0)
 *			return (-1);
 *		... run, capture, check ...
 *		sc_machine_destroy(m);
 *		return (held ? 0 : 1);
 *	}
 *
 *	struct sc_check_config cc;
 *	struct sc_check_result res;
 *
 *	sc_check_config_init(&cc);
 *	cc.strategy = SC_CHECK_PCT;
 *	if (sc_check(&cc, body, NULL, &res) == 0 && res.failed)
 *		printf("%s\nSTACKCAP_SCHEDULE='%s'\n", res.why, res.schedule);
 *	sc_check_result_free(&res);
 */
#ifndef STACKCAP_CHECK_H
#define STACKCAP_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include <stackcap.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The strategies (sc_check_config.strategy). */
enum {
	SC_CHECK_RANDOM = 0,	/* each choice uniform among the candidates */
	SC_CHECK_PCT = 1,	/* PCT of depth pct_depth (Burckhardt et al.,
				   ASPLOS 2010) */
	SC_CHECK_DFS = 2	/* every schedule within preemption_bound,
				   depth first, by iterative deepening:
				   all with 0 deviations, then 1, ... */
};

/*
 * What sc_check() does.  Fill with sc_check_config_init(), then set what
 * differs.  Fields are only ever added at the end, in place of reserved.
 */
struct sc_check_config {
	int		strategy;	/* SC_CHECK_*; default RANDOM */
	uint64_t	runs;		/* at most this many runs (DFS: 0, no
					   limit but the bound); default 1000 */
	int		pct_depth;	/* PCT's d, 1..64; default 3 */
	unsigned	pct_steps;	/* PCT's k, the steps a run is expected
					   to take; 0: 10000 */
	int		preemption_bound; /* DFS: the most deviations from the
					   default schedule; default 2 */
	uint64_t	first_seed;	/* RANDOM, PCT: runs take the seeds
					   first_seed, first_seed + 1, ...
					   (never 0); default 1.  Shards of a
					   campaign take disjoint ranges */
	int		shrink;		/* shrink a failing schedule;
					   default 1 */
	uint64_t	shrink_runs;	/* the shrinker's most runs; default
					   4000 */
	int		sched;		/* SC_SCHED_ULE or SC_SCHED_4BSD; -1
					   (default): the machine's default,
					   STACKCAP_SCHED */
	size_t		max_decisions;	/* the most choices a run of the
					   search may make (each costs 12
					   bytes, taken once); default
					   1 << 20 */
	uint64_t	time_limit_ns;	/* stop the search (not a run) after
					   this long; 0 (default): no limit */
	uint32_t	shard;		/* this process's part of a campaign
					   split in shards parts, 0..shards - 1
					   (docs/check.md, "Campaigns"):
					   RANDOM, PCT: the runs i of runs
					   with i % shards == shard; DFS: the
					   subtrees of the first deviations
					   of rank % shards == shard; default
					   0 */
	uint32_t	shards;		/* default 1 */
	uint64_t	reserved[6];
};

/* What sc_check() found.  Free with sc_check_result_free(). */
struct sc_check_result {
	uint64_t	runs;		/* runs of the search (the shrinker's
					   are in shrink_runs) */
	int		failed;		/* a run failed: why, schedule */
	int		complete;	/* DFS: every schedule within the bound
					   ran (the search is exhaustive) */
	uint64_t	seed;		/* RANDOM, PCT: the failing run's
					   seed */
	char		*schedule;	/* the failing run's schedule, shrunk if
					   cc.shrink; NULL if none */
	char		*schedule_orig;	/* before shrinking; NULL if none */
	int		preemptions;	/* deviations in schedule: the choices
					   that differ from the default */
	int		preemptions_orig; /* ... in schedule_orig */
	uint64_t	decisions;	/* choices that schedule's run made */
	uint64_t	shrink_runs;	/* runs the shrinker made */
	uint64_t	max_decisions_seen; /* the longest run's choices */
	char		why[1024];	/* the failure, or the error */
};

/*
 * A body: makes its machine(s) from cfg (a copy may change ncpu,
 * mistakes, hz...; not seed, sim_pct_depth or sched), runs, destroys
 * them, and returns 0 when the run held.  A KASSERT is a failure too, and
 * so is a run that never ends (the deterministic mode's step bound).
 * Machines made one after another share the run's schedule; a body must
 * make at least one.  A machine of seed 0 made in a run (a test's own
 * fixture, from sc_machine_config_init()) takes the run's seed, PCT
 * depth and scheduler.  It must return: a CMocka assertion that long-jumps
 * out of it leaves the search broken, but a whole CMocka group run inside
 * it (its failures the verdict) is a body (tests/test_check_suite.c).
 */
typedef int sc_check_body(const struct sc_machine_config *cfg, void *arg);

/*
 * The outcomes of sc_check_replay() and sc_check_fuzz() besides 0 (the
 * run held) and an errno value (bad input, no memory).
 */
#define SC_CHECK_FAILED		(-1)	/* the run failed: sc_check_why() */
#define SC_CHECK_DIVERGED	(-2)	/* the run made other choices than the
					   schedule recorded: another body,
					   another build, another scheduler */

/* The defaults above.  Context: any thread. */
SC_EXTERN void	sc_check_config_init(struct sc_check_config *cc);

/*
 * Search: run body under cc's strategy until a run fails, the runs are
 * spent, or (DFS) the bound is covered.  STACKCAP_SCHEDULE set in the
 * environment replaces the search by that schedule's one run.  Returns 0
 * (res says what was found), or EINVAL (a bad config, a malformed
 * STACKCAP_SCHEDULE, a body that made no deterministic machine: res->why
 * says which), EBUSY (another sc_check*() runs in the process), ENOMEM.
 * res is always filled.  Context: a plain pthread, never a simulated
 * thread; one at a time in a process.  While it runs, a KASSERT is a
 * failure of the run and the panic handler (sc_set_panic_handler()) is
 * not called; STACKCAP_SEED is ignored.
 */
SC_EXTERN int	sc_check(const struct sc_check_config *cc, sc_check_body *body,
		    void *arg, struct sc_check_result *res);

/* Free what res holds (the schedules); res may be reused. */
SC_EXTERN void	sc_check_result_free(struct sc_check_result *res);

/*
 * Merge the result of one shard of a campaign (the same cc but
 * cc.shard) into another's: runs add up, complete only if both were, and
 * the failure kept is the one the unsharded search reports (random, PCT:
 * the smallest seed; DFS: the fewest deviations, then the first in DFS
 * order).  Takes what shard holds (it is freed, and may be reused).
 * Context: any thread.
 */
SC_EXTERN void	sc_check_result_merge(struct sc_check_result *into,
		    struct sc_check_result *shard);

/*
 * Run body once under schedule, as it was recorded.  Returns 0, the run
 * held; SC_CHECK_FAILED; SC_CHECK_DIVERGED; EINVAL (malformed: where, in
 * sc_check_why()); E2BIG (it lists a choice past the 1 << 20th); EBUSY,
 * ENOMEM.  The run may be longer: its choices past the listed ones take
 * the default.  Context: as sc_check().
 */
SC_EXTERN int	sc_check_replay(const char *schedule, sc_check_body *body,
		    void *arg);

/*
 * One run whose every choice is taken from data (a fuzzer's input: a
 * byte a choice, the default once they run out), so that a coverage-
 * guided fuzzer explores schedules.  The run may make any number of
 * choices (a long one is no failure).  Returns 0, SC_CHECK_FAILED (and
 * prints the failure and the schedule that replays it on stderr), or an
 * errno value as sc_check().  Context: as sc_check().
 */
SC_EXTERN int	sc_check_fuzz(const uint8_t *data, size_t size,
		    sc_check_body *body, void *arg);

/*
 * The last outcome of sc_check*() on this thread, in words: the failure,
 * the divergence, where a schedule is malformed.  Never NULL.
 */
SC_EXTERN const char *sc_check_why(void);

#ifdef __cplusplus
}
#endif

#endif /* !STACKCAP_CHECK_H */
