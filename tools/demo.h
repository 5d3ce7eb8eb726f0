/*
 * What the files of stackcap-demo share: the options, the demo machine
 * (demo_machine.c) and the procstat printer (demo_procstat.c).  The modes
 * and main() are in stackcap-demo.c.
 */
#ifndef SC_DEMO_H
#define SC_DEMO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "stackcap.h"

#define DEMO_MAX_THREADS	64	/* threads of the demo machine */
#define DEMO_MAX_PROCS		32

/* The options (main() parses them). */
struct demo_opts {
	int		ncpu;
	const char	*mode;
	const char	*scenario;	/* --scenario NAME */
	const char	*json;	/* --json FILE: Chrome trace-event JSON */
	int		samples;	/* --sample N */
	int		kflag;		/* -k: 1, -kk: 2 (the default) */
	bool		kernel_limits;	/* --kernel-limits */
	const char	*explore;	/* --explore NAME */
	int		runs;		/* --runs N (default 1000) */
	int		pct;		/* --pct DEPTH (0: random) */
	uint64_t	seed;		/* --seed S (0: search) */
	int		mistake;	/* --mistake on|off (default on) */
	const char	*schedule;	/* --schedule S */
	int		jobs;		/* --jobs N (0: one process) */
	unsigned	shard, shards;	/* --shard K/N (shards 0: none) */
	const char	*svg;		/* --svg FILE: the run as a picture */
	FILE		*svg_fp;	/* FILE, opened before the run */
	bool		host_selftest;	/* --host-selftest */
};

#define DEMO_MAXJOBS	64

struct exp_body;
struct exp_found;

/*
 * --explore with --shard K/N: that part of the search, its result as one
 * line on stdout (demo_jobs.c).  Returns the exit status.
 */
int	demo_explore_shard(const struct demo_opts *o,
	    const struct exp_body *b, int runs);

/*
 * --explore with --jobs N: the search in N processes (this program, each
 * with --shard K/N), merged into f's seed (the smallest found, 0: none)
 * and nrun (the runs of all).  Returns 0, or EIO when a part failed (said
 * on stderr).  Context: the main thread.
 */
int	demo_explore_jobs(const struct demo_opts *o, const struct exp_body *b,
	    int runs, struct exp_found *f);

/*
 * Build the demo machine (o->ncpu CPUs), hand it to show(), tear it down.
 * Returns the exit status.  Context: the main thread.
 */
int	demo_world_run(const struct demo_opts *o,
	    int (*show)(const struct demo_opts *, struct sc_machine *),
	    const char *what);

/*
 * procstat -kk -a (or -k, --kernel-limits as o says): every thread of
 * every process of m, from one sc_machine_snapshot().  Context: a plain
 * pthread.
 */
void	demo_kstack_all(const struct demo_opts *o, struct sc_machine *m);

/*
 * --host-selftest: threads of four kinds in this process, one
 * sc_host_snapshot() of them, printed (o->json: also as JSON), each
 * verdict checked (demo_host.c).  Returns the exit status.  Context: the
 * main thread.
 */
int	demo_host_selftest(const struct demo_opts *o);

#endif /* !SC_DEMO_H */
