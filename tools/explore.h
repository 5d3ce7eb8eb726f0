/*
 * The explorer: a scenario of the kernel's history with its hooks removed,
 * run in deterministic mode (cfg.seed) over seeds, with a random scheduler
 * or PCT, until its invariant breaks.  stackcap-demo --explore NAME runs
 * it; tests/test_explore.c asserts that each mistake is found and that the
 * final protocol is not faulted.
 */
#ifndef SC_EXPLORE_H
#define SC_EXPLORE_H

#include <stddef.h>
#include <stdint.h>

#include "stackcap.h"

struct exp_body {
	const char	*name;		/* the scenario's name */
	const char	*summary;	/* one line, for --help */
	unsigned	mistakes;	/* cfg.mistakes that break it */
	int		ncpu;
	unsigned	pct_steps;	/* PCT's k: about the steps of a run */
	/*
	 * The workload on m, with mistakes on or off; 0 when the
	 * invariant held, else 1 with why[] saying what broke.
	 */
	int		(*run)(struct sc_machine *m, bool mistaken, char *why,
			    size_t len);
};

extern const struct exp_body exp_bodies[];
extern const size_t exp_nbodies;

/* The body named `name`, or NULL. */
const struct exp_body *exp_find(const char *name);

/*
 * One run of b under seed (pct: PCT's depth, 0: random) with the mistake
 * on or off, a trace of trace_events events; show(m, arg) before the
 * machine goes (NULL: none).  Returns 0 (held), 1 (broken: why[]), or an
 * errno value when the machine could not be made.  Context: a plain
 * pthread.
 */
int	exp_run(const struct exp_body *b, uint64_t seed, int pct,
	    bool mistaken, size_t trace_events,
	    void (*show)(struct sc_machine *m, void *arg), void *arg,
	    char *why, size_t len);

/*
 * Seeds first, first + 1, ... up to runs of them; the first whose run
 * breaks b's invariant in *found (0: none), how many ran in *nrun.
 * Returns 0, or an errno value.  Context: a plain pthread.
 */
int	exp_search(const struct exp_body *b, uint64_t first, int runs, int pct,
	    bool mistaken, uint64_t *found, int *nrun);

#endif /* !SC_EXPLORE_H */
