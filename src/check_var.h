/*
 * Systematic testing (stackcap/check.h), between its own files and the
 * deterministic mode's chooser: check.c (the searches, replay, fuzz),
 * check_schedule.c (a schedule as a string), check_shrink.c (the
 * shrinker), sim_det_choose.c (each choice, sc__chk_decide()).
 *
 * A run under a check is a deterministic machine whose every choice
 * with two or more alternatives is a decision.  The alternatives come in
 * a fixed order, the default first (sim_det_choose.c says which), so a
 * decision is a number, 0 for the default, and a schedule is the list of
 * the decisions that are not 0, with the count of decisions and a
 * fingerprint of their shape (each one's kind and number of
 * alternatives) that tells a replay that it went another way.
 *
 * No kernel counterpart.
 */
#ifndef SC_CHECK_VAR_H
#define SC_CHECK_VAR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stackcap.h"
#include "stackcap/check.h"

/* Where a run's decisions come from (sc_chk.c_mode). */
#define SC_CHK_DRAW	0	/* the machine's seeded chooser, random or
				   PCT; recorded */
#define SC_CHK_LIST	1	/* c_in's entries, the default elsewhere */
#define SC_CHK_BYTES	2	/* a byte each (sc_check_fuzz()) */

/* The kinds of decision (in the fingerprint). */
#define SC_CHK_TOKEN	1	/* the next holder of the run token */
#define SC_CHK_IPI	2	/* a pending IPI: taken now (0) or later */

/* One decision that is not the default: index in the run, alternative. */
struct sc_chk_dec {
	uint64_t	d_idx;
	uint32_t	d_alt;
};

/*
 * One run's guide.  The letters are sc_internal.h's lock key: (c) set
 * before the run, by the pthread of sc_check(); (d) the run token's
 * holder of the run's machine (machines of a run come one after another);
 * (a) atomics.
 */
struct sc_chk {
	int		c_mode;		/* (c) SC_CHK_* */
	bool		c_strict;	/* (c) LIST: an entry beyond its
					   decision's alternatives diverges
					   (a replay); else it is ignored (the
					   shrinker's trials) */
	bool		c_polled;	/* (c) a futex waiter polls (PCT's
					   draw, sc__ds_block()); else it waits
					   for its wake */
	const struct sc_chk_dec *c_in;	/* (c) LIST: sorted by d_idx */
	size_t		c_nin;		/* (c) */
	size_t		c_inpos;	/* (d) the next entry of c_in */
	const uint8_t	*c_bytes;	/* (c) BYTES */
	size_t		c_nbytes;	/* (c) */
	const struct sc_machine_config *c_cfg; /* (c) the run's, for a
					   machine of seed 0 made in it (a
					   test's own fixture: machine.c) */
	/* What the run did. */
	uint64_t	c_ndec;		/* (d) decisions made */
	uint64_t	c_fp;		/* (d) their shape's fingerprint */
	struct sc_chk_dec *c_out;	/* (c) the non-default decisions */
	size_t		c_nout;		/* (d) */
	uint32_t	*c_trail;	/* (c) DFS: each decision's alternative
					   and count, (n << 16) | alt */
	size_t		c_cap;		/* (c) of c_out and c_trail */
	bool		c_overflow;	/* (d) more than c_cap decisions, or
					   than c_cap non-default ones */
	bool		c_long_ok;	/* (c) decisions past c_cap are no
					   error while they take the default
					   (a fuzzer's run, a replay): only a
					   search needs each one's trail */
	bool		c_diverged;	/* (d) a LIST entry did not fit */
	atomic_int	c_machines;	/* (a) deterministic machines made */
	atomic_int	c_panics;	/* (a) KASSERTs */
	char		c_panic[512];	/* (a) the first one's message */
	atomic_int	c_livelock;	/* (a) a machine hit the step bound */
	uint64_t	c_div_idx;	/* (d) the decision that diverged */
	uint32_t	c_div_alt;	/* (d) the alternative asked */
	uint32_t	c_div_n;	/* (d) the alternatives it had */
};

/* The run of the sc_check*() that runs, or NULL (check.c). */
extern _Atomic(struct sc_chk *) sc__chk_cur;

/*
 * Decide among n >= 2 alternatives (sim_det_choose.c).  drawn: the
 * alternative the machine's seeded chooser picked (SC_CHK_DRAW).
 * Called only by the token's holder.  Async-signal-safe.
 */
uint32_t sc__chk_decide(struct sc_chk *c, int kind, uint32_t n,
	    uint32_t drawn);

/* check.c: record a KASSERT of the run; true if a run is under check. */
bool	sc__chk_panic(const char *msg);

/* check_schedule.c */
/*
 * The schedule of a run: "sc1:SCHED:WAITS:NDEC:FP:LIST", WAITS "w" (a
 * futex waiter waits for its wake) or "p" (it polls), LIST the non-default
 * decisions as "+GAP.ALT" each, GAP from the previous one's index (the
 * first's from -1).  Returns a malloc()ed string, or NULL.
 */
char	*sc__chk_format(int sched, bool polled, uint64_t ndec, uint64_t fp,
	    const struct sc_chk_dec *d, size_t n);
/*
 * Parse s.  Fills *sched, *polled, *ndec, *fp and a malloc()ed *d of *n
 * entries.
 * Returns 0, or EINVAL with why[] saying where, ENOMEM.
 */
int	sc__chk_parse(const char *s, int *sched, bool *polled, uint64_t *ndec,
	    uint64_t *fp, struct sc_chk_dec **d, size_t *n, char *why,
	    size_t len);
/* The deviations of a schedule: the sum of its alternatives. */
int	sc__chk_cost(const struct sc_chk_dec *d, size_t n);

/*
 * One search, replay or fuzz run (check.c): the body, the config its
 * runs start from, the guide the runs reuse, and the failing run kept.
 * Owned by the pthread of sc_check*().
 */
#define SC_CHK_FAIL_BODY	1	/* the body returned non-zero */
#define SC_CHK_FAIL_PANIC	2	/* a KASSERT */
#define SC_CHK_FAIL_LIVELOCK	3	/* the step bound */

struct sc_chk_ctx {
	sc_check_body	*x_body;
	void		*x_arg;
	struct sc_machine_config x_cfg;
	struct sc_chk	x_c;
	int		x_kind;		/* the last run's SC_CHK_FAIL_*, or 0 */
	char		x_why[1024];	/* the last run's failure */
	/* The failing run: its non-default decisions, count, fingerprint. */
	struct sc_chk_dec *x_fail;
	size_t		x_nfail;
	uint64_t	x_fail_ndec;
	uint64_t	x_fail_fp;
	bool		x_fail_polled;
	int		x_fail_kind;
	char		x_fail_why[1024];
};

/*
 * check.c: one run of the body under the list d (strict: a replay's
 * divergence check).  *failed says if it failed.  Returns 0, or an errno
 * value with x_why saying why (no machine, too many decisions).
 */
int	sc__chk_run_list(struct sc_chk_ctx *x, const struct sc_chk_dec *d,
	    size_t n, bool strict, bool *failed);
/*
 * check.c: DFS within bound (deviations) from the default schedule, its
 * part shard of shards (0 of 1: all), at most maxruns runs (0: no limit)
 * counted in *runs, and no run begun after deadline (CLOCK_MONOTONIC ns;
 * 0: none), until a run fails (*failed, x_c holds it) or every schedule
 * of the part ran (*complete).  Returns 0, or an errno value with x_why
 * saying why.
 */
int	sc__chk_dfs(struct sc_chk_ctx *x, int bound, uint32_t shard,
	    uint32_t shards, uint64_t maxruns, uint64_t deadline,
	    uint64_t *runs, bool *failed, bool *complete);
/* check.c: keep the run x_c just made as the failing one.  ENOMEM. */
int	sc__chk_keep(struct sc_chk_ctx *x);
/*
 * check_shrink.c: from the failing run x holds (its c_out), search for a
 * shorter list with fewer deviations that still fails; x ends holding
 * the shortest found.  At most budget runs; returns the runs made.
 */
uint64_t sc__chk_shrink(struct sc_chk_ctx *x, uint64_t budget);

#endif /* !SC_CHECK_VAR_H */
