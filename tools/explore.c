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

/* The first KASSERT of a run, and how many fired. */
static char exp_panic_msg[512];
static atomic_int exp_panics;

static void
exp_panic_record(const char *msg)
{
	if (atomic_fetch_add(&exp_panics, 1) == 0)
		snprintf(exp_panic_msg, sizeof(exp_panic_msg), "%s", msg);
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
exp_run(const struct exp_body *b, uint64_t seed, int pct, bool mistaken,
    size_t trace_events, void (*show)(struct sc_machine *m, void *arg),
    void *arg, int *outcome, char *why, size_t len)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	const char *v = getenv("STACKCAP_SEED");
	char body[512];
	int error;

	*outcome = EXP_HELD;
	why[0] = '\0';
	/* Not the run of `seed`, but the variable's (or a real one). */
	if (v != NULL && *v != '\0') {
		snprintf(why, len, "STACKCAP_SEED is set: call "
		    "exp_own_seed() first");
		return (EINVAL);
	}
	mistaken = mistaken && exp_has_mistake(b);
	sc_machine_config_init(&cfg);
	cfg.ncpu = b->ncpu;
	cfg.seed = seed;
	cfg.sim_pct_depth = pct;
	cfg.sim_pct_steps = b->pct_steps;
	cfg.capture_timeout_ns = EXP_TIMEOUT_NS;
	cfg.trace_events = trace_events;
	cfg.mistakes = mistaken ? b->mistake.mistakes : 0;
	cfg.protocol = mistaken ? b->mistake.protocol : SC_PROTO_IPI;
	if ((error = sc_machine_create(&cfg, &m)) != 0)
		return (error);
	atomic_store(&exp_stop, 0);
	atomic_store(&exp_started, 0);
	atomic_store(&exp_rdone, 0);
	atomic_store(&exp_panics, 0);
	exp_panic_msg[0] = '\0';
	body[0] = '\0';
	/* A KASSERT breaks every invariant.  From a plain pthread the
	 * failing call returns EINVAL; a simulated thread is parked. */
	sc_set_panic_handler(exp_panic_record);
	*outcome = b->run(m, mistaken, body, sizeof(body));
	if (atomic_load(&exp_panics) != 0) {
		snprintf(why, len, "KASSERT: %s%s%s", exp_panic_msg,
		    body[0] != '\0' ? "\n(then: " : "", body[0] != '\0' ?
		    body : "");
		if (body[0] != '\0')
			snprintf(why + strlen(why), len - strlen(why), ")");
		*outcome = EXP_BROKEN;
	} else
		snprintf(why, len, "%s", body);
	if (show != NULL)
		show(m, arg);
	sc_machine_destroy(m);
	sc_set_panic_handler(NULL);
	return (0);
}

int
exp_search(const struct exp_body *b, uint64_t first, int runs, int pct,
    bool mistaken, unsigned stop, struct exp_found *f)
{
	char why[1024];
	uint64_t seed;
	int error, outcome;

	memset(f, 0, sizeof(*f));
	for (seed = first; f->nrun < runs; seed++) {
		f->nrun++;
		error = exp_run(b, seed, pct, mistaken, 0, NULL, NULL,
		    &outcome, why, sizeof(why));
		if (error != 0)
			return (error);
		if (outcome == EXP_REACHED)
			f->nreached++;
		if ((stop & EXP_MASK(outcome)) != 0) {
			f->seed = seed;
			f->outcome = outcome;
			return (0);
		}
	}
	return (0);
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
