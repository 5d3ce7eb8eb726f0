/*
 * The explorer: a scenario of the kernel's history with its hooks removed,
 * run in deterministic mode (cfg.seed) over seeds, with a random scheduler
 * or PCT, until its invariant breaks (or, for a body with no mistake, until
 * a run reaches the window the body is about).  stackcap-demo --explore
 * NAME runs it, --scenario NAME --seed S replays one run;
 * tests/test_explore.c asserts that each mistake is found and that the
 * final protocol is not faulted.
 */
#ifndef SC_EXPLORE_H
#define SC_EXPLORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stackcap.h"

/* What one run gave. */
enum exp_outcome {
	EXP_HELD = 0,		/* the invariant held */
	EXP_BROKEN = 1,		/* it broke: why[] says how */
	EXP_REACHED = 2		/* it held, in the body's window: why[] */
};
#define EXP_MASK(o)	(1u << (o))

/* exp_body.scheds: SC_SCHED_ULE, SC_SCHED_4BSD as bits. */
#define EXP_SCHED(s)	(1u << (s))
#define EXP_SCHED_BOTH	(EXP_SCHED(SC_SCHED_ULE) | EXP_SCHED(SC_SCHED_4BSD))

/*
 * What "the mistake on" changes in the machine's config.  Off is always
 * the final protocol: cfg.mistakes = 0, cfg.protocol = SC_PROTO_IPI.  A
 * mistake of the caller (no proc lock, another spin lock held) is the
 * body's: run() gets `mistaken`.
 */
struct exp_mistake {
	unsigned	mistakes;	/* cfg.mistakes */
	int		protocol;	/* cfg.protocol */
	const char	*what;		/* for the output; NULL: no mistake */
};

struct exp_body {
	const char	*name;		/* the scenario's name */
	const char	*summary;	/* one line, for --help */
	struct exp_mistake mistake;
	/*
	 * What the search looks for: EXP_BROKEN, the mistake breaks the
	 * invariant; EXP_REACHED, the body has no mistake (the final
	 * protocol), and a run that reaches its window, where the
	 * invariant holds too, is what the search must find.
	 */
	int		goal;
	/*
	 * EXP_SCHED() bits: the schedulers under which the goal can be
	 * met.  Under the others every run holds, and none reaches.
	 */
	unsigned	scheds;
	int		ncpu;
	unsigned	pct_steps;	/* PCT's k: about the steps of a run */
	/*
	 * The workload on m, with the mistake on or off: an
	 * enum exp_outcome, why[] saying what broke or was reached.
	 */
	int		(*run)(struct sc_machine *m, bool mistaken, char *why,
			    size_t len);
};

extern const struct exp_body exp_bodies[];
extern const size_t exp_nbodies;

/* The body named `name`, or NULL. */
const struct exp_body *exp_find(const char *name);

/* Does b have a mistake to turn on? */
bool	exp_has_mistake(const struct exp_body *b);

/* The scheduler a machine gets by default here (STACKCAP_SCHED). */
int	exp_sched(void);

/*
 * The explorer owns the seed: if STACKCAP_SEED is set (it would replace
 * every run's seed), say on stderr, as prog, that it is ignored, and
 * unset it.  Context: main(), before any other pthread reads the
 * environment.
 */
void	exp_own_seed(const char *prog);

/*
 * One run of b under seed (pct: PCT's depth, 0: random) with the mistake
 * on or off, a trace of trace_events events; show(m, arg) before the
 * machine goes (NULL: none).  A KASSERT during the run breaks the
 * invariant.  *outcome is an enum exp_outcome.  Returns 0, or an errno
 * value when the machine could not be made; EINVAL (and why[] says so)
 * while STACKCAP_SEED is set (exp_own_seed()).  Context: a plain
 * pthread.
 */
int	exp_run(const struct exp_body *b, uint64_t seed, int pct,
	    bool mistaken, size_t trace_events,
	    void (*show)(struct sc_machine *m, void *arg), void *arg,
	    int *outcome, char *why, size_t len);

/* What a search found. */
struct exp_found {
	uint64_t	seed;		/* the seed that stopped it; 0: none */
	int		outcome;	/* that run's (EXP_HELD: none) */
	int		nrun;		/* runs made */
	int		nreached;	/* runs that gave EXP_REACHED */
	/* With shrink: that run's schedule, shrunk (stackcap/check.h), or
	 * "" if none or too long for the buffer. */
	char		schedule[2048];
	int		deviations;	/* the shrunk schedule's */
	int		deviations_orig; /* the seed's run's */
};

/*
 * Seeds first, first + 1, ... up to runs of them, until a run's outcome
 * is in `stop` (EXP_MASK() bits); with shrink, that run's schedule
 * shrunk too.  Returns 0, or an errno value.  Context: a plain pthread.
 */
int	exp_search(const struct exp_body *b, uint64_t first, int runs, int pct,
	    bool mistaken, unsigned stop, bool shrink, struct exp_found *f);

/*
 * exp_search()'s part shard of shards (sc_check()'s cc.shard): the runs
 * i of the search with i % shards == shard, seed first + i.  The part
 * with the smallest seed found has the search's.
 */
int	exp_search_shard(const struct exp_body *b, uint64_t first, int runs,
	    int pct, bool mistaken, unsigned stop, bool shrink, uint32_t shard,
	    uint32_t shards, struct exp_found *f);

/*
 * One run of b under schedule (sc_check_replay()), as exp_run() for a
 * seed.  Returns 0, or SC_CHECK_DIVERGED or an errno value with why[]
 * saying why.
 */
int	exp_run_schedule(const struct exp_body *b, const char *schedule,
	    bool mistaken, size_t trace_events,
	    void (*show)(struct sc_machine *m, void *arg), void *arg,
	    int *outcome, char *why, size_t len);

/* One run of a body under sc_check(): exp_check_body()'s arg. */
struct exp_check {
	const struct exp_body *b;
	bool		mistaken;	/* its mistake on */
	size_t		trace_events;	/* cfg.trace_events */
	void		(*show)(struct sc_machine *m, void *arg); /* or NULL */
	void		*show_arg;
	unsigned	stop;		/* EXP_MASK() bits: outcomes that fail
					   the run */
	int		outcome;	/* the last run's */
	int		fail_outcome;	/* the first run's that failed (the
					   search's: the shrinker's come
					   after), or EXP_HELD */
	int		nreached;	/* runs that gave EXP_REACHED */
	int		error;		/* sc_machine_create()'s, or 0 */
	bool		shrink;		/* exp_search(): shrink a failure */
	char		why[1024];	/* the last run's why */
	char		fail_why[1024];	/* ... and its why */
};

/*
 * An explorer body as an sc_check() body (stackcap/check.h): its machine
 * from cfg, its workload, and the run fails when its outcome is in
 * e->stop (a KASSERT fails it too).  arg: a struct exp_check.
 */
int	exp_check_body(const struct sc_machine_config *cfg, void *arg);

/*
 * The command that replays one run: "STACKCAP_SCHED=ule|4bsd stackcap-demo
 * --scenario NAME --seed S [--pct D] [--mistake on|off]", whatever the
 * shell's STACKCAP_SCHED and STACKCAP_SEED (the demo drops the latter);
 * with schedule not NULL, "--schedule 'SCHEDULE'" in place of the seed.
 */
void	exp_replay_cmd(const struct exp_body *b, uint64_t seed, int pct,
	    bool mistaken, char *buf, size_t len);
void	exp_replay_schedule_cmd(const struct exp_body *b,
	    const char *schedule, bool mistaken, char *buf, size_t len);

#endif /* !SC_EXPLORE_H */
