/*
 * The explorer (explore.h): the table of bodies (explore_bodies.c), one
 * run of a body on a deterministic machine, the search over seeds, and
 * the command that replays a run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore_body.h"
#include "stackcap/check.h"

#define EXP_BOTH	EXP_SCHED_BOTH
#define EXP_ULE		EXP_SCHED(SC_SCHED_ULE)

const struct exp_body exp_bodies[] = {
	{ .name = "lock-held", .run = exp_lock_held, .ncpu = 1,
	  .pct_steps = 300, .goal = EXP_BROKEN, .scheds = EXP_BOTH,
	  .mistake = { .mistakes = SC_MISTAKE_HOLD_THREAD_LOCK,
	      .what = "SC_MISTAKE_HOLD_THREAD_LOCK" },
	  .summary = "the thread lock kept across the IPI; no hook" },
	{ .name = "no-proc-lock", .run = exp_no_proc_lock, .ncpu = 2,
	  .pct_steps = 2000, .goal = EXP_BROKEN, .scheds = EXP_BOTH,
	  .mistake = { .mistakes = SC_MISTAKE_NO_PROC_LOCK,
	      .what = "SC_MISTAKE_NO_PROC_LOCK" },
	  .summary = "a running thread captured without its proc lock; "
	  "no hook" },
	{ .name = "stale-answer", .run = exp_stale_answer, .ncpu = 2,
	  .pct_steps = 500, .goal = EXP_BROKEN, .scheds = EXP_BOTH,
	  .mistake = { .mistakes = SC_MISTAKE_STALE_ANSWER,
	      .what = "SC_MISTAKE_STALE_ANSWER" },
	  .summary = "the answer word not cleared before the IPI: an old "
	  "answer taken, its stack; no hook" },
	{ .name = "spin-held", .run = exp_spin_held, .ncpu = 2,
	  .pct_steps = 500, .goal = EXP_BROKEN, .scheds = EXP_BOTH,
	  .mistake = { .mistakes = SC_MISTAKE_SPIN_HELD,
	      .what = "SC_MISTAKE_SPIN_HELD" },
	  .summary = "a chain lock held across the capture; the target "
	  "spins on it: deadlock; no hook" },
	{ .name = "nmi-ule", .run = exp_incoming, .ncpu = 2,
	  .pct_steps = 500, .goal = EXP_BROKEN, .scheds = EXP_ULE,
	  .mistake = { .protocol = SC_PROTO_NMI,
	      .what = "SC_PROTO_NMI (FreeBSD 12's protocol)" },
	  .summary = "FreeBSD 12's NMI protocol: ULE's NOCPU window under "
	  "the lock, KASSERT; 4BSD holds; no hook" },
	{ .name = "ule-incoming-nocpu", .run = exp_incoming, .ncpu = 2,
	  .pct_steps = 500, .goal = EXP_REACHED, .scheds = EXP_ULE,
	  .summary = "find ULE's window (RUNNING, NOCPU, lock free); the "
	  "final protocol captures right; no hook" },
	{ .name = "clear-after-ipi", .run = exp_clear_after_ipi, .ncpu = 2,
	  .pct_steps = 500, .goal = EXP_BROKEN, .scheds = EXP_BOTH,
	  .mistake = { .mistakes = SC_MISTAKE_CLEAR_AFTER_IPI,
	      .what = "SC_MISTAKE_CLEAR_AFTER_IPI" },
	  .summary = "the answer word cleared after the IPI: an answer "
	  "that came first is wiped, the wait times out; no hook" },
	{ .name = "answer-target", .run = exp_snapshot, .ncpu = 2,
	  .pct_steps = 2000, .goal = EXP_BROKEN, .scheds = EXP_BOTH,
	  .mistake = { .mistakes = SC_MISTAKE_ANSWER_TARGET,
	      .what = "SC_MISTAKE_ANSWER_TARGET" },
	  .summary = "the handler answers with the target, not curthread: "
	  "another thread's stack taken as the target's; no hook" },
	{ .name = "nocpu-offcpu", .run = exp_nocpu_offcpu, .ncpu = 2,
	  .pct_steps = 500, .goal = EXP_BROKEN, .scheds = EXP_ULE,
	  .mistake = { .mistakes = SC_MISTAKE_NOCPU_OFFCPU,
	      .what = "SC_MISTAKE_NOCPU_OFFCPU" },
	  .summary = "RUNNING with NOCPU taken for off-CPU: its pcb walked "
	  "after it ran on; 4BSD holds; no hook" },
	{ .name = "snapshot", .run = exp_snapshot, .ncpu = 2,
	  .pct_steps = 2000, .goal = EXP_REACHED, .scheds = EXP_BOTH,
	  .summary = "find a snapshot whose answer names another thread; "
	  "it joins the next round, every entry right; no hook" },
};
const size_t exp_nbodies = sizeof(exp_bodies) / sizeof(exp_bodies[0]);

const struct exp_body *
exp_find(const char *name)
{
	size_t i;

	for (i = 0; i < exp_nbodies; i++)
		if (strcmp(exp_bodies[i].name, name) == 0)
			return (&exp_bodies[i]);
	return (NULL);
}

bool
exp_has_mistake(const struct exp_body *b)
{
	return (b->mistake.mistakes != 0 ||
	    b->mistake.protocol != SC_PROTO_IPI);
}

int
exp_sched(void)
{
	struct sc_machine_config cfg;

	sc_machine_config_init(&cfg);
	return (cfg.sched);
}

/*
 * STACKCAP_SEED would replace every run's seed (machine.c): the explorer
 * owns the seed, so it says that it ignores the variable and drops it.
 */
void
exp_own_seed(const char *prog)
{
	const char *v = getenv("STACKCAP_SEED");

	if (v == NULL)
		return;
	if (*v != '\0')
		fprintf(stderr, "%s: STACKCAP_SEED=%s ignored: the explorer "
		    "gives each run its own seed (--scenario NAME --seed S "
		    "replays one)\n", prog, v);
	(void)unsetenv("STACKCAP_SEED");
}

int
exp_check_body(const struct sc_machine_config *ccfg, void *arg)
{
	struct exp_check *e = arg;
	const struct exp_body *b = e->b;
	struct sc_machine_config cfg = *ccfg;
	struct sc_machine *m;

	cfg.ncpu = b->ncpu;
	cfg.sim_pct_steps = b->pct_steps;
	cfg.capture_timeout_ns = EXP_TIMEOUT_NS;
	cfg.trace_events = e->trace_events;
	cfg.mistakes = e->mistaken ? b->mistake.mistakes : 0;
	cfg.protocol = e->mistaken ? b->mistake.protocol : SC_PROTO_IPI;
	e->why[0] = '\0';
	if ((e->error = sc_machine_create(&cfg, &m)) != 0)
		return (-1);
	atomic_store(&exp_stop, 0);
	atomic_store(&exp_started, 0);
	atomic_store(&exp_rdone, 0);
	e->outcome = b->run(m, e->mistaken, e->why, sizeof(e->why));
	if (e->outcome == EXP_REACHED)
		e->nreached++;
	if (e->show != NULL)
		e->show(m, e->show_arg);
	sc_machine_destroy(m);
	if ((e->stop & EXP_MASK(e->outcome)) == 0)
		return (0);
	if (e->fail_outcome == EXP_HELD) {
		e->fail_outcome = e->outcome;
		snprintf(e->fail_why, sizeof(e->fail_why), "%s", e->why);
	}
	return (1);
}

/*
 * sc_check() over seeds first.. (runs of them) for b: the first run
 * whose outcome is in e->stop, or a KASSERT (EXP_BROKEN).  Fills f.
 */
static int
exp_check(struct exp_check *e, uint64_t first, int runs, int pct,
    uint32_t shard, uint32_t shards, struct exp_found *f, char *why,
    size_t len)
{
	struct sc_check_config cc;
	struct sc_check_result res;
	int error;

	memset(f, 0, sizeof(*f));
	e->mistaken = e->mistaken && exp_has_mistake(e->b);
	e->error = 0;
	e->fail_outcome = EXP_HELD;
	sc_check_config_init(&cc);
	cc.strategy = pct > 0 ? SC_CHECK_PCT : SC_CHECK_RANDOM;
	cc.pct_depth = pct > 0 ? pct : 3;
	cc.pct_steps = e->b->pct_steps;
	cc.first_seed = first;
	cc.runs = (uint64_t)runs;
	cc.shard = shard;
	cc.shards = shards;
	cc.shrink = e->shrink;
	error = sc_check(&cc, exp_check_body, e, &res);
	if (res.failed && e->shrink && strlen(res.schedule) <
	    sizeof(f->schedule)) {
		snprintf(f->schedule, sizeof(f->schedule), "%s", res.schedule);
		f->deviations = res.preemptions;
		f->deviations_orig = res.preemptions_orig;
	}
	f->nrun = (int)res.runs;
	f->nreached = e->nreached;
	if (e->error != 0) {
		snprintf(why, len, "sc_machine_create: %s", sc_errname(
		    e->error));
		error = e->error;
	} else if (error != 0)
		snprintf(why, len, "%s", res.why);
	else if (res.failed) {
		f->seed = res.seed;
		/* A KASSERT breaks every invariant. */
		if (strncmp(res.why, "KASSERT", 7) == 0) {
			f->outcome = EXP_BROKEN;
			snprintf(why, len, "%s%s%s%s", res.why, e->why[0] !=
			    '\0' ? "\n(then: " : "", e->why, e->why[0] !=
			    '\0' ? ")" : "");
		} else {
			/* The failing run's, not the shrinker's last. */
			f->outcome = e->fail_outcome;
			snprintf(why, len, "%s", e->fail_why);
		}
	} else {
		f->outcome = e->outcome;
		snprintf(why, len, "%s", e->why);
	}
	sc_check_result_free(&res);
	return (error);
}

int
exp_run(const struct exp_body *b, uint64_t seed, int pct, bool mistaken,
    size_t trace_events, void (*show)(struct sc_machine *m, void *arg),
    void *arg, int *outcome, char *why, size_t len)
{
	struct exp_check e = { .b = b, .mistaken = mistaken,
	    .trace_events = trace_events, .show = show, .show_arg = arg,
	    .stop = EXP_MASK(EXP_BROKEN) };
	struct exp_found f;
	const char *v = getenv("STACKCAP_SEED");
	int error;

	*outcome = EXP_HELD;
	why[0] = '\0';
	/* Not the run of `seed`, but the variable's (or a real one). */
	if (v != NULL && *v != '\0') {
		snprintf(why, len, "STACKCAP_SEED is set: call "
		    "exp_own_seed() first");
		return (EINVAL);
	}
	error = exp_check(&e, seed, 1, pct, 0, 1, &f, why, len);
	*outcome = f.outcome;
	return (error);
}

int
exp_search(const struct exp_body *b, uint64_t first, int runs, int pct,
    bool mistaken, unsigned stop, bool shrink, struct exp_found *f)
{
	return (exp_search_shard(b, first, runs, pct, mistaken, stop, shrink,
	    0, 1, f));
}

int
exp_search_shard(const struct exp_body *b, uint64_t first, int runs,
    int pct, bool mistaken, unsigned stop, bool shrink, uint32_t shard,
    uint32_t shards, struct exp_found *f)
{
	struct exp_check e = { .b = b, .mistaken = mistaken, .stop = stop,
	    .shrink = shrink };
	char why[1024];
	int error;

	error = exp_check(&e, first, runs, pct, shard, shards, f, why,
	    sizeof(why));
	if (f->seed == 0)
		f->outcome = EXP_HELD;
	return (error);
}

int
exp_run_schedule(const struct exp_body *b, const char *schedule,
    bool mistaken, size_t trace_events,
    void (*show)(struct sc_machine *m, void *arg), void *arg, int *outcome,
    char *why, size_t len)
{
	struct exp_check e = { .b = b, .trace_events = trace_events,
	    .show = show, .show_arg = arg, .stop = EXP_MASK(EXP_BROKEN) };
	int rc;

	e.mistaken = mistaken && exp_has_mistake(b);
	rc = sc_check_replay(schedule, exp_check_body, &e);
	*outcome = e.outcome;
	if (rc == SC_CHECK_FAILED) {
		*outcome = EXP_BROKEN;
		/* A KASSERT's words are the check's; the body's, its own. */
		snprintf(why, len, "%s", strncmp(sc_check_why(), "KASSERT",
		    7) == 0 ? sc_check_why() : e.why);
		return (0);
	}
	snprintf(why, len, "%s", rc == 0 ? e.why : sc_check_why());
	if (e.error != 0)
		return (e.error);
	return (rc);
}

void
exp_replay_schedule_cmd(const struct exp_body *b, const char *schedule,
    bool mistaken, char *buf, size_t len)
{
	snprintf(buf, len, "STACKCAP_SCHED=%s stackcap-demo --scenario %s "
	    "--schedule '%s'%s", strncmp(schedule, "sc1:4bsd", 8) == 0 ?
	    "4bsd" : "ule", b->name, schedule, !exp_has_mistake(b) ? "" :
	    mistaken ? " --mistake on" : " --mistake off");
}

void
exp_replay_cmd(const struct exp_body *b, uint64_t seed, int pct,
    bool mistaken, char *buf, size_t len)
{
	char opt[64];

	opt[0] = '\0';
	if (pct > 0)
		snprintf(opt, sizeof(opt), " --pct %d", pct);
	if (exp_has_mistake(b))
		snprintf(opt + strlen(opt), sizeof(opt) - strlen(opt),
		    " --mistake %s", mistaken ? "on" : "off");
	/* The scheduler always: a shell's STACKCAP_SCHED would choose
	 * another (the replay drops a shell's STACKCAP_SEED itself). */
	snprintf(buf, len, "STACKCAP_SCHED=%s stackcap-demo --scenario %s "
	    "--seed %" PRIu64 "%s", exp_sched() == SC_SCHED_4BSD ? "4bsd" :
	    "ule", b->name, seed, opt);
}
